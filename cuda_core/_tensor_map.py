# SPDX-License-Identifier: Apache-2.0
"""TMA tensor maps: :class:`TensorMapDescriptor` and :class:`TensorMapDescriptorOptions`.

A tensor map (``CUtensorMap``, 128 opaque bytes) tells the Tensor Memory
Accelerator of Hopper and later GPUs (compute capability 9.0+) how a tensor
in global memory is laid out and which box (tile) one bulk copy moves to or
from shared memory.  Descriptors are made by
:meth:`StridedMemoryView.as_tensor_map <cuda_core.utils.StridedMemoryView.as_tensor_map>`
(tiled) or the private ``_from_im2col``/``_from_im2col_wide`` factories, and
passed to :func:`~cuda_core.launch` by value for a ``const __grid_constant__
CUtensorMap`` parameter.

Shapes, box sizes and strides are given in the tensor's (row-major) order;
the driver's arrays are innermost-first, so they are reversed here.  The
descriptor keeps the viewed object alive.

This module sits below :mod:`cuda_core.utils`: the view class it builds
views with (for :meth:`TensorMapDescriptor.replace_address`) and the Device
class come from registration slots (``cuda_core._slots``).  The package
imports this module at the first use of its names
(``cuda_core.TensorMapDescriptor``, ``as_tensor_map``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle, check_or_create_options
from cuda_core._context import _current_ctx
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._dlpack import DLDeviceType
from cuda_core._tensor_map_types import (  # noqa: F401 - the enums are re-exported here
    _DATA_TYPE_SIZE,
    _SWIZZLE_SPAN,
    TensorMapDataType,
    TensorMapIm2ColWideMode,
    TensorMapInterleave,
    TensorMapL2Promotion,
    TensorMapOOBFill,
    TensorMapSwizzle,
    _check_enums,
    _int_tuple,
    _normalize_data_type,
    _numpy_dtype_to_tma,
    _require_enum,
    _resolve_data_type,
)

if TYPE_CHECKING:
    from cuda_core._device import Device

__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]

_T = TypeVar("_T", bound="TensorMapDescriptor")

#: Class attribute read by ``launch``: pass ``_karg`` (bytes) by value, with
#: this (size, alignment) (see ``cuda_core._launcher``).
KERNEL_ARG_MARKER = "_cuda_core_kernel_arg"
_MAP_SIZE = 128
_MAP_ALIGN = 128  # CUDA 13 declares CUtensorMap alignas(128) (12.x: 64)
_kDLCUDA = int(DLDeviceType.kDLCUDA)


@dataclass
class TensorMapDescriptorOptions:
    """Options of a tiled tensor map (:meth:`StridedMemoryView.as_tensor_map`).

    Attributes
    ----------
    box_dim : tuple of int
        The box (tile) size in elements, one entry per tensor dimension
        (row-major order), each in ``[1, 256]``.
    element_strides : tuple of int, optional
        Traversal stride per dimension, each in ``[1, 8]``; default all 1.
    data_type : numpy.dtype, dtype-like or TensorMapDataType, optional
        The element type; default: the tensor's dtype.
    interleave : TensorMapInterleave
        Default ``NONE``.
    swizzle : TensorMapSwizzle
        Default ``NONE``.
    l2_promotion : TensorMapL2Promotion
        Default ``NONE``.
    oob_fill : TensorMapOOBFill
        Default ``NONE`` (zeros).

    Raises
    ------
    TypeError
        For a box or stride that is not a sequence of ints, a data type that
        is neither a dtype nor a TensorMapDataType, or an option that is not
        a member of its enumeration.
    """

    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...] | None = None
    data_type: Any = None
    interleave: TensorMapInterleave = TensorMapInterleave.NONE
    swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE
    l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE
    oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE

    def __post_init__(self) -> None:
        self.box_dim = _int_tuple("box_dim", self.box_dim)
        if self.element_strides is not None:
            self.element_strides = _int_tuple("element_strides", self.element_strides)
        self.data_type = _normalize_data_type(self.data_type)
        self.interleave = _require_enum("interleave", self.interleave, TensorMapInterleave)
        self.swizzle = _require_enum("swizzle", self.swizzle, TensorMapSwizzle)
        self.l2_promotion = _require_enum("l2_promotion", self.l2_promotion, TensorMapL2Promotion)
        self.oob_fill = _require_enum("oob_fill", self.oob_fill, TensorMapOOBFill)


class TensorMapDescriptor:
    """A TMA tensor map (``CUtensorMap``) for bulk tensor copies on compute capability 9.0+.

    Made by :meth:`StridedMemoryView.as_tensor_map
    <cuda_core.utils.StridedMemoryView.as_tensor_map>`; pass it to
    :func:`~cuda_core.launch` for a ``const __grid_constant__ CUtensorMap``
    parameter (128 bytes, by value).  It keeps the viewed tensor alive;
    :meth:`replace_address` points it at another tensor of the same layout.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = (
        "_storage",
        "_map",
        "_karg",
        "_source_ref",
        "_view_ref",
        "_context",
        "_device_id",
        "_repr_info",
    )
    _storage: Any
    _map: Any
    _karg: bytes
    _source_ref: object
    _view_ref: Any
    _context: int
    _device_id: int
    _repr_info: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "TensorMapDescriptor cannot be instantiated directly. "
            "Use StridedMemoryView.as_tensor_map() instead."
        )

    def __repr__(self) -> str:
        info = self._repr_info
        return (
            f"TensorMapDescriptor({info[0]}, rank={info[1]}, dtype={info[2].name}, "
            f"swizzle={info[3].name})"
        )

    @classmethod
    def _from_tiled(
        cls: type[_T],
        view: Any,
        box_dim: Any = None,
        *,
        options: Any = None,
        element_strides: Any = None,
        data_type: Any = None,
        interleave: TensorMapInterleave = TensorMapInterleave.NONE,
        swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE,
        l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE,
        oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE,
    ) -> _T:
        """Encode a tiled tensor map of ``view`` (see :class:`TensorMapDescriptorOptions`).

        Raises
        ------
        TypeError
            For options given both bundled and one by one, or no ``box_dim``.
        ValueError
            For memory the device cannot access, a pointer not 16-byte
            aligned, a rank outside 1..5, box dims outside ``[1, 256]`` or of
            the wrong count, an unsupported dtype, or a layout TMA cannot
            describe (innermost dimension not contiguous, strides not
            multiples of 16 bytes, an innermost box row not a multiple of 16
            bytes or wider than the swizzle span).
        RuntimeError
            If no CUDA context is current.
        CUDAError
            If the driver rejects the descriptor.
        """
        opts = _coerce_options(
            box_dim,
            options,
            element_strides,
            data_type,
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
        )
        self, rank, elem = _begin(cls, view, opts.data_type, "TensorMapDescriptor._from_tiled")
        if not 1 <= rank <= 5:
            raise ValueError(f"Tensor rank must be between 1 and 5, got {rank}")
        box = opts.box_dim
        if len(box) != rank:
            raise ValueError(
                f"box_dim must have {rank} elements (same as tensor rank), got {len(box)}"
            )
        for i, b in enumerate(box):
            if not 1 <= b <= 256:
                raise ValueError(f"box_dim[{i}] must be in [1, 256], got {b}")
        estrides = _element_strides(opts.element_strides, rank)
        dims, strides = _byte_layout(view, elem)
        if opts.interleave == TensorMapInterleave.NONE:
            row = box[-1] * _DATA_TYPE_SIZE[self._repr_info[2]]
            if row % 16:
                raise ValueError(
                    f"box_dim[{rank - 1}] * element size ({row} bytes) must be a multiple of "
                    "16 bytes"
                )
            span = _SWIZZLE_SPAN.get(opts.swizzle)
            if span is not None and row > span:
                raise ValueError(
                    f"box_dim[{rank - 1}] * element size ({row} bytes) must not exceed the "
                    f"swizzle span ({span} bytes)"
                )
        status = lib.cuTensorMapEncodeTiled(
            *_encode_head(self, rank, dims, strides),
            ffi.new("cuuint32_t[]", list(reversed(box))),
            ffi.new("cuuint32_t[]", list(reversed(estrides))),
            opts.interleave,
            opts.swizzle,
            opts.l2_promotion,
            opts.oob_fill,
        )
        check(status, "cuTensorMapEncodeTiled")
        return _finish(self, "tiled", opts.swizzle)

    @classmethod
    def _from_im2col(
        cls: type[_T],
        view: Any,
        pixel_box_lower_corner: Any,
        pixel_box_upper_corner: Any,
        channels_per_pixel: int,
        pixels_per_column: int,
        *,
        element_strides: Any = None,
        data_type: Any = None,
        interleave: TensorMapInterleave = TensorMapInterleave.NONE,
        swizzle: TensorMapSwizzle = TensorMapSwizzle.NONE,
        l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE,
        oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE,
    ) -> _T:
        """Encode an im2col tensor map of ``view`` (rank 3 to 5, channels innermost).

        ``pixel_box_lower_corner``/``pixel_box_upper_corner`` give one offset
        per spatial dimension (rank - 2 of them, row-major order).

        Raises
        ------
        ValueError
            For a rank outside 3..5, corners of the wrong length, or the
            view problems of :meth:`_from_tiled`.
        """
        _check_enums(interleave, swizzle, l2_promotion, oob_fill)
        self, rank, elem = _begin(
            cls, view, _normalize_data_type(data_type), "TensorMapDescriptor._from_im2col"
        )
        if not 3 <= rank <= 5:
            raise ValueError(f"Im2col tensor rank must be between 3 and 5, got {rank}")
        spatial = rank - 2
        lower = _int_tuple("pixel_box_lower_corner", pixel_box_lower_corner)
        upper = _int_tuple("pixel_box_upper_corner", pixel_box_upper_corner)
        if len(lower) != spatial:
            raise ValueError(
                f"pixel_box_lower_corner must have {spatial} elements (rank - 2), got {len(lower)}"
            )
        if len(upper) != spatial:
            raise ValueError(
                f"pixel_box_upper_corner must have {spatial} elements (rank - 2), got {len(upper)}"
            )
        estrides = _element_strides(element_strides, rank)
        head = _encode_head(self, rank, *_byte_layout(view, elem))
        status = lib.cuTensorMapEncodeIm2col(
            *head,
            ffi.new("int[]", list(reversed(lower))),
            ffi.new("int[]", list(reversed(upper))),
            channels_per_pixel,
            pixels_per_column,
            ffi.new("cuuint32_t[]", list(reversed(estrides))),
            interleave,
            swizzle,
            l2_promotion,
            oob_fill,
        )
        check(status, "cuTensorMapEncodeIm2col")
        return _finish(self, "im2col", swizzle)

    @classmethod
    def _from_im2col_wide(
        cls: type[_T],
        view: Any,
        pixel_box_lower_corner_width: int,
        pixel_box_upper_corner_width: int,
        channels_per_pixel: int,
        pixels_per_column: int,
        *,
        element_strides: Any = None,
        data_type: Any = None,
        interleave: TensorMapInterleave = TensorMapInterleave.NONE,
        mode: TensorMapIm2ColWideMode = TensorMapIm2ColWideMode.W,
        swizzle: TensorMapSwizzle = TensorMapSwizzle.SWIZZLE_128B,
        l2_promotion: TensorMapL2Promotion = TensorMapL2Promotion.NONE,
        oob_fill: TensorMapOOBFill = TensorMapOOBFill.NONE,
    ) -> _T:
        """Encode an im2col-wide tensor map (rank 3 to 5; compute capability 10.0+).

        Loads run along the W dimension only: the corners are single offsets.

        Raises
        ------
        ValueError
            For a rank outside 3..5, or the view problems of :meth:`_from_tiled`.
        CUDAError
            If the driver lacks ``cuTensorMapEncodeIm2colWide`` (CUDA < 12.8)
            or rejects the descriptor.
        """
        _check_enums(interleave, swizzle, l2_promotion, oob_fill)
        mode = _require_enum("mode", mode, TensorMapIm2ColWideMode)
        self, rank, elem = _begin(
            cls, view, _normalize_data_type(data_type), "TensorMapDescriptor._from_im2col_wide"
        )
        if not 3 <= rank <= 5:
            raise ValueError(f"Im2col-wide tensor rank must be between 3 and 5, got {rank}")
        estrides = _element_strides(element_strides, rank)
        head = _encode_head(self, rank, *_byte_layout(view, elem))
        status = lib.cuTensorMapEncodeIm2colWide(
            *head,
            pixel_box_lower_corner_width,
            pixel_box_upper_corner_width,
            channels_per_pixel,
            pixels_per_column,
            ffi.new("cuuint32_t[]", list(reversed(estrides))),
            interleave,
            mode,
            swizzle,
            l2_promotion,
            oob_fill,
        )
        check(status, "cuTensorMapEncodeIm2colWide")
        return _finish(self, "im2col_wide", swizzle)

    def replace_address(self, tensor: Any) -> None:
        """Point the tensor map at ``tensor``'s memory (same layout assumed).

        Parameters
        ----------
        tensor : StridedMemoryView or object with DLPack / ``__cuda_array_interface__``
            Device-accessible memory, 16-byte aligned, on the descriptor's
            device.  The descriptor keeps it alive (and lets the old one go).

        Raises
        ------
        ValueError
            For memory the device cannot access, a misaligned pointer or a
            tensor on another device.
        RuntimeError
            If the current context is not the one the descriptor was made in.
        """
        ctx = _current_context_address()
        if ctx != self._context:
            raise RuntimeError("TensorMapDescriptor was created in a different CUDA context")
        view = tensor if isinstance(tensor, _slots.strided_memory_view()) else _view_of(tensor)
        _check_view(view)
        _require_view_device(view, self._device_id, "replace_address")
        status = lib.cuTensorMapReplaceAddress(self._map, ffi.cast("void *", view.ptr))
        check(status, "cuTensorMapReplaceAddress")
        self._karg = bytes(ffi.buffer(self._map, _MAP_SIZE))
        self._source_ref = view.exporting_obj
        self._view_ref = view

    @property
    def device(self) -> Device:
        """Device: The device the descriptor was made for."""
        return _slots.device_class()(self._device_id)


