# SPDX-License-Identifier: Apache-2.0
"""CUDA streams: :class:`Stream`, its creation and the conversion of stream-like objects.

A stream is *owned* (made by :meth:`Device.create_stream
<cuda_core.Device.create_stream>`, destroyed by :meth:`Stream.close`) or
*borrowed* (a handle or a ``__cuda_stream__`` object; close drops the owner).
Options: :mod:`cuda_core._stream_options`; default streams:
:mod:`cuda_core._default_stream`; ``__cuda_stream__``: :mod:`cuda_core._stream_protocol`.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import cuda_core._lifetime as _lifetime
import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle, check_or_create_options, driver_handle
from cuda_core._context import (
    _bufs,
    _context_of,
    _current_ctx,
    _tls,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check, destroy_or_warn, shown_as
from cuda_core._event import Event, _new_event, _OpenEvent, _wait_on_stream
from cuda_core._lifetime import GUARD_HANDLES, ClosedFlag, open_class, require_open
from cuda_core._stream_options import (
    _LEAST_PRIORITY,
    StreamOptions,
    _checked_priority,
    _priority_range,
)
from cuda_core._stream_protocol import _handle_address, _stream_address

if TYPE_CHECKING:
    from cuda_core._context import Context
    from cuda_core._device import Device
    from cuda_core._device_resources import DeviceResources
    from cuda_core._event import EventOptions
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import IsStreamType

__all__ = ["Stream"]

_NON_BLOCKING = lib.CU_STREAM_NON_BLOCKING
_INTERPROCESS = lib.CU_EVENT_INTERPROCESS
# Hot-path entry points bound once: a module global is cheaper than ``lib.X``.
_cc_stream_create = lib.cc_stream_create
_cc_stream_new = lib.cc_stream_new
_cc_last_handle = lib.cc_last_handle
_cc_status = lib.cc_status
_cuStreamDestroy = lib.cuStreamDestroy
_cuStreamSynchronize = lib.cuStreamSynchronize
_gc = ffi.gc
_cuEventRecord = lib.cuEventRecord
_cc_stream_destroy_in = lib.cc_stream_destroy_in
_NULL = ffi.NULL

# Kinds of Stream objects.
_OWNED, _BORROWED, _BUILTIN = 0, 1, 2
_MAX_DEFAULT_HANDLE = 2  # CU_STREAM_LEGACY is 1, CU_STREAM_PER_THREAD is 2


class Stream(ClosedFlag):
    """An ordered queue of GPU work.

    Work submitted to one stream runs in submission order; work in different
    streams may overlap, and :meth:`wait` (with an :class:`~cuda_core.Event`
    or another stream) orders them.  Streams cannot be constructed directly:
    use :meth:`Device.create_stream <cuda_core.Device.create_stream>` or
    :meth:`Stream.from_handle`.  Two Stream objects are equal when they wrap
    the same ``CUstream``.

    Raises
    ------
    RuntimeError
        If constructed directly instead of by ``Device.create_stream``
        or :meth:`from_handle`.
    """

    # _owner (foreign object kept alive), _nonblocking and _priority are set
    # only when known (unset slots cost nothing on the creation hot path).
    __slots__ = (
        "_handle",
        "_h",
        "_kind",
        "_owner",
        "_ctx",
        "_nonblocking",
        "_priority",
        "_closed",
        "_guard",  # an open owned stream's safety net on PyPy (see GUARD_HANDLES)
        "__weakref__",
    )

    _handle: Any  # CUstream cdata
    _h: int
    _kind: int
    _owner: object
    _ctx: Context | None
    _nonblocking: bool
    _priority: int
    _closed: bool
    _guard: Any  # ffi.gc cdata, on PyPy only
    _plain: ClassVar[type[Stream]]  # on the open twin only (see open_class)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Stream objects cannot be instantiated directly. "
            "Please use Device APIs (create_stream) or other Stream APIs (from_handle)."
        )

    @classmethod
    def _legacy_default(cls) -> Stream:
        """Return a legacy default stream object (handle ``CU_STREAM_LEGACY``)."""
        return _adopt(ffi.cast("CUstream", 1), 1, None, _BUILTIN, cls=cls)

    @classmethod
    def _per_thread_default(cls) -> Stream:
        """Return a per-thread default stream object (handle ``CU_STREAM_PER_THREAD``)."""
        return _adopt(ffi.cast("CUstream", 2), 2, None, _BUILTIN, cls=cls)

    @classmethod
    def _init(
        cls,
        obj: IsStreamType | None = None,
        options: StreamOptions | dict[str, Any] | None = None,
        device_id: int | None = None,
        ctx: Context | None = None,
    ) -> Stream:
        """Create an owned stream in the current context, or wrap ``obj``."""
        if obj is not None:
            if options is not None:
                raise ValueError("obj and options cannot be both specified")
            return cls._wrap(obj)
        if ctx is None:
            ctx = _context_of(_current_ctx())
            if ctx is None:
                raise CUDAError("no CUDA context is current; call Device.set_current() first")
        return _create_stream(cls, options, ctx)

    @classmethod
    def _wrap(cls, obj: object) -> Stream:
        """Wrap a Stream or a ``__cuda_stream__`` object as a borrowed Stream keeping it alive."""
        if isinstance(obj, Stream):
            require_open(obj._closed, "Stream")
            return _adopt(obj._handle, obj._h, obj._ctx, _BORROWED, obj, cls)
        return _borrow(_stream_address(obj), obj, cls)

    def __cuda_stream__(self) -> tuple[int, int]:
        """Return ``(0, address)``: the ``__cuda_stream__`` protocol (version 0)."""
        require_open(self._closed, "Stream")
        return (0, self._h)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stream):
            return NotImplemented
        return self._h == other._h

    def __hash__(self) -> int:
        return hash(self._h)

    def __repr__(self) -> str:
        # As cuda.core: the stream and its context (0x0 for a closed stream's handle).
        handle = 0 if self._closed else self._h
        return f"<Stream handle={handle:#x} context={self._repr_context():#x}>"

    def close(self) -> None:
        """Destroy an owned stream, or drop a borrowed stream's foreign owner.

        Closing twice is a no-op, and closing :data:`LEGACY_DEFAULT_STREAM` or
        :data:`PER_THREAD_DEFAULT_STREAM` does nothing.

        Raises
        ------
        CUDAError
            If the driver fails to destroy an owned stream.
        """
        if self._closed or self._kind == _BUILTIN:
            return
        self._closed = True
        if self._kind == _OWNED:
            self.__class__ = type(self)._plain  # closed: no finalizer needed (see open_class)
            status = _cuStreamDestroy(self._handle)
            if status:  # hot path: check() only on failure
                check(status)
        else:
            self._owner = None

    def sync(self) -> None:
        """Block until all work submitted to this stream has completed.

        The GIL is released while waiting.
        """
        require_open(self._closed, "Stream")
        status = _cuStreamSynchronize(self._handle)
        if status:  # hot path: check() only on failure
            check(status)

    def record(
        self, event: Event | None = None, options: EventOptions | dict[str, Any] | None = None
    ) -> Event:
        """Record an event on this stream.

        Parameters
        ----------
        event : Event, optional
            An existing event to record again.  When None, a new event is
            created in this stream's context with ``options``.
        options : EventOptions or dict, optional
            Options for the new event (only without ``event``).

        Returns
        -------
        Event
            The recorded event.

        Raises
        ------
        TypeError
            If ``event`` is not an Event, or is IPC-enabled (those are
            recorded once, at creation).
        ValueError
            If both ``event`` and ``options`` are given.
        """
        if event.__class__ is _OpenEvent and options is None and not self._closed:
            # The common case: re-recording an event (an _OpenEvent is open and
            # not IPC-enabled), checked in one go.
            status = _cuEventRecord(event._handle, self._handle)
            if status:  # hot path: check() only on failure
                check(status)
            return event
        require_open(self._closed, "Stream")
        if event is None:
            event = _new_event(Event, options, self._event_context(), True)
        else:
            if not isinstance(event, Event):
                raise TypeError(f"event must be an Event or None, not {type(event).__name__}")
            if options is not None:
                raise ValueError("options apply only to a new event; do not pass an event too")
            if event._flags & _INTERPROCESS:
                raise TypeError(
                    "IPC-enabled events should not be re-recorded, instead create a "
                    "new event by supplying options."
                )
            require_open(event._closed, "Event")
        status = _cuEventRecord(event._handle, self._handle)
        if status:  # hot path: check() only on failure
            check(status)
        return event

    def wait(self, event_or_stream: Event | Stream | GraphBuilder | IsStreamType) -> None:
        """Make future work on this stream wait for an event or for another stream.

        Parameters
        ----------
        event_or_stream : Event, Stream or object with ``__cuda_stream__``
            An event: wait until it completes.  A stream: wait until the work
            submitted to it so far completes (done by recording a temporary
            event on it).

        Raises
        ------
        TypeError
            (also a ValueError) for anything else.
        """
        require_open(self._closed, "Stream")
        if isinstance(event_or_stream, Event):
            require_open(event_or_stream._closed, "Event")
            check(lib.cuStreamWaitEvent(self._handle, event_or_stream._handle, 0))
            return
        try:
            other = _as_stream(event_or_stream)
        except TypeError as exc:
            raise _WaitArgumentError(
                "only an Event, a Stream, or an object supporting __cuda_stream__ can be "
                f"waited on, got {type(event_or_stream).__name__}"
            ) from exc
        ctx = other._event_context()
        _wait_on_stream(self._handle, other._handle, None if ctx is None else ctx._handle)

    @staticmethod
    def from_handle(handle: int) -> Stream:
        """Wrap an existing ``CUstream``/``cudaStream_t`` address as a borrowed Stream.

        The stream's lifetime is not managed: the foreign owner must keep it
        alive while this object is used.

        Parameters
        ----------
        handle : int or CUstream
            The stream address (or a ``cuda.bindings`` ``CUstream``).

        Returns
        -------
        Stream
        """
        return _borrow(_handle_address(handle))

    def create_graph_builder(self) -> GraphBuilder:
        """Create a :class:`~cuda_core.graph.GraphBuilder` that captures work on this stream.

        Returns
        -------
        GraphBuilder
        """
        require_open(self._closed, "Stream")
        return _slots.graph_builder()._init(stream=self, is_stream_owner=False)

    def _event_context(self) -> Context | None:
        """Return the Context new events for this stream belong in (None: current).

        The default-stream handles (0 = NULL, 1 = legacy, 2 = per-thread) have
        no context of their own: they act in whatever context is current.
        """
        if self._h <= _MAX_DEFAULT_HANDLE:
            return None
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = self._query_context()
        return ctx

    def _repr_context(self) -> int:
        """The address of this stream's context for ``repr`` (0 where it cannot be read)."""
        ctx = self._ctx
        if ctx is None and not self._closed:
            try:
                if self._h <= _MAX_DEFAULT_HANDLE:  # acts in the current context
                    ctx = _context_of(_current_ctx())
                elif self._kind != _BORROWED:
                    ctx = self._event_context()
                # A borrowed handle may be gone: cuStreamGetCtx on it would crash.
            except Exception:  # a repr never raises (no driver, a destroyed context)
                ctx = None
        return 0 if ctx is None else ctx._h

    def _query_context(self) -> Context | None:
        out = ffi.new("CUcontext *")
        check(lib.cuStreamGetCtx(self._handle, out))
        return _context_of(out[0])

    @property
    def handle(self) -> int:
        """int: The address of the underlying ``CUstream`` (``int(handle)`` also works)."""
        require_open(self._closed, "Stream")
        return self._h

    @property
    def is_nonblocking(self) -> bool:
        """bool: Whether the stream does not synchronize with the legacy default stream."""
        require_open(self._closed, "Stream")
        try:
            return self._nonblocking
        except AttributeError:
            pass
        out = ffi.new("unsigned int *")
        check(lib.cuStreamGetFlags(self._handle, out))
        value = bool(out[0] & _NON_BLOCKING)
        if self._h > _MAX_DEFAULT_HANDLE:  # default streams: never cached
            self._nonblocking = value
        return value

    @property
    def priority(self) -> int:
        """int: The stream priority (a lower number is a higher priority)."""
        require_open(self._closed, "Stream")
        try:
            return self._priority
        except AttributeError:
            pass
        out = ffi.new("int *")
        check(lib.cuStreamGetPriority(self._handle, out))
        value: int = out[0]
        if self._h > _MAX_DEFAULT_HANDLE:  # default streams: never cached
            self._priority = value
        return value

    @property
    def device(self) -> Device:
        """Device: The device whose context this stream belongs to.

        For the default streams this is the device of the calling thread's
        current context.
        """
        require_open(self._closed, "Stream")
        ctx = self._event_context()
        if ctx is None:
            ctx = _context_of(_current_ctx())
            if ctx is None:
                return _slots.device_class()()
        return _slots.device_class()(ctx._device_id)

    @property
    def context(self) -> Context:
        """Context: The context this stream belongs to.

        The default streams have no context of their own: for them this is the
        calling thread's current context (None if there is none).
        """
        require_open(self._closed, "Stream")
        ctx = self._event_context()
        if ctx is None:
            return _context_of(_current_ctx())  # type: ignore[return-value]  # None: no context
        return ctx

    @property
    def resources(self) -> DeviceResources:
        """DeviceResources: The resources of this stream's context (see ``Context.resources``)."""
        return self.context.resources


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
@shown_as(TypeError)
class _WaitArgumentError(TypeError, ValueError):
    """Stream.wait got something that is neither an event nor a stream."""


