# SPDX-License-Identifier: Apache-2.0
"""Sharing memory pools and their buffers between processes (Linux, POSIX fds).

An IPC-enabled pool is exported as a file descriptor wrapped in an
:class:`IPCAllocationHandle`; another process imports it as a *mapped*
memory resource, which cannot allocate but can import buffers described by
:class:`IPCBufferDescriptor`.  Mapped resources are kept in a registry keyed
by the exporting resource's UUID, and both resources and buffers pickle:
through :mod:`multiprocessing` (the descriptor is duplicated into the
receiving process) or, for an already mapped resource, with plain pickle.

Unpickling performs a live import: only exchange these objects with
trusted processes.
"""

from __future__ import annotations

import os
import sys
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._default_stream import default_stream as _default_stream
from cuda_core._errors import check
from cuda_core._lifetime import require_open
from cuda_core._memory._forking_pickler import register as register_reducer
from cuda_core._memory._ipc_imports import import_once
from cuda_core._stream import _as_stream

if TYPE_CHECKING:
    from uuid import UUID

    from typing_extensions import Self

    from cuda_core._memory._buffer import Buffer
    from cuda_core._memory._device_memory_resource import DeviceMemoryResource
    from cuda_core._memory._memory_pool import _MemPool
    from cuda_core._memory._memory_resource import MemoryResource
    from cuda_core._memory._pinned_memory_resource import PinnedMemoryResource
    from cuda_core._memory._release import _SharedRelease
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder

    _M = TypeVar("_M", bound=_MemPool)

__all__ = ["IPCAllocationHandle", "IPCBufferDescriptor"]

IPC_HANDLE_TYPE: int = (
    lib.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    if sys.platform.startswith("linux")
    else lib.CU_MEM_HANDLE_TYPE_NONE
)

_registry: weakref.WeakValueDictionary[UUID, _MemPool] = weakref.WeakValueDictionary()


def is_supported() -> bool:
    """Whether memory-pool IPC is available on this platform."""
    none: int = lib.CU_MEM_HANDLE_TYPE_NONE
    return IPC_HANDLE_TYPE != none


def check_multiprocessing_start_method() -> None:
    """Warn when ``fork`` is the start method: CUDA does not survive a fork.

    Pickling for a process being spawned (spawn or forkserver, the only
    start methods that pickle their arguments) never warns.
    """
    import multiprocessing

    if multiprocessing.context.get_spawning_popen() is not None:
        return
    if multiprocessing.get_start_method(allow_none=True) == "fork":
        warnings.warn(
            "multiprocessing uses the 'fork' start method, which is not safe with CUDA; "
            "use multiprocessing.get_context('spawn') or 'forkserver' to share CUDA memory",
            UserWarning,
            stacklevel=3,
        )


class IPCBufferDescriptor:
    """Picklable description of a buffer shared between processes.

    Obtain it from :attr:`Buffer.ipc_descriptor
    <cuda_core.Buffer.ipc_descriptor>`; import it with
    :meth:`Buffer.from_ipc_descriptor <cuda_core.Buffer.from_ipc_descriptor>`.
    """

    __slots__ = ("_payload", "_size")

    _payload: bytes
    _size: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "IPCBufferDescriptor objects cannot be instantiated directly. "
            "Please use MemoryResource APIs."
        )

    @classmethod
    def _init(cls, payload: bytes, size: int) -> Self:
        self = object.__new__(cls)
        payload = bytes(payload)
        if len(payload) != 64:
            raise ValueError(f"an IPC buffer descriptor holds 64 bytes, got {len(payload)}")
        self._payload = payload
        self._size = int(size)
        return self

    def __reduce__(self) -> tuple[Callable[[bytes, int], IPCBufferDescriptor], tuple[bytes, int]]:
        return IPCBufferDescriptor._init, (self._payload, self._size)

    def __repr__(self) -> str:
        return f"<IPCBufferDescriptor size={self._size}>"

    @property
    def size(self) -> int:
        """int: Size of the described buffer in bytes."""
        return self._size


