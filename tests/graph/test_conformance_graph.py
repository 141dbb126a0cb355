# SPDX-License-Identifier: Apache-2.0
"""Graphs behave as in cuda.core: ownership, checks, their moment and their words.

One section per group of rules (options and instantiation; what graphs keep
alive; destroyed nodes; the edge API; launching into graphs; the builder's
states; GraphMemoryResource; ``Graph.update``).  Tests that need no GPU come
first in each section; the others are marked ``gpu``.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import time
import weakref

import numpy as np
import pytest

from cuda_core import (
    Buffer,
    CUDAError,
    GraphMemoryResource,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    MemoryResource,
    Program,
    ProgramOptions,
    Stream,
    launch,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._memory._release import _SharedRelease, claim_allocation
from cuda_core.graph import (
    GraphBuilder,
    GraphCompleteOptions,
    GraphDebugPrintOptions,
    GraphDefinition,
    _attachments,
)
from cuda_core.graph._graph import _instantiate_error

gpu = pytest.mark.gpu

SRC = r"""
extern "C" __global__ void nothing() {}
extern "C" __global__ void bump(int *a) { a[0] += 1; }
"""
ONE = LaunchConfig(grid=1, block=1)


@pytest.fixture(scope="module")
def kernels():
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    code = Program(SRC, "c++", ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")

    class K:
        nothing = code.get_kernel("nothing")
        bump = code.get_kernel("bump")

    yield K
    code.close()


def _pinned(nbytes):
    return LegacyPinnedMemoryResource().allocate(nbytes)


def _view(buf, dtype, count):
    raw = ffi.buffer(ffi.cast("char *", buf.handle), np.dtype(dtype).itemsize * count)
    return np.frombuffer(raw, dtype=dtype)


def _wait_for(predicate, timeout=5.0):
    """Poll ``predicate`` (draining released attachments) until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        _attachments.drain()
        gc.collect()
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _fake_builder():
    # Over a borrowed handle that is never used: no CUDA call precedes the checks.
    return GraphBuilder._init(Stream.from_handle(0x10), owns_stream=False)


class _RecordingResource(MemoryResource):
    """A resource whose buffers are plain numbers; records each deallocation."""

    def __init__(self):
        self.freed = []

    def allocate(self, size, *, stream=None):
        raise NotImplementedError

    def deallocate(self, ptr, size, *, stream=None):
        self.freed.append(ptr)

    @property
    def is_device_accessible(self):
        return False

    @property
    def is_host_accessible(self):
        return True

    @property
    def device_id(self):
        return -1


# ==========================================================================
# 1a. Options and instantiation
# ==========================================================================
def test_complete_options_accept_anything_at_construction():
    builder = _fake_builder()
    opts = GraphCompleteOptions(
        auto_free_on_launch="yes", upload_stream=builder, device_launch=5, use_node_priority=[]
    )
    assert opts.upload_stream is builder
    GraphCompleteOptions(device_launch=True, auto_free_on_launch=True)  # the driver judges
    builder.close()


def test_complete_options_read_by_truth_value_at_use():
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    GraphCompleteOptions(auto_free_on_launch="yes", use_node_priority=0)._to_params(params)
    assert params.flags == lib.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    GraphCompleteOptions(upload_stream=None, device_launch="")._to_params(params)
    assert params.flags == 0


@pytest.mark.parametrize("bad", [7, "stream"])
def test_complete_options_upload_stream_needs_a_handle(bad):
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    with pytest.raises(AttributeError, match=f"'{type(bad).__name__}' object has no attribute"):
        GraphCompleteOptions(upload_stream=bad)._to_params(params)


def test_debug_print_options_accept_anything_and_count_truth():
    opts = GraphDebugPrintOptions(verbose="yes", handles=0, kernel_node_params=[1])
    assert opts._to_flags() == (
        lib.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE | lib.CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS
    )


@pytest.mark.parametrize(
    "result, message",
    [
        (
            lib.CUDA_GRAPH_INSTANTIATE_ERROR,
            "Instantiation failed for an unexpected reason which is described in the return "
            "value of the function.",
        ),
        (
            lib.CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE,
            "Instantiation failed due to invalid structure, such as cycles.",
        ),
        (
            lib.CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED,
            "Instantiation for device launch failed because the graph contained an "
            "unsupported operation.",
        ),
        (
            lib.CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED,
            "Instantiation for device launch failed due to the nodes belonging to different "
            "contexts.",
        ),
        (
            lib.CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED,
            "One or more conditional handles are not associated with conditional builders.",
        ),
    ],
)
def test_instantiation_results_are_runtime_errors(result, message):
    exc = _instantiate_error(0, result)
    assert type(exc) is RuntimeError and str(exc) == message


