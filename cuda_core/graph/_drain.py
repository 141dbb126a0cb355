# SPDX-License-Identifier: Apache-2.0
"""Releasing what graphs kept alive, as soon as CUDA lets go of it.

Every node version's owners (see ``_attachments``) are kept by a CUDA user
object whose token maps to them in :data:`_LIVE`.  CUDA calls the user
object's destructor, ``cc_user_object_release`` in the extension, when the
last graph definition, clone or executable holding it is destroyed and its
launches have finished, on a driver thread where neither CUDA nor Python
may be called.  The destructor queues the token and wakes Python:

* **CPython**: ``Py_AddPendingCall`` (stable ABI; needs neither the GIL nor
  a thread state).  The interpreter runs the pending call on the main thread
  between two bytecodes; it calls :func:`drain` through the extension's
  ``extern "Python"`` ``cc_release_drain``.
* **PyPy** (whose C API emulation the extension does not call): one byte
  written to a pipe; a daemon thread blocked in ``os.read`` (the GIL
  released) wakes and runs :func:`drain`.

At most one wakeup is outstanding: the C side sets a flag when it sends one
and the drain clears it before taking the queue, so a burst of releases
(64 graphs destroyed at once) gives one drain that releases all of them.
A send that fails (CPython's queue of pending calls is full) is retried by a
C thread of the extension, backing off from 1 ms to 100 ms, until one
succeeds; nothing is stranded meanwhile, and cuda_core still drains at its
own safe points (node and graph creation, instantiation, ``close()``, ...).

The drain runs on a Python thread, never the driver's.  Each attachment
records the context current when it was made; the drain makes it current
(pushing it only if another one is) while it drops the attachment's claims
and its last reference to the owners, so those releases, and the owners'
finalizers that run at once (CPython), free CUDA objects in that context
whatever thread or moment the drain runs in.  It also runs in relaxed
stream-capture mode, so that interrupting a capture does not invalidate it.
Because a pending call can interrupt any Python code of the main thread,
every lock a release takes is reentrant (see ``_memory._release`` and
``_event_share``), and drains may nest.

The wakeup is turned on when ``cuda_core.graph`` is imported, off at
interpreter exit (``atexit``: the pending calls left are run by the
interpreter before its exit functions) and in a child made by ``fork()``
(which cannot use CUDA, so no user object is ever released there).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import traceback
from typing import Any

from cuda_core._context import _ctx_out, _pop, _push_if_needed
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError
from cuda_core._event_share import _EventClaim
from cuda_core._memory._release import _AllocationClaim

__all__: list[str] = []

# token -> what a CUDA user object keeps alive: an _Attachment, an
# _ExecAttachments, or another object (dropped as it is).
_LIVE: dict[int, Any] = {}
# Guards _ExecAttachments.holders (the PyPy drain thread counts down while
# another thread may count up); reentrant, as a pending call may nest.
_holders_lock = threading.RLock()
_DRAIN_BATCH = 256
_CLAIMS = (_AllocationClaim, _EventClaim)

# The wakeup modes of cc_drain_configure (user_objects.c).
_OFF = 0
_PENDING_CALL = 1
_PIPE = 2


class _Attachment:
    """What one node version uses: plain owners and claims (dropped on release).

    ``ctx`` is the ``CUcontext`` current when it was made (None if none
    was), which :func:`drain` makes current around its release.
    """

    __slots__ = ("owners", "ctx")

    owners: tuple[object, ...]
    ctx: Any  # CUcontext cdata or None

    def __init__(self, owners: tuple[object, ...]) -> None:
        self.owners = owners
        self.ctx = _ctx_now()

    def release(self) -> None:
        """Drop the claims among the owners (the owners go with this object)."""
        for owner in self.owners:
            if isinstance(owner, _CLAIMS):
                owner.drop()


class _ExecAttachments:
    """An executable graph's own attachments (node-view updates; append-only).

    Held by the executable's user object, and for the time of an
    instantiation or a whole-graph update by a second, temporary one: the
    claims are dropped when the last of them is released.
    """

    __slots__ = ("atts", "holders")

    atts: list[_Attachment]
    holders: int

    def __init__(self) -> None:
        self.atts = []
        self.holders = 0


def drain() -> None:
    """Release the attachments whose user objects CUDA has released.

    Safe to run nested (a release that runs a finalizer which drains): each
    drain takes its own tokens from the queue into a buffer of its own.
    """
    if not lib.cc_released_pending():
        return
    buf = ffi.new("unsigned long long[]", _DRAIN_BATCH)
    # A drain may interrupt a stream capture of this thread (a pending call):
    # the releases are not part of it, so they run in relaxed capture mode.
    mode = ffi.new("CUstreamCaptureMode *", lib.CU_STREAM_CAPTURE_MODE_RELAXED)
    relaxed = not lib.cuThreadExchangeStreamCaptureMode(mode)
    try:
        while True:
            n = lib.cc_take_released(buf, _DRAIN_BATCH)
            if not n:
                return
            for token in ffi.unpack(buf, n):
                _release_token(token)
    finally:
        if relaxed:
            lib.cuThreadExchangeStreamCaptureMode(mode)


def live_count() -> int:
    """Return the number of objects currently kept alive by user objects (tests)."""
    drain()
    return len(_LIVE)


def hold(token: int, obj: object) -> None:
    """Record that the user object of ``token`` keeps ``obj`` alive."""
    if obj.__class__ is _ExecAttachments:
        with _holders_lock:
            obj.holders += 1
    _LIVE[token] = obj


def _release_token(token: int) -> None:
    obj = _LIVE.pop(token, None)
    cls = obj.__class__
    if cls is _Attachment:
        atts = [obj]
    elif cls is _ExecAttachments:
        with _holders_lock:
            obj.holders -= 1
            last = obj.holders <= 0
        if not last:
            return
        atts, obj.atts = obj.atts, []
    else:
        return
    del obj
    _release_in_context(atts)


def _release_in_context(atts: list[_Attachment]) -> None:
    """Release and let go of ``atts``, each with its context current.

    The context is pushed only if another one is current.  The last
    reference to an attachment goes while it is pushed, so the owners'
    finalizers that run at once (CPython) free CUDA objects in it too.
    """
    while atts:
        att = atts.pop()
        pushed = False
        if att.ctx is not None:
            try:
                pushed = _push_if_needed(att.ctx)
            except CUDAError:  # the context is gone: release without it (failures warn)
                pushed = False
        try:
            att.release()
            del att
        finally:
            if pushed:
                _pop()


def _ctx_now() -> Any:
    """The calling thread's current ``CUcontext`` cdata, or None."""
    out = _ctx_out()
    if lib.cuCtxGetCurrent(out) or out[0] == ffi.NULL:
        return None
    return out[0]


