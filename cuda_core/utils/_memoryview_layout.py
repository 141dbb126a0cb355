# SPDX-License-Identifier: Apache-2.0
"""Layouts and element types of strided memory views.

``_StridedLayout`` holds a view's shape, strides (in elements, exactly as
the producer gave them, or None for "C-contiguous, not stated") and
itemsize; the functions translate dtypes between NumPy and DLPack.  The
checks run in cuda.core's order and raise its exception types and
messages.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy

from cuda_core._memory import _dlpack

__all__: list[str] = []

#: Most dimensions a layout may have (as in cuda.core).
MAX_NDIM = 64

try:  # bfloat16 and friends come from ml_dtypes when installed
    from ml_dtypes import bfloat16 as _bfloat16  # type: ignore[import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - depends on the environment
    _bfloat16 = None


class _StridedLayout:
    """Shape, strides (in elements; None when not given) and itemsize of a view.

    Strides are kept as given, even when they describe a C-contiguous array:
    ``strides`` is None only when the producer gave none.  ``shape`` and
    ``strides`` must be tuples (or None for strides); call sites that take
    user input check the type first (see :func:`_require_tuple`).
    """

    __slots__ = ("shape", "strides", "itemsize", "_c_dims")

    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    itemsize: int
    _c_dims: Any  # int64_t[] cdata once built

    def __init__(
        self,
        shape: Sequence[Any],
        strides: Sequence[Any] | None,
        itemsize: Any,
        divide_strides: bool = False,
    ) -> None:
        ndim = len(shape)
        if ndim > MAX_NDIM:
            raise ValueError(
                f"Unsupported number of dimensions: {ndim}. Max supported ndim is {MAX_NDIM}"
            )
        shape = tuple(_as_index(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError("Extents must be non-negative")
        if strides is not None:
            if len(strides) != ndim:
                raise ValueError(
                    "Strides, if provided, must have the same length as shape. Shape has "
                    f"{ndim} dimensions, but strides has {len(strides)} elements."
                )
            strides = tuple(_as_index(s) for s in strides)
        itemsize = _as_index(itemsize)
        if itemsize <= 0:
            raise ValueError("itemsize must be positive")
        if strides is not None and divide_strides:
            if any(s % itemsize for s in strides):
                raise ValueError("strides must be divisible by itemsize")
            strides = tuple(s // itemsize for s in strides)
        self.shape = shape
        self.strides = strides
        self.itemsize = itemsize
        self._c_dims = None

    def __repr__(self) -> str:
        return (
            f"_StridedLayout(shape={self.shape}, strides={self.strides}, itemsize={self.itemsize})"
        )

    @property
    def volume(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    def element_strides(self) -> tuple[int, ...]:
        """Strides in elements; for a layout without strides, the C-contiguous ones.

        As in cuda.core, the computed strides of an empty layout are all 0.
        """
        if self.strides is not None:
            return self.strides
        out: list[int] = []
        acc = 1
        for extent in reversed(self.shape):
            out.append(acc)
            acc *= extent
        if acc == 0:
            return (0,) * len(self.shape)
        return tuple(reversed(out))

    def c_dims(self, ffi: Any) -> Any:
        """``int64_t[2 * ndim]`` holding the shape then the element strides (cached).

        DLPack's borrowed export points into it, so it lives as long as the
        layout (and hence the view) does.
        """
        if self._c_dims is None:
            self._c_dims = ffi.new(
                "int64_t[]", list(self.shape) + list(self.element_strides()) or [0]
            )
        return self._c_dims

    def required_size_in_bytes(self) -> int:
        """Bytes spanned from the base pointer (ValueError for negative offsets)."""
        if self.volume == 0:
            return 0
        strides = self.element_strides()
        lo = sum((e - 1) * s for e, s in zip(self.shape, strides) if s < 0)
        if lo < 0:
            raise ValueError(
                "Allocation size for a layout that maps elements to negative memory offsets "
                f"is ambiguous. The layout's min_offset is {lo}."
            )
        hi = sum((e - 1) * s for e, s in zip(self.shape, strides) if s > 0)
        return (hi + 1) * self.itemsize


def _require_tuple(value: Any, name: str | None = None, allow_none: bool = False) -> Any:
    """Raise cuda.core's TypeError unless ``value`` is a tuple (or None if allowed).

    ``name`` selects the message of a keyword parameter
    (``"Argument 'shape' has incorrect type ..."``); without it the message
    is that of an internal conversion (``"Expected tuple, got list"``).
    """
    if isinstance(value, tuple) or (allow_none and value is None):
        return value
    got = "NoneType" if value is None else type(value).__name__
    if name is None:
        raise TypeError(f"Expected tuple, got {got}")
    raise TypeError(f"Argument '{name}' has incorrect type (expected tuple, got {got})")


def _as_index(value: Any) -> int:
    """``value`` as a Python int (TypeError for floats and other non-integers)."""
    try:
        return int(value.__index__())
    except AttributeError:
        raise TypeError(
            f"'{type(value).__name__}' object cannot be interpreted as an integer"
        ) from None


@functools.cache
def _typestr2dtype(typestr: str) -> numpy.dtype[Any]:
    return numpy.dtype(typestr)


def _interface_dtype(typestr: object) -> numpy.dtype[Any]:
    """The dtype of an array-interface ``typestr`` (which must be a ``str``)."""
    if not isinstance(typestr, str):
        raise TypeError(
            f"Argument 'typestr' has incorrect type (expected str, got {type(typestr).__name__})"
        )
    return _typestr2dtype(typestr)


_DLPACK_DTYPES = {
    (0, 8): numpy.int8,
    (0, 16): numpy.int16,
    (0, 32): numpy.int32,
    (0, 64): numpy.int64,
    (1, 8): numpy.uint8,
    (1, 16): numpy.uint16,
    (1, 32): numpy.uint32,
    (1, 64): numpy.uint64,
    (2, 16): numpy.float16,
    (2, 32): numpy.float32,
    (2, 64): numpy.float64,
    (5, 64): numpy.complex64,
    (5, 128): numpy.complex128,
    (6, 8): numpy.bool_,
}
_DLPACK_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 5: "complex"}


def _dlpack_to_numpy_dtype(code: int, bits: int, lanes: int) -> numpy.dtype[Any]:
    """The NumPy dtype of a DLPack ``(code, bits, lanes)``, with cuda.core's errors."""
    if lanes != 1:
        raise NotImplementedError(f"vector dtypes (lanes={lanes}) is not supported")
    np_type = _DLPACK_DTYPES.get((code, bits))
    if np_type is not None:
        return numpy.dtype(np_type)
    if code in _DLPACK_CODE_NAMES:
        raise TypeError(f"{_DLPACK_CODE_NAMES[code]}{bits} is not supported.")
    if code == int(_dlpack.DLDataTypeCode.kDLBool):
        raise TypeError(f"{bits}-bit bool is not supported")
    if code == int(_dlpack.DLDataTypeCode.kDLBfloat):
        if _bfloat16 is None:
            raise NotImplementedError(
                "Support for bfloat16 within cuda-core requires `ml_dtypes` to be installed."
            )
        if bits != 16:
            raise TypeError(f"bfloat{bits} is not supported.")
        return numpy.dtype(_bfloat16)  # type: ignore[no-any-return, unused-ignore]  # ml_dtypes
    raise TypeError(f"Unsupported dtype. dtype code: {code}")


def _numpy_to_dlpack_dtype(dtype: Any) -> tuple[int, int, int]:
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
    elif _bfloat16 is not None and dtype == numpy.dtype(_bfloat16):
        code = codes.kDLBfloat
    else:
        raise BufferError(f"Unsupported dtype for DLPack export: {dtype}")
    return (int(code), bits, 1)
