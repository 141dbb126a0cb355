# SPDX-License-Identifier: Apache-2.0
"""Stream-ordered memory pools: the base of the device, pinned and managed resources.

A ``_MemPool`` wraps a ``CUmemoryPool``: either one it created or imported
(owned, destroyed after :meth:`_MemPool.close` once no buffer from it is
outstanding) or the driver's current pool for a location (not owned).
Allocation is ``cuMemAllocFromPoolAsync`` and freeing ``cuMemFreeAsync``,
both ordered on a stream.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import MutableSet

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, warn_cuda
from cuda_core._memory._buffer import (
    Buffer,
    MemoryResource,
    _as_size,
    _as_stream,
    _InlinePool,
    _open_buffer_class,
    _OpenStream,
    _OwnedPoolRelease,
    _Stream,
)
from cuda_core._utils import as_int_handle, require_open

__all__ = ["MemoryPoolAccess", "PeerAccessibleBySetProxy", "DMR_mempool_get_access"]

_ULLONG_MAX = (1 << 64) - 1
_new = object.__new__
_cc_pool_alloc = lib.cc_pool_alloc


class MemoryPoolAccess(enum.IntEnum):
    """Access that a device has to the allocations of a memory pool.

    Values are the driver's ``CUmemAccess_flags``.
    """

    NONE = 0
    READ = 1
    READ_WRITE = 3


class _MemPoolAttributes:
    """Attributes of a memory pool (read live from the driver)."""

    __slots__ = ("_mr",)

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "_MemPoolAttributes cannot be instantiated directly. Please use MemoryResource APIs."
        )

    @classmethod
    def _init(cls, mr):
        self = object.__new__(cls)
        self._mr = mr
        return self

    def __repr__(self):
        names = (
            "reuse_follow_event_dependencies",
            "reuse_allow_opportunistic",
            "reuse_allow_internal_dependencies",
            "release_threshold",
            "reserved_mem_current",
            "reserved_mem_high",
            "used_mem_current",
            "used_mem_high",
        )
        body = ", ".join(f"{n}={getattr(self, n)}" for n in names)
        return f"{type(self).__name__}({body})"

    def _get(self, attr, ctype):
        mr = self._mr
        require_open(mr, mr.is_closed, type(mr).__name__)
        value = ffi.new(ctype)
        check(lib.cuMemPoolGetAttribute(mr._pool, attr, value), "cuMemPoolGetAttribute")
        return value[0]

    def _set(self, attr, ctype, value):
        mr = self._mr
        require_open(mr, mr.is_closed, type(mr).__name__)
        c_value = ffi.new(ctype, value)
        check(lib.cuMemPoolSetAttribute(mr._pool, attr, c_value), "cuMemPoolSetAttribute")

    @property
    def reuse_follow_event_dependencies(self):
        """bool: Allow reuse of memory freed on another stream after an event dependency."""
        return bool(self._get(lib.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, "int *"))

    @property
    def reuse_allow_opportunistic(self):
        """bool: Allow reuse of completed frees without a dependency."""
        return bool(self._get(lib.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, "int *"))

    @property
    def reuse_allow_internal_dependencies(self):
        """bool: Allow the driver to insert dependencies to reuse memory."""
        return bool(self._get(lib.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, "int *"))

    @property
    def release_threshold(self):
        """int: Reserved memory (bytes) the pool keeps before releasing to the OS."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, "cuuint64_t *"))

    @property
    def reserved_mem_current(self):
        """int: Backing memory currently reserved by the pool, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, "cuuint64_t *"))

    @property
    def reserved_mem_high(self):
        """int: High watermark of reserved memory, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, "cuuint64_t *"))

    @property
    def used_mem_current(self):
        """int: Memory currently allocated from the pool, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, "cuuint64_t *"))

    @property
    def used_mem_high(self):
        """int: High watermark of allocated memory, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_USED_MEM_HIGH, "cuuint64_t *"))


