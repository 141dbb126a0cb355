# SPDX-License-Identifier: Apache-2.0
"""How a Buffer's memory is freed, and in what order.

``Buffer.close`` frees explicitly (failures raise); the open Buffer class's
``__del__`` (:func:`_buffer_finalizer`) is the garbage-collection safety net
(failures become :class:`~cuda_core.CUDAWarning`).  ``Buffer._release`` says
what frees the memory: None for views, the :class:`_InlinePool` marker for
an allocation from a pool the resource does not own (``cuMemFreeAsync`` on
the Buffer's ``_dstream``), an :class:`_OwnedPoolRelease` for one from an
owned pool (which then learns the allocation is gone), else a
:class:`_Release` that calls the resource's ``deallocate``.

Shared allocations
------------------
A graph node that uses a Buffer (a memcpy or memset operand) keeps the
*allocation* alive, not the Buffer object: :func:`claim_allocation` turns
the Buffer's release into a :class:`_SharedRelease`, which counts claims
(the Buffer's own, and one per node version that uses the memory).
``Buffer.close`` and the Buffer's finalizer then drop only the Buffer's
claim; the memory is freed when the last claim goes.  Buffers no graph ever
used keep their release untouched, so allocating and closing them costs
nothing more.

Context
-------
A release that runs later -- the garbage collector's, a PyPy guard's, a
graph drain's -- may run on any thread, with no context or another one
current.  Each binds the owning context itself: the context of the stream
that orders the free (a default-stream token is bound to the context
current at allocation, :func:`~cuda_core._stream_release.bind_for_release`), else
the primary context of the resource's device.  ``cuMemFreeAsync`` does the
push, the free and the pop in one extension call (``cc_free_async_in``);
releases of several calls (an owned pool's, a resource's ``deallocate``)
run under :func:`~cuda_core._context.call_in_context`.
"""

from __future__ import annotations

import sys
import threading
import warnings
from functools import partial
from typing import TYPE_CHECKING, Any, final

from cuda_core._context import _PRIMARY, call_in_context
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._default_stream import default_stream as _default_stream
from cuda_core._errors import CUDAWarning, check, in_forked_child, warn_cuda
from cuda_core._lifetime import GUARD_HANDLES, drop_guard
from cuda_core._stream import Stream as _Stream
from cuda_core._stream import _as_stream, _OpenStream
from cuda_core._stream_release import owning_context

if TYPE_CHECKING:
    from typing import Callable

    from cuda_core._memory._buffer import Buffer
    from cuda_core._memory._ipc import IPCBufferDescriptor
    from cuda_core._memory._memory_resource import MemoryResource
    from cuda_core._memory._owned_pool import _OwnedPool
    from cuda_core.graph import GraphBuilder

__all__: list[str] = []

_NULL = ffi.NULL
# Reentrant: a claim may be dropped by a graph drain that interrupts, on the
# same thread, code holding the lock (a pending call on CPython, or a
# finalizer); the counts it guards change in steps that call nothing.
_claims_lock = threading.RLock()
_cuMemFreeAsync = lib.cuMemFreeAsync
_cc_free_async_in = lib.cc_free_async_in
_is_finalizing = sys.is_finalizing


def _buffer_finalizer(self: Buffer) -> None:
    """``__del__`` of open buffers (see :func:`~cuda_core._lifetime.open_class`).

    The garbage-collection safety net; close() (or ``with``) is the lifetime
    tool.  Failures become CUDAWarning.
    """
    try:
        rel = self._release
        if rel is None or self._closed:
            return
    except AttributeError:  # never filled in
        return
    self._closed = True
    if _is_finalizing():  # at exit the driver reclaims everything
        return
    if rel is _InlinePool:
        _collect_inline(self._ptr, self._dstream, self._mr)
    else:
        rel._collect()