# --------------------------------------------------------------------------
# The wakeup.
# --------------------------------------------------------------------------
@ffi.def_extern()  # type: ignore[untyped-decorator]  # ffi is typed Any
def cc_release_drain() -> None:
    """The pending call's drain (CPython, main thread; the C side cleared its flag)."""
    drain()


class _Waiter:
    """The PyPy wakeup: a pipe the extension writes to, and the thread reading it."""

    def __init__(self) -> None:
        self.rfd, self.wfd = os.pipe()
        os.set_blocking(self.wfd, False)
        self.thread = threading.Thread(
            target=self._run, name="cuda_core graph release", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        rfd = self.rfd
        while True:
            try:
                data = os.read(rfd, 64)
            except OSError:
                return
            if not data:  # the write end was closed: the wakeup is off
                os.close(rfd)
                return
            lib.cc_drain_acknowledge()
            try:
                drain()
            except Exception:  # noqa: BLE001 - keep the thread alive
                traceback.print_exc(file=sys.stderr)

    def close(self) -> None:
        """Close the write end (after the extension stopped writing): the thread ends."""
        os.close(self.wfd)


_waiter: _Waiter | None = None


def _start(mode: int | None = None) -> int:
    """Turn the wakeup on in ``mode`` (default: this interpreter's); return the mode.

    Tests switch modes with it; it is called once at import otherwise.
    """
    global _waiter
    if mode is None:
        mode = _PIPE if sys.implementation.name == "pypy" else _PENDING_CALL
    old = _waiter
    if mode == _PIPE:
        _waiter = _Waiter()
        lib.cc_drain_configure(_PIPE, _waiter.wfd)
    elif lib.cc_drain_configure(mode, -1):
        raise ValueError(f"wakeup mode {mode} is not available in this interpreter")
    else:
        _waiter = None
    if old is not None:  # the extension writes to the new pipe, or to none
        old.close()
    return mode


def _stop() -> None:
    """Turn the wakeup off (releases then wait for cuda_core's safe points)."""
    global _waiter
    lib.cc_drain_configure(_OFF, -1)
    waiter, _waiter = _waiter, None
    if waiter is not None:
        waiter.close()


def _after_fork_child() -> None:
    """In a child made by fork(): the wakeup is off, the parent's pipe closed."""
    global _waiter
    lib.cc_drain_configure(_OFF, -1)
    waiter, _waiter = _waiter, None
    if waiter is not None:
        for fd in (waiter.rfd, waiter.wfd):
            try:
                os.close(fd)
            except OSError:
                pass


_start()
atexit.register(_stop)
os.register_at_fork(after_in_child=_after_fork_child)
