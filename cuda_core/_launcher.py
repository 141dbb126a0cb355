# SPDX-License-Identifier: Apache-2.0
"""Kernel launch: :func:`launch` and its argument marshalling.

How a launch works
------------------
Each launch is one call into the extension, ``cc_launch_blob(blob)``, whose
single argument is a byte block holding three pointer-sized words -- the
*argument layout* (the kernel and where each packed argument starts), the
prepared :class:`~cuda_core.LaunchConfig` structure and the stream -- followed
by the packed argument values.  The C side calls ``cuLaunchKernelEx`` with
the packed values as one parameter buffer when they are laid out exactly as
the kernel's parameters (the plan compares its offsets with those the driver
reports: the usual case, and cheaper for many parameters), else with a
``void *params[]`` array built from the layout.  One argument keeps the
call cheap on CPython (cffi passes a single argument without building an
argument tuple) and costs nothing on PyPy.

The argument layout and the code that packs the values come from an
*argument plan*, built once per kernel and combination of argument types and
cached on the :class:`~cuda_core.Kernel`.  A plan is Python source generated
for that combination and compiled once:

* on CPython it checks the argument types and calls one precompiled
  ``struct.Struct.pack`` (the fastest way to turn Python values into bytes
  there); for many arguments the type check is one ``list(map(type, args))``
  comparison instead.  The packed ``bytes`` object is the blob: a fresh
  small object per launch is cheaper there than finding a per-thread buffer
  (``threading.local``) and packing into it, and it is thread-safe as is;
* on PyPy it checks the types (JIT guards) and stores each value into a
  preallocated per-thread buffer through typed cffi pointers, which the JIT
  turns into plain stores.

A :class:`~cuda_core.LaunchConfig` prepares its C structure once (see
``LaunchConfig._prepare``); ``LaunchConfig._fast`` holds its address for
configurations that need no per-launch checks, so a launch reads one
attribute for the whole configuration.

Marshalling rules (as in NVIDIA's ``cuda.core``; exact type first, then
``isinstance``): a :class:`~cuda_core.Buffer` passes its device pointer; a
Python ``int`` an ``intptr_t`` (it is treated as an address); ``float`` a
``double``; ``complex`` a ``double complex``; ``bool`` a one-byte C++
``bool``; NumPy scalars their exact width (``float16`` as raw bits); ctypes
scalars their C type; a ``StridedMemoryView`` its pointer; a graph condition
its 64-bit handle; texture and surface objects their 64-bit handles; a
``TensorMapDescriptor`` its 128 bytes by value, 64-byte aligned in the
parameter buffer (types declare such kinds with ``KERNEL_ARG_MARKER``).
Beyond ``cuda.core``, structures are passed by value: a NumPy structured
scalar (``numpy.void``) or a ``ctypes.Structure`` /
``ctypes.Union`` instance, checked against (and zero-padded to) the kernel's
parameter size where the driver reports it.  Anything else raises TypeError.

Where the driver reports the kernel's parameter sizes (CUDA 12.4 or newer),
every argument's packed width must equal its parameter's size, checked when
the plan is built (so never per launch): ``numpy.uint8`` for an ``int``
parameter, or a Python ``int`` (8 bytes) for a 4-byte one, raises TypeError
where ``cuda.core`` would pass the bytes and let the kernel read garbage.
"""

from __future__ import annotations

import ctypes
import functools
import struct
import sys
import threading
import types
from math import prod

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._kernel import Kernel
from cuda_core._launch_config import _check_device_support, _coerce_config
from cuda_core._stream import Stream, _as_stream, _OpenStream
from cuda_core._utils import as_int_handle

__all__ = ["launch"]

_IS_PYPY = sys.implementation.name == "pypy"

#: Header of every blob: layout address, LaunchConfig structure address, stream.
_HEADER_FORMAT = "@NNN"
_HEADER_SIZE = struct.calcsize(_HEADER_FORMAT)
_header = struct.Struct(_HEADER_FORMAT).pack
#: Up to this many arguments, CPython plans check types one by one in the
#: generated code; beyond it one ``list(map(type, args))`` comparison is faster.
_GUARD_MAX = 32
#: Plans kept per kernel before the cache is reset.
_MAX_PLANS = 256
#: Alignment given to structures passed by value inside the blob.
_RAW_ALIGN = 8
#: Class attribute that marks graph-condition classes (``cuda_core.graph.
#: GraphCondition``): such arguments are passed as their 64-bit ``handle`` (an int).
GRAPH_CONDITION_MARKER = "_cuda_core_graph_condition"
#: Class attribute by which a lower-layer type declares how it is passed
#: (texture/surface objects, tensor maps): ``"u64"`` passes its ``_karg``
#: int as a 64-bit value; ``(size, alignment)`` passes its ``_karg`` bytes
#: by value at that alignment of the parameter buffer.
KERNEL_ARG_MARKER = "_cuda_core_kernel_arg"

