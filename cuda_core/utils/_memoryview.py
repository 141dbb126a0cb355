# SPDX-License-Identifier: Apache-2.0
"""Views of strided arrays from other libraries: :class:`StridedMemoryView`.

A view is made from any object that speaks DLPack (up to v1.3), the CUDA
Array Interface (v3) or NumPy's ``__array_interface__``, from a PyTorch
tensor (read directly), or from a :class:`~cuda_core.Buffer` plus a shape.
It records the pointer, shape, strides (in elements, exactly as the
producer gave them), dtype and device, and keeps the exporting object
alive.  DLPack capsules are consumed in C (see ``cuda_core._memory._dlpack``),
so this works on CPython and PyPy.  Reading each protocol is in
``_memoryview_protocols`` (PyTorch in ``_memoryview_torch``); layouts and
dtypes in ``_memoryview_layout``; DLPack export and the C exchange API in
``_memoryview_exchange``.
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import cuda_core._slots as _slots
from cuda_core._memory import _dlpack
from cuda_core._memory._buffer import Buffer
from cuda_core._tensor_map import tiled_from_view
from cuda_core.utils._memoryview_exchange import export_capsule, install
from cuda_core.utils._memoryview_layout import _require_tuple, _StridedLayout
from cuda_core.utils._memoryview_protocols import (
    _check_has_protocol,
    _dlpack_dtype,
    _dlpack_layout,
    _kDLCPU,
    _kDLCUDA,
    _reset,
    _view_as_array_interface,
    _view_as_cai,
    _view_as_dlpack,
    _view_buffer,
)
from cuda_core.utils._memoryview_torch import is_torch_tensor, view_torch_tensor

if TYPE_CHECKING:
    import numpy

    from cuda_core._tensor_map import TensorMapDescriptor

    _F = TypeVar("_F", bound=Callable[..., Any])

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

    While PyTorch 2.3 to 2.12 is imported, a ``torch.Tensor`` given to
    :meth:`from_dlpack`, :meth:`from_cuda_array_interface`,
    :meth:`from_array_interface` or :meth:`from_any_interface` is read
    directly (``data_ptr()``, ``shape``, ``stride()``, ``dtype``,
    ``device``): a CPU tensor needs no stream; for a CUDA tensor
    ``stream_ptr`` None raises BufferError, -1 skips ordering, and any
    other stream waits for PyTorch's current stream on that device.

    The class carries the DLPack C exchange API (DLPack 1.3) as
    ``__dlpack_c_exchange_api__`` (and ``__c_dlpack_exchange_api__``), a
    PyCapsule named ``"dlpack_exchange_api"``, on CPython and PyPy.

    Differences from cuda.core, kept on purpose (see ``docs/differences.md``):
    a DLPack tensor's ``byte_offset`` is added to :attr:`ptr`; a capsule
    that is not a DLPack tensor raises BufferError (not AssertionError).

    Attributes
    ----------
    ptr : int
        Address of the first element.
    device_id : int
        The device holding the data, -1 for CPU memory (for
        :meth:`from_array_interface`, the current device, as in cuda.core).
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
        "_lazy_dtype",
        "_dl_device",
        "_tma_layout",
        "__weakref__",
    )

    _ptr: int
    _device_id: int
    _is_device_accessible: bool
    _readonly: bool
    _exporting_obj: Any
    _layout_: _StridedLayout | None
    _dtype: numpy.dtype[Any] | None
    _buffer: Buffer | None
    _metadata: Any
    _consumed: Any  # the imported DLPack capsule's state, if any
    _lazy_dtype: Callable[[], numpy.dtype[Any]] | None
    _dl_device: tuple[int, int] | None  # the viewed Buffer's, once classified
    _tma_layout: Any  # kept by cuda_core._tensor_map for the next as_tensor_map

    def __init__(self, obj: Any = None, stream_ptr: int | None = None) -> None:
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
        if _check_has_protocol(obj):
            warnings.warn(
                f"Constructing a {clsname} directly from a DLPack-supporting object is "
                "deprecated; use StridedMemoryView.from_dlpack or from_any_interface instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            _view_as_dlpack(self, obj, stream_ptr)
        else:
            warnings.warn(
                f"Constructing a {clsname} directly from a CUDA-array-interface-supporting "
                "object is deprecated; use StridedMemoryView.from_cuda_array_interface or "
                "from_any_interface instead.",
                DeprecationWarning,
                stacklevel=2,
            )
            _view_as_cai(self, obj, stream_ptr)

    def __repr__(self) -> str:
        pad = " " * 18
        return (
            f"StridedMemoryView(ptr={self._ptr},\n"
            f"{pad}shape={self.shape},\n"
            f"{pad}strides={self.strides},\n"
            f"{pad}itemsize={self._layout.itemsize},\n"
            f"{pad}dtype={_simple_repr(self.dtype)},\n"
            f"{pad}device_id={self._device_id},\n"
            f"{pad}is_device_accessible={self._is_device_accessible},\n"
            f"{pad}readonly={self._readonly},\n"
            f"{pad}exporting_obj={_simple_repr(self._exporting_obj)})"
        )

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export this view as a DLPack capsule (no synchronization; ``stream`` is ignored).

        ``max_version`` None gives a legacy ``"dltensor"`` capsule; a tuple
        of at least ``(1, 0)`` gives a ``"dltensor_versioned"`` one of
        DLPack 1.3, read-only when the view is.

        Raises
        ------
        BufferError
            For any ``dl_device`` (even this view's own), ``copy=True``, a
            malformed ``max_version``, or a missing or unsupported dtype.
        """
        if dl_device is not None:
            raise BufferError("Sorry, not supported: dl_device other than None")
        if copy is True:
            raise BufferError("Sorry, not supported: copy=True")
        versioned = _dlpack.wants_versioned(max_version)
        return export_capsule(self, versioned)

    def __dlpack_device__(self) -> tuple[int, int]:
        """Return the DLPack ``(device_type, device_id)`` of the viewed memory.

        For a view made by :meth:`from_buffer`, the Buffer's own (managed
        memory is ``kDLCUDAManaged``, where cuda.core says ``kDLCUDAHost``).
        """
        consumed = self._consumed
        if consumed is not None:
            device_type = int(consumed.tensor.device.device_type)
            if device_type == _kDLCUDA:
                return (device_type, int(consumed.tensor.device.device_id))
            return (device_type, 0)
        if not self._is_device_accessible:
            return (_kDLCPU, 0)
        buf = self._buffer
        if buf is None:
            buf = self._get_buffer()
        if buf.is_closed:
            raise BufferError("the viewed Buffer is closed")
        device = self._dl_device
        if device is None:  # a Buffer's kind of memory never changes
            device = self._dl_device = _dlpack.classify_dl_device(buf)
        return device

    @classmethod
    def from_dlpack(cls, obj: Any, stream_ptr: int | None = None) -> StridedMemoryView:
        """Create a view of an object implementing DLPack (``__dlpack__``).

        The exporter is asked for DLPack 1.3 (``max_version=(1, 3)``), and
        again without ``max_version`` if it does not take that argument.

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
        if is_torch_tensor(obj):
            view_torch_tensor(view, obj, stream_ptr)
        else:
            _view_as_dlpack(view, obj, stream_ptr)
        return view

    @classmethod
    def from_cuda_array_interface(
        cls, obj: Any, stream_ptr: int | None = None
    ) -> StridedMemoryView:
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
        if is_torch_tensor(obj):
            view_torch_tensor(view, obj, stream_ptr)
        else:
            _view_as_cai(view, obj, stream_ptr)
        return view

    @classmethod
    def from_array_interface(cls, obj: Any) -> StridedMemoryView:
        """Create a view of a host object implementing ``__array_interface__`` (v3).

        As in cuda.core, the ``offset`` key is ignored and ``device_id`` is
        the current device (CUDAError when no context is current).
        """
        view = object.__new__(cls)
        _reset(view)
        if is_torch_tensor(obj):
            view_torch_tensor(view, obj, None)
        else:
            _view_as_array_interface(view, obj)
        return view

    @classmethod
    def from_any_interface(cls, obj: Any, stream_ptr: int | None = None) -> StridedMemoryView:
        """Create a view through DLPack, else the CUDA Array Interface.

        Raises
        ------
        BufferError
            If ``obj`` supports neither (``__array_interface__`` is not
            tried, as in cuda.core).
        """
        if _check_has_protocol(obj):
            return cls.from_dlpack(obj, stream_ptr)
        return cls.from_cuda_array_interface(obj, stream_ptr)

    @classmethod
    def from_buffer(
        cls,
        buffer: Buffer,
        shape: tuple[int, ...],
        strides: tuple[int, ...] | None = None,
        *,
        itemsize: int | None = None,
        dtype: Any = None,
        is_readonly: bool = False,
    ) -> StridedMemoryView:
        """Create a view of a :class:`~cuda_core.Buffer` with the given layout.

        No synchronization is done: ordering the buffer's writes before the
        view's uses is the caller's job.

        Parameters
        ----------
        buffer : Buffer
            The memory (any object with a Buffer's ``handle``, ``size``,
            ``memory_resource``, ``device_id`` and ``is_device_accessible``).
        shape : tuple of int
            Extents.
        strides : tuple of int, optional
            Strides in elements, kept as given (None: C-contiguous).
        itemsize : int, optional
            Bytes per element; needed when ``dtype`` is not given.
        dtype : numpy.dtype, optional
            Element type; its itemsize must match ``itemsize`` if both given.
            Anything ``numpy.dtype()`` accepts (cuda.core takes only a
            ``numpy.dtype`` instance).
        is_readonly : bool
            Mark the view read-only.

        Raises
        ------
        ValueError
            If neither ``itemsize`` nor ``dtype`` is given, they disagree, or
            the layout does not fit in an allocated buffer.
        TypeError
            If ``shape`` is not a tuple, or ``strides`` neither a tuple nor None.
        """
        if itemsize is None and dtype is None:
            raise ValueError("Either itemsize or dtype must be specified")
        if dtype is not None:
            import numpy

            dtype = numpy.dtype(dtype)
            if itemsize is not None and itemsize != dtype.itemsize:
                raise ValueError(
                    f"itemsize ({itemsize}) does not match dtype.itemsize ({dtype.itemsize})"
                )
            itemsize = dtype.itemsize
        _require_tuple(shape, "shape")
        _require_tuple(strides, "strides", allow_none=True)
        layout = _StridedLayout(shape, strides, itemsize)
        view = object.__new__(cls)
        _reset(view)
        _view_buffer(view, buffer, layout, dtype, is_readonly)
        return view

    def view(self, layout: Any = None, dtype: Any = None) -> StridedMemoryView:
        """Return a view of the same memory with another layout and/or dtype.

        Parameters
        ----------
        layout : object with ``shape``, ``strides`` and ``itemsize``, optional
            The new layout (strides in elements, None for C-contiguous); any
            such object, where cuda.core takes only its own layout class.
        dtype : numpy.dtype, optional
            The new dtype; its itemsize must match the layout's.
        """
        if layout is None and dtype is None:
            return self
        if layout is None:
            layout = self._layout
        elif not isinstance(layout, _StridedLayout):
            strides = layout.strides
            layout = _StridedLayout(
                tuple(layout.shape), None if strides is None else tuple(strides), layout.itemsize
            )
        if dtype is None:
            dtype = self.dtype
        view = object.__new__(type(self))
        _reset(view)
        _view_buffer(view, self._get_buffer(), layout, dtype, self._readonly)
        return view

    def as_tensor_map(
        self,
        box_dim: Any = None,
        *,
        options: Any = None,
        element_strides: Any = None,
        data_type: Any = None,
        interleave: Any = None,
        swizzle: Any = None,
        l2_promotion: Any = None,
        oob_fill: Any = None,
    ) -> TensorMapDescriptor:
        """Return a tiled :class:`~cuda_core.TensorMapDescriptor` (TMA) of this view.

        Give ``box_dim`` and the other arguments one by one, or all of them
        bundled as ``options`` (a :class:`~cuda_core.TensorMapDescriptorOptions`
        or a dict); None enumerations mean NONE.  See
        :meth:`TensorMapDescriptor._from_tiled
        <cuda_core.TensorMapDescriptor._from_tiled>` for the checks made.
        """
        args = (box_dim, options, element_strides, data_type)
        enums = (interleave, swizzle, l2_promotion, oob_fill)
        return tiled_from_view(self, type(self) is StridedMemoryView, args, enums)

    def copy_from(
        self, other: Any, stream: Any, allocator: Any = None, blocking: bool | None = None
    ) -> None:
        """Copy ``other`` into this view (not supported yet)."""
        raise NotImplementedError("Sorry, not supported: copy_from")

    def copy_to(
        self, other: Any, stream: Any = None, allocator: Any = None, blocking: bool | None = None
    ) -> None:
        """Copy this view into ``other`` (not supported yet)."""
        raise NotImplementedError("Sorry, not supported: copy_to")

    def _get_buffer(self) -> Buffer:
        """The viewed Buffer, or a non-owning one that keeps the exporter alive."""
        if self._buffer is None:
            if isinstance(self._exporting_obj, Buffer):
                self._buffer = self._exporting_obj
            else:
                self._buffer = Buffer.from_handle(self._ptr, 0, owner=self._exporting_obj)
        return self._buffer

    @property
    def ptr(self) -> int:
        """int: Address of the first element."""
        return self._ptr

    @property
    def device_id(self) -> int:
        """int: Device holding the data, -1 for CPU memory."""
        return self._device_id

    @property
    def is_device_accessible(self) -> bool:
        """bool: Whether the GPU can access the data."""
        return self._is_device_accessible

    @property
    def readonly(self) -> bool:
        """bool: Whether the data must not be modified."""
        return self._readonly

    @property
    def exporting_obj(self) -> Any:
        """object: The viewed object."""
        return self._exporting_obj

    @property
    def _layout(self) -> _StridedLayout:
        """_StridedLayout: Shape, strides and itemsize (read from DLPack on first use)."""
        if self._layout_ is None:
            if self._consumed is None:
                raise ValueError("Cannot infer layout from the exporting object")
            self._layout_ = _dlpack_layout(self._consumed.tensor)
        return self._layout_

    @property
    def size(self) -> int:
        """int: Number of elements."""
        return self._layout.volume

    @property
    def shape(self) -> tuple[int, ...]:
        """tuple of int: Extents."""
        return self._layout.shape

    @property
    def strides(self) -> tuple[int, ...] | None:
        """tuple of int or None: Strides in elements (not bytes), as the producer gave them.

        None only when the producer gave no strides (C-contiguous).
        """
        return self._layout.strides

    @property
    def dtype(self) -> numpy.dtype[Any] | None:
        """numpy.dtype or None: Element type (bfloat16 needs ``ml_dtypes``).

        For DLPack and PyTorch sources it is decoded on first access, so an
        unsupported element type raises here (TypeError or
        NotImplementedError), not when the view is made.  A DLPack bfloat
        of other than 16 bits raises TypeError (cuda.core calls it bfloat16).
        """
        if self._dtype is None:
            if self._consumed is not None:
                self._dtype = _dlpack_dtype(self._consumed.tensor)
            elif self._lazy_dtype is not None:
                self._dtype = self._lazy_dtype()
        return self._dtype


install(StridedMemoryView)


class _StridedMemoryViewProxy:
    """Argument proxy made by :func:`args_viewable_as_strided_memory`."""

    __slots__ = ("obj", "has_dlpack")

    obj: Any
    has_dlpack: bool

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.has_dlpack = _check_has_protocol(obj)

    def view(self, stream_ptr: int | None = None) -> StridedMemoryView:
        """Return a :class:`StridedMemoryView` of the argument (consumer stream ``stream_ptr``)."""
        if self.has_dlpack:
            return StridedMemoryView.from_dlpack(self.obj, stream_ptr)
        return StridedMemoryView.from_cuda_array_interface(self.obj, stream_ptr)


def args_viewable_as_strided_memory(arg_indices: tuple[int, ...]) -> Callable[[_F], _F]:
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
        Indices of the positional arguments to wrap (read at each call, as
        in cuda.core; not checked here).
    """

    def decorator(func: _F) -> _F:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            args = list(args)  # type: ignore[assignment]  # a mutable copy
            for idx in arg_indices:
                args[idx] = _StridedMemoryViewProxy(args[idx])  # type: ignore[index]  # a list
            return func(*args, **kwargs)

        return wrapped  # type: ignore[return-value]  # same signature

    return decorator


def _simple_repr(obj: object) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    if cls.__module__ in (None, "builtins"):
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


_slots.StridedMemoryView = StridedMemoryView
