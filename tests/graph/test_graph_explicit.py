# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs on the GPU: explicit definitions and updates."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from _graph_setup import CFG, ONE, N, _chain, _inputs, _pinned, _skip_if_old_driver, _view, k, mod  # noqa: F401 (fixtures)

from cuda_core import (
    CUDAError,
    CUDAWarning,
    launch,
)
from cuda_core.graph import (
    AllocNode,
    ChildGraphNode,
    CUgraphNodeType,
    EmptyNode,
    ExecutableKernelNode,
    ExecutableMemsetNode,
    FreeNode,
    GraphConditionalType,
    GraphDefinition,
    HostCallbackNode,
    IfElseNode,
    KernelNode,
    MemcpyNode,
    MemsetNode,
    WhileNode,
)

pytestmark = pytest.mark.gpu


# --------------------------------------------------------------------------
# Explicit graph definitions
# --------------------------------------------------------------------------
def _explicit_chain(device, stream, k, hx, hy, dx, dy, hout):
    gdef = GraphDefinition()
    cx = gdef.memcpy(dx, hx, 4 * N)
    cy = gdef.memcpy(dy, hy, 4 * N)
    ks = cx.launch(CFG, k.scale, dx, np.float32(2.0), np.uint64(N))
    ksa = gdef.join(ks, cy).launch(CFG, k.saxpy, np.float32(0.5), dx, dy, np.uint64(N))
    ka = ksa.launch(CFG, k.add_const, dy, np.float32(1.25), np.uint64(N))
    out = ka.memcpy(hout, dy, 4 * N)
    return gdef, (cx, cy, ks, ksa, ka, out)


def test_explicit_definition_matches_capture(device, stream, k):
    x, y, hx, hy, hout, dx, dy, expected = _inputs(device, stream)
    gb = device.create_graph_builder().begin_building()
    _chain(gb, k, hx, hy, dx, dy, hout)
    captured = gb.end_building().complete()
    captured.launch(stream)
    stream.sync()
    from_capture = _view(hout, np.float32, N).copy()
    np.testing.assert_allclose(from_capture, expected, rtol=1e-5, atol=1e-5)

    _view(hout, np.float32, N)[:] = 0
    gdef, (cx, cy, ks, ksa, ka, out) = _explicit_chain(device, stream, k, hx, hy, dx, dy, hout)
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(_view(hout, np.float32, N), from_capture)

    # Structure and node properties.
    nodes = gdef.nodes()
    assert len(nodes) == 7 and ks in nodes
    assert sum(isinstance(n, EmptyNode) for n in nodes) == 1
    edges = gdef.edges()
    assert (cx, ks) in edges and (ka, out) in edges and len(edges) == 6
    assert set(ks.pred) == {cx} and ks in cx.succ and len(ksa.pred) == 1
    assert isinstance(ks, KernelNode) and ks.type == CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL
    assert ks.grid == CFG.grid and ks.block == CFG.block and ks.shmem_size == 0
    assert ks.kernel == k.scale and ks.config == CFG
    assert isinstance(out, MemcpyNode) and out.size == 4 * N
    assert out.dst == hout.handle and out.src == dy.handle
    assert ks.graph == gdef and gdef._entry.type is None
    assert len(gdef._entry.succ) == 0 and len(gdef._entry.pred) == 0  # as upstream: empty


def test_explicit_memset_alloc_free_and_callbacks(device, stream):
    h = _pinned(64)
    arr = _view(h, np.uint16, 32)
    arr[:] = 0
    order = []
    gdef = GraphDefinition()
    alloc = gdef.allocate(64)
    assert isinstance(alloc, AllocNode) and alloc.bytesize == 64 and alloc.dptr != 0
    assert alloc.memory_type == "device" and alloc.device_id == device.device_id
    ms = alloc.memset(alloc.dptr, np.uint16(0xBEEF), 32)
    assert isinstance(ms, MemsetNode)
    assert (ms.value, ms.element_size, ms.width, ms.height) == (0xBEEF, 2, 32, 1)
    cp = ms.memcpy(h.handle, alloc.dptr, 64, dst_owner=h)
    first = lambda: order.append(1)  # noqa: E731
    cb1 = cp.callback(first)
    # On a host node ``callback`` is the property holding its callable (as in
    # cuda.core), so further nodes are chained through join().
    assert isinstance(cb1, HostCallbackNode) and cb1.callback is first
    cb2 = cb1.join().callback(lambda: order.append(2))
    cb3 = cb2.join().callback(lambda: order.append(3))
    free = cb3.deallocate(alloc.dptr)
    assert isinstance(free, FreeNode) and free.dptr == alloc.dptr
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert (arr == 0xBEEF).all()
    assert order == [1, 2, 3]
    graph.launch(stream)
    stream.sync()
    assert order == [1, 2, 3, 1, 2, 3]


