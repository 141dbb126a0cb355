# SPDX-License-Identifier: Apache-2.0
"""CUDA events: :class:`Event`, :class:`EventOptions` and :class:`IPCEventDescriptor`.

Events are created by :meth:`Device.create_event
<cuda_core.Device.create_event>` or :meth:`Stream.record
<cuda_core.Stream.record>`.  An event owns its ``CUevent``: :meth:`Event.close`
(or leaving a ``with`` block) destroys it; a garbage-collection finalizer is
only the safety net and reports failures as :class:`~cuda_core.CUDAWarning`.
An event that graph nodes use is shared instead (see ``_event_share``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cuda_core._lifetime as _lifetime
import cuda_core._slots as _slots
from cuda_core._coerce import as_flag, as_int_handle, check_or_create_options
from cuda_core._context import (
    _bufs,
    _context_of,
    _current_ctx,
    _pop,
    _push_if_needed,
    _tls,
    primary_handle,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import (
    CUDAError,
    check,
    check_allowing,
    driver_error,
    in_forked_child,
    shown_as,
    status_in,
    warn_cuda,
)
from cuda_core._lifetime import GUARD_HANDLES, ClosedFlag, open_class, require_open

if TYPE_CHECKING:
    from typing import Callable, ClassVar

    from cuda_core._context import Context
    from cuda_core._device import Device
    from cuda_core._event_share import _EventShare

__all__ = ["Event", "EventOptions", "IPCEventDescriptor"]

_DISABLE_TIMING = lib.CU_EVENT_DISABLE_TIMING
_BLOCKING_SYNC = lib.CU_EVENT_BLOCKING_SYNC
_INTERPROCESS = lib.CU_EVENT_INTERPROCESS
_NOT_READY = (lib.CUDA_ERROR_NOT_READY,)
_INVALID_HANDLE = (lib.CUDA_ERROR_INVALID_HANDLE,)
# The messages of Event - Event, as cuda.core words them.
_ELAPSED_TIMING_DISABLED = (
    "Both Events must be created with timing enabled in order to subtract them; use "
    "EventOptions(timing_enabled=True) when creating both events."
)
_ELAPSED_NOT_RECORDED = (
    "Both Events must be recorded before they can be subtracted; use Stream.record() to "
    "record both events to a stream."
)
_ELAPSED_NOT_COMPLETED = (
    "One or both events have not completed; use Event.sync(), Stream.sync(), or "
    "Device.sync() to wait for the events to complete before subtracting them."
)
_IPC_HANDLE_SIZE = lib.CU_IPC_HANDLE_SIZE
# Hot-path entry points bound once: a module global is cheaper than ``lib.X``.
_cc_event_new = lib.cc_event_new
_cc_status = lib.cc_status
_cuEventDestroy = lib.cuEventDestroy
_cuEventSynchronize = lib.cuEventSynchronize
_cc_event_destroy_in = lib.cc_event_destroy_in
_gc = ffi.gc
_NULL = ffi.NULL


@dataclass
class EventOptions:
    """Options for creating an :class:`Event`.

    Attributes
    ----------
    timing_enabled : bool, optional
        Record timing data so that ``end - start`` gives elapsed milliseconds
        (default False).
    blocking_sync : bool, optional
        Make :meth:`Event.sync` block (yield the CPU) rather than busy-wait
        until the event completes (default False).
    ipc_enabled : bool, optional
        Make the event shareable with other processes (default False).  Such
        events cannot record timing and must be created with
        :meth:`Stream.record <cuda_core.Stream.record>`.

    Raises
    ------
    TypeError
        When a field is not a bool.  Options asking for both ``ipc_enabled``
        and ``timing_enabled`` construct, as in ``cuda.core``; creating an
        event with them raises TypeError.
    """

    timing_enabled: bool | None = False
    blocking_sync: bool | None = False
    ipc_enabled: bool | None = False

    def __post_init__(self) -> None:
        # None counts as False.
        self.timing_enabled = bool(
            as_flag(self.timing_enabled, "EventOptions.timing_enabled", none_ok=True)
        )
        self.blocking_sync = bool(
            as_flag(self.blocking_sync, "EventOptions.blocking_sync", none_ok=True)
        )
        self.ipc_enabled = bool(as_flag(self.ipc_enabled, "EventOptions.ipc_enabled", none_ok=True))


@shown_as(CUDAError)
class _ElapsedTimeError(CUDAError, RuntimeError):
    """``Event - Event`` failed; also a RuntimeError, as upstream raises."""


class Event(ClosedFlag):
    """A marker in a stream's sequence of work.

    Events tell when the work recorded before them has finished
    (:attr:`is_done`, :meth:`sync`), order work between streams
    (:meth:`Stream.wait <cuda_core.Stream.wait>`) and, with timing enabled,
    measure the GPU time between two of them::

        start = device.create_event({"timing_enabled": True})
        end = device.create_event({"timing_enabled": True})
        stream.record(start)
        ...  # enqueue work
        stream.record(end)
        end.sync()
        print(end - start, "ms")

    Events cannot be constructed directly; use :meth:`Device.create_event
    <cuda_core.Device.create_event>` or :meth:`Stream.record
    <cuda_core.Stream.record>`.  Two Event objects are equal when they wrap
    the same ``CUevent``.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    # _flags holds the CU_EVENT_* creation flags; _ipc_desc is set only once
    # exported (left unset otherwise: fewer stores on the hot path).
    # _share: an _EventShare once a graph node uses the event, else None.
    # _guard: the safety net of an open event on PyPy (see GUARD_HANDLES).
    __slots__ = (
        "_handle",
        "_ctx",
        "_flags",
        "_ipc_desc",
        "_closed",
        "_share",
        "_guard",
        "__weakref__",
    )

    _handle: Any  # CUevent cdata
    _ctx: Context  # None only where no context was current: creating the event failed then
    _flags: int
    _ipc_desc: IPCEventDescriptor
    _closed: bool
    _share: _EventShare | None
    _guard: Any  # ffi.gc cdata, on PyPy only
    _plain: ClassVar[type[Event]]  # set on the open twins (see open_class)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Event objects cannot be instantiated directly. Please use Stream APIs (record) "
            "or Device APIs (create_event)."
        )

    @property
    def _h(self) -> int:
        """The ``CUevent`` as an int (equality, hashing, :attr:`handle`)."""
        return as_int_handle(self._handle)

    def __sub__(self, other: Event) -> float:
        """Return the GPU time in milliseconds from ``other`` to ``self``.

        Raises
        ------
        RuntimeError
            When timing is disabled on either event, one of them was never
            recorded, or one has not completed yet; the message says which
            and how to fix it (the exception is also a
            :class:`~cuda_core.CUDAError` carrying the driver status).
        CUDAError
            For any other driver failure.
        """
        if not isinstance(other, Event):
            return NotImplemented
        require_open(self._closed or other._closed, "Event")
        try:
            out = _tls.b.f32
        except AttributeError:
            out = _bufs().f32
        status = lib.cuEventElapsedTime(out, other._handle, self._handle)
        if not status:
            return out[0]  # type: ignore[no-any-return]
        if status_in(status, _INVALID_HANDLE):
            if (self._flags | other._flags) & _DISABLE_TIMING:
                message = _ELAPSED_TIMING_DISABLED
            else:
                message = _ELAPSED_NOT_RECORDED
        elif status_in(status, _NOT_READY):
            message = _ELAPSED_NOT_COMPLETED
        else:
            check(status, "cuEventElapsedTime")
        err = driver_error(status)
        raise _ElapsedTimeError(message, code=err.code, name=err.name)

    def __rsub__(self, other: object) -> Any:
        return NotImplemented

    def __isub__(self, other: object) -> Any:
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return self._h == other._h

    def __hash__(self) -> int:
        return hash((Event, self._h))

    def __repr__(self) -> str:
        # As cuda.core: the handle only (0x0 once closed).
        return f"<Event handle={0 if self._closed else self._h:#x}>"

    def __reduce__(self) -> tuple[Any, ...]:
        if not self._flags & _INTERPROCESS:
            raise TypeError(
                "only IPC-enabled events can be pickled (create one with "
                "stream.record(options=EventOptions(ipc_enabled=True)))"
            )
        return _event_from_ipc, (self.ipc_descriptor,)

    def close(self) -> None:
        """Destroy the event.  Closing twice is a no-op.

        Raises
        ------
        CUDAError
            If the driver fails to destroy it.
        """
        if self._closed:
            return
        self._closed = True
        self.__class__ = type(self)._plain  # closed: no finalizer needed (see open_class)
        share = self._share
        if share is not None:  # graph nodes still use the CUevent
            share.drop(raise_errors=True)
            return
        status = _cuEventDestroy(self._handle)
        if status:  # hot path: check() only on failure
            check(status)

    def sync(self) -> None:
        """Block until the work recorded before this event has completed.

        With ``blocking_sync`` the calling thread sleeps; otherwise it spins.
        The GIL is released while waiting.
        """
        require_open(self._closed, "Event")
        status = _cuEventSynchronize(self._handle)
        if status:  # hot path: check() only on failure
            check(status)

    @classmethod
    def from_ipc_descriptor(cls, ipc_descriptor: IPCEventDescriptor) -> Event:
        """Open an event exported by another process.

        The imported event lives in the calling thread's current context (make
        a device current first).

        Parameters
        ----------
        ipc_descriptor : IPCEventDescriptor
            From :attr:`ipc_descriptor` of the event in the exporting process.

        Returns
        -------
        Event
        """
        if not isinstance(ipc_descriptor, IPCEventDescriptor):
            raise TypeError(
                f"ipc_descriptor must be an IPCEventDescriptor, not {type(ipc_descriptor).__name__}"
            )
        c_ipc = ffi.new("CUipcEventHandle *")
        ffi.memmove(c_ipc, ipc_descriptor._reserved, _IPC_HANDLE_SIZE)
        ctx = _context_of(_current_ctx())
        out = ffi.new("CUevent *")
        check(lib.cuIpcOpenEventHandle(out, c_ipc[0]))
        flags = _DISABLE_TIMING | _INTERPROCESS
        if ipc_descriptor._blocking:
            flags |= _BLOCKING_SYNC
        self = _adopt(out[0], ctx, flags, cls)
        self._ipc_desc = ipc_descriptor
        return self

    @property
    def is_done(self) -> bool:
        """bool: Whether all work recorded before this event has completed.

        Raises
        ------
        CUDAError
            For any driver status other than success or "not ready".
        """
        require_open(self._closed, "Event")
        return check_allowing(lib.cuEventQuery(self._handle), _NOT_READY)

    @property
    def handle(self) -> int:
        """int: The address of the underlying ``CUevent``."""
        require_open(self._closed, "Event")
        return self._h

    @property
    def device(self) -> Device:
        """Device: The device this event was created on (None if unknown)."""
        if self._ctx is None:
            return None
        return _slots.device_class()(self._ctx._device_id)

    @property
    def context(self) -> Context:
        """Context: The context this event was created in."""
        return self._ctx

    @property
    def is_timing_enabled(self) -> bool:
        """bool: Whether the event records timing data."""
        return not self._flags & _DISABLE_TIMING

    @property
    def is_blocking_sync(self) -> bool:
        """bool: Whether :meth:`sync` blocks (yields the CPU) instead of spinning."""
        return bool(self._flags & _BLOCKING_SYNC)

    uses_blocking_sync = is_blocking_sync

    @property
    def is_ipc_enabled(self) -> bool:
        """bool: Whether the event can be shared with other processes."""
        return bool(self._flags & _INTERPROCESS)

    @property
    def ipc_descriptor(self) -> IPCEventDescriptor:
        """IPCEventDescriptor: A picklable description for :meth:`from_ipc_descriptor`.

        Raises
        ------
        RuntimeError
            If the event is not IPC-enabled.
        """
        try:
            return self._ipc_desc
        except AttributeError:
            pass
        if not self._flags & _INTERPROCESS:
            raise RuntimeError("Event is not IPC-enabled")
        require_open(self._closed, "Event")
        c_ipc = ffi.new("CUipcEventHandle *")
        check(lib.cuIpcGetEventHandle(c_ipc, self._handle))
        self._ipc_desc = IPCEventDescriptor._init(
            bytes(ffi.buffer(c_ipc, _IPC_HANDLE_SIZE)), self._flags & _BLOCKING_SYNC
        )
        return self._ipc_desc


