# SPDX-License-Identifier: Apache-2.0
"""Tiny timing harness shared by the benchmarks.

Each benchmark times the same operation through cuda_core and, where they
are importable in this interpreter, NVIDIA's ``cuda.core`` and CuPy, in one
process, the implementations taking turns (:func:`interleaved`), and
reports microseconds per operation and ratios.  Results are
printed and, when ``BENCH_JSON`` names a file, appended to it as JSON lines
so that ``run_all.py`` can combine the runs of both interpreters.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import time

IMPL = platform.python_implementation()


def sampler(fn, *, min_time=0.1, warmup=3, before=None, scale=1):
    """Return a function taking one timing sample of ``fn()``, in microseconds per operation.

    ``fn`` is called ``warmup`` times, then the number of calls per sample is
    calibrated so that one sample lasts at least ``min_time`` seconds.  Each
    sample first calls ``before()`` (untimed; e.g. to make a context
    current) and runs with the garbage collector disabled.  ``scale`` is the
    number of operations one ``fn()`` performs (C loops do many).
    """
    for _ in range(warmup):
        fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or number >= 1 << 22:
            break
        number *= 2

    def sample():
        if before is not None:
            before()
        gc_was = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            dt = time.perf_counter() - t0
        finally:
            if gc_was:
                gc.enable()
        return dt / number / scale * 1e6

    return sample


class Timings(dict):
    """``{label: time}`` from :func:`interleaved`; ``rounds`` keeps each label's samples."""

    def __init__(self, values, rounds):
        super().__init__(values)
        self.rounds = rounds


def interleaved(samplers, *, rounds=7, reduce=min):
    """Take ``rounds`` samples from each of ``samplers`` in turn; reduce each one's samples.

    ``samplers`` maps a label to a function returning one sample (see
    :func:`sampler`).  The implementations take turns, round by round, in a
    rotating order, rather than each taking all its samples in one block: a
    slow period of a shared machine then hits every implementation alike,
    and the ratios compare like with like.  Returns a :class:`Timings`,
    ``{label: reduce(samples)}``, that also keeps the samples (for
    :func:`paired_ratios`).
    """
    labels = list(samplers)
    samples = {label: [] for label in labels}
    for r in range(rounds):
        k = r % len(labels)
        for label in labels[k:] + labels[:k]:
            samples[label].append(samplers[label]())
    return Timings({label: reduce(values) for label, values in samples.items()}, samples)


def paired_ratios(samples, ours="cuda_core"):
    """Return ``{peer: median over rounds of ours / peer}`` from per-round samples.

    The two samples of one round were taken within a fraction of a second of
    each other, so each round's ratio compares like with like even when the
    machine's speed drifts between rounds; the median discards the rounds
    that a burst of load hit on one side only.
    """
    mine = samples.get(ours)
    if not mine:
        return {}
    out = {}
    for label, values in samples.items():
        pairs = [a / b for a, b in zip(mine, values) if b]
        if label != ours and pairs:
            out[label] = statistics.median(pairs)
    return out


def optional_import(name):
    """Import ``name`` or return None (e.g. cuda.core and CuPy on PyPy)."""
    try:
        module = __import__(name, fromlist=["_"])
    except Exception:  # noqa: BLE001 - any failure means "not available here"
        return None
    return module


def c_floor_loops(benchmark, *names):
    """Return ``lib``'s ``cc_bench_*`` C loops ``names``, or None when not built.

    The loops that time the "C floor" are compiled into the extension only
    when it is built with ``CUDA_CORE_BUILD_BENCH=1`` (see the README); without
    them the benchmark says so and leaves the C floor rows out.
    """
    from cuda_core._cuda_ffi import lib

    loops = [getattr(lib, name, None) for name in names]
    if any(loop is None for loop in loops):
        print(
            f"{benchmark}: C floor skipped (the extension was built without its benchmark "
            "loops; rebuild with CUDA_CORE_BUILD_BENCH=1)"
        )
        return None
    return loops


def gpu_reason():
    """Return None when a CUDA GPU is usable through cuda_core, else why not."""
    from cuda_core._cuda_ffi import ffi, lib

    if lib.cc_load_library(lib.CC_LIB_DRIVER, ffi.NULL) != 0:
        return "no CUDA driver: " + ffi.string(lib.cc_library_error(lib.CC_LIB_DRIVER)).decode()
    if lib.cuInit(0):
        return "cuInit failed: no usable GPU"
    count = ffi.new("int *")
    if lib.cuDeviceGetCount(count) or count[0] < 1:
        return "no CUDA GPU present"
    return None


def nvidia_core(*needed):
    """Return NVIDIA's ``cuda.core`` (or its 0.x ``cuda.core.experimental``) or None.

    The module must have every attribute named in ``needed`` (default:
    ``Device``); None where neither is importable in this interpreter.
    """
    needed = needed or ("Device",)
    for name in ("cuda.core", "cuda.core.experimental"):
        core = optional_import(name)
        if core is not None and all(hasattr(core, attr) for attr in needed):
            return core
    return None


def report(benchmark, case, results, *, unit="us"):
    """Print one case's results and ratios; append them to $BENCH_JSON.

    ``results`` maps an implementation label ("cuda_core", "cuda.core",
    "cupy", "C floor", ...) to its time in ``unit``.  When it is a
    :class:`Timings`, the paired ratios (:func:`paired_ratios`) are printed
    and saved too.
    """
    ours = results.get("cuda_core")
    rounds = getattr(results, "rounds", None)
    paired = paired_ratios(rounds) if rounds else {}
    parts = []
    for label, value in results.items():
        text = f"{label}={value:.3f}{unit}"
        if ours is not None and label != "cuda_core" and value:
            text += f" (ours/{label}={ours / value:.2f}"
            if label in paired:
                text += f", paired {paired[label]:.2f}"
            text += ")"
        parts.append(text)
    print(f"[{IMPL}] {benchmark} | {case}: " + ", ".join(parts), flush=True)
    path = os.environ.get("BENCH_JSON")
    if path:
        record = {
            "interpreter": IMPL,
            "benchmark": benchmark,
            "case": case,
            "unit": unit,
            "results": dict(results),
        }
        if paired:
            record["paired"] = paired
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