setattr(TensorMapDescriptor, KERNEL_ARG_MARKER, (_MAP_SIZE, 64))


def tiled_from_view(view: Any, box_dim: Any, options: Any, **kwargs: Any) -> TensorMapDescriptor:
    """``StridedMemoryView.as_tensor_map``: None enumeration arguments mean NONE."""
    defaults = {
        "interleave": TensorMapInterleave.NONE,
        "swizzle": TensorMapSwizzle.NONE,
        "l2_promotion": TensorMapL2Promotion.NONE,
        "oob_fill": TensorMapOOBFill.NONE,
    }
    for name, default in defaults.items():
        if kwargs[name] is None:
            kwargs[name] = default
    return TensorMapDescriptor._from_tiled(view, box_dim, options=options, **kwargs)


# --------------------------------------------------------------------------
# Helpers.
# --------------------------------------------------------------------------
def _coerce_options(
    box_dim: Any,
    options: Any,
    element_strides: Any,
    data_type: Any,
    interleave: Any,
    swizzle: Any,
    l2: Any,
    oob: Any,
) -> TensorMapDescriptorOptions:
    if options is not None:
        if (
            box_dim is not None
            or element_strides is not None
            or data_type is not None
            or interleave != TensorMapInterleave.NONE
            or swizzle != TensorMapSwizzle.NONE
            or l2 != TensorMapL2Promotion.NONE
            or oob != TensorMapOOBFill.NONE
        ):
            raise TypeError(
                "Specify either options or the individual tensor map arguments, not both"
            )
        opts: TensorMapDescriptorOptions = check_or_create_options(
            TensorMapDescriptorOptions, options, "Tensor map descriptor options"
        )
        return opts
    if box_dim is None:
        raise TypeError("box_dim is required unless options is provided")
    return TensorMapDescriptorOptions(
        box_dim=box_dim,
        element_strides=element_strides,
        data_type=data_type,
        interleave=interleave,
        swizzle=swizzle,
        l2_promotion=l2,
        oob_fill=oob,
    )


