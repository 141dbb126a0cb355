# SPDX-License-Identifier: Apache-2.0
"""Stream: construction rules, default streams, from_handle, the stream protocol (no GPU)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from _stream_setup import ENV, Foreign
from conftest import gpu_status

from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Stream,
    StreamOptions,
)
from cuda_core._default_stream import _leading_int, default_stream
from cuda_core._stream import _as_stream


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
    if not gpu_status()[0]:
        # The repr asks the driver for the stream's context, as cuda.core's does:
        # with a driver present a made-up handle cannot be asked (a real borrowed
        # stream's repr is checked in test_stream_gpu.py).
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
        _as_stream(object())
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
