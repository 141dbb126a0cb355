# SPDX-License-Identifier: Apache-2.0
"""Stream on the GPU: creation, priorities, ordering, threads, finalizers, builders, interop."""

from __future__ import annotations

import gc
import sys
import threading
import time
import warnings
import weakref

import numpy as np
import pytest
from _helpers import Blocker, RawBuffer, record_calls
from _stream_setup import Foreign, _priority_range

from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CUDAWarning,
    Device,
    Event,
    Stream,
    StreamOptions,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_create_stream_defaults(device):
    least, greatest = _priority_range()
    with device.create_stream() as s:
        assert isinstance(s, Stream)
        assert s.is_nonblocking is True
        assert s.priority == least
        assert s.device is device
        assert s.context == device.context
        assert isinstance(s.handle, int) and s.handle > 2
        assert s.__cuda_stream__() == (0, s.handle)
        ctx = s.context.handle
        assert repr(s) == f"<Stream handle={s.handle:#x} context={ctx:#x}>"
        borrowed = Stream.from_handle(s.handle)
        # Not known until the stream is used (a repr never hands the driver a borrowed handle).
        assert repr(borrowed) == f"<Stream handle={s.handle:#x} context=0x0>"
        borrowed.record().close()
        assert repr(borrowed) == f"<Stream handle={s.handle:#x} context={ctx:#x}>"
        borrowed.close()
        flags = ffi.new("unsigned int *")
        check(lib.cuStreamGetFlags(s._handle, flags))
        assert flags[0] & lib.CU_STREAM_NON_BLOCKING
    assert s.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        s.sync()


@pytest.mark.gpu
@pytest.mark.parametrize("as_dict", [False, True])
def test_create_stream_options(device, as_dict):
    options = {"nonblocking": False} if as_dict else StreamOptions(nonblocking=False)
    s = device.create_stream(options=options)
    assert s.is_nonblocking is False
    flags = ffi.new("unsigned int *")
    check(lib.cuStreamGetFlags(s._handle, flags))
    assert not flags[0] & lib.CU_STREAM_NON_BLOCKING
    s.close()
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        device.create_stream(options={"blocking": True})
    with pytest.raises(TypeError, match="StreamOptions"):
        device.create_stream(options=5)


@pytest.mark.gpu
def test_stream_priorities_in_range(device):
    least, greatest = _priority_range()
    for priority in range(greatest, least + 1):
        s = device.create_stream(options=StreamOptions(priority=priority))
        assert s.priority == priority
        raw = ffi.new("int *")
        check(lib.cuStreamGetPriority(s._handle, raw))
        assert raw[0] == priority
        # A borrowed view asks the driver.
        assert Stream.from_handle(s.handle).priority == priority
        s.close()


@pytest.mark.gpu
def test_stream_priority_out_of_range(device):
    least, greatest = _priority_range()
    for bad in (least + 1, greatest - 1):
        with pytest.raises(ValueError, match=rf"\[{greatest}, {least}\]"):
            device.create_stream(options={"priority": bad})


@pytest.mark.gpu
def test_obj_and_options_together(device, stream):
    with pytest.raises(ValueError, match="both"):
        device.create_stream(obj=stream, options=StreamOptions())
    with pytest.raises(TypeError, match="__cuda_stream__"):
        device.create_stream(obj=object())


@pytest.mark.gpu
def test_wrap_foreign_stream(device, stream):
    foreign = Foreign(stream.handle)
    s = device.create_stream(foreign)
    assert s == stream and hash(s) == hash(stream)
    assert s.device is device
    assert s.context == device.context
    assert s.priority == stream.priority
    assert s.is_nonblocking == stream.is_nonblocking
    s.close()  # only drops the reference
    stream.sync()  # the real stream is untouched


