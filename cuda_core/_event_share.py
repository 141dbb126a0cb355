# SPDX-License-Identifier: Apache-2.0
"""Events that graph nodes use: the claims that keep a shared ``CUevent`` alive.

An event that graph nodes record or wait for is shared: :func:`claim_event`
gives each node version a claim on the ``CUevent`` and moves the Event to a
third open twin whose ``close()`` drops only the Event's own claim, so the
``CUevent`` is destroyed when the last of the Event and those nodes lets go.
Events no graph uses keep the plain twins and their hot paths.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

from cuda_core._context import primary_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, in_forked_child, warn_cuda
from cuda_core._event import Event
from cuda_core._lifetime import drop_guard, handle_finalizer, open_class

if TYPE_CHECKING:
    from typing import Any

__all__: list[str] = []

# Reentrant: a claim may be dropped by a graph drain that interrupts, on the
# same thread, code holding the lock (a pending call on CPython, or a
# finalizer); the counts it guards change in steps that call nothing.
_share_lock = threading.RLock()


class _EventShare:
    """A ``CUevent`` used by graph nodes as well as by its Event: counts the claims.

    The last claim to go destroys the event (see the module docstring).
    """

    __slots__ = ("handle", "ctx", "claims")

    handle: Any  # CUevent cdata
    ctx: Any  # the event's CUcontext (made current to destroy it), or NULL
    claims: int

    def __init__(self, c_event: Any, c_ctx: Any) -> None:
        self.handle = c_event
        self.ctx = ffi.NULL if c_ctx is None else c_ctx
        self.claims = 1  # the Event's

    def drop(self, raise_errors: bool) -> None:
        """Drop one claim; destroy the event with the last (raise or warn on failure)."""
        with _share_lock:
            self.claims -= 1
            if self.claims:
                return
        if in_forked_child() or sys.is_finalizing():
            return
        # The last claim may go in a graph drain or a finalizer, on any
        # thread: the event's own context is made current around the destroy.
        status = lib.cc_event_destroy_in(self.ctx, self.handle)
        if not status:
            return
        if raise_errors:
            check(status)
        warn_cuda("cuEventDestroy (last graph use of an Event)", status)

    def drop_unclosed(self, c_event: Any) -> None:
        """The guard's release once the Event is shared (PyPy): drop the unclosed Event's claim."""
        self.drop(raise_errors=False)


class _EventClaim:
    """A graph node's claim on an Event's ``CUevent`` (from :func:`claim_event`)."""

    __slots__ = ("_share",)

    _share: _EventShare | None

    def __init__(self, share: _EventShare) -> None:
        self._share = share

    def drop(self) -> None:
        """Give the claim up (idempotent; a failing destroy warns)."""
        share, self._share = self._share, None
        if share is not None:
            share.drop(raise_errors=False)

    def clone(self) -> _EventClaim:
        """Return a new claim on the same ``CUevent`` (for a new node version that keeps it)."""
        share = self._share
        with _share_lock:
            share.claims += 1  # type: ignore[union-attr]  # only a held claim is cloned
        return _EventClaim(share)  # type: ignore[arg-type]

    def __del__(self) -> None:
        if self._share is not None:
            self.drop()


def claim_event(event: Event) -> _EventClaim:
    """Return a claim that keeps the ``CUevent`` of open Event ``event`` alive for a graph node."""
    with _share_lock:
        share = event._share
        if share is None:
            share = event._share = _EventShare(event._handle, primary_handle(event._ctx))
            if drop_guard(event):  # PyPy: a new guard drops the Event's claim instead
                event._guard = ffi.gc(event._handle, share.drop_unclosed)
            plain = type(event)._plain
            event.__class__ = (
                _OpenSharedEvent
                if plain is Event
                else open_class(plain, _shared_event_finalizer, variant="shared")
            )
        share.claims += 1
    return _EventClaim(share)


def _shared_event_close(self: Event) -> None:
    """close() of a shared event: drop the Event's claim (see the module docstring)."""
    if self._closed:
        return
    self._closed = True
    self.__class__ = type(self)._plain
    drop_guard(self)
    share = self._share
    assert share is not None  # set by claim_event before the class switch
    share.drop(raise_errors=True)


# ``__del__`` of shared events: drop the Event's claim if it was never closed.
_shared_event_finalizer = handle_finalizer(lambda event: event._share.drop(raise_errors=False))

#: The class of open events that graph nodes use too (see :func:`claim_event`).
_OpenSharedEvent = open_class(
    Event, _shared_event_finalizer, variant="shared", close=_shared_event_close
)
