# SPDX-License-Identifier: Apache-2.0
"""The enumerations and data-type tables of TMA tensor maps, and their checks.

Re-exported by :mod:`cuda_core._tensor_map` (where NVIDIA's ``cuda.core``
defines them).
"""

from __future__ import annotations

import enum
import sys
from typing import Any, TypeVar

from cuda_core._cuda_ffi import lib

__all__ = [
    "TensorMapDataType",
    "TensorMapIm2ColWideMode",
    "TensorMapInterleave",
    "TensorMapL2Promotion",
    "TensorMapOOBFill",
    "TensorMapSwizzle",
]


class TensorMapDataType(enum.IntEnum):
    """Element type of a tensor map (``CUtensorMapDataType``)."""

    UINT8 = lib.CU_TENSOR_MAP_DATA_TYPE_UINT8
    UINT16 = lib.CU_TENSOR_MAP_DATA_TYPE_UINT16
    UINT32 = lib.CU_TENSOR_MAP_DATA_TYPE_UINT32
    INT32 = lib.CU_TENSOR_MAP_DATA_TYPE_INT32
    UINT64 = lib.CU_TENSOR_MAP_DATA_TYPE_UINT64
    INT64 = lib.CU_TENSOR_MAP_DATA_TYPE_INT64
    FLOAT16 = lib.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    FLOAT32 = lib.CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    FLOAT64 = lib.CU_TENSOR_MAP_DATA_TYPE_FLOAT64
    BFLOAT16 = lib.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    FLOAT32_FTZ = lib.CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ
    TFLOAT32 = lib.CU_TENSOR_MAP_DATA_TYPE_TFLOAT32
    TFLOAT32_FTZ = lib.CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ


class TensorMapInterleave(enum.IntEnum):
    """Interleaved layout of the tensor (``CUtensorMapInterleave``)."""

    NONE = lib.CU_TENSOR_MAP_INTERLEAVE_NONE
    INTERLEAVE_16B = lib.CU_TENSOR_MAP_INTERLEAVE_16B
    INTERLEAVE_32B = lib.CU_TENSOR_MAP_INTERLEAVE_32B


class TensorMapSwizzle(enum.IntEnum):
    """Shared-memory bank swizzling of the box (``CUtensorMapSwizzle``)."""

    NONE = lib.CU_TENSOR_MAP_SWIZZLE_NONE
    SWIZZLE_32B = lib.CU_TENSOR_MAP_SWIZZLE_32B
    SWIZZLE_64B = lib.CU_TENSOR_MAP_SWIZZLE_64B
    SWIZZLE_128B = lib.CU_TENSOR_MAP_SWIZZLE_128B


class TensorMapL2Promotion(enum.IntEnum):
    """L2 promotion of the loads (``CUtensorMapL2promotion``)."""

    NONE = lib.CU_TENSOR_MAP_L2_PROMOTION_NONE
    L2_64B = lib.CU_TENSOR_MAP_L2_PROMOTION_L2_64B
    L2_128B = lib.CU_TENSOR_MAP_L2_PROMOTION_L2_128B
    L2_256B = lib.CU_TENSOR_MAP_L2_PROMOTION_L2_256B


class TensorMapOOBFill(enum.IntEnum):
    """What out-of-bounds box elements read as (``CUtensorMapFloatOOBfill``).

    ``NONE`` fills zeros; ``NAN_REQUEST_ZERO_FMA`` fills NaN (float types).
    """

    NONE = lib.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    NAN_REQUEST_ZERO_FMA = lib.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA


class TensorMapIm2ColWideMode(enum.IntEnum):
    """Im2col-wide mode (``CUtensorMapIm2ColWideMode``, compute capability 10.0+)."""

    W = lib.CU_TENSOR_MAP_IM2COL_WIDE_MODE_W
    W128 = lib.CU_TENSOR_MAP_IM2COL_WIDE_MODE_W128


_E = TypeVar("_E", bound=enum.Enum)

_numpy_table: list[
    dict[Any, TensorMapDataType]
] = []  # [{numpy dtype: TensorMapDataType}] once built (numpy is imported then)