def _as_stream(obj: Any, *, check_open: bool = True, for_launch: bool = False) -> Stream:
    """Return ``obj`` as a Stream: the one stream coercer.

    An exact Stream passes at once (the hot path); a GraphBuilder gives its
    stream (RuntimeError once closed); a ``__cuda_stream__`` object or a
    ``cuda.bindings`` ``CUstream`` becomes a borrowed Stream keeping ``obj``
    alive; anything else raises TypeError ``"Stream or GraphBuilder expected,
    got <type>"``.  ``check_open``: RuntimeError for a closed stream.
    ``for_launch``: as ``launch`` words it (None's own TypeError, a warning
    for protocol objects, no bare ``CUstream``).
    """
    if obj.__class__ is not _OpenStream and obj.__class__ is not Stream:
        obj = _convert_stream(obj, for_launch)
    if check_open and obj._closed:  # hot path: the call only on failure
        require_open(True, "Stream")
    stream: Stream = obj
    return stream


def _convert_stream(obj: object, for_launch: bool) -> Stream:
    """The slow part of :func:`_as_stream`: anything but an exact Stream."""
    if isinstance(obj, Stream):
        return obj
    if obj is None and for_launch:
        raise TypeError(
            "stream is required and must not be None; pass device.default_stream "
            "explicitly to use the default stream."
        )
    builder = _slots.graph_builder_if_loaded()
    if builder is not None and isinstance(obj, builder):
        stream = obj.stream
        if stream is None:  # a closed builder has no stream
            raise RuntimeError("Graph builder has been closed.")
        return stream
    if hasattr(obj, "__cuda_stream__"):
        wrapped = Stream._wrap(obj)
        if for_launch:
            warnings.warn(
                "Passing foreign stream objects to this function via the stream protocol is "
                "deprecated. Convert the object explicitly using Stream(obj) instead.",
                DeprecationWarning,
                stacklevel=4,  # the caller of launch()
            )
        return wrapped
    # A cuda.bindings CUstream without the protocol (launch takes none).
    address = None if for_launch else driver_handle(obj, "CUstream")
    if address is not None:
        return _borrow(address, obj)
    raise TypeError(f"Stream or GraphBuilder expected, got {type(obj).__name__}")


