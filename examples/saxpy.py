# SPDX-License-Identifier: Apache-2.0
"""SAXPY (``y = a * x + y``) from a C++ template, in single and double precision.

Shows name expressions: the template is instantiated for ``float`` and
``double`` at compile time, and :meth:`ObjectCode.get_kernel` finds each
instantiation by its C++ name.  Scalars keep their exact width
(``numpy.float32`` becomes a C ``float``); the results are checked against
NumPy.

Run: ``python examples/saxpy.py`` (exits 0 with a message when no GPU is
present).
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
template <typename T>
__global__ void saxpy(const T a, const T *x, T *y, size_t n) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = a * x[i] + y[i];
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"saxpy: skipped, no usable CUDA GPU ({exc})")
        return 0
    stream = dev.create_stream()
    prog = Program(CODE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}", std="c++17"))
    module = prog.compile("cubin", name_expressions=("saxpy<float>", "saxpy<double>"))

    n = 1_000_003
    pinned = LegacyPinnedMemoryResource()
    rng = np.random.default_rng(1)
    sms = dev.properties.multiprocessor_count
    failures = 0
    for dtype, name, a in (
        (np.float32, "saxpy<float>", np.float32(2.5)),
        (np.float64, "saxpy<double>", np.float64(-0.75)),
    ):
        kernel = module.get_kernel(name)
        nbytes = n * np.dtype(dtype).itemsize
        h_x = pinned.allocate(nbytes, stream=stream)
        h_y = pinned.allocate(nbytes, stream=stream)
        x = np.asarray(h_x).view(dtype)
        y = np.asarray(h_y).view(dtype)
        x[:] = rng.standard_normal(n).astype(dtype)
        y[:] = rng.standard_normal(n).astype(dtype)
        expected = a * x + y

        d_x = dev.allocate(nbytes, stream=stream)
        d_y = dev.allocate(nbytes, stream=stream)
        d_x.copy_from(h_x, stream=stream)
        d_y.copy_from(h_y, stream=stream)
        # a grid-stride loop: a few blocks per multiprocessor are enough
        config = LaunchConfig(grid=4 * sms, block=256)
        launch(stream, config, kernel, a, d_x, d_y, np.uint64(n))
        d_y.copy_to(h_y, stream=stream)
        stream.sync()

        # the GPU fuses a * x + y (one rounding): allow a few units in the last place
        tol = 1e-5 if dtype is np.float32 else 1e-12
        if np.allclose(y, expected, rtol=tol, atol=tol):
            print(f"saxpy: {name} OK ({n} elements match NumPy)")
        else:
            print(f"saxpy: {name} FAILED, the result differs from NumPy")
            failures += 1
        for buf in (d_x, d_y, h_x, h_y):
            buf.close(stream)
    stream.close()
    module.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
