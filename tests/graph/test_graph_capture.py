# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs on the GPU: stream capture and captured conditionals."""

from __future__ import annotations

import numpy as np
import pytest
from _graph_setup import ONE, N, _chain, _inputs, _pinned, _skip_if_old_driver, _view, k, mod  # noqa: F401 (fixtures)

from cuda_core import (
    CUDAError,
    GraphMemoryResource,
    launch,
)
from cuda_core.graph import (
    CUgraphNodeType,
    Graph,
    GraphBuilder,
    GraphCompleteOptions,
    GraphDebugPrintOptions,
    GraphDefinition,
)

pytestmark = pytest.mark.gpu


# --------------------------------------------------------------------------
# Stream capture
# --------------------------------------------------------------------------


def test_captured_chain_matches_eager_and_numpy(device, stream, k):
    x, y, hx, hy, hout, dx, dy, expected = _inputs(device, stream)
    _chain(stream, k, hx, hy, dx, dy, hout)
    stream.sync()
    eager = _view(hout, np.float32, N).copy()
    np.testing.assert_allclose(eager, expected, rtol=1e-5, atol=1e-5)

    _view(hout, np.float32, N)[:] = 0
    gb = device.create_graph_builder().begin_building()
    assert gb.is_building
    _chain(gb, k, hx, hy, dx, dy, hout)
    graph = gb.end_building().complete()
    assert not gb.is_building
    assert isinstance(graph, Graph)
    assert not _view(hout, np.float32, N).any()  # nothing ran during capture
    for _ in range(3):  # relaunching recomputes from the inputs
        graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(_view(hout, np.float32, N), eager)
    graph.upload(stream)
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(_view(hout, np.float32, N), eager)
    graph.close()
    graph.close()
    with pytest.raises(RuntimeError, match="closed"):
        graph.launch(stream)
    gb.close()


def test_complete_options_and_upload_stream(device, stream, k):
    gb = device.create_graph_builder().begin_building()
    launch(gb, ONE, k.empty_kernel)
    gb.end_building()
    g1 = gb.complete(GraphCompleteOptions(upload_stream=stream, use_node_priority=True))
    g2 = gb.complete({"auto_free_on_launch": True})
    g1.launch(stream)
    g2.launch(stream)
    stream.sync()
    assert g1 != g2 and isinstance(g1.handle, int)
    with pytest.raises(TypeError, match="bogus"):
        gb.complete({"bogus": True})


def test_split_and_join(device, stream, k):
    h = _pinned(8)
    arr = _view(h, np.int32, 2)
    arr[:] = 0
    gb = device.create_graph_builder().begin_building()
    launch(gb, ONE, k.add_one, h.handle)
    left, right = gb.split(2)
    assert left is gb and right.is_join_required and not left.is_join_required
    launch(left, ONE, k.add_one, h.handle)
    launch(right, ONE, k.add_one, h.handle + 4)
    launch(right, ONE, k.add_one, h.handle + 4)
    joined = GraphBuilder.join(right, left)
    assert joined is gb
    with pytest.raises(RuntimeError, match="closed"):
        right.begin_building()
    launch(joined, ONE, k.add_one, h.handle)
    graph = joined.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert arr.tolist() == [3, 2]


def test_join_builders_of_different_graphs_fails_in_the_driver(device):
    # As upstream, join() does not check that the builders belong together:
    # the driver refuses to order one capture after another.
    a = device.create_graph_builder().begin_building()
    b = device.create_graph_builder().begin_building()
    with pytest.raises(CUDAError):
        GraphBuilder.join(a, b)
    # The refused dependency invalidated both captures: ending them reports
    # it, as upstream's close() does, and the builders are closed regardless.
    for gb in (a, b):
        with pytest.raises(CUDAError, match="^CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"):
            gb.close()
        gb.close()  # idempotent
        with pytest.raises(RuntimeError, match="closed"):
            gb.begin_building()


