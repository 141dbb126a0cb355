# SPDX-License-Identifier: Apache-2.0
"""Event, EventOptions and IPCEventDescriptor: flags, timing, lifetimes, IPC."""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import threading
import time
import warnings
import weakref

import pytest
from _helpers import Blocker, RawBuffer, record_calls

from cuda_core import CUDAError, CUDAWarning, Device, Event, EventOptions
from cuda_core._event import IPCEventDescriptor

# ---------------------------------------------------------------- helpers (GPU)


def _ipc_child(q_in, q_out):
    """Child process: open the parent's IPC event and report what it sees."""
    try:
        from cuda_core import Device

        dev = Device(0)
        dev.set_current()
        event = q_in.get(timeout=180)  # unpickled through Event.__reduce__
        q_out.put(("opened", event.is_ipc_enabled, event.is_timing_enabled, event.is_done))
        assert q_in.get(timeout=180) == "released"
        event.sync()
        s = dev.create_stream()
        s.wait(event)
        s.sync()
        q_out.put(("done", event.is_done))
        event.close()
        s.close()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        q_out.put(("error", repr(exc)))


# ---------------------------------------------------------------- CPU-side
def test_event_cannot_be_constructed():
    with pytest.raises(RuntimeError, match=r"^Event objects cannot be instantiated directly\."):
        Event()


def test_event_options_defaults_and_validation():
    opts = EventOptions()
    assert (opts.timing_enabled, opts.blocking_sync, opts.ipc_enabled) == (False, False, False)
    assert EventOptions(timing_enabled=None).timing_enabled is False
    assert EventOptions(blocking_sync=1).blocking_sync is True
    assert EventOptions(True, True) == EventOptions(timing_enabled=True, blocking_sync=True)
    for field in ("timing_enabled", "blocking_sync", "ipc_enabled"):
        for bad in ("yes", 2, 0.0, []):
            with pytest.raises(TypeError, match=field):
                EventOptions(**{field: bad})


def test_ipc_and_timing_are_refused_at_creation():
    # The options construct (a module may build them at import); creating
    # an event with them raises, as in cuda.core.
    from cuda_core._event import _event_flags

    opts = EventOptions(ipc_enabled=True, timing_enabled=True)
    assert opts.ipc_enabled and opts.timing_enabled
    with pytest.raises(TypeError, match=r"^IPC-enabled events cannot use timing\.$"):
        _event_flags(opts, True)
    with pytest.raises(TypeError, match="must be bound"):  # Device.create_event's check first
        _event_flags({"ipc_enabled": True, "timing_enabled": True}, False)
    assert EventOptions(ipc_enabled=True, blocking_sync=True).ipc_enabled


def test_ipc_descriptor_not_constructible_and_picklable():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        IPCEventDescriptor()
    raw = bytes(range(64))
    desc = IPCEventDescriptor._init(raw, True)
    again = pickle.loads(pickle.dumps(desc))
    assert isinstance(again, IPCEventDescriptor)
    assert again == desc and hash(again) == hash(desc)
    assert again._blocking is True and again._reserved == raw
    assert desc != IPCEventDescriptor._init(bytes(64), True)
    assert (desc == raw) is False
    assert "IPCEventDescriptor" in repr(desc)
    for bad in (b"short", bytes(65), "x" * 64):
        with pytest.raises(ValueError, match="64 bytes"):
            IPCEventDescriptor._init(bad, False)


def test_from_ipc_descriptor_rejects_other_types():
    with pytest.raises(TypeError, match="IPCEventDescriptor"):
        Event.from_ipc_descriptor(bytes(64))


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_create_event_defaults(device, stream):
    e = device.create_event()
    assert isinstance(e, Event)
    assert not e.is_timing_enabled and not e.is_blocking_sync and not e.is_ipc_enabled
    assert e.uses_blocking_sync is False
    assert e.device is device and e.context == device.context
    assert isinstance(e.handle, int) and e.handle
    assert e.is_done  # never recorded: complete
    stream.record(e)
    e.sync()
    assert e.is_done
    assert "Event" in repr(e) and f"{e.handle:#x}" in repr(e)
    e.close()


