# SPDX-License-Identifier: Apache-2.0
"""Argument plans: how a launch packs its arguments, built once per argument types.

Each launch passes the extension one byte block, the *blob*: three
pointer-sized words -- the argument layout, the prepared launch
configuration and the stream -- followed by the packed argument values.
The argument layout and the code that packs the values come from an
*argument plan*, built once per kernel and combination of argument types and
cached on the :class:`~cuda_core.Kernel`.  A plan is Python source generated
for that combination (:mod:`cuda_core._arg_codegen`) and compiled once:

* on CPython it checks the argument types and calls one precompiled
  ``struct.Struct.pack`` (the fastest way to turn Python values into bytes
  there); for many arguments the type check is one ``list(map(type, args))``
  comparison instead.  The packed ``bytes`` object is the blob: a fresh
  small object per launch is cheaper there than finding a per-thread buffer
  (``threading.local``) and packing into it, and it is thread-safe as is;
* on PyPy it checks the types (JIT guards) and stores each value into a
  preallocated per-thread buffer through typed cffi pointers, which the JIT
  turns into plain stores; that buffer is the blob.

Either way the plan's ``pack(cfg_addr, stream_handle, args)`` returns what
``cc_launch_blob`` takes, so one launch function serves both interpreters.

How each argument type is marshalled is decided in
:mod:`cuda_core._arg_types`.  When the cached plan does not fit the
arguments, the launch takes the slow path here (:func:`_slow_pack`), which
finds or builds the right plan and turns packing failures into errors that
name the argument.
"""

from __future__ import annotations

import struct
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Sequence

from cuda_core._arg_codegen import _compile, _cpython_source, _pypy_source
from cuda_core._arg_types import (
    _classify,
    _closed_buffer,
    _ctypes_bytes,
    _fit_param,
    _int_overflow,
    _type_tables,
)
from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi
from cuda_core._errors import shown_as

if TYPE_CHECKING:
    from typing import NoReturn

    from cuda_core._arg_codegen import _Item
    from cuda_core._arg_types import _Slot
    from cuda_core._kernel import Kernel

