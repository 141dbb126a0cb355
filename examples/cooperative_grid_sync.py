# SPDX-License-Identifier: Apache-2.0
"""A cooperative launch: grid-wide synchronization with ``grid.sync()``.

Phase 1: every block sums a strided part of the input into ``partial[block]``.
``grid.sync()`` then waits for the whole grid, and in phase 2 block 0 adds
the partial sums.  A grid-wide barrier is only safe when every block is
resident at once, which ``LaunchConfig(is_cooperative=True)`` guarantees; the
grid is sized from the kernel's occupancy (``launch`` refuses a grid that
cannot be co-resident).

``grid.sync()`` comes from ``<cooperative_groups.h>``, which NVRTC finds in a
CUDA toolkit (``CUDA_HOME``, ``CUDA_PATH`` or ``/usr/local/cuda``).  Without
the toolkit headers the example uses an equivalent hand-written barrier
(an atomic counter), and says so.

Run: ``python examples/cooperative_grid_sync.py`` (exits 0 with a message
when no GPU is present).
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

BODY = r"""
extern "C" __global__ void two_phase_sum(const double *x, size_t n, double *partial,
                                         double *total, unsigned int *counter) {
    __shared__ double acc[256];
    double s = 0.0;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        s += x[i];
    acc[threadIdx.x] = s;
    __syncthreads();
    for (unsigned int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) acc[threadIdx.x] += acc[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = acc[0];
    GRID_SYNC();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double t = 0.0;
        for (unsigned int b = 0; b < gridDim.x; ++b) t += ((volatile double *)partial)[b];
        *total = t;
    }
}
"""
WITH_COOPERATIVE_GROUPS = (
    r"""
#include <cooperative_groups.h>
#define GRID_SYNC() cooperative_groups::this_grid().sync()
"""
    + BODY
)
WITH_ATOMIC_BARRIER = (
    r"""
__device__ void grid_barrier(unsigned int *counter) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
        while (atomicAdd(counter, 0u) < gridDim.x) { }
        __threadfence();
    }
    __syncthreads();
}
#define GRID_SYNC() grid_barrier(counter)
"""
    + BODY
)


def cuda_include_dirs():
    """Return the include directories of a CUDA toolkit with cooperative_groups.h, or None."""
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not root:
            continue
        inc = os.path.join(root, "include")
        if os.path.exists(os.path.join(inc, "cooperative_groups.h")):
            cccl = os.path.join(inc, "cccl")
            return [inc, cccl] if os.path.isdir(cccl) else [inc]
    return None


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"cooperative_grid_sync: skipped, no usable CUDA GPU ({exc})")
        return 0
    if not dev.properties.cooperative_launch:
        print("cooperative_grid_sync: skipped, this GPU cannot launch cooperative kernels")
        return 0
    stream = dev.create_stream()
    include = cuda_include_dirs()
    if include is not None:
        source = WITH_COOPERATIVE_GROUPS
        options = ProgramOptions(arch=f"sm_{dev.arch}", include_path=include, std="c++17")
        how = "cooperative_groups grid.sync()"
    else:
        source = WITH_ATOMIC_BARRIER
        options = ProgramOptions(arch=f"sm_{dev.arch}")
        how = "an atomic grid barrier (no CUDA toolkit headers found for cooperative_groups.h)"
    module = Program(source, "c++", options=options).compile("cubin")
    kernel = module.get_kernel("two_phase_sum")

    block = 256
    per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(block, 0)
    grid = per_sm * dev.properties.multiprocessor_count  # the most that can be co-resident
    n = 5_000_000
    x = np.random.default_rng(3).random(n)

    pinned = LegacyPinnedMemoryResource()
    h_x = pinned.allocate(x.nbytes, stream=stream)
    np.asarray(h_x).view(np.float64)[:] = x
    h_total = pinned.allocate(8, stream=stream)
    d_x = dev.allocate(x.nbytes, stream=stream)
    d_partial = dev.allocate(8 * grid, stream=stream)
    d_total = dev.allocate(8, stream=stream)
    d_counter = dev.allocate(4, stream=stream)
    d_counter.fill(0, stream=stream)
    d_x.copy_from(h_x, stream=stream)

    config = LaunchConfig(grid=grid, block=block, is_cooperative=True)
    launch(stream, config, kernel, d_x, np.uint64(n), d_partial, d_total, d_counter)
    d_total.copy_to(h_total, stream=stream)
    stream.sync()
    total = float(np.asarray(h_total).view(np.float64)[0])

    expected = float(np.sum(x))
    for buf in (d_x, d_partial, d_total, d_counter, h_x, h_total):
        buf.close(stream)
    stream.close()
    module.close()
    if not np.isclose(total, expected, rtol=1e-9):
        print(f"cooperative_grid_sync: FAILED, sum {total!r} != NumPy's {expected!r}")
        return 1
    print(
        f"cooperative_grid_sync: OK ({grid} co-resident blocks synchronized with {how}; "
        f"sum of {n} values matches NumPy)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
