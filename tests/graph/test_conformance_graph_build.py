# SPDX-License-Identifier: Apache-2.0
"""Graphs behave as cuda.core's: options, instantiation, builders, graph memory, updates."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from _conformance_graph_setup import (
    ONE,
    _copy_graph,
    _fake_builder,
    _pinned,
    _view,
    _wait_for,
    gpu,
    kernels,  # noqa: F401 (fixtures)
)

from cuda_core import (
    CUDAError,
    GraphMemoryResource,
    LaunchConfig,
    launch,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.graph import (
    GraphBuilder,
    GraphCompleteOptions,
    GraphDebugPrintOptions,
    GraphDefinition,
)
from cuda_core.graph._graph import _instantiate_error


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
