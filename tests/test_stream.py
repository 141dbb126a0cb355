# SPDX-License-Identifier: Apache-2.0
"""Stream and StreamOptions: options, lifetimes, ordering, threads, interop."""

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
from cuda_core._default_stream import _leading_int, default_stream
from cuda_core._errors import check
from cuda_core._stream import _as_stream

ENV = "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"


class Foreign:
    """A foreign stream object implementing the ``__cuda_stream__`` protocol."""

    def __init__(self, address, version=0):
        self.address = address
        self.version = version

    def __cuda_stream__(self):
        return (self.version, self.address)


# ---------------------------------------------------------------- helpers (GPU)
def _priority_range():
    least, greatest = ffi.new("int *"), ffi.new("int *")
    check(lib.cuCtxGetStreamPriorityRange(least, greatest))
    return least[0], greatest[0]


# ---------------------------------------------------------------- CPU-side
def test_stream_cannot_be_constructed():
    with pytest.raises(RuntimeError, match=r"^Stream objects cannot be instantiated directly\."):
        Stream()
    with pytest.raises(RuntimeError, match="create_stream.*from_handle"):
        Stream(1)


def test_stream_options_defaults_and_validation():
    opts = StreamOptions()
    assert opts.nonblocking is True and opts.priority is None
    assert StreamOptions(nonblocking=False, priority=-1) == StreamOptions(False, -1)
    assert StreamOptions(nonblocking=1).nonblocking is True
    assert StreamOptions(priority=np.int32(-2)).priority == -2
    for bad in ("yes", None, 2, 1.0):
        with pytest.raises(TypeError, match="nonblocking"):
            StreamOptions(nonblocking=bad)
    for bad in ("0", 1.5, True, [0]):
        with pytest.raises(TypeError, match="priority"):
            StreamOptions(priority=bad)


def test_default_streams_are_singletons_with_fixed_handles():
    assert isinstance(LEGACY_DEFAULT_STREAM, Stream)
    assert LEGACY_DEFAULT_STREAM.handle == 1
    assert PER_THREAD_DEFAULT_STREAM.handle == 2
    assert LEGACY_DEFAULT_STREAM.__cuda_stream__() == (0, 1)
    assert PER_THREAD_DEFAULT_STREAM.__cuda_stream__() == (0, 2)
    assert LEGACY_DEFAULT_STREAM != PER_THREAD_DEFAULT_STREAM
    assert hash(LEGACY_DEFAULT_STREAM) != hash(PER_THREAD_DEFAULT_STREAM)
    assert {LEGACY_DEFAULT_STREAM: 1, PER_THREAD_DEFAULT_STREAM: 2}[LEGACY_DEFAULT_STREAM] == 1
    # Closing a module singleton does nothing.
    LEGACY_DEFAULT_STREAM.close()
    assert not LEGACY_DEFAULT_STREAM.is_closed and LEGACY_DEFAULT_STREAM.handle == 1
    assert repr(LEGACY_DEFAULT_STREAM).startswith("<Stream handle=0x1 context=0x")


def test_default_stream_subclassing():
    class MyStream(Stream):
        pass

    assert isinstance(MyStream._legacy_default(), MyStream)
    assert isinstance(MyStream._per_thread_default(), MyStream)


@pytest.mark.parametrize(
    "value, per_thread",
    [
        (None, False),
        ("", False),
        ("0", False),
        ("1", True),
        ("2", True),
        (" 7x", True),
        ("abc", False),
        ("-1", True),
        ("+0", False),
        ("00", False),
    ],
)
def test_default_stream_environment(monkeypatch, value, per_thread):
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    expected = PER_THREAD_DEFAULT_STREAM if per_thread else LEGACY_DEFAULT_STREAM
    assert default_stream() is expected


def test_leading_int_like_strtol():
    assert _leading_int("12abc") == 12
    assert _leading_int("  -3") == -3
    assert _leading_int("x1") == 0
    assert _leading_int("+") == 0