__all__: list[str] = []

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
        ``pack(cfg_addr, stream_handle, args)`` returns the blob: ``bytes`` on
        CPython; on PyPy the thread's buffer (``char[]``, valid until the
        thread's next pack), written in place.
    layout : cdata
        ``cc_arg_layout *``: the kernel, the argument count and the offset of
        each argument in the blob.
    layout_addr : int
        The address of ``layout``.
    slots : list of _Slot
        How each argument is converted.

    ``pack`` raises (``_Mismatch`` or a conversion error) when the arguments
    do not fit the plan, or on PyPy when the thread's buffer is missing or
    too small; the launch then takes the slow path.
    """

    __slots__ = (
        "key",
        "full_key",
        "nargs",
        "size",
        "guarded",
        "pack",
        "layout",
        "layout_addr",
        "slots",
        "_keep",
    )

    key: list[type] | None
    full_key: tuple[Any, ...] | None
    nargs: int
    size: int
    guarded: bool
    pack: Callable[..., Any]  # bytes on CPython, the thread's char[] on PyPy
    layout: Any
    layout_addr: int
    slots: list[_Slot]
    _keep: Any


class _Mismatch(Exception):
    """The cached plan does not fit these arguments (internal control flow)."""


@shown_as(ValueError)
class _ArgOverflow(ValueError, OverflowError):
    """A Python int argument that does not fit in ``intptr_t``.

    A ValueError (a bad value, like other range errors of the package) and an
    OverflowError (what packing it raises, so code catching that still works).
    """


def _never(*args: object) -> NoReturn:
    raise _Mismatch


#: The plan every kernel starts with: it matches nothing.
_NO_PLAN = _Plan()
_NO_PLAN.key = None
_NO_PLAN.full_key = None
_NO_PLAN.guarded = True
_NO_PLAN.pack = _never


def _full_key(args: Sequence[Any]) -> tuple[Any, ...]:
    """Return the plan-cache key: the argument types (and dtypes of structured scalars)."""
    void = _type_tables()[2].void
    return tuple((type(a), a.dtype) if isinstance(a, void) else type(a) for a in args)


def _get_plan(kernel: Kernel, args: Sequence[Any]) -> _Plan:
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


def _build_plan(kernel: Kernel, args: Sequence[Any], full_key: tuple[Any, ...]) -> _Plan:
    nargs = len(args)
    info = kernel._param_info_or_none()
    if info is not None and len(info) != nargs:
        raise TypeError(
            f"kernel takes {len(info)} argument{'s' if len(info) != 1 else ''} but "
            f"{nargs} {'were' if nargs != 1 else 'was'} given"
        )
    slots = [_classify(a, i, info[i] if info is not None else None) for i, a in enumerate(args)]
    if info is not None:
        slots = [_fit_param(i, *fit) for i, fit in enumerate(zip(slots, args, info))]

    # Lay the values out after the header, each at its natural alignment (the
    # native struct rules), structures at their slot's alignment (default
    # _RAW_ALIGN).  Offsets are from the start of the blob; the argument part
    # alone (``arg_fmt``) has the same relative layout because the header size
    # is a multiple of 8.
    arg_fmt = "@"
    arg_items: list[list[_Item]] = []  # per argument: [(code, cpy expr, pypy expr, blob offset)]
    for slot in slots:
        placed: list[_Item] = []
        for code, cpy, pypy in slot.items:
            if code.endswith("s"):
                pad = -struct.calcsize(arg_fmt) % (slot.align or _RAW_ALIGN)
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

    namespace: dict[str, Any] = {
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

    plan.pack = _never
    if _IS_PYPY:
        plan.guarded = True
        namespace["_tls"] = _tls
        plan.pack = _compile(_pypy_source(slots, arg_items), namespace, "_pack")
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


def _parameter_buffer_size(
    info: Sequence[Any] | None, arg_items: Sequence[Sequence[_Item]], packed: int
) -> int:
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


def _slow_pack(
    kernel: Kernel, cfg_addr: int | None, stream_h: int, args: Sequence[Any]
) -> tuple[_Plan, Any]:
    """Find or build the plan for ``args`` and pack them (clear errors); return ``(plan, blob)``.

    On PyPy the thread's buffer is made (or grown) for the plan first.
    """
    plan = _get_plan(kernel, args)
    if _IS_PYPY:
        _thread_state(plan.size)
    try:
        return plan, plan.pack(cfg_addr, stream_h, args)
    except RuntimeError:
        raise
    except Exception as exc:
        _diagnose(plan, args, exc)
        raise


def _diagnose(plan: _Plan, args: Sequence[Any], exc: Exception) -> NoReturn:
    """Raise a clear error naming the argument that could not be packed."""
    for i, (slot, arg) in enumerate(zip(plan.slots, args)):
        overflow = _int_overflow(i, slot, arg)
        if overflow is not None:
            raise overflow from None
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


def _packed_arguments(
    kernel: Kernel, args: Sequence[Any], cfg_addr: int = 0, stream_h: int = 0
) -> tuple[_Plan, bytes]:
    """Pack ``args`` for ``kernel`` as a launch would; return ``(plan, blob bytes)``.

    For graph kernel nodes, tests and diagnostics: the same plan and packing
    code as the launch fast path, without calling the driver.
    """
    plan = kernel._plan
    try:
        data = plan.pack(cfg_addr, stream_h, args)
    except Exception:
        plan, data = _slow_pack(kernel, cfg_addr, stream_h, args)
    if _IS_PYPY:  # the thread's buffer: copied out before the next pack reuses it
        return plan, bytes(ffi.buffer(data, plan.size))
    return plan, data  # bytes on CPython


# --------------------------------------------------------------------------
# PyPy per-thread argument buffers.
# --------------------------------------------------------------------------
_tls = threading.local()


class _ThreadState:
    """One thread's argument buffer and its typed views (PyPy path)."""

    __slots__ = ("buf", "cap", "u8", "i8", "u16", "i16", "u32", "i32", "f32", "u64", "i64", "f64")

    def __init__(self, size: int) -> None:
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


def _thread_state(min_size: int) -> _ThreadState:
    """Return this thread's state, (re)allocated to hold at least ``min_size`` bytes."""
    st = getattr(_tls, "st", None)
    if st is None or st.cap < min_size:
        size = 1024
        while size < min_size:
            size *= 2
        st = _tls.st = _ThreadState(size)
    return st
