# SPDX-License-Identifier: Apache-2.0
"""How a viewed tensor becomes the arrays a tensor map is encoded from, and its checks.

Used by :mod:`cuda_core._tensor_map` (which re-exports the helpers its
tests name).  The tiled encode of ``StridedMemoryView.as_tensor_map`` is
one call into the extension (``cc_tensor_map_encode_tiled`` in
``cffi_src/csrc/tensor_map.c``) from arrays prepared once and reused: the
driver-order layout of a view is kept on the view (its ``_tma_layout``
slot: views do not change once made), and the packed box and element
strides of each box seen are kept here.  The checks stay where they were,
in the same order: a reused array only stands for checks that passed.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, TypeVar

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle
from cuda_core._context import _current_ctx
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._dlpack import DLDeviceType
from cuda_core._tensor_map_types import (
    _DATA_TYPE_SIZE,
    _SWIZZLE_SPAN,
    TensorMapIm2ColWideMode,
    TensorMapInterleave,
    _check_enums,
    _int_tuple,
    _normalize_data_type,
    _require_enum,
    _resolve_data_type,
)

if TYPE_CHECKING:
    from cuda_core._tensor_map import TensorMapDescriptor

_T = TypeVar("_T", bound="TensorMapDescriptor")

_kDLCUDA = int(DLDeviceType.kDLCUDA)
_WORD_SPAN = 1 << 64
_MAP_SIZE = 128
_MAP_ALIGN = 128  # CUDA 13 declares CUtensorMap alignas(128) (12.x: 64)
_INTERLEAVE_NONE = TensorMapInterleave.NONE

#: ``{box (or (box, element strides)): cuuint32_t[2 * rank]}`` in driver
#: order, for boxes whose checks passed; emptied when it grows past
#: _BOX_ARRAYS_MAX entries.
_BOX_ARRAYS: dict[Any, Any] = {}
_BOX_ARRAYS_MAX = 256

_tls = threading.local()


def _scratch() -> tuple[Any, Any]:
    """This thread's ``int[2]`` (status, device) and ``char[128]`` (map) out-parameters."""
    try:
        return _tls.s  # type: ignore[no-any-return]
    except AttributeError:
        scratch = _tls.s = (ffi.new("int[2]"), ffi.new("char[]", _MAP_SIZE))
        return scratch


def _context_and_device(out: Any) -> tuple[int, int]:
    """Return (address of the current context, its device), in one call into the extension.

    ``out``: this thread's ``int[2]`` from :func:`_scratch`.

    Raises
    ------
    CUDAError
        If the current context or its device cannot be read.
    RuntimeError
        If no CUDA context is current.
    """
    ctx = lib.cc_context_device(out)
    status = out[0]
    if status:
        if ctx:
            check(status, "cuCtxGetDevice")
        check(status)
    if not ctx:
        raise RuntimeError("TensorMapDescriptor requires an active CUDA context")
    return (ctx if ctx > 0 else ctx + _WORD_SPAN), out[1]


def _check_view(view: Any) -> None:
    if not view.is_device_accessible:
        raise ValueError("The tensor must be device-accessible")
    if view.ptr % 16:
        raise ValueError(
            f"Global memory address must be 16-byte aligned, got address 0x{view.ptr:x}"
        )


def _require_view_device(view: Any, expected_device_id: int, operation: str) -> None:
    """Reject a tensor in another device's memory (host and managed memory pass)."""
    device_type, device_id = view.__dlpack_device__()
    if device_type == _kDLCUDA and device_id != expected_device_id:
        raise ValueError(
            f"{operation} expects tensor on device {expected_device_id}, got {device_id}"
        )