@pytest.mark.gpu
def test_record_wait_ordering_between_streams(device):
    """Work on s2 ordered after s1 by an event (and by a stream) sees s1's results."""
    s1 = device.create_stream()
    s2 = device.create_stream()
    buf = RawBuffer(8 << 20)  # 32 MiB
    try:
        for value, use_event in ((0xA1, True), (0xB2, False), (0xC3, True)):
            buf.fill(value - 1, s1, repeat=8)
            buf.fill(value, s1)
            if use_event:
                e = s1.record()
                assert isinstance(e, Event) and not e.is_timing_enabled
                s2.wait(e)
            else:
                s2.wait(s1)
            host = buf.to_host(s2)
            s2.sync()
            np.testing.assert_array_equal(host, np.full(buf.n, value, dtype=np.uint32))
    finally:
        device.sync()
        buf.free()
        s1.close()
        s2.close()


@pytest.mark.gpu
def test_wait_on_blocked_stream_holds_the_waiter(device):
    s1 = device.create_stream()
    s2 = device.create_stream()
    blocker = Blocker(s1)
    try:
        marker = s1.record()
        s2.wait(s1)
        after = s2.record()
        time.sleep(0.05)
        assert not marker.is_done and not after.is_done
        blocker.release()
        after.sync()
        assert marker.is_done and after.is_done
    finally:
        blocker.free()
        s1.close()
        s2.close()


@pytest.mark.gpu
def test_wait_on_foreign_and_default_streams(device, stream):
    other = device.create_stream()
    stream.wait(Foreign(other.handle))
    stream.wait(LEGACY_DEFAULT_STREAM)
    stream.wait(PER_THREAD_DEFAULT_STREAM)
    stream.sync()
    other.close()


@pytest.mark.gpu
def test_record_existing_event_and_bad_combinations(device, stream):
    e = device.create_event()
    assert stream.record(e) is e
    with pytest.raises(ValueError, match="options"):
        stream.record(e, options={"timing_enabled": True})
    e.close()
    with pytest.raises(RuntimeError, match="closed"):
        stream.record(e)
    with pytest.raises(RuntimeError, match="closed"):
        stream.wait(e)
    timed = stream.record(options={"timing_enabled": True})
    assert timed.is_timing_enabled and timed.context == device.context
    timed.sync()


@pytest.mark.gpu
def test_default_streams_resolve_current_context(device):
    for s in (LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM, Stream.from_handle(0)):
        assert s.context == device.context
        assert s.device is device
        assert s.is_nonblocking is False
        e = s.record()
        e.sync()
        s.sync()


@pytest.mark.gpu
def test_stream_subclass_init(device):
    class MyStream(Stream):
        pass

    s = MyStream._init(options=StreamOptions(), device_id=device.device_id)
    assert isinstance(s, MyStream) and s.device is device
    assert type(s).__name__ == "MyStream"
    s.close()
    assert isinstance(s, MyStream) and s.is_closed
    if sys.implementation.name != "pypy":
        assert type(s) is MyStream  # the plain class: no finalizer left to run


@pytest.mark.gpu
def test_streams_usable_from_other_threads(device):
    streams = [device.create_stream() for _ in range(4)]
    buf = RawBuffer(1 << 20)
    errors = []

    def worker(i):
        try:
            s = streams[i]
            for _ in range(20):
                s.wait(streams[(i + 1) % 4])  # touches other threads' streams
                s.record().sync()
            s.sync()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    buf.fill(5, streams[0])
    host = buf.to_host(streams[0])
    streams[0].sync()
    assert (host == 5).all()
    buf.free()
    for s in streams:
        s.close()


@pytest.mark.gpu
def test_streams_created_concurrently_in_threads(device):
    results = []
    errors = []

    def worker():
        try:
            dev = Device(0)
            dev.set_current()
            made = [dev.create_stream() for _ in range(50)]
            results.extend(s.handle for s in made)
            for s in made:
                s.sync()
                s.close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(results) == 200


@pytest.mark.gpu
def test_sync_releases_the_gil(device, stream):
    """A thread blocked in cuStreamSynchronize does not stall Python in another thread."""
    blocker = Blocker(stream)
    started = threading.Event()
    finished = threading.Event()

    def worker():
        started.set()
        stream.sync()
        finished.set()

    t = threading.Thread(target=worker)
    try:
        t.start()
        assert started.wait(30)
        time.sleep(0.05)  # let the worker enter cuStreamSynchronize
        # This thread keeps running Python while the worker waits on the GPU.
        total = 0
        for i in range(200_000):
            total += i
        assert total == sum(range(200_000))
        assert t.is_alive() and not finished.is_set()  # the stream is still held
    finally:
        blocker.release()
        t.join(60)
        blocker.free()
    assert finished.is_set()


