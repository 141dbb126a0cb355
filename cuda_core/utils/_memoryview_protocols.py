# SPDX-License-Identifier: Apache-2.0
"""How a :class:`~cuda_core.utils.StridedMemoryView` reads what it views.

One function per source: DLPack (``_view_as_dlpack``, and
``_view_from_capsule`` for the C exchange API), the CUDA Array Interface
(``_view_as_cai``, which also orders the producer's stream before the
consumer's), NumPy's array interface (``_view_as_array_interface``) and a
buffer with a layout (``_view_buffer``).  Each fills the fields of a view
that ``_reset`` initialized, checking its input in cuda.core's order with
cuda.core's exception types and messages.  A DLPack tensor's dtype and
layout are decoded on first use, as cuda.core does, so an unsupported dtype
raises when ``dtype`` is read, not when the view is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, shown_as
from cuda_core._memory import _dlpack
from cuda_core.utils._memoryview_layout import (
    _as_index,
    _dlpack_to_numpy_dtype,
    _interface_dtype,
    _require_tuple,
    _StridedLayout,
)

if TYPE_CHECKING:
    import numpy

    from cuda_core.utils._memoryview import StridedMemoryView

__all__: list[str] = []

_kDLCPU = int(_dlpack.DLDeviceType.kDLCPU)
_kDLCUDA = int(_dlpack.DLDeviceType.kDLCUDA)
_kDLCUDAHost = int(_dlpack.DLDeviceType.kDLCUDAHost)
_kDLCUDAManaged = int(_dlpack.DLDeviceType.kDLCUDAManaged)

# cuda.core's message, then what to pass instead.
_STREAM_NONE = (
    "stream=None is ambiguous with view(): pass stream_ptr=-1 for no stream "
    "synchronization, or stream_ptr=<the address of the stream that will use the data>"
)

#: The newest DLPack version this package reads and writes.
DLPACK_VERSION = (_dlpack.DLPACK_MAJOR_VERSION, _dlpack.DLPACK_MINOR_VERSION)


@shown_as(BufferError)
class _NoProtocolError(BufferError, RuntimeError):
    """The object supports none of the data-exchange protocols.

    A BufferError (as cuda.core raises today) that is also a RuntimeError
    (as it raised before), so either ``except`` clause catches it.
    """

    def __init__(
        self, message: str = "the input object does not support any data exchange protocol"
    ) -> None:
        super().__init__(message)


@shown_as(TypeError)
class _NoInterfaceError(TypeError, AttributeError):
    """The object lacks the protocol asked for (``cuda.core`` raises the AttributeError)."""


@shown_as(TypeError)
class _StreamPtrError(TypeError, ValueError):
    """A ``stream_ptr`` that is not a stream address (``cuda.core``: ValueError from int())."""


def _stream_ptr(stream_ptr: Any) -> int | None:
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


def _reset(view: StridedMemoryView) -> None:
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
    view._lazy_dtype = None
    view._dl_device = None
    view._tma_layout = None


def _has_dlpack(obj: object) -> bool:
    return hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")


def _check_has_protocol(obj: object) -> bool:
    """Return True for DLPack, False for the CUDA Array Interface; raise otherwise."""
    if _has_dlpack(obj):
        return True
    if hasattr(obj, "__cuda_array_interface__"):
        return False
    raise _NoProtocolError()


# --------------------------------------------------------------------------
# DLPack
# --------------------------------------------------------------------------
def _view_as_dlpack(view: StridedMemoryView, obj: Any, stream_ptr: Any) -> None:
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
            raise BufferError(_STREAM_NONE)
        if stream_ptr == -1:
            stream_ptr = None
    elif dl_type == _kDLCUDA:
        is_device_accessible = True
        if stream_ptr is None:
            raise BufferError(_STREAM_NONE)
    elif dl_type in (_kDLCUDAHost, _kDLCUDAManaged):
        is_device_accessible = True
    else:
        raise BufferError("device not supported")
    stream = stream_ptr or None
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=DLPACK_VERSION)
    except TypeError:
        capsule = obj.__dlpack__(stream=stream)
    _take_tensor(view, capsule, obj)
    view._device_id = int(device_id)
    view._is_device_accessible = is_device_accessible


def _view_from_capsule(view: StridedMemoryView, capsule: Any, exporting_obj: Any) -> None:
    """Fill ``view`` from an unconsumed DLPack capsule (the device comes from the tensor)."""
    tensor = _take_tensor(view, capsule, exporting_obj)
    device_type = int(tensor.device.device_type)
    if device_type == _kDLCPU:
        view._device_id = -1
        view._is_device_accessible = False
    elif device_type in (_kDLCUDA, _kDLCUDAHost, _kDLCUDAManaged):
        view._device_id = int(tensor.device.device_id)
        view._is_device_accessible = True
    else:
        view._consumed.release()  # the tensor is ours: give it back now, not at GC
        view._consumed = None
        raise BufferError("device not supported")


def _take_tensor(view: StridedMemoryView, capsule: Any, exporting_obj: Any) -> Any:
    consumed = _dlpack.take_capsule(capsule)
    tensor = consumed.tensor
    view._consumed = consumed
    view._metadata = capsule
    # DLPack's data pointer plus byte_offset is the first element (cuda.core
    # leaves byte_offset out; see docs/differences.md).
    view._ptr = as_int_handle(tensor.data) + int(tensor.byte_offset)
    view._readonly = bool(consumed.flags & _dlpack.DLPACK_FLAG_BITMASK_READ_ONLY)
    view._exporting_obj = exporting_obj
    return tensor


def _dlpack_layout(tensor: Any) -> _StridedLayout:
    """The layout of a DLPack tensor (strides exactly as given, None if NULL)."""
    dt = tensor.dtype
    nbits = int(dt.bits) * int(dt.lanes)
    if nbits % 8:
        raise ValueError("dl_tensor.dtype.bits must be a multiple of 8")
    ndim = int(tensor.ndim)
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = None
    if tensor.strides != ffi.NULL:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim))
    return _StridedLayout(shape, strides, nbits // 8)


def _dlpack_dtype(tensor: Any) -> numpy.dtype[Any]:
    dt = tensor.dtype
    return _dlpack_to_numpy_dtype(int(dt.code), int(dt.bits), int(dt.lanes))


# --------------------------------------------------------------------------
# CUDA Array Interface and NumPy's array interface
# --------------------------------------------------------------------------
def _interface_dict(data: Any) -> Any:
    if data is not None and not isinstance(data, dict):
        raise TypeError(f"Expected dict, got {type(data).__name__}")
    return data


def _interface_layout(data: Any) -> tuple[_StridedLayout, numpy.dtype[Any]]:
    """Validate and return ``(layout, dtype)`` of an interface dict, in cuda.core's order."""
    shape = data["shape"]
    strides = data.get("strides")
    dtype = _interface_dtype(data["typestr"])
    _require_tuple(shape)
    _require_tuple(strides, allow_none=True)
    return _StridedLayout(shape, strides, dtype.itemsize, divide_strides=True), dtype