def test_captured_callbacks_run_in_order(device, stream, k):
    order = []
    gb = device.create_graph_builder().begin_building()
    for i in range(5):
        gb.callback(lambda i=i: order.append(i))
        launch(gb, ONE, k.empty_kernel)
    graph = gb.end_building().complete()
    graph.launch(stream)
    stream.sync()
    assert order == [0, 1, 2, 3, 4]
    idle = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="not being built"):
        idle.callback(print)
    with pytest.raises(RuntimeError, match="not being built"):  # the capture is checked first
        idle.callback(print, user_data=b"x")
    idle.close()


def test_callback_exception_goes_to_unraisablehook(device, stream, monkeypatch):
    def boom():
        raise ValueError("graph callback failure")

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: seen.append(str(args.exc_value)))
    gdef = GraphDefinition()
    gdef.callback(boom)
    graph = gdef.instantiate()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph.launch(stream)
        stream.sync()
    assert seen == ["graph callback failure"]
    assert not any(issubclass(w.category, CUDAWarning) for w in caught)


def test_explicit_while_loop_and_if_else(device, stream, k):
    h = _pinned(12)
    arr = _view(h, np.int32, 3)
    arr[:] = 0
    gdef = GraphDefinition()
    cond = gdef.create_condition(default_value=1)
    try:
        loop = gdef.while_loop(cond)
    except RuntimeError as exc:
        _skip_if_old_driver(exc)
    assert isinstance(loop, WhileNode) and loop.cond_type == GraphConditionalType.WHILE
    assert loop.condition == cond and len(loop.branches) == 1
    loop.body.launch(ONE, k.count_loop, h.handle, np.int32(9), cond)
    cond2 = gdef.create_condition()
    setter = loop.launch(ONE, k.set_cond, cond2, np.uint32(0))
    try:
        ie = setter.if_else(cond2)
    except RuntimeError as exc:
        _skip_if_old_driver(exc)
    assert isinstance(ie, IfElseNode)
    ie.then.launch(ONE, k.add_one, h.handle + 4)
    ie.else_.launch(ONE, k.add_one, h.handle + 8)
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert arr.tolist() == [9, 0, 1]


def test_embed_definition_and_child_graph_view(device, stream, k):
    h = _pinned(4)
    arr = _view(h, np.int32, 1)
    arr[:] = 0
    child = GraphDefinition()
    child.launch(ONE, k.add_one, h.handle).launch(ONE, k.add_one, h.handle)
    parent = GraphDefinition()
    node = parent.embed(child)
    assert isinstance(node, ChildGraphNode)
    assert len(node.child_graph.nodes()) == 2
    node.launch(ONE, k.add_one, h.handle)
    graph = parent.instantiate()
    graph.launch(stream)
    stream.sync()
    assert arr[0] == 3


# --------------------------------------------------------------------------
# Updates
# --------------------------------------------------------------------------
def _scale_graph(device, k, buf, factor):
    gb = device.create_graph_builder().begin_building()
    launch(gb, CFG, k.scale, buf, np.float32(factor), np.uint64(N))
    return gb.end_building()


def test_whole_graph_update_with_new_arguments(device, stream, k):
    h = _pinned(4 * N)
    arr = _view(h, np.float32, N)
    arr[:] = 1.0
    graph = _scale_graph(device, k, h, 2.0).complete()
    graph.launch(stream)
    stream.sync()
    assert (arr == 2.0).all()
    graph.update(_scale_graph(device, k, h, 3.0))
    graph.launch(stream)
    stream.sync()
    assert (arr == 6.0).all()


