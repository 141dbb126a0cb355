# SPDX-License-Identifier: Apache-2.0
"""TMA tensor maps on the GPU (compute capability 9.0+): a kernel copies a
tile with ``cp.async.bulk.tensor`` and the result is compared with NumPy
slices, including replace_address and out-of-bounds fills; creation errors."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core import CUDAError, Device, LaunchConfig, Program, ProgramOptions, launch
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._tensor_map import (
    TensorMapDataType,
    TensorMapDescriptor,
    TensorMapOOBFill,
    TensorMapSwizzle,
)
from cuda_core.utils import StridedMemoryView

pytestmark = pytest.mark.gpu

BH, BW = 16, 32  # the box: 16 rows of 32 floats
H, W = 70, 100  # the tensor (rows of 400 bytes, a multiple of 16)

SOURCE = r"""
struct __align__(64) TmaMap { unsigned long long v[16]; };

extern "C" __global__ void tma_tile(const __grid_constant__ TmaMap map, float *out,
                                    int x0, int y0) {
    __shared__ __align__(128) float tile[BH * BW];
    __shared__ __align__(8) unsigned long long bar;
    unsigned int bar_addr = (unsigned int)__cvta_generic_to_shared(&bar);
    unsigned int dst = (unsigned int)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar_addr), "r"(BH * BW * 4) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%2, %3}], [%4];"
            :: "r"(dst), "l"((unsigned long long)&map), "r"(x0), "r"(y0), "r"(bar_addr)
            : "memory");
    }
    unsigned int done = 0;
    while (!done) {
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                     " selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar_addr) : "memory");
    }
    for (int i = threadIdx.x; i < BH * BW; i += blockDim.x) out[i] = tile[i];
}