def _stream_destroy_bound(c_stream: Any) -> int:
    """``cuStreamDestroy`` with the stream's own context current (see release.c)."""
    return _cc_stream_destroy_in(_NULL, c_stream)  # type: ignore[no-any-return]


#: Finalizer and guards: destroy an unclosed owned stream in its own context; warn on failure.
_destroy_stream = destroy_or_warn(_stream_destroy_bound, "cuStreamDestroy (Stream finalizer)")


def _create_stream(
    cls: type[Stream], options: StreamOptions | dict[str, Any] | None, ctx: Context
) -> Stream:
    """Create an owned stream of class ``cls`` in Context ``ctx`` (made current if needed)."""
    if options is None and cls is Stream:
        return _new_default_stream(ctx)
    if options is None:
        flags = _NON_BLOCKING
        priority = _LEAST_PRIORITY.get(ctx._device_id)
        if priority is None:
            priority = _priority_range(ctx)[0]
        nonblocking = True
    else:
        opts = check_or_create_options(StreamOptions, options, "Stream options")
        nonblocking = opts.nonblocking
        flags = _NON_BLOCKING if nonblocking else 0
        priority = _checked_priority(ctx, opts.priority)
    try:
        b = _tls.b
    except AttributeError:
        b = _bufs()
    status = _cc_stream_create(ctx._handle, flags, priority, b.stream)
    if status:  # hot path: check() only on failure
        check(status)
    known = None if options is None else (nonblocking, priority)
    return _adopt(b.stream[0], b.stream_int[0], ctx, cls=cls, options=known)


