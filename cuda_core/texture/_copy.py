# SPDX-License-Identifier: Apache-2.0
"""Whole-array copies between a CUDA array and linear memory (``cuMemcpy3DAsync``).

The linear side is a :class:`~cuda_core.Buffer` (any memory with a unified
address: device, pinned or managed), a
:class:`~cuda_core.utils.StridedMemoryView` (C-contiguous; device-accessible
or host) or a contiguous buffer-protocol object in host memory (``bytes``,
``bytearray``, ``array.array``, NumPy arrays, ...).  Rows are packed: the
linear pitch is the row's width in bytes.

A copy from pageable host memory returns once the data has been staged and
a copy into it once the data has arrived, so such objects need not outlive
the call; Buffers and device-accessible views must stay alive until the
stream has run the copy, as for :meth:`Buffer.copy_to <cuda_core.Buffer.copy_to>`.
"""

from __future__ import annotations

from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._buffer import Buffer
from cuda_core._stream import _as_stream

__all__ = []


def copy_array(
    c_array: Any, extent: tuple[int, int, int], other: Any, stream: Any, to_array: bool
) -> None:
    """Copy the whole array ``c_array`` (``CUarray`` cdata) from or to ``other``.

    ``extent`` is (width in bytes, height, depth); ``to_array`` gives the
    direction.  Returns nothing; raises TypeError/ValueError for an unusable
    ``other`` (before anything is queued) and CUDAError if the driver fails.
    """
    stream = _as_stream(stream)
    width, height, depth = extent
    required = width * height * depth
    p = ffi.new("CUDA_MEMCPY3D *")
    p.WidthInBytes = width
    p.Height = height
    p.Depth = depth
    keep = _fill_linear(p, other, to_array, width, height, required)
    if to_array:
        p.dstMemoryType = lib.CU_MEMORYTYPE_ARRAY
        p.dstArray = c_array
    else:
        p.srcMemoryType = lib.CU_MEMORYTYPE_ARRAY
        p.srcArray = c_array
    status = lib.cuMemcpy3DAsync(p, stream._handle)
    del keep  # a host view stays valid until the call returns
    check(status, "cuMemcpy3DAsync")


def _fill_linear(p: Any, obj: Any, is_src: bool, width: int, height: int, required: int) -> Any:
    """Fill the linear endpoint of ``p``; return what must live through the call."""
    kind = "source" if is_src else "destination"
    if isinstance(obj, Buffer):
        if obj.is_closed:
            raise RuntimeError(f"the {kind} Buffer is closed; it cannot be used after close()")
        if obj.size < required:
            raise ValueError(
                f"Buffer size ({obj.size} bytes) is smaller than the array extent "
                f"({required} bytes)"
            )
        _set_linear(p, is_src, lib.CU_MEMORYTYPE_UNIFIED, obj.handle, width, height)
        return None
    if _is_view(obj):
        return _fill_view(p, obj, is_src, width, height, required, kind)
    try:
        c_host = ffi.from_buffer("char[]", obj, require_writable=not is_src)
    except (TypeError, BufferError, ValueError):
        writable = "" if is_src else "writable "
        raise TypeError(
            f"the {kind} must be a Buffer, a StridedMemoryView or a contiguous "
            f"{writable}buffer-protocol object, got {type(obj).__name__}"
        ) from None
    if len(c_host) < required:
        raise ValueError(
            f"Host buffer has {len(c_host)} bytes, smaller than the array extent ({required} bytes)"
        )
    _set_host(p, is_src, c_host, width, height)
    return c_host


def _is_view(obj: object) -> bool:
    """Whether ``obj`` looks like a StridedMemoryView (duck-typed: utils sits above)."""
    return hasattr(obj, "is_device_accessible") and hasattr(obj, "exporting_obj")


def _fill_view(
    p: Any, view: Any, is_src: bool, width: int, height: int, required: int, kind: str
) -> Any:
    dtype = view.dtype
    if dtype is not None:
        itemsize = dtype.itemsize
    else:
        itemsize = getattr(getattr(view, "_layout", None), "itemsize", 1)
    shape = tuple(view.shape)
    strides = view.strides
    if strides is not None and not _is_c_contiguous(shape, tuple(strides)):
        raise ValueError(f"the {kind} view must be C-contiguous, got strides {tuple(strides)}")
    if not is_src and view.readonly:
        raise ValueError(f"the {kind} view is read-only")
    nbytes = view.size * itemsize
    if nbytes < required:
        raise ValueError(
            f"the {kind} view has {nbytes} bytes, smaller than the array extent ({required} bytes)"
        )
    if view.is_device_accessible:
        _set_linear(p, is_src, lib.CU_MEMORYTYPE_UNIFIED, view.ptr, width, height)
    else:
        _set_host(p, is_src, ffi.cast("void *", view.ptr), width, height)
    return view


def _is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether element ``strides`` lay ``shape`` out row-major without gaps."""
    step = 1
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != step:
            return False
        step *= dim
    return True


def _set_linear(
    p: Any, is_src: bool, memory_type: int, address: int, width: int, height: int
) -> None:
    if is_src:
        p.srcMemoryType = memory_type
        p.srcDevice = address
        p.srcPitch = width
        p.srcHeight = height
    else:
        p.dstMemoryType = memory_type
        p.dstDevice = address
        p.dstPitch = width
        p.dstHeight = height


def _set_host(p: Any, is_src: bool, c_host: Any, width: int, height: int) -> None:
    if is_src:
        p.srcMemoryType = lib.CU_MEMORYTYPE_HOST
        p.srcHost = c_host
        p.srcPitch = width
        p.srcHeight = height
    else:
        p.dstMemoryType = lib.CU_MEMORYTYPE_HOST
        p.dstHost = c_host
        p.dstPitch = width
        p.dstHeight = height