class IPCAllocationHandle:
    """Shareable handle (a POSIX file descriptor) of an IPC-enabled memory pool.

    The handle owns its descriptor: :meth:`close` (or garbage collection)
    closes it.  Sending it through :mod:`multiprocessing` duplicates the
    descriptor into the receiving process.
    """

    __slots__ = ("_handle", "_uuid", "_finalizer", "__weakref__")

    _handle: int
    _uuid: UUID | None
    _finalizer: weakref.finalize[[int], IPCAllocationHandle]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "IPCAllocationHandle objects cannot be instantiated directly. "
            "Please use MemoryResource APIs."
        )

    @classmethod
    def _init(cls, handle: int, uuid: UUID | None) -> Self:
        self = object.__new__(cls)
        handle = int(handle)
        if handle < 0:
            raise ValueError(f"invalid file descriptor {handle}")
        self._handle = handle
        self._uuid = uuid
        self._finalizer = weakref.finalize(self, _close_fd, handle)
        return self

    def __int__(self) -> int:
        if self._handle < 0:
            raise ValueError(
                f"Cannot convert IPCAllocationHandle to int: the handle (id={id(self)}) is closed."
            )
        return self._handle

    def __repr__(self) -> str:
        return f"<IPCAllocationHandle fd={self._handle} uuid={self._uuid}>"

    def close(self) -> None:
        """Close the file descriptor (idempotent)."""
        if self._handle >= 0:
            self._finalizer.detach()
            fd, self._handle = self._handle, -1
            os.close(fd)

    @property
    def is_closed(self) -> bool:
        """bool: Whether the descriptor has been closed."""
        return self._handle < 0

    @property
    def handle(self) -> int:
        """int: The file descriptor (-1 once closed)."""
        return self._handle

    @property
    def uuid(self) -> UUID | None:
        """uuid.UUID or None: The UUID of the exporting memory resource."""
        return self._uuid


def _close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _reduce_allocation_handle(
    alloc_handle: IPCAllocationHandle,
) -> tuple[
    Callable[[type[IPCAllocationHandle], Any, UUID | None], IPCAllocationHandle],
    tuple[type[IPCAllocationHandle], Any, UUID | None],
]:
    check_multiprocessing_start_method()
    if alloc_handle.is_closed:
        raise RuntimeError("cannot send a closed IPCAllocationHandle")
    from multiprocessing.reduction import DupFd

    df = DupFd(alloc_handle.handle)
    return _reconstruct_allocation_handle, (type(alloc_handle), df, alloc_handle.uuid)


def _reconstruct_allocation_handle(
    cls: type[IPCAllocationHandle], df: Any, uuid: UUID | None
) -> IPCAllocationHandle:
    return cls._init(df.detach(), uuid)


register_reducer(IPCAllocationHandle, _reduce_allocation_handle)


class IPCDataForMR:
    """IPC state of a memory resource: its allocation handle and whether it is mapped."""

    __slots__ = ("alloc_handle", "is_mapped")

    alloc_handle: IPCAllocationHandle
    is_mapped: bool

    def __init__(self, alloc_handle: IPCAllocationHandle, is_mapped: bool) -> None:
        self.alloc_handle = alloc_handle
        self.is_mapped = is_mapped

    @property
    def uuid(self) -> UUID | None:
        uuid: UUID | None = getattr(self.alloc_handle, "uuid", None)
        return uuid


# --------------------------------------------------------------------------
# Memory pools
# --------------------------------------------------------------------------
def export_mempool(mr: _MemPool) -> IPCAllocationHandle:
    """Export ``mr``'s pool as a new :class:`IPCAllocationHandle` with a fresh UUID."""
    fd = ffi.new("int *")
    check(
        lib.cuMemPoolExportToShareableHandle(fd, mr._pool, IPC_HANDLE_TYPE, 0),
        "cuMemPoolExportToShareableHandle",
    )
    try:
        import uuid

        return IPCAllocationHandle._init(fd[0], uuid.uuid4())
    except BaseException:
        os.close(fd[0])
        raise


def mempool_from_allocation_handle(
    cls: type[_M], alloc_handle: IPCAllocationHandle | int, dev_id: int
) -> _M:
    """Map the pool behind ``alloc_handle`` as a new (or registered) ``cls`` instance."""
    uuid: UUID | None = getattr(alloc_handle, "uuid", None)
    if uuid is not None:
        existing = _registry.get(uuid)
        if existing is not None:
            # A UUID names one exported pool, mapped with the exporter's class.
            if not isinstance(existing, cls):
                raise TypeError(
                    f"Registry contains a {type(existing).__name__} for uuid {uuid}, "
                    f"but {cls.__name__} was requested"
                )
            return existing
    if isinstance(alloc_handle, IPCAllocationHandle):
        require_open(alloc_handle.is_closed, "IPCAllocationHandle")
    elif isinstance(alloc_handle, int) and not isinstance(alloc_handle, bool):
        fd = os.dup(alloc_handle)  # the caller keeps (and closes) its own fd
        try:
            alloc_handle = IPCAllocationHandle._init(fd, None)
        except BaseException:
            os.close(fd)
            raise
    else:
        raise TypeError(
            "alloc_handle must be an IPCAllocationHandle or an int file descriptor, "
            f"not {type(alloc_handle).__name__}"
        )
    c_pool = ffi.new("CUmemoryPool *")
    check(
        lib.cuMemPoolImportFromShareableHandle(
            c_pool, ffi.cast("void *", int(alloc_handle)), IPC_HANDLE_TYPE, 0
        ),
        "cuMemPoolImportFromShareableHandle",
    )
    self = object.__new__(cls)
    self._ipc_data = IPCDataForMR(alloc_handle, True)
    self._set_pool(c_pool[0], True, dev_id)
    if uuid is not None:
        registered = register(self, uuid)
        assert registered is self
    return self


