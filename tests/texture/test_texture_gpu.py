# SPDX-License-Identifier: Apache-2.0
"""Textures, surfaces and CUDA arrays on the GPU, checked against NumPy:
bilinear filtering, every address mode, point sampling, normalized reads,
surface writes, 1-D/2-D/3-D/layered copies, mipmap levels, lifetimes."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core import Buffer, LaunchConfig, Program, ProgramOptions, launch
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.texture import (
    MipmappedArrayOptions,
    OpaqueArray,
    OpaqueArrayOptions,
    ResourceDescriptor,
    TextureObjectOptions,
)
from cuda_core.typing import AddressModeType, ArrayFormatType, FilterModeType, ReadModeType
from cuda_core.utils import StridedMemoryView

pytestmark = pytest.mark.gpu

SOURCE = r"""
extern "C" __global__ void sample2d(cudaTextureObject_t t, const float *xs, const float *ys,
                                    float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float>(t, xs[i], ys[i]);
}
extern "C" __global__ void sample2d_lod(cudaTextureObject_t t, const float *xs, const float *ys,
                                        float lod, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLod<float>(t, xs[i], ys[i], lod);
}
extern "C" __global__ void sample2d_layered(cudaTextureObject_t t, const float *xs,
                                            const float *ys, int layer, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLayered<float>(t, xs[i], ys[i], layer);
}
extern "C" __global__ void fetch1d(cudaTextureObject_t t, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, i);
}
extern "C" __global__ void write_surface(cudaSurfaceObject_t s, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) surf2Dwrite((float)(x + 1000 * y), s, x * (int)sizeof(float), y);
}
"""


@pytest.fixture(scope="module")
def kernels():
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    prog = Program(SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    return prog.compile("cubin")


def to_device(device, stream, host):
    host = np.ascontiguousarray(host)
    buf = device.allocate(max(host.nbytes, 1), stream=stream)
    check(lib.cuMemcpyHtoDAsync(buf.handle, ffi.from_buffer(host), host.nbytes, stream._handle))
    stream.sync()
    return buf


def to_device_aligned(device, stream, host):
    """Like :func:`to_device`, at an address meeting the texture alignments."""
    props = device.properties
    align = max(props.texture_alignment, props.texture_pitch_alignment)
    raw = device.allocate(host.nbytes + align, stream=stream)
    address = -(-raw.handle // align) * align
    buf = Buffer.from_handle(address, host.nbytes, owner=raw)
    check(lib.cuMemcpyHtoDAsync(address, ffi.from_buffer(host), host.nbytes, stream._handle))
    stream.sync()
    return buf, raw


def to_host(buf, shape, dtype, stream):
    out = np.zeros(shape, dtype=dtype)
    check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(out), buf.handle, out.nbytes, stream._handle))
    stream.sync()
    return out


def sample(kernels, device, stream, tex, xs, ys):
    """Run ``sample2d`` at (xs, ys); return the float32 results."""
    xs = np.asarray(xs, dtype=np.float32).ravel()
    ys = np.asarray(ys, dtype=np.float32).ravel()
    n = xs.size
    d_x, d_y = to_device(device, stream, xs), to_device(device, stream, ys)
    d_out = device.allocate(4 * n, stream=stream)
    cfg = LaunchConfig(grid=(n + 127) // 128, block=128)
    launch(stream, cfg, kernels.get_kernel("sample2d"), tex, d_x, d_y, d_out, np.int32(n))
    out = to_host(d_out, n, np.float32, stream)
    for b in (d_x, d_y, d_out):
        b.close()
    return out


def float_array(device, stream, host, **kw):
    """A float32 1-channel OpaqueArray holding ``host`` (shape (H, W) -> array (W, H))."""
    arr = device.create_opaque_array(
        OpaqueArrayOptions(shape=host.shape[::-1], format="float32", num_channels=1, **kw)
    )
    arr.copy_from(np.ascontiguousarray(host, dtype=np.float32), stream=stream)
    stream.sync()
    return arr


def bilinear(host, x, y):
    """NumPy reference of CUDA linear filtering (unnormalized coordinates, clamp)."""
    h, w = host.shape
    xb, yb = x - 0.5, y - 0.5
    i, j = np.floor(xb).astype(int), np.floor(yb).astype(int)
    a, b = xb - i, yb - j

    def t(ii, jj):
        return host[np.clip(jj, 0, h - 1), np.clip(ii, 0, w - 1)]

    return (
        (1 - a) * (1 - b) * t(i, j)
        + a * (1 - b) * t(i + 1, j)
        + (1 - a) * b * t(i, j + 1)
        + a * b * t(i + 1, j + 1)
    )


def test_linear_filtering_matches_bilinear_reference(kernels, device, stream):
    h, w = 24, 40
    yy, xx = np.mgrid[0:h, 0:w]
    host = (0.5 + 0.25 * np.sin(0.3 * xx) + 0.25 * np.cos(0.2 * yy)).astype(np.float32)
    arr = float_array(device, stream, host)
    res = ResourceDescriptor.from_opaque_array(arr)
    tex = device.create_texture_object(
        resource=res, options=TextureObjectOptions(filter_mode=FilterModeType.LINEAR)
    )
    rng = np.random.default_rng(1)
    xs = rng.uniform(-1.0, w + 1.0, 500).astype(np.float32)
    ys = rng.uniform(-1.0, h + 1.0, 500).astype(np.float32)
    got = sample(kernels, device, stream, tex, xs, ys)
    want = bilinear(host.astype(np.float64), xs.astype(np.float64), ys.astype(np.float64))
    # The hardware keeps 8 fractional bits of the interpolation weights.
    assert np.max(np.abs(got - want)) <= 1 / 256
    # Not a point sample: it differs from the nearest texel where the data vary.
    nearest = host[np.clip(ys.astype(int), 0, h - 1), np.clip(xs.astype(int), 0, w - 1)]
    assert np.max(np.abs(got - nearest)) > 0.01
    assert tex.handle != 0 and tex.resource is res
    tex.close()
    arr.close()


def wrap_index(i, n):
    return np.mod(i, n)


def mirror_index(i, n):
    m = np.mod(i, 2 * n)
    return np.where(m < n, m, 2 * n - 1 - m)


def clamp_index(i, n):
    return np.clip(i, 0, n - 1)


@pytest.mark.parametrize("mode", ["wrap", "clamp", "mirror", "border"])
def test_address_modes(kernels, device, stream, mode):
    h, w = 8, 16  # powers of two: texel centres are exact normalized coordinates
    rng = np.random.default_rng(2)
    host = rng.uniform(1.0, 2.0, (h, w)).astype(np.float32)
    arr = float_array(device, stream, host)
    border = (0.75, 0.0, 0.0, 0.0)
    opts = TextureObjectOptions(
        address_mode=AddressModeType(mode), normalized_coords=True, border_color=border
    )
    tex = device.create_texture_object(
        resource=ResourceDescriptor.from_opaque_array(arr), options=opts
    )
    ii, jj = np.meshgrid(
        np.arange(-21, w + 19), np.array([-9, -1, 0, 3, h - 1, h, h + 5, 2 * h + 2])
    )
    xs = (ii + 0.5) / w
    ys = (jj + 0.5) / h
    got = sample(kernels, device, stream, tex, xs, ys).reshape(ii.shape)
    if mode == "border":
        inside = (ii >= 0) & (ii < w) & (jj >= 0) & (jj < h)
        want = np.where(inside, host[clamp_index(jj, h), clamp_index(ii, w)], border[0])
    else:
        index = {"wrap": wrap_index, "clamp": clamp_index, "mirror": mirror_index}[mode]
        want = host[index(jj, h), index(ii, w)]
    np.testing.assert_array_equal(got, want.astype(np.float32))
    tex.close()
    arr.close()


def test_per_axis_address_modes(kernels, device, stream):
    h, w = 8, 16
    host = np.arange(h * w, dtype=np.float32).reshape(h, w)
    arr = float_array(device, stream, host)
    opts = TextureObjectOptions(address_mode=("wrap", "clamp"), normalized_coords=True)
    tex = device.create_texture_object(
        resource=ResourceDescriptor.from_opaque_array(arr), options=opts
    )
    ii, jj = np.meshgrid(np.arange(-5, w + 5), np.arange(-3, h + 3))
    got = sample(kernels, device, stream, tex, (ii + 0.5) / w, (jj + 0.5) / h)
    want = host[clamp_index(jj, h), wrap_index(ii, w)]
    np.testing.assert_array_equal(got.reshape(ii.shape), want)
    tex.close()
    arr.close()


def test_point_filtering_is_exact(kernels, device, stream):
    h, w = 13, 29
    rng = np.random.default_rng(3)
    host = rng.standard_normal((h, w)).astype(np.float32)
    arr = float_array(device, stream, host)
    tex = device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr))
    ix = rng.integers(0, w, 400)
    iy = rng.integers(0, h, 400)
    xs = ix + rng.uniform(0.1, 0.9, 400)
    ys = iy + rng.uniform(0.1, 0.9, 400)
    got = sample(kernels, device, stream, tex, xs, ys)
    np.testing.assert_array_equal(got, host[iy, ix])
    tex.close()
    arr.close()


def test_normalized_float_reads_of_uint8(kernels, device, stream):
    h, w = 9, 17
    host = np.random.default_rng(4).integers(0, 256, (h, w), dtype=np.uint8)
    arr = device.create_opaque_array(
        OpaqueArrayOptions(shape=(w, h), format=np.uint8, num_channels=1)
    )
    arr.copy_from(host, stream=stream)
    opts = TextureObjectOptions(read_mode=ReadModeType.NORMALIZED_FLOAT)
    tex = device.create_texture_object(
        resource=ResourceDescriptor.from_opaque_array(arr), options=opts
    )
    ii, jj = np.meshgrid(np.arange(w), np.arange(h))
    got = sample(kernels, device, stream, tex, ii + 0.5, jj + 0.5)
    np.testing.assert_allclose(got, (host.astype(np.float32) / 255).ravel(), rtol=0, atol=1e-6)
    tex.close()
    arr.close()


def test_surface_writes_read_back_exactly(kernels, device, stream):
    h, w = 19, 37
    arr = device.create_opaque_array(
        OpaqueArrayOptions(
            shape=(w, h), format="float32", num_channels=1, is_surface_load_store=True
        )
    )
    surf = device.create_surface_object(resource=ResourceDescriptor.from_opaque_array(arr))
    assert surf.handle != 0 and surf.resource.source is arr
    cfg = LaunchConfig(grid=((w + 15) // 16, (h + 15) // 16), block=(16, 16))
    launch(stream, cfg, kernels.get_kernel("write_surface"), surf, np.int32(w), np.int32(h))
    out = arr.copy_to(np.zeros((h, w), dtype=np.float32), stream=stream)
    stream.sync()
    yy, xx = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(out, (xx + 1000 * yy).astype(np.float32))
    surf.close()
    with pytest.raises(RuntimeError, match="SurfaceObject argument is closed"):
        launch(stream, cfg, kernels.get_kernel("write_surface"), surf, np.int32(w), np.int32(h))
    arr.close()


def test_3d_array_round_trips(device, stream):
    w, h, d = 9, 5, 4
    host = np.random.default_rng(5).integers(0, 65536, (d, h, w, 2), dtype=np.uint16)
    arr = device.create_opaque_array(
        OpaqueArrayOptions(shape=(w, h, d), format="uint16", num_channels=2)
    )
    assert arr.size_bytes == host.nbytes and arr.element_bytes == 4
    arr.copy_from(host, stream=stream)
    back = arr.copy_to(np.zeros_like(host), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(back, host)
    # Through device memory: a Buffer and a StridedMemoryView of one.
    dev_buf = device.allocate(host.nbytes, stream=stream)
    arr.copy_to(dev_buf, stream=stream)
    np.testing.assert_array_equal(to_host(dev_buf, host.shape, np.uint16, stream), host)
    other = host[::-1].copy()
    src = to_device(device, stream, other)
    arr.copy_from(StridedMemoryView.from_buffer(src, other.shape, dtype=np.uint16), stream=stream)
    np.testing.assert_array_equal(arr.copy_to(np.zeros_like(host), stream=stream), other)
    stream.sync()
    for b in (dev_buf, src):
        b.close()
    arr.close()


@pytest.mark.parametrize("shape", [(64,), (16, 3)])
def test_1d_and_1d_layered_round_trips(device, stream, shape):
    layered = len(shape) == 2
    host = np.random.default_rng(6).standard_normal(shape[::-1]).astype(np.float32)
    opts = OpaqueArrayOptions(shape=shape, format="float32", num_channels=1, is_layered=layered)
    arr = device.create_opaque_array(opts)
    assert arr.is_layered is layered and arr.shape == shape
    arr.copy_from(host, stream=stream)
    out = arr.copy_to(np.zeros_like(host), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, host)
    arr.close()


def test_2d_layered_texture(kernels, device, stream):
    w, h, layers = 8, 4, 3
    host = np.random.default_rng(7).standard_normal((layers, h, w)).astype(np.float32)
    arr = float_array(device, stream, host, is_layered=True)
    assert arr.shape == (w, h, layers)
    np.testing.assert_array_equal(arr.copy_to(np.zeros_like(host), stream=stream), host)
    tex = device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr))
    ii, jj = np.meshgrid(np.arange(w), np.arange(h))
    xs = to_device(device, stream, (ii + 0.5).astype(np.float32))
    ys = to_device(device, stream, (jj + 0.5).astype(np.float32))
    out = device.allocate(4 * w * h, stream=stream)
    kernel = kernels.get_kernel("sample2d_layered")
    launch(
        stream,
        LaunchConfig(grid=1, block=128),
        kernel,
        tex,
        xs,
        ys,
        np.int32(2),
        out,
        np.int32(w * h),
    )
    np.testing.assert_array_equal(to_host(out, (h, w), np.float32, stream), host[2])
    tex.close()
    arr.close()


def test_mipmapped_levels_shapes_contents_and_sampling(kernels, device, stream):
    base, levels = (64, 32), 4
    mip = device.create_mipmapped_array(
        MipmappedArrayOptions(shape=base, format="float32", num_channels=1, num_levels=levels)
    )
    assert (mip.shape, mip.num_levels, mip.format) == (base, levels, ArrayFormatType.FLOAT32)
    data = []
    for level in range(levels):
        lvl = mip.get_level(level)
        assert lvl.shape == tuple(max(1, n >> level) for n in base)
        w, h = lvl.shape
        host = (1000 * level + np.arange(w * h, dtype=np.float32)).reshape(h, w)
        lvl.copy_from(host, stream=stream)
        np.testing.assert_array_equal(lvl.copy_to(np.zeros_like(host), stream=stream), host)
        data.append(host)
        lvl.close()
    stream.sync()
    opts = TextureObjectOptions(normalized_coords=True, max_mipmap_level_clamp=float(levels - 1))
    tex = device.create_texture_object(
        resource=ResourceDescriptor.from_mipmapped_array(mip), options=opts
    )
    kernel = kernels.get_kernel("sample2d_lod")
    for level, host in enumerate(data):
        h, w = host.shape
        ii, jj = np.meshgrid(np.arange(w), np.arange(h))
        xs = to_device(device, stream, ((ii + 0.5) / w).astype(np.float32))
        ys = to_device(device, stream, ((jj + 0.5) / h).astype(np.float32))
        out = device.allocate(host.nbytes, stream=stream)
        cfg = LaunchConfig(grid=(w * h + 127) // 128, block=128)
        launch(stream, cfg, kernel, tex, xs, ys, np.float32(level), out, np.int32(w * h))
        np.testing.assert_array_equal(to_host(out, host.shape, np.float32, stream), host)
    tex.close()
    mip.close()


def test_level_outlives_its_mipmap(device, stream):
    mip = device.create_mipmapped_array(
        MipmappedArrayOptions(shape=(16, 16), format="uint32", num_channels=1, num_levels=3)
    )
    lvl = mip.get_level(1)
    mip.close()
    assert mip.handle == 0 and lvl.handle != 0
    host = np.arange(64, dtype=np.uint32).reshape(8, 8)
    lvl.copy_from(host, stream=stream)
    np.testing.assert_array_equal(lvl.copy_to(np.zeros_like(host), stream=stream), host)
    stream.sync()
    with pytest.raises(RuntimeError, match="MipmappedArray is closed"):
        mip.get_level(0)
    with pytest.raises(ValueError, match="num_levels"):
        mip.get_level(3)
    lvl.close()


def test_texture_keeps_closed_array_alive(kernels, device, stream):
    host = np.arange(32, dtype=np.float32).reshape(4, 8)
    arr = float_array(device, stream, host)
    shared = arr._shared
    tex = device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr))
    arr.close()
    assert arr.handle == 0 and shared.claims == 1
    with pytest.raises(RuntimeError, match="OpaqueArray is closed"):
        arr.copy_to(np.zeros_like(host), stream=stream)
    with pytest.raises(RuntimeError, match="OpaqueArray is closed"):
        device.create_texture_object(resource=ResourceDescriptor.from_opaque_array(arr))
    ii, jj = np.meshgrid(np.arange(8), np.arange(4))
    got = sample(kernels, device, stream, tex, ii + 0.5, jj + 0.5)
    np.testing.assert_array_equal(got, host.ravel())
    with tex:
        pass
    assert tex.handle == 0 and tex.resource is None and shared.claims == 0
    tex.close()  # idempotent


def test_linear_and_pitch2d_textures(kernels, device, stream):
    n = 256
    host = np.random.default_rng(8).standard_normal(n).astype(np.float32)
    buf, raw = to_device_aligned(device, stream, host)
    tex = device.create_texture_object(
        resource=ResourceDescriptor.from_linear(buf, format="float32", num_channels=1)
    )
    out = device.allocate(4 * n, stream=stream)
    fetch = kernels.get_kernel("fetch1d")
    launch(stream, LaunchConfig(grid=2, block=128), fetch, tex, out, np.int32(n))
    np.testing.assert_array_equal(to_host(out, n, np.float32, stream), host)
    buf.close()  # the texture keeps the memory: it still reads the same data
    out2 = device.allocate(4 * n, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=128), fetch, tex, out2, np.int32(n))
    np.testing.assert_array_equal(to_host(out2, n, np.float32, stream), host)
    out2.close()
    tex.close()
    out.close()
    raw.close()

    w, h = 20, 10
    align = device.properties.texture_pitch_alignment
    pitch = -(-w * 4 // align) * align
    image = np.random.default_rng(9).standard_normal((h, w)).astype(np.float32)
    padded = np.zeros((h, pitch // 4), dtype=np.float32)
    padded[:, :w] = image
    pbuf, raw = to_device_aligned(device, stream, padded)
    res = ResourceDescriptor.from_pitch2d(
        pbuf, format="float32", num_channels=1, width=w, height=h, pitch_bytes=pitch
    )
    tex = device.create_texture_object(resource=res)
    ii, jj = np.meshgrid(np.arange(w), np.arange(h))
    got = sample(kernels, device, stream, tex, ii + 0.5, jj + 0.5)
    np.testing.assert_array_equal(got, image.ravel())
    tex.close()
    raw.close()


def test_surface_and_texture_creation_errors(device):
    arr = device.create_opaque_array(
        OpaqueArrayOptions(shape=(8, 8), format="uint8", num_channels=4)
    )
    with pytest.raises(ValueError, match="is_surface_load_store=True"):
        device.create_surface_object(resource=ResourceDescriptor.from_opaque_array(arr))
    assert isinstance(arr, OpaqueArray) and arr.device.device_id == device.device_id
    arr.close()
    mip = device.create_mipmapped_array(
        MipmappedArrayOptions(
            shape=(8, 8), format="uint8", num_channels=4, num_levels=2, is_surface_load_store=True
        )  # fmt: skip
    )
    with pytest.raises(ValueError, match="array-backed"):
        device.create_surface_object(resource=ResourceDescriptor.from_mipmapped_array(mip))
    mip.close()
