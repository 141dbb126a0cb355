# SPDX-License-Identifier: Apache-2.0
"""Element formats and shapes shared by arrays, mipmaps and textures.

The eight :class:`~cuda_core.typing.ArrayFormatType` members map one to one
onto the driver's ``CUarray_format`` values and onto NumPy dtypes (each
member's value is its dtype's name).
"""

from __future__ import annotations

from typing import Any

from cuda_core._coerce import index_or_none
from cuda_core._cuda_ffi import lib
from cuda_core.typing import ArrayFormatType

__all__ = []

#: ArrayFormatType -> CUarray_format.
FORMAT_TO_CU: dict[ArrayFormatType, int] = {
    ArrayFormatType.UINT8: lib.CU_AD_FORMAT_UNSIGNED_INT8,
    ArrayFormatType.UINT16: lib.CU_AD_FORMAT_UNSIGNED_INT16,
    ArrayFormatType.UINT32: lib.CU_AD_FORMAT_UNSIGNED_INT32,
    ArrayFormatType.INT8: lib.CU_AD_FORMAT_SIGNED_INT8,
    ArrayFormatType.INT16: lib.CU_AD_FORMAT_SIGNED_INT16,
    ArrayFormatType.INT32: lib.CU_AD_FORMAT_SIGNED_INT32,
    ArrayFormatType.FLOAT16: lib.CU_AD_FORMAT_HALF,
    ArrayFormatType.FLOAT32: lib.CU_AD_FORMAT_FLOAT,
}
#: CUarray_format -> ArrayFormatType.
CU_TO_FORMAT = {cu: fmt for fmt, cu in FORMAT_TO_CU.items()}
#: Bytes of one channel.
CHANNEL_BYTES = {
    ArrayFormatType.UINT8: 1,
    ArrayFormatType.INT8: 1,
    ArrayFormatType.UINT16: 2,
    ArrayFormatType.INT16: 2,
    ArrayFormatType.FLOAT16: 2,
    ArrayFormatType.UINT32: 4,
    ArrayFormatType.INT32: 4,
    ArrayFormatType.FLOAT32: 4,
}
#: Channels per element a CUDA array or texture may have.
CHANNEL_COUNTS = (1, 2, 4)

_VALID = ", ".join(repr(f.value) for f in ArrayFormatType)


def normalize_format(format: Any) -> ArrayFormatType:
    """Return ``format`` as an :class:`~cuda_core.typing.ArrayFormatType`.

    Accepts a member, its string value (``"float32"``) or anything
    ``numpy.dtype()`` accepts whose dtype is one of the eight formats.

    Raises
    ------
    ValueError
        For anything else.
    """
    if isinstance(format, ArrayFormatType):
        return format
    if isinstance(format, str):
        try:
            return ArrayFormatType(format)
        except ValueError:
            raise ValueError(
                f"format must be an ArrayFormatType or one of {{{_VALID}}}, got {format!r}"
            ) from None
    import numpy

    try:
        dtype = numpy.dtype(format)
    except TypeError:
        raise ValueError(
            f"format must be an ArrayFormatType, str, or NumPy dtype, got {format!r}"
        ) from None
    try:
        return ArrayFormatType(dtype.name)
    except ValueError:
        raise ValueError(
            f"NumPy dtype {dtype!r} has no ArrayFormatType equivalent; "
            f"supported formats: {{{_VALID}}}"
        ) from None


def check_format_channels(format: Any, num_channels: Any) -> ArrayFormatType:
    """Validate the (format, channel count) pair; return the normalized format."""
    fmt = normalize_format(format)
    if isinstance(num_channels, bool) or num_channels not in CHANNEL_COUNTS:
        raise ValueError(f"num_channels must be 1, 2, or 4, got {num_channels!r}")
    return fmt


def check_shape(shape: Any, low: int = 1) -> tuple[int, ...]:
    """Return ``shape`` as a tuple of ints of rank ``low``..3, every extent >= 1."""
    try:
        items = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be a tuple of ints, got {type(shape).__name__}") from None
    dims = []
    for i, dim in enumerate(items):
        value = index_or_none(dim)
        if value is None:
            raise TypeError(f"shape[{i}] must be an int, got {type(dim).__name__}")
        dims.append(value)
    if not low <= len(dims) <= 3:
        allowed = "1, 2, or 3" if low == 1 else "2 or 3"
        raise ValueError(f"shape rank must be {allowed}, got {len(dims)}")
    for i, dim in enumerate(dims):
        if dim < 1:
            raise ValueError(f"shape[{i}] must be >= 1, got {dim}")
    return tuple(dims)


def element_bytes(format: ArrayFormatType, num_channels: int) -> int:
    """Bytes of one element: channel bytes times channels."""
    return CHANNEL_BYTES[format] * num_channels


def descriptor_extent(shape: tuple[int, ...], layered: bool) -> tuple[int, ...]:
    """Return (Width, Height, Depth) of ``CUDA_ARRAY3D_DESCRIPTOR`` for ``shape``.

    Lower ranks use 0 for the missing extents.  Layered arrays: ``(width,
    layers)`` is a 1-D layered array (Height 0), ``(width, height, layers)``
    a 2-D one; the layer count goes in Depth.
    """
    if layered:
        if len(shape) == 2:
            return shape[0], 0, shape[1]
        return shape
    return tuple(shape) + (0,) * (3 - len(shape))


def shape_from_descriptor(width: int, height: int, depth: int, layered: bool) -> tuple[int, ...]:
    """Inverse of :func:`descriptor_extent`."""
    if layered:
        return (width, depth) if height == 0 else (width, height, depth)
    if depth:
        return (width, height, depth)
    if height:
        return (width, height)
    return (width,)


def copy_extent(shape: tuple[int, ...], layered: bool, elem_bytes: int) -> tuple[int, int, int]:
    """Return (width in bytes, height, depth) of a whole-array 3-D copy."""
    width, height, depth = descriptor_extent(shape, layered)
    return width * elem_bytes, height or 1, depth or 1
