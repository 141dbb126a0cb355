# SPDX-License-Identifier: Apache-2.0
"""Kernel attributes, parameter info and occupancy, checked against raw driver calls (GPU)."""

from __future__ import annotations

import pytest

from cuda_core import Device, Kernel, LaunchConfig, Program, ProgramOptions
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._kernel import ParamInfo
from cuda_core._kernel_occupancy import MaxPotentialBlockSizeOccupancyResult

pytestmark = pytest.mark.gpu

SOURCE = r"""
struct Pair { char a; double b; };
extern "C" __global__ void params(char *p, int i, double d, char c, float2 f, Pair s) {
    if (p) p[0] = c + (char)i + (char)d + (char)f.x + s.a;
}
extern "C" __global__ void noparams() {}
extern "C" __global__ void __launch_bounds__(256) bounded(float *x) {
    __shared__ float tile[1024];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}
extern "C" __global__ void dyn(float *x) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
"""

ATTRIBUTES = {
    "max_threads_per_block": lib.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
    "shared_size_bytes": lib.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
    "const_size_bytes": lib.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
    "local_size_bytes": lib.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
    "num_regs": lib.CU_FUNC_ATTRIBUTE_NUM_REGS,
    "ptx_version": lib.CU_FUNC_ATTRIBUTE_PTX_VERSION,
    "binary_version": lib.CU_FUNC_ATTRIBUTE_BINARY_VERSION,
    "cache_mode_ca": lib.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
    "max_dynamic_shared_size_bytes": lib.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    "preferred_shared_memory_carveout": lib.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
    "cluster_size_must_be_set": lib.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
    "required_cluster_width": lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
    "required_cluster_height": lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
    "required_cluster_depth": lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
    "non_portable_cluster_size_allowed": lib.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
    "cluster_scheduling_policy_preference": (
        lib.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
    ),
}
BOOL_ATTRIBUTES = {"cache_mode_ca", "cluster_size_must_be_set", "non_portable_cluster_size_allowed"}