def _buffer_guard_fired(self: Buffer, guard: object) -> None:
    """The PyPy guard's release (see :func:`guard_open_buffer`): the finalizer's."""
    _buffer_finalizer(self)


_guard_token = ffi.cast("void *", 0)
_gc = ffi.gc


def guard_open_buffer(self: Buffer) -> Buffer:
    """Give the new open Buffer ``self`` its safety net on PyPy; return it.

    On PyPy (:data:`~cuda_core._lifetime.GUARD_HANDLES`) the open twins of
    Buffer classes carry no ``__del__``: each open Buffer holds a guard in
    ``_guard`` whose release is :func:`_buffer_finalizer`, detached by
    ``close()``.  PyPy keeps every object of a class with ``__del__`` alive
    through one more collection, closed or not (about 0.3 µs of a pool
    allocate+close cycle on a CPU host); a detached guard dies young.
    CPython keeps the ``__del__`` (which a closed Buffer never runs) and
    does not call this.
    """
    self._guard = _gc(_guard_token, partial(_buffer_guard_fired, self))
    return self


def _close_open_buffer(self: Buffer, stream: _Stream | GraphBuilder | None = None) -> None:
    # close() of an open buffer (its class says it is open): the general path.
    s: _Stream | None
    if stream is None:
        s = None
    else:
        cls = stream.__class__
        # The class test makes ``stream`` a Stream in the first branch.
        s = stream if cls is _OpenStream or cls is _Stream else _as_stream(stream, check_open=False)  # type: ignore[assignment]
    self._closed = True
    self.__class__ = type(self)._plain  # closed: no finalizer needed (see open_class)
    if GUARD_HANDLES:
        drop_guard(self)
    c_ptr = self._ptr
    self._ptr = 0
    self._size = 0
    self._mr = None
    self._extra = None
    rel = self._release
    if rel is _InlinePool:
        status = _free_in_context(c_ptr, self._dstream if s is None else s)
        if status:
            check(status, "Buffer.close")
    elif rel is not None:
        rel.run(s)


def open_buffer_close(plain: type) -> Callable[..., None]:
    """Return ``close()`` for the open twin of Buffer class ``plain``.

    The common case, ``close()`` with no stream of a pool allocation the
    Buffer frees itself (:class:`_InlinePool`), is written out and retypes
    the object to ``plain`` from the closure, cheaper on CPython than
    reading ``type(self)._plain``; everything else goes through
    ``_close_open_buffer``.
    """

    def close(self: Buffer, stream: _Stream | GraphBuilder | None = None) -> None:
        if stream is None and self._release is _InlinePool:
            self._closed = True
            self.__class__ = plain  # closed: no finalizer needed (see open_class)
            s = self._dstream
            if s.__class__ is _OpenStream:  # an open owned stream names its context
                status = _cuMemFreeAsync(self._ptr, s._handle)
            else:
                status = _free_in_context(self._ptr, s)
            self._ptr = 0
            self._size = 0
            self._mr = None
            self._extra = None
            if status:
                check(status, "Buffer.close")
        else:
            _close_open_buffer(self, stream)

    if not GUARD_HANDLES:
        return close

    def close_guarded(self: Buffer, stream: _Stream | GraphBuilder | None = None) -> None:
        close(self, stream)
        drop_guard(self)  # closed now (a failure after closing leaves a guard that does nothing)

    return close_guarded


