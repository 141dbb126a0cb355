# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs on the GPU: capture, explicit definitions, conditionals, updates, lifetimes."""

from __future__ import annotations

import gc
import sys
import time
import warnings

import numpy as np
import pytest

from cuda_core import (
    CUDAError,
    CUDAWarning,
    Device,
    GraphMemoryResource,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)
from cuda_core._cuda_ffi import ffi
from cuda_core.graph import (
    AllocNode,
    ChildGraphNode,
    CUgraphNodeType,
    EmptyNode,
    ExecutableKernelNode,
    ExecutableMemsetNode,
    FreeNode,
    Graph,
    GraphBuilder,
    GraphCompleteOptions,
    GraphConditionalType,
    GraphDebugPrintOptions,
    GraphDefinition,
    HostCallbackNode,
    IfElseNode,
    KernelNode,
    MemcpyNode,
    MemsetNode,
    WhileNode,
    _attachments,
)

pytestmark = pytest.mark.gpu

SRC = r"""
extern "C" __device__ __cudart_builtin__ void CUDARTAPI cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);

extern "C" __global__ void empty_kernel() {}

extern "C" __global__ void add_one(int *a) { a[0] += 1; }

extern "C" __global__ void scale(float *x, float s, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void add_const(float *x, float c, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] += c;
}

extern "C" __global__ void set_cond(cudaGraphConditionalHandle h, unsigned int v) {
    cudaGraphSetConditional(h, v);
}

extern "C" __global__ void count_loop(int *counter, int limit, cudaGraphConditionalHandle h) {
    int v = ++counter[0];
    cudaGraphSetConditional(h, v < limit ? 1u : 0u);
}
"""

N = 1000
CFG = LaunchConfig(grid=(N + 127) // 128, block=128)
ONE = LaunchConfig(grid=1, block=1)


def _compile(device):
    prog = Program(SRC, "c++", ProgramOptions(arch=f"sm_{device.arch}"))
    return prog.compile("cubin")


@pytest.fixture(scope="module")
def mod():
    dev = Device(0)
    dev.set_current()
    return _compile(dev)


@pytest.fixture
def k(mod, device):
    class K:
        pass

    ks = K()
    for name in (
        "empty_kernel",
        "add_one",
        "scale",
        "saxpy",
        "add_const",
        "set_cond",
        "count_loop",
    ):
        setattr(ks, name, mod.get_kernel(name))
    return ks


def _pinned(nbytes):
    return LegacyPinnedMemoryResource().allocate(nbytes)


def _view(buf, dtype, count):
    """A NumPy view of a pinned host Buffer."""
    raw = ffi.buffer(ffi.cast("char *", buf.handle), np.dtype(dtype).itemsize * count)
    return np.frombuffer(raw, dtype=dtype)


def _skip_if_old_driver(exc):
    if "Driver version" in str(exc):
        pytest.skip(str(exc))
    raise exc


# --------------------------------------------------------------------------
# Stream capture
# --------------------------------------------------------------------------
def _chain(s, k, hx, hy, dx, dy, hout):
    """The work recorded in the graph tests, on stream (or builder) ``s``."""
    dx.copy_from(hx, stream=s)
    dy.copy_from(hy, stream=s)
    launch(s, CFG, k.scale, dx, np.float32(2.0), np.uint64(N))
    launch(s, CFG, k.saxpy, np.float32(0.5), dx, dy, np.uint64(N))
    launch(s, CFG, k.add_const, dy, np.float32(1.25), np.uint64(N))
    hout.copy_from(dy, stream=s)


def _inputs(device, stream):
    x = np.linspace(-3, 3, N).astype(np.float32)
    y = np.cos(np.arange(N, dtype=np.float32))
    hx, hy, hout = _pinned(4 * N), _pinned(4 * N), _pinned(4 * N)
    _view(hx, np.float32, N)[:] = x
    _view(hy, np.float32, N)[:] = y
    _view(hout, np.float32, N)[:] = 0
    dx = device.allocate(4 * N, stream=stream)
    dy = device.allocate(4 * N, stream=stream)
    expected = 0.5 * (2.0 * x) + y + 1.25
    return x, y, hx, hy, hout, dx, dy, expected.astype(np.float32)


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
    with pytest.raises(ValueError, match="memory_type"):
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
