# SPDX-License-Identifier: Apache-2.0
"""How a :class:`~cuda_core.utils.StridedMemoryView` reads what it views.

One function per source: DLPack (``_view_as_dlpack``), the CUDA Array
Interface (``_view_as_cai``, which also orders the producer's stream before
the consumer's), NumPy's array interface (``_view_as_array_interface``) and a
:class:`~cuda_core.Buffer` with a layout (``_view_buffer``).  Each fills the
fields of a view that ``_reset`` initialized.
"""

from __future__ import annotations

import numpy

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, shown_as
from cuda_core._memory import _dlpack
from cuda_core._memory._buffer import Buffer
from cuda_core._utils import as_int_handle
from cuda_core.utils._memoryview_layout import (
    _dlpack_to_numpy_dtype,
    _StridedLayout,
    _typestr2dtype,
)

__all__ = []

_kDLCPU = int(_dlpack.DLDeviceType.kDLCPU)
_kDLCUDA = int(_dlpack.DLDeviceType.kDLCUDA)
_kDLCUDAHost = int(_dlpack.DLDeviceType.kDLCUDAHost)
_kDLCUDAManaged = int(_dlpack.DLDeviceType.kDLCUDAManaged)


@shown_as(BufferError)
class _NoProtocolError(BufferError, RuntimeError):
    """The object supports none of the data-exchange protocols."""


@shown_as(TypeError)
class _NoInterfaceError(TypeError, AttributeError):
    """The object lacks the protocol asked for (``cuda.core`` raises the AttributeError)."""


@shown_as(TypeError)
class _StreamPtrError(TypeError, ValueError):
    """A ``stream_ptr`` that is not a stream address (``cuda.core``: ValueError from int())."""


def _stream_ptr(stream_ptr):
    """Return ``stream_ptr`` (None, -1 or an address) as None or an int."""
    if stream_ptr is None or stream_ptr.__class__ is int:
        return stream_ptr
    if not isinstance(stream_ptr, (str, bytes, bytearray, float, complex)):
        try:
            return int(stream_ptr)
        except (TypeError, ValueError):
            pass
    raise _StreamPtrError(
        "stream_ptr must be an int (the consumer stream's address, or -1 for no "
        f"synchronization) or None, not {type(stream_ptr).__name__}"
    )


def _reset(view):
    view._ptr = 0
    view._device_id = -1
    view._is_device_accessible = False
    view._readonly = False
    view._exporting_obj = None
    view._layout_ = None
    view._dtype = None
    view._buffer = None
    view._metadata = None
    view._consumed = None


def _has_dlpack(obj):
    return hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")