def test_builder_misuse_raises(device, stream, k):
    gb = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="not finished building"):
        gb.complete()
    gb.begin_building("thread_local")
    with pytest.raises(RuntimeError, match="already building"):
        gb.begin_building()
    with pytest.raises(RuntimeError, match="not finished building"):
        gb.complete()
    with pytest.raises(RuntimeError, match="while capture is in progress"):
        _ = gb.graph_definition
    launch(gb, ONE, k.empty_kernel)
    gb.end_building()
    with pytest.raises(RuntimeError, match="Cannot resume"):
        gb.begin_building()
    with pytest.raises(RuntimeError, match="not building"):
        gb.end_building()
    graph = gb.complete()
    with pytest.raises(TypeError, match="Stream or GraphBuilder expected, got int"):
        graph.launch(42)
    with pytest.raises(TypeError, match="GraphBuilder or GraphDefinition"):
        graph.update(42)
    unfinished = device.create_graph_builder().begin_building()
    with pytest.raises(ValueError, match="not finished building"):
        graph.update(unfinished)
    unfinished.close()  # discards the partial capture
    assert not unfinished.is_join_required


def test_device_memory_resource_refuses_capture_and_graph_mr_requires_it(device, stream):
    gb = device.create_graph_builder().begin_building()
    with pytest.raises(RuntimeError, match="capturing"):
        device.memory_resource.allocate(64, stream=gb)
    gb.close()
    with pytest.raises(RuntimeError, match="non-capturing"):
        GraphMemoryResource(device).allocate(64, stream=stream)


def test_graph_memory_resource_allocation_in_graph(device, stream, k):
    gmr = GraphMemoryResource(device)
    h = _pinned(4)
    _view(h, np.int32, 1)[:] = 0
    gb = device.create_graph_builder().begin_building()
    buf = gmr.allocate(4, stream=gb)
    assert buf.memory_resource is gmr and buf.size == 4
    buf.fill(0, stream=gb)
    for _ in range(5):
        launch(gb, ONE, k.add_one, buf)
    h.copy_from(buf, stream=gb)
    buf.close(stream=gb)  # a free node in the graph
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert _view(h, np.int32, 1)[0] == 5
    attrs = gmr.attributes
    assert attrs.reserved_mem_high >= attrs.reserved_mem_current >= 0
    assert attrs.used_mem_high >= 4
    attrs.used_mem_high = 0
    attrs.reserved_mem_high = 0
    with pytest.raises(AttributeError, match="only be set to zero"):
        attrs.used_mem_high = 5
    assert "used_mem_current" in repr(attrs)
    graph.close()
    gmr.trim()


def test_embed_child_builder(device, stream, k):
    h = _pinned(4)
    _view(h, np.int32, 1)[:] = 0
    child = device.create_graph_builder().begin_building()
    launch(child, ONE, k.add_one, h.handle)
    launch(child, ONE, k.add_one, h.handle)
    child.end_building()
    parent = device.create_graph_builder().begin_building()
    with pytest.raises(ValueError, match="not finished"):
        parent.embed(device.create_graph_builder())
    parent.embed(child)
    launch(parent, ONE, k.add_one, h.handle)
    parent.embed(child)
    graph = parent.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert _view(h, np.int32, 1)[0] == 5
    kinds = sorted(n.type for n in parent.graph_definition.nodes())
    assert kinds.count(CUgraphNodeType.CU_GRAPH_NODE_TYPE_GRAPH) == 2


def test_dot_print(device, tmp_path, k):
    gb = device.create_graph_builder().begin_building()
    launch(gb, ONE, k.empty_kernel)
    gb.end_building()
    path = tmp_path / "graph.dot"
    gb.debug_dot_print(str(path))
    text = path.read_text()
    assert "digraph" in text and "}" in text
    verbose = tmp_path / "verbose.dot"
    gb.debug_dot_print(verbose, GraphDebugPrintOptions(verbose=True, handles=True))
    assert "digraph" in verbose.read_text()
    assert len(verbose.read_text()) >= len(text)
    gdef = GraphDefinition()
    gdef.launch(ONE, k.empty_kernel)
    gdef.debug_dot_print(tmp_path / "def.dot", {"kernel_node_params": True})
    assert (tmp_path / "def.dot").read_text().lstrip().startswith("digraph")
    with pytest.raises(TypeError, match="path"):
        gdef.debug_dot_print(3.5)


