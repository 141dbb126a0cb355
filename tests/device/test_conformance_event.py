# SPDX-License-Identifier: Apache-2.0
"""Event subtraction behaves as in cuda.core: its three RuntimeErrors, word for word.

Also what a graph node does to an Event's lifetime: closing the Event leaves
its ``CUevent`` alive while a node uses it.
"""

from __future__ import annotations

import gc
import time

import pytest
from _helpers import Blocker

from cuda_core import CUDAError, EventOptions
from cuda_core.graph import GraphDefinition, _attachments

pytestmark = pytest.mark.gpu

TIMING_DISABLED = (
    "Both Events must be created with timing enabled in order to subtract them; use "
    "EventOptions(timing_enabled=True) when creating both events."
)
NOT_RECORDED = (
    "Both Events must be recorded before they can be subtracted; use Stream.record() to "
    "record both events to a stream."
)
NOT_COMPLETED = (
    "One or both events have not completed; use Event.sync(), Stream.sync(), or "
    "Device.sync() to wait for the events to complete before subtracting them."
)


def _wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        _attachments.drain()
        time.sleep(0.01)
    return True


def test_subtracting_untimed_events(device, stream):
    a = stream.record()
    b = stream.record()
    stream.sync()
    with pytest.raises(RuntimeError) as info:
        b - a  # noqa: B018
    assert str(info.value) == TIMING_DISABLED
    # One timed event is not enough.
    timed = stream.record(options=EventOptions(timing_enabled=True))
    stream.sync()
    with pytest.raises(RuntimeError) as info:
        timed - a  # noqa: B018
    assert str(info.value) == TIMING_DISABLED


def test_subtracting_unrecorded_events(device, stream):
    a = device.create_event(EventOptions(timing_enabled=True))
    b = device.create_event(EventOptions(timing_enabled=True))
    with pytest.raises(RuntimeError) as info:
        b - a  # noqa: B018
    assert str(info.value) == NOT_RECORDED
    assert isinstance(info.value, CUDAError)  # and it carries the driver status
    assert info.value.name == "CUDA_ERROR_INVALID_HANDLE"


def test_subtracting_incomplete_events(device, stream):
    blocker = Blocker(stream)
    try:
        start = stream.record(options={"timing_enabled": True})
        end = stream.record(options={"timing_enabled": True})
        time.sleep(0.02)
        with pytest.raises(RuntimeError) as info:
            end - start  # noqa: B018
        assert str(info.value) == NOT_COMPLETED
        assert info.value.name == "CUDA_ERROR_NOT_READY"
        blocker.release()
        end.sync()
        assert end - start >= 0.0
    finally:
        blocker.free()


def _event_in_a_graph(device):
    """An Event recorded and waited for by a graph: (event, definition, graph, share)."""
    ev = device.create_event()
    gdef = GraphDefinition()
    gdef.record(ev).wait(ev)
    graph = gdef.instantiate()
    share = ev._share
    assert share.claims == 3  # the Event's, the record node's and the wait node's
    return ev, gdef, graph, share


def _run_then_release(stream, gdef, graph, share):
    """Launch the graph without the Event's claim, close it: the last user destroys the event."""
    for _ in range(3):
        graph.launch(stream)
    stream.sync()
    gdef.close()
    graph.close()
    stream.sync()
    assert _wait_for(lambda: share.claims == 0)


def test_closing_an_event_used_by_a_graph_keeps_its_cuevent(device, stream):
    ev, gdef, graph, share = _event_in_a_graph(device)
    ev.close()
    assert ev.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        ev.handle  # noqa: B018
    assert share.claims == 2  # closing dropped only the Event's claim
    _run_then_release(stream, gdef, graph, share)


def test_dropping_an_unclosed_event_used_by_a_graph_drops_only_its_claim(device, stream):
    ev, gdef, graph, share = _event_in_a_graph(device)
    del ev  # the safety net (a guard on PyPy, __del__ on CPython) drops the Event's claim
    assert _wait_for(lambda: (gc.collect(), share.claims == 2)[1])  # PyPy's collect() returns None
    _run_then_release(stream, gdef, graph, share)


def test_unused_events_keep_the_plain_class(device, stream):
    ev = device.create_event()
    from cuda_core._event import _OpenEvent

    assert type(ev) is _OpenEvent  # no graph: the hot paths are untouched
    ev.close()