class _MemPool(MemoryResource):
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

    def _set_pool(self, c_pool, owned, dev_id):
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
        self._state = _OwnedPool(c_pool, type(self).__name__) if owned else None
        self._pool = c_pool
        # For allocate()'s hot path: the pool while allocating is allowed
        # (None once closed, or for a mapped resource), and the buffer class.
        mapped = self._ipc_data is not None and self._ipc_data.is_mapped
        self._fast = None if mapped else c_pool
        self._bcls = _open_buffer_class(self._buffer_class)
        self._h = as_int_handle(c_pool)

    def _init_create_pool(self, loc_type, loc_id, alloc_type, ipc_enabled, max_size, dev_id):
        """Create an owned pool for the given location and allocation type."""
        from cuda_core._memory import _ipc

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

    def _init_current_pool(self, loc_type, loc_id, alloc_type, dev_id):
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

    def _raise_release_threshold(self):
        """Keep freed memory in the pool (threshold 0 -> max) to avoid OS round trips."""
        value = ffi.new("cuuint64_t *")
        check(lib.cuMemPoolGetAttribute(self._pool, lib.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, value))
        if value[0] == 0:
            value[0] = _ULLONG_MAX
            check(
                lib.cuMemPoolSetAttribute(self._pool, lib.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, value)
            )

    def __repr__(self):
        state = "closed" if self._closed else f"pool={self._h:#x}"
        return f"<{type(self).__name__} device_id={self._dev_id} {state}>"

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.close()
        return False

    def close(self):
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

    def allocate(self, size, *, stream):
        """Allocate ``size`` bytes, stream-ordered on ``stream``.

        Parameters
        ----------
        size : int
            Size in bytes.
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
        # anything else is checked (and refused or converted) by _checked_args first.
        c_pool = self._fast
        s = stream
        if (
            c_pool is None
            or (s.__class__ is not _OpenStream and (s.__class__ is not _Stream or s._closed))
            or size.__class__ is not int
            or size <= 0
        ):
            s, size = self._checked_args(size, stream)  # raises where c_pool is None
            if size == 0:
                return self._bcls._from_pool(0, 0, self, s)
        try:
            c_ptr = _cc_pool_alloc(size, c_pool, s._handle)
        except OverflowError:  # beyond size_t: _as_size raises the ValueError
            _as_size(size)
            raise
        if not c_ptr:
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

    def _checked_args(self, size, stream):
        """Refuse allocation (closed or mapped resource) or return ``(stream, size)`` checked."""
        if self._fast is None:
            if self._closed:
                require_open(self, True, type(self).__name__)
            raise TypeError("Cannot allocate from a mapped IPC-enabled memory resource")
        return _as_stream(stream), _as_size(size)

    def deallocate(self, ptr, size, *, stream):
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
        ptr = int(ptr)
        if ptr:
            check(lib.cuMemFreeAsync(ptr, s._handle), "cuMemFreeAsync")

    @property
    def attributes(self):
        """_MemPoolAttributes: The pool's attributes, read live from the driver."""
        require_open(self, self._closed, type(self).__name__)
        if self._attributes is None:
            self._attributes = _MemPoolAttributes._init(self)
        return self._attributes

    @property
    def handle(self):
        """int: The ``CUmemoryPool`` handle (0 once closed)."""
        return 0 if self._closed else self._h

    @property
    def is_closed(self):
        """bool: Whether :meth:`close` has been called."""
        return self._closed

    @property
    def is_handle_owned(self):
        """bool: Whether this resource owns (and destroys) its pool."""
        return self._owned and not self._closed

    @property
    def is_ipc_enabled(self):
        """bool: Whether the pool can be shared with other processes."""
        return self._ipc_data is not None

    @property
    def is_mapped(self):
        """bool: Whether this resource maps a pool imported from another process.

        A mapped resource cannot allocate; it only receives shared buffers.
        """
        return self._ipc_data is not None and self._ipc_data.is_mapped

    @property
    def uuid(self):
        """uuid.UUID or None: Identifies an IPC-enabled resource across processes."""
        return None if self._ipc_data is None else self._ipc_data.uuid

    @property
    def allocation_handle(self):
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

    def register(self, uuid):
        """Register this mapped resource under ``uuid`` and return the registered one.

        If a resource is already registered with that key, it is returned.
        """
        from cuda_core._memory import _ipc

        return _ipc.register(self, uuid)

    def __reduce__(self):
        return type(self).from_registry, (self.uuid,)

    @classmethod
    def from_registry(cls, uuid):
        """Return the mapped resource registered under ``uuid``.

        Raises
        ------
        RuntimeError
            If none is registered.
        """
        from cuda_core._memory import _ipc

        return _ipc.from_registry(uuid)

    _buffer_class = Buffer


def _raise_pool_alloc_error(mr, size):
    """Raise for a failed ``cc_pool_alloc`` (the status is kept in C)."""
    status = lib.cc_pool_alloc_status()
    if status == lib.CC_STREAM_CAPTURING:
        raise RuntimeError(
            f"{type(mr).__name__} cannot allocate on a stream that is capturing a graph "
            "(consider using GraphMemoryResource)"
        )
    check(status, f"{type(mr).__name__}.allocate({size})")
    raise RuntimeError(f"{type(mr).__name__}.allocate({size}) returned a NULL pointer")