# --------------------------------------------------------------------------
# Conditionals (capture)
# --------------------------------------------------------------------------
def test_while_loop_counts_on_device(device, stream, k):
    h = _pinned(4)
    counter = _view(h, np.int32, 1)
    counter[:] = 0
    limit = 17
    gb = device.create_graph_builder().begin_building()
    try:
        cond = gb.create_condition(default_value=1)
        body = gb.while_loop(cond)
    except RuntimeError as exc:
        gb.close()
        _skip_if_old_driver(exc)
    assert cond.handle != 0
    body.begin_building()
    launch(body, ONE, k.count_loop, h.handle, np.int32(limit), cond)
    body.end_building()
    launch(gb, ONE, k.empty_kernel)
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert counter[0] == limit
    graph.launch(stream)  # default value 1: the body runs once more
    stream.sync()
    assert counter[0] == limit + 1


@pytest.mark.parametrize("value", [0, 1])
def test_if_else_both_branches(device, stream, k, value):
    h = _pinned(8)
    arr = _view(h, np.int32, 2)
    arr[:] = 0
    gb = device.create_graph_builder().begin_building()
    cond = gb.create_condition()
    launch(gb, ONE, k.set_cond, cond, np.uint32(value))
    try:
        then_b, else_b = gb.if_else(cond)
    except RuntimeError as exc:
        gb.close()
        _skip_if_old_driver(exc)
    then_b.begin_building()
    launch(then_b, ONE, k.add_one, h.handle)
    launch(then_b, ONE, k.add_one, h.handle)
    then_b.end_building()
    else_b.begin_building()
    launch(else_b, ONE, k.add_one, h.handle + 4)
    else_b.end_building()
    assert else_b.graph_definition.is_valid
    launch(gb, ONE, k.add_one, h.handle + 4)  # after the conditional node
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert arr.tolist() == ([2, 1] if value else [0, 2])


def test_if_then_skips_when_false(device, stream, k):
    h = _pinned(4)
    arr = _view(h, np.int32, 1)
    arr[:] = 0
    gb = device.create_graph_builder().begin_building()
    cond = gb.create_condition(default_value=False)
    body = gb.if_then(cond)
    body.begin_building()
    launch(body, ONE, k.add_one, h.handle)
    body.end_building()
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert arr[0] == 0


@pytest.mark.parametrize("value", [0, 1, 2, 3])
def test_switch(device, stream, k, value):
    h = _pinned(12)
    arr = _view(h, np.int32, 3)
    arr[:] = 0
    gb = device.create_graph_builder().begin_building()
    cond = gb.create_condition()
    launch(gb, ONE, k.set_cond, cond, np.uint32(value))
    try:
        cases = gb.switch(cond, 3)
    except RuntimeError as exc:
        gb.close()
        _skip_if_old_driver(exc)
    for i, case in enumerate(cases):
        case.begin_building()
        for _ in range(i + 1):
            launch(case, ONE, k.add_one, h.handle + 4 * i)
        case.end_building()
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    expected = [0, 0, 0]
    if value < 3:
        expected[value] = value + 1
    assert arr.tolist() == expected


def test_conditional_input_errors(device):
    gb = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="not being built"):
        gb.create_condition()
    gb.begin_building()
    with pytest.raises(TypeError, match="GraphCondition"):
        gb.while_loop(7)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        gb.create_condition(default_value=-1)
    with pytest.raises(CUDAError):  # as upstream, the driver refuses zero cases
        gb.switch(gb.create_condition(), 0)
    gb.close()
