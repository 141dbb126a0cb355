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
the driver's arrays are innermost-first, so they are reversed (in
``_tensor_map_layout``, with the checks on the view and the one-call tiled
encode).  The descriptor keeps the viewed object alive.

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
from cuda_core._arg_types import KERNEL_ARG_MARKER
from cuda_core._coerce import check_or_create_options
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._tensor_map_layout import (  # noqa: F401 - helpers re-exported for the tests
    _BOX_ARRAYS,
    _MAP_SIZE,
    _WORD_SPAN,
    _box_array,
    _box_row_error,
    _byte_layout,
    _check_view,
    _checked_box,
    _context_and_device,
    _current_context_address,
    _driver_layout,
    _element_strides,
    _exact_ints,
    _im2col,
    _kDLCUDA,
    _new_map,
    _packed_layout,
    _require_view_device,
    _scratch,
    _view_of,
)
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
    _resolve_data_type,
)

if TYPE_CHECKING:
    from cuda_core._device import Device

__all__ = ["TensorMapDescriptor", "TensorMapDescriptorOptions"]

_T = TypeVar("_T", bound="TensorMapDescriptor")

_TILED = "TensorMapDescriptor._from_tiled"
_unpack = ffi.unpack  # bound once: a method looked up per call costs a new bound method
#: The enumerations' NONE members: the defaults of ``_from_tiled``'s one-by-one
#: arguments, which ``_tiled_from`` reads as "not given" (beside ``options``).
_INTERLEAVE_NONE = TensorMapInterleave.NONE
_SWIZZLE_NONE = TensorMapSwizzle.NONE
_L2_NONE = TensorMapL2Promotion.NONE
_OOB_NONE = TensorMapOOBFill.NONE


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
        enums = (self.interleave, self.swizzle, self.l2_promotion, self.oob_fill)
        self.box_dim, self.element_strides, self.data_type, enums = _checked_options(
            self.box_dim, self.element_strides, self.data_type, enums
        )
        self.interleave, self.swizzle, self.l2_promotion, self.oob_fill = enums


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
        interleave: TensorMapInterleave = _INTERLEAVE_NONE,
        swizzle: TensorMapSwizzle = _SWIZZLE_NONE,
        l2_promotion: TensorMapL2Promotion = _L2_NONE,
        oob_fill: TensorMapOOBFill = _OOB_NONE,
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
        reuse = type(view) is _slots.strided_memory_view_if_loaded()
        enums = (interleave, swizzle, l2_promotion, oob_fill)
        return _tiled_from(cls, view, reuse, box_dim, options, element_strides, data_type, enums)

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
        pixels = (
            pixel_box_lower_corner,
            pixel_box_upper_corner,
            channels_per_pixel,
            pixels_per_column,
        )
        enums = (interleave, swizzle, l2_promotion, oob_fill)
        return _im2col(cls, "im2col", view, pixels, element_strides, data_type, enums)

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
        pixels = (
            pixel_box_lower_corner_width,
            pixel_box_upper_corner_width,
            channels_per_pixel,
            pixels_per_column,
        )
        enums = (interleave, mode, swizzle, l2_promotion, oob_fill)
        return _im2col(cls, "im2col_wide", view, pixels, element_strides, data_type, enums)

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
        if self._map is None:  # a tiled map is encoded straight into _karg
            _new_map(self)
            ffi.memmove(self._map, self._karg, _MAP_SIZE)
        status = lib.cuTensorMapReplaceAddress(self._map, ffi.cast("void *", view.ptr))
        check(status, "cuTensorMapReplaceAddress")
        self._karg = bytes(ffi.buffer(self._map, _MAP_SIZE))
        self._source_ref = view.exporting_obj
        self._view_ref = view

    @property
    def device(self) -> Device:
        """Device: The device the descriptor was made for."""
        return _slots.device_class()(self._device_id)


# ``launch`` passes ``_karg`` (bytes) by value, with this (size, alignment).
setattr(TensorMapDescriptor, KERNEL_ARG_MARKER, (_MAP_SIZE, 64))


def tiled_from_view(
    view: Any, reuse: bool, args: tuple[Any, Any, Any, Any], enums: tuple[Any, Any, Any, Any]
) -> TensorMapDescriptor:
    """``StridedMemoryView.as_tensor_map``: None enumerations mean NONE.

    ``args``: ``(box_dim, options, element_strides, data_type)``; ``enums``:
    ``(interleave, swizzle, l2_promotion, oob_fill)``.  ``reuse``: ``view``
    is a plain StridedMemoryView, whose driver-order layout may be kept on
    it (its ``_tma_layout`` slot) for the next call.
    """
    interleave, swizzle, l2, oob = enums
    enums = (
        _INTERLEAVE_NONE if interleave is None else interleave,
        _SWIZZLE_NONE if swizzle is None else swizzle,
        _L2_NONE if l2 is None else l2,
        _OOB_NONE if oob is None else oob,
    )
    box_dim, options, element_strides, data_type = args
    return _tiled_from(
        TensorMapDescriptor, view, reuse, box_dim, options, element_strides, data_type, enums
    )


# --------------------------------------------------------------------------
# Helpers.
# --------------------------------------------------------------------------
def _checked_options(
    box_dim: Any, element_strides: Any, data_type: Any, enums: tuple[Any, Any, Any, Any]
) -> tuple[Any, Any, Any, tuple[Any, Any, Any, Any]]:
    """The checks and conversions of :class:`TensorMapDescriptorOptions`, in its field order.

    ``enums``: ``(interleave, swizzle, l2_promotion, oob_fill)``.
    """
    box = _int_tuple("box_dim", box_dim)
    if element_strides is not None:
        element_strides = _int_tuple("element_strides", element_strides)
    if data_type is not None:
        data_type = _normalize_data_type(data_type)
    interleave, swizzle, l2, oob = enums
    if (
        type(interleave) is not TensorMapInterleave
        or type(swizzle) is not TensorMapSwizzle
        or type(l2) is not TensorMapL2Promotion
        or type(oob) is not TensorMapOOBFill
    ):
        _check_enums(interleave, swizzle, l2, oob)
    return box, element_strides, data_type, enums