def _check_pool_options(options, cls_name):
    """Validate the ``ipc_enabled`` and ``max_size`` fields of pool options ``cls_name``."""
    if not isinstance(options.ipc_enabled, bool):
        raise TypeError(
            f"{cls_name}.ipc_enabled must be a bool, not {type(options.ipc_enabled).__name__}"
        )
    if isinstance(options.max_size, bool) or not isinstance(options.max_size, int):
        raise TypeError(
            f"{cls_name}.max_size must be an int, not {type(options.max_size).__name__}"
        )
    if not 0 <= options.max_size <= _ULLONG_MAX:
        raise ValueError(f"{cls_name}.max_size must be in [0, 2**64 - 1], got {options.max_size}")


class _OwnedPool:
    """An owned ``CUmemoryPool``, destroyed once closed and no allocation is outstanding.

    ``live`` holds one entry per outstanding allocation (a buffer allocated
    from or imported into the pool, not yet freed); ``token`` holds the pool
    handle until it is destroyed.  ``list.append``/``list.pop`` are atomic
    under the GIL, so concurrent allocations and frees keep the count exact,
    and popping the token lets exactly one caller destroy the pool.

    The pool is destroyed by whichever comes last: :meth:`close` (the
    resource was closed, or garbage collected -- see ``__del__``) or the
    :meth:`release` of the last outstanding allocation.  Every unfreed
    allocation's ``_OwnedPoolRelease`` refers to this object, so it outlives
    them; when the resource and its buffers are collected together, the
    finalizers may run in any order and the last one destroys the pool.
    """

    __slots__ = ("live", "token", "closing", "what")

    def __init__(self, c_pool, what):
        self.live = []
        self.token = [c_pool]
        self.closing = False
        self.what = what

    def acquire(self):
        """Count one more outstanding allocation."""
        self.live.append(None)

    def release(self, raise_errors, stream=None):
        """Count one allocation freed; destroy the pool if it was the last of a closed pool.

        ``stream`` ordered that free: before destroying the pool, it is
        synchronized, so the pool never goes away with work on its memory
        still queued (the driver has been seen to crash in a later
        synchronization otherwise).
        """
        live = self.live
        try:
            live.pop()
        except IndexError:
            pass
        if self.closing and not live:
            status = 0
            if stream is not None and not stream._closed:
                status = lib.cuStreamSynchronize(stream._handle)
            self._destroy(raise_errors)  # even if the synchronization failed
            if status:
                if raise_errors:
                    check(status, f"{self.what}: cuStreamSynchronize before cuMemPoolDestroy")
                warn_cuda(f"cuStreamSynchronize before destroying a {self.what} pool", status)

    def close(self):
        """Destroy the pool now, or after the last outstanding allocation is freed."""
        self.closing = True
        if not self.live:
            self._destroy(True)

    def _destroy(self, raise_errors):
        try:
            c_pool = self.token.pop()
        except IndexError:
            return  # already destroyed
        status = lib.cuMemPoolDestroy(c_pool)
        if status:
            if raise_errors:
                check(status, f"{self.what}: cuMemPoolDestroy")
            warn_cuda(f"cuMemPoolDestroy of a {self.what} pool", status)

    def __del__(self):
        # The resource was garbage collected without close().
        if self.token and not sys.is_finalizing():  # at exit the driver reclaims everything
            self.closing = True
            if not self.live:
                self._destroy(False)


def _device_count():
    count = ffi.new("int *")
    check(lib.cuDeviceGetCount(count))
    return count[0]


def _resolve_device_id(value):
    from cuda_core._device import Device

    if isinstance(value, bool):
        raise TypeError("a device must be a Device or an int ordinal, not bool")
    return Device(value).device_id


def _pool_access(mr, dev_id):
    require_open(mr, mr.is_closed, type(mr).__name__)  # a closed pool may be destroyed
    loc = ffi.new("CUmemLocation *")
    loc.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
    loc.id = dev_id
    flags = ffi.new("CUmemAccess_flags *")
    check(lib.cuMemPoolGetAccess(flags, mr._pool, loc), "cuMemPoolGetAccess")
    return MemoryPoolAccess(int(flags[0]))


def DMR_mempool_get_access(dmr, device_id):  # noqa: N802 - upstream name
    """Return the :class:`MemoryPoolAccess` that ``device_id`` has to ``dmr``'s pool.

    Upstream returns the strings ``"rw"``, ``"r"`` or ``""``; cuda_core
    returns enum members instead (see DESIGN, error rule 6).
    """
    require_open(dmr, dmr.is_closed, type(dmr).__name__)
    return _pool_access(dmr, _resolve_device_id(device_id))


def _peer_ids(mr):
    """Device ordinals (other than the owner) with read-write access to ``mr``."""
    owner = mr._dev_id
    return tuple(
        i
        for i in range(_device_count())
        if i != owner and _pool_access(mr, i) == MemoryPoolAccess.READ_WRITE
    )


