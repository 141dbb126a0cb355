# SPDX-License-Identifier: Apache-2.0
"""Graph API checks that need no GPU: options, enums, validation, callbacks, lifetimes."""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import sys
import threading
import time
import warnings

import pytest
from _helpers import build_ffi_module

from cuda_core import CUDAWarning, GraphMemoryResource, Stream
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.graph import (
    ConditionalType,
    ExecutableGraphNode,
    Graph,
    GraphBuilder,
    GraphCompleteOptions,
    GraphCondition,
    GraphConditionalType,
    GraphDebugPrintOptions,
    GraphMemoryType,
    GraphNode,
    KernelNode,
    _attachments,
)

_DOT_FLAG_VALUES = {
    "verbose": 1 << 0,
    "runtime_types": 1 << 1,
    "kernel_node_params": 1 << 2,
    "memcpy_node_params": 1 << 3,
    "memset_node_params": 1 << 4,
    "host_node_params": 1 << 5,
    "event_node_params": 1 << 6,
    "ext_semas_signal_node_params": 1 << 7,
    "ext_semas_wait_node_params": 1 << 8,
    "kernel_node_attributes": 1 << 9,
    "handles": 1 << 10,
    "mem_alloc_node_params": 1 << 11,
    "mem_free_node_params": 1 << 12,
    "batch_mem_op_node_params": 1 << 13,
    "extra_topo_info": 1 << 14,
    "conditional_node_params": 1 << 15,
}


# --------------------------------------------------------------------------
# GraphDebugPrintOptions
# --------------------------------------------------------------------------
def test_debug_print_options_fields_match_upstream():
    names = [f.name for f in dataclasses.fields(GraphDebugPrintOptions)]
    assert names == list(_DOT_FLAG_VALUES)
    assert all(v is False for v in dataclasses.astuple(GraphDebugPrintOptions()))


def test_debug_print_options_default_flags_are_zero():
    assert GraphDebugPrintOptions()._to_flags() == 0


@pytest.mark.parametrize("name", list(_DOT_FLAG_VALUES))
def test_debug_print_options_each_flag(name):
    assert GraphDebugPrintOptions(**{name: True})._to_flags() == _DOT_FLAG_VALUES[name]


def test_debug_print_options_flags_combine_as_bitmask():
    opts = GraphDebugPrintOptions(**dict.fromkeys(_DOT_FLAG_VALUES, True))
    assert opts._to_flags() == 0xFFFF
    opts = GraphDebugPrintOptions(verbose=True, handles=True, conditional_node_params=True)
    assert opts._to_flags() == 1 | 1024 | 0x8000


def test_debug_print_options_take_any_value_by_truth():
    # As upstream: a plain dataclass, each field read by its truth value.
    opts = GraphDebugPrintOptions(handles="yes", verbose=0, runtime_types=None)
    assert opts.handles == "yes"
    assert opts._to_flags() == _DOT_FLAG_VALUES["handles"]


# --------------------------------------------------------------------------
# GraphCompleteOptions
# --------------------------------------------------------------------------
def test_complete_options_defaults():
    opts = GraphCompleteOptions()
    assert (opts.auto_free_on_launch, opts.upload_stream) == (False, None)
    assert (opts.device_launch, opts.use_node_priority) == (False, False)
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    assert opts._to_params(params) is None
    assert params.flags == 0


def test_complete_options_flags():
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    GraphCompleteOptions(auto_free_on_launch=True, use_node_priority=True)._to_params(params)
    assert params.flags == 1 | 8
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    GraphCompleteOptions(device_launch=True)._to_params(params)
    assert params.flags == 4


def test_complete_options_upload_stream_sets_flag_and_handle():
    s = Stream.from_handle(0x1234)
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    kept = GraphCompleteOptions(upload_stream=s)._to_params(params)
    assert params.flags == 2
    assert int(ffi.cast("uintptr_t", params.hUploadStream)) == 0x1234
    assert kept is s


