# SPDX-License-Identifier: Apache-2.0
"""Stream-ordered memory pools: the base of the device, pinned and managed resources.

A ``_MemPool`` wraps a ``CUmemoryPool``: either one it created or imported
(owned, destroyed after :meth:`_MemPool.close` once no buffer from it is
outstanding -- see ``_owned_pool``) or the driver's current pool for a
location (not owned).  Allocation is ``cuMemAllocFromPoolAsync`` and freeing
``cuMemFreeAsync``, both ordered on a stream.  The pool's attributes are in
``_pool_attributes`` and peer access in ``_peer_access``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, ClassVar, NoReturn, cast

from cuda_core._coerce import as_flag, as_int_handle
from cuda_core._coerce import as_size as _as_size
from cuda_core._context import _PRIMARY, _current_device_id_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, status_in
from cuda_core._lifetime import GUARD_HANDLES, ClosedFlag, require_open
from cuda_core._memory import _ipc
from cuda_core._memory._buffer import Buffer, _open_buffer_class
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._memory._owned_pool import _OwnedPool
from cuda_core._memory._pool_attributes import _MemPoolAttributes
from cuda_core._memory._release import _InlinePool, _OwnedPoolRelease, guard_open_buffer
from cuda_core._stream import Stream as _Stream
from cuda_core._stream import _as_stream, _OpenStream
from cuda_core._stream_release import bind_for_release

if TYPE_CHECKING:
    from uuid import UUID

    from typing_extensions import Self

    from cuda_core._memory._device_memory_resource import DeviceMemoryResourceOptions
    from cuda_core._memory._pinned_memory_resource import PinnedMemoryResourceOptions
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__: list[str] = []

_ULLONG_MAX = (1 << 64) - 1
_new = object.__new__
_cc_pool_alloc = lib.cc_pool_alloc


def _open_buffer_maker(cls: type[Buffer]) -> Callable[[], Buffer]:
    """What makes a new, empty open Buffer of class ``cls`` for a hot path.

    The open twin itself on CPython; on PyPy a function that also gives the
    Buffer its guard (see guard_open_buffer).
    """
    twin = _open_buffer_class(cls)
    if GUARD_HANDLES:
        return lambda: guard_open_buffer(twin())
    return twin


class _MemPool(MemoryResource, ClosedFlag):
    """Base of the memory resources backed by a ``CUmemoryPool``."""

    __slots__ = (
        "_pool",
        "_h",
        "_owned",
        "_ipc_data",
        "_attributes",
        "_dev_id",
        "_closed",
        "_state",
        "_fast",
        "_bcls",
        "__dict__",
    )

    _pool: Any  # CUmemoryPool cdata
    _h: int
    _owned: bool
    _ipc_data: _ipc.IPCDataForMR | None
    _attributes: _MemPoolAttributes | None
    _dev_id: int
    _closed: bool
    _state: _OwnedPool | None
    _fast: Any  # CUmemoryPool cdata while allocating is allowed, else None
    _bcls: Callable[[], Buffer]  # makes an empty open Buffer (see _open_buffer_maker)

    def _set_pool(self, c_pool: Any, owned: bool, dev_id: int) -> None:
        """Adopt ``c_pool``; an owned pool is destroyed after close() or, failing that, GC.

        Either way the destruction waits for the last outstanding buffer
        (see :class:`_OwnedPool`).
        """
        self._dev_id = dev_id
        self._owned = owned
        self._closed = False
        self._attributes = None
        if not hasattr(self, "_ipc_data"):
            self._ipc_data = None
        if owned:
            # The context the collector destroys the pool in: the retained
            # primary context of the pool's device, or (a host pool) of the
            # current context's device.
            if dev_id < 0:
                dev_id_now = _current_device_id_or_none()
                c_ctx = None if dev_id_now is None else _PRIMARY.get(dev_id_now)
            else:
                c_ctx = _PRIMARY.get(dev_id)
            self._state = _OwnedPool(c_pool, type(self).__name__, c_ctx)
        else:
            self._state = None
        self._pool = c_pool
        # For allocate()'s hot path: the pool while allocating is allowed
        # (None once closed, or for a mapped resource), and the buffer class.
        mapped = self._ipc_data is not None and self._ipc_data.is_mapped
        self._fast = None if mapped else c_pool
        self._bcls = _open_buffer_maker(self._buffer_class)
        self._h = as_int_handle(c_pool)

    def _init_create_pool(
        self,
        loc_type: int,
        loc_id: int,
        alloc_type: int,
        ipc_enabled: bool,
        max_size: int,
        dev_id: int,
    ) -> None:
        """Create an owned pool for the given location and allocation type."""
        props = ffi.new("CUmemPoolProps *")
        props.allocType = alloc_type
        props.handleTypes = _ipc.IPC_HANDLE_TYPE if ipc_enabled else lib.CU_MEM_HANDLE_TYPE_NONE
        props.location.type = loc_type
        props.location.id = loc_id
        props.maxSize = _as_size(max_size)
        c_pool = ffi.new("CUmemoryPool *")
        check(lib.cuMemPoolCreate(c_pool, props), f"{type(self).__name__}: cuMemPoolCreate")
        self._ipc_data = None
        self._set_pool(c_pool[0], True, dev_id)
        if ipc_enabled:
            self._ipc_data = _ipc.IPCDataForMR(_ipc.export_mempool(self), False)

    def _init_current_pool(self, loc_type: int, loc_id: int, alloc_type: int, dev_id: int) -> None:
        """Wrap the driver's current pool for a location (CUDA 13 drivers)."""
        loc = ffi.new("CUmemLocation *")
        loc.type = loc_type
        loc.id = loc_id
        c_pool = ffi.new("CUmemoryPool *")
        check(
            lib.cuMemGetMemPool(c_pool, loc, alloc_type), f"{type(self).__name__}: cuMemGetMemPool"
        )
        self._ipc_data = None
        self._set_pool(c_pool[0], False, dev_id)

    def _raise_release_threshold(self) -> None:
        """Keep freed memory in the pool (threshold 0 -> max) to avoid OS round trips."""
        value = ffi.new("cuuint64_t *")
        check(lib.cuMemPoolGetAttribute(self._pool, lib.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, value))
        if value[0] == 0:
            value[0] = _ULLONG_MAX
            check(
                lib.cuMemPoolSetAttribute(self._pool, lib.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, value)
            )

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"pool={self._h:#x}"
        return f"<{type(self).__name__} device_id={self._dev_id} {state}>"

    def close(self) -> None:
        """Close this resource: no further allocations.

        An owned pool (created with options, or imported) is destroyed with
        ``cuMemPoolDestroy`` -- at once when no buffer allocated from (or
        imported into) it is outstanding, and otherwise when the last of
        them is freed, by :meth:`Buffer.close` or by garbage collection.
        Until then those buffers stay fully usable.  A pool that is not
        owned is left alone.  Allocating afterwards raises;
        :meth:`deallocate` keeps working.  Idempotent.

        Raises
        ------
        CUDAError
            If ``cuMemPoolDestroy`` fails (when the destruction is deferred,
            the ``Buffer.close`` that triggers it raises instead, or the
            garbage collector warns).
        """
        if self._closed:
            return
        self._closed = True
        self._fast = None
        self._attributes = None
        # The allocation handle (if any) closes its descriptor when collected.
        self._ipc_data = None
        state = self._state
        if state is not None:
            state.close()

    def allocate(self, size: int, *, stream: _Stream | GraphBuilder) -> Buffer:
        """Allocate ``size`` bytes, stream-ordered on ``stream``.

        Parameters
        ----------
        size : int
            Bytes to take from the pool.
        stream : Stream or GraphBuilder
            Keyword-only; orders the allocation and, by default, the buffer's
            deallocation.

        Returns
        -------
        Buffer

        Raises
        ------
        TypeError
            If this is a mapped (imported) resource, or ``stream`` is not a stream.
        ValueError
            If ``size`` is negative.
        RuntimeError
            If the resource is closed or ``stream`` is capturing a graph.
        CUDAError
            If the pool cannot allocate (e.g. ``CUDA_ERROR_OUT_OF_MEMORY``).
        """
        # The hot path is written out inline: this runs once per allocation.
        # It takes an open Stream (an _OpenStream is open) and a positive int;
        # anything else is checked (and refused or converted) by _checked_args,
        # first or, for an open owned stream, once the call has refused it:
        # cffi refuses a negative size and the None pool of a closed or mapped
        # resource, and cc_pool_alloc returns 0 for a size of 0, before any
        # driver call.
        c_pool = self._fast
        s = stream
        if s.__class__ is _OpenStream:  # an open owned stream names its context
            if size.__class__ is not int:  # refused, or made a plain int (an index)
                s, size = self._checked_args(size, stream)  # raises where c_pool is None
        else:
            if (
                c_pool is None
                or s.__class__ is not _Stream
                or s._closed
                or size.__class__ is not int
                or size <= 0
            ):
                s, size = self._checked_args(size, stream)  # raises where c_pool is None
                if size == 0:
                    buf: Buffer = self._buffer_class._from_pool(0, 0, self, s)
                    return buf
            s = bind_for_release(s)  # a default-stream token gets its context
        try:
            c_ptr: int = _cc_pool_alloc(size, c_pool, s._handle)
        except (OverflowError, TypeError):  # a size below 0 or beyond size_t; no pool
            self._checked_args(size, stream)  # raises, closed or mapped first
            raise
        if not c_ptr:
            if size == 0:  # cc_pool_alloc's refusal: an empty Buffer, no driver call
                buf = self._buffer_class._from_pool(0, 0, self, s)
                return buf
            _raise_pool_alloc_error(self, size)
        buf = self._bcls()
        buf._ptr = c_ptr
        buf._size = size
        buf._mr = self
        buf._closed = False
        buf._extra = None
        pool = self._state
        if pool is None:  # a pool this resource does not own: the Buffer frees it
            buf._release = _InlinePool
            buf._dstream = s
            return buf
        # An owned pool counts its outstanding allocations.
        rel = _new(_OwnedPoolRelease)
        rel.pool = pool
        pool.live.append(None)  # pool.acquire(), inline
        rel.mr = self
        rel.ptr = c_ptr
        rel.size = size
        rel.stream = s
        buf._release = rel
        return buf

    def _checked_args(self, size: object, stream: object) -> tuple[_Stream, int]:
        """Refuse allocation (closed or mapped resource) or return ``(stream, size)`` checked."""
        if self._fast is None:
            require_open(self._closed, type(self).__name__)
            raise TypeError("Cannot allocate from a mapped IPC-enabled memory resource")
        return _as_stream(stream), _as_size(size)

    def deallocate(
        self, ptr: DevicePointerType, size: int, *, stream: _Stream | GraphBuilder
    ) -> None:
        """Free ``ptr`` (from :meth:`allocate`), stream-ordered on ``stream``.

        Works after :meth:`close` too.  Memory freed this way (rather than
        through its Buffer) is not counted as released by an owned pool.

        Raises
        ------
        TypeError
            If ``stream`` is not a stream.
        RuntimeError
            If ``stream`` is closed.
        """
        s = _as_stream(stream)
        ptr = int(ptr)  # type: ignore[arg-type]  # None raises TypeError, as in cuda.core
        if ptr:
            check(lib.cuMemFreeAsync(ptr, s._handle), "cuMemFreeAsync")

    @property
    def attributes(self) -> _MemPoolAttributes:
        """_MemPoolAttributes: The pool's attributes, read live from the driver."""
        require_open(self._closed, type(self).__name__)
        if self._attributes is None:
            self._attributes = _MemPoolAttributes._init(self)
        return self._attributes

    @property
    def handle(self) -> int:
        """int: The ``CUmemoryPool`` handle (0 once closed)."""
        return 0 if self._closed else self._h

    @property
    def is_handle_owned(self) -> bool:
        """bool: Whether this resource owns (and destroys) its pool."""
        return self._owned and not self._closed

    @property
    def is_ipc_enabled(self) -> bool:
        """bool: Whether the pool can be shared with other processes."""
        return self._ipc_data is not None

    @property
    def is_mapped(self) -> bool:
        """bool: Whether this resource maps a pool imported from another process.

        A mapped resource cannot allocate; it only receives shared buffers.
        """
        return self._ipc_data is not None and self._ipc_data.is_mapped

    @property
    def uuid(self) -> UUID | None:
        """uuid.UUID or None: Identifies an IPC-enabled resource across processes."""
        return None if self._ipc_data is None else self._ipc_data.uuid

    @property
    def allocation_handle(self) -> _ipc.IPCAllocationHandle:
        """IPCAllocationHandle: Shareable handle of this pool (requires IPC).

        The handle is owned by this resource.

        Raises
        ------
        RuntimeError
            If the resource is not IPC-enabled.
        """
        if self._ipc_data is None:
            raise RuntimeError("Memory resource is not IPC-enabled")
        return self._ipc_data.alloc_handle

    def register(self, uuid: UUID) -> Self:
        """Register this mapped resource under ``uuid`` and return the registered one.

        If a resource is already registered with that key, it is returned.
        """
        return _ipc.register(self, uuid)

    def __reduce__(self) -> tuple[Callable[[UUID], Self], tuple[UUID | None]]:
        return type(self).from_registry, (self.uuid,)

    @classmethod
    def from_registry(cls, uuid: UUID) -> Self:
        """Return the mapped resource registered under ``uuid``.

        Raises
        ------
        RuntimeError
            If none is registered.
        """
        # A UUID names one exported pool, mapped with the exporter's class.
        return cast("Self", _ipc.from_registry(uuid))

    _buffer_class: ClassVar[type[Buffer]] = Buffer


