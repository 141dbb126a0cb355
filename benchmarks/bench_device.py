# SPDX-License-Identifier: Apache-2.0
"""Per-call overhead of devices, streams and events.

Cases: ``Device(0)`` and ``Device()`` lookup, ``set_current``, stream
create+close, event create+record+sync+close.  Each is timed through
cuda_core and, where importable in this interpreter, NVIDIA's ``cuda.core``
and CuPy, in the same process; ratios ours/theirs are printed (goal: <= 1.0
against cuda.core on CPython).  The stream and event cycles are also timed as
the bare driver calls from a C loop ("C floor"), so that each library's own
overhead is the difference (only when the extension is built with
``CUDA_CORE_BUILD_BENCH=1``; otherwise those rows are left out), and the
event cycle as the same four driver calls made from Python through the
extension without any objects ("raw calls"): the least any Python library
can spend on it in this interpreter.  Without a GPU the script says so and
exits 0.

Run: ``python benchmarks/bench_device.py``
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

BENCH = "device"


def _cases(core):
    """The cases for a cuda.core-like module (cuda_core or NVIDIA's)."""
    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()

    def stream_cycle():
        dev.create_stream().close()

    def event_cycle():
        e = dev.create_event()
        stream.record(e)
        e.sync()
        e.close()

    return {
        "Device(0) lookup": lambda: core.Device(0),
        "Device() lookup": lambda: core.Device(),
        "set_current": dev.set_current,
        "stream create+close": stream_cycle,
        "event create+record+sync+close": event_cycle,
    }


def _cases_floor():
    """The same driver calls made from a C loop (``cc_bench_*_loop``): no Python at all.

    Empty when the extension was built without those loops.
    """
    import cuda_core
    from cuda_core._errors import check

    loops = c_floor_loops(f"bench_{BENCH}", "cc_bench_stream_loop", "cc_bench_event_loop")
    if loops is None:
        return {}
    stream_loop, event_loop = loops

    dev = cuda_core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    with dev.create_stream() as probe:
        least = probe.priority  # the default (lowest) priority, as create_stream uses
    n = 1000

    def stream_cycle():
        check(stream_loop(least, n))

    def event_cycle():
        check(event_loop(stream._handle, n))

    return {
        "stream create+close": (stream_cycle, n),
        "event create+record+sync+close": (event_cycle, n),
    }


def _cases_raw_calls():
    """The event cycle's four driver calls from Python, through the extension, no objects."""
    import cuda_core
    from cuda_core._cuda_ffi import lib

    dev = cuda_core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    ctx, c_stream = dev._c_ctx, stream._handle
    new, record, wait, destroy = (
        lib.cc_event_new_untimed,
        lib.cuEventRecord,
        lib.cuEventSynchronize,
        lib.cuEventDestroy,
    )

    def event_cycle(stream=stream):  # keeps the Stream (and so its CUstream) alive
        e = new(ctx)
        if not e or record(e, c_stream) or wait(e) or destroy(e):
            raise RuntimeError("event cycle failed")

    return {"event create+record+sync+close": event_cycle}


def _cases_cupy(cupy):
    cupy.cuda.Device(0).use()
    stream = cupy.cuda.Stream(non_blocking=True)

    def stream_cycle():
        cupy.cuda.Stream(non_blocking=True)  # destroyed when collected

    def event_cycle():
        e = cupy.cuda.Event(disable_timing=True)
        e.record(stream)
        e.synchronize()

    return {
        "Device(0) lookup": lambda: cupy.cuda.Device(0),
        "set_current": cupy.cuda.Device(0).use,
        "stream create+close": stream_cycle,
        "event create+record+sync+close": event_cycle,
    }


def main():
    reason = gpu_reason()
    if reason is not None:
        print(f"bench_device: skipped ({reason})")
        return 0
    import cuda_core

    suites = {"cuda_core": _cases(cuda_core)}
    core = nvidia_core()
    if core is not None:
        suites["cuda.core"] = _cases(core)
    cupy = optional_import("cupy")
    if cupy is not None:
        suites["cupy"] = _cases_cupy(cupy)
    floors = _cases_floor()
    raw_calls = _cases_raw_calls()
    # cuda.core and CuPy may change the current context; restore ours per case.
    ours_current = cuda_core.Device(0).set_current
    for case in suites["cuda_core"]:
        samplers = {}
        for label, cases in suites.items():
            fn = cases.get(case)
            if fn is not None:
                before = ours_current if label == "cuda_core" else None
                samplers[label] = sampler(fn, before=before)
        floor = floors.get(case)
        if floor is not None:
            samplers["C floor"] = sampler(floor[0], before=ours_current, scale=floor[1])
        if case in raw_calls:
            samplers["raw calls"] = sampler(raw_calls[case], before=ours_current)
        report(BENCH, case, interleaved(samplers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