class _Release:
    """Frees one allocation through ``mr.deallocate`` (owned by one Buffer).

    ``Buffer.close`` frees through :meth:`run` (failures raise) and
    ``_buffer_finalizer`` through :meth:`_collect` (failures become
    :class:`~cuda_core.CUDAWarning`); each runs only while the Buffer is
    open and marks it closed first, so the memory is freed once.
    """

    __slots__ = ("mr", "ptr", "size", "stream")
    mr: MemoryResource
    ptr: int
    size: int
    stream: _Stream | None

    def __init__(self, mr: MemoryResource, ptr: int, size: int, stream: _Stream | None) -> None:
        self.mr = mr
        self.ptr = ptr
        self.size = size
        self.stream = stream

    def _collect(self) -> None:
        if in_forked_child():
            return  # the parent's memory: a forked child must not free it
        stream = self._recorded_stream()
        try:
            call_in_context(
                _release_context(stream, self.mr),
                self.mr.deallocate,
                self.ptr,
                self.size,
                stream=stream,
            )
        except Exception as exc:  # noqa: BLE001 - a finalizer must not raise
            warnings.warn(
                f"{type(self.mr).__name__}.deallocate({self.ptr:#x}, {self.size}) failed while "
                f"a Buffer was garbage collected; the memory may have leaked: {exc}",
                CUDAWarning,
                stacklevel=2,
            )

    def run(self, stream: _Stream | None) -> None:
        if stream is None:
            stream = self._recorded_stream()
        call_in_context(
            owning_context(stream), self.mr.deallocate, self.ptr, self.size, stream=stream
        )

    def _recorded_stream(self) -> _Stream:
        """The stream to free on when none is given: the recorded one if usable.

        A closed recorded stream cannot order anything.  Resources whose
        ``_accepts_closed_stream`` is true (the synchronous ones, which then
        synchronize the stream's context) still receive it; the others get
        the default stream.
        """
        stream = self.stream
        if stream is None:
            return _default_stream()
        if stream._closed and not getattr(self.mr, "_accepts_closed_stream", False):
            return _default_stream()
        return stream


@final  # so that ``rel is _InlinePool`` tells the type checker what ``rel`` is
class _InlinePool:
    """Marker in ``Buffer._release``: a pool allocation the Buffer frees itself.

    Allocations from a pool the resource does not own (the default pools,
    imported IPC memory, graph allocations) need nothing beyond
    ``cuMemFreeAsync`` on the deallocation stream, so ``Buffer.close`` does
    that directly and ``_buffer_finalizer`` is the safety net: no separate
    object per allocation.
    """


def _free_order_handle(stream: _Stream | None) -> Any:
    """The handle that orders a ``cuMemFreeAsync`` on ``stream`` (a Stream or None).

    A closed (destroyed) stream cannot order anything, and None names none:
    both give NULL, the legacy default stream.
    """
    return _NULL if stream is None or stream._closed else stream._handle


def _free_in_context(c_ptr: int, stream: _Stream | None) -> int:
    """``cuMemFreeAsync`` of ``c_ptr`` on ``stream`` (explicit close); return the status.

    The context ``stream`` is bound to, if any (an owned stream's, a bound
    default-stream token's: see :func:`~cuda_core._stream_release.owning_context`),
    is made current around the free when it is not; otherwise the free runs
    in whatever is current, as the caller chose.
    """
    c_ctx = owning_context(stream)
    if c_ctx is None:
        return _cuMemFreeAsync(c_ptr, _free_order_handle(stream))  # type: ignore[no-any-return]
    status: int = _cc_free_async_in(c_ctx, c_ptr, _free_order_handle(stream))
    return status


def _release_context(stream: _Stream | None, mr: object = None) -> Any:
    """The ``CUcontext`` a deferred release must run in (None: whatever is current).

    The context of the stream that orders it; failing that, the retained
    primary context of the memory resource's device.
    """
    c_ctx = owning_context(stream)
    if c_ctx is None and mr is not None:
        try:
            device_id = mr.device_id  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a resource without a device
            return None
        c_ctx = _PRIMARY.get(device_id) if isinstance(device_id, int) else None
    return c_ctx