def _view_as_dlpack(view, obj, stream_ptr):
    if not _has_dlpack(obj):
        raise _NoInterfaceError(
            f"{type(obj).__name__} does not support DLPack (it has no __dlpack__ and "
            "__dlpack_device__ methods); pass an array that does, or use "
            "StridedMemoryView.from_any_interface"
        )
    stream_ptr = _stream_ptr(stream_ptr)
    dl_type, device_id = obj.__dlpack_device__()
    is_device_accessible = False
    if dl_type == _kDLCPU:
        device_id = -1
        if stream_ptr is None:
            raise BufferError("stream=None is ambiguous with view()")
        if stream_ptr == -1:
            stream_ptr = None
    elif dl_type == _kDLCUDA:
        is_device_accessible = True
        if stream_ptr is None:
            raise BufferError("stream=None is ambiguous with view()")
    elif dl_type in (_kDLCUDAHost, _kDLCUDAManaged):
        is_device_accessible = True
    else:
        raise BufferError(f"DLPack device type {dl_type} is not supported")
    stream = stream_ptr or None
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        capsule = obj.__dlpack__(stream=stream)
    consumed = _dlpack.take_capsule(capsule)
    tensor = consumed.tensor
    readonly = bool(consumed.flags & _dlpack.DLPACK_FLAG_BITMASK_READ_ONLY)
    ndim = int(tensor.ndim)
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = None
    if ndim and tensor.strides != ffi.NULL:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim))
    dt = tensor.dtype
    bits = int(dt.bits) * int(dt.lanes)
    if bits % 8:
        consumed.release()
        raise ValueError("dl_tensor.dtype.bits must be a multiple of 8")
    try:
        dtype = _dlpack_to_numpy_dtype(int(dt.code), int(dt.bits), int(dt.lanes))
    except Exception:
        consumed.release()
        raise
    view._consumed = consumed
    view._metadata = capsule
    view._ptr = as_int_handle(tensor.data) + int(tensor.byte_offset)
    view._device_id = device_id
    view._is_device_accessible = is_device_accessible
    view._readonly = readonly
    view._exporting_obj = obj
    view._layout_ = _StridedLayout(shape, strides, bits // 8)
    view._dtype = dtype


def _view_as_cai(view, obj, stream_ptr):
    if not hasattr(obj, "__cuda_array_interface__"):
        raise _NoInterfaceError(
            f"{type(obj).__name__} does not support the CUDA Array Interface (it has no "
            "__cuda_array_interface__); pass an array that does, or use "
            "StridedMemoryView.from_any_interface"
        )
    stream_ptr = _stream_ptr(stream_ptr)
    cai = obj.__cuda_array_interface__
    if cai["version"] < 3:
        raise BufferError("only CUDA Array Interface v3 or above is supported")
    if cai.get("mask") is not None:
        raise BufferError("mask is not supported")
    if stream_ptr is None:
        raise BufferError("stream=None is ambiguous with view()")
    ptr, readonly = cai["data"]
    ptr = int(ptr)
    dtype = _typestr2dtype(cai["typestr"])
    strides = cai.get("strides")
    if strides is not None:
        strides = tuple(s // dtype.itemsize for s in strides)
    layout = _StridedLayout(cai["shape"], strides, dtype.itemsize)
    out = ffi.new("int *")
    if ptr:
        check(
            lib.cuPointerGetAttribute(out, lib.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr),
            "cuPointerGetAttribute(DEVICE_ORDINAL)",
        )
    else:
        check(lib.cuCtxGetDevice(out), "cuCtxGetDevice")
    if stream_ptr != -1:
        producer = cai.get("stream")
        if producer is not None:
            producer = int(producer)
            if producer <= 0:
                raise BufferError(f"invalid producer stream {producer} in __cuda_array_interface__")
            if producer != stream_ptr:
                _order_streams(producer, stream_ptr)
    view._metadata = cai
    view._ptr = ptr
    view._readonly = bool(readonly)
    view._device_id = int(out[0])
    view._is_device_accessible = True
    view._exporting_obj = obj
    view._layout_ = layout
    view._dtype = dtype


def _order_streams(producer, consumer):
    """Make ``consumer`` wait for the work queued so far on ``producer``."""
    c_event = ffi.new("CUevent *")
    check(lib.cuEventCreate(c_event, lib.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        check(lib.cuEventRecord(c_event[0], ffi.cast("CUstream", producer)), "cuEventRecord")
        check(
            lib.cuStreamWaitEvent(ffi.cast("CUstream", consumer), c_event[0], 0),
            "cuStreamWaitEvent",
        )
    finally:
        check(lib.cuEventDestroy(c_event[0]), "cuEventDestroy")


def _view_as_array_interface(view, obj):
    data = obj.__array_interface__
    if data["version"] < 3:
        raise BufferError("only NumPy Array Interface v3 or above is supported")
    if data.get("mask") is not None:
        raise BufferError("mask is not supported")
    if data.get("data") is None or not isinstance(data["data"], tuple):
        raise BufferError("__array_interface__ without a (pointer, readonly) data tuple")
    ptr, readonly = data["data"]
    dtype = _typestr2dtype(data["typestr"])
    strides = data.get("strides")
    if strides is not None:
        strides = tuple(s // dtype.itemsize for s in strides)
    view._metadata = data
    view._ptr = int(ptr) + int(data.get("offset", 0) or 0)
    view._readonly = bool(readonly)
    view._device_id = -1
    view._is_device_accessible = False
    view._exporting_obj = obj
    view._layout_ = _StridedLayout(data["shape"], strides, dtype.itemsize)
    view._dtype = dtype


def _view_buffer(view, buffer, layout, dtype, is_readonly):
    if not isinstance(buffer, Buffer):
        raise TypeError(f"buffer must be a Buffer, not {type(buffer).__name__}")
    if dtype is not None:
        dtype = numpy.dtype(dtype)
        if dtype.itemsize != layout.itemsize:
            raise ValueError(
                f"The dtype's itemsize ({dtype.itemsize}) does not match the layout's "
                f"itemsize ({layout.itemsize})."
            )
    required = layout.required_size_in_bytes()
    if buffer.memory_resource is not None and buffer.size < required:
        raise ValueError(
            f"Buffer size is too small for the layout. Expected at least {required} bytes, "
            f"got {buffer.size} bytes."
        )
    view._ptr = buffer.handle
    view._device_id = buffer.device_id
    view._is_device_accessible = buffer.is_device_accessible
    view._readonly = is_readonly
    view._exporting_obj = view._buffer = buffer
    view._layout_ = layout
    view._dtype = dtype