def _view_as_cai(view: StridedMemoryView, obj: Any, stream_ptr: Any) -> None:
    if not hasattr(obj, "__cuda_array_interface__"):
        raise _NoInterfaceError(
            f"{type(obj).__name__} does not support the CUDA Array Interface (it has no "
            "__cuda_array_interface__); pass an array that does, or use "
            "StridedMemoryView.from_any_interface"
        )
    stream_ptr = _stream_ptr(stream_ptr)
    cai = _interface_dict(obj.__cuda_array_interface__)
    if cai["version"] < 3:
        raise BufferError("only CUDA Array Interface v3 or above is supported")
    if cai.get("mask") is not None:
        raise BufferError("mask is not supported")
    if stream_ptr is None:
        raise BufferError(_STREAM_NONE)
    layout, dtype = _interface_layout(cai)
    ptr, readonly = cai["data"]
    ptr = _as_index(ptr)
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
            producer = _as_index(producer)
            if producer <= 0:
                # cuda.core asserts this; an explicit raise survives ``python -O``.
                raise AssertionError(
                    f"the producer stream in __cuda_array_interface__ must be positive, "
                    f"got {producer}"
                )
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


def _order_streams(producer: int, consumer: int) -> None:
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


def _view_as_array_interface(view: StridedMemoryView, obj: Any) -> None:
    data = _interface_dict(obj.__array_interface__)
    if data["version"] < 3:
        raise BufferError("only NumPy Array Interface v3 or above is supported")
    if data.get("mask") is not None:
        raise BufferError("mask is not supported")
    layout, dtype = _interface_layout(data)
    ptr, readonly = data["data"]  # the "offset" key is ignored, as in cuda.core
    ptr = _as_index(ptr)
    out = ffi.new("int *")
    check(lib.cuCtxGetDevice(out), "cuCtxGetDevice")
    view._metadata = data
    view._ptr = ptr
    view._readonly = bool(readonly)
    view._device_id = int(out[0])
    view._is_device_accessible = False
    view._exporting_obj = obj
    view._layout_ = layout
    view._dtype = dtype


# --------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------
def _view_buffer(
    view: StridedMemoryView, buffer: Any, layout: _StridedLayout, dtype: Any, is_readonly: bool
) -> None:
    """View ``buffer`` (a Buffer or anything with its attributes) with ``layout``."""
    if dtype is not None:
        import numpy

        dtype = numpy.dtype(dtype)
        if dtype.itemsize != layout.itemsize:
            raise ValueError(
                f"The dtype's itemsize ({dtype.itemsize}) does not match the layout's "
                f"itemsize ({layout.itemsize})."
            )
    if buffer.memory_resource is not None:
        required = layout.required_size_in_bytes()
        if buffer.size < required:
            raise ValueError(
                "Buffer size is too small for the layout. Expected at least "
                f"{required} bytes, got {buffer.size} bytes."
            )
    view._ptr = int(buffer.handle)
    view._device_id = buffer.device_id
    view._is_device_accessible = buffer.is_device_accessible
    view._readonly = bool(is_readonly)
    view._exporting_obj = view._buffer = buffer
    view._layout_ = layout
    view._dtype = dtype
