# SPDX-License-Identifier: Apache-2.0
"""Kernels, launch configurations and host-buffer helpers shared by the graph tests."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core import (
    Device,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)
from cuda_core._cuda_ffi import ffi

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