def _numpy_dtype_to_tma() -> dict[Any, TensorMapDataType]:
    """Return ``{numpy dtype: TensorMapDataType}`` (element size in _DATA_TYPE_SIZE).

    Built at the first call, so that importing cuda_core does not import numpy.
    """
    if _numpy_table:
        return _numpy_table[0]
    import numpy

    table: dict[Any, TensorMapDataType] = {
        numpy.dtype(numpy.uint8): TensorMapDataType.UINT8,
        numpy.dtype(numpy.uint16): TensorMapDataType.UINT16,
        numpy.dtype(numpy.uint32): TensorMapDataType.UINT32,
        numpy.dtype(numpy.int32): TensorMapDataType.INT32,
        numpy.dtype(numpy.uint64): TensorMapDataType.UINT64,
        numpy.dtype(numpy.int64): TensorMapDataType.INT64,
        numpy.dtype(numpy.float16): TensorMapDataType.FLOAT16,
        numpy.dtype(numpy.float32): TensorMapDataType.FLOAT32,
        numpy.dtype(numpy.float64): TensorMapDataType.FLOAT64,
    }
    try:  # bfloat16 comes from ml_dtypes when installed
        from ml_dtypes import bfloat16  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - depends on the environment
        pass
    else:  # pragma: no cover - depends on the environment
        table[numpy.dtype(bfloat16)] = TensorMapDataType.BFLOAT16
    _numpy_table.append(table)
    return table


#: Bytes of one element of each data type.
_DATA_TYPE_SIZE = {
    TensorMapDataType.UINT8: 1,
    TensorMapDataType.UINT16: 2,
    TensorMapDataType.UINT32: 4,
    TensorMapDataType.INT32: 4,
    TensorMapDataType.UINT64: 8,
    TensorMapDataType.INT64: 8,
    TensorMapDataType.FLOAT16: 2,
    TensorMapDataType.FLOAT32: 4,
    TensorMapDataType.FLOAT64: 8,
    TensorMapDataType.BFLOAT16: 2,
    TensorMapDataType.FLOAT32_FTZ: 4,
    TensorMapDataType.TFLOAT32: 4,
    TensorMapDataType.TFLOAT32_FTZ: 4,
}
_SWIZZLE_SPAN = {
    TensorMapSwizzle.SWIZZLE_32B: 32,
    TensorMapSwizzle.SWIZZLE_64B: 64,
    TensorMapSwizzle.SWIZZLE_128B: 128,
}


def _resolve_data_type(view: Any, data_type: Any) -> TensorMapDataType:
    if isinstance(data_type, TensorMapDataType):
        return data_type
    dtype = data_type if data_type is not None else view.dtype
    if dtype is None:
        raise ValueError(
            "Cannot infer TMA data type from the tensor; please specify data_type explicitly"
        )
    table = _numpy_dtype_to_tma()
    tma = table.get(dtype)
    if tma is None:
        supported = ", ".join(str(d) for d in table)
        raise ValueError(f"Unsupported dtype {dtype} for TMA; supported dtypes: {supported}")
    return tma


def _int_tuple(name: str, values: Any) -> tuple[int, ...]:
    if type(values) is tuple:  # the common case, a tuple of plain ints, as it is
        for value in values:
            if type(value) is not int:
                break
        else:
            return values
    try:
        values = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be a tuple of ints, got {type(values)}") from None
    numpy = sys.modules.get("numpy")  # a numpy integer exists only once numpy is imported
    ints: Any = int if numpy is None else (int, numpy.integer)
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, ints):
            raise TypeError(f"{name}[{i}] must be an int, got {type(value)}")
    return tuple(int(v) for v in values)


def _normalize_data_type(data_type: Any) -> Any:
    if data_type is None or isinstance(data_type, TensorMapDataType):
        return data_type
    import numpy

    try:
        return numpy.dtype(data_type)
    except TypeError:
        raise TypeError(
            "data_type must be a TensorMapDataType or a numpy/ml_dtypes dtype, "
            f"got {type(data_type)}"
        ) from None


def _require_enum(name: str, value: Any, enum_type: type[_E]) -> _E:
    if not isinstance(value, enum_type):
        raise TypeError(f"{name} must be a {enum_type.__name__}, got {type(value)}")
    return value


def _check_enums(
    interleave: object, swizzle: object, l2_promotion: object, oob_fill: object
) -> None:
    _require_enum("interleave", interleave, TensorMapInterleave)
    _require_enum("swizzle", swizzle, TensorMapSwizzle)
    _require_enum("l2_promotion", l2_promotion, TensorMapL2Promotion)
    _require_enum("oob_fill", oob_fill, TensorMapOOBFill)
