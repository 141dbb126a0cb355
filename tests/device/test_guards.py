# SPDX-License-Identifier: Apache-2.0
"""Safety nets of open one-handle objects: ``__del__`` on CPython, guards on PyPy.

An open event or owned stream that is dropped without ``close()`` is still
released.  On CPython its open twin carries a ``__del__``; on PyPy the
library's own twins carry none (PyPy's finalizer queue costs about 0.2 µs per
collected object) and the object holds a guard, ``ffi.gc(handle, release)``,
that ``close()`` detaches.  Either way an object is released once: by
``close()`` or by its safety net, never both.
"""

from __future__ import annotations

import gc
import sys

from cuda_core._cuda_ffi import ffi
from cuda_core._lifetime import GUARD_HANDLES, drop_guard, open_class, open_handle_class

IS_PYPY = sys.implementation.name == "pypy"


def _address(cdata):
    return int(ffi.cast("intptr_t", cdata))


def _collect():
    for _ in range(3):
        gc.collect()


def test_guards_are_used_on_pypy_only():
    assert GUARD_HANDLES is IS_PYPY


def test_library_twins_carry_a_del_only_where_unguarded():
    from cuda_core._event import _OpenEvent, _OpenIpcEvent
    from cuda_core._event_share import _OpenSharedEvent
    from cuda_core._stream import _OpenStream

    for twin in (_OpenEvent, _OpenIpcEvent, _OpenStream):
        assert ("__del__" in twin.__dict__) is not IS_PYPY, twin
    # Shared events move their guard to the share (see claim_event); the
    # shared twin's __del__ serves user subclasses created with one.
    assert "__del__" in _OpenSharedEvent.__dict__


def test_user_subclass_twins_keep_their_del():
    from cuda_core import Event
    from cuda_core._event import _event_finalizer

    class MyEvent(Event):
        __slots__ = ()

    twin = open_class(MyEvent, _event_finalizer)
    assert "__del__" in twin.__dict__  # only guarded=True twins drop it, and only on PyPy


def _guarded_thing():
    released, destroyed, finalized = [], [], []

    class Thing:
        __slots__ = ("_handle", "_closed", "_guard", "__weakref__")

        def close(self):
            """Close."""

        def sync(self):
            """Wait."""

    def destroy(handle):
        destroyed.append(_address(handle))
        return 0

    twin = open_handle_class(
        Thing, lambda self: finalized.append(_address(self._handle)), destroy, lambda handle: 0
    )

    def make(address):
        obj = twin()
        obj._handle = ffi.cast("void *", address)
        obj._closed = False
        if GUARD_HANDLES:
            obj._guard = ffi.gc(obj._handle, lambda h: released.append(_address(h)))
        return obj

    return Thing, make, released, destroyed, finalized


def test_dropped_object_is_released_once_by_its_safety_net():
    plain, make, released, destroyed, finalized = _guarded_thing()
    dropped, closed = make(0x10), make(0x20)
    closed.close()
    assert type(closed) is plain and closed._closed
    assert destroyed == [0x20]
    del dropped, closed
    _collect()
    nets = released if GUARD_HANDLES else finalized
    unused = finalized if GUARD_HANDLES else released
    assert nets == [0x10]  # the dropped one only: close() detached the other's net
    assert unused == []
    assert destroyed == [0x20]  # close() destroys; the safety net uses its own release


def test_drop_guard_detaches_once_and_ignores_unguarded_objects():
    _, make, released, _, _ = _guarded_thing()
    obj = make(0x30)
    assert drop_guard(obj) is GUARD_HANDLES  # only PyPy objects carry one
    assert drop_guard(obj) is False  # already detached: nothing happens
    assert getattr(obj, "_guard", None) is None
    del obj
    _collect()
    assert released == []

    class Unguarded:
        __slots__ = ("_guard",)

    assert drop_guard(Unguarded()) is False  # no guard set at all: nothing to do


def test_shared_event_dropped_unclosed_gives_up_only_its_claim(monkeypatch):
    # An event a graph node claims: its safety net (the __del__ of the shared
    # twin on CPython, a guard moved to the share on PyPy) drops the Event's
    # claim, never destroys the CUevent the node still uses.
    import types

    from _helpers import record_calls

    import cuda_core._event as event_mod
    import cuda_core._event_share as share_mod
    from cuda_core._event import _adopt

    destroyed = record_calls(monkeypatch, event_mod, "_destroy_event")
    last = []

    def destroy(handle):
        last.append(_address(handle))
        return 0

    monkeypatch.setattr(
        share_mod, "lib", types.SimpleNamespace(cc_event_destroy_in=lambda ctx, h: destroy(h))
    )
    event = _adopt(ffi.cast("CUevent", 0x40), None, 0)
    claim = share_mod.claim_event(event)
    share = event._share
    assert share.claims == 2 and type(event) is share_mod._OpenSharedEvent
    del event
    _collect()
    assert share.claims == 1  # the Event's claim went with it
    assert destroyed == [] and last == []  # the node's claim keeps the CUevent
    claim.drop()
    assert share.claims == 0 and last == [0x40]  # the last claim destroyed it, once
    _collect()
    assert destroyed == []