_launch_blob = lib.cc_launch_blob


def _launch_cpython(stream, config, kernel, *kernel_args):
    if type(stream) is not _OpenStream and type(stream) is not Stream:
        stream = _as_stream(stream, "stream")
    try:
        cfg = config._fast  # the prepared config's address; None: take the slow path
        plan = kernel._plan
        closed = kernel._mod._closed or stream._closed
    except AttributeError:  # not a LaunchConfig (a dict?) or not a Kernel
        config, kernel = _check_launch_types(config, kernel)
        cfg, plan, closed = None, kernel._plan, True
    if cfg is None or closed:
        cfg = _prepare_launch(config, kernel, stream)
    try:
        data = plan.pack(cfg, stream._h, kernel_args)
    except Exception:
        plan, data = _slow_pack(kernel, cfg, stream._h, kernel_args)
    status = _launch_blob(data)
    if status:
        check(status, "cuLaunchKernelEx")


def _launch_pypy(stream, config, kernel, *kernel_args):
    if type(stream) is not _OpenStream and type(stream) is not Stream:
        stream = _as_stream(stream, "stream")
    try:
        cfg = config._fast  # the prepared config's address; None: take the slow path
        plan = kernel._plan
        closed = kernel._mod._closed or stream._closed
    except AttributeError:  # not a LaunchConfig (a dict?) or not a Kernel
        config, kernel = _check_launch_types(config, kernel)
        cfg, plan, closed = None, kernel._plan, True
    if cfg is None or closed:
        cfg = _prepare_launch(config, kernel, stream)
    try:
        st = _tls.st
    except AttributeError:
        st = _thread_state(0)
    try:
        plan.fill(st, cfg, stream._h, kernel_args)
    except Exception:
        plan, st = _slow_fill(kernel, st, cfg, stream._h, kernel_args)
    status = _launch_blob(st.buf)
    if status:
        check(status, "cuLaunchKernelEx")