def _collect_inline(c_ptr: int, stream: _Stream | None, mr: object = None) -> None:
    """Free a garbage-collected _InlinePool allocation; failures become CUDAWarning.

    The free runs in the owning context (see :func:`_release_context`),
    whatever is current on the collecting thread.
    """
    if in_forked_child():
        return  # the parent's memory: a forked child must not free it
    c_ctx = _release_context(stream, mr)
    if c_ctx is None:
        status = _cuMemFreeAsync(c_ptr, _free_order_handle(stream))
    else:
        status = _cc_free_async_in(c_ctx, c_ptr, _free_order_handle(stream))
    if status:
        warn_cuda(f"cuMemFreeAsync({c_ptr:#x}) of a garbage-collected Buffer", status)


class _OwnedPoolRelease(_Release):
    """Frees an allocation of an owned pool, then tells the pool (``pool``).

    The pool (``_owned_pool._OwnedPool``) counts outstanding allocations so
    that a closed pool is destroyed only after its last buffer is freed; the
    stream that ordered the free is passed along, so the pool can wait for it.
    """

    __slots__ = ("pool",)
    pool: _OwnedPool

    def _collect(self) -> None:
        if in_forked_child():
            return  # the parent's memory: a forked child must not free it
        stream = self.stream
        try:
            # The free and the pool's release (a stream synchronization and
            # the pool's destruction after its last allocation) in the
            # owning context, whatever is current here.
            call_in_context(_release_context(stream, self.mr), self._collect_here, stream)
        except Exception as exc:  # noqa: BLE001 - a finalizer must not raise
            # The owning context could not be made current: the memory is lost.
            warnings.warn(
                f"cuMemFreeAsync({self.ptr:#x}) of a garbage-collected Buffer was skipped; "
                f"the memory may have leaked: {exc}",
                CUDAWarning,
                stacklevel=2,
            )
            self.pool.release(raise_errors=False)

    def _collect_here(self, stream: _Stream | None) -> None:
        try:
            _collect_inline(self.ptr, stream)
        finally:
            self.pool.release(raise_errors=False, stream=stream)

    def run(self, stream: _Stream | None) -> None:
        if stream is None:
            stream = self.stream
        if stream.__class__ is _OpenStream:  # an open owned stream names its context
            self._run_here(stream)
        else:
            call_in_context(owning_context(stream), self._run_here, stream)

    def _run_here(self, stream: _Stream | None) -> None:
        try:
            status = _cuMemFreeAsync(self.ptr, _free_order_handle(stream))
            if status:
                check(status, "Buffer.close")
        finally:
            self.pool.release(raise_errors=True, stream=stream)


class _Extra:
    """Rarely used Buffer state: owner, IPC descriptor, driver pointer attributes."""

    __slots__ = ("owner", "ipc", "mapped", "attrs")
    owner: object
    ipc: IPCBufferDescriptor | None
    mapped: bool
    attrs: tuple[bool, bool, int, bool] | None

    def __init__(self, owner: object, ipc_descriptor: IPCBufferDescriptor | None) -> None:
        self.owner = owner
        self.ipc = ipc_descriptor
        self.mapped = ipc_descriptor is not None
        self.attrs = None