@pytest.mark.gpu
@pytest.mark.parametrize(
    "options",
    [
        {"timing_enabled": True},
        EventOptions(blocking_sync=True),
        {"timing_enabled": True, "blocking_sync": True},
    ],
)
def test_event_flags(device, stream, options):
    opts = options if isinstance(options, EventOptions) else EventOptions(**options)
    for e in (device.create_event(options), stream.record(options=options)):
        assert e.is_timing_enabled is opts.timing_enabled
        assert e.is_blocking_sync is opts.blocking_sync
        e.sync()
        e.close()


@pytest.mark.gpu
def test_bad_event_options(device, stream):
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        device.create_event({"enable_timingg": True})
    with pytest.raises(TypeError, match="EventOptions"):
        device.create_event(3)
    with pytest.raises(TypeError, match="timing"):
        stream.record(options={"ipc_enabled": True, "timing_enabled": True})


@pytest.mark.gpu
def test_event_identity(device, stream):
    a = device.create_event()
    b = device.create_event()
    assert a == a and a != b
    assert hash(a) != hash(b) or a.handle == b.handle
    assert {a: 1, b: 2}[a] == 1
    assert (a == "x") is False
    assert stream.record(a) == a
    a.close()
    b.close()


@pytest.mark.gpu
def test_close_is_idempotent_and_use_after_close_raises(device, stream):
    e = device.create_event({"timing_enabled": True})
    other = device.create_event({"timing_enabled": True})
    with e:
        stream.record(e)
    assert e.is_closed
    e.close()
    assert repr(e) == "<Event handle=0x0>"
    for use in (
        e.sync,
        lambda: e.is_done,
        lambda: e.handle,
        lambda: e - other,
        lambda: other - e,
        lambda: stream.record(e),
        lambda: stream.wait(e),
    ):
        with pytest.raises(RuntimeError, match="closed"):
            use()
    other.close()


@pytest.mark.gpu
def test_finalizer_destroys_only_unclosed_events(device, stream, monkeypatch):
    import cuda_core._event as event_mod

    destroyed = record_calls(monkeypatch, event_mod, "_destroy_event")
    closed = device.create_event()
    dropped = stream.record()
    for e in (closed, dropped):
        assert isinstance(e, Event)
        assert type(e).__name__ == "Event"
    closed.close()
    assert isinstance(closed, Event)
    assert closed.is_closed
    assert type(closed) is Event  # retyped (on both interpreters): no finalizer left to run
    dropped.sync()
    del closed, dropped, e
    for _ in range(3):
        gc.collect()
    assert len(destroyed) == 1  # the dropped event only; the closed one is not destroyed twice


@pytest.mark.gpu
def test_unclosed_event_is_finalized_quietly(device, stream):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CUDAWarning)
        e = stream.record()
        e.sync()
        ref = weakref.ref(e)
        del e
        for _ in range(3):
            gc.collect()
        assert ref() is None


@pytest.mark.gpu
def test_elapsed_time_positive_and_consistent(device, stream):
    buf = RawBuffer(16 << 20)  # 64 MiB
    opts = EventOptions(timing_enabled=True)
    try:
        e1, e2, e3 = (device.create_event(opts) for _ in range(3))
        stream.record(e1)
        buf.fill(1, stream, repeat=10)
        stream.record(e2)
        buf.fill(2, stream, repeat=20)
        stream.record(e3)
        e3.sync()
        t12, t23, t13 = e2 - e1, e3 - e2, e3 - e1
        assert all(type(t) is float for t in (t12, t23, t13))
        assert t12 > 0 and t23 > 0 and t13 > 0
        assert abs(t13 - (t12 + t23)) <= 0.01 * t13 + 0.002  # the timer resolves ~0.5 us
        assert e1 - e1 == 0.0
        assert t12 == pytest.approx(-(e1 - e2))
    finally:
        stream.sync()
        buf.free()


