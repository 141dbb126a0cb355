# SPDX-License-Identifier: Apache-2.0
"""Kernel argument types: how each Python value is marshalled for a launch.

Each argument is classified into a *slot* (:class:`_Slot`): the ``struct``
codes its value packs to and the expressions that produce those values on
CPython and on PyPy.  An argument plan (:mod:`cuda_core._arg_plan`)
classifies each argument once per kernel and combination of argument types.

Marshalling rules (as in NVIDIA's ``cuda.core``; exact type first, then
``isinstance``): a :class:`~cuda_core.Buffer` passes its device pointer; a
Python ``int`` an ``intptr_t`` (it is treated as an address); ``float`` a
``double``; ``complex`` a ``double complex``; ``bool`` a one-byte C++
``bool``; NumPy scalars their exact width (``float16`` as raw bits); ctypes
scalars their C type; a ``StridedMemoryView`` its pointer; a graph condition
its 64-bit handle; texture and surface objects their 64-bit handles; a
``TensorMapDescriptor`` its 128 bytes by value, 64-byte aligned in the
parameter buffer (such types declare their kind with ``KERNEL_ARG_MARKER``).
Beyond ``cuda.core``, structures are passed by value: a NumPy structured
scalar (``numpy.void``) or a ``ctypes.Structure`` / ``ctypes.Union``
instance, checked against (and zero-padded to) the kernel's parameter size
where the driver reports it.  Anything else raises TypeError.

Where the driver reports the kernel's parameter sizes (CUDA 12.4 or newer),
every argument's packed width must equal its parameter's size, checked when
the plan is built (so never per launch): ``numpy.uint8`` for an ``int``
parameter, or a Python ``float`` (a double) for a 4-byte one, raises TypeError
where ``cuda.core`` would pass the bytes and let the kernel read garbage.
The exception is a Python ``int`` or ``bool`` for a parameter of 1, 2 or 4
bytes: the plan packs it in the parameter's width (:func:`_fit_param`), as
the driver reads ``cuda.core``'s ``intptr_t`` there, and a value outside
both the signed and the unsigned range of that width raises OverflowError
(``cuda.core`` truncates it).
"""

from __future__ import annotations

import functools
import struct
from typing import TYPE_CHECKING

import cuda_core._slots as _slots
from cuda_core._errors import shown_as
from cuda_core._memory._buffer import Buffer

if TYPE_CHECKING:
    import builtins
    from typing import Any, Callable, Dict, Tuple

    from cuda_core._kernel import ParamInfo

    #: How an argument is packed: (struct code, CPython expr, PyPy expr) per value.
    _Items = Tuple[Tuple[str, str, str], ...]
    #: (exact: {type: items}, isinstance fallback, numpy, ctypes)
    _Tables = Tuple[Dict[type, _Items], Tuple[Tuple[type, _Items], ...], Any, Any]

__all__ = []

#: Class attribute that marks graph-condition classes (``cuda_core.graph.
#: GraphCondition``): such arguments are passed as their 64-bit ``handle`` (an int).
GRAPH_CONDITION_MARKER = "_cuda_core_graph_condition"
#: Class attribute by which a type below this layer declares how it is passed
#: (texture/surface objects, tensor maps): ``"u64"`` passes its ``_karg`` int
#: as a 64-bit value; ``(size, alignment)`` passes its ``_karg`` bytes by value
#: at that alignment of the parameter buffer.
KERNEL_ARG_MARKER = "_cuda_core_kernel_arg"


class _Slot:
    """How one argument is packed: ``items`` are (struct code, CPython expr, PyPy expr)."""

    __slots__ = ("type", "items", "dtype", "raw_size", "expr_keep", "align", "int_width")

    type: builtins.type
    items: _Items
    dtype: Any
    raw_size: int | None
    expr_keep: dict[str, Any]
    align: int | None
    #: A Python int or bool packed in its parameter's width (1, 2 or 4 bytes), else None.
    int_width: int | None

    def __init__(
        self,
        tp: builtins.type,
        items: _Items,
        dtype: Any = None,
        raw_size: int | None = None,
        expr_keep: dict[str, Any] | None = None,
        align: int | None = None,
    ) -> None:
        self.type = tp
        self.items = items
        self.dtype = dtype
        self.raw_size = raw_size
        self.expr_keep = expr_keep or {}
        self.align = align
        self.int_width = None


def _one(code: str, cpy: str = "{a}", pypy: str | None = None) -> _Items:
    return ((code, cpy, cpy if pypy is None else pypy),)