class IPCEventDescriptor:
    """A picklable description of an IPC-enabled :class:`Event` (its 64-byte handle).

    Obtained from :attr:`Event.ipc_descriptor`; pass it to another process
    (e.g. through :mod:`multiprocessing`) and open it there with
    :meth:`Event.from_ipc_descriptor`.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_reserved", "_blocking")

    _reserved: bytes
    _blocking: bool

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "IPCEventDescriptor objects cannot be instantiated directly. Please use Event "
            "APIs (Event.ipc_descriptor)."
        )

    @staticmethod
    def _init(reserved: bytes, blocking_sync: object) -> IPCEventDescriptor:
        if not isinstance(reserved, bytes) or len(reserved) != _IPC_HANDLE_SIZE:
            raise ValueError(
                f"an IPC event handle is {_IPC_HANDLE_SIZE} bytes, got {reserved!r:.40}"
            )
        self = object.__new__(IPCEventDescriptor)
        self._reserved = reserved
        self._blocking = bool(blocking_sync)
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IPCEventDescriptor):
            return NotImplemented
        return self._reserved == other._reserved

    def __hash__(self) -> int:
        return hash(self._reserved)

    def __reduce__(self) -> tuple[Any, ...]:
        return IPCEventDescriptor._init, (self._reserved, self._blocking)

    def __repr__(self) -> str:
        return f"<IPCEventDescriptor {self._reserved[:8].hex()}... blocking_sync={self._blocking}>"


def _destroy_event(c_event: Any, c_ctx: Any = None) -> None:
    """Destroy an unclosed event with ``c_ctx`` current (None: as is); warn on failure.

    For the finalizers and guards.  A forked child leaves the parent's event alone.
    """
    if in_forked_child():
        return
    status = _cc_event_destroy_in(_NULL if c_ctx is None else c_ctx, c_event)
    if status:
        warn_cuda("cuEventDestroy (Event finalizer)", status)


# The guards' releases (PyPy), one per context: ``ffi.gc`` passes only the handle.
_releasers: dict[int, Callable[[Any], None]] = {}


def _releaser(ctx: Context | None) -> Callable[[Any], None]:
    """Return the guard release (see GUARD_HANDLES) of events in Context ``ctx``."""
    release = _releasers.get(ctx._h) if ctx is not None else _release_event
    if release is None:
        c_ctx = primary_handle(ctx)  # only a retained primary context is made current
        release = _release_event if c_ctx is None else functools.partial(_release_event_in, c_ctx)
        _releasers[ctx._h] = release  # type: ignore[union-attr]  # ctx is not None here
    return release


def _release_event_in(c_ctx: Any, c_event: Any) -> None:
    """The guard's release of an unclosed event of context ``c_ctx``."""
    _destroy_event(c_event, c_ctx)  # looked up at call time


