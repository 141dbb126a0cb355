# SPDX-License-Identifier: Apache-2.0
"""Graphs behave as cuda.core's: destroyed nodes and child graphs, closed Buffers, edges."""

from __future__ import annotations

import pytest
from _conformance_graph_setup import (
    ONE,
    _pinned,
    gpu,
    kernels,  # noqa: F401 (fixtures)
)

from cuda_core import (
    CUDAError,
    LaunchConfig,
    launch,
)
from cuda_core.graph import (
    GraphDefinition,
)


# ==========================================================================
# 1c. Destroyed nodes, destroyed child graphs, closed Buffers
# ==========================================================================
@gpu
def test_destroyed_nodes_keep_their_recorded_properties(device, stream, kernels):
    h = _pinned(64)
    ev = device.create_event()
    gdef = GraphDefinition()
    kn = gdef.launch(LaunchConfig(grid=2, block=32, shmem_size=16), kernels.bump, h)
    d = device.allocate(64, stream=stream)
    stream.sync()
    mc = gdef.memcpy(d, h.handle, 16)
    ms = gdef.memset(h, 7, 16)
    rec = gdef.record(ev)
    cb = gdef.callback(print)
    before = {
        "kn": (kn.grid, kn.block, kn.shmem_size, kn.kernel, kn.config),
        "mc": (mc.dst, mc.src, mc.size),
        "ms": (ms.dptr, ms.value, ms.element_size, ms.width, ms.height, ms.pitch),
        "rec": rec.event,
        "cb": cb.callback,
    }
    for node in (kn, mc, ms, rec, cb):
        node.destroy()
        node.destroy()  # a no-op
        assert not node.is_valid
        assert node.type is None and node.handle is None
        assert len(node.pred) == 0 and len(node.succ) == 0
        assert node.graph == gdef
    # A destroyed node shows a null handle and what it recorded when made.
    assert repr(kn) == f"<KernelNode handle=0x0 kernel={kn.kernel.handle:#x}>"
    after = {
        "kn": (kn.grid, kn.block, kn.shmem_size, kn.kernel, kn.config),
        "mc": (mc.dst, mc.src, mc.size),
        "ms": (ms.dptr, ms.value, ms.element_size, ms.width, ms.height, ms.pitch),
        "rec": rec.event,
        "cb": cb.callback,
    }
    assert after == before
    assert before["kn"][:3] == ((2, 1, 1), (32, 1, 1), 16)
    gdef.close()
    d.close(stream)
    stream.sync()


@gpu
def test_nodes_of_a_graph_with_memory_nodes_cannot_be_destroyed(device):
    # The driver forbids deleting any node of a graph that holds allocation
    # or free nodes; the refusal leaves the nodes as they were.
    gdef = GraphDefinition()
    first = gdef.empty()
    alloc = first.allocate(64)
    free = alloc.deallocate(alloc.dptr)
    before = (alloc.dptr, alloc.bytesize, alloc.device_id, alloc.memory_type, free.dptr)
    for node in (first, free, alloc):
        with pytest.raises(CUDAError, match="^CUDA_ERROR_NOT_SUPPORTED"):
            node.destroy()
        assert node.is_valid and node.handle is not None
    assert (alloc.dptr, alloc.bytesize, alloc.device_id, alloc.memory_type, free.dptr) == before
    assert set(alloc.pred) == {first} and set(free.pred) == {alloc}
    gdef.close()


@gpu
def test_join_skips_destroyed_nodes(device):
    gdef = GraphDefinition()
    a = gdef.empty()
    gone = gdef.empty()
    gone.destroy()
    joined = gdef.join(a, gone)
    assert set(joined.pred) == {a}
    with pytest.raises(RuntimeError, match="destroyed"):  # kept stricter: see differences
        gone.join()
    gdef.close()


@gpu
def test_destroying_a_child_graph_node_invalidates_its_graph(device):
    child = GraphDefinition()
    child.empty()
    parent = GraphDefinition()
    cnode = parent.embed(child)
    view = cnode.child_graph
    (inner,) = view.nodes()
    cnode.destroy()
    assert not view.is_valid and not inner.is_valid
    assert cnode.child_graph is view
    for use in (view.nodes, view.edges, view.empty, view.instantiate):
        with pytest.raises(CUDAError, match="^CUDA_ERROR_INVALID_VALUE"):
            use()
    parent.close()
    child.close()


@gpu
def test_closed_buffers_as_operands(device):
    h = _pinned(64)
    closed = _pinned(64)
    closed.close()
    gdef = GraphDefinition()
    with pytest.raises(ValueError, match="^dst Buffer has no active allocation$"):
        gdef.memset(closed, 0, 16)
    with pytest.raises(ValueError, match="^src Buffer has no active allocation$"):
        gdef.memcpy(h, closed, 16)
    with pytest.raises(ValueError, match="^dst_owner Buffer has no active allocation$"):
        gdef.memset(h.handle, 0, 16, dst_owner=closed)
    with pytest.raises(ValueError, match="^src_owner Buffer has no active allocation$"):
        gdef.memcpy(h.handle, h.handle + 32, 16, src_owner=closed)
    with pytest.raises(ValueError, match="^dst_owner cannot be used when dst is a Buffer$"):
        gdef.memset(h, 0, 16, dst_owner=h)
    gdef.close()


# ==========================================================================
# 1d. The edge API
# ==========================================================================
@gpu
def test_edges_the_driver_refuses(device):
    gdef = GraphDefinition()
    a, b = gdef.empty(), gdef.empty()
    other = GraphDefinition()
    foreign = other.empty()
    gone = gdef.empty()
    gone.destroy()
    with pytest.raises(TypeError, match="^expected GraphNode, got int$"):
        a.succ.add(1)
    for bad in (foreign, a, gone):
        with pytest.raises(CUDAError):
            a.succ.add(bad)
    with pytest.raises(CUDAError):
        gdef.join(foreign)
    with pytest.raises(CUDAError):
        gdef._entry.succ.add(a)
    assert len(gdef._entry.succ) == 0 and len(gdef._entry.pred) == 0
    assert b not in a.succ
    other.close()
    gdef.close()


@gpu
def test_edge_set_operations(device):
    gdef = GraphDefinition()
    a, b, c = gdef.empty(), gdef.empty(), gdef.empty()
    a.succ.update(b)  # a node as such
    assert set(a.succ) == {b}
    a.succ.update([c], [b])  # iterables; present nodes skipped
    assert set(a.succ) == {b, c} and a in c.pred
    with pytest.raises(TypeError, match="^expected GraphNode, got str$"):
        a.succ.update(["x"])
    text = repr(a.succ)
    assert text.startswith("{") and text.endswith("}") and repr(b) in text and repr(c) in text
    a.succ.discard("not a node")
    a.succ.discard(a)  # absent: no-op
    proxy = a.succ
    proxy -= {b}
    assert set(a.succ) == {c}
    proxy |= {b}
    assert set(a.succ) == {b, c}
    a.succ.clear()
    assert len(a.succ) == 0 and len(b.pred) == 0
    assert repr(a.succ) == "{}"
    gdef.close()


# ==========================================================================
# 1e. Launching kernels into a graph
# ==========================================================================
@gpu
def test_launch_into_a_node_or_definition_is_a_type_error(device, kernels):
    gdef = GraphDefinition()
    node = gdef.launch(ONE, kernels.nothing)
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got KernelNode$"):
        launch(node, ONE, kernels.nothing)
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got GraphDefinition$"):
        launch(gdef, ONE, kernels.nothing)
    gdef.close()