def _raise_pool_alloc_error(mr: _MemPool, size: int) -> NoReturn:
    """Raise for a failed ``cc_pool_alloc`` (the status is kept in C)."""
    status = lib.cc_pool_alloc_status()
    if status_in(status, (lib.CC_STREAM_CAPTURING,)):
        # Worded as cuda.core words it (its pool base class is ``_MemPool``).
        raise RuntimeError(
            "_MemPool cannot perform memory operations on a capturing stream (consider using "
            "GraphMemoryResource)."
        )
    check(status, f"{type(mr).__name__}.allocate({size})")
    raise RuntimeError(f"{type(mr).__name__}.allocate({size}) returned a NULL pointer")


def _check_pool_options(
    options: DeviceMemoryResourceOptions | PinnedMemoryResourceOptions, cls_name: str
) -> None:
    """Validate the ``ipc_enabled`` and ``max_size`` fields of pool options ``cls_name``."""
    as_flag(options.ipc_enabled, f"{cls_name}.ipc_enabled", ints=False)
    if isinstance(options.max_size, bool) or not isinstance(options.max_size, int):
        raise TypeError(
            f"{cls_name}.max_size must be an int, not {type(options.max_size).__name__}"
        )
    if not 0 <= options.max_size <= _ULLONG_MAX:
        raise ValueError(f"{cls_name}.max_size must be in [0, 2**64 - 1], got {options.max_size}")
