# SPDX-License-Identifier: Apache-2.0
"""Argument conversion and driver queries shared by Buffer and the memory resources.

Addresses (``_as_address``), ``Buffer.fill`` (its values and the memset it
issues) and the driver's view of a pointer (``_query_memory_attrs``).
"""

from __future__ import annotations

import sys
from typing import Any

from cuda_core._coerce import as_address, as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, shown_as, status_in
from cuda_core._loader import init_driver

__all__: list[str] = []


def _as_address(ptr: Any, what: str = "ptr") -> int:
    """Return ``ptr`` as an int address in ``[0, 2**64)``.

    Accepts None (0), an int or any integer object with ``__index__`` (not a
    bool), a cffi pointer, and a cuda-bindings ``CUdeviceptr`` (see
    :func:`~cuda_core._coerce.driver_handle`).  Floats, strings and other
    objects that merely convert with ``int()`` are refused.
    """
    if ptr is None:
        return 0
    if ptr.__class__ is not int:
        if isinstance(ptr, ffi.CData):
            return as_int_handle(ptr)
    return as_address(ptr, what, "an int address or a pointer object")


@shown_as(OverflowError)
class _FillValueRangeError(OverflowError, ValueError):
    """An int fill value outside [0, 256): an OverflowError (as upstream) and a ValueError."""


def _parse_fill_value(value: Any) -> tuple[int, int]:
    """Return ``(bits, width)`` for :meth:`Buffer.fill`."""
    if isinstance(value, int):
        if not 0 <= value < 256:
            raise _FillValueRangeError(
                f"fill value {value} is out of range: an int value must be in [0, 256)"
            )
        return int(value), 1
    try:
        mv = memoryview(value)
    except TypeError:
        raise TypeError(
            "fill value must be an int in [0, 256) or an object supporting the buffer "
            f"protocol (1, 2 or 4 bytes), not {type(value).__name__}"
        ) from None
    raw = mv.tobytes()
    if len(raw) not in (1, 2, 4):
        raise ValueError(f"fill value must be 1, 2 or 4 bytes long, got {len(raw)} bytes")
    return int.from_bytes(raw, sys.byteorder), len(raw)


def _fill_async(c_ptr: int, size: int, value: Any, c_stream: Any) -> None:
    """Fill ``size`` bytes at ``c_ptr`` with ``value``'s pattern on ``c_stream`` (Buffer.fill)."""
    val, width = _parse_fill_value(value)
    if size % width:
        raise ValueError(f"buffer size ({size}) must be divisible by {width}")
    if not size:
        return
    if width == 1:
        check(lib.cuMemsetD8Async(c_ptr, val, size, c_stream))
    elif width == 2:
        check(lib.cuMemsetD16Async(c_ptr, val, size // 2, c_stream))
    else:
        check(lib.cuMemsetD32Async(c_ptr, val, size // 4, c_stream))


def _query_memory_attrs(c_ptr: Any) -> tuple[bool, bool, int, bool]:
    """Ask the driver what kind of memory ``c_ptr`` points to."""
    memory_type = ffi.new("unsigned int *")
    is_managed = ffi.new("int *")
    device_id = ffi.new("int *")
    attrs = ffi.new(
        "CUpointer_attribute[3]",
        [
            lib.CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            lib.CU_POINTER_ATTRIBUTE_IS_MANAGED,
            lib.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        ],
    )
    values = ffi.new("void *[3]", [memory_type, is_managed, device_id])
    status = lib.cuPointerGetAttributes(3, attrs, values, c_ptr)
    if status_in(status, (lib.CUDA_ERROR_NOT_INITIALIZED,)):
        init_driver()
        status = lib.cuPointerGetAttributes(3, attrs, values, c_ptr)
    check(status, "cuPointerGetAttributes")
    mt = memory_type[0]
    managed = bool(is_managed[0])
    if mt == 0:  # not known to CUDA: plain host memory
        return (False, True, -1, managed)
    if managed or mt == lib.CU_MEMORYTYPE_HOST:
        return (True, True, device_id[0], managed)
    if mt == lib.CU_MEMORYTYPE_DEVICE:
        return (True, False, device_id[0], managed)
    raise ValueError(f"Unsupported memory type: {mt}")