def test_whole_graph_update_from_explicit_definition(device, stream, k):
    h = _pinned(4 * N)
    arr = _view(h, np.float32, N)
    arr[:] = 6.0
    graph = _scale_graph(device, k, h, 2.0).complete()
    gdef = GraphDefinition()
    gdef.launch(CFG, k.scale, h, np.float32(0.5), np.uint64(N))
    graph.update(gdef)
    graph.launch(stream)
    stream.sync()
    assert (arr == 3.0).all()


def test_update_topology_mismatch_raises(device, stream, k):
    h = _pinned(4 * N)
    graph = _scale_graph(device, k, h, 2.0).complete()
    gb = device.create_graph_builder().begin_building()
    launch(gb, CFG, k.scale, h, np.float32(2.0), np.uint64(N))
    launch(gb, CFG, k.scale, h, np.float32(2.0), np.uint64(N))
    gb.end_building()
    with pytest.raises(CUDAError, match="TOPOLOGY_CHANGED") as info:
        graph.update(gb)
    assert info.value.reason == "CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED"
    graph.launch(stream)  # still usable
    stream.sync()


def test_node_updates_definition_and_executable(device, stream, k):
    ones = _pinned(4 * N)
    _view(ones, np.float32, N)[:] = 1.0
    h = _pinned(4 * N)
    arr = _view(h, np.float32, N)
    d = device.allocate(4 * N, stream=stream)
    stream.sync()
    gdef = GraphDefinition()
    kn = gdef.memcpy(d, ones, 4 * N).launch(CFG, k.scale, d, np.float32(2.0), np.uint64(N))
    ms = kn.memset(d, np.float32(0.0), 1)  # zero the first element afterwards
    ms.memcpy(h, d, 4 * N)
    graph = gdef.instantiate()

    view = graph[kn]
    assert isinstance(view, ExecutableKernelNode) and view.node is kn and view.graph is graph
    assert isinstance(graph[ms], ExecutableMemsetNode)
    view.update(config=CFG, kernel=k.scale, args=(d, np.float32(5.0), np.uint64(N)))
    graph.launch(stream)
    stream.sync()
    assert arr[0] == 0.0 and (arr[1:] == 5.0).all()

    assert view.is_enabled
    view.disable()
    assert not view.is_enabled
    graph[ms].disable()
    graph.launch(stream)
    stream.sync()
    assert (arr == 1.0).all()  # both nodes skipped
    view.enable()
    graph[ms].enable()

    # A definition update changes later instantiations only.
    kn.update(args=(d, np.float32(10.0), np.uint64(N)))
    ms.update(value=np.float32(7.0))
    assert ms.value == np.float32(7.0).view(np.uint32) and ms.element_size == 4
    graph.launch(stream)
    stream.sync()
    assert arr[0] == 0.0 and arr[1] == 5.0
    graph2 = gdef.instantiate()
    graph2.launch(stream)
    stream.sync()
    assert arr[0] == 7.0 and arr[1] == 10.0
    with pytest.raises(TypeError, match="args"):
        kn.update(kernel=k.scale)


def test_captured_kernel_node_keeps_its_arguments_on_config_update(device, stream, k):
    # launch() hands the driver the arguments as one parameter buffer where the
    # layout allows it; updating such a captured node's config alone must keep
    # the argument values the driver holds.
    h = _pinned(4 * N)
    arr = _view(h, np.float32, N)
    arr[:] = 1.0
    gb = device.create_graph_builder().begin_building()
    launch(gb, ONE, k.scale, h, np.float32(3.0), np.uint64(N))
    gb.end_building()
    assert k.scale._plan.layout.bufsize == 8 + 4 + 4 + 8  # the buffer path was taken
    gdef = gb.graph_definition
    (kn,) = [n for n in gdef.nodes() if isinstance(n, KernelNode)]
    kn.update(config=CFG)
    assert kn.grid == (CFG.grid[0], 1, 1)
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(arr, np.full(N, 3.0, np.float32))  # every element, scaled once
    graph.close()
    gb.close()