def _event_from_ipc(descriptor: IPCEventDescriptor) -> Event:
    """Unpickle an IPC event (the receiving process opens the handle)."""
    return Event.from_ipc_descriptor(descriptor)


#: ``__del__`` of open events: _destroy_event is looked up at call time.
_event_finalizer = _lifetime.handle_finalizer(
    lambda event: _destroy_event(event._handle, primary_handle(event._ctx))
)


def _release_event(c_event: Any) -> None:
    """The guard's release of an unclosed event (PyPy, see GUARD_HANDLES)."""
    _destroy_event(c_event)  # looked up at call time


#: The class of open events that are not IPC-enabled (Event and its open twins
#: share one layout; their close() and sync() skip the closed check, see
#: open_class).  An instance is open: close() makes it an Event.
_OpenEvent = _lifetime.open_handle_class(
    Event, _event_finalizer, _cuEventDestroy, _cuEventSynchronize
)
#: The class of open IPC-enabled events, a second twin: ``type(e) is
#: _OpenEvent`` then also says "not IPC" (Stream.record's hot path).
_OpenIpcEvent = _lifetime.open_handle_class(
    Event, _event_finalizer, _cuEventDestroy, _cuEventSynchronize, variant="ipc"
)


def _new_event(cls: type[Event], options: Any, ctx: Context | None, bound: bool) -> Event:
    """Create an event of class ``cls`` in Context ``ctx`` (None: the current one).

    ``bound`` is False for :meth:`Device.create_event`, where IPC events are
    refused (they must come from :meth:`Stream.record`).
    """
    if options is None:
        flags = _DISABLE_TIMING
    else:
        flags = _event_flags(options, bound)
    if ctx is None:
        ctx = _context_of(_current_ctx())
        c_ctx = ffi.NULL if ctx is None else ctx._handle  # NULL: the driver reports it
    else:
        c_ctx = ctx._handle
    c_event = _cc_event_new(c_ctx, flags)
    if not c_event:
        check(_cc_status())
    self = _adopt(c_event, ctx, flags, cls)
    if flags & _INTERPROCESS:
        try:
            self.ipc_descriptor  # noqa: B018 - export eagerly, as upstream does
        except BaseException:
            self.close()
            raise
    return self