@pytest.mark.gpu
def test_elapsed_time_errors_carry_a_hint(device, stream):
    untimed_a, untimed_b = stream.record(), stream.record()
    stream.sync()
    with pytest.raises(CUDAError, match="timing enabled") as info:
        untimed_b - untimed_a  # noqa: B018
    assert isinstance(info.value, RuntimeError)  # upstream raises RuntimeError
    assert info.value.code is not None
    timed_a = device.create_event({"timing_enabled": True})
    timed_b = device.create_event({"timing_enabled": True})
    with pytest.raises(RuntimeError, match="recorded"):
        timed_b - timed_a  # noqa: B018  (never recorded)
    with pytest.raises(TypeError):
        timed_a - 1  # noqa: B018
    with pytest.raises(TypeError):
        1 - timed_a  # noqa: B018


@pytest.mark.gpu
def test_not_ready_event(device, stream):
    blocker = Blocker(stream)
    try:
        start = stream.record(options={"timing_enabled": True})
        end = stream.record(options={"timing_enabled": True})
        time.sleep(0.02)
        assert end.is_done is False
        with pytest.raises(CUDAError, match="not completed"):
            end - start  # noqa: B018
        blocker.release()
        end.sync()
        assert end.is_done is True
        assert end - start >= 0.0
    finally:
        blocker.free()


@pytest.mark.gpu
def test_event_synced_from_another_thread(device, stream):
    blocker = Blocker(stream)
    e = stream.record(options={"blocking_sync": True})
    done = threading.Event()

    def waiter():
        e.sync()  # no set_current needed in this thread
        done.set()

    t = threading.Thread(target=waiter)
    try:
        t.start()
        time.sleep(0.05)
        assert not done.is_set()
    finally:
        blocker.release()
        t.join(60)
        blocker.free()
    assert done.is_set() and e.is_done


@pytest.mark.gpu
def test_ipc_event_rules(device, stream):
    if not device.properties.ipc_event_supported:
        pytest.skip("this device does not support IPC events")
    with pytest.raises(TypeError, match="must be bound; use Stream.record"):
        device.create_event({"ipc_enabled": True})
    e = stream.record(options=EventOptions(ipc_enabled=True))
    assert e.is_ipc_enabled and not e.is_timing_enabled
    desc = e.ipc_descriptor
    assert isinstance(desc, IPCEventDescriptor)
    assert len(desc._reserved) == 64 and desc is e.ipc_descriptor
    assert pickle.loads(pickle.dumps(desc)) == desc
    with pytest.raises(TypeError, match="should not be re-recorded"):
        stream.record(e)
    plain = stream.record()
    # IPC events have an open class of their own (the record hot path tells
    # them apart by class); both read as Event and become Event when closed.
    assert type(e) is not type(plain) and type(e).__name__ == "Event"
    e.sync()
    e.close()
    assert type(e) is Event and e.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        e.sync()
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        plain.ipc_descriptor  # noqa: B018
    with pytest.raises(TypeError, match="IPC-enabled"):
        pickle.dumps(plain)
    plain.close()
    with pytest.raises(RuntimeError, match="closed"):
        stream.record(plain)  # a closed event takes the checked path


@pytest.mark.gpu
def test_ipc_event_across_processes(device):
    if not device.properties.ipc_event_supported:
        pytest.skip("this device does not support IPC events")
    ctx = multiprocessing.get_context("spawn")
    stream = device.create_stream()
    blocker = Blocker(stream)
    event = stream.record(options={"ipc_enabled": True})
    q_in, q_out = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_ipc_child, args=(q_in, q_out), daemon=True)
    child.start()
    try:
        q_in.put(event)
        opened = q_out.get(timeout=240)
        assert opened == ("opened", True, False, False), opened
        blocker.release()
        q_in.put("released")
        done = q_out.get(timeout=240)
        assert done == ("done", True), done
    finally:
        blocker.free()
        child.join(60)
        if child.is_alive():
            child.kill()
        event.close()
        stream.close()
    assert child.exitcode == 0


@pytest.mark.gpu
def test_event_against_nvidia_cuda_core(device, stream):
    """Our events order NVIDIA cuda.core streams too (CPython only)."""
    core = pytest.importorskip("cuda.core")
    theirs = core.Device(0)
    theirs.set_current()
    their_stream = theirs.create_stream()
    e = stream.record()
    their_stream.wait(stream)  # through __cuda_stream__
    their_stream.sync()
    assert e.is_done
    their_stream.close()
    Device(0).set_current()