def _check_launch_types(config, kernel):
    """Return ``(config, kernel)`` with ``config`` a LaunchConfig; raise TypeError otherwise."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a Kernel, not {type(kernel).__name__}")
    return _coerce_config(config), kernel


def _prepare_launch(config, kernel, stream):
    """The launch's slow start: closed checks, preparing the config, special checks.

    Returns the address of the prepared configuration structure.
    """
    if stream._closed:
        raise RuntimeError("Stream is closed; it cannot be used after close()")
    kernel._require_open()
    cfg, addr, special = config._prepare()
    if special:
        _check_special(config, kernel, stream)
    return addr


#: The public function is the fast path of the running interpreter itself (no
#: extra call layer).
launch = _launch_pypy if _IS_PYPY else _launch_cpython
launch.__name__ = launch.__qualname__ = "launch"
launch.__doc__ = """Launch ``kernel`` on ``stream`` with ``config`` and ``kernel_args``.

    Parameters
    ----------
    stream : Stream, GraphBuilder or object with ``__cuda_stream__``
        Where the launch is ordered (a graph builder captures it).
    config : LaunchConfig or dict
        Grid, block, cluster, shared memory and launch flags (a dict is
        passed to :class:`LaunchConfig`).
    kernel : Kernel
        The kernel to launch.
    *kernel_args
        The kernel's arguments, marshalled as the module documentation
        describes (e.g. :class:`~cuda_core.Buffer` -> pointer, ``int`` ->
        ``intptr_t``, ``numpy.float32`` -> ``float``).  Each must have
        exactly its parameter's width (see Notes).

    Raises
    ------
    TypeError
        If ``stream``, ``config`` or ``kernel`` has the wrong type, an
        argument has an unsupported type (the message names its position
        and type), the number of arguments differs from the kernel's
        parameter count, or an argument's width differs from its
        parameter's size (the message names its position, its type and
        both sizes).
    ValueError
        If a Python int does not fit in ``intptr_t`` (also an
        OverflowError; the message names the argument's position), a
        cooperative launch's grid cannot be co-resident (the message gives
        both numbers), or a structure argument is larger than its parameter.
    RuntimeError
        If the stream, the kernel's ObjectCode or a Buffer argument is closed.
    CUDAError
        If the device cannot do what the configuration asks (clusters,
        cooperative launches), or the driver rejects the launch (e.g.
        ``CUDA_ERROR_INVALID_VALUE`` for a block that is too large).

    Notes
    -----
    Deliberate difference from NVIDIA's ``cuda.core`` (the design rule "bad
    input gets a clear exception"): where the driver reports the kernel's
    parameter sizes (CUDA 12.4 or newer), an argument whose packed width
    differs from its parameter's size raises TypeError instead of being
    passed as is.  ``cuda.core`` passes e.g. a ``numpy.uint8`` for an
    ``int`` parameter (the kernel reads three bytes of whatever follows) or
    a Python ``int`` -- always an 8-byte ``intptr_t`` -- for an ``int``
    parameter.  Pass ``numpy.int32(n)`` for an ``int``, ``numpy.uint64(n)``
    for a ``size_t``; Python ``int`` suits pointer-sized (8-byte) parameters
    and ``float`` suits ``double``.  The check runs once per kernel and
    combination of argument types, never per launch.
    """


# --------------------------------------------------------------------------
# Argument plans.
# --------------------------------------------------------------------------
class _Mismatch(Exception):
    """The cached plan does not fit these arguments (internal control flow)."""


class _ArgOverflow(ValueError, OverflowError):
    """A Python int argument that does not fit in ``intptr_t``.

    A ValueError (a bad value, like other range errors of the package) and an
    OverflowError (what packing it raises, so code catching that still works).
    """


class _Plan:
    """How to pack one combination of argument types for one kernel.

    Attributes
    ----------
    key : list of type
        The argument types.
    full_key : tuple
        The cache key: the types, with the dtype of structured scalars.
    nargs, size : int
        The number of arguments; the blob size in bytes (header included).
    guarded : bool
        CPython: whether ``pack`` checks the types one by one.
    pack : callable
        CPython: ``pack(cfg_addr, stream_handle, args) -> bytes`` (the blob).
    fill : callable
        PyPy: ``fill(thread_state, cfg_addr, stream_handle, args)`` writes the
        blob into the thread's buffer.
    layout : cdata
        ``cc_arg_layout *``: the kernel, the argument count and the offset of
        each argument in the blob.
    layout_addr : int
        The address of ``layout``.
    slots : list of _Slot
        How each argument is converted.

    ``pack`` and ``fill`` raise (``_Mismatch`` or a conversion error) when the
    arguments do not fit the plan; the launch then takes the slow path.
    """

    __slots__ = (
        "key",
        "full_key",
        "nargs",
        "size",
        "guarded",
        "pack",
        "fill",
        "layout",
        "layout_addr",
        "slots",
        "_keep",
    )


def _never(*args):
    raise _Mismatch


#: The plan every kernel starts with: it matches nothing.
_NO_PLAN = _Plan()
_NO_PLAN.key = None
_NO_PLAN.full_key = None
_NO_PLAN.guarded = True
_NO_PLAN.pack = _never
_NO_PLAN.fill = _never


class _Slot:
    """How one argument is packed: ``items`` are (struct code, CPython expr, PyPy expr)."""

    __slots__ = ("type", "items", "dtype", "raw_size", "expr_keep", "align")

    def __init__(self, tp, items, dtype=None, raw_size=None, expr_keep=None, align=None):
        self.type = tp
        self.items = items
        self.dtype = dtype
        self.raw_size = raw_size
        self.expr_keep = expr_keep or {}
        self.align = align or _RAW_ALIGN


def _one(code, cpy="{a}", pypy=None):
    return ((code, cpy, cpy if pypy is None else pypy),)


_BOOL_ITEMS = _one("?", "{a}", "1 if {a} else 0")
_INT_ITEMS = _one("n")
_FLOAT_ITEMS = _one("d")
_COMPLEX_ITEMS = (("d", "{a}.real", "{a}.real"), ("d", "{a}.imag", "{a}.imag"))
_BUFFER_ITEMS = _one("N", "({a}._ptr or _closed_buffer({a}, {i}))")

_CTYPES_SCALARS = (
    (ctypes.c_bool, _one("?", "{a}.value", "1 if {a}.value else 0")),
    (ctypes.c_int8, _one("b", "{a}.value")),
    (ctypes.c_int16, _one("h", "{a}.value")),
    (ctypes.c_int32, _one("i", "{a}.value")),
    (ctypes.c_int64, _one("q", "{a}.value")),
    (ctypes.c_uint8, _one("B", "{a}.value")),
    (ctypes.c_uint16, _one("H", "{a}.value")),
    (ctypes.c_uint32, _one("I", "{a}.value")),
    (ctypes.c_uint64, _one("Q", "{a}.value")),
    (ctypes.c_float, _one("f", "{a}.value")),
    (ctypes.c_double, _one("d", "{a}.value")),
)

_tables = []  # [(exact: {type: items}, numpy_order, ctypes_order, buffer type)] once built


def _type_tables():
    """Build (once) the exact-type table and the isinstance fallback lists."""
    if _tables:
        return _tables[0]
    import numpy as np

    from cuda_core._memory._buffer import Buffer

    numpy_scalars = (
        (np.bool_, _one("?", "{a}", "1 if {a} else 0")),
        (np.int8, _one("b", "{a}", "int({a})")),
        (np.int16, _one("h", "{a}", "int({a})")),
        (np.int32, _one("i", "{a}", "int({a})")),
        (np.int64, _one("q", "{a}", "int({a})")),
        (np.uint8, _one("B", "{a}", "int({a})")),
        (np.uint16, _one("H", "{a}", "int({a})")),
        (np.uint32, _one("I", "{a}", "int({a})")),
        (np.uint64, _one("Q", "{a}", "int({a})")),
        (np.float16, _one("H", "{a}.view(_np_u16)", "int({a}.view(_np_u16))")),
        (np.float32, _one("f", "{a}", "float({a})")),
        (np.float64, _one("d", "{a}", "float({a})")),
        (
            np.complex64,
            (("f", "{a}.real", "float({a}.real)"), ("f", "{a}.imag", "float({a}.imag)")),
        ),
        (
            np.complex128,
            (("d", "{a}.real", "float({a}.real)"), ("d", "{a}.imag", "float({a}.imag)")),
        ),
    )
    exact = {
        Buffer: _BUFFER_ITEMS,
        bool: _BOOL_ITEMS,
        int: _INT_ITEMS,
        float: _FLOAT_ITEMS,
        complex: _COMPLEX_ITEMS,
    }
    for tp, items in numpy_scalars + _CTYPES_SCALARS:
        exact.setdefault(tp, items)
    fallback = (
        numpy_scalars
        + _CTYPES_SCALARS
        + (
            (Buffer, _BUFFER_ITEMS),
            (bool, _BOOL_ITEMS),
            (int, _INT_ITEMS),
            (float, _FLOAT_ITEMS),
            (complex, _COMPLEX_ITEMS),
        )
    )
    _tables.append((exact, fallback, np))
    return _tables[0]


def _strided_memory_view_type():
    try:
        from cuda_core.utils import StridedMemoryView
    except ImportError:
        return None
    return StridedMemoryView


def _classify(arg, index, param):
    """Return the :class:`_Slot` for argument ``index`` (``param``: its ParamInfo or None)."""
    exact, fallback, np = _type_tables()
    tp = type(arg)
    items = exact.get(tp)
    if items is not None:
        return _Slot(tp, items)
    for base, items in fallback:
        if isinstance(arg, base):
            return _Slot(tp, items)
    smv = _strided_memory_view_type()
    if smv is not None and isinstance(arg, smv):
        return _Slot(tp, _one("N", "{a}.ptr"))
    if getattr(tp, GRAPH_CONDITION_MARKER, False):
        return _Slot(tp, _one("Q", "{a}.handle"))
    kind = getattr(tp, KERNEL_ARG_MARKER, None)
    if kind is not None:
        return _marked_slot(tp, kind)
    if isinstance(arg, np.void) and arg.dtype.fields is not None:
        return _struct_slot_numpy(arg, tp, index, param, np)
    if isinstance(arg, (ctypes.Structure, ctypes.Union)):
        return _struct_slot_ctypes(arg, index, param)
    raise TypeError(
        f"the argument is of unsupported type: {tp!r} (kernel argument {index}); "
        "supported: Buffer, int, float, complex, bool, NumPy and ctypes scalars, "
        "StridedMemoryView, graph conditions, NumPy structured scalars and ctypes "
        "structures"
    )


def _marked_slot(tp, kind):
    """The slot of a type that declares its kernel-argument kind (KERNEL_ARG_MARKER)."""
    if kind == "u64":
        return _Slot(tp, _one("Q", "{a}._karg"))
    size, align = kind
    items, keep = _raw_items(size, "{a}._karg", {})
    return _Slot(tp, items, raw_size=size, expr_keep=keep, align=align)


def _slot_size(slot):
    """Bytes the slot packs for its argument (structures: their padded size)."""
    if slot.raw_size is not None:
        return slot.raw_size
    return sum(struct.calcsize("@" + code) for code, _, _ in slot.items)


def _plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def _check_size(index, slot, arg, param):
    """Raise TypeError if argument ``index`` packs to another size than its parameter.

    Runs when a plan is built (once per kernel and argument types), where the
    driver reports the parameter sizes (CUDA 12.4 or newer).
    """
    size = _slot_size(slot)
    if size == param.size:
        return
    tp = type(arg)
    package = tp.__module__.partition(".")[0]
    name = f"{package}.{tp.__qualname__}" if package in ("numpy", "ctypes") else tp.__qualname__
    if slot.items is _INT_ITEMS:
        what = f"a Python int ({name}), passed as an intptr_t of {_plural(size, 'byte')}"
    elif slot.items is _FLOAT_ITEMS:
        what = f"a Python float ({name}), passed as a double of {_plural(size, 'byte')}"
    else:
        what = f"a {name} of {_plural(size, 'byte')}"
    fits = _WIDTH_EXAMPLES.get(
        param.size, "a NumPy structured scalar or a ctypes structure of that size"
    )
    raise TypeError(
        f"kernel argument {index} is {what}, but the kernel parameter is "
        f"{_plural(param.size, 'byte')}: pass a value of exactly that width ({fits})"
    )


#: Argument types of each width, for the size-mismatch message.
_WIDTH_EXAMPLES = {
    1: "e.g. numpy.int8, numpy.uint8 or bool",
    2: "e.g. numpy.int16, numpy.uint16 or numpy.float16",
    4: "e.g. numpy.int32, numpy.uint32 or numpy.float32",
    8: "e.g. numpy.int64, numpy.uint64, numpy.float64, int, float or a Buffer",
    16: "e.g. complex, numpy.complex128 or a 16-byte structure",
}


def _raw_items(size, expr, keep):
    code = f"{size}s"
    return ((code, expr, f"({expr}).ljust({size}, b'\\0')"),), keep


def _struct_size(index, what, size, param):
    """Return the slot size for a by-value structure of ``size`` bytes."""
    if param is None:
        return size
    if size > param.size:
        raise ValueError(
            f"kernel argument {index}: {what} is {size} bytes, but the kernel parameter "
            f"is {param.size} bytes"
        )
    return param.size  # zero-padded up to the parameter size (trailing padding)


def _struct_slot_numpy(arg, tp, index, param, np):
    dtype = arg.dtype
    size = dtype.itemsize
    expr = "{a}.tobytes()"
    keep = {}
    if param is not None and size != param.size and not dtype.isalignedstruct:
        aligned = np.dtype(dtype.descr, align=True) if _plain_descr(dtype) else None
        if aligned is not None and aligned.itemsize == param.size:
            # A packed NumPy struct for a C struct with padding: lay the
            # fields out as C does before passing the bytes.
            name = f"_realign{index}"
            keep[name] = functools.partial(_realign, np.zeros, aligned)
            expr = name + "({a})"
            size = aligned.itemsize
    slot_size = _struct_size(index, f"the structured scalar of dtype {dtype}", size, param)
    items, keep = _raw_items(slot_size, expr, keep)
    return _Slot(tp, items, dtype=dtype, raw_size=slot_size, expr_keep=keep)


def _plain_descr(dtype):
    try:
        return all(name for name, *_ in dtype.descr)
    except (TypeError, ValueError):
        return False


def _realign(zeros, aligned, value):
    """Return ``value`` (a packed structured scalar) laid out as ``aligned``, padding zeroed."""
    out = zeros(1, dtype=aligned)
    out[0] = value  # structured assignment: field by field, by position
    return out.tobytes()


def _struct_slot_ctypes(arg, index, param):
    tp = type(arg)
    size = ctypes.sizeof(tp)
    slot_size = _struct_size(index, f"the ctypes structure {tp.__name__}", size, param)
    items, keep = _raw_items(slot_size, "_ctypes_bytes({a})", {})
    return _Slot(tp, items, raw_size=slot_size, expr_keep=keep)


def _ctypes_bytes(obj):
    return ctypes.string_at(ctypes.addressof(obj), ctypes.sizeof(obj))


def _closed_buffer(buf, index):
    """Second half of ``buf._ptr or ...``: raise for a closed Buffer, else 0."""
    if buf._closed:
        raise RuntimeError(f"kernel argument {index}: Buffer is closed")
    return 0


def _full_key(args):
    """Return the plan-cache key: the argument types (and dtypes of structured scalars)."""
    void = _type_tables()[2].void
    return tuple((type(a), a.dtype) if isinstance(a, void) else type(a) for a in args)


def _get_plan(kernel, args):
    """Return the plan for ``args`` (built and cached on first use)."""
    key = _full_key(args)
    plan = kernel._plans.get(key)
    if plan is None:
        plan = _build_plan(kernel, args, key)
        plans = kernel._plans
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        plans[key] = plan
    kernel._plan = plan
    return plan


def _build_plan(kernel, args, full_key):
    nargs = len(args)
    info = kernel._param_info_or_none()
    if info is not None and len(info) != nargs:
        raise TypeError(
            f"kernel takes {len(info)} argument{'s' if len(info) != 1 else ''} but "
            f"{nargs} {'were' if nargs != 1 else 'was'} given"
        )
    slots = [_classify(a, i, info[i] if info is not None else None) for i, a in enumerate(args)]
    if info is not None:
        for i, (slot, arg, param) in enumerate(zip(slots, args, info)):
            _check_size(i, slot, arg, param)

    # Lay the values out after the header, each at its natural alignment (the
    # native struct rules), structures at their slot's alignment.  Offsets are from the
    # start of the blob; the argument part alone (``arg_fmt``) has the same
    # relative layout because the header size is a multiple of 8.
    arg_fmt = "@"
    arg_items = []  # per argument: [(code, cpy expr, pypy expr, blob offset)]
    for slot in slots:
        placed = []
        for code, cpy, pypy in slot.items:
            if code.endswith("s"):
                pad = -struct.calcsize(arg_fmt) % slot.align
                if pad:
                    arg_fmt += f"{pad}x"
            offset = struct.calcsize(arg_fmt + code) - struct.calcsize("@" + code)
            placed.append((code, cpy, pypy, _HEADER_SIZE + offset))
            arg_fmt += code
        arg_items.append(placed)
    size = _HEADER_SIZE + struct.calcsize(arg_fmt)

    plan = _Plan()
    plan.key = [type(a) for a in args]
    plan.full_key = full_key
    plan.nargs = nargs
    plan.size = size
    plan.slots = slots
    layout_buf = ffi.new("char[]", ffi.sizeof("cc_arg_layout") + 4 * max(nargs, 1))
    layout = ffi.cast("cc_arg_layout *", layout_buf)
    layout.func = ffi.cast("CUfunction", kernel._handle)
    layout.nargs = nargs
    for i, placed in enumerate(arg_items):
        layout.offsets[i] = placed[0][3]
    layout.bufsize = _parameter_buffer_size(info, arg_items, size - _HEADER_SIZE)
    plan.layout = layout
    plan.layout_addr = as_int_handle(layout)
    plan._keep = layout_buf

    namespace = {
        "_Mismatch": _Mismatch,
        "_closed_buffer": _closed_buffer,
        "_ctypes_bytes": _ctypes_bytes,
        "_np_u16": _type_tables()[2].uint16,
        "_L": plan.layout_addr,
        "_SIZE": size,
        "_N": nargs,
    }
    for i, slot in enumerate(slots):
        namespace[f"_T{i}"] = slot.type
        if slot.dtype is not None:
            namespace[f"_D{i}"] = slot.dtype
        namespace.update(slot.expr_keep)

    plan.pack = plan.fill = _never
    if _IS_PYPY:
        plan.guarded = True
        plan.fill = _compile(_pypy_source(slots, arg_items), namespace, "_fill")
        return plan
    # Types checked one by one in the generated code (few arguments), or by
    # one ``list(map(type, args))`` comparison (many); one pack call.
    plan.guarded = nargs <= _GUARD_MAX
    namespace["_KEY"] = plan.key
    if plan.guarded:
        namespace["_sp"] = struct.Struct(_HEADER_FORMAT + arg_fmt[1:]).pack
    else:
        namespace["_sp"] = struct.Struct(arg_fmt).pack
        namespace["_hdr"] = _header
    plan.pack = _compile(_cpython_source(slots, arg_items, plan.guarded), namespace, "_pack")
    return plan


def _parameter_buffer_size(info, arg_items, packed):
    """Return the kernel's parameter-buffer size if the packed arguments match it, else 0.

    ``packed`` bytes follow the blob header.  When every argument starts at
    the offset the driver reports for its parameter (``info``; sizes are
    already checked equal) and the last one ends where the parameters end,
    the packed bytes *are* the kernel's parameter buffer, and
    ``cc_launch_blob`` passes them in one piece.  Otherwise (layout unknown,
    or a structure aligned more strictly than the blob aligns it) each
    argument is passed by its own pointer.
    """
    if not info:
        return 0
    for placed, param in zip(arg_items, info):
        if placed[0][3] - _HEADER_SIZE != param.offset:
            return 0
    last = info[-1]
    return packed if last.offset + last.size == packed else 0


def _compile(source, namespace, name):
    """Compile generated plan code in a fresh module namespace; return function ``name``.

    A real module dictionary (rather than a plain dict) lets PyPy's JIT treat
    the plan's globals (types, layout address) as constants.
    """
    module = types.ModuleType(f"cuda_core._launch_plan_{name}")
    module.__dict__.update(namespace)
    code = compile(source, f"<cuda_core launch plan {name}>", "exec")
    exec(code, module.__dict__)  # noqa: S102 - generated from a fixed grammar, no user text
    return module.__dict__[name]


def _guards(slots, with_types, indices=None):
    """Return the conditions under which argument ``a<i>`` does not fit its slot."""
    conds = []
    for i, slot in zip(range(len(slots)) if indices is None else indices, slots):
        if with_types:
            conds.append(f"type(a{i}) is not _T{i}")
        if slot.dtype is not None:
            conds.append(f"a{i}.dtype != _D{i}")
    return conds


def _exprs(arg_items, which):
    out = []
    for i, placed in enumerate(arg_items):
        for item in placed:
            out.append(item[which].format(a=f"a{i}", i=i))
    return out


def _cpython_source(slots, arg_items, guarded):
    """``_pack(c, s, args)``: check the types, return header and arguments packed.

    With ``guarded``, the arguments are unpacked and their types checked one
    by one; otherwise one ``list(map(type, args))`` comparison checks them and
    the header is packed separately (one pack call over the argument tuple,
    without copying it).
    """
    n = len(slots)
    lines = ["def _pack(c, s, args):"]
    names = ", ".join(f"a{i}" for i in range(n))
    exprs = _exprs(arg_items, 1)
    trivial = all(e == f"a{i}" for i, e in enumerate(exprs)) and len(exprs) == n
    if n == 0:
        lines.append("    if args:")
        lines.append("        raise _Mismatch")
    elif guarded:
        lines.append(f"    {names}, = args")
    else:
        lines.append("    if list(map(type, args)) != _KEY:")
        lines.append("        raise _Mismatch")
        if not trivial:
            lines.append(f"    {names}, = args")
    conds = _guards(slots, guarded)
    if conds and (guarded or not trivial):
        lines.append("    if " + " or ".join(conds) + ":")
        lines.append("        raise _Mismatch")
    if guarded:
        values = "".join(", " + e for e in exprs)
        lines.append(f"    return _sp(_L, c, s{values})")
    elif trivial:
        lines.append("    return _hdr(_L, c, s) + _sp(*args)")
    else:
        lines.append(f"    return _hdr(_L, c, s) + _sp({', '.join(exprs)})")
    return "\n".join(lines) + "\n"


_VIEWS = {
    "?": ("u8", 1),
    "b": ("i8", 1),
    "B": ("u8", 1),
    "h": ("i16", 2),
    "H": ("u16", 2),
    "i": ("i32", 4),
    "I": ("u32", 4),
    "q": ("i64", 8),
    "Q": ("u64", 8),
    "n": ("i64", 8),
    "N": ("u64", 8),
    "f": ("f32", 4),
    "d": ("f64", 8),
}
#: PyPy plans store runs of at least this many like arguments in a loop (the
#: JIT compiles a loop better than a very long straight line).
_RUN_MIN = 17


def _runs(slots, arg_items):
    """Split the arguments into runs: (start, count) of identical one-value slots
    stored back to back, or single arguments (count 1)."""
    runs = []
    i, n = 0, len(slots)
    while i < n:
        j = i + 1
        placed = arg_items[i]
        if len(placed) == 1 and not placed[0][0].endswith("s") and slots[i].dtype is None:
            code, _, pypy, offset = placed[0]
            width = _VIEWS[code][1]
            while (
                j < n
                and slots[j].type is slots[i].type
                and len(arg_items[j]) == 1
                and arg_items[j][0][0] == code
                and arg_items[j][0][2] == pypy
                and arg_items[j][0][3] == offset + (j - i) * width
            ):
                j += 1
        if j - i < _RUN_MIN:
            runs.extend((k, 1) for k in range(i, j))
        else:
            runs.append((i, j - i))
        i = j
    return runs


def _pypy_source(slots, arg_items):
    """``_fill(st, c, s, args)``: check types, store header and values into ``st``."""
    n = len(slots)
    runs = _runs(slots, arg_items)
    straight = all(count == 1 for _, count in runs)
    lines = ["def _fill(st, c, s, args):"]
    if n == 0:
        lines.append("    if args:")
        lines.append("        raise _Mismatch")
    elif straight:
        lines.append("    " + ", ".join(f"a{i}" for i in range(n)) + ", = args")
        lines.append("    if " + " or ".join(_guards(slots, True)) + ":")
        lines.append("        raise _Mismatch")
    else:
        lines.append("    if len(args) != _N:")
        lines.append("        raise _Mismatch")
    lines.append("    if st.cap < _SIZE:")
    lines.append("        raise _Mismatch")
    body = []
    used = {"u64"}
    for start, count in runs:
        if count == 1:
            i = start
            if not straight:
                body.append(f"    a{i} = args[{i}]")
                conds = _guards([slots[i]], True, [i])
                body.append("    if " + " or ".join(conds) + ":")
                body.append("        raise _Mismatch")
            for code, _, pypy, offset in arg_items[i]:
                expr = pypy.format(a=f"a{i}", i=i)
                if code.endswith("s"):
                    size = int(code[:-1])
                    used.add("buf")
                    body.append(f"    buf[{offset}:{offset + size}] = {expr}")
                else:
                    view, width = _VIEWS[code]
                    used.add(view)
                    body.append(f"    {view}[{offset // width}] = {expr}")
        else:
            code, _, pypy, offset = arg_items[start][0]
            view, width = _VIEWS[code]
            used.add(view)
            body.append(f"    for j in range({count}):")
            body.append(f"        a = args[{start} + j]")
            body.append(f"        if type(a) is not _T{start}:")
            body.append("            raise _Mismatch")
            body.append(f"        {view}[{offset // width} + j] = {pypy.format(a='a', i=start)}")
    for view in sorted(used):
        lines.append(f"    {view} = st.{view}")
    lines.append("    u64[0] = _L")
    lines.append("    u64[1] = c")
    lines.append("    u64[2] = s")
    lines.extend(body)
    return "\n".join(lines) + "\n"


def _slow_pack(kernel, cfg_addr, stream_h, args):
    """CPython: find or build the plan for ``args`` and pack them (clear errors)."""
    plan = _get_plan(kernel, args)
    try:
        return plan, plan.pack(cfg_addr, stream_h, args)
    except RuntimeError:
        raise
    except Exception as exc:
        _diagnose(plan, args, exc)
        raise


def _slow_fill(kernel, st, cfg_addr, stream_h, args):
    """PyPy: find or build the plan for ``args`` and fill the thread's buffer."""
    plan = _get_plan(kernel, args)
    if st.cap < plan.size:
        st = _thread_state(plan.size)
    try:
        plan.fill(st, cfg_addr, stream_h, args)
    except RuntimeError:
        raise
    except Exception as exc:
        _diagnose(plan, args, exc)
        raise
    return plan, st


