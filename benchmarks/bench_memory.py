# SPDX-License-Identifier: Apache-2.0
"""Memory: pool allocate+close and pinned copy bandwidth.

Cases: stream-ordered pool ``allocate`` + ``close`` of 1 KiB and 1 MiB from
the device's default memory resource (microseconds per cycle; goal <= 1.0x
NVIDIA ``cuda.core`` on CPython), and host-to-device / device-to-host copies
of 256 MiB between pinned host memory and device memory (GB/s; goal >= 0.97x
``cuda.core``).  Each case is timed through cuda_core and, where importable
in this interpreter, ``cuda.core`` and CuPy, in the same process; the
allocation cases also as the bare driver calls from a C loop ("C floor";
only when the extension is built with ``CUDA_CORE_BUILD_BENCH=1``).
Without a GPU the script says so and exits 0.

Run: ``python benchmarks/bench_memory.py``
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import (  # noqa: E402
    c_floor_loops,
    gpu_reason,
    interleaved,
    nvidia_core,
    optional_import,
    report,
    sampler,
)

BENCH = "memory"
COPY_SIZE = 256 << 20


def _suite(core, legacy_pinned):
    """Build the cases for a cuda.core-like module (ours or NVIDIA's)."""
    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    mr = dev.memory_resource
    pinned = legacy_pinned()
    host = pinned.allocate(COPY_SIZE, stream=stream)
    dbuf = mr.allocate(COPY_SIZE, stream=stream)

    def alloc_1k():
        mr.allocate(1024, stream=stream).close()

    def alloc_1m():
        mr.allocate(1 << 20, stream=stream).close()

    def h2d():
        dbuf.copy_from(host, stream=stream)
        stream.sync()

    def d2h():
        host.copy_from(dbuf, stream=stream)
        stream.sync()

    return {
        "pool allocate+close 1 KiB": ("us", alloc_1k),
        "pool allocate+close 1 MiB": ("us", alloc_1m),
        "H2D 256 MiB pinned": ("GB/s", h2d),
        "D2H 256 MiB pinned": ("GB/s", d2h),
    }, (stream, host, dbuf, pinned, mr)


def _cupy_suite(cupy):
    cupy.cuda.Device(0).use()
    stream = cupy.cuda.Stream(non_blocking=True)
    pool = cupy.cuda.MemoryAsyncPool()
    host = cupy.cuda.alloc_pinned_memory(COPY_SIZE)
    dmem = cupy.cuda.memory.alloc(COPY_SIZE)

    def alloc_1k():
        with stream:
            pool.malloc(1024)  # freed (stream-ordered) when the pointer is dropped

    def alloc_1m():
        with stream:
            pool.malloc(1 << 20)

    def h2d():
        dmem.copy_from_host_async(host.ptr, COPY_SIZE, stream)
        stream.synchronize()

    def d2h():
        dmem.copy_to_host_async(host.ptr, COPY_SIZE, stream)
        stream.synchronize()

    return {
        "pool allocate+close 1 KiB": ("us", alloc_1k),
        "pool allocate+close 1 MiB": ("us", alloc_1m),
        "H2D 256 MiB pinned": ("GB/s", h2d),
        "D2H 256 MiB pinned": ("GB/s", d2h),
    }, (stream, pool, host, dmem)


def main():
    reason = gpu_reason()
    if reason is not None:
        print(f"bench_memory: skipped ({reason})")
        return 0
    import cuda_core

    suites = {"cuda_core": _suite(cuda_core, cuda_core.LegacyPinnedMemoryResource)}
    core = nvidia_core()
    if core is not None:
        try:
            suites["cuda.core"] = _suite(core, core.LegacyPinnedMemoryResource)
        except Exception as exc:  # noqa: BLE001 - an old cuda.core lacks some API
            print(f"bench_memory: cuda.core skipped ({type(exc).__name__}: {exc})")
    cupy = optional_import("cupy")
    if cupy is not None:
        suites["cupy"] = _cupy_suite(cupy)
    from cuda_core._errors import check

    ours_stream, ours_mr = suites["cuda_core"][1][0], suites["cuda_core"][1][4]
    floor_n = 1000
    loops = c_floor_loops("bench_memory", "cc_bench_pool_loop")

    def pool_floor(size, pool_loop):
        # The driver calls behind allocate+close, from a C loop (no Python at all).
        return lambda: check(pool_loop(ours_mr._pool, ours_stream._handle, size, floor_n))

    floors = {}
    if loops is not None:
        floors = {
            "pool allocate+close 1 KiB": pool_floor(1024, loops[0]),
            "pool allocate+close 1 MiB": pool_floor(1 << 20, loops[0]),
        }
    current = {"cuda_core": cuda_core.Device(0).set_current}
    if core is not None:
        current["cuda.core"] = core.Device(0).set_current

    def settled(label):
        # Before each pool sample (untimed): this implementation's context,
        # then its stream synchronized.  All of them allocate from the
        # device's one default pool, each on its own stream, so a sample's
        # cost could depend on which implementation ran just before it;
        # synchronizing first starts every sample with no frees pending.
        # The C floor runs on cuda_core's context and stream.
        owner = "cuda_core" if label == "C floor" else label
        make_current = current.get(owner)
        stream = suites[owner][1][0]
        sync = getattr(stream, "sync", None) or stream.synchronize

        def before():
            if make_current is not None:
                make_current()
            sync()

        return before

    for case, (unit, _fn) in suites["cuda_core"][0].items():
        # Copies take milliseconds: fewer, longer samples.
        timing = {} if unit == "us" else {"min_time": 0.3, "warmup": 2}
        samplers = {}
        for label, (cases, _keep) in suites.items():
            entry = cases.get(case)
            if entry is not None:
                before = settled(label) if unit == "us" else current.get(label)
                samplers[label] = sampler(entry[1], before=before, **timing)
        if case in floors:
            samplers["C floor"] = sampler(floors[case], before=settled("C floor"), scale=floor_n)
        results = interleaved(samplers, rounds=7 if unit == "us" else 5)
        if unit == "GB/s":
            results = {label: COPY_SIZE / (t * 1e-6) / 1e9 for label, t in results.items()}
            # report() prints ours/theirs; for bandwidth, higher is better.
            report(BENCH, case + " (GB/s, higher is better)", results, unit="GB/s")
        else:
            report(BENCH, case, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
