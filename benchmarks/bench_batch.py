# SPDX-License-Identifier: Apache-2.0
"""Batched copies: one ``copy_batch`` of 1,000 x 4 KiB against 1,000 ``copy_to`` calls.

Cases: 1,000 copies of 4 KiB, device to device and pinned host to device,
issued as one ``cuda_core.utils.copy_batch`` call ("cuda_core"), as a Python
loop of 1,000 ``Buffer.copy_to`` calls ("cuda_core loop"), and, where NVIDIA's
``cuda.core`` is importable with ``utils.copy_batch``, as its
``copy_batch`` ("cuda.core") and its loop ("cuda.core loop"), in the same
process.  Each timed operation issues the whole batch and synchronizes the
stream (microseconds per batch of 1,000).  Without a GPU the script says so
and exits 0.

Run: ``python benchmarks/bench_batch.py``
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

from _harness import gpu_reason, interleaved, nvidia_core, report, sampler  # noqa: E402

BENCH = "batch"
COUNT = 1000
SIZE = 4096


def _suite(core, copy_batch):
    """Build the cases for a cuda.core-like module (ours or NVIDIA's)."""
    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    mr = dev.memory_resource
    pinned = core.LegacyPinnedMemoryResource()
    arenas = {
        "device": mr.allocate(COUNT * SIZE, stream=stream),
        "pinned": pinned.allocate(COUNT * SIZE, stream=stream),
    }
    dst_arena = mr.allocate(COUNT * SIZE, stream=stream)
    stream.sync()

    def views(arena):
        base = int(arena.handle)
        return [core.Buffer.from_handle(base + i * SIZE, SIZE) for i in range(COUNT)]

    dsts = views(dst_arena)
    cases = {}
    for kind, arena in arenas.items():
        srcs = views(arena)
        name = "D2D" if kind == "device" else "H2D pinned"

        def batch(srcs=srcs):
            copy_batch(stream, srcs, dsts)
            stream.sync()

        def loop(srcs=srcs):
            for src, dst in zip(srcs, dsts):
                src.copy_to(dst, stream=stream)
            stream.sync()

        cases[f"{COUNT} x 4 KiB {name}"] = (batch, loop)
    return cases, (stream, arenas, dst_arena, pinned, mr)


def main():
    reason = gpu_reason()
    if reason is not None:
        print(f"bench_batch: skipped ({reason})")
        return 0
    import cuda_core
    from cuda_core.utils import copy_batch

    suites = {"cuda_core": _suite(cuda_core, copy_batch)}
    current = {"cuda_core": cuda_core.Device(0).set_current}
    core = nvidia_core()
    theirs = None
    if core is not None:
        try:
            theirs = __import__(core.__name__ + ".utils", fromlist=["copy_batch"]).copy_batch
        except (ImportError, AttributeError) as exc:
            print(f"bench_batch: cuda.core has no utils.copy_batch ({exc})")
    if theirs is not None:
        try:
            suites["cuda.core"] = _suite(core, theirs)
            current["cuda.core"] = core.Device(0).set_current
        except Exception as exc:  # noqa: BLE001 - an old cuda.core lacks some API
            print(f"bench_batch: cuda.core skipped ({type(exc).__name__}: {exc})")
    for case in suites["cuda_core"][0]:
        samplers = {}
        for label, (cases, _keep) in suites.items():
            batch, loop = cases[case]
            before = current[label]
            samplers[label] = sampler(batch, before=before, min_time=0.2)
            samplers[f"{label} loop"] = sampler(loop, before=before, min_time=0.2)
        report(BENCH, case + " (us per batch)", interleaved(samplers, rounds=7))
    return 0


if __name__ == "__main__":
    sys.exit(main())
