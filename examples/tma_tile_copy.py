# SPDX-License-Identifier: Apache-2.0
"""Copy a matrix tile by tile with the Tensor Memory Accelerator (TMA).

Shows :class:`~cuda_core.TensorMapDescriptor`: a tensor map made by
:meth:`StridedMemoryView.as_tensor_map <cuda_core.utils.StridedMemoryView.as_tensor_map>`
describes the matrix and a 32 x 32 box; each thread block loads its box into
shared memory with one ``cp.async.bulk.tensor`` instruction (completion
tracked by an mbarrier) and writes it out.  The descriptor is passed to
:func:`~cuda_core.launch` by value, as a ``const __grid_constant__``
parameter.  Needs compute capability 9.0+ (Hopper or later).

Run: ``python examples/tma_tile_copy.py`` (exits 0 with a message when no
suitable GPU is present).
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
from cuda_core.utils import StridedMemoryView  # noqa: E402

BOX = 32
CODE = r"""
struct __align__(64) TensorMap { unsigned long long opaque[16]; };

extern "C" __global__ void copy_tiles(const __grid_constant__ TensorMap map, float *out,
                                      int width) {
    __shared__ __align__(128) float tile[BOX * BOX];
    __shared__ __align__(8) unsigned long long bar;
    unsigned int bar_addr = (unsigned int)__cvta_generic_to_shared(&bar);
    int x0 = blockIdx.x * BOX, y0 = blockIdx.y * BOX;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_addr) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar_addr), "r"((int)sizeof(tile)) : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%2, %3}], [%4];"
            :: "r"((unsigned int)__cvta_generic_to_shared(tile)),
               "l"((unsigned long long)&map), "r"(x0), "r"(y0), "r"(bar_addr)
            : "memory");
    }
    unsigned int done = 0;
    while (!done) {  // every thread waits for the transfer (phase 0)
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                     " selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(bar_addr) : "memory");
    }
    for (int i = threadIdx.x; i < BOX * BOX; i += blockDim.x) {
        out[(y0 + i / BOX) * width + x0 + i % BOX] = tile[i];
    }
}
""".replace("BOX", str(BOX))


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"tma_tile_copy: skipped, no usable CUDA GPU ({exc})")
        return 0
    if dev.compute_capability.major < 9 or not dev.properties.tensor_map_access_supported:
        print(f"tma_tile_copy: skipped, TMA needs compute capability 9.0+ (this GPU: {dev.arch})")
        return 0
    stream = dev.create_stream()
    kernel = (
        Program(CODE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
        .compile("cubin")
        .get_kernel("copy_tiles")
    )

    h, w = 8 * BOX, 12 * BOX
    nbytes = h * w * 4
    pinned = LegacyPinnedMemoryResource()
    host_in, host_out = (
        pinned.allocate(nbytes, stream=stream),
        pinned.allocate(nbytes, stream=stream),
    )
    matrix = np.asarray(host_in).view(np.float32).reshape(h, w)
    matrix[:] = np.random.default_rng(0).standard_normal((h, w), dtype=np.float32)
    src, dst = dev.allocate(nbytes, stream=stream), dev.allocate(nbytes, stream=stream)
    src.copy_from(host_in, stream=stream)

    view = StridedMemoryView.from_buffer(src, (h, w), dtype=np.float32)
    tensor_map = view.as_tensor_map(box_dim=(BOX, BOX))
    config = LaunchConfig(grid=(w // BOX, h // BOX), block=128)
    launch(stream, config, kernel, tensor_map, dst, np.int32(w))
    dst.copy_to(host_out, stream=stream)
    stream.sync()

    ok = np.array_equal(np.asarray(host_out).view(np.float32).reshape(h, w), matrix)
    for buf in (src, dst, host_in, host_out):
        buf.close(stream)
    stream.close()
    if not ok:
        print("tma_tile_copy: FAILED, the copy differs from the input")
        return 1
    print(f"tma_tile_copy: OK ({h}x{w} floats in {(h // BOX) * (w // BOX)} TMA tiles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
