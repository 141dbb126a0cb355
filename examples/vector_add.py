# SPDX-License-Identifier: Apache-2.0
"""Add two vectors on the GPU and check the result against NumPy.

Shows the basic workflow: compile CUDA C++ to a cubin with :class:`Program`,
allocate device memory, stage data through pinned host memory, launch with a
:class:`LaunchConfig`, and copy the result back.

Run: ``python examples/vector_add.py`` (exits 0 with a message when no GPU
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

CODE = r"""
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"""


def get_device():
    """Return device 0 made current, or None (with a message) when there is no GPU."""
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"vector_add: skipped, no usable CUDA GPU ({exc})")
        return None
    return dev


def main():
    dev = get_device()
    if dev is None:
        return 0
    stream = dev.create_stream()
    prog = Program(CODE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    module = prog.compile("cubin")
    kernel = module.get_kernel("vector_add")

    n = 1 << 20
    nbytes = n * 4
    pinned = LegacyPinnedMemoryResource()
    h_a, h_b, h_c = (pinned.allocate(nbytes, stream=stream) for _ in range(3))
    a = np.asarray(h_a).view(np.float32)
    b = np.asarray(h_b).view(np.float32)
    c = np.asarray(h_c).view(np.float32)
    rng = np.random.default_rng(0)
    a[:] = rng.random(n, dtype=np.float32)
    b[:] = rng.random(n, dtype=np.float32)

    d_a, d_b, d_c = (dev.allocate(nbytes, stream=stream) for _ in range(3))
    d_a.copy_from(h_a, stream=stream)
    d_b.copy_from(h_b, stream=stream)

    block = 256
    config = LaunchConfig(grid=(n + block - 1) // block, block=block)
    launch(stream, config, kernel, d_a, d_b, d_c, np.uint64(n))
    d_c.copy_to(h_c, stream=stream)
    stream.sync()

    expected = a + b
    ok = np.array_equal(c, expected)
    for buf in (d_a, d_b, d_c, h_a, h_b, h_c):
        buf.close(stream)
    stream.close()
    module.close()
    if not ok:
        print("vector_add: FAILED, the result differs from NumPy")
        return 1
    print(f"vector_add: OK ({n} elements match NumPy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