def _begin(cls: type[_T], view: Any, data_type: Any, operation: str) -> tuple[_T, int, int]:
    """Check ``view``; return (descriptor, rank, element size).

    The layout (``_byte_layout``) is checked afterwards, as upstream does:
    the rank and box checks come first.
    """
    _check_view(view)
    c_ctx = _current_ctx()
    if c_ctx == ffi.NULL:
        raise RuntimeError("TensorMapDescriptor requires an active CUDA context")
    dev = ffi.new("CUdevice *")
    check(lib.cuCtxGetDevice(dev), "cuCtxGetDevice")
    device_id = int(dev[0])
    _require_view_device(view, device_id, operation)
    dtype = _resolve_data_type(view, data_type)
    elem = _DATA_TYPE_SIZE[dtype]
    rank = len(tuple(view.shape))
    self = object.__new__(cls)
    self._storage = ffi.new("char[]", _MAP_SIZE + _MAP_ALIGN)
    base = as_int_handle(self._storage)
    self._map = ffi.cast("CUtensorMap *", base + (-base) % _MAP_ALIGN)
    self._source_ref = view.exporting_obj
    self._view_ref = view
    self._context = as_int_handle(c_ctx)
    self._device_id = device_id
    self._repr_info = [None, rank, dtype, None]
    return self, rank, elem


def _finish(self: _T, method: str, swizzle: TensorMapSwizzle) -> _T:
    self._karg = bytes(ffi.buffer(self._map, _MAP_SIZE))
    self._repr_info[0] = method
    self._repr_info[3] = swizzle
    self._repr_info = tuple(self._repr_info)
    return self


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
