# SPDX-License-Identifier: Apache-2.0
"""Context: construction rules, identity, switching between threads."""

from __future__ import annotations

import threading

import pytest

from cuda_core import Context, CUDAError, Device
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check


def _raw_current():
    out = ffi.new("CUcontext *")
    check(lib.cuCtxGetCurrent(out))
    return int(ffi.cast("uintptr_t", out[0]))


def _run_in_thread(fn):
    """Run ``fn`` in a new thread; return its result or re-raise its exception."""
    result = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            result["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    assert not t.is_alive(), "worker thread did not finish"
    if "error" in result:
        raise result["error"]
    return result.get("value")


# ---------------------------------------------------------------- CPU-side
def test_context_cannot_be_constructed():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        Context()
    with pytest.raises(RuntimeError, match="Device"):
        Context(1, 2, x=3)


def test_context_from_ctx_identity_without_driver():
    a = Context._from_ctx(ffi.cast("CUcontext", 0x1000), 0)
    b = Context._from_ctx(ffi.cast("CUcontext", 0x1000), 0)
    c = Context._from_ctx(ffi.cast("CUcontext", 0x2000), 0)
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert a != 0x1000 and (a == "x") is False
    assert a.handle == 0x1000 and isinstance(a.handle, int)
    assert "0x1000" in repr(a) and "device=0" in repr(a)
    assert a.is_green is False


def test_context_close_is_idempotent_and_blocks_use():
    ctx = Context._from_ctx(ffi.cast("CUcontext", 0x3000), 0)
    assert not ctx.is_closed
    ctx.close()
    ctx.close()
    assert ctx.is_closed
    assert "closed" in repr(ctx)
    with pytest.raises(RuntimeError, match="closed"):
        ctx.handle  # noqa: B018
    with pytest.raises(RuntimeError, match="closed"):
        ctx.create_stream()


def test_primary_context_has_no_create_stream():
    ctx = Context._from_ctx(ffi.cast("CUcontext", 0x4000), 0)
    with pytest.raises(RuntimeError, match="green"):
        ctx.create_stream()


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_device_context_is_current(device):
    ctx = device.context
    assert isinstance(ctx, Context)
    assert ctx.handle == _raw_current()
    assert ctx == device.context
    assert hash(ctx) == hash(device.context)
    assert "Context" in repr(ctx)


@pytest.mark.gpu
def test_primary_context_retained_once(device):
    first = device.context.handle
    for _ in range(50):
        device.set_current()
    assert device.context.handle == first
    # Every thread gets the same primary context.
    assert _run_in_thread(lambda: (Device(0).set_current(), Device(0).context.handle)[1]) == first


@pytest.mark.gpu
def test_set_current_with_context_returns_previous(device):
    ctx = device.context
    # From "no context current" the previous one is None.
    check(lib.cuCtxSetCurrent(ffi.NULL))
    assert device.set_current(ctx) is None
    assert _raw_current() == ctx.handle
    prev = device.set_current(ctx)
    assert prev == ctx
    assert isinstance(prev, Context)


@pytest.mark.gpu
def test_set_current_rejects_bad_context(device):
    with pytest.raises(TypeError, match="Context"):
        device.set_current(123)
    other = Context._from_ctx(device.context._handle, device.device_id + 1)
    with pytest.raises(RuntimeError, match="different"):
        device.set_current(other)
    closed = Context._from_ctx(device.context._handle, device.device_id)
    closed.close()
    with pytest.raises(RuntimeError, match="closed"):
        device.set_current(closed)


@pytest.mark.gpu
def test_context_is_per_thread(device):
    main_ctx = device.context.handle

    def fresh_thread():
        # A new thread has no current context and an uninitialized Device.
        dev = Device(0)
        assert dev is not device
        before = _raw_current()
        with pytest.raises(CUDAError, match="not yet initialized"):
            dev.context  # noqa: B018
        dev.set_current()
        return before, _raw_current(), dev.context.handle

    before, after, handle = _run_in_thread(fresh_thread)
    assert before == 0
    assert after == main_ctx == handle
    # The main thread's state is untouched.
    assert _raw_current() == main_ctx


@pytest.mark.gpu
def test_context_switch_between_threads(device):
    """Threads switching contexts never disturb each other."""
    ctx = device.context
    barrier = threading.Barrier(4)
    errors = []

    def worker(clear):
        try:
            dev = Device(0)
            dev.set_current()
            barrier.wait(30)
            for _ in range(200):
                if clear:
                    check(lib.cuCtxSetCurrent(ffi.NULL))
                    assert _raw_current() == 0
                    assert dev.set_current(ctx) is None
                assert _raw_current() == ctx.handle
                s = dev.create_stream()
                s.sync()
                s.close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i % 2 == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert _raw_current() == ctx.handle


@pytest.mark.gpu
def test_stream_context_matches_device(device, stream):
    assert stream.context == device.context
    # A borrowed stream resolves its context through the driver.
    from cuda_core import Stream

    borrowed = Stream.from_handle(stream.handle)
    assert borrowed.context == device.context
    assert borrowed.device is device
