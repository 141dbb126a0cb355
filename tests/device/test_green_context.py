# SPDX-License-Identifier: Apache-2.0
"""Green contexts: device resources, SM splits, contexts made of them, their streams.

The CPU part checks options and enumerations.  The GPU part checks what a
green context is for: a kernel with many blocks records the SM each block
ran on (``%smid``), and on a green context made of a 16-SM group it sees at
most that group's SMs, while on the primary context it sees more; two
green contexts run kernels on disjoint SMs.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

from cuda_core import (
    Context,
    ContextOptions,
    CUDAError,
    CUDAWarning,
    Device,
    DeviceResources,
    LaunchConfig,
    Program,
    ProgramOptions,
    SMResource,
    SMResourceOptions,
    StreamOptions,
    WorkqueueResource,
    WorkqueueResourceOptions,
    launch,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.typing import DeviceResourcesType, WorkqueueSharingScopeType

KERNELS = r"""
extern "C" __global__ void record_smid(unsigned int *out, long long spin) {
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (threadIdx.x == 0) {
        out[blockIdx.x] = smid;
        long long start = clock64();
        while (clock64() - start < spin) { }
    }
}

extern "C" __global__ void fill(int *out, int value, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

// Waits (at most `budget` cycles) for *flag to become 1; reports whether it did.
__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ unsigned int sm_id() {
    unsigned int smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    return smid;
}

// log: start time, end time, the flag value seen last, the SM.
extern "C" __global__ void wait_flag(volatile int *flag, unsigned long long *log,
                                     unsigned long long budget_ns) {
    unsigned long long start = now_ns();
    int seen = *flag;
    while (seen == 0 && now_ns() - start < budget_ns) { seen = *flag; }
    log[0] = start;
    log[1] = now_ns();
    log[2] = seen;
    log[3] = sm_id();
}

// log: the time just before the flag is set, then after, then the SM.
extern "C" __global__ void set_flag(volatile int *flag, unsigned long long *log) {
    log[0] = now_ns();
    *flag = 1;
    __threadfence_system();
    log[1] = now_ns();
    log[2] = 1;
    log[3] = sm_id();
}
"""
BLOCKS = 4096


# --------------------------------------------------------------------------
# CPU: options, enumerations, construction
# --------------------------------------------------------------------------
def test_not_user_constructible():
    for cls in (DeviceResources, SMResource, WorkqueueResource):
        with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
            cls()
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        Context()


def test_workqueue_sharing_scope_values():
    assert [m.value for m in WorkqueueSharingScopeType] == ["device_ctx", "green_ctx_balanced"]
    assert WorkqueueSharingScopeType("device_ctx") is WorkqueueSharingScopeType.DEVICE_CTX
    assert f"{WorkqueueSharingScopeType.GREEN_CTX_BALANCED}" == "green_ctx_balanced"
    assert lib.CU_WORKQUEUE_SCOPE_DEVICE_CTX == 0
    assert lib.CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED == 1


def test_resource_type_constants():
    assert lib.CU_DEV_RESOURCE_TYPE_SM == 1
    assert lib.CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG == 1000
    assert lib.CU_DEV_RESOURCE_TYPE_WORKQUEUE == 10000
    assert ffi.sizeof("CUdevResource") == 144
    assert ffi.offsetof("CUdevResource", "sm") == 96
    assert ffi.sizeof("CU_DEV_SM_RESOURCE_GROUP_PARAMS") == 64


def test_workqueue_options_validation():
    opts = WorkqueueResourceOptions(sharing_scope="green_ctx_balanced", concurrency_limit=4)
    assert opts.sharing_scope is WorkqueueSharingScopeType.GREEN_CTX_BALANCED
    assert opts.concurrency_limit == 4
    assert WorkqueueResourceOptions().sharing_scope is None
    with pytest.raises(
        ValueError, match="'bogus' is not a valid WorkqueueSharingScopeType. Must be"
    ):
        WorkqueueResourceOptions(sharing_scope="bogus")
    for bad in (0, -3):
        with pytest.raises(ValueError, match="concurrency_limit must be >= 1"):
            WorkqueueResourceOptions(concurrency_limit=bad)
    for bad in (1.5, "2", True):
        with pytest.raises(TypeError, match="concurrency_limit"):
            WorkqueueResourceOptions(concurrency_limit=bad)


def test_sm_options_defaults_and_context_options():
    opts = SMResourceOptions()
    assert (opts.count, opts.coscheduled_sm_count, opts.preferred_coscheduled_sm_count) == (
        None,
        None,
        None,
    )
    assert opts.backfill is False
    with pytest.raises(TypeError):
        ContextOptions()  # resources is required, as upstream
    assert ContextOptions(resources=None).resources is None
    assert "SMResource" in repr(DeviceResourcesType)


def test_green_names_are_public():
    import cuda_core
    import cuda_core.typing as t

    for name in (
        "ContextOptions",
        "DeviceResources",
        "SMResource",
        "SMResourceOptions",
        "WorkqueueResource",
        "WorkqueueResourceOptions",
    ):
        assert hasattr(cuda_core, name)
    for name in ("DeviceResourcesType", "WorkqueueSharingScopeType", "ProcessStateType"):
        assert name in t.__all__ and getattr(t, name) is not None


def test_primary_context_has_no_streams_of_its_own():
    ctx = Context._from_ctx(ffi.cast("CUcontext", 0x5000), 0)
    assert ctx.is_green is False
    with pytest.raises(RuntimeError, match="only supported on green contexts"):
        ctx.create_stream()


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
@pytest.fixture
def sm(device):
    try:
        return device.resources.sm
    except NotImplementedError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def kernels(device):
    prog = Program(KERNELS, "c++", ProgramOptions(arch=f"sm_{device.arch}"))
    return prog.compile("cubin")


def _to_host(ptr, nbytes, stream):
    out = bytearray(nbytes)
    check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(out), ptr, nbytes, stream._handle))
    stream.sync()
    return bytes(out)


def _sm_ids(device, stream, kernel, spin=20000):
    buf = device.allocate(BLOCKS * 4, stream=stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=64), kernel, buf, np.int64(spin))
    ids = np.frombuffer(_to_host(buf.handle, BLOCKS * 4, stream), dtype=np.uint32)
    buf.close(stream)
    return set(int(i) for i in ids)


def _green(device, group):
    return device.create_context(ContextOptions(resources=[group]))


@pytest.mark.gpu
def test_sm_resource_properties(device, sm):
    assert sm.sm_count == device.properties.multiprocessor_count
    assert sm.handle != 0
    assert sm.min_partition_size >= 1 and sm.coscheduled_alignment >= 1
    assert isinstance(sm.flags, int)
    if device.compute_capability >= (9, 0):
        assert sm.min_partition_size % 2 == 0 and sm.coscheduled_alignment % 2 == 0


@pytest.mark.gpu
def test_split_validation(sm):
    with pytest.raises(TypeError, match="options must be SMResourceOptions"):
        sm.split({"count": 8})
    with pytest.raises(ValueError, match="count is scalar"):
        sm.split(SMResourceOptions(count=8, coscheduled_sm_count=(8, 8)))
    with pytest.raises(ValueError, match="expected 2"):
        sm.split(SMResourceOptions(count=(8, 8), coscheduled_sm_count=(8, 8, 8)))
    with pytest.raises(ValueError, match="count sequence must not be empty"):
        sm.split(SMResourceOptions(count=()))
    with pytest.raises(ValueError, match="count must be non-negative"):
        sm.split(SMResourceOptions(count=-1))
    with pytest.raises(TypeError, match="count must be int, Sequence, or None"):
        sm.split(SMResourceOptions(count=1.5))


@pytest.mark.gpu
def test_split_impossible_count_raises(sm):
    with pytest.raises(CUDAError, match="^CUDA_ERROR_INVALID"):
        sm.split(SMResourceOptions(count=sm.sm_count + 64))


@pytest.mark.gpu
def test_split_follows_granularity(sm):
    step = max(sm.min_partition_size, sm.coscheduled_alignment)
    groups, rest = sm.split(SMResourceOptions(count=step + 1))  # rounds up
    assert len(groups) == 1
    assert groups[0].sm_count >= step + 1
    assert groups[0].sm_count % sm.coscheduled_alignment == 0
    assert groups[0].sm_count + rest.sm_count <= sm.sm_count
    found, _ = sm.split(SMResourceOptions(count=None))  # discovery
    assert found[0].sm_count >= sm.min_partition_size


@pytest.mark.gpu
def test_dry_run_matches_and_cannot_make_a_context(device, sm):
    dry, _ = sm.split(SMResourceOptions(count=16), dry_run=True)
    real, _ = sm.split(SMResourceOptions(count=16))
    assert [g.sm_count for g in dry] == [g.sm_count for g in real]
    with pytest.raises(ValueError, match="dry-run SMResource"):
        device.create_context(ContextOptions(resources=[dry[0]]))


@pytest.mark.gpu
def test_create_context_argument_errors(device, sm):
    with pytest.raises(ValueError, match="resources must be provided"):
        device.create_context()
    with pytest.raises(ValueError, match="resources must be provided"):
        device.create_context(ContextOptions(resources=None))
    with pytest.raises(ValueError, match="resources must be provided"):
        device.create_context(ContextOptions(resources=[]))
    with pytest.raises(TypeError):
        device.create_context(object())
    with pytest.raises(TypeError, match="SMResource or WorkqueueResource"):
        device.create_context(ContextOptions(resources=[42]))


@pytest.mark.gpu
def test_green_context_runs_on_its_sms_only(device, sm, kernels):
    if sm.sm_count < 32:
        pytest.skip(f"needs at least 32 SMs, this GPU has {sm.sm_count}")
    kernel = kernels.get_kernel("record_smid")
    groups, _ = sm.split(SMResourceOptions(count=16))
    group = groups[0]
    assert group.sm_count >= 16
    ctx = _green(device, group)
    try:
        assert ctx.is_green and ctx.resources.sm.sm_count == group.sm_count
        stream = ctx.create_stream()
        green_sms = _sm_ids(device, stream, kernel)
        stream.close()
    finally:
        ctx.close()
    primary_sms = _sm_ids(device, device.create_stream(), kernel)
    assert 1 <= len(green_sms) <= group.sm_count
    if group.sm_count == 16:
        assert len(green_sms) <= 16
    assert len(primary_sms) > group.sm_count
    assert all(0 <= s < sm.sm_count for s in green_sms | primary_sms)


@pytest.mark.gpu
def test_two_green_contexts_run_on_disjoint_sms(device, sm, kernels):
    """Each context's kernels stay on its own SMs; a cross-context handshake is consistent.

    The driver does not promise that two contexts' kernels run at the same
    time, so the handshake (A waits, within a time budget, for a flag that
    only B sets) asserts what holds either way, with the GPU's global timer
    as the witness: either A saw the flag, and B set it before A finished,
    or A ran out its whole budget.
    """
    if sm.sm_count < 32:
        pytest.skip(f"needs at least 32 SMs, this GPU has {sm.sm_count}")
    groups, _ = sm.split(SMResourceOptions(count=(16, 16)))
    assert len(groups) == 2
    a = _green(device, groups[0])
    b = _green(device, groups[1])
    try:
        sa, sb = a.create_stream(), b.create_stream()
        record = kernels.get_kernel("record_smid")
        ids_a, ids_b = _sm_ids(device, sa, record), _sm_ids(device, sb, record)
        assert ids_a and ids_b and not (ids_a & ids_b)
        assert len(ids_a) <= groups[0].sm_count and len(ids_b) <= groups[1].sm_count
        s0 = device.create_stream()
        flag = device.allocate(4, stream=s0)
        logs = device.allocate(64, stream=s0)
        flag.fill(0, stream=s0)
        logs.fill(0, stream=s0)
        s0.sync()
        budget_ns = 300_000_000
        launch(sa, LaunchConfig(grid=1, block=1), kernels.get_kernel("wait_flag"), flag,
               logs, np.uint64(budget_ns))  # fmt: skip
        launch(sb, LaunchConfig(grid=1, block=1), kernels.get_kernel("set_flag"), flag,
               logs.handle + 32)  # fmt: skip
        sb.sync()
        sa.sync()
        log = np.frombuffer(_to_host(logs.handle, 64, s0), dtype=np.uint64).tolist()
        (wait_start, wait_end, seen, wait_sm), (set_before, set_after, _, set_sm) = log[:4], log[4:]
        assert np.frombuffer(_to_host(flag.handle, 4, s0), dtype=np.int32).tolist() == [1]
        # Each kernel ran on an SM of its own context's group, never the other's.
        assert wait_sm not in ids_b and set_sm not in ids_a
        assert wait_start <= wait_end and set_before <= set_after
        if seen:
            assert seen == 1 and set_before <= wait_end  # B's write landed while A waited
        else:
            assert wait_end - wait_start >= budget_ns  # A waited its whole budget
        flag.close(s0)
        logs.close(s0)
        s0.sync()
        sa.close()
        sb.close()
    finally:
        a.close()
        b.close()


@pytest.mark.gpu
def test_green_streams_allocate_launch_and_capture(device, sm, kernels):
    groups, _ = sm.split(SMResourceOptions(count=None))
    ctx = _green(device, groups[0])
    try:
        stream = ctx.create_stream()
        assert stream.context is ctx and stream.context.is_green
        assert stream.is_nonblocking
        event = stream.record()
        assert event.context is ctx
        assert stream.resources.sm.sm_count == ctx.resources.sm.sm_count
        n = 1000
        fill = kernels.get_kernel("fill")
        buf = device.allocate(n * 4, stream=stream)
        launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), fill, buf, np.int32(7),
               np.int32(n))  # fmt: skip
        assert (np.frombuffer(_to_host(buf.handle, n * 4, stream), np.int32) == 7).all()
        builder = stream.create_graph_builder().begin_building()
        launch(builder, LaunchConfig(grid=(n + 127) // 128, block=128), fill, buf, np.int32(-3),
               np.int32(n))  # fmt: skip
        graph = builder.end_building().complete()
        graph.launch(stream)
        assert (np.frombuffer(_to_host(buf.handle, n * 4, stream), np.int32) == -3).all()
        graph.close()
        buf.close(stream)
        with pytest.raises(ValueError, match="must be non-blocking"):
            ctx.create_stream(StreamOptions(nonblocking=False))
        stream.close()
    finally:
        ctx.close()
    assert ctx.is_closed
    ctx.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        ctx.create_stream()
    with pytest.raises(RuntimeError, match="closed"):
        ctx.resources  # noqa: B018


@pytest.mark.gpu
def test_set_current_round_trips_and_close_while_current(device, sm):
    groups, _ = sm.split(SMResourceOptions(count=None))
    ctx = _green(device, groups[0])
    try:
        prev = device.set_current(ctx)
        assert prev is not None and not prev.is_green
        with pytest.raises(RuntimeError, match="while it is current"):
            ctx.close()
        again = device.set_current(prev)
        assert again is ctx
    finally:
        device.set_current()
        ctx.close()


@pytest.mark.gpu
def test_context_outlives_close_while_its_stream_is_open(device, sm, kernels):
    groups, _ = sm.split(SMResourceOptions(count=None))
    ctx = _green(device, groups[0])
    stream = ctx.create_stream()
    ctx.close()  # the stream still uses the green context
    buf = device.allocate(64 * 4, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=64), kernels.get_kernel("fill"), buf, np.int32(5),
           np.int32(64))  # fmt: skip
    assert (np.frombuffer(_to_host(buf.handle, 64 * 4, stream), np.int32) == 5).all()
    buf.close(stream)
    stream.close()


@pytest.mark.gpu
def test_unclosed_green_stream_is_released_before_its_context(device, sm, monkeypatch):
    import cuda_core._stream as stream_mod

    real = stream_mod._destroy_stream
    green_alive = []

    def destroy(c_stream):
        if int(ffi.cast("intptr_t", c_stream)) == address:  # not other tests' garbage
            green_alive.append(finalizer.alive)  # the green context's finalizer has not run yet
        real(c_stream)

    monkeypatch.setattr(stream_mod, "_destroy_stream", destroy)
    groups, _ = sm.split(SMResourceOptions(count=None))
    ctx = _green(device, groups[0])
    stream = ctx.create_stream()
    address = stream.handle
    finalizer = stream._owner._finalizer  # holds the owner weakly
    ctx.close()  # the green context is kept: its stream is still open
    assert finalizer.alive
    device.set_current()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del stream, ctx
        for _ in range(3):
            gc.collect()
    assert green_alive == [True]  # the stream went first, once
    assert not finalizer.alive  # then the green context
    assert [w for w in caught if issubclass(w.category, CUDAWarning)] == []


@pytest.mark.gpu
def test_workqueue_needs_a_13_1_driver(device):
    from cuda_core._loader import driver_version

    if driver_version() < 13010:
        with pytest.raises(NotImplementedError, match="requires CUDA driver 13.1 or newer"):
            device.resources.workqueue  # noqa: B018
        return
    wq = device.resources.workqueue
    assert wq.handle != 0 and wq.concurrency_limit >= 1
    assert isinstance(wq.sharing_scope, WorkqueueSharingScopeType)
    assert wq.device == device
    wq.configure(WorkqueueResourceOptions(sharing_scope="green_ctx_balanced", concurrency_limit=2))
    assert wq.sharing_scope is WorkqueueSharingScopeType.GREEN_CTX_BALANCED
    assert wq.concurrency_limit == 2
    groups, _ = device.resources.sm.split(SMResourceOptions(count=None))
    ctx = device.create_context(ContextOptions(resources=[groups[0], wq]))
    ctx.close()


@pytest.mark.gpu
def test_primary_context_resources_are_the_devices(device):
    try:
        whole = device.resources.sm.sm_count
    except NotImplementedError as exc:
        pytest.skip(str(exc))
    assert device.context.resources.sm.sm_count == whole
    assert Device(0).context.is_green is False