def register(mr: _M, uuid: UUID) -> _M:
    """Register the mapped resource ``mr`` under ``uuid``; return the registered one."""
    existing = _registry.get(uuid)
    if existing is not None:
        return cast("_M", existing)  # see mempool_from_allocation_handle
    if mr.uuid is not None and mr.uuid != uuid:
        raise ValueError(f"cannot register a resource with UUID {mr.uuid} under {uuid}")
    _registry[uuid] = mr
    if mr._ipc_data is not None:
        mr._ipc_data.alloc_handle._uuid = uuid
    return mr


def from_registry(uuid: UUID) -> _MemPool:
    """Return the mapped resource registered under ``uuid`` (RuntimeError if none)."""
    try:
        return _registry[uuid]
    except KeyError:
        raise RuntimeError(f"Memory resource {uuid} was not found") from None


# --------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------
def buffer_get_ipc_descriptor(buf: Buffer) -> IPCBufferDescriptor:
    """Export ``buf`` (from an IPC-enabled pool) as an :class:`IPCBufferDescriptor`."""
    mr = buf.memory_resource
    if mr is None or not getattr(mr, "is_ipc_enabled", False):
        raise RuntimeError("Memory resource is not IPC-enabled")
    data = ffi.new("CUmemPoolPtrExportData *")
    check(lib.cuMemPoolExportPointer(data, buf.handle), "cuMemPoolExportPointer")
    return IPCBufferDescriptor._init(ffi.buffer(data.reserved)[:], buf.size)


def buffer_from_ipc_descriptor(
    cls: type[Buffer],
    mr: MemoryResource,
    ipc_descriptor: IPCBufferDescriptor,
    stream: Stream | GraphBuilder | None,
) -> Buffer:
    """Import a buffer described by ``ipc_descriptor`` through the mapped ``mr``."""
    if not isinstance(ipc_descriptor, IPCBufferDescriptor):
        # cuda.core's (Cython's) wording, which callers match on.
        raise TypeError(
            "Argument 'ipc_descriptor' has incorrect type (expected IPCBufferDescriptor, "
            f"got {type(ipc_descriptor).__name__})"
        )
    if not getattr(mr, "is_ipc_enabled", False):
        raise RuntimeError("Memory resource is not IPC-enabled")
    pool_mr = cast("_MemPool", mr)  # only pool-backed resources are IPC-enabled
    require_open(pool_mr.is_closed, type(mr).__name__)
    s = _as_stream(stream) if stream is not None else _default_stream()
    size = ipc_descriptor.size

    def first() -> Buffer:
        data = ffi.new("CUmemPoolPtrExportData *")
        ffi.memmove(data.reserved, ipc_descriptor._payload, 64)
        c_ptr = ffi.new("CUdeviceptr *")
        check(lib.cuMemPoolImportPointer(c_ptr, pool_mr._pool, data), "cuMemPoolImportPointer")
        # The mapped pool is owned: it counts the imported mapping as outstanding.
        pool = getattr(mr, "_state", None)
        buf: Buffer = cls._from_pool(as_int_handle(c_ptr[0]), size, mr, s, ipc_descriptor, pool)
        return buf

    def again(shared: _SharedRelease) -> Buffer:
        return cls._from_shared(shared, size, mr, ipc_descriptor)

    # One mapping per (pool, exported pointer) in this process (see _ipc_imports).
    return import_once((pool_mr._h, ipc_descriptor._payload), first, again)


def reconstruct_buffer(
    cls: type[Buffer], mr: MemoryResource, ipc_descriptor: IPCBufferDescriptor
) -> Buffer:
    """Unpickle an IPC buffer: import it through ``mr`` on the default stream."""
    c_ctx = ffi.new("CUcontext *")
    status = lib.cuCtxGetCurrent(c_ctx)
    if status or c_ctx[0] == ffi.NULL:
        # A spawned process unpickles its arguments before running its
        # target: bind a context so the default stream can be used.
        device_id = mr.device_id
        device = _slots.device_class()
        (device(device_id) if device_id >= 0 else device()).set_current()
    return buffer_from_ipc_descriptor(cls, mr, ipc_descriptor, _default_stream())


def deep_reduce_mempool(
    mr: DeviceMemoryResource | PinnedMemoryResource, *args: int
) -> tuple[Callable[..., _MemPool], tuple[Any, ...]]:
    """multiprocessing reducer: send the allocation handle, map it on arrival."""
    check_multiprocessing_start_method()
    return type(mr).from_allocation_handle, (*args, mr.allocation_handle)
