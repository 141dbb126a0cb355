# SPDX-License-Identifier: Apache-2.0
"""The one constructor of each resource: ``_stream._adopt`` and ``_event._adopt``.

Every path that makes a Stream or an Event object (create, wrap, import,
green contexts) goes through these; here they run over made-up handles, with
the driver's destroy calls replaced, so the checks need no GPU.
"""

from __future__ import annotations

import gc

import pytest

import cuda_core._event as event_mod
import cuda_core._stream as stream_mod
from cuda_core import Event, Stream
from cuda_core._cuda_ffi import ffi
from cuda_core._lifetime import GUARD_HANDLES


def _collect():
    for _ in range(3):
        gc.collect()


@pytest.fixture
def destroyed(monkeypatch):
    """Addresses passed to the finalizers' destroy calls of streams and events."""
    calls = []

    def destroy(handle, *context):  # events pass their context too
        calls.append(int(ffi.cast("intptr_t", handle)))

    monkeypatch.setattr(stream_mod, "_destroy_stream", destroy)
    monkeypatch.setattr(event_mod, "_destroy_event", destroy)
    return calls


def test_owned_stream_is_open_and_released_once_if_never_closed(destroyed):
    s = stream_mod._adopt(ffi.cast("CUstream", 0x1000), 0x1000, None)
    assert type(s) is stream_mod._OpenStream and isinstance(s, Stream)
    assert (s._h, s._kind, s._ctx, s._closed) == (0x1000, stream_mod._OWNED, None, False)
    assert (getattr(s, "_guard", None) is not None) is GUARD_HANDLES
    del s
    _collect()
    assert destroyed == [0x1000]


def test_owned_stream_keeps_its_owner_and_known_options(destroyed):
    owner = object()
    s = stream_mod._adopt(
        ffi.cast("CUstream", 0x2000), 0x2000, None, owner=owner, options=(True, -1)
    )
    assert s._owner is owner
    assert (s._nonblocking, s._priority) == (True, -1)
    del s
    _collect()
    assert destroyed == [0x2000]


def test_borrowed_stream_is_plain_and_owns_nothing(destroyed):
    foreign = object()
    c = ffi.cast("CUstream", 0x3000)
    s = stream_mod._adopt(c, 0x3000, None, stream_mod._BORROWED, foreign)
    assert type(s) is Stream and s._owner is foreign and not s._closed
    assert s.handle == 0x3000
    del s
    _collect()
    assert destroyed == []


def test_paths_that_wrap_use_the_constructor():
    s = Stream.from_handle(0x4000)
    assert type(s) is Stream and s._kind == stream_mod._BORROWED and s._h == 0x4000
    legacy = Stream._legacy_default()
    assert legacy._kind == stream_mod._BUILTIN and legacy._h == 1

    class Foreign:
        def __cuda_stream__(self):
            return (0, 0x5000)

    wrapped = Stream._wrap(Foreign())
    assert wrapped._h == 0x5000 and isinstance(wrapped._owner, Foreign)
    again = Stream._wrap(wrapped)
    assert again._owner is wrapped and again._h == 0x5000


def test_owned_stream_of_a_subclass_is_its_open_twin(destroyed):
    class Mine(Stream):
        __slots__ = ()

    s = stream_mod._adopt(ffi.cast("CUstream", 0x6000), 0x6000, None, cls=Mine)
    assert isinstance(s, Mine) and type(s) is not Mine and type(s)._plain is Mine
    del s
    _collect()
    assert destroyed == [0x6000]


@pytest.mark.parametrize("ipc", [False, True])
def test_event_is_open_and_released_once_if_never_closed(destroyed, ipc):
    flags = event_mod._DISABLE_TIMING | (event_mod._INTERPROCESS if ipc else 0)
    e = event_mod._adopt(ffi.cast("CUevent", 0x7000), None, flags)
    want = event_mod._OpenIpcEvent if ipc else event_mod._OpenEvent
    assert type(e) is want and isinstance(e, Event)
    assert (e._flags, e._ctx, e._closed, e._share) == (flags, None, False, None)
    assert (getattr(e, "_guard", None) is not None) is GUARD_HANDLES
    del e
    _collect()
    assert destroyed == [0x7000]


def test_event_of_a_subclass_is_its_open_twin(destroyed):
    class Mine(Event):
        __slots__ = ()

    e = event_mod._adopt(ffi.cast("CUevent", 0x8000), None, 0, Mine)
    assert isinstance(e, Mine) and type(e)._plain is Mine
    del e
    _collect()
    assert destroyed == [0x8000]


_UNSET = object()


def _state(obj):
    """Every slot of ``obj`` (the guard only as present or not): what a constructor fills in."""
    names = {n for k in type(obj).__mro__ for n in k.__dict__.get("__slots__", ())}
    out = {n: getattr(obj, n, _UNSET) for n in names - {"_guard"}}
    out["_guard"] = getattr(obj, "_guard", None) is not None
    return type(obj), out


def test_create_event_makes_what_adopt_makes(destroyed, monkeypatch):
    # Device.create_event's common case builds the event inline on CPython.
    import cuda_core._device as device_mod

    c_event = ffi.cast("CUevent", 0x9000)
    monkeypatch.setattr(device_mod, "_cc_event_new_untimed", lambda c_ctx: c_event)
    dev = object.__new__(device_mod.Device)
    dev._has_inited, dev._c_ctx, dev._context = True, None, None
    made = dev.create_event()
    want = event_mod._adopt(c_event, None, event_mod._DISABLE_TIMING)
    assert _state(made) == _state(want)
    del made, want
    _collect()
    assert destroyed == [0x9000, 0x9000]  # each by its safety net, once


def test_new_default_stream_makes_what_adopt_makes(destroyed, monkeypatch):
    # _new_default_stream (Device.create_stream()) builds the stream inline on CPython.
    c_stream = ffi.cast("CUstream", 0xA000)
    monkeypatch.setattr(stream_mod, "_cc_stream_new", lambda c_ctx: c_stream)
    monkeypatch.setattr(stream_mod, "_cc_last_handle", lambda: 0xA000)

    class Ctx:
        _handle = None

    ctx = Ctx()
    made = stream_mod._new_default_stream(ctx)
    want = stream_mod._adopt(c_stream, 0xA000, ctx)
    assert _state(made) == _state(want) and made._ctx is ctx
    del made, want
    _collect()
    assert destroyed == [0xA000, 0xA000]
