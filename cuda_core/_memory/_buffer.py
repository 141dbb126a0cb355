# SPDX-License-Identifier: Apache-2.0
"""Buffers: handles to allocated memory.

A :class:`Buffer` is created by a :class:`~cuda_core.MemoryResource` (or
wrapped around an existing pointer with :meth:`Buffer.from_handle`).  It
keeps its memory resource alive and frees the memory through it on
:meth:`Buffer.close`, on leaving a ``with`` block, or -- as a safety net --
when it is garbage collected (see ``_release``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuda_core._coerce import as_size as _as_size
from cuda_core._default_stream import default_stream as _default_stream
from cuda_core._lifetime import GUARD_HANDLES, ClosedFlag, open_class, require_open
from cuda_core._memory import _ipc
from cuda_core._memory._buffer_helpers import _as_address, _fill_async, _query_memory_attrs
from cuda_core._memory._copy_with_options import copy_one
from cuda_core._memory._dlpack import BufferExports
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._memory._release import (
    _buffer_finalizer,
    _close_open_buffer,
    _Extra,
    _InlinePool,
    _OwnedPoolRelease,
    _Release,
    guard_open_buffer,
    open_buffer_close,
)
from cuda_core._stream import _as_stream
from cuda_core._stream_release import bind_for_release as _bind

if TYPE_CHECKING:
    from typing import Callable, ClassVar, TypeVar

    from typing_extensions import Self

    from cuda_core._memory._copy_with_options import CopyOptions
    from cuda_core._memory._ipc import IPCBufferDescriptor
    from cuda_core._memory._owned_pool import _OwnedPool
    from cuda_core._memory._release import _SharedRelease
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

    _B = TypeVar("_B", bound="Buffer")

__all__ = ["Buffer"]


class Buffer(BufferExports, ClosedFlag):
    """A handle to allocated memory.

    Buffers are not constructed directly: a :class:`MemoryResource` returns
    them from :meth:`MemoryResource.allocate`, and :meth:`from_handle` wraps
    an existing pointer.  The memory is freed by :meth:`close` (or at the end
    of a ``with`` block); garbage collection frees it too, but only as a
    safety net.  Host-accessible buffers export their bytes through DLPack
    (``numpy.from_dlpack(buf)`` is zero-copy).

    Note
    ----
    Pickling an IPC-enabled buffer embeds its
    :class:`~cuda_core._memory._ipc.IPCBufferDescriptor`; unpickling imports
    the memory into the receiving process.  Never unpickle buffers from
    untrusted sources.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    # _release: what frees the memory.  None for views; _InlinePool for an
    # allocation from a pool the resource does not own (the common case),
    # freed with cuMemFreeAsync on _dstream (unset otherwise); else a
    # _Release.  close() frees explicitly (failures raise); the open class's
    # __del__ (_buffer_finalizer) is the garbage-collection safety net
    # (failures warn).
    # _extra: rarely used state (owner, IPC descriptor, pointer attributes).
    __slots__ = (
        "_ptr",
        "_size",
        "_mr",
        "_release",
        "_dstream",
        "_closed",
        "_extra",
        "_guard",  # an open Buffer's safety net on PyPy (see guard_open_buffer)
        "__weakref__",
    )
    _ptr: int
    _size: int
    _mr: MemoryResource | None
    _release: _Release | _SharedRelease | type[_InlinePool] | None
    _dstream: Stream
    _closed: bool
    _extra: _Extra | None
    _guard: Any  # ffi.gc cdata of an open Buffer, on PyPy only (see guard_open_buffer)
    _plain: ClassVar[type[Buffer]]  # on the open twin only (see open_class)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Buffer objects cannot be instantiated directly. Please use MemoryResource APIs "
            "(MemoryResource.allocate, Device.allocate or Buffer.from_handle)."
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Buffer):
            return NotImplemented
        return self._ptr == other._ptr and self._size == other._size

    def __hash__(self) -> int:
        return hash((self._ptr, self._size))

    def __repr__(self) -> str:
        mapped = " is_mapped=True" if self.is_mapped else ""
        return f"<Buffer ptr={self._ptr:#x} size={self._size}{mapped}>"

    def __reduce__(
        self,
    ) -> tuple[
        Callable[[type[Buffer], MemoryResource, IPCBufferDescriptor], Buffer],
        tuple[type[Buffer], MemoryResource | None, IPCBufferDescriptor],
    ]:
        require_open(self._closed, "Buffer")
        return _ipc.reconstruct_buffer, (Buffer, self._mr, self.ipc_descriptor)

    @classmethod
    def _init(
        cls,
        ptr: object,
        size: int,
        mr: MemoryResource | None = None,
        owner: object | None = None,
        *,
        stream: Stream | GraphBuilder | None = None,
        ipc_descriptor: IPCBufferDescriptor | None = None,
    ) -> Self:
        """Create a Buffer of class ``cls`` around ``ptr`` (see :meth:`from_handle`)."""
        if mr is not None and owner is not None:
            raise ValueError("owner and memory resource cannot be both specified together")
        if stream is not None and mr is None:
            raise ValueError("stream requires a memory resource (mr)")
        if ptr is None:  # as in cuda.core, which converts ptr with int()
            raise TypeError("ptr must be an int address or a pointer object, not NoneType")
        c_ptr = _as_address(ptr)
        size = _as_size(size)
        s: Stream | None = None
        if mr is not None:
            if not isinstance(mr, MemoryResource):
                raise TypeError(f"mr must be a MemoryResource, not {type(mr).__name__}")
            if stream is not None:
                s = _bind(_as_stream(stream))
            elif mr.is_device_accessible:
                s = _bind(_default_stream())
        self = _new_open(cls, c_ptr, size, mr)
        if owner is not None or ipc_descriptor is not None:
            self._extra = _Extra(owner, ipc_descriptor)
        else:
            self._extra = None
        self._release = _Release(mr, c_ptr, size, s) if mr is not None and c_ptr else None
        return self

    @classmethod
    def _from_pool(
        cls,
        c_ptr: int,
        size: int,
        mr: MemoryResource,
        stream: Stream,
        ipc_descriptor: IPCBufferDescriptor | None = None,
        pool: _OwnedPool | None = None,
    ) -> Self:
        """Wrap a stream-ordered pool allocation, freed by cuMemFreeAsync.

        ``pool``: the ``_owned_pool._OwnedPool`` of an owned pool, which
        counts the allocation as outstanding until it is freed.
        """
        self = _new_open(cls, c_ptr, size, mr)
        self._extra = None if ipc_descriptor is None else _Extra(None, ipc_descriptor)
        if not c_ptr:
            self._release = None
            return self
        stream = _bind(stream)
        if pool is None:
            self._release = _InlinePool
            self._dstream = stream
        else:
            rel = self._release = _OwnedPoolRelease(mr, c_ptr, size, stream)
            rel.pool = pool
            pool.acquire()
        return self

    @classmethod
    def _from_shared(
        cls,
        shared: _SharedRelease,
        size: int,
        mr: MemoryResource,
        ipc_descriptor: IPCBufferDescriptor,
    ) -> Self:
        """Another Buffer over an imported mapping (see ``_ipc_imports``); its claim is counted."""
        self = _new_open(cls, shared.ptr, size, mr)
        self._extra = _Extra(None, ipc_descriptor)
        self._release = shared
        return self

    @staticmethod
    def from_handle(
        ptr: DevicePointerType,
        size: int,
        mr: MemoryResource | None = None,
        owner: object | None = None,
        *,
        stream: Stream | GraphBuilder | None = None,
    ) -> Buffer:
        """Create a :class:`Buffer` around an existing pointer.

        Parameters
        ----------
        ptr : int
            The address: an ``int`` (or an integer object with ``__index__``,
            such as a NumPy integer), a cuda-bindings ``CUdeviceptr``, or a
            cffi pointer.
        size : int
            Size of the memory in bytes.
        mr : MemoryResource, optional
            The resource that owns the memory: :meth:`MemoryResource.deallocate`
            is called when the buffer is closed or garbage collected.
        owner : object, optional
            An object that owns the memory; it is kept alive as long as the
            buffer is, and nothing is freed.  Cannot be combined with ``mr``.
        stream : Stream or GraphBuilder, optional
            Keyword-only; the stream that orders the deallocation (needs
            ``mr``).  Defaults to the default stream for device-accessible
            resources.

        Returns
        -------
        Buffer
            With neither ``mr`` nor ``owner`` the buffer is a non-owning view:
            the memory is never freed through it.

        Raises
        ------
        TypeError
            If ``ptr`` is not an integer address (None, floats and strings
            are refused) or ``mr`` is not a MemoryResource.
        ValueError
            If both ``mr`` and ``owner`` are given, if ``stream`` is given
            without ``mr``, or if ``ptr`` or ``size`` is negative or above
            ``2**64 - 1``.
        RuntimeError
            If ``stream`` is closed.
        """
        return Buffer._init(ptr, size, mr=mr, owner=owner, stream=stream)

    @classmethod
    def from_ipc_descriptor(
        cls,
        mr: MemoryResource,
        ipc_descriptor: IPCBufferDescriptor,
        *,
        stream: Stream | GraphBuilder,
    ) -> Buffer:
        """Import a buffer exported by another process.

        Parameters
        ----------
        mr : DeviceMemoryResource or PinnedMemoryResource
            The mapped, IPC-enabled resource matching the exporting one.
        ipc_descriptor : IPCBufferDescriptor
            The descriptor from :attr:`ipc_descriptor` in the exporting process.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the imported buffer's release.

        Note
        ----
        The descriptor comes from another process; import descriptors only
        from trusted peers.

        Importing the same descriptor again into the same resource returns a
        new Buffer over the same mapping (the same :attr:`handle`): the
        memory is mapped once and unmapped when the last of those Buffers is
        closed, in any order.
        """
        return _ipc.buffer_from_ipc_descriptor(cls, mr, ipc_descriptor, stream)

    def close(self, stream: Stream | GraphBuilder | None = None) -> None:
        """Free this buffer, asynchronously on ``stream``.

        Parameters
        ----------
        stream : Stream or GraphBuilder, optional
            The stream that orders the deallocation; by default the one
            recorded at allocation (see :meth:`set_deallocation_stream`).

        Idempotent.  Afterwards ``handle`` and ``size`` are 0 and the buffer
        cannot be used.  If graph nodes use the memory (memcpy or memset
        operands, as in ``cuda.core``), only this Buffer's claim goes: the
        memory is freed when the last graph definition, executable graph or
        launch in flight using it lets go.

        Raises
        ------
        CUDAError
            If the memory resource fails to free the memory (the buffer is
            closed regardless).
        TypeError
            If ``stream`` is not a stream.
        """
        if not self._closed:  # an open instance of a subclass's open twin
            _close_open_buffer(self, stream)

    def set_deallocation_stream(self, stream: Stream | GraphBuilder) -> None:
        """Change the stream that will order this buffer's deallocation.

        The buffer stays open.  No synchronization is done: the caller must
        order all uses of the buffer before the deallocation on ``stream``.

        Raises
        ------
        RuntimeError
            If the buffer is closed.
        TypeError
            If ``stream`` is not a stream.
        """
        require_open(self._closed, "Buffer")
        if stream is None:
            raise TypeError("stream must be a Stream or GraphBuilder, not None")
        s = _bind(_as_stream(stream))
        rel = self._release
        if rel is _InlinePool:
            self._dstream = s
        elif rel is not None:
            rel.stream = s

    def copy_to(
        self,
        dst: Buffer | None = None,
        *,
        stream: Stream | GraphBuilder,
        options: CopyOptions | None = None,
    ) -> Buffer:
        """Copy this buffer into ``dst`` asynchronously on ``stream``.

        Parameters
        ----------
        dst : Buffer, optional
            The destination; when omitted, one of the same size is allocated
            from this buffer's memory resource.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the copy.
        options : CopyOptions, optional
            Keyword-only transfer hints (source access order, location
            hints, overlap mode), honoured with a CUDA 13.2 or newer driver
            (``cuMemcpyWithAttributesAsync``).  Not accepted with
            :data:`~cuda_core.LEGACY_DEFAULT_STREAM` (use
            :data:`~cuda_core.PER_THREAD_DEFAULT_STREAM`) nor with a
            capturing stream.  With an older driver the copy is a plain
            ``cuMemcpyAsync``: ``STREAM`` and ``ANY`` hold and the hints
            are dropped, but ``DURING_API_CALL`` raises RuntimeError.

        Returns
        -------
        Buffer
            The destination buffer.

        Raises
        ------
        ValueError
            If the sizes differ, or ``dst`` is omitted and this buffer has no
            memory resource.
        TypeError
            If ``dst`` is not a Buffer, ``stream`` is not a stream,
            ``options`` is not a CopyOptions, or ``options`` comes with the
            legacy default stream or a capturing stream.
        RuntimeError
            If either buffer is closed, or for ``DURING_API_CALL`` with a
            driver older than CUDA 13.2.
        """
        require_open(self._closed, "Buffer")
        s = _as_stream(stream)
        size = self._size
        if dst is None:
            if self._mr is None:
                raise ValueError(
                    "a destination buffer must be provided (this buffer does not have a "
                    "memory_resource)"
                )
            dst = self._mr.allocate(size, stream=s)
        elif not isinstance(dst, Buffer):
            raise TypeError(f"dst must be a Buffer, not {type(dst).__name__}")
        else:
            require_open(dst._closed, "destination Buffer")
        if dst._size != size:
            raise ValueError(
                f"buffer sizes mismatch between src and dst (sizes are: src={size}, "
                f"dst={dst._size})"
            )
        copy_one(dst._ptr, self._ptr, size, s, options, "copy_to")
        return dst

    def copy_from(
        self, src: Buffer, *, stream: Stream | GraphBuilder, options: CopyOptions | None = None
    ) -> None:
        """Copy ``src`` into this buffer asynchronously on ``stream``.

        Parameters
        ----------
        src : Buffer
            The source, of the same size as this buffer.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the copy.
        options : CopyOptions, optional
            Keyword-only transfer hints, with the driver requirements and
            stream restrictions described under :meth:`copy_to`.

        Raises
        ------
        ValueError
            If the sizes differ.
        TypeError
            If ``src`` is not a Buffer; for ``stream`` and ``options`` as
            :meth:`copy_to`.
        RuntimeError
            If this buffer or ``src`` is closed, or as :meth:`copy_to` for
            ``DURING_API_CALL``.
        """
        require_open(self._closed, "Buffer")
        if not isinstance(src, Buffer):
            raise TypeError(f"src must be a Buffer, not {type(src).__name__}")
        require_open(src._closed, "source Buffer")
        s = _as_stream(stream)
        size = self._size
        if src._size != size:
            raise ValueError(
                f"buffer sizes mismatch between src and dst (sizes are: src={src._size}, "
                f"dst={size})"
            )
        copy_one(self._ptr, src._ptr, size, s, options, "copy_from")

    def fill(self, value: int | Any, *, stream: Stream | GraphBuilder) -> None:
        """Fill this buffer with a repeated 1-, 2- or 4-byte pattern on ``stream``.

        Parameters
        ----------
        value : int or buffer-protocol object
            An ``int`` in ``[0, 256)`` fills bytes; an object supporting the
            buffer protocol of 1, 2 or 4 bytes (``numpy.uint16(7)``,
            ``numpy.float32(1.5)``, ``b"\\x01\\x02"``) fills elements of that
            width with its raw bits.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the fill.

        Raises
        ------
        TypeError
            If ``value`` is neither an int nor a buffer.
        OverflowError
            If an int ``value`` is outside ``[0, 256)`` (the exception is also
            a ValueError).
        ValueError
            If a buffer ``value`` is not 1, 2 or 4 bytes long, or the buffer
            size is not a multiple of that width.
        """
        require_open(self._closed, "Buffer")
        s = _as_stream(stream)
        _fill_async(self._ptr, self._size, value, s._handle)

    @property
    def handle(self) -> int:
        """int: The address of the memory (0 once closed)."""
        return self._ptr

    @property
    def size(self) -> int:
        """int: The size in bytes (0 once closed)."""
        return self._size

    @property
    def memory_resource(self) -> MemoryResource | None:
        """MemoryResource or None: The resource that frees this buffer."""
        return self._mr

    @property
    def owner(self) -> object:
        """object: The object kept alive for a buffer made with ``owner=``."""
        extra = self._extra
        return None if extra is None else extra.owner

    @property
    def device_id(self) -> int:
        """int: The device ordinal of this memory, or -1 when bound to no device."""
        return self._memory_attr("device_id", 2)  # type: ignore[no-any-return]

    @property
    def is_device_accessible(self) -> bool:
        """bool: Whether the GPU can access this memory."""
        return self._memory_attr("is_device_accessible", 0)  # type: ignore[no-any-return]

    @property
    def is_host_accessible(self) -> bool:
        """bool: Whether the CPU can access this memory."""
        return self._memory_attr("is_host_accessible", 1)  # type: ignore[no-any-return]

    @property
    def is_managed(self) -> bool:
        """bool: Whether this is CUDA managed (unified) memory."""
        return bool(self._memory_attr("is_managed", 3))

    @property
    def is_mapped(self) -> bool:
        """bool: Whether this buffer was imported from another process via IPC."""
        extra = self._extra
        return extra is not None and extra.mapped

    @property
    def ipc_descriptor(self) -> IPCBufferDescriptor:
        """IPCBufferDescriptor: Describes this buffer for sharing with other processes.

        Raises
        ------
        RuntimeError
            If the memory resource is not IPC-enabled.
        """
        require_open(self._closed, "Buffer")
        extra = self._extra
        if extra is None:
            extra = self._extra = _Extra(None, None)
        if extra.ipc is None:
            extra.ipc = _ipc.buffer_get_ipc_descriptor(self)
        return extra.ipc

    def _memory_attr(self, name: str, index: int) -> Any:
        """What the memory resource says of ``name``, else item ``index`` of the driver's view.

        The driver's view of the pointer (device-accessible, host-accessible,
        device id, managed) is asked once, for a buffer without a resource.
        """
        require_open(self._closed, "Buffer")
        mr = self._mr
        if mr is not None:
            if index == 2 and getattr(mr, "_bound_to_no_gpu", False):  # LegacyPinnedMemoryResource
                return -1
            return getattr(mr, name)
        extra = self._extra
        if extra is None:
            extra = self._extra = _Extra(None, None)
        if extra.attrs is None:
            extra.attrs = _query_memory_attrs(self._ptr)
        return extra.attrs[index]


#: The class of open Buffers (Buffer and its open twin share one layout).  An
#: instance is open: close() makes it a Buffer.  On PyPy the twins carry a
#: guard instead of ``__del__`` (see guard_open_buffer).
_OpenBuffer = open_class(Buffer, _buffer_finalizer, guarded=True, close=open_buffer_close(Buffer))


def _open_buffer_class(cls: type[_B]) -> type[_B]:
    """The open twin of Buffer class ``cls``: the class every new Buffer gets."""
    return _OpenBuffer if cls is Buffer else open_class(cls, _buffer_finalizer, guarded=True)  # type: ignore[return-value]  # cls is Buffer there


def _new_open(cls: type[_B], c_ptr: int, size: int, mr: MemoryResource | None) -> _B:
    """A new open Buffer of class ``cls``: ``size`` bytes at ``c_ptr``, of resource ``mr``.

    The caller sets what frees it (``_release``) and its ``_extra``.
    """
    self = _open_buffer_class(cls)()
    if GUARD_HANDLES:
        guard_open_buffer(self)
    self._ptr = c_ptr
    self._size = size
    self._mr = mr
    self._closed = False
    return self