def test_unknown_instantiation_result():
    exc = _instantiate_error(0, 99)
    assert type(exc) is RuntimeError
    assert str(exc).startswith("Graph instantiation failed with unexpected error code: ")


@gpu
def test_instantiation_checks_options_at_use(device, kernels, tmp_path):
    gdef = GraphDefinition()
    gdef.launch(ONE, kernels.nothing)
    # Truth values: "yes" sets a flag, 0 means no upload.
    gdef.instantiate(GraphCompleteOptions(use_node_priority="yes", upload_stream=0)).close()
    builder = device.create_graph_builder()
    with pytest.raises(AttributeError, match="'GraphBuilder' object has no attribute 'handle'"):
        gdef.instantiate(GraphCompleteOptions(upload_stream=builder))
    builder.close()
    with pytest.raises(CUDAError, match="^CUDA_ERROR_INVALID_VALUE"):
        gdef.instantiate(GraphCompleteOptions(device_launch=True, auto_free_on_launch=True))
    with pytest.raises(TypeError, match="^options must be a GraphDebugPrintOptions instance$"):
        gdef.debug_dot_print(str(tmp_path / "g.dot"), 42)
    gdef.debug_dot_print(str(tmp_path / "g.dot"), GraphDebugPrintOptions(handles="yes"))
    assert (tmp_path / "g.dot").read_text().lstrip().startswith("digraph")


# ==========================================================================
# 1b. What graphs keep alive, and until when
# ==========================================================================
def test_a_claim_keeps_the_allocation_past_buffer_close():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x1000, 64, mr=mr)
    claim = claim_allocation(buf)
    assert type(buf._release) is _SharedRelease
    buf.close()
    assert buf.is_closed and buf.handle == 0
    assert mr.freed == []  # the graph's claim keeps the memory
    claim.drop()
    assert mr.freed == [0x1000]  # the last claim frees it, once
    claim.drop()
    assert mr.freed == [0x1000]


def test_the_last_claim_frees_whoever_holds_it():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x2000, 64, mr=mr)
    first = claim_allocation(buf)
    second = first.clone()  # a new node version keeping the same memory
    first.drop()
    buf.close()
    assert mr.freed == []
    second.drop()
    assert mr.freed == [0x2000]


def test_buffer_garbage_collected_while_claimed():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x3000, 64, mr=mr)
    claim = claim_allocation(buf)
    del buf
    gc.collect()
    assert mr.freed == []  # the Buffer's finalizer dropped only its own claim
    claim.drop()
    assert mr.freed == [0x3000]


def test_non_owning_buffers_give_their_owner():
    owner = object()
    view = Buffer.from_handle(0x4000, 64, owner=owner)
    assert claim_allocation(view) is owner
    assert claim_allocation(Buffer.from_handle(0x4000, 64)) is None


def test_released_attachment_drops_its_claims():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x5000, 64, mr=mr)
    att = _attachments._Attachment((claim_allocation(buf), "a plain owner"))
    token = next(_attachments._TOKENS)
    _attachments._LIVE[token] = att
    buf.close()
    assert mr.freed == []
    lib.cc_user_object_release(ffi.cast("void *", token))  # what the driver's destructor does
    _attachments.drain()
    assert mr.freed == [0x5000]


def test_empty_user_data_is_null():
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    fn = proto(lambda p: None)
    cb = _attachments.resolve_host_callback(fn, b"")
    assert cb.c_data == ffi.NULL and cb.owners == (fn,)


@gpu
def test_closed_buffer_stays_allocated_while_a_graph_copies_through_it(device, stream):
    n = 1024
    nbytes = 4 * n
    h_in, h_out = _pinned(nbytes), _pinned(nbytes)
    v_in, v_out = _view(h_in, np.float32, n), _view(h_out, np.float32, n)
    dbuf = device.allocate(nbytes, stream=stream)
    stream.sync()
    address = dbuf.handle
    gdef = GraphDefinition()
    gdef.memcpy(dbuf, h_in, nbytes).memcpy(h_out, dbuf, nbytes)
    shared = dbuf._release
    dbuf.close()
    assert dbuf.is_closed and dbuf.handle == 0
    # Still allocated: the pool cannot hand the address out again.
    others = [device.allocate(nbytes, stream=stream) for _ in range(4)]
    for other in others:
        other.fill(0xFF, stream=stream)
    stream.sync()
    assert address not in {o.handle for o in others}
    graph = gdef.instantiate()
    rng = np.random.default_rng(7)
    for _ in range(4):
        expected = rng.standard_normal(n).astype(np.float32)
        v_in[:] = expected
        graph.launch(stream)
        stream.sync()
        np.testing.assert_array_equal(v_out, expected)
    for other in others:
        other.close()
    gdef.close()  # the executable still holds the copy nodes' memory
    v_in[:] = 3.0
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(v_out, np.full(n, 3.0, np.float32))
    assert shared.claims > 0
    graph.close()
    stream.sync()
    assert _wait_for(lambda: shared.claims == 0)  # freed with the last user