def _tiled_from(
    cls: type[_T],
    view: Any,
    reuse: bool,
    box_dim: Any,
    options: Any,
    element_strides: Any,
    data_type: Any,
    enums: tuple[Any, Any, Any, Any],
) -> _T:
    """Check the options (bundled in ``options``, or one by one), then :func:`_tiled`.

    A box and element strides checked here are plain-int tuples, which
    ``_tensor_map_layout`` may key its packed arrays with; bundled options
    may have been changed since they were checked.
    """
    if options is None:
        if box_dim is None:
            raise TypeError("box_dim is required unless options is provided")
        box, estrides, data_type, enums = _checked_options(
            box_dim, element_strides, data_type, enums
        )
        return _tiled(cls, view, reuse, box, estrides, data_type, enums)
    interleave, swizzle, l2, oob = enums
    if (
        box_dim is not None
        or element_strides is not None
        or data_type is not None
        or interleave != _INTERLEAVE_NONE
        or swizzle != _SWIZZLE_NONE
        or l2 != _L2_NONE
        or oob != _OOB_NONE
    ):
        raise TypeError("Specify either options or the individual tensor map arguments, not both")
    opts: TensorMapDescriptorOptions = check_or_create_options(
        TensorMapDescriptorOptions, options, "Tensor map descriptor options"
    )
    box, estrides = opts.box_dim, opts.element_strides
    enums = (opts.interleave, opts.swizzle, opts.l2_promotion, opts.oob_fill)
    exact = _exact_ints(box) and (estrides is None or _exact_ints(estrides))
    return _tiled(cls, view, reuse, box, estrides, opts.data_type, enums, exact)


def _tiled(
    cls: type[_T],
    view: Any,
    reuse_layout: bool,
    box: Any,
    element_strides: Any,
    data_type: Any,
    enums: tuple[Any, Any, Any, Any],
    reuse_box: bool = True,
) -> _T:
    """Check ``view`` and the checked options; encode a tiled map.

    A view whose layout is kept (and a box already seen) is encoded by one
    call into the extension that also reads the context: no check on the
    Python side can fail any more, except those :meth:`__dlpack_device__`
    makes.  Should anything fail, the long way below runs every check in
    its order and raises what fails first.
    """
    _check_view(view)
    status_out, map_out = _scratch()
    known = view._tma_layout if reuse_layout and data_type is None else None
    interleave, swizzle, l2, oob = enums
    if known is not None and reuse_box:
        dtype, elem, rank, layout = known
        packed = _BOX_ARRAYS.get(box if element_strides is None else (box, element_strides))
        if (
            packed is not None
            and len(box) == rank
            and _box_row_error(box, elem, interleave, swizzle) is None
        ):
            try:
                device_type, device_id = view.__dlpack_device__()
            except Exception:  # raised below, in its turn
                device_type = None
            if device_type is not None:
                expected = device_id if device_type == _kDLCUDA else -1
                context = lib.cc_tensor_map_encode_tiled_here(
                    status_out,
                    expected,
                    map_out,
                    dtype,
                    rank,
                    view.ptr,
                    layout,
                    packed,
                    interleave,
                    swizzle,
                    l2,
                    oob,
                )
                if context:
                    device_id = status_out[1]
                    return _tiled_result(cls, view, map_out, context, device_id, rank, dtype, enums)
    context, device_id = _context_and_device(status_out)
    _require_view_device(view, device_id, _TILED)
    if known is None:
        dtype = _resolve_data_type(view, data_type)
        elem = _DATA_TYPE_SIZE[dtype]
        rank = len(tuple(view.shape))
    else:
        dtype, elem, rank, layout = known
    if not 1 <= rank <= 5:
        raise ValueError(f"Tensor rank must be between 1 and 5, got {rank}")
    packed = _checked_box(box, element_strides, rank, reuse_box)
    if known is None:
        layout = _packed_layout(*_byte_layout(view, elem))
        if reuse_layout and data_type is None:
            view._tma_layout = (dtype, elem, rank, layout)
    problem = _box_row_error(box, elem, interleave, swizzle)
    if problem is not None:
        raise ValueError(problem)
    if packed is None:
        packed = _box_array(box, element_strides, rank, reuse_box)
    status = lib.cc_tensor_map_encode_tiled(
        map_out, dtype, rank, view.ptr, layout, packed, interleave, swizzle, l2, oob
    )
    if status:
        check(status, "cuTensorMapEncodeTiled")
    return _tiled_result(cls, view, map_out, context, device_id, rank, dtype, enums)


def _tiled_result(
    cls: type[_T],
    view: Any,
    map_out: Any,
    context: int,
    device_id: int,
    rank: int,
    dtype: Any,
    enums: tuple[Any, Any, Any, Any],
) -> _T:
    """The descriptor of a map encoded into ``map_out``."""
    if context < 0:
        context += _WORD_SPAN
    self = object.__new__(cls)
    self._karg = _unpack(map_out, _MAP_SIZE)
    self._storage = self._map = None
    self._source_ref = view.exporting_obj
    self._view_ref = view
    self._context = context
    self._device_id = device_id
    self._repr_info = ("tiled", rank, dtype, enums[1])
    return self
