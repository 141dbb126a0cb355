# SPDX-License-Identifier: Apache-2.0
"""Views of strided arrays from other libraries: :class:`StridedMemoryView`.

A view is made from any object that speaks DLPack (up to v1.0), the CUDA
Array Interface (v3) or NumPy's ``__array_interface__``, or from a
:class:`~cuda_core.Buffer` plus a shape.  It records the pointer, shape,
strides (in elements), dtype and device, and keeps the exporting object
alive.  DLPack capsules are consumed in C (see ``cuda_core._memory._dlpack``),
so this works on CPython and PyPy.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy

from cuda_core import _tensor_map
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _dlpack
from cuda_core._memory._buffer import Buffer
from cuda_core._utils import as_int_handle

__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory"]

try:  # bfloat16 and friends come from ml_dtypes when installed
    from ml_dtypes import bfloat16 as _bfloat16
except ImportError:  # pragma: no cover - depends on the environment
    _bfloat16 = None

_kDLCPU = int(_dlpack.DLDeviceType.kDLCPU)
_kDLCUDA = int(_dlpack.DLDeviceType.kDLCUDA)
_kDLCUDAHost = int(_dlpack.DLDeviceType.kDLCUDAHost)
_kDLCUDAManaged = int(_dlpack.DLDeviceType.kDLCUDAManaged)


class _NoProtocolError(BufferError, RuntimeError):
    """The object supports none of the data-exchange protocols."""


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


class StridedMemoryView:
    """Metadata of a strided, dense array or tensor (pointer, layout, dtype, device).

    Create views with :meth:`from_dlpack`, :meth:`from_cuda_array_interface`,
    :meth:`from_array_interface`, :meth:`from_any_interface` or
    :meth:`from_buffer`, or through :func:`args_viewable_as_strided_memory`.
    ``StridedMemoryView(obj, stream_ptr)`` still works but is deprecated.

    ``stream_ptr`` is the **consumer** stream.  For DLPack it is passed to
    ``obj.__dlpack__`` (``-1`` is passed as None); for the CUDA Array
    Interface, the consumer stream is made to wait for the producer stream
    (as ``cudaStreamWaitEvent`` would).  Pass ``-1`` to opt out of ordering.

    Attributes
    ----------
    ptr : int
        Address of the first element.
    device_id : int
        The device holding the data, -1 for CPU memory.
    is_device_accessible : bool
        Whether the GPU can access the data.
    readonly : bool
        Whether the data must not be modified.
    exporting_obj : object
        The viewed object (kept alive by the view); for :meth:`from_buffer`,
        the Buffer.
    """

    __slots__ = (
        "_ptr",
        "_device_id",
        "_is_device_accessible",
        "_readonly",
        "_exporting_obj",
        "_layout_",
        "_dtype",
        "_buffer",
        "_metadata",
        "_consumed",
        "__weakref__",
    )

    def __init__(self, obj=None, stream_ptr=None):
        _reset(self)
        clsname = type(self).__name__
        if obj is None:
            warnings.warn(
                f"Constructing an empty {clsname} is deprecated; use one of the classmethods "
                "from_dlpack, from_cuda_array_interface or from_any_interface",
                DeprecationWarning,
                stacklevel=2,
            )
            return
        if _has_dlpack(obj):
            warnings.warn(
                f"Constructing a {clsname} directly from a DLPack-supporting object is "
                "deprecated; use StridedMemoryView.from_dlpack or from_any_interface instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            _view_as_dlpack(self, obj, stream_ptr)
        elif hasattr(obj, "__cuda_array_interface__"):
            warnings.warn(
                f"Constructing a {clsname} directly from a CUDA-array-interface-supporting "
                "object is deprecated; use StridedMemoryView.from_cuda_array_interface or "
                "from_any_interface instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            _view_as_cai(self, obj, stream_ptr)
        else:
            raise _NoProtocolError(
                f"{type(obj).__name__} supports neither DLPack nor the CUDA Array Interface"
            )

    def __repr__(self):
        return (
            f"StridedMemoryView(ptr={self._ptr}, shape={self.shape}, strides={self.strides}, "
            f"itemsize={self._layout.itemsize}, dtype={_simple_repr(self.dtype)}, "
            f"device_id={self._device_id}, is_device_accessible={self._is_device_accessible}, "
            f"readonly={self._readonly}, exporting_obj={_simple_repr(self._exporting_obj)})"
        )

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export this view as a DLPack capsule (no synchronization; ``stream`` is ignored).

        Raises
        ------
        BufferError
            For ``copy=True``, a ``dl_device`` other than this view's own, a
            missing or unsupported dtype, or a malformed ``max_version``.
        """
        if copy is True:
            raise BufferError("Sorry, not supported: copy=True")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"Sorry, not supported: dl_device={tuple(dl_device)}")
        if max_version is None:
            versioned = False
        else:
            if not isinstance(max_version, tuple) or len(max_version) != 2:
                raise BufferError(f"Expected max_version tuple[int, int], got {max_version!r}")
            versioned = max_version >= (1, 0)
        dtype = self.dtype
        if dtype is None:
            raise BufferError(
                "Cannot export StridedMemoryView via DLPack without dtype information; "
                "create the view with dtype specified."
            )
        layout = self._layout
        data = 0 if layout.volume == 0 else self._ptr
        return _dlpack.capsule_from_tensor(
            self,
            data,
            self.__dlpack_device__(),
            _numpy_to_dlpack_dtype(dtype),
            layout.shape,
            layout.element_strides(),
            versioned=versioned,
            readonly=self._readonly,
        )

    def __dlpack_device__(self):
        """Return the DLPack ``(device_type, device_id)`` of the viewed memory."""
        consumed = self._consumed
        if consumed is not None:
            device_type = int(consumed.tensor.device.device_type)
            if device_type == _kDLCUDA:
                return (device_type, int(consumed.tensor.device.device_id))
            return (device_type, 0)
        if not self._is_device_accessible:
            return (_kDLCPU, 0)
        buf = self._get_buffer()
        if buf.is_closed:
            raise BufferError("the viewed Buffer is closed")
        return _dlpack.classify_dl_device(buf)

    @classmethod
    def from_dlpack(cls, obj, stream_ptr=None):
        """Create a view of an object implementing DLPack (``__dlpack__``).

        Parameters
        ----------
        obj : object
            The exporter.
        stream_ptr : int, optional
            The consumer stream (``-1``: no ordering).  Required for CPU and
            CUDA-device exporters (BufferError otherwise).
        """
        view = object.__new__(cls)
        _reset(view)
        _view_as_dlpack(view, obj, stream_ptr)
        return view

    @classmethod
    def from_cuda_array_interface(cls, obj, stream_ptr=None):
        """Create a view of an object implementing ``__cuda_array_interface__`` (v3).

        Parameters
        ----------
        obj : object
            The exporter.
        stream_ptr : int
            The consumer stream, made to wait for the producer's stream;
            ``-1`` opts out.  ``None`` raises BufferError (ambiguous).
        """
        view = object.__new__(cls)
        _reset(view)
        _view_as_cai(view, obj, stream_ptr)
        return view

    @classmethod
    def from_array_interface(cls, obj):
        """Create a view of a host object implementing ``__array_interface__`` (v3)."""
        view = object.__new__(cls)
        _reset(view)
        _view_as_array_interface(view, obj)
        return view

    @classmethod
    def from_any_interface(cls, obj, stream_ptr=None):
        """Create a view through DLPack, else the CUDA Array Interface.

        Objects with neither but with ``__array_interface__`` are viewed
        through it.

        Raises
        ------
        BufferError
            If ``obj`` supports none of these protocols.
        """
        if _has_dlpack(obj):
            return cls.from_dlpack(obj, stream_ptr)
        if hasattr(obj, "__cuda_array_interface__"):
            return cls.from_cuda_array_interface(obj, stream_ptr)
        if hasattr(obj, "__array_interface__"):
            return cls.from_array_interface(obj)
        raise _NoProtocolError(
            f"{type(obj).__name__} supports neither DLPack nor the CUDA Array Interface"
        )

    @classmethod
    def from_buffer(
        cls, buffer, shape, strides=None, *, itemsize=None, dtype=None, is_readonly=False
    ):
        """Create a view of a :class:`~cuda_core.Buffer` with the given layout.

        No synchronization is done: ordering the buffer's writes before the
        view's uses is the caller's job.

        Parameters
        ----------
        buffer : Buffer
            The memory.
        shape : tuple of int
            Extents.
        strides : tuple of int, optional
            Strides in elements (None: C-contiguous).
        itemsize : int, optional
            Bytes per element; needed when ``dtype`` is not given.
        dtype : numpy.dtype, optional
            Element type; its itemsize must match ``itemsize`` if both given.
        is_readonly : bool
            Mark the view read-only.

        Raises
        ------
        ValueError
            If neither ``itemsize`` nor ``dtype`` is given, they disagree, or
            the layout does not fit in an allocated buffer.
        TypeError
            If ``buffer`` is not a Buffer.
        """
        if itemsize is None and dtype is None:
            raise ValueError("Either itemsize or dtype must be specified")
        if dtype is not None:
            dtype = numpy.dtype(dtype)
            if itemsize is not None and itemsize != dtype.itemsize:
                raise ValueError(
                    f"itemsize ({itemsize}) does not match dtype.itemsize ({dtype.itemsize})"
                )
            itemsize = dtype.itemsize
        layout = _StridedLayout(shape, strides, itemsize)
        view = object.__new__(cls)
        _reset(view)
        _view_buffer(view, buffer, layout, dtype, bool(is_readonly))
        return view

    def view(self, layout=None, dtype=None):
        """Return a view of the same memory with another layout and/or dtype.

        Parameters
        ----------
        layout : object with ``shape``, ``strides`` and ``itemsize``, optional
            The new layout (strides in elements, None for C-contiguous).
        dtype : numpy.dtype, optional
            The new dtype; its itemsize must match the layout's.
        """
        if layout is None and dtype is None:
            return self
        if layout is None:
            layout = self._layout
        else:
            layout = _StridedLayout(layout.shape, layout.strides, layout.itemsize)
        if dtype is None:
            dtype = self.dtype
        view = object.__new__(type(self))
        _reset(view)
        _view_buffer(view, self._get_buffer(), layout, dtype, self._readonly)
        return view

    def as_tensor_map(
        self,
        box_dim=None,
        *,
        options=None,
        element_strides=None,
        data_type=None,
        interleave=None,
        swizzle=None,
        l2_promotion=None,
        oob_fill=None,
    ):
        """Return a tiled :class:`~cuda_core.TensorMapDescriptor` (TMA) of this view.

        Give ``box_dim`` and the other arguments one by one, or all of them
        bundled as ``options`` (a :class:`~cuda_core.TensorMapDescriptorOptions`
        or a dict); None enumerations mean NONE.  See
        :meth:`TensorMapDescriptor._from_tiled
        <cuda_core.TensorMapDescriptor._from_tiled>` for the checks made.
        """
        return _tensor_map.tiled_from_view(
            self,
            box_dim,
            options,
            element_strides=element_strides,
            data_type=data_type,
            interleave=interleave,
            swizzle=swizzle,
            l2_promotion=l2_promotion,
            oob_fill=oob_fill,
        )

    def copy_from(self, other, stream, allocator=None, blocking=None):
        """Copy ``other`` into this view (not supported yet)."""
        raise NotImplementedError("Sorry, not supported: copy_from")

    def copy_to(self, other, stream=None, allocator=None, blocking=None):
        """Copy this view into ``other`` (not supported yet)."""
        raise NotImplementedError("Sorry, not supported: copy_to")

    def _get_buffer(self):
        """The viewed Buffer, or a non-owning one that keeps the exporter alive."""
        if self._buffer is None:
            if isinstance(self._exporting_obj, Buffer):
                self._buffer = self._exporting_obj
            else:
                self._buffer = Buffer.from_handle(self._ptr, 0, owner=self._exporting_obj)
        return self._buffer

    @property
    def ptr(self):
        """int: Address of the first element."""
        return self._ptr

    @property
    def device_id(self):
        """int: Device holding the data, -1 for CPU memory."""
        return self._device_id

    @property
    def is_device_accessible(self):
        """bool: Whether the GPU can access the data."""
        return self._is_device_accessible

    @property
    def readonly(self):
        """bool: Whether the data must not be modified."""
        return self._readonly

    @property
    def exporting_obj(self):
        """object: The viewed object."""
        return self._exporting_obj

    @property
    def _layout(self):
        """_StridedLayout: Shape, strides and itemsize."""
        if self._layout_ is None:
            raise ValueError("Cannot infer layout from the exporting object")
        return self._layout_

    @property
    def size(self):
        """int: Number of elements."""
        return self._layout.volume

    @property
    def shape(self):
        """tuple of int: Extents."""
        return self._layout.shape

    @property
    def strides(self):
        """tuple of int or None: Strides in elements (not bytes); None if C-contiguous."""
        return self._layout.strides

    @property
    def dtype(self):
        """numpy.dtype or None: Element type (bfloat16 needs ``ml_dtypes``)."""
        return self._dtype