def _byte_layout(view: Any, elem: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Return (dims in data-type elements, byte strides), both row-major.

    The view's strides count its own elements; a data type of another size
    rescales the innermost extent (which must then hold whole elements).
    """
    shape = tuple(view.shape)
    if not shape:
        return (), ()
    dtype = view.dtype
    itemsize = dtype.itemsize if dtype is not None else elem
    strides = view.strides
    if strides is None:
        strides = []
        step = 1
        for dim in reversed(shape):
            strides.append(step)
            step *= dim
        strides = tuple(reversed(strides))
    if shape[-1] != 1 and strides[-1] != 1:
        raise ValueError(
            f"the innermost dimension must be contiguous (stride 1), got stride {strides[-1]}"
        )
    byte_strides = tuple(s * itemsize for s in strides)
    inner = shape[-1] * itemsize
    if inner % elem:
        raise ValueError(
            f"the innermost extent ({inner} bytes) is not a whole number of {elem}-byte elements"
        )
    dims = shape[:-1] + (inner // elem,)
    for i, (dim, stride) in enumerate(zip(dims[:-1], byte_strides[:-1])):
        if dim > 1 and stride % 16:
            raise ValueError(
                f"the stride of dimension {i} ({stride} bytes) must be a multiple of 16 bytes"
            )
    return dims, byte_strides


def _driver_layout(dims: tuple[int, ...], byte_strides: tuple[int, ...]) -> tuple[Any, Any]:
    """Innermost-first ``globalDim`` and ``globalStrides`` (the rank - 1 outer strides)."""
    c_dims = ffi.new("cuuint64_t[]", list(reversed(dims)))
    outer = list(reversed(byte_strides[:-1]))
    c_strides = ffi.new("cuuint64_t[]", outer or [0])
    return c_dims, c_strides


def _packed_layout(dims: tuple[int, ...], byte_strides: tuple[int, ...]) -> Any:
    """:func:`_driver_layout`'s two arrays in one: dims, then the outer strides (or a 0)."""
    outer = list(reversed(byte_strides[:-1]))
    return ffi.new("cuuint64_t[]", list(reversed(dims)) + (outer or [0]))


def _element_strides(element_strides: Any, rank: int) -> tuple[int, ...]:
    """Return the checked ``element_strides`` tuple (None: all 1)."""
    if element_strides is None:
        return (1,) * rank
    strides = _int_tuple("element_strides", element_strides)
    if len(strides) != rank:
        raise ValueError(f"element_strides must have {rank} elements, got {len(strides)}")
    for i, s in enumerate(strides):
        if not 1 <= s <= 8:
            raise ValueError(f"element_strides[{i}] must be in [1, 8], got {s}")
    return strides


def _box_row_error(box: Any, elem: int, interleave: Any, swizzle: Any) -> str | None:
    """What is wrong with the box's innermost row of ``elem``-byte elements, if anything.

    Without interleave the row must be a multiple of 16 bytes, and no wider
    than the swizzle span.
    """
    if interleave != _INTERLEAVE_NONE:
        return None
    row = box[-1] * elem
    rank = len(box)
    if row % 16:
        return f"box_dim[{rank - 1}] * element size ({row} bytes) must be a multiple of 16 bytes"
    span = _SWIZZLE_SPAN.get(swizzle) if swizzle else None
    if span is not None and row > span:
        return (
            f"box_dim[{rank - 1}] * element size ({row} bytes) must not exceed the "
            f"swizzle span ({span} bytes)"
        )
    return None


def _exact_ints(values: Any) -> bool:
    """Whether ``values`` is a tuple of plain ints (so that it may key :data:`_BOX_ARRAYS`)."""
    if type(values) is not tuple:
        return False
    for value in values:
        if type(value) is not int:
            return False
    return True


def _checked_box(box: Any, element_strides: Any, rank: int, reuse: bool) -> Any:
    """Check the box and element strides for ``rank``; return their packed array if kept.

    None means the checks passed and no array is kept yet (:func:`_box_array`
    makes it).  ``reuse``: both are tuples of plain ints (or strides None).
    """
    if len(box) != rank:
        raise ValueError(f"box_dim must have {rank} elements (same as tensor rank), got {len(box)}")
    if reuse:
        packed = _BOX_ARRAYS.get(box if element_strides is None else (box, element_strides))
        if packed is not None:
            return packed
    for i, b in enumerate(box):
        if not 1 <= b <= 256:
            raise ValueError(f"box_dim[{i}] must be in [1, 256], got {b}")
    _element_strides(element_strides, rank)
    return None


def _box_array(box: Any, element_strides: Any, rank: int, reuse: bool) -> Any:
    """The driver-order box dims, then element strides, as one ``cuuint32_t`` array."""
    estrides = _element_strides(element_strides, rank)
    packed = ffi.new("cuuint32_t[]", list(reversed(box)) + list(reversed(estrides)))
    if reuse:
        if len(_BOX_ARRAYS) >= _BOX_ARRAYS_MAX:
            _BOX_ARRAYS.clear()
        _BOX_ARRAYS[box if element_strides is None else (box, element_strides)] = packed
    return packed


def _begin(cls: type[_T], view: Any, data_type: Any, operation: str) -> tuple[_T, int, int]:
    """Check ``view``; return (descriptor, rank, element size).

    The layout (``_byte_layout``) is checked afterwards, as upstream does:
    the rank and box checks come first.
    """
    _check_view(view)
    context, device_id = _context_and_device(_scratch()[0])
    _require_view_device(view, device_id, operation)
    dtype = _resolve_data_type(view, data_type)
    elem = _DATA_TYPE_SIZE[dtype]
    rank = len(tuple(view.shape))
    self = object.__new__(cls)
    _new_map(self)
    self._source_ref = view.exporting_obj
    self._view_ref = view
    self._context = context
    self._device_id = device_id
    self._repr_info = [None, rank, dtype, None]
    return self, rank, elem


def _new_map(self: TensorMapDescriptor) -> None:
    """Give ``self`` an aligned ``CUtensorMap`` of its own (``_map``, in ``_storage``)."""
    self._storage = ffi.new("char[]", _MAP_SIZE + _MAP_ALIGN)
    base = as_int_handle(self._storage)
    self._map = ffi.cast("CUtensorMap *", base + (-base) % _MAP_ALIGN)


#: The rank check of each im2col kind names it so.
_IM2COL_NAMES = {"im2col": "Im2col", "im2col_wide": "Im2col-wide"}


def _im2col(
    cls: type[_T],
    kind: str,
    view: Any,
    pixels: tuple[Any, Any, int, int],
    element_strides: Any,
    data_type: Any,
    enums: tuple[Any, ...],
) -> _T:
    """The whole of ``TensorMapDescriptor._from_<kind>`` (``im2col`` or ``im2col_wide``).

    ``pixels``: the two corners (sequences of rank - 2 offsets for
    ``im2col``, single widths for ``im2col_wide``), channels per pixel,
    pixels per column; ``enums``: the driver's trailing enumeration
    arguments (interleave first, then ``im2col_wide``'s mode, then swizzle,
    L2 promotion, out-of-bounds fill).  Checked in this order: the
    enumerations, the view and its rank (3 to 5), the corners.
    """
    _check_enums(enums[0], *enums[-3:])
    if kind == "im2col_wide":
        _require_enum("mode", enums[1], TensorMapIm2ColWideMode)
    self, rank, elem = _begin(
        cls, view, _normalize_data_type(data_type), f"TensorMapDescriptor._from_{kind}"
    )
    if not 3 <= rank <= 5:
        raise ValueError(f"{_IM2COL_NAMES[kind]} tensor rank must be between 3 and 5, got {rank}")
    lower, upper, channels, columns = pixels
    if kind == "im2col":
        corners = {
            "pixel_box_lower_corner": _int_tuple("pixel_box_lower_corner", lower),
            "pixel_box_upper_corner": _int_tuple("pixel_box_upper_corner", upper),
        }
        for what, offsets in corners.items():
            if len(offsets) != rank - 2:
                raise ValueError(
                    f"{what} must have {rank - 2} elements (rank - 2), got {len(offsets)}"
                )
        lower, upper = (ffi.new("int[]", list(reversed(c))) for c in corners.values())
        encode, name = lib.cuTensorMapEncodeIm2col, "cuTensorMapEncodeIm2col"
    else:
        encode, name = lib.cuTensorMapEncodeIm2colWide, "cuTensorMapEncodeIm2colWide"
    estrides = _element_strides(element_strides, rank)
    head = _encode_head(self, rank, *_byte_layout(self._view_ref, elem))
    c_estrides = ffi.new("cuuint32_t[]", list(reversed(estrides)))
    check(encode(*head, lower, upper, channels, columns, c_estrides, *enums), name)
    self._karg = bytes(ffi.buffer(self._map, _MAP_SIZE))
    self._repr_info[0] = kind
    self._repr_info[3] = enums[-3]
    self._repr_info = tuple(self._repr_info)
    return self


def _encode_head(
    self: TensorMapDescriptor, rank: int, dims: tuple[int, ...], strides: tuple[int, ...]
) -> tuple[Any, ...]:
    """Return the arguments every ``cuTensorMapEncode*`` call starts with.

    ``(map, data type, rank, address, dims, strides)``: the dims and byte
    strides (from :func:`_byte_layout`) reversed into driver order.
    """
    c_dims, c_strides = _driver_layout(dims, strides)
    c_ptr = ffi.cast("void *", self._view_ref.ptr)
    return (self._map, self._repr_info[2], rank, c_ptr, c_dims, c_strides)


def _current_context_address() -> int:
    c_ctx = _current_ctx()
    if c_ctx == ffi.NULL:
        raise RuntimeError("TensorMapDescriptor requires an active CUDA context")
    address: int = as_int_handle(c_ctx)
    return address


def _view_of(tensor: object) -> Any:
    return _slots.strided_memory_view().from_any_interface(tensor, stream_ptr=-1)
