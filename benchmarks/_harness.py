# SPDX-License-Identifier: Apache-2.0
"""Tiny timing harness shared by the benchmarks.

Each benchmark times the same operation through cuda_core and, where they
are importable in this interpreter, NVIDIA's ``cuda.core`` and CuPy, in one
process, and reports microseconds per operation and ratios.  Results are
printed and, when ``BENCH_JSON`` names a file, appended to it as JSON lines
so that ``run_all.py`` can combine the runs of both interpreters.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import time

IMPL = platform.python_implementation()


def time_us(fn, *, repeat=7, min_time=0.1, warmup=3):
    """Return the best time of ``fn()`` in microseconds per call."""
    for _ in range(warmup):
        fn()
    number = 1
    while True:  # calibrate so one sample takes at least min_time
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or number >= 1 << 22:
            break
        number *= 2
    best = dt / number
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best = min(best, (time.perf_counter() - t0) / number)
    finally:
        if gc_was:
            gc.enable()
    return best * 1e6


def optional_import(name):
    """Import ``name`` or return None (e.g. cuda.core and CuPy on PyPy)."""
    try:
        module = __import__(name, fromlist=["_"])
    except Exception:  # noqa: BLE001 - any failure means "not available here"
        return None
    return module


def report(benchmark, case, results, *, unit="us"):
    """Print one case's results and ratios; append them to $BENCH_JSON.

    ``results`` maps an implementation label ("cuda_core", "cuda.core",
    "cupy", "C floor", ...) to its time in ``unit``.
    """
    ours = results.get("cuda_core")
    parts = []
    for label, value in results.items():
        text = f"{label}={value:.3f}{unit}"
        if ours is not None and label != "cuda_core" and value:
            text += f" (ours/{label}={ours / value:.2f})"
        parts.append(text)
    print(f"[{IMPL}] {benchmark} | {case}: " + ", ".join(parts), flush=True)
    path = os.environ.get("BENCH_JSON")
    if path:
        with open(path, "a") as f:
            f.write(
                json.dumps(
                    {
                        "interpreter": IMPL,
                        "benchmark": benchmark,
                        "case": case,
                        "unit": unit,
                        "results": results,
                    }
                )
                + "\n"
            )