def _set_peer_access(mr, to_add, to_remove):
    """Grant and revoke peer access in one ``cuMemPoolSetAccess`` call."""
    n = len(to_add) + len(to_remove)
    if not n:
        return
    descs = ffi.new("CUmemAccessDesc[]", n)
    for i, (dev_id, flags) in enumerate(
        [(d, MemoryPoolAccess.READ_WRITE) for d in to_add]
        + [(d, MemoryPoolAccess.NONE) for d in to_remove]
    ):
        descs[i].location.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
        descs[i].location.id = dev_id
        descs[i].flags = int(flags)
    check(lib.cuMemPoolSetAccess(mr._pool, descs, n), "cuMemPoolSetAccess")


class PeerAccessibleBySetProxy(MutableSet):
    """Live set of the devices granted read-write access to a device memory pool.

    Reads query the driver (``cuMemPoolGetAccess``); writes call
    ``cuMemPoolSetAccess`` (bulk operations in a single call).  Iteration
    yields :class:`~cuda_core.Device` objects; ``add``, ``discard`` and
    ``in`` also accept device ordinals.  The owning device is ignored.
    """

    __slots__ = ("_mr",)

    def __init__(self, mr):
        self._mr = mr

    @classmethod
    def _from_iterable(cls, it):
        return set(it)

    def __contains__(self, value):
        try:
            dev_id = _resolve_device_id(value)
        except (TypeError, ValueError):
            return False
        if dev_id == self._mr._dev_id:
            return False
        return _pool_access(self._mr, dev_id) == MemoryPoolAccess.READ_WRITE

    def __iter__(self):
        from cuda_core._device import Device

        return iter([Device(i) for i in _peer_ids(self._mr)])

    def __len__(self):
        return len(_peer_ids(self._mr))

    def __repr__(self):
        return f"PeerAccessibleBySetProxy({set(self)!r})"

    def add(self, value):
        """Grant ``value`` (Device or ordinal) read-write access to the pool."""
        self._apply([value], ())

    def discard(self, value):
        """Revoke the access of ``value`` (Device or ordinal) to the pool."""
        self._apply((), [value])

    def clear(self):
        """Revoke all peer access in one driver call."""
        self._apply((), _peer_ids(self._mr))

    def update(self, *others):
        """Grant access to every device in ``others`` in one driver call."""
        self._apply([v for other in others for v in other], ())

    def difference_update(self, *others):
        """Revoke access for every device in ``others`` in one driver call."""
        self._apply((), [v for other in others for v in other])

    def __ior__(self, other):
        self.update(other)
        return self

    def __isub__(self, other):
        if other is self:
            self.clear()
        else:
            self.difference_update(other)
        return self

    def _apply(self, additions, removals):
        mr = self._mr
        require_open(mr, mr.is_closed, type(mr).__name__)
        owner = mr._dev_id
        current = set(_peer_ids(mr))
        add_ids = set()
        for value in additions:
            dev_id = _resolve_device_id(value)
            if dev_id != owner:
                add_ids.add(dev_id)
        bad = sorted(d for d in add_ids - current if not _can_access_peer(owner, d))
        if bad:
            raise ValueError(
                f"Device {owner} cannot access peer(s): {', '.join(str(d) for d in bad)}"
            )
        remove_ids = set()
        for value in removals:
            try:
                dev_id = _resolve_device_id(value)
            except (TypeError, ValueError):
                continue
            if dev_id != owner and dev_id in current:
                remove_ids.add(dev_id)
        _set_peer_access(mr, sorted(add_ids - current), sorted(remove_ids))


def _can_access_peer(dev_id, peer_id):
    """Whether ``peer_id`` can access memory on ``dev_id`` (cuDeviceCanAccessPeer)."""
    out = ffi.new("int *")
    check(lib.cuDeviceCanAccessPeer(out, peer_id, dev_id), "cuDeviceCanAccessPeer")
    return bool(out[0])


def _set_peer_accessible_by(mr, devices):
    """Make the set of peers with access exactly ``devices`` (one driver call)."""
    require_open(mr, mr.is_closed, type(mr).__name__)
    owner = mr._dev_id
    target = set()
    for value in devices:
        dev_id = _resolve_device_id(value)
        if dev_id != owner:
            target.add(dev_id)
    current = set(_peer_ids(mr))
    bad = sorted(d for d in target - current if not _can_access_peer(owner, d))
    if bad:
        raise ValueError(f"Device {owner} cannot access peer(s): {', '.join(str(d) for d in bad)}")
    _set_peer_access(mr, sorted(target - current), sorted(current - target))
