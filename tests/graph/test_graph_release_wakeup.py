# SPDX-License-Identifier: Apache-2.0
"""The wakeup that drains released graph attachments without a later cuda_core call.

These run without a GPU: ``cc_user_object_release`` is the C function CUDA
calls as a user object's destructor, so calling it from a thread of our own
is what the driver does.  Both wakeups are tested on both interpreters where
they exist: the pending call (CPython) and the pipe read by a daemon thread
(PyPy's, which runs on CPython too).  Between a release and the check the
tests call nothing of cuda_core: they sleep and collect.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time
import warnings
import weakref

import pytest

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._event_share import _EventClaim, _EventShare
from cuda_core._event_share import _share_lock as _event_lock
from cuda_core._memory._release import _AllocationClaim, _SharedRelease
from cuda_core._memory._release import _claims_lock as _alloc_lock
from cuda_core.graph import _attachments, _drain

CPYTHON = sys.implementation.name == "cpython"
MODES = ["pending_call", "pipe"]


class _Owner:
    """Stands for what a node keeps alive (a callback, a kernel-argument tuple)."""


def _stats(fail_next=-1):
    out = ffi.new("unsigned long long[4]")
    scheduled = ffi.new("int *")
    retrying = ffi.new("int *")
    lib.cc_drain_stats(out, scheduled, retrying, fail_next)
    return {
        "sent": out[0],
        "coalesced": out[1],
        "failed": out[2],
        "retry_threads": out[3],
        "scheduled": scheduled[0],
        "retrying": retrying[0],
    }


def _delta(after, before):
    return {k: after[k] - before[k] for k in ("sent", "coalesced", "failed", "retry_threads")}


def _hold(obj):
    token = next(_attachments._TOKENS)
    _drain.hold(token, obj)
    return token


def _release(tokens):
    """Release ``tokens`` as the driver does: from a thread that is not Python's main one."""

    def run():
        for token in tokens:
            lib.cc_user_object_release(ffi.cast("void *", token))

    th = threading.Thread(target=run)
    th.start()
    th.join()
    return th


