# SPDX-License-Identifier: Apache-2.0
"""Tiled matrix multiplication with shared memory, checked against NumPy.

Each block computes a ``TILE x TILE`` tile of ``C = A @ B``, staging tiles of
A and B through shared memory.  The matrix sizes are deliberately not
multiples of the tile size.  The shared memory is static here; the kernel's
attributes report it, and the occupancy query tells how many blocks fit on a
multiprocessor.

Run: ``python examples/matmul_tiled.py`` (exits 0 with a message when no GPU
is present).
"""

from __future__ import annotations

import os
import sys

import numpy as np

try:
    import cuda_core  # noqa: F401
except ImportError:  # running from a source checkout
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from cuda_core import (  # noqa: E402
    CUDAError,
    Device,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)

TILE = 16
CODE = r"""
extern "C" __global__ void matmul(const float *A, const float *B, float *C,
                                  int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        int ka = t * TILE + threadIdx.x;
        int kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"matmul_tiled: skipped, no usable CUDA GPU ({exc})")
        return 0
    stream = dev.create_stream()
    # the tile size reaches the kernel as a macro (-DTILE=16)
    options = ProgramOptions(arch=f"sm_{dev.arch}", define_macro=("TILE", str(TILE)))
    prog = Program(CODE, "c++", options=options)
    module = prog.compile("cubin")
    kernel = module.get_kernel("matmul")
    print(
        f"matmul_tiled: kernel uses {kernel.attributes.shared_size_bytes} bytes of shared "
        f"memory and {kernel.attributes.num_regs} registers per thread; "
        f"{kernel.occupancy.max_active_blocks_per_multiprocessor(TILE * TILE, 0)} blocks "
        "fit on one multiprocessor"
    )

    M, N, K = 300, 200, 170
    rng = np.random.default_rng(2)
    pinned = LegacyPinnedMemoryResource()
    h_a = pinned.allocate(M * K * 4, stream=stream)
    h_b = pinned.allocate(K * N * 4, stream=stream)
    h_c = pinned.allocate(M * N * 4, stream=stream)
    a = np.asarray(h_a).view(np.float32).reshape(M, K)
    b = np.asarray(h_b).view(np.float32).reshape(K, N)
    c = np.asarray(h_c).view(np.float32).reshape(M, N)
    a[:] = rng.standard_normal((M, K)).astype(np.float32)
    b[:] = rng.standard_normal((K, N)).astype(np.float32)

    d_a = dev.allocate(M * K * 4, stream=stream)
    d_b = dev.allocate(K * N * 4, stream=stream)
    d_c = dev.allocate(M * N * 4, stream=stream)
    d_a.copy_from(h_a, stream=stream)
    d_b.copy_from(h_b, stream=stream)
    grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)
    config = LaunchConfig(grid=grid, block=(TILE, TILE))
    launch(stream, config, kernel, d_a, d_b, d_c, np.int32(M), np.int32(N), np.int32(K))
    d_c.copy_to(h_c, stream=stream)
    stream.sync()

    expected = a.astype(np.float64) @ b.astype(np.float64)
    ok = np.allclose(c, expected, rtol=1e-4, atol=1e-3)
    for buf in (d_a, d_b, d_c, h_a, h_b, h_c):
        buf.close(stream)
    stream.close()
    module.close()
    if not ok:
        print("matmul_tiled: FAILED, the product differs from NumPy")
        return 1
    print(f"matmul_tiled: OK ({M}x{K} @ {K}x{N} matches NumPy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
