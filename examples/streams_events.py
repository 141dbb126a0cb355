# SPDX-License-Identifier: Apache-2.0
"""Two streams working concurrently, ordered and timed with events.

The input is split in two halves, each processed by its own stream.  Timing
events (``EventOptions(timing_enabled=True)``) mark the start and the end of
each stream's work; ``Stream.wait`` makes the second stream start after the
start event and makes the first stream wait for the second before the
results are copied back.  ``end - start`` between two events is the elapsed
GPU time in milliseconds.  The result is checked against NumPy.

Run: ``python examples/streams_events.py`` (exits 0 with a message when no
GPU is present).
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
    EventOptions,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Program,
    ProgramOptions,
    launch,
)

CODE = r"""
// y[i] = a * x[i] + 1, computed `reps` times so that the work takes a while
extern "C" __global__ void affine(float *y, const float *x, float a, size_t n, int reps) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = 0.0f;
        for (int r = 0; r < reps; ++r) v = a * x[i] + 1.0f + 0.0f * v;
        y[i] = v;
    }
}
"""


def main():
    try:
        dev = Device(0)
        dev.set_current()
    except (CUDAError, ValueError) as exc:
        print(f"streams_events: skipped, no usable CUDA GPU ({exc})")
        return 0
    s1 = dev.create_stream()
    s2 = dev.create_stream()
    module = Program(CODE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    kernel = module.get_kernel("affine")

    n = 1 << 22
    half = n // 2
    hbytes = half * 4
    x = np.random.default_rng(4).random(n, dtype=np.float32)
    a = np.float32(1.5)
    pinned = LegacyPinnedMemoryResource()
    h_x = [pinned.allocate(hbytes, stream=s1) for _ in range(2)]
    h_y = [pinned.allocate(hbytes, stream=s1) for _ in range(2)]
    for i in range(2):
        np.asarray(h_x[i]).view(np.float32)[:] = x[i * half : (i + 1) * half]
    d_x = [dev.allocate(hbytes, stream=s) for s in (s1, s2)]
    d_y = [dev.allocate(hbytes, stream=s) for s in (s1, s2)]

    timing = EventOptions(timing_enabled=True)
    config = LaunchConfig(grid=2 * dev.properties.multiprocessor_count, block=256)
    start = s1.record(options=timing)
    s2.wait(start)  # the second stream starts after the start event
    done = []
    for i, s in enumerate((s1, s2)):
        d_x[i].copy_from(h_x[i], stream=s)
        launch(s, config, kernel, d_y[i], d_x[i], a, np.uint64(half), np.int32(64))
        d_y[i].copy_to(h_y[i], stream=s)
        done.append(s.record(options=timing))
    s1.wait(s2)  # join: s1's later work waits for everything queued on s2
    end = s1.record(options=timing)
    end.sync()

    y = np.concatenate([np.asarray(h).view(np.float32) for h in h_y])
    expected = a * x + np.float32(1.0)
    ok = np.allclose(y, expected, rtol=1e-6)
    total_ms = end - start
    stream_ms = [d - start for d in done]
    for buf in d_x + d_y + h_x + h_y:
        buf.close(s1)
    s2.close()
    s1.close()
    module.close()
    if not ok:
        print("streams_events: FAILED, the result differs from NumPy")
        return 1
    print(
        f"streams_events: OK ({n} elements match NumPy); stream 1 took {stream_ms[0]:.3f} ms, "
        f"stream 2 {stream_ms[1]:.3f} ms, both together {total_ms:.3f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