_BOOL_ITEMS = _one("?", "{a}", "1 if {a} else 0")
_INT_ITEMS = _one("n")
_FLOAT_ITEMS = _one("d")
_COMPLEX_ITEMS = (("d", "{a}.real", "{a}.real"), ("d", "{a}.imag", "{a}.imag"))
_BUFFER_ITEMS = _one("N", "({a}._ptr or _closed_buffer({a}, {i}))")


def _ctypes_scalars(ctypes: Any) -> Tuple[Tuple[type, _Items], ...]:
    return (
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


# [(exact: {type: items}, isinstance fallback, numpy, ctypes)] once built: numpy
# and ctypes are imported at the first plan, not with cuda_core.
_tables: list[_Tables] = []


def _type_tables() -> _Tables:
    """Build (once) the exact-type table and the isinstance fallback lists."""
    if _tables:
        return _tables[0]
    import ctypes

    import numpy as np

    ctypes_scalars = _ctypes_scalars(ctypes)

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
    exact: dict[type, _Items] = {
        Buffer: _BUFFER_ITEMS,
        bool: _BOOL_ITEMS,
        int: _INT_ITEMS,
        float: _FLOAT_ITEMS,
        complex: _COMPLEX_ITEMS,
    }
    for tp, items in numpy_scalars + ctypes_scalars:
        exact.setdefault(tp, items)
    fallback = (
        numpy_scalars
        + ctypes_scalars
        + (
            (Buffer, _BUFFER_ITEMS),
            (bool, _BOOL_ITEMS),
            (int, _INT_ITEMS),
            (float, _FLOAT_ITEMS),
            (complex, _COMPLEX_ITEMS),
        )
    )
    _tables.append((exact, fallback, np, ctypes))
    return _tables[0]


def _classify(arg: object, index: int, param: ParamInfo | None) -> _Slot:
    """Return the :class:`_Slot` for argument ``index`` (``param``: its ParamInfo or None)."""
    exact, fallback, np, ctypes = _type_tables()
    tp = type(arg)
    items = exact.get(tp)
    if items is not None:
        return _Slot(tp, items)
    for base, items in fallback:
        if isinstance(arg, base):
            return _Slot(tp, items)
    smv = _slots.strided_memory_view_if_loaded()
    if smv is not None and isinstance(arg, smv):
        return _Slot(tp, _one("N", "{a}.ptr"))
    if getattr(tp, GRAPH_CONDITION_MARKER, False):
        return _Slot(tp, _one("Q", "{a}.handle"))
    if tp.__name__ == "CUgraphConditionalHandle" and hasattr(tp, "getPtr"):
        return _Slot(tp, _one("Q", "int({a})"))  # cuda.bindings' handle, as cuda.core takes it
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


def _marked_slot(tp: type, kind: Any) -> _Slot:
    """The slot of a type that declares its kind with KERNEL_ARG_MARKER."""
    if kind == "u64":
        return _Slot(tp, _one("Q", "{a}._karg"))
    size, align = kind
    items, keep = _raw_items(size, "{a}._karg", {})
    return _Slot(tp, items, raw_size=size, expr_keep=keep, align=align)


def _slot_size(slot: _Slot) -> int:
    """Bytes the slot packs for its argument (structures: their padded size)."""
    if slot.raw_size is not None:
        return slot.raw_size
    return sum(struct.calcsize("@" + code) for code, _, _ in slot.items)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _fit_param(index: int, slot: _Slot, arg: object, param: ParamInfo) -> _Slot:
    """Return the slot of argument ``index`` fitted to its parameter's size.

    Runs when a plan is built (once per kernel and argument types), where the
    driver reports the parameter sizes (CUDA 12.4 or newer).  A Python int
    or bool for a parameter of 1, 2 or 4 bytes gets a slot of that width
    (:func:`_int_slot`); any other argument must pack to exactly the
    parameter's size (:func:`_check_size`).
    """
    size = param.size
    if size in _NARROW and _slot_size(slot) != size:
        if slot.items is _INT_ITEMS or slot.items is _BOOL_ITEMS:
            return _int_slot(slot.type, size)
    _check_size(index, slot, arg, param)
    return slot


#: Python ints packed in a narrower parameter, by width: (struct code of the
#: signed type, its largest value, the modulus of the width).
_NARROW = {1: ("b", 0x7F, 0x100), 2: ("h", 0x7FFF, 0x1_0000), 4: ("i", 0x7FFF_FFFF, 0x1_0000_0000)}


def _int_slot(tp: type, width: int) -> _Slot:
    """The slot of a Python int (or bool) packed in a ``width``-byte parameter.

    The value is stored as the signed type of that width: a value of the
    unsigned range above the signed one is first taken modulo ``2**(8 *
    width)`` (the same bits), and anything above the unsigned range becomes
    None, which packing refuses, as it refuses a value below the signed
    range.  The launch then takes the slow path, whose :func:`_int_overflow`
    names the argument.  Values in the signed range cost one comparison.
    """
    code, top, modulus = _NARROW[width]
    expr = f"({{a}} if {{a}} <= {top} else {{a}} - {modulus} if {{a}} < {modulus} else None)"
    slot = _Slot(tp, _one(code, expr))
    slot.int_width = width
    return slot


@shown_as(OverflowError)
class _IntWidthOverflow(OverflowError, ValueError):
    """A Python int outside the range of its 1-, 2- or 4-byte parameter.

    An OverflowError, and a ValueError as the package's other bad values are
    (code catching either still works).
    """


def _int_overflow(index: int, slot: _Slot, arg: Any) -> OverflowError | None:
    """Return the OverflowError for a Python int outside its narrow slot's range, else None."""
    width = slot.int_width
    if width is None:
        return None
    bits = 8 * width
    low, high = -(1 << (bits - 1)), (1 << bits) - 1
    value = int(arg)
    if low <= value <= high:
        return None
    return _IntWidthOverflow(
        f"kernel argument {index} is {value}, which does not fit its kernel parameter of "
        f"{_plural(width, 'byte')}: a Python int for it must lie in [{low}, {high}] (the "
        f"signed or the unsigned range of {_plural(width, 'byte')})"
    )


def _check_size(index: int, slot: _Slot, arg: object, param: ParamInfo) -> None:
    """Raise TypeError if argument ``index`` packs to another size than its parameter."""
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
        if param.size == 4:
            raise TypeError(
                f"kernel argument {index} is {what}, but the kernel parameter is 4 bytes: "
                "pass numpy.float32(value) for a float parameter (the parameter's type is "
                "unknown, so a Python float is not narrowed)"
            )
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


def _raw_items(size: int, expr: str, keep: dict[str, Any]) -> tuple[_Items, dict[str, Any]]:
    code = f"{size}s"
    return ((code, expr, f"({expr}).ljust({size}, b'\\0')"),), keep


def _struct_size(index: int, what: str, size: int, param: ParamInfo | None) -> int:
    """Return the slot size for a by-value structure of ``size`` bytes."""
    if param is None:
        return size
    if size > param.size:
        raise ValueError(
            f"kernel argument {index}: {what} is {size} bytes, but the kernel parameter "
            f"is {param.size} bytes"
        )
    return param.size  # type: ignore[no-any-return]  # zero-padded up to the parameter size


def _struct_slot_numpy(arg: Any, tp: type, index: int, param: ParamInfo | None, np: Any) -> _Slot:
    dtype = arg.dtype
    size = dtype.itemsize
    expr = "{a}.tobytes()"
    keep: dict[str, Any] = {}
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


def _plain_descr(dtype: Any) -> bool:
    try:
        return all(name for name, *_ in dtype.descr)
    except (TypeError, ValueError):
        return False


def _realign(zeros: Callable[..., Any], aligned: Any, value: Any) -> bytes:
    """Return ``value`` (a packed structured scalar) laid out as ``aligned``, padding zeroed."""
    out = zeros(1, dtype=aligned)
    out[0] = value  # structured assignment: field by field, by position
    return out.tobytes()  # type: ignore[no-any-return]  # numpy is untyped here


def _struct_slot_ctypes(arg: Any, index: int, param: ParamInfo | None) -> _Slot:
    import ctypes

    tp = type(arg)
    size = ctypes.sizeof(tp)
    slot_size = _struct_size(index, f"the ctypes structure {tp.__name__}", size, param)
    items, keep = _raw_items(slot_size, "_ctypes_bytes({a})", {})
    return _Slot(tp, items, raw_size=slot_size, expr_keep=keep)


def _ctypes_bytes(obj: Any) -> bytes:
    import ctypes

    return ctypes.string_at(ctypes.addressof(obj), ctypes.sizeof(obj))


def _closed_buffer(buf: Buffer, index: int) -> int:
    """Second half of ``buf._ptr or ...``: raise for a closed Buffer, else 0."""
    if buf._closed:
        raise RuntimeError(f"kernel argument {index}: Buffer is closed")
    return 0
