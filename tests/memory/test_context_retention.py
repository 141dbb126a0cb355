# SPDX-License-Identifier: Apache-2.0
"""Resources keep their context: deferred releases bind it, primary contexts stay retained.

Code that pops or releases the current context between phases (its own
``cuDevicePrimaryCtxRetain`` / ``cuCtxPushCurrent`` pairs, or another
library's) must not break the releases that the garbage collector runs
later with no context current: each binds the context its resource lives
in, and a primary context in which resources live stays retained.  The CPU
tests check what each release is handed (stand-ins for the extension's
calls); the GPU tests pop and release, collect, and require no warning and
the device memory back where it was, on both interpreters.
"""

from __future__ import annotations

import gc
import multiprocessing
import types
import warnings

import pytest

from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    Buffer,
    CUDAError,
    CUDAWarning,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    LegacyPinnedMemoryResource,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)
from cuda_core import _context as context_mod
from cuda_core import _event as event_mod
from cuda_core import _stream_release as binding_mod
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _release
from cuda_core._memory._memory_pool import _open_buffer_maker
from cuda_core._stream import _BORROWED, _BUILTIN, _adopt
from cuda_core._stream_release import bind_for_release, owning_context

MiB = 1 << 20
BIG = 64 * MiB
TIMEOUT = 180


def _address(cdata):
    return int(ffi.cast("intptr_t", cdata))


# --------------------------------------------------------------------------
# No GPU: what the releases are handed
# --------------------------------------------------------------------------
#: A device ordinal no machine has: the stand-in contexts belong to it, so
#: that no real release ever picks them up.
FAKE_DEVICE = 7


@pytest.fixture
def current(monkeypatch):
    """A stand-in current context (0xC0), the retained primary context of FAKE_DEVICE."""
    c_ctx = ffi.cast("CUcontext", 0xC0)
    state = types.SimpleNamespace(ctx=c_ctx)
    monkeypatch.setattr(binding_mod, "_cc_current_ctx", lambda: state.ctx)
    monkeypatch.setitem(context_mod._KNOWN_DEVICES, 0xC0, FAKE_DEVICE)
    monkeypatch.setitem(context_mod._PRIMARY, FAKE_DEVICE, c_ctx)
    monkeypatch.setattr(binding_mod, "_BOUND_TOKENS", {})
    return state


def test_default_stream_token_is_bound_to_the_current_context(current):
    token = _adopt(ffi.cast("CUstream", 1), 1, None, _BUILTIN)
    bound = bind_for_release(token)
    assert bound is not token and bound == token  # the same stream (CU_STREAM_LEGACY) ...
    assert _address(owning_context(bound)) == 0xC0  # ... of the allocating context
    assert bind_for_release(token) is bound  # one bound token per context
    assert owning_context(token) is None  # the unbound token names no context
    real = _adopt(ffi.cast("CUstream", 0x50), 0x50, None, _BORROWED)
    assert bind_for_release(real) is real  # a real stream knows its context
    current.ctx = ffi.NULL
    assert bind_for_release(_adopt(ffi.cast("CUstream", 2), 2, None, _BUILTIN))._ctx is None


def test_only_retained_primary_contexts_are_made_current(current):
    # Another context (a green one, one other code created) may be destroyed
    # by the time a release runs: its releases run in whatever is current.
    current.ctx = ffi.cast("CUcontext", 0xC2)
    context_mod._KNOWN_DEVICES[0xC2] = FAKE_DEVICE  # the device's primary is 0xC0
    try:
        bound = bind_for_release(_adopt(ffi.cast("CUstream", 1), 1, None, _BUILTIN))
        assert _address(bound._ctx._handle) == 0xC2 and owning_context(bound) is None
        green = context_mod.Context._from_ctx(ffi.cast("CUcontext", 0xC0), FAKE_DEVICE)
        green._green = object()
        assert context_mod.primary_handle(green) is None
    finally:
        del context_mod._KNOWN_DEVICES[0xC2]


def _inline_buffer(dstream, mr=None):
    buf = _open_buffer_maker(Buffer)()  # with its PyPy guard
    buf._ptr = 0x1000
    buf._size = 64
    buf._mr = mr
    buf._closed = False
    buf._extra = None
    buf._release = _release._InlinePool
    buf._dstream = dstream
    return buf


def test_collected_pool_buffer_frees_in_its_context(current, monkeypatch):
    gc.collect()  # earlier tests' garbage is freed for real, not by the stand-in
    frees = []
    monkeypatch.setattr(
        _release,
        "_cc_free_async_in",
        lambda c_ctx, ptr, c_stream: frees.append((_address(c_ctx), ptr, _address(c_stream))) or 0,
    )
    buf = _inline_buffer(bind_for_release(_adopt(ffi.cast("CUstream", 1), 1, None, _BUILTIN)))
    del buf
    gc.collect()
    ours = [f for f in frees if f[1] == 0x1000]
    assert ours == [(0xC0, 0x1000, 1)]  # the legacy stream, in the allocating context