extern "C" __global__ void takes_pointer(float *p) {}
""".replace("BH", str(BH)).replace("BW", str(BW))


@pytest.fixture(scope="module")
def tma():
    dev = Device(0)
    dev.set_current()
    if dev.compute_capability.major < 9 or not dev.properties.tensor_map_access_supported:
        pytest.skip("TMA needs compute capability 9.0+")
    prog = Program(SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    return prog.compile("cubin")


def to_device(device, stream, host):
    buf = device.allocate(host.nbytes, stream=stream)
    check(lib.cuMemcpyHtoDAsync(buf.handle, ffi.from_buffer(host), host.nbytes, stream._handle))
    stream.sync()
    return buf


def view_of(buf, shape=(H, W), dtype=np.float32):
    return StridedMemoryView.from_buffer(buf, shape, dtype=dtype)


def run_tile(tma, device, stream, desc, x0, y0):
    out = device.allocate(BH * BW * 4, stream=stream)
    kernel = tma.get_kernel("tma_tile")
    launch(stream, LaunchConfig(grid=1, block=128), kernel, desc, out, np.int32(x0), np.int32(y0))
    host = np.zeros((BH, BW), dtype=np.float32)
    check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(host), out.handle, host.nbytes, stream._handle))
    stream.sync()
    out.close()
    return host


def expected_tile(host, x0, y0, fill):
    """The box at (x0, y0) of ``host``; elements outside the tensor read ``fill``."""
    tile = np.full((BH, BW), fill, dtype=np.float32)
    for r in range(BH):
        for c in range(BW):
            y, x = y0 + r, x0 + c
            if 0 <= y < H and 0 <= x < W:
                tile[r, c] = host[y, x]
    return tile


@pytest.fixture
def tensors(device, stream):
    rng = np.random.default_rng(10)
    a = rng.standard_normal((H, W)).astype(np.float32)
    b = rng.standard_normal((H, W)).astype(np.float32)
    bufs = to_device(device, stream, a), to_device(device, stream, b)
    yield (a, b), bufs
    for buf in bufs:
        buf.close()


def test_tile_copy_matches_numpy_slice(tma, device, stream, tensors):
    (a, _), (buf_a, _) = tensors
    desc = view_of(buf_a).as_tensor_map(box_dim=(BH, BW))
    assert repr(desc) == "TensorMapDescriptor(tiled, rank=2, dtype=FLOAT32, swizzle=NONE)"
    assert desc.device.device_id == device.device_id
    got = run_tile(tma, device, stream, desc, 32, 8)
    np.testing.assert_array_equal(got, a[8 : 8 + BH, 32 : 32 + BW])


def test_replace_address(tma, device, stream, tensors):
    (a, b), (buf_a, buf_b) = tensors
    desc = view_of(buf_a).as_tensor_map(options={"box_dim": (BH, BW)})
    np.testing.assert_array_equal(run_tile(tma, device, stream, desc, 0, 0), a[:BH, :BW])
    desc.replace_address(view_of(buf_b))
    np.testing.assert_array_equal(run_tile(tma, device, stream, desc, 64, 40), b[40:56, 64:96])
    desc.replace_address(buf_a)  # any DLPack exporter works too
    np.testing.assert_array_equal(run_tile(tma, device, stream, desc, 64, 40), a[40:56, 64:96])
    with pytest.raises(ValueError, match="device-accessible"):
        desc.replace_address(np.zeros((H, W), dtype=np.float32))


@pytest.mark.parametrize(
    "oob, fill", [(TensorMapOOBFill.NONE, 0.0), (TensorMapOOBFill.NAN_REQUEST_ZERO_FMA, np.nan)]
)
@pytest.mark.parametrize("x0, y0", [(80, 60), (-8, -4)])
def test_edge_tiles_fill_as_requested(tma, device, stream, tensors, oob, fill, x0, y0):
    (a, _), (buf_a, _) = tensors
    desc = view_of(buf_a).as_tensor_map(box_dim=(BH, BW), oob_fill=oob)
    got = run_tile(tma, device, stream, desc, x0, y0)
    np.testing.assert_array_equal(got, expected_tile(a, x0, y0, fill))  # NaN == NaN here


def test_creation_errors(device, stream, tensors):
    _, (buf_a, _) = tensors
    view = view_of(buf_a)
    with pytest.raises(ValueError, match="box_dim must have 2 elements"):
        view.as_tensor_map(box_dim=(BW,))
    with pytest.raises(ValueError, match=r"box_dim\[0\] must be in \[1, 256\], got 512"):
        view.as_tensor_map(box_dim=(512, 32))
    with pytest.raises(ValueError, match="rank must be between 1 and 5, got 6"):
        view_of(buf_a, (2, 2, 2, 2, 2, 2)).as_tensor_map(box_dim=(2,) * 5 + (4,))
    with pytest.raises(ValueError, match="16-byte aligned"):
        StridedMemoryView.from_buffer(
            type(buf_a).from_handle(buf_a.handle + 4, 64), (16,), dtype=np.float32
        ).as_tensor_map(box_dim=(4,))
    with pytest.raises(ValueError, match="Unsupported dtype int8"):
        view_of(buf_a, (H, W), np.int8).as_tensor_map(box_dim=(8, 16))
    with pytest.raises(ValueError, match="swizzle span"):
        view.as_tensor_map(box_dim=(8, 16), swizzle=TensorMapSwizzle.SWIZZLE_32B)
    with pytest.raises(TypeError, match="data_type must be"):
        view.as_tensor_map(box_dim=(8, 8), data_type=42)
    # data_type overrides the dtype: uint8 bytes read as float32 elements.
    raw = view_of(buf_a, (H, W * 4), np.uint8)
    desc = raw.as_tensor_map(box_dim=(BH, BW), data_type=TensorMapDataType.FLOAT32)
    assert "dtype=FLOAT32" in repr(desc)


def test_kernel_parameter_size_is_checked(tma, device, stream, tensors):
    _, (buf_a, _) = tensors
    desc = view_of(buf_a).as_tensor_map(box_dim=(BH, BW))
    kernel = tma.get_kernel("takes_pointer")
    if kernel._param_info_or_none() is None:
        pytest.skip("the driver does not report parameter sizes (CUDA < 12.4)")
    with pytest.raises(TypeError, match="TensorMapDescriptor of 128 bytes"):
        launch(stream, LaunchConfig(grid=1, block=1), kernel, desc)


def test_im2col_descriptor(device, stream):
    if device.compute_capability.major < 9:
        pytest.skip("TMA needs compute capability 9.0+")
    buf = device.allocate(1 * 8 * 8 * 64 * 4, stream=stream)
    view = StridedMemoryView.from_buffer(buf, (1, 8, 8, 64), dtype=np.float32)
    desc = TensorMapDescriptor._from_im2col(view, (0, 0), (4, 4), 64, 16)
    assert repr(desc).startswith("TensorMapDescriptor(im2col, rank=4")
    with pytest.raises(ValueError, match="Im2col tensor rank must be between 3 and 5"):
        TensorMapDescriptor._from_im2col(view_of(buf, (8, 8 * 64)), (), (), 64, 4)
    with pytest.raises(ValueError, match="pixel_box_lower_corner must have 2 elements"):
        TensorMapDescriptor._from_im2col(view, (0,), (4, 4), 64, 16)
    if device.compute_capability.major >= 10:
        try:
            wide = TensorMapDescriptor._from_im2col_wide(view, 0, 4, 64, 16)
        except CUDAError as exc:  # drivers before 12.8 lack the entry point
            pytest.skip(f"im2col-wide unavailable: {exc}")
        assert repr(wide).startswith("TensorMapDescriptor(im2col_wide")
    buf.close()