def _diagnose(plan, args, exc):
    """Raise a clear error naming the argument that could not be packed."""
    for i, (slot, arg) in enumerate(zip(plan.slots, args)):
        for code, cpy, _ in slot.items:
            namespace = {
                "_np_u16": _type_tables()[2].uint16,
                "_ctypes_bytes": _ctypes_bytes,
                "_closed_buffer": _closed_buffer,
            }
            namespace.update(slot.expr_keep)
            value = eval(cpy.format(a="a", i=i), namespace, {"a": arg})  # noqa: S307
            try:
                struct.pack("@" + code, value)
            except (struct.error, OverflowError, TypeError, ValueError) as err:
                if code == "n":
                    raise _ArgOverflow(
                        f"kernel argument {i} ({arg!r}) does not fit in intptr_t: Python ints "
                        "are passed as pointer-sized integers"
                    ) from err
                raise TypeError(
                    f"kernel argument {i} ({type(arg).__name__}) could not be packed: {err}"
                ) from err
    raise TypeError(f"kernel arguments could not be packed: {exc}") from exc


# --------------------------------------------------------------------------
# PyPy per-thread argument buffers.
# --------------------------------------------------------------------------
_tls = threading.local()


class _ThreadState:
    """One thread's argument buffer and its typed views (PyPy path)."""

    __slots__ = ("buf", "cap", "u8", "i8", "u16", "i16", "u32", "i32", "f32", "u64", "i64", "f64")

    def __init__(self, size):
        self.cap = size
        self.buf = buf = ffi.new("char[]", size)
        self.u8 = ffi.cast("uint8_t *", buf)
        self.i8 = ffi.cast("int8_t *", buf)
        self.u16 = ffi.cast("uint16_t *", buf)
        self.i16 = ffi.cast("int16_t *", buf)
        self.u32 = ffi.cast("uint32_t *", buf)
        self.i32 = ffi.cast("int32_t *", buf)
        self.f32 = ffi.cast("float *", buf)
        self.u64 = ffi.cast("uint64_t *", buf)
        self.i64 = ffi.cast("int64_t *", buf)
        self.f64 = ffi.cast("double *", buf)


