# SPDX-License-Identifier: Apache-2.0
"""Layouts and element types of strided memory views.

``_StridedLayout`` holds a view's shape, strides (in elements) and itemsize;
the functions translate dtypes between NumPy and DLPack.
"""

from __future__ import annotations

import functools
import math

from cuda_core._memory import _dlpack

__all__ = []

# numpy (and ml_dtypes) are imported at the first use, not with cuda_core.


@functools.cache
def _bfloat16():
    """Return ml_dtypes' ``bfloat16`` dtype, or None when ml_dtypes is not installed."""
    try:
        from ml_dtypes import bfloat16
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    import numpy  # pragma: no cover - depends on the environment

    return numpy.dtype(bfloat16)  # pragma: no cover - depends on the environment


class _StridedLayout:
    """Shape, strides (in elements; None for C-contiguous) and itemsize of a view."""

    __slots__ = ("shape", "strides", "itemsize")

    def __init__(self, shape, strides=None, itemsize=1):
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"shape must not have negative extents, got {shape}")
        if strides is not None:
            strides = tuple(int(s) for s in strides)
            if len(strides) != len(shape):
                raise ValueError(f"strides {strides} and shape {shape} must have the same length")
            if _is_c_contiguous(shape, strides):
                strides = None
        itemsize = int(itemsize)
        if itemsize <= 0:
            raise ValueError(f"itemsize must be positive, got {itemsize}")
        self.shape = shape
        self.strides = strides
        self.itemsize = itemsize

    def __repr__(self):
        return (
            f"_StridedLayout(shape={self.shape}, strides={self.strides}, itemsize={self.itemsize})"
        )

    @property
    def volume(self):
        """Number of elements."""
        return math.prod(self.shape)

    def element_strides(self):
        """Strides in elements, computed for C-contiguous layouts."""
        if self.strides is not None:
            return self.strides
        out = []
        acc = 1
        for extent in reversed(self.shape):
            out.append(acc)
            acc *= extent
        return tuple(reversed(out))

    def required_size_in_bytes(self):
        """Bytes spanned from the base pointer (ValueError for negative offsets)."""
        if self.volume == 0:
            return 0
        strides = self.element_strides()
        lo = sum((e - 1) * s for e, s in zip(self.shape, strides) if s < 0)
        if lo < 0:
            raise ValueError(
                "layouts with negative offsets from the base pointer are not supported"
            )
        hi = sum((e - 1) * s for e, s in zip(self.shape, strides) if s > 0)
        return (hi + 1) * self.itemsize


@functools.cache
def _typestr2dtype(typestr):
    import numpy

    return numpy.dtype(typestr)


# (DLPack type code, bits) -> numpy type name
_DLPACK_DTYPES = {
    (0, 8): "int8",
    (0, 16): "int16",
    (0, 32): "int32",
    (0, 64): "int64",
    (1, 8): "uint8",
    (1, 16): "uint16",
    (1, 32): "uint32",
    (1, 64): "uint64",
    (2, 16): "float16",
    (2, 32): "float32",
    (2, 64): "float64",
    (5, 64): "complex64",
    (5, 128): "complex128",
    (6, 8): "bool",
}


def _dlpack_to_numpy_dtype(code, bits, lanes):
    if lanes != 1:
        raise NotImplementedError(f"vector dtypes (lanes={lanes}) are not supported")
    if code == int(_dlpack.DLDataTypeCode.kDLBfloat):
        bfloat16 = _bfloat16()
        if bfloat16 is None or bits != 16:
            raise NotImplementedError(
                "Support for bfloat16 within cuda_core requires `ml_dtypes` to be installed."
            )
        return bfloat16
    np_type = _DLPACK_DTYPES.get((code, bits))
    if np_type is None:
        raise TypeError(f"Unsupported DLPack dtype: code {code}, {bits} bits")
    return _typestr2dtype(np_type)


def _numpy_to_dlpack_dtype(dtype):
    import numpy

    dtype = numpy.dtype(dtype)
    if dtype.fields is not None:
        raise BufferError("Structured dtypes are not supported for DLPack export")
    if dtype.byteorder not in ("=", "|") and not dtype.isnative:
        raise BufferError("Non-native-endian dtypes are not supported for DLPack export")
    bits = dtype.itemsize * 8
    kind = dtype.kind
    codes = _dlpack.DLDataTypeCode
    if kind == "b" and bits == 8:
        code = codes.kDLBool
    elif kind == "i" and bits in (8, 16, 32, 64):
        code = codes.kDLInt
    elif kind == "u" and bits in (8, 16, 32, 64):
        code = codes.kDLUInt
    elif kind == "f" and bits in (16, 32, 64):
        code = codes.kDLFloat
    elif kind == "c" and bits in (64, 128):
        code = codes.kDLComplex
    elif _bfloat16() is not None and dtype == _bfloat16():
        code = codes.kDLBfloat
    else:
        raise BufferError(f"Unsupported dtype for DLPack export: {dtype}")
    return (int(code), bits, 1)


def _is_c_contiguous(shape, strides):
    """Whether element ``strides`` are those of a C-contiguous array of ``shape``."""
    if 0 in shape:
        return True
    expected = 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True