def _adopt(c_event: Any, ctx: Context | None, flags: int, cls: type[Event] = Event) -> Event:
    """Make the Event object of ``c_event``: the one constructor every path uses.

    ``ctx`` is the event's Context (None: unknown), ``flags`` its
    ``CU_EVENT_*`` flags.  The object is an instance of an open twin of
    ``cls`` (the IPC twin for an interprocess event of the library's own
    class, which also gets the PyPy guard).
    """
    if cls is Event:
        self: Event = _OpenIpcEvent() if flags & _INTERPROCESS else _OpenEvent()
        if GUARD_HANDLES:
            self._guard = _gc(c_event, _releaser(ctx))
    else:
        self = open_class(cls, _event_finalizer)()
    self._handle = c_event
    self._ctx = ctx  # type: ignore[assignment]  # see _ctx
    self._flags = flags
    self._closed = False
    self._share = None
    return self


def _event_flags(options: Any, bound: bool) -> int:
    """Return the ``CU_EVENT_*`` flags for ``options`` (EventOptions, dict)."""
    opts = check_or_create_options(EventOptions, options, "Event options")
    flags = 0 if opts.timing_enabled else _DISABLE_TIMING
    if opts.blocking_sync:
        flags |= _BLOCKING_SYNC
    if opts.ipc_enabled:
        if not bound:
            raise TypeError("IPC-enabled events must be bound; use Stream.record for creation.")
        if opts.timing_enabled:
            raise TypeError("IPC-enabled events cannot use timing.")
        flags |= _INTERPROCESS
    return flags


def _wait_on_stream(c_waiter: Any, c_other: Any, c_ctx: Any) -> None:
    """Make ``c_waiter`` wait for the work queued on ``c_other`` so far.

    A temporary event is created in ``c_ctx`` (the other stream's context;
    None: the current one), recorded on ``c_other``, waited on, and destroyed
    (the driver keeps it alive until the wait is resolved).
    """
    out = ffi.new("CUevent *")
    pushed = _push_if_needed(c_ctx)
    try:
        check(lib.cuEventCreate(out, _DISABLE_TIMING))
        c_event = out[0]
        try:
            check(lib.cuEventRecord(c_event, c_other))
            check(lib.cuStreamWaitEvent(c_waiter, c_event, 0))
        finally:
            check(lib.cuEventDestroy(c_event))
    finally:
        if pushed:
            _pop()