def test_complete_options_checked_at_use_not_construction():
    # Construction never raises; flags count by truth value when used.
    opts = GraphCompleteOptions(auto_free_on_launch="no", device_launch=True)
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    opts._to_params(params)
    assert params.flags == 1 | 4  # both reach the driver, which judges them
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    GraphCompleteOptions(upload_stream=0, use_node_priority="")._to_params(params)
    assert params.flags == 0  # a false upload_stream means no upload
    bad = GraphCompleteOptions(upload_stream=42)
    with pytest.raises(AttributeError, match="'int' object has no attribute 'handle'"):
        bad._to_params(ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *"))


# --------------------------------------------------------------------------
# Enums and construction rules
# --------------------------------------------------------------------------
def test_enums_are_string_enums():
    assert GraphConditionalType.IF == "if"
    assert GraphConditionalType("while") is GraphConditionalType.WHILE
    assert ConditionalType is GraphConditionalType
    assert str(GraphMemoryType.MANAGED) == "managed"
    assert f"{GraphMemoryType.HOST}" == "host"
    assert {m.value for m in GraphMemoryType} == {"device", "host", "managed"}


@pytest.mark.parametrize("cls", [Graph, GraphNode, KernelNode, GraphCondition])
def test_direct_construction_raises(cls):
    with pytest.raises(RuntimeError):
        cls()


def test_direct_graph_builder_construction_is_not_implemented():
    with pytest.raises(NotImplementedError, match="^directly creating a GraphBuilder object"):
        GraphBuilder()


def test_executable_view_direct_construction_raises():
    with pytest.raises(RuntimeError, match=r"graph\[node\]"):
        ExecutableGraphNode()


def test_graph_condition_value_semantics():
    a = GraphCondition._from_handle(7)
    b = GraphCondition._from_handle(7)
    c = GraphCondition._from_handle(8)
    assert a == b and hash(a) == hash(b) and a != c
    assert a.handle == 7 and int(a) == 7
    assert "0x7" in repr(a)
    # The marker the launcher's marshalling looks for.
    from cuda_core._arg_types import GRAPH_CONDITION_MARKER

    assert getattr(GraphCondition, GRAPH_CONDITION_MARKER) is True


def _builder():
    # A builder over a borrowed (never used) stream handle: no CUDA call is made
    # before the argument checks.
    return GraphBuilder._init(Stream.from_handle(0x10), owns_stream=False)


@pytest.mark.parametrize("mode", ["", "RELAXED", "local", 1, b"global", None])
def test_begin_building_rejects_bad_mode(mode):
    gb = _builder()
    with pytest.raises(ValueError) as info:
        gb.begin_building(mode)
    assert str(info.value) == f"Unsupported build mode: {mode}"
    gb.close()


def test_builder_state_errors_before_building():
    gb = _builder()
    assert not gb.is_join_required
    with pytest.raises(RuntimeError, match="not building"):
        gb.end_building()
    with pytest.raises(RuntimeError, match="^Graph has not finished building.$"):
        gb.complete()
    with pytest.raises(RuntimeError, match="^Graph has not finished building.$"):
        gb.debug_dot_print("/tmp/never.dot")
    with pytest.raises(RuntimeError, match=r"^graph_definition is unavailable before begin_"):
        _ = gb.graph_definition
    with pytest.raises(RuntimeError, match="^Graph builder must be building before it"):
        gb.split(2)
    with pytest.raises(ValueError, match="^Invalid split count: expecting >= 2, got 1$"):
        gb.split(1)
    with pytest.raises(TypeError, match="count must be an int"):
        gb.split(2.0)
    gb.close()
    gb.close()  # idempotent
    assert gb.stream is None  # as upstream: no error, no stream
    closed = "^Graph builder has been closed.$"
    for call in (
        gb.begin_building,
        gb.end_building,
        gb.complete,
        lambda: gb.split(2),
        lambda: gb.callback(print),
        lambda: gb.embed(gb),
        lambda: gb.if_then(None),
        lambda: gb.create_condition(),
        lambda: gb.is_building,
        lambda: gb.graph_definition,
        gb.__cuda_stream__,
        lambda: gb.debug_dot_print("/tmp/never.dot"),
    ):
        with pytest.raises(RuntimeError, match=closed):
            call()
    # The split count is checked before the builder's state.
    with pytest.raises(ValueError, match="Invalid split count"):
        gb.split(0)


def test_begin_building_checks_state_before_mode():
    gb = _builder()
    gb.close()
    with pytest.raises(RuntimeError, match="^Graph builder has been closed.$"):
        gb.begin_building("nonsense")


def test_join_argument_checks():
    a = _builder()
    with pytest.raises(TypeError, match="^All arguments must be GraphBuilder instances$"):
        GraphBuilder.join(a, 3)
    with pytest.raises(ValueError, match="^Must join with at least two graph builders$"):
        GraphBuilder.join(a)
    # Upstream checks nothing else: the same builder twice joins into itself.
    assert GraphBuilder.join(a, a) is a
    a.close()


def test_builder_stream_protocol_and_owner_alias():
    s = Stream.from_handle(0x20)
    gb = GraphBuilder._init(s, is_stream_owner=False)
    assert gb.stream is s
    assert gb.__cuda_stream__() == (0, 0x20)
    assert "primary" in repr(gb)
    gb.close()


# --------------------------------------------------------------------------
# GraphMemoryResource
# --------------------------------------------------------------------------
def test_graph_memory_resource_singleton_and_properties():
    mr = GraphMemoryResource(0)
    assert GraphMemoryResource(0) is mr
    assert mr.device_id == 0
    assert mr.is_device_accessible is True
    assert mr.is_host_accessible is False
    assert mr.is_managed is False
    mr.close()  # no-op
    assert GraphMemoryResource(0) is mr


class _FakeDevice:
    device_id = 0


def test_graph_memory_resource_accepts_device_like():
    assert GraphMemoryResource(_FakeDevice()) is GraphMemoryResource(0)


@pytest.mark.parametrize("bad, exc", [("0", TypeError), (1.0, TypeError), (2**31, OverflowError)])
def test_graph_memory_resource_bad_device(bad, exc):
    with pytest.raises(exc):
        GraphMemoryResource(bad)


def test_graph_memory_resource_takes_any_c_int_ordinal():
    # As upstream: a C int, not checked further (bools count as 0/1).
    assert GraphMemoryResource(-1).device_id == -1
    assert GraphMemoryResource(True) is GraphMemoryResource(1)


def test_graph_memory_resource_attributes_not_constructible():
    from cuda_core._memory._graph_memory_resource import GraphMemoryResourceAttributes

    with pytest.raises(RuntimeError):
        GraphMemoryResourceAttributes()


# --------------------------------------------------------------------------
# Host callbacks (the trampoline runs without a GPU)
# --------------------------------------------------------------------------
def test_host_callback_trampoline_runs_callable():
    calls = []
    cb = _attachments.resolve_host_callback(lambda: calls.append(1), None)
    assert cb.callable is not None
    assert cb.c_fn == lib.cc_host_callback
    cb.c_fn(cb.c_data)
    cb.c_fn(cb.c_data)
    assert calls == [1, 1]


def test_host_callback_trampoline_from_foreign_thread():
    seen = []
    cb = _attachments.resolve_host_callback(lambda: seen.append(threading.get_ident()), None)
    t = threading.Thread(target=lambda: cb.c_fn(cb.c_data))
    t.start()
    t.join()
    assert len(seen) == 1 and seen[0] != threading.get_ident()


def test_host_callback_exception_goes_to_unraisablehook(monkeypatch):
    def boom():
        raise ValueError("callback failed on purpose")

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda args: seen.append(args.exc_value))
    cb = _attachments.resolve_host_callback(boom, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cb.c_fn(cb.c_data)  # must not raise
    assert [str(e) for e in seen] == ["callback failed on purpose"]
    assert not any(issubclass(w.category, CUDAWarning) for w in caught)


def test_host_callback_exception_with_warnings_as_errors_is_contained(monkeypatch):
    def boom():
        raise RuntimeError("x")

    monkeypatch.setattr(sys, "unraisablehook", lambda args: None)
    cb = _attachments.resolve_host_callback(boom, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cb.c_fn(cb.c_data)  # nothing propagates


def test_host_callback_validation():
    with pytest.raises(TypeError, match="^callback must be callable, got int$"):
        _attachments.resolve_host_callback(42, None)
    with pytest.raises(ValueError, match="^user_data is only supported with ctypes function"):
        _attachments.resolve_host_callback(lambda: None, 5)


_HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def test_host_callback_ctypes_pointer_with_bytes_user_data():
    got = []

    @_HOSTFN
    def fn(ptr):
        got.append(ctypes.string_at(ptr, 5))

    data = bytearray(b"hello")
    cb = _attachments.resolve_host_callback(fn, data)
    data[:] = b"xxxxx"  # the callback data was copied
    assert cb.callable is None
    cb.c_fn(cb.c_data)
    assert got == [b"hello"]
    assert fn in cb.owners


def test_host_callback_ctypes_pointer_with_int_user_data():
    got = []

    @_HOSTFN
    def fn(ptr):
        got.append(ptr)

    cb = _attachments.resolve_host_callback(fn, 0xABC)
    cb.c_fn(cb.c_data)
    assert got == [0xABC]
    cb = _attachments.resolve_host_callback(fn, b"")  # empty bytes: NULL, nothing copied
    assert cb.c_data == ffi.NULL and cb.owners == (fn,)
    cb = _attachments.resolve_host_callback(fn, None)
    cb.c_fn(cb.c_data)
    assert got[-1] is None
    with pytest.raises(ValueError, match="address"):
        _attachments.resolve_host_callback(fn, -1)
    with pytest.raises(TypeError, match="user_data"):
        _attachments.resolve_host_callback(fn, 1.5)


def test_host_callback_ctypes_prototype_checked():
    wrong = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(lambda p: 0)
    with pytest.raises(TypeError, match="CFUNCTYPE"):
        _attachments.resolve_host_callback(wrong, None)
    wrong_args = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda p: None)
    with pytest.raises(TypeError, match="argtypes"):
        _attachments.resolve_host_callback(wrong_args, None)


# --------------------------------------------------------------------------
# Deferred release queue of user objects (the C side runs without a GPU)
# --------------------------------------------------------------------------
class _Tracked:
    pass


def test_released_tokens_are_dropped_by_drain():
    import weakref

    from cuda_core.graph import _drain

    obj = _Tracked()
    ref = weakref.ref(obj)
    token = next(_attachments._TOKENS)
    _attachments._LIVE[token] = obj
    del obj
    gc.collect()
    assert ref() is not None  # kept alive by the token
    _drain._stop()  # no wakeup: the queue waits for the drain below
    try:
        lib.cc_user_object_release(ffi.cast("void *", token))  # what the driver's destructor does
        assert lib.cc_released_pending() >= 1
        _attachments.drain()
    finally:
        _drain._start()
    gc.collect()
    assert ref() is None
    assert token not in _attachments._LIVE


def test_release_queue_many_tokens_from_threads():
    tokens = [next(_attachments._TOKENS) for _ in range(1000)]
    for t in tokens:
        _attachments._LIVE[t] = _Tracked()

    def release(chunk):
        for t in chunk:
            lib.cc_user_object_release(ffi.cast("void *", t))

    threads = [threading.Thread(target=release, args=(tokens[i::4],)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # The wakeup's own drain (PyPy's pipe thread) may be working through part of
    # the queue while this thread drains the rest: wait for both to finish.
    deadline = time.monotonic() + 5.0
    _attachments.drain()
    while any(t in _attachments._LIVE for t in tokens) and time.monotonic() < deadline:
        time.sleep(0.01)
        _attachments.drain()
    assert not any(t in _attachments._LIVE for t in tokens)
    assert lib.cc_released_pending() == 0


# --------------------------------------------------------------------------
# ABI: the driver entry points the graph code uses resolve to the declared signature
# --------------------------------------------------------------------------
_GRAPH_APIS = (
    "cuStreamGetCaptureInfo",
    "cuStreamUpdateCaptureDependencies",
    "cuStreamBeginCaptureToGraph",
    "cuStreamIsCapturing",
    "cuStreamBeginCapture",
    "cuStreamEndCapture",
    "cuGraphAddNode",
    "cuGraphGetEdges",
    "cuGraphGetNodes",
    "cuGraphGetRootNodes",
    "cuGraphNodeGetDependencies",
    "cuGraphNodeGetDependentNodes",
    "cuGraphAddDependencies",
    "cuGraphRemoveDependencies",
    "cuGraphAddKernelNode",
    "cuGraphKernelNodeGetParams",
    "cuGraphKernelNodeSetParams",
    "cuGraphExecKernelNodeSetParams",
    "cuGraphExecUpdate",
    "cuGraphInstantiateWithParams",
    "cuGraphConditionalHandleCreate",
    "cuGraphAddMemcpyNode",
    "cuGraphAddMemsetNode",
    "cuGraphAddMemAllocNode",
    "cuGraphMemAllocNodeGetParams",
    "cuGraphNodeSetParams",
    "cuGraphNodeGetEnabled",
    "cuUserObjectCreate",
    "cuGraphRetainUserObject",
    "cuGraphReleaseUserObject",
    "cuGraphNodeFindInClone",
    "cuGraphChildGraphNodeGetGraph",
    "cuLaunchHostFunc",
)


def _typedefs_header():
    import os

    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            path = os.path.join(root, "include", "cudaTypedefs.h")
            if os.path.exists(path):
                return path
    return None


def test_graph_driver_prototypes_match_resolved_versions():
    """cuGetProcAddress(name, version) returns the newest variant <= version: check its arity."""
    import re

    header = _typedefs_header()
    if header is None:
        pytest.skip("cudaTypedefs.h not found (set CUDA_HOME)")
    build_ffi = build_ffi_module()
    text = open(header).read()
    variants = {}
    for m in re.finditer(r"typedef\s+\w+\s+\(CUDAAPI \*PFN_(\w+?)_v(\d+)\)\((.*?)\);", text, re.S):
        params = m.group(3).strip()
        arity = 0 if params in ("", "void") else params.count(",") + 1
        variants.setdefault(m.group(1), []).append((int(m.group(2)), arity))
    declared = {p.name: (p.version, len(p.argnames)) for p in build_ffi.driver_entry_points()}
    for name in _GRAPH_APIS:
        ver, arity = declared[name]
        candidates = [v for v in variants.get(name, []) if v[0] <= ver]
        assert candidates, f"{name}: no driver variant at or below version {ver}"
        resolved = max(candidates)
        assert resolved[1] == arity, (
            f"{name}: cuGetProcAddress({ver}) returns the v{resolved[0]} variant with "
            f"{resolved[1]} parameters, but the cdef declares {arity}"
        )