@pytest.fixture(scope="module")
def code():
    dev = Device(0)
    dev.set_current()
    prog = Program(SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    obj = prog.compile("cubin")
    yield obj
    obj.close()


def raw_function(kernel):
    out = ffi.new("CUfunction *")
    check(lib.cuKernelGetFunction(out, ffi.cast("CUkernel", kernel.handle)))
    return out[0]


def raw_func_attribute(kernel, attr):
    out = ffi.new("int *")
    check(lib.cuFuncGetAttribute(out, attr, raw_function(kernel)))
    return out[0]


def test_get_kernel_returns_a_kernel(device, code):
    k = code.get_kernel("params")
    assert isinstance(k, Kernel)
    assert type(k.handle) is int and k.handle != 0
    assert k == code.get_kernel("params")
    assert k != code.get_kernel("noparams")
    again = Kernel.from_handle(k.handle, code)
    assert again == k


@pytest.mark.parametrize("name", sorted(ATTRIBUTES))
def test_attributes_match_the_driver(device, code, name):
    for kname in ("params", "bounded", "dyn"):
        k = code.get_kernel(kname)
        value = getattr(k.attributes, name)
        raw = raw_func_attribute(k, ATTRIBUTES[name])
        if name in BOOL_ATTRIBUTES:
            assert type(value) is bool
            assert value == bool(raw)
        else:
            assert type(value) is int
            assert value == raw


def test_attribute_values_make_sense(device, code):
    k = code.get_kernel("bounded")
    attrs = k.attributes
    assert attrs.max_threads_per_block == 256  # __launch_bounds__
    assert attrs.shared_size_bytes == 4096
    major, minor = device.compute_capability
    assert attrs.binary_version == major * 10 + minor
    assert attrs.num_regs > 0


def test_attribute_views_per_device_share_a_cache(device, code):
    k = code.get_kernel("params")
    attrs = k.attributes
    by_int = attrs[0]
    by_dev = attrs[device]
    assert by_int.num_regs == attrs.num_regs == by_dev.num_regs
    assert by_int._cache is attrs._cache is by_dev._cache
    assert (0, lib.CU_FUNC_ATTRIBUTE_NUM_REGS) in attrs._cache
    with pytest.raises(TypeError):
        attrs["0"]
    with pytest.raises(ValueError):
        attrs[10_000]


def test_parameter_info(device, code):
    k = code.get_kernel("params")
    assert k.num_arguments == 6
    info = k.arguments_info
    assert info == [
        ParamInfo(0, 8),
        ParamInfo(8, 4),
        ParamInfo(16, 8),
        ParamInfo(24, 1),
        ParamInfo(32, 8),
        ParamInfo(40, 16),
    ]
    assert info[1].offset == 8 and info[1].size == 4
    info.append(None)  # a copy: the cache is not affected
    assert k.num_arguments == 6
    empty = code.get_kernel("noparams")
    assert empty.num_arguments == 0
    assert empty.arguments_info == []


def test_occupancy_matches_the_driver(device, code):
    k = code.get_kernel("dyn")
    func = raw_function(k)
    occ = k.occupancy
    raw = ffi.new("int *")
    for block, shmem in [(32, 0), (128, 1024), (256, 8192), (1024, 0)]:
        check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(raw, func, block, shmem))
        assert occ.max_active_blocks_per_multiprocessor(block, shmem) == raw[0]
        assert raw[0] > 0
    min_grid, block = ffi.new("int *"), ffi.new("int *")
    check(lib.cuOccupancyMaxPotentialBlockSize(min_grid, block, func, ffi.NULL, 512, 0))
    result = occ.max_potential_block_size(512, 0)
    assert isinstance(result, MaxPotentialBlockSizeOccupancyResult)
    assert result == (min_grid[0], block[0])
    assert result.min_grid_size == min_grid[0] and result.max_block_size == block[0]
    limited = occ.max_potential_block_size(0, 64)
    assert limited.max_block_size <= 64
    # block-size-dependent shared memory, as a Python callable
    seen = []

    def per_block(bs):
        seen.append(bs)
        return bs * 4

    by_fn = occ.max_potential_block_size(per_block, 0)
    assert seen and by_fn.max_block_size in seen
    assert by_fn.max_block_size > 0
    size = ffi.new("size_t *")
    check(lib.cuOccupancyAvailableDynamicSMemPerBlock(size, func, 2, 256))
    assert occ.available_dynamic_shared_memory_per_block(2, 256) == size[0]
    with pytest.raises(TypeError):
        occ.max_potential_block_size("512", 0)
    with pytest.raises(TypeError):
        occ.max_active_blocks_per_multiprocessor(32.0, 0)


def test_cluster_occupancy(device, code, stream):
    if device.compute_capability < (9, 0):
        pytest.skip("thread block clusters need compute capability 9.0")
    k = code.get_kernel("dyn")
    cfg = LaunchConfig(grid=8, cluster=2, block=128)
    size = k.occupancy.max_potential_cluster_size(cfg, stream=stream)
    assert size >= 8  # the portable cluster size
    clusters = k.occupancy.max_active_clusters(cfg, stream=stream)
    assert clusters >= 1
    # the same numbers through the raw driver
    c_cfg, keep = cfg._to_cu_launch_config(stream._handle)
    out = ffi.new("int *")
    check(lib.cuOccupancyMaxActiveClusters(out, raw_function(k), c_cfg))
    assert clusters == out[0]
    assert k.occupancy.max_active_clusters({"grid": 8, "cluster": 2, "block": 128}, stream=stream)
    with pytest.raises(TypeError):
        k.occupancy.max_active_clusters(cfg)  # stream is keyword-only and required


def test_closed_object_code_closes_its_kernels(device):
    prog = Program(SOURCE, "c++", options=ProgramOptions(arch=f"sm_{device.arch}"))
    obj = prog.compile("cubin")
    k = obj.get_kernel("params")
    assert k.attributes.num_regs > 0
    obj.close()
    with pytest.raises(RuntimeError, match="Kernel is closed"):
        _ = k.attributes[0].max_threads_per_block
    with pytest.raises(RuntimeError, match="Kernel is closed"):
        _ = k.attributes.num_regs  # read (and cached) before close: raises all the same
    with pytest.raises(RuntimeError, match="Kernel is closed"):
        k.occupancy.max_active_blocks_per_multiprocessor(32, 0)
    assert "closed" in repr(k)