@gpu
def test_memset_keeps_an_owner_buffers_allocation(device, stream):
    h = _pinned(64)
    arr = _view(h, np.uint8, 64)
    arr[:] = 0
    owner = _pinned(64)  # a Buffer given as owner keeps its allocation, not itself
    gdef = GraphDefinition()
    gdef.memset(h.handle, 9, 64, dst_owner=owner)
    shared = owner._release
    owner.close()
    assert shared.claims == 1
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert (arr == 9).all()
    graph.close()
    gdef.close()
    assert _wait_for(lambda: shared.claims == 0)


@gpu
def test_destroying_a_node_releases_its_kernel_arguments(device, kernels):
    gdef = GraphDefinition()
    arg = _pinned(4)
    ref = weakref.ref(arg)
    node = gdef.launch(ONE, kernels.bump, arg)
    gdef.empty()
    del arg
    gc.collect()
    assert ref() is not None  # the node keeps its arguments
    node.destroy()
    assert _wait_for(lambda: ref() is None)
    gdef.close()


@gpu
def test_executable_keeps_the_arguments_of_a_destroyed_node(device, stream, kernels):
    gdef = GraphDefinition()
    arg = _pinned(4)
    counter = _view(arg, np.int32, 1)
    counter[:] = 0
    ref = weakref.ref(arg)
    node = gdef.launch(ONE, kernels.bump, arg)
    graph = gdef.instantiate()
    del arg
    node.destroy()
    gdef.close()
    _wait_for(lambda: False, timeout=0.05)
    assert ref() is not None  # the executable still uses them
    graph.launch(stream)
    graph.launch(stream)
    stream.sync()
    assert counter[0] == 2
    graph.close()
    stream.sync()
    assert _wait_for(lambda: ref() is None)


@gpu
def test_host_callback_user_data_lives_as_long_as_the_node(device, stream):
    got = []
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    @proto
    def fn(ptr):
        got.append(None if ptr is None else ctypes.string_at(ptr, 5))

    data = bytearray(b"hello")
    gdef = GraphDefinition()
    node = gdef.callback(fn, user_data=data)
    node.join().callback(fn, user_data=b"")  # no bytes: NULL user data
    data[:] = b"xxxxx"  # the node has its own copy
    del data
    gc.collect()
    graph = gdef.instantiate()
    entries = gdef._box.maps[gdef._h]
    assert node._h in entries
    node.destroy()  # the definition lets go of the copy; the executable keeps its own
    assert node._h not in entries
    gdef.close()
    gc.collect()
    for _ in range(2):
        graph.launch(stream)
    stream.sync()
    assert got == [b"hello", None, b"hello", None]
    graph.close()


@gpu
def test_embedded_copy_keeps_what_the_childs_nodes_use(device, stream):
    n = 256
    nbytes = 4 * n
    h_in, h_out = _pinned(nbytes), _pinned(nbytes)
    v_in, v_out = _view(h_in, np.int32, n), _view(h_out, np.int32, n)
    dbuf = device.allocate(nbytes, stream=stream)
    stream.sync()
    child = GraphDefinition()
    child.memcpy(dbuf, h_in, nbytes).memcpy(h_out, dbuf, nbytes)
    parent = GraphDefinition()
    cnode = parent.embed(child)
    shared = dbuf._release
    child.close()
    dbuf.close()
    assert shared.claims > 0  # the embedded copy keeps the child's attachments
    copy = cnode.child_graph
    mapped = parent._box.maps[copy._h]
    assert {node._h for node in copy.nodes()} == set(mapped)
    graph = parent.instantiate()
    v_in[:] = np.arange(n, dtype=np.int32)
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(v_out, np.arange(n, dtype=np.int32))
    graph.close()
    parent.close()
    assert _wait_for(lambda: shared.claims == 0)


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
    assert repr(kn) == "<KernelNode handle=0x0>"
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


