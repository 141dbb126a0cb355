# SPDX-License-Identifier: Apache-2.0
"""Views of strided arrays from other libraries: :class:`StridedMemoryView`.

A view is made from any object that speaks DLPack (up to v1.0), the CUDA
Array Interface (v3) or NumPy's ``__array_interface__``, or from a
:class:`~cuda_core.Buffer` plus a shape.  It records the pointer, shape,
strides (in elements), dtype and device, and keeps the exporting object
alive.  DLPack capsules are consumed in C (see ``cuda_core._memory._dlpack``),
so this works on CPython and PyPy.  Reading each protocol is in
``_memoryview_protocols``; layouts and dtypes in ``_memoryview_layout``.
"""

from __future__ import annotations

import functools
import warnings

import numpy

import cuda_core._slots as _slots
import cuda_core._tensor_map as _tensor_map
from cuda_core._memory import _dlpack
from cuda_core._memory._buffer import Buffer
from cuda_core.utils._memoryview_layout import _numpy_to_dlpack_dtype, _StridedLayout
from cuda_core.utils._memoryview_protocols import (
    _has_dlpack,
    _kDLCPU,
    _kDLCUDA,
    _NoProtocolError,
    _reset,
    _view_as_array_interface,
    _view_as_cai,
    _view_as_dlpack,
    _view_buffer,
)

__all__ = ["StridedMemoryView", "args_viewable_as_strided_memory"]


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
        versioned = _dlpack.wants_versioned(max_version)
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

        Raises
        ------
        TypeError
            If ``obj`` does not implement DLPack (also an AttributeError, as
            in ``cuda.core``) or ``stream_ptr`` is not an int (also a
            ValueError).
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

        Raises
        ------
        TypeError
            If ``obj`` has no ``__cuda_array_interface__`` (also an
            AttributeError, as in ``cuda.core``) or ``stream_ptr`` is not an
            int (also a ValueError).
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


def _simple_repr(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    if cls.__module__ in (None, "builtins"):
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


_slots.StridedMemoryView = StridedMemoryView