_tensor_map.VIEW_TYPE.append(StridedMemoryView)


class _StridedMemoryViewProxy:
    """Argument proxy made by :func:`args_viewable_as_strided_memory`."""

    __slots__ = ("obj", "has_dlpack")

    def __init__(self, obj):
        self.obj = obj
        if _has_dlpack(obj):
            self.has_dlpack = True
        elif hasattr(obj, "__cuda_array_interface__"):
            self.has_dlpack = False
        else:
            raise _NoProtocolError(
                f"{type(obj).__name__} supports neither DLPack nor the CUDA Array Interface"
            )

    def view(self, stream_ptr=None):
        """Return a :class:`StridedMemoryView` of the argument (consumer stream ``stream_ptr``)."""
        if self.has_dlpack:
            return StridedMemoryView.from_dlpack(self.obj, stream_ptr)
        return StridedMemoryView.from_cuda_array_interface(self.obj, stream_ptr)


def args_viewable_as_strided_memory(arg_indices):
    """Decorate a function so that some positional arguments become view proxies.

    Inside the function, each listed argument is a proxy whose
    ``view(stream_ptr)`` returns a :class:`StridedMemoryView`, whatever
    library the argument came from::

        @args_viewable_as_strided_memory((1,))
        def my_func(arg0, arg1, arg2, stream):
            view = arg1.view(stream.handle)

    Parameters
    ----------
    arg_indices : tuple of int
        Indices of the positional arguments to wrap.
    """
    if isinstance(arg_indices, int) or not all(isinstance(i, int) for i in arg_indices):
        raise TypeError(f"arg_indices must be a tuple of ints, got {arg_indices!r}")
    indices = tuple(arg_indices)

    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            args = list(args)
            for idx in indices:
                args[idx] = _StridedMemoryViewProxy(args[idx])
            return func(*args, **kwargs)

        return wrapped

    return decorator


# --------------------------------------------------------------------------
# Protocol implementations
# --------------------------------------------------------------------------
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
    stream = int(stream_ptr) if stream_ptr else None
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
    stream_ptr = int(stream_ptr)
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


@functools.cache
def _typestr2dtype(typestr):
    return numpy.dtype(typestr)


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


def _dlpack_to_numpy_dtype(code, bits, lanes):
    if lanes != 1:
        raise NotImplementedError(f"vector dtypes (lanes={lanes}) are not supported")
    if code == int(_dlpack.DLDataTypeCode.kDLBfloat):
        if _bfloat16 is None or bits != 16:
            raise NotImplementedError(
                "Support for bfloat16 within cuda_core requires `ml_dtypes` to be installed."
            )
        return numpy.dtype(_bfloat16)
    np_type = _DLPACK_DTYPES.get((code, bits))
    if np_type is None:
        raise TypeError(f"Unsupported DLPack dtype: code {code}, {bits} bits")
    return numpy.dtype(np_type)


def _numpy_to_dlpack_dtype(dtype):
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


def _simple_repr(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    if cls.__module__ in (None, "builtins"):
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"