def _wait_until(predicate, timeout=1.0):
    """Poll with sleep and gc.collect only (no cuda_core call) until ``predicate()``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
        gc.collect()
    return True


def _quiet():
    """Wait until no wakeup is outstanding and the queue is empty."""
    gc.collect()  # graphs of earlier tests go now, not during the next one
    assert _wait_until(lambda: not _stats()["scheduled"] and not _stats()["retrying"], 2.0)
    _drain.drain()


@pytest.fixture(params=MODES)
def mode(request):
    """The wakeup in each mode; the default one is restored after."""
    if request.param == "pending_call" and not CPYTHON:
        pytest.skip("Py_AddPendingCall is CPython's: PyPy wakes its drain through the pipe")
    chosen = _drain._PENDING_CALL if request.param == "pending_call" else _drain._PIPE
    _drain._start(chosen)
    _quiet()
    yield chosen
    _stats(fail_next=0)
    _drain._start()
    _quiet()


@pytest.fixture
def wakeup_off():
    """No wakeup: only explicit drains take the queue."""
    _drain._stop()
    _quiet()
    yield
    _drain._start()


def test_default_mode_by_interpreter():
    # The module turned its wakeup on at import: a pending call on CPython, the pipe on PyPy.
    if CPYTHON:
        assert _drain._waiter is None
        assert lib.cc_drain_configure(_drain._PENDING_CALL, -1) == 0
    else:
        assert _drain._waiter is not None and _drain._waiter.thread.is_alive()
        assert lib.cc_drain_configure(_drain._PENDING_CALL, -1) == -1
        with pytest.raises(ValueError, match="not available"):
            _drain._start(_drain._PENDING_CALL)
        _drain._start()


def test_released_owners_go_without_a_later_call(mode):
    owners = [_Owner() for _ in range(3)]
    refs = [weakref.ref(o) for o in owners]
    tokens = [_hold(o) for o in owners]
    del owners
    gc.collect()
    assert all(r() is not None for r in refs)  # the tokens keep them
    _release(tokens)
    assert _wait_until(lambda: all(r() is None for r in refs))
    assert not any(t in _drain._LIVE for t in tokens)


def test_drain_runs_on_a_python_thread_not_the_releasing_one(mode, monkeypatch):
    seen = []
    real = _drain._release_token

    def recording(token):
        seen.append(threading.get_ident())
        real(token)

    monkeypatch.setattr(_drain, "_release_token", recording)
    owner = _Owner()
    ref = weakref.ref(owner)
    token = _hold(owner)
    del owner
    releaser = _release([token])
    assert _wait_until(lambda: ref() is None)
    assert seen and releaser.ident not in seen
    if mode == _drain._PENDING_CALL:
        assert seen == [threading.main_thread().ident]
    else:
        assert seen == [_drain._waiter.thread.ident]


@pytest.mark.skipif(not CPYTHON, reason="the pending call is CPython's wakeup")
def test_64_releases_at_once_send_one_pending_call(mode):
    if mode != _drain._PENDING_CALL:
        pytest.skip("exact for the pending call only: the pipe's thread may drain in between")
    owners = [_Owner() for _ in range(64)]
    refs = [weakref.ref(o) for o in owners]
    tokens = [_hold(o) for o in owners]
    del owners
    before = _stats()

    def burst():
        time.sleep(0.1)  # the main thread is asleep by then
        for token in tokens:
            lib.cc_user_object_release(ffi.cast("void *", token))

    # The main thread runs no pending call inside time.sleep(): all 64
    # releases happen while the first wakeup is outstanding.  (Started
    # right away, the burst could meet the main thread between two
    # bytecodes, which would run the first wakeup's drain in between.)
    th = threading.Thread(target=burst)
    th.start()
    time.sleep(0.5)
    th.join()
    assert _wait_until(lambda: all(r() is None for r in refs))
    assert _delta(_stats(), before) == {
        "sent": 1,
        "coalesced": 63,
        "failed": 0,
        "retry_threads": 0,
    }


def test_failed_wakeup_is_retried(mode):
    owner = _Owner()
    ref = weakref.ref(owner)
    token = _hold(owner)
    del owner
    before = _stats(fail_next=3)  # the send and the first two retries fail
    _release([token])
    assert _wait_until(lambda: ref() is None)
    assert _wait_until(lambda: not _stats()["retrying"])
    assert _delta(_stats(), before) == {
        "sent": 1,
        "coalesced": 0,
        "failed": 3,
        "retry_threads": 1,
    }


@pytest.mark.skipif(not CPYTHON, reason="the pending-call queue is CPython's")
def test_full_pending_call_queue_is_retried(mode):
    if mode != _drain._PENDING_CALL:
        pytest.skip("the pipe has no queue to fill")
    noop = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda _: 0)
    add = ctypes.pythonapi.Py_AddPendingCall
    add.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    add.restype = ctypes.c_int
    owner = _Owner()
    ref = weakref.ref(owner)
    token = _hold(owner)
    del owner
    filled = []
    before = _stats()

    def fill_then_release():
        time.sleep(0.1)  # the main thread is asleep: it runs no pending call
        n = 0
        while n < 100_000 and add(ctypes.cast(noop, ctypes.c_void_p), None) == 0:
            n += 1
        filled.append(n)
        lib.cc_user_object_release(ffi.cast("void *", token))  # finds the queue full

    th = threading.Thread(target=fill_then_release)
    th.start()
    time.sleep(0.5)
    th.join()
    if filled[0] >= 100_000:
        pytest.skip("this interpreter's pending-call queue did not fill")
    assert _wait_until(lambda: ref() is None)
    assert _wait_until(lambda: not _stats()["retrying"])
    delta = _delta(_stats(), before)
    assert delta["failed"] >= 1 and delta["retry_threads"] == 1 and delta["sent"] == 1


def test_releases_coalesce_while_a_wakeup_is_retried(mode):
    owners = [_Owner() for _ in range(64)]
    refs = [weakref.ref(o) for o in owners]
    tokens = [_hold(o) for o in owners]
    del owners
    before = _stats(fail_next=1_000_000)  # every send fails until told otherwise
    _release(tokens[:1])
    assert _stats()["retrying"] == 1
    _release(tokens[1:])  # the wakeup being retried stands for these too
    time.sleep(0.05)
    gc.collect()
    assert all(r() is not None for r in refs)  # nothing sent yet
    during = _stats(fail_next=0)  # the queue of pending calls has room again
    assert _delta(during, before)["coalesced"] == 63
    assert _wait_until(lambda: all(r() is None for r in refs))
    delta = _delta(_stats(), before)
    assert delta["sent"] == 1 and delta["retry_threads"] == 1 and delta["coalesced"] == 63


def test_wakeup_off_leaves_tokens_for_the_next_drain(wakeup_off):
    owner = _Owner()
    ref = weakref.ref(owner)
    token = _hold(owner)
    del owner
    before = _stats()
    _release([token])
    time.sleep(0.05)
    gc.collect()
    assert ref() is not None and token in _drain._LIVE
    assert _delta(_stats(), before)["sent"] == 0 and not _stats()["scheduled"]
    _drain.drain()  # a safe point of cuda_core
    gc.collect()
    assert ref() is None


def test_turning_the_wakeup_on_sends_one_for_tokens_already_queued(wakeup_off):
    owner = _Owner()
    ref = weakref.ref(owner)
    token = _hold(owner)
    del owner
    _release([token])
    _drain._start()
    assert _wait_until(lambda: ref() is None)


def test_nested_drain_takes_its_own_tokens(wakeup_off, monkeypatch):
    # A release whose finalizer drains again (or a pending call interrupting
    # a drain) must neither lose nor repeat tokens.
    owners = {name: _Owner() for name in "ABCD"}
    tokens = {name: _hold(o) for name, o in owners.items()}
    released = []
    real = _drain._release_token

    def nesting(token):
        released.append(token)
        if token == tokens["A"]:
            lib.cc_user_object_release(ffi.cast("void *", tokens["B"]))
            _drain.drain()
        real(token)

    monkeypatch.setattr(_drain, "_release_token", nesting)
    for name in "ACD":
        lib.cc_user_object_release(ffi.cast("void *", tokens[name]))
    _drain.drain()
    assert sorted(released) == sorted(tokens.values())
    assert not any(t in _drain._LIVE for t in tokens.values())
    assert lib.cc_released_pending() == 0


def _fake_allocation_claim(claims):
    shared = object.__new__(_SharedRelease)
    shared.inner = None
    shared._ptr = 0
    shared._stream = None
    shared.claims = claims
    return shared, _AllocationClaim(shared)


def _fake_event_claim(claims):
    share = _EventShare(ffi.NULL, None)
    share.claims = claims
    return share, _EventClaim(share)


def test_claims_drop_inside_code_that_holds_their_locks(wakeup_off):
    # A pending call runs between two bytecodes of the main thread, maybe
    # inside a `with _claims_lock:` block: the drop there must not deadlock.
    shared, aclaim = _fake_allocation_claim(2)  # one more claim stays: nothing is freed
    share, eclaim = _fake_event_claim(2)
    token = _hold(_drain._Attachment((aclaim, eclaim)))
    del aclaim, eclaim

    def interrupted():
        with _alloc_lock, _event_lock:
            lib.cc_user_object_release(ffi.cast("void *", token))
            _drain.drain()

    th = threading.Thread(target=interrupted, daemon=True)
    th.start()
    th.join(5)
    assert not th.is_alive(), "dropping a claim deadlocked on its own lock"
    assert shared.claims == 1 and share.claims == 1


def test_exec_attachments_go_with_their_last_holder(wakeup_off):
    # An executable's own attachments are held by its user object and, during
    # an instantiation or whole-graph update, by a second one: the first
    # release must keep them (a failed update releases the temporary one).
    shared, claim = _fake_allocation_claim(2)
    acc = _drain._ExecAttachments()
    acc.atts.append(_drain._Attachment((claim,)))
    del claim
    first, second = _hold(acc), _hold(acc)
    assert acc.holders == 2
    lib.cc_user_object_release(ffi.cast("void *", second))
    _drain.drain()
    assert shared.claims == 2 and acc.holders == 1
    lib.cc_user_object_release(ffi.cast("void *", first))
    _drain.drain()
    assert shared.claims == 1


def test_switching_away_from_the_pipe_ends_its_thread():
    _drain._start(_drain._PIPE)
    thread = _drain._waiter.thread
    try:
        assert thread.is_alive()
    finally:
        _drain._start()
    thread.join(2)
    assert not thread.is_alive()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_wakeup_is_off_in_a_forked_child():
    _quiet()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: report through the exit status only
        code = 1
        try:
            owner = _Owner()
            token = _hold(owner)
            before = _stats()
            lib.cc_user_object_release(ffi.cast("void *", token))
            after = _stats()
            ok = (
                _drain._waiter is None
                and after["sent"] == before["sent"]
                and not after["scheduled"]
                and token in _drain._LIVE
            )
            _drain.drain()
            code = 0 if ok and token not in _drain._LIVE else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
