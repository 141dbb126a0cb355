# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs on the GPU: lifetimes of graphs, builders and what their nodes use; input errors."""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest
from _graph_setup import CFG, ONE, N, _compile, _pinned, _view, k, mod  # noqa: F401 (fixtures)

from cuda_core import (
    CUDAError,
    LaunchConfig,
    launch,
)
from cuda_core.graph import (
    GraphDefinition,
    _attachments,
)

pytestmark = pytest.mark.gpu


# --------------------------------------------------------------------------
# Lifetimes
# --------------------------------------------------------------------------
def test_dropping_all_references_before_launch(device, stream):
    h = _pinned(4 * N)
    out = _view(h, np.float32, N)
    out[:] = 0
    calls = []

    def build():
        mod = _compile(device)
        scale = mod.get_kernel("scale")
        add = mod.get_kernel("add_const")
        src = _pinned(4 * N)
        _view(src, np.float32, N)[:] = np.arange(N, dtype=np.float32)
        dbuf = device.allocate(4 * N, stream=stream)
        stream.sync()
        gdef = GraphDefinition()
        node = gdef.memcpy(dbuf, src, 4 * N)
        node = node.launch(CFG, scale, dbuf, np.float32(3.0), np.uint64(N))
        node = node.launch(CFG, add, dbuf, np.float32(1.0), np.uint64(N))
        node = node.memcpy(h, dbuf, 4 * N)
        node.callback(lambda: calls.append("done"))
        return gdef.instantiate()

    graph = build()  # the module, kernels, buffers, definition and callback are all dropped
    for _ in range(3):
        gc.collect()
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(out, 3.0 * np.arange(N, dtype=np.float32) + 1.0)
    assert calls == ["done"]

    # Closing the executable releases what it kept (asynchronously, after launches end).
    before = _attachments.live_count()
    graph.close()
    stream.sync()
    deadline = time.monotonic() + 5
    while _attachments.live_count() >= before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _attachments.live_count() < before


def test_captured_graph_survives_builder_and_callbacks_dropped(device, stream, k):
    h = _pinned(4)
    arr = _view(h, np.int32, 1)
    arr[:] = 0
    seen = []

    def build():
        gb = device.create_graph_builder().begin_building()
        launch(gb, ONE, k.add_one, h.handle)
        gb.callback(lambda: seen.append(1))
        graph = gb.end_building().complete()
        gb.close()
        return graph

    graph = build()
    gc.collect()
    graph.launch(stream)
    graph.launch(stream)
    stream.sync()
    assert arr[0] == 2 and seen == [1, 1]


def test_explicit_input_errors(device, k):
    gdef = GraphDefinition()
    buf = _pinned(16)
    with pytest.raises(ValueError, match="exceeds"):
        gdef.memcpy(buf, buf.handle, 32)
    with pytest.raises(ValueError, match="dst_owner cannot be used"):
        gdef.memset(buf, 0, 4, dst_owner=buf)
    with pytest.raises(ValueError, match=r"\[0, 256\)"):
        gdef.memset(buf, 300, 4)
    with pytest.raises(ValueError, match="1, 2 or 4 bytes"):
        gdef.memset(buf, b"abc", 1)
    with pytest.raises(TypeError, match="dst must be an int address or a Buffer"):
        gdef.memcpy("x", buf, 4)
    with pytest.raises(TypeError, match="Kernel"):
        gdef.launch(ONE, "kernel")
    with pytest.raises(TypeError, match="unsupported type"):
        gdef.launch(ONE, k.add_one, object())
    with pytest.raises(NotImplementedError, match="cooperative"):
        gdef.launch(LaunchConfig(grid=1, block=1, is_cooperative=True), k.empty_kernel)
    with pytest.raises(ValueError, match="is not a valid GraphMemoryType"):
        gdef.allocate(64, memory_type="texture")
    with pytest.raises(TypeError, match="Event"):
        gdef.record(3)
    with pytest.raises(TypeError, match="GraphDefinition"):
        gdef.embed(3)
    other = GraphDefinition()
    a = other.empty()
    with pytest.raises(CUDAError):  # as upstream, the driver refuses it
        gdef.join(a)
    e = gdef.empty()
    e.destroy()
    assert not e.is_valid
    with pytest.raises(RuntimeError, match="destroyed"):
        e.launch(ONE, k.empty_kernel)
    gdef.close()
    assert a.is_valid and not gdef.is_valid
    with pytest.raises(RuntimeError, match="no longer valid"):
        gdef.empty()


def test_events_in_explicit_graph(device, stream, k):
    ev = device.create_event()
    gdef = GraphDefinition()
    rec = gdef.launch(ONE, k.empty_kernel).record(ev)
    wait = rec.wait(ev)
    assert rec.event is ev and wait.event is ev
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert ev.is_done


def test_stream_create_graph_builder_borrows_stream(device, stream, k):
    h = _pinned(4)
    arr = _view(h, np.int32, 1)
    arr[:] = 0
    gb = stream.create_graph_builder()
    assert gb.stream is stream
    gb.begin_building()
    assert gb.__cuda_stream__() == (0, stream.handle)
    launch(gb, ONE, k.add_one, h.handle)
    graph = gb.end_building().complete()
    gb.close()
    assert not stream.is_closed  # the builder did not own it
    graph.launch(stream)
    stream.sync()
    assert arr[0] == 1