# ==========================================================================
# 1f. GraphBuilder states and build modes
# ==========================================================================
def test_direct_builder_is_not_implemented():
    with pytest.raises(NotImplementedError) as info:
        GraphBuilder()
    assert str(info.value) == (
        "directly creating a GraphBuilder object can be ambiguous. Please either call "
        "Device.create_graph_builder() or stream.create_graph_builder()"
    )


@pytest.mark.parametrize("mode", ["bogus", None, 0, "GLOBAL"])
def test_unsupported_build_modes(mode):
    gb = _fake_builder()
    with pytest.raises(ValueError) as info:
        gb.begin_building(mode)
    assert str(info.value) == f"Unsupported build mode: {mode}"
    gb.close()


def test_closed_builder_everywhere():
    gb = _fake_builder()
    gb.close()
    assert gb.stream is None
    with pytest.raises(RuntimeError, match="^Graph builder has been closed.$"):
        gb.begin_building("bogus")  # the state is checked before the mode
    with pytest.raises(RuntimeError, match="^Graph builder has been closed.$"):
        gb.graph_definition  # noqa: B018
    with pytest.raises(ValueError, match="^Invalid split count: expecting >= 2, got 1$"):
        gb.split(1)  # the count first, even when closed


def test_join_checks_only_types_and_count():
    a = _fake_builder()
    with pytest.raises(TypeError, match="^All arguments must be GraphBuilder instances$"):
        GraphBuilder.join(a, None)
    with pytest.raises(ValueError, match="^Must join with at least two graph builders$"):
        GraphBuilder.join(a)
    a.close()


@gpu
def test_builder_state_machine(device, kernels):
    gb = device.create_graph_builder()
    assert gb.is_building is False
    with pytest.raises(RuntimeError, match=r"^graph_definition is unavailable before begin_"):
        gb.graph_definition  # noqa: B018
    with pytest.raises(RuntimeError, match="^Cannot add callback when graph is not being built$"):
        gb.callback(42)  # the capture is checked before the callable
    gb.begin_building()
    assert gb.is_building is True
    with pytest.raises(RuntimeError, match="^Graph builder is already building.$"):
        gb.begin_building("bogus")
    with pytest.raises(RuntimeError, match="^graph_definition is unavailable while capture"):
        gb.graph_definition  # noqa: B018
    left, right = gb.split(2)
    with pytest.raises(RuntimeError, match="^graph_definition is unavailable on forked graph"):
        right.graph_definition  # noqa: B018
    GraphBuilder.join(left, right)
    launch(gb, ONE, kernels.nothing)
    gb.end_building()
    assert gb.is_building is False
    with pytest.raises(RuntimeError, match="^Cannot resume building after building has ended.$"):
        gb.begin_building(None)
    gb.complete().close()
    gb.close()


@gpu
def test_ending_a_forked_builder_is_refused_by_the_driver(device):
    gb = device.create_graph_builder().begin_building()
    _, forked = gb.split(2)
    with pytest.raises(CUDAError):
        forked.end_building()
    with contextlib.suppress(CUDAError):  # the capture may have been invalidated
        gb.close()
    with contextlib.suppress(CUDAError):
        forked.close()


@gpu
def test_create_condition_order(device):
    from cuda_core._loader import driver_version

    if driver_version() < 12030:
        gb = device.create_graph_builder()
        with pytest.raises(RuntimeError, match=r"^Driver version \d+\.\d+\.\d+ does not support"):
            gb.create_condition()
        gb.close()
        return
    gb = device.create_graph_builder()
    with pytest.raises(RuntimeError, match="^Cannot create a condition when graph is not being"):
        gb.create_condition(default_value="not checked before the capture")
    gb.close()


# ==========================================================================
# 1g. GraphMemoryResource
# ==========================================================================
def test_graph_memory_resource_ordinals():
    assert GraphMemoryResource(-3).device_id == -3
    assert GraphMemoryResource(False) is GraphMemoryResource(0)
    with pytest.raises(TypeError):
        GraphMemoryResource(0.0)


def test_graph_memory_resource_stream_types():
    gmr = GraphMemoryResource(0)
    with pytest.raises(TypeError, match="^stream is required and must not be None; "):
        gmr.allocate(64, stream=None)

    class Foreign:
        def __cuda_stream__(self):
            return (0, 0x1234)

    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got Foreign$"):
        gmr.allocate(64, stream=Foreign())
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got int$"):
        gmr.deallocate(0x1000, 64, stream=5)