def test_from_handle_is_borrowed_and_compares_by_handle():
    s = Stream.from_handle(0x1234)
    assert s.handle == 0x1234 and isinstance(s.handle, int)
    assert s == Stream.from_handle(0x1234)
    assert hash(s) == hash(Stream.from_handle(0x1234))
    assert s != Stream.from_handle(0x1235)
    assert (s == "x") is False and (s == 0x1234) is False
    assert s.__cuda_stream__() == (0, 0x1234)
    assert repr(s).startswith("<Stream handle=0x1234 context=0x")
    s.close()
    s.close()
    assert s.is_closed
    assert repr(s).startswith("<Stream handle=0x0 ")
    for use in (
        lambda: s.handle,
        s.sync,
        s.record,
        lambda: s.wait(LEGACY_DEFAULT_STREAM),
        s.__cuda_stream__,
        lambda: s.priority,
        lambda: s.is_nonblocking,
        lambda: s.device,
        lambda: s.context,
        s.create_graph_builder,
    ):
        with pytest.raises(RuntimeError, match="closed"):
            use()


@pytest.mark.parametrize("bad", ["0x10", 1.0, None, True, object()])
def test_from_handle_rejects_non_int(bad):
    with pytest.raises(TypeError, match="handle must be an int"):
        Stream.from_handle(bad)


def test_from_handle_rejects_negative():
    with pytest.raises(ValueError, match="non-negative"):
        Stream.from_handle(-1)


def test_as_stream_accepts_streams_and_protocol_objects():
    s = Stream.from_handle(0x5000)
    assert _as_stream(s) is s
    foreign = Foreign(0x6000)
    wrapped = _as_stream(foreign)
    assert isinstance(wrapped, Stream) and wrapped.handle == 0x6000
    assert wrapped._owner is foreign  # keeps the foreign object alive
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got object$"):
        _as_stream(object(), "my_stream")
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got int$"):
        _as_stream(0x5000)


def test_foreign_object_kept_alive_until_close():
    foreign = Foreign(0x7000)
    ref = weakref.ref(foreign)
    wrapped = _as_stream(foreign)
    del foreign
    gc.collect()
    assert ref() is not None
    wrapped.close()
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize(
    "obj, exc, match",
    [
        (
            Foreign(0x10, version=1),
            RuntimeError,
            "The first element of the sequence returned by obj.__cuda_stream__ must be 0, got 1",
        ),
        (Foreign("0x10"), TypeError, "must be an int"),
        (Foreign(-5), OverflowError, "non-negative"),
    ],
)
def test_bad_stream_protocol_objects(obj, exc, match):
    with pytest.raises(exc, match=match):
        _as_stream(obj)


def test_protocol_must_return_a_pair():
    class Triple:
        def __cuda_stream__(self):
            return (0, 1, 2)

    class NotSeq:
        def __cuda_stream__(self):
            return 5

    with pytest.raises(
        RuntimeError, match="must return a sequence with 2 elements, got 3 elements"
    ):
        _as_stream(Triple())
    with pytest.raises(
        RuntimeError, match="must return a sequence with 2 elements, got <class 'int'>"
    ):
        _as_stream(NotSeq())


def test_protocol_as_attribute_is_deprecated():
    class Attr:
        __cuda_stream__ = (0, 0x99)

    with pytest.warns(DeprecationWarning, match="method"):
        assert _as_stream(Attr()).handle == 0x99


def test_wait_and_record_reject_bad_arguments():
    s = Stream.from_handle(0x8000)
    for bad in ("invalid_event", 3, None):
        with pytest.raises(ValueError, match="Event, a Stream"):
            s.wait(bad)
        with pytest.raises(TypeError, match="Event, a Stream"):
            s.wait(bad)
    with pytest.raises(TypeError, match="event must be an Event"):
        s.record("not an event")


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
def test_create_graph_builder_without_graph_module(stream):
    from cuda_core import _slots

    if _slots.GraphBuilder is not None:
        pytest.skip("cuda_core.graph is available; the graph tests cover the builder")
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