def _thread_state(min_size):
    """Return this thread's state, (re)allocated to hold at least ``min_size`` bytes."""
    st = getattr(_tls, "st", None)
    if st is None or st.cap < min_size:
        size = 1024
        while size < min_size:
            size *= 2
        st = _tls.st = _ThreadState(size)
    return st


# --------------------------------------------------------------------------
# Checks that only special configurations or failures need.
# --------------------------------------------------------------------------
def _check_special(config, kernel, stream):
    """Cluster and cooperative launches: device support and co-residency."""
    device = stream.device
    device_id = device.device_id
    _check_device_support(config, device_id)
    if not config._is_cooperative:
        return
    cfg = config._prepare()[0]
    grid_blocks = cfg.gridDimX * cfg.gridDimY * cfg.gridDimZ
    block_size = prod(config._block)
    key = (device_id, block_size, config._shmem_size)
    limit = kernel._coop_limits.get(key)
    if limit is None:
        per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(
            block_size, config._shmem_size
        )
        limit = per_sm * device.properties.multiprocessor_count
        kernel._coop_limits[key] = limit
    if grid_blocks > limit:
        x, y, z = cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ
        raise ValueError(
            f"The specified grid size ({x} * {y} * {z} = {grid_blocks} blocks) exceeds the "
            f"limit ({limit}) for a cooperative launch: at most max_active_blocks_per_"
            f"multiprocessor x multiprocessor_count blocks can be co-resident"
        )


def _packed_arguments(kernel, args, cfg_addr=0, stream_h=0):
    """Pack ``args`` for ``kernel`` as a launch would; return ``(plan, blob bytes)``.

    For tests and diagnostics: the same plan and packing code as the launch
    fast path, without calling the driver.
    """
    if _IS_PYPY:
        st = _thread_state(0)
        plan = kernel._plan
        try:
            plan.fill(st, cfg_addr, stream_h, args)
        except Exception:
            plan, st = _slow_fill(kernel, st, cfg_addr, stream_h, args)
        return plan, bytes(ffi.buffer(st.buf, plan.size))
    plan = kernel._plan
    try:
        data = plan.pack(cfg_addr, stream_h, args)
    except Exception:
        plan, data = _slow_pack(kernel, cfg_addr, stream_h, args)
    return plan, data