def test_graph_memory_watermarks_reset_only_to_zero():
    from cuda_core._memory._graph_memory_resource import GraphMemoryResourceAttributes

    attrs = GraphMemoryResourceAttributes._init(0)
    with pytest.raises(AttributeError) as info:
        attrs.used_mem_high = 5
    assert str(info.value) == "Attribute 'used_mem_high' may only be set to zero (got 5)."
    with pytest.raises(AttributeError) as info:
        attrs.reserved_mem_high = 1.5
    assert str(info.value) == "Attribute 'reserved_mem_high' may only be set to zero (got 1.5)."
    for name in ("used_mem_current", "reserved_mem_current"):
        with pytest.raises(AttributeError):
            setattr(attrs, name, 0)


@gpu
def test_graph_memory_resource_on_the_device(device, stream):
    gmr = GraphMemoryResource(device)
    with pytest.raises(RuntimeError) as info:
        gmr.allocate(64, stream=stream)
    assert str(info.value) == (
        "GraphMemoryResource cannot perform memory operations on a non-capturing stream."
    )
    attrs = gmr.attributes
    for zero in (0, False, 0.0):
        attrs.used_mem_high = zero
        attrs.reserved_mem_high = zero
    gb = device.create_graph_builder().begin_building()
    with pytest.raises(RuntimeError) as info:
        device.memory_resource.allocate(64, stream=gb)
    assert str(info.value) == (
        "_MemPool cannot perform memory operations on a capturing stream (consider using "
        "GraphMemoryResource)."
    )
    gb.close()


# ==========================================================================
# 1h. Graph.update
# ==========================================================================
def _copy_graph(dbuf, h_in, h_out, nbytes):
    gdef = GraphDefinition()
    gdef.memcpy(dbuf, h_in, nbytes).memcpy(h_out, dbuf, nbytes)
    return gdef


@gpu
def test_update_errors(device, kernels):
    gb = device.create_graph_builder().begin_building()
    launch(gb, ONE, kernels.nothing)
    graph = gb.end_building().complete()
    closed = device.create_graph_builder()
    closed.close()
    with pytest.raises(ValueError, match="^Source graph builder has been closed.$"):
        graph.update(closed)
    unfinished = device.create_graph_builder()
    with pytest.raises(ValueError, match="^Graph has not finished building.$"):
        graph.update(unfinished)
    unfinished.close()
    with pytest.raises(TypeError, match="^expected GraphBuilder or GraphDefinition, got int$"):
        graph.update(3)
    two = device.create_graph_builder().begin_building()
    launch(two, ONE, kernels.nothing)
    launch(two, ONE, kernels.nothing)
    two.end_building()
    with pytest.raises(CUDAError) as info:
        graph.update(two)
    assert str(info.value) == (
        "Graph update failed: The update failed because the topology changed "
        "(CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED)"
    )
    graph.close()
    gb.close()
    two.close()


@gpu
def test_update_hands_the_sources_attachments_to_the_executable(device, stream):
    n = 512
    nbytes = 4 * n
    h_in, h_out = _pinned(nbytes), _pinned(nbytes)
    v_in, v_out = _view(h_in, np.int32, n), _view(h_out, np.int32, n)
    first = device.allocate(nbytes, stream=stream)
    second = device.allocate(nbytes, stream=stream)
    stream.sync()
    graph = _copy_graph(first, h_in, h_out, nbytes).instantiate()
    source = _copy_graph(second, h_in, h_out, nbytes)
    graph.update(source)
    shared = second._release
    source.close()
    second.close()
    first.close()
    _wait_for(lambda: False, timeout=0.05)
    assert shared.claims > 0  # the executable now uses (and keeps) the source's memory
    v_in[:] = np.arange(n, dtype=np.int32) * 3
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(v_out, np.arange(n, dtype=np.int32) * 3)
    graph.close()
    stream.sync()
    assert _wait_for(lambda: shared.claims == 0)


def test_new_kernel_node_launch_without_a_kernel_is_a_type_error():
    # ExecutableKernelNode.update(config=..., kernel=None, args=...) describes a
    # whole new launch: without a kernel there is nothing to launch.
    from cuda_core.graph._node_params import _kernel_params

    with pytest.raises(TypeError, match="^kernel must be a Kernel, not NoneType"):
        _kernel_params(LaunchConfig(grid=1, block=1), None, ())