@pytest.mark.gpu
def test_unclosed_stream_is_finalized_quietly(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CUDAWarning)
        s = device.create_stream()
        ref = weakref.ref(s)
        del s
        for _ in range(3):
            gc.collect()
        assert ref() is None


@pytest.mark.gpu
def test_finalizer_destroys_only_unclosed_owned_streams(device, monkeypatch):
    import cuda_core._stream as stream_mod

    destroyed = record_calls(monkeypatch, stream_mod, "_destroy_stream")
    closed = device.create_stream()
    dropped = device.create_stream(options=StreamOptions(nonblocking=False))
    borrowed = Stream.from_handle(dropped.handle)
    assert type(borrowed) is Stream  # borrows own nothing: no finalizer at all
    for s in (closed, dropped):
        assert isinstance(s, Stream)
        assert type(s).__name__ == "Stream"
    closed.close()
    assert isinstance(closed, Stream) and closed.is_closed
    assert type(closed) is Stream  # retyped (on both interpreters): no finalizer left to run
    del borrowed
    gc.collect()
    assert destroyed == []
    del closed, dropped, s
    for _ in range(3):
        gc.collect()
    assert len(destroyed) == 1  # the dropped stream only


@pytest.mark.gpu
def test_create_graph_builder_on_this_stream(stream):
    from cuda_core import _slots

    if _slots.GraphBuilder is None:
        pytest.skip("cuda_core.graph is not available")
    builder = stream.create_graph_builder()
    try:
        assert builder.stream == stream
    finally:
        builder.close()
    assert not stream.is_closed  # the builder does not own this stream
    stream.sync()


@pytest.mark.gpu
def test_create_graph_builder_without_graph_module(stream, monkeypatch):
    # A partial import of cuda_core, where cuda_core.graph cannot be loaded:
    # no registered builder and no way to import the subpackage.  (Whether the
    # graph subpackage was imported earlier in the run must not matter.)
    from cuda_core import _slots

    monkeypatch.setattr(_slots, "GraphBuilder", None)
    monkeypatch.setattr(_slots, "import_subpackage", None)
    with pytest.raises(ImportError, match="GraphBuilder"):
        stream.create_graph_builder()


@pytest.mark.gpu
def test_cupy_stream_interop(device):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (e.g. on PyPy)")
    cp_stream = cupy.cuda.Stream(non_blocking=True)
    # CuPy -> cuda_core, through __cuda_stream__ (or its raw pointer if CuPy predates it).
    obj = cp_stream if hasattr(cp_stream, "__cuda_stream__") else Foreign(cp_stream.ptr)
    ours = device.create_stream(obj)
    assert ours.handle == cp_stream.ptr
    with cp_stream:
        a = cupy.arange(1 << 20, dtype=cupy.float32)
    e = ours.record()
    e.sync()
    assert float(a[-1]) == float((1 << 20) - 1)
    ours.close()
    # cuda_core -> CuPy: through __cuda_stream__ where CuPy reads it
    # (Stream.from_external), else through the raw handle.
    s = device.create_stream()
    if hasattr(cupy.cuda.Stream, "from_external"):
        ext = cupy.cuda.Stream.from_external(s)
    else:
        ext = cupy.cuda.ExternalStream(s.handle)
    assert ext.ptr == s.handle
    with ext:
        b = cupy.full(1000, 3, dtype=cupy.int32)
        total = b.sum()
    s.sync()
    assert int(total) == 3000
    s.close()


@pytest.mark.gpu
def test_nvidia_cuda_core_accepts_our_stream(device):
    core = pytest.importorskip("cuda.core")
    s = device.create_stream()
    theirs = core.Device(0)
    theirs.set_current()
    wrapped = theirs.create_stream(s)
    assert int(wrapped.handle) == s.handle
    wrapped.sync()
    # ... and ours accepts theirs.
    their_stream = theirs.create_stream()
    back = device.create_stream(their_stream)
    assert back.handle == int(their_stream.handle)
    back.sync()
    back.close()
    their_stream.close()
    s.close()