def test_explicit_close_of_a_bound_buffer_binds_too(current, monkeypatch):
    frees = []
    monkeypatch.setattr(
        _release,
        "_cc_free_async_in",
        lambda c_ctx, ptr, c_stream: frees.append((_address(c_ctx), ptr)) or 0,
    )
    buf = _inline_buffer(bind_for_release(_adopt(ffi.cast("CUstream", 1), 1, None, _BUILTIN)))
    buf.close()
    assert frees == [(0xC0, 0x1000)]


class _RecordingResource(MemoryResource):
    """Frees nothing; records the context that was made current for each deallocate."""

    def __init__(self, stack):
        self.stack = stack
        self.seen = []

    def allocate(self, size, stream=None):
        raise NotImplementedError

    def deallocate(self, ptr, size, stream=None):
        self.seen.append((ptr, self.stack[-1] if self.stack else None))

    is_device_accessible = True
    is_host_accessible = True
    device_id = -1


def test_collected_resource_buffer_deallocates_in_its_context(current, monkeypatch):
    stack = []

    def push(c_ctx):
        stack.append(_address(c_ctx))
        return 1

    def pop():
        stack.pop()
        return 0

    monkeypatch.setattr(context_mod, "_cc_push_ctx", push)
    monkeypatch.setattr(context_mod, "_cc_pop_ctx", pop)
    mr = _RecordingResource(stack)
    buf = Buffer.from_handle(0x2000, 64, mr=mr)  # recorded on the default stream, bound
    del buf
    gc.collect()
    assert mr.seen == [(0x2000, 0xC0)] and stack == []


def test_collected_event_is_destroyed_in_its_context(monkeypatch):
    destroyed = []
    monkeypatch.setattr(
        event_mod,
        "_cc_event_destroy_in",
        lambda c_ctx, c_event: destroyed.append((_address(c_ctx), _address(c_event))) or 0,
    )
    c_ctx = ffi.cast("CUcontext", 0xC1)
    monkeypatch.setitem(context_mod._PRIMARY, FAKE_DEVICE + 1, c_ctx)
    ctx = types.SimpleNamespace(_handle=c_ctx, _h=0xC1, _green=None, _device_id=FAKE_DEVICE + 1)
    event = event_mod._OpenEvent()
    event._handle = ffi.cast("CUevent", 0x40)
    if event_mod.GUARD_HANDLES:
        event._guard = ffi.gc(event._handle, event_mod._releaser(ctx))
    event._ctx = ctx
    event._flags = 0
    event._closed = False
    event._share = None
    del event
    for _ in range(3):
        gc.collect()
    assert destroyed == [(0xC1, 0x40)]


def test_active_primary_context_seen_first_elsewhere_is_retained(monkeypatch):
    # A context made current by other code: the first Context made for it
    # retains the device's primary context when that is active (even if the
    # context's device was looked up before), once.
    calls = []

    def get_state(device_id, flags, active):
        active[0] = 1
        return 0

    def retain(out, device_id):
        calls.append(device_id)
        out[0] = ffi.cast("CUcontext", 0xD0)
        return 0

    monkeypatch.setattr(
        context_mod,
        "lib",
        types.SimpleNamespace(
            cuDevicePrimaryCtxGetState=get_state, cuDevicePrimaryCtxRetain=retain
        ),
    )
    monkeypatch.setattr(context_mod, "_PRIMARY", {})
    monkeypatch.setattr(context_mod, "_SEEN", set())
    monkeypatch.setitem(context_mod._KNOWN_DEVICES, 0xD0, 3)
    ctx = context_mod.Context._from_ctx(ffi.cast("CUcontext", 0xD0), 3)
    context_mod.Context._from_ctx(ffi.cast("CUcontext", 0xD0), 3)
    assert calls == [3] and _address(context_mod._PRIMARY[3]) == 0xD0
    assert ctx._device_id == 3


# --------------------------------------------------------------------------
# GPU: pop and release, then collect
# --------------------------------------------------------------------------
def _free_device_memory():
    free, total = ffi.new("size_t *"), ffi.new("size_t *")
    check(lib.cuMemGetInfo(free, total))
    return free[0]


def _pop_all():
    out = ffi.new("CUcontext *")
    while True:
        check(lib.cuCtxGetCurrent(out))
        if out[0] == ffi.NULL:
            return
        check(lib.cuCtxPopCurrent(out))