class _SharedRelease:
    """The release of an allocation that graph nodes use too (see the module docstring).

    Holds what the Buffer's release was (``inner``: a :class:`_Release`, or
    None for an :class:`_InlinePool` allocation, freed with
    ``cuMemFreeAsync`` on ``stream``) and the number of claims.  ``run`` and
    ``_collect`` are the Buffer's (close and finalizer); :meth:`drop` is a
    graph node's.  Whoever drops the last claim frees the memory.
    """

    __slots__ = ("inner", "_ptr", "_stream", "_mr", "claims")
    inner: _Release | None
    _ptr: int
    _stream: _Stream | None
    _mr: MemoryResource | None  # for the context of a collected free (see _release_context)
    claims: int

    def __init__(self, buf: Buffer) -> None:
        rel = buf._release
        self._ptr = buf._ptr
        self._mr = buf._mr
        if rel is _InlinePool:
            self.inner = None
            self._stream = getattr(buf, "_dstream", None)
        else:
            self.inner = rel  # type: ignore[assignment]  # claim_allocation: a _Release here
            self._stream = None
        self.claims = 1  # the Buffer's

    @property
    def stream(self) -> _Stream | None:
        """The stream that orders the free (see ``Buffer.set_deallocation_stream``)."""
        inner = self.inner
        return self._stream if inner is None else inner.stream

    @stream.setter
    def stream(self, value: _Stream | None) -> None:
        inner = self.inner
        if inner is None:
            self._stream = value
        else:
            inner.stream = value

    @property
    def ptr(self) -> int:
        """The address freed."""
        inner = self.inner
        return self._ptr if inner is None else inner.ptr

    @ptr.setter
    def ptr(self, value: int) -> None:
        inner = self.inner
        if inner is None:
            self._ptr = value
        else:
            inner.ptr = value

    @property
    def size(self) -> int:
        """The size passed to ``deallocate`` (0 for a pool allocation)."""
        inner = self.inner
        return 0 if inner is None else inner.size

    @size.setter
    def size(self, value: int) -> None:
        if self.inner is not None:
            self.inner.size = value

    def _take(self) -> bool:
        """Drop one claim; return True if it was the last."""
        with _claims_lock:
            self.claims -= 1
            return self.claims == 0

    def run(self, stream: _Stream | None) -> None:
        """``Buffer.close``: drop the Buffer's claim; free now if no graph holds the memory."""
        if stream is not None:
            self.stream = stream  # the stream the caller chose orders the eventual free
        if self._take():
            self._free(stream, raise_errors=True)

    def _collect(self) -> None:
        """The Buffer's finalizer: drop its claim (a failing free warns)."""
        if self._take():
            self._free(None, raise_errors=False)

    def drop(self) -> None:
        """A graph node's claim goes (a failing free warns: this runs at a safe point)."""
        if self._take():
            self._free(None, raise_errors=False)

    def _free(self, stream: _Stream | None, raise_errors: bool) -> None:
        inner = self.inner
        if inner is None:
            if stream is None:
                stream = self._stream
            if raise_errors:
                status = _free_in_context(self._ptr, stream)
                if status:
                    check(status, "Buffer.close")
            else:
                _collect_inline(self._ptr, stream, self._mr)
        elif raise_errors:
            inner.run(stream)
        else:
            inner._collect()


class _AllocationClaim:
    """A graph node's claim on a Buffer's allocation (from :func:`claim_allocation`).

    :meth:`drop` gives it up, once; collecting a claim that was never
    dropped drops it (the safety net).
    """

    __slots__ = ("_shared",)
    _shared: _SharedRelease | None

    def __init__(self, shared: _SharedRelease) -> None:
        self._shared = shared

    def drop(self) -> None:
        """Give the claim up (idempotent)."""
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.drop()

    def clone(self) -> _AllocationClaim:
        """Return a new claim on the same allocation (for a new node version that keeps it)."""
        shared = self._shared
        with _claims_lock:
            shared.claims += 1  # type: ignore[union-attr]  # a dropped claim is never cloned
        return _AllocationClaim(shared)  # type: ignore[arg-type]  # as above

    def __del__(self) -> None:
        if self._shared is not None and not _is_finalizing():
            self.drop()


def claim_allocation(buf: Buffer) -> object:
    """Return what keeps the memory of open Buffer ``buf`` allocated for a graph node.

    An :class:`_AllocationClaim` for a Buffer that frees its memory; the
    Buffer's ``owner`` (or None) for a non-owning one, which frees nothing.
    """
    rel = buf._release
    if rel is None:
        extra = buf._extra
        return None if extra is None else extra.owner
    with _claims_lock:
        if not isinstance(rel, _SharedRelease):  # _ipc_imports' subclass is shared already
            rel = buf._release = _SharedRelease(buf)
        rel.claims += 1
    return _AllocationClaim(rel)