def _new_default_stream(ctx: Context) -> Stream:
    """Create an owned stream with the default options in Context ``ctx``."""
    c_stream = _cc_stream_new(ctx._handle)
    if not c_stream:
        check(_cc_status())
    if GUARD_HANDLES:  # PyPy: its JIT inlines the one constructor
        return _adopt(c_stream, _cc_last_handle(), ctx)
    # CPython: _adopt's owned stream inline (the call was a tenth of the
    # create/close cycle); tests/device/test_adopt.py checks both agree.
    self = _OpenStream()
    self._handle = c_stream
    self._h = _cc_last_handle()
    self._kind = _OWNED
    self._ctx = ctx
    self._closed = False
    return self


def _adopt(
    c_stream: Any,
    h: int,
    ctx: Context | None,
    kind: int = _OWNED,
    owner: object = None,
    cls: type[Stream] = Stream,
    options: tuple[bool, int] | None = None,
) -> Stream:
    """Make the Stream of ``c_stream`` (address ``h``): the one constructor every path uses.

    Owned streams are open twins of ``cls`` (the PyPy guard for the library's
    own class keeps ``owner``, a green context, alive); borrowed and built-in
    ones plain instances keeping ``owner`` alive.  ``options``:
    ``(nonblocking, priority)`` where known (else asked of the driver).
    """
    if kind == _OWNED:
        if cls is Stream:
            self: Stream = _OpenStream()
            if GUARD_HANDLES:
                release = (
                    _release_stream if owner is None else partial(_release_stream, owner=owner)
                )
                self._guard = _gc(c_stream, release)
        else:
            self = open_class(cls, _stream_finalizer)()
    else:  # never the open twin: that class means "owned and open"
        self = object.__new__(cls.__dict__.get("_plain", cls))
    self._handle = c_stream
    self._h = h
    self._kind = kind
    self._ctx = ctx
    self._closed = False
    if owner is not None:
        self._owner = owner
    if options is not None:
        self._nonblocking, self._priority = options
    return self


def _borrow(address: int, owner: object = None, cls: type[Stream] = Stream) -> Stream:
    """A borrowed ``cls`` over the stream at ``address`` that keeps ``owner`` alive."""
    c_stream = ffi.cast("CUstream", address)
    return _adopt(c_stream, as_int_handle(c_stream), None, _BORROWED, owner, cls)


#: ``__del__`` of open owned streams (borrowed and built-in streams own
#: nothing and are plain Streams): _destroy_stream is looked up at call time.
_stream_finalizer = _lifetime.handle_finalizer(lambda stream: _destroy_stream(stream._handle))


def _release_stream(c_stream: Any, owner: object = None) -> None:
    """PyPy guard's release of an unclosed owned stream; ``owner`` lives until then."""
    _destroy_stream(c_stream)  # looked up at call time


#: Open owned streams (one layout with Stream; close() makes one a Stream, and
#: its close() and sync() skip the closed check: see open_class).
_OpenStream = _lifetime.open_handle_class(
    Stream, _stream_finalizer, _cuStreamDestroy, _cuStreamSynchronize
)