def _settled_free(device):
    device.sync()
    check(lib.cuMemPoolTrimTo(DeviceMemoryResource(device)._pool, 0))  # the default pool keeps
    return _free_device_memory()


def _default_pool(device, keep):
    mr = DeviceMemoryResource(device)
    keep.append(device.create_stream())  # outlives the buffers it orders
    return [mr.allocate(BIG, stream=device.default_stream), mr.allocate(BIG, stream=keep[-1])]


def _owned_pool(device, keep):
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    return [
        mr,
        mr.allocate(BIG, stream=device.default_stream),
        mr.allocate(MiB, stream=LEGACY_DEFAULT_STREAM),
    ]


def _pinned_pool(device, keep):
    try:
        mr = PinnedMemoryResource(PinnedMemoryResourceOptions())
    except CUDAError as exc:
        pytest.skip(f"pinned memory pools are not available here: {exc}")
    return [mr, mr.allocate(BIG, stream=device.default_stream)]


def _legacy_pinned(device, keep):
    mr = LegacyPinnedMemoryResource()
    return [mr.allocate(BIG, stream=device.default_stream), mr.allocate(MiB)]


def _events(device, keep):
    keep.append(device.create_stream())
    made = [device.create_event() for _ in range(20)]
    made += [keep[-1].record() for _ in range(20)]
    made.append(device.default_stream.record())
    return made


def _streams(device, keep):
    return [device.create_stream() for _ in range(20)]


MAKERS = {
    "default_pool": (_default_pool, True),
    "owned_pool": (_owned_pool, True),
    "pinned_pool": (_pinned_pool, False),
    "legacy_pinned": (_legacy_pinned, False),
    "events": (_events, False),
    "streams": (_streams, False),
}


@pytest.mark.gpu
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_collected_after_the_context_was_popped_and_released(device, kind):
    make, device_memory = MAKERS[kind]
    # A user phase: its own retain of the primary context, pushed.
    out = ffi.new("CUcontext *")
    check(lib.cuDevicePrimaryCtxRetain(out, device.device_id))
    check(lib.cuCtxPushCurrent(out[0]))
    before = _settled_free(device)
    keep = []
    junk = make(device, keep)
    junk.append(junk)  # a cycle: only the collector frees it
    del junk
    # Between phases: no context current, the user's retain released.
    _pop_all()
    check(lib.cuDevicePrimaryCtxRelease(device.device_id))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                gc.collect()
        problems = [str(w.message) for w in caught if issubclass(w.category, CUDAWarning)]
        assert problems == []
        current = ffi.new("CUcontext *")
        check(lib.cuCtxGetCurrent(current))
        assert current[0] == ffi.NULL  # every release restored the (empty) context stack
    finally:
        device.set_current()
        for s in keep:
            s.close()
    if device_memory:
        after = _settled_free(device)
        assert after >= before - 16 * MiB, (before, after)


def _child_without_set_current(conn):
    """Resources made in a primary context that other code retained and made current."""
    try:
        from cuda_core import Device, DeviceMemoryResource

        report = {}
        Device(0)  # initializes the driver; set_current() is never called
        out = ffi.new("CUcontext *")
        check(lib.cuDevicePrimaryCtxRetain(out, 0))
        check(lib.cuCtxSetCurrent(out[0]))
        mr = DeviceMemoryResource(0)
        buf = mr.allocate(BIG, stream=LEGACY_DEFAULT_STREAM)
        event = LEGACY_DEFAULT_STREAM.record()
        check(lib.cuCtxSetCurrent(ffi.NULL))
        check(lib.cuDevicePrimaryCtxRelease(0))  # the other code lets go
        flags, active = ffi.new("unsigned int *"), ffi.new("int *")
        check(lib.cuDevicePrimaryCtxGetState(0, flags, active))
        report["active_while_resources_live"] = bool(active[0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del buf, event
            for _ in range(3):
                gc.collect()
        report["warnings"] = [str(w.message) for w in caught]
        conn.send(report)
    except BaseException as exc:  # report everything to the parent
        conn.send({"error": repr(exc)})


@pytest.mark.gpu
def test_primary_context_stays_retained_while_resources_live(device):
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe()
    proc = ctx.Process(target=_child_without_set_current, args=(child_conn,))
    proc.start()
    try:
        assert parent_conn.poll(TIMEOUT), "the child process did not answer in time"
        report = parent_conn.recv()
    finally:
        proc.join(TIMEOUT)
        if proc.is_alive():
            proc.kill()
    assert "error" not in report, report["error"]
    assert report == {"active_while_resources_live": True, "warnings": []}
    assert proc.exitcode == 0
