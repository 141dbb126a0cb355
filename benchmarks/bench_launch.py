# SPDX-License-Identifier: Apache-2.0
"""Kernel launch latency: cuda_core vs NVIDIA cuda.core vs CuPy vs a C floor.

The cases are those of NVIDIA's launch benchmark: an empty kernel, one
pointer argument, 16 and 256 pointer arguments (passed as Python ints), and
512 doubles.  Every implementation launches the same cubin (compiled once by
cuda_core) with grid = block = 1, on its own stream, in the same process.

The C floor is a loop in C (``cc_bench_launch_loop``) calling
``cuLaunchKernel`` with a parameter array prepared once: what a launch costs
without any Python.  It is measured with the ``CUkernel`` handle that
cuda_core launches, and, for reference, with ``cuLaunchKernelEx`` and with the
context's ``CUfunction``.  The C loop is compiled into the extension only when
it is built with ``CUDA_CORE_BUILD_BENCH=1``; otherwise the benchmark says so
and leaves the C floor rows out.

Methodology, identical for every implementation: launches are timed in
batches of ``BATCH``; after each batch the stream is synchronized outside the
timed region, so the launch queue never fills up and only the host-side cost
of submitting a launch is measured.  The implementations take turns of a
few batches each, so that a slow period of the machine hits them alike.
The reported time is the median over the turns of each turn's median batch,
in microseconds per launch.

Each case is called as ``launch(stream, config, kernel, *args)``; the 1- and
16-argument cases are also timed with the arguments written out at the call
site (rows "..., arguments written out"), as code with a fixed argument list
calls it.  The difference is the caller's: PyPy 7.3 spends extra time
building the call of ``f(a, b, c, *args)`` whatever ``f`` is.

Run: ``python benchmarks/bench_launch.py [--breakdown]`` (CPython: all peers
found; PyPy: cuda_core and the C floor; ``--breakdown`` also prints where
cuda_core's time goes).  Exits 0 with a message when no GPU is present.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import IMPL, Timings, c_floor_loops, interleaved, nvidia_core, optional_import, report  # noqa: E402

BATCH = 256
WARMUP_BATCHES = 12  # also lets PyPy's JIT compile the launch loop
TURN_BATCHES = 8  # timed batches per turn of one implementation
MIN_TIME = 0.3  # seconds of timed launches per case, for the fastest implementation
MIN_TURNS = 9
MAX_TURNS = 60

KERNEL_SOURCE = r"""
#define ITEM_PARAM(x, T) T x
#define REP1(x, T)   , ITEM_PARAM(x, T)
#define REP2(x, T)   REP1(x##0, T)   REP1(x##1, T)
#define REP4(x, T)   REP2(x##0, T)   REP2(x##1, T)
#define REP8(x, T)   REP4(x##0, T)   REP4(x##1, T)
#define REP16(x, T)  REP8(x##0, T)   REP8(x##1, T)
#define REP32(x, T)  REP16(x##0, T)  REP16(x##1, T)
#define REP64(x, T)  REP32(x##0, T)  REP32(x##1, T)
#define REP128(x, T) REP64(x##0, T)  REP64(x##1, T)
#define REP256(x, T) REP128(x##0, T) REP128(x##1, T)

extern "C" __global__ void empty_kernel() { return; }
extern "C" __global__ void small_kernel(float *f) { *f = 0.0f; }
extern "C" __global__ void small_kernel_16_args(
    ITEM_PARAM(F, int *) REP1(A, int *) REP2(A, int *) REP4(A, int *) REP8(A, int *))
{ *F = 0; }
extern "C" __global__ void small_kernel_256_args(
    ITEM_PARAM(F, int *) REP1(A, int *) REP2(A, int *) REP4(A, int *) REP8(A, int *)
    REP16(A, int *) REP32(A, int *) REP64(A, int *) REP128(A, int *))
{ *F = 0; }
extern "C" __global__ void small_kernel_512_doubles(
    ITEM_PARAM(F, double) REP1(A, double) REP2(A, double) REP4(A, double) REP8(A, double)
    REP16(A, double) REP32(A, double) REP64(A, double) REP128(A, double) REP256(A, double))
{ return; }
"""


def launch_cases(scratch_address):
    """``[(case, kernel name, args)]``: the launches timed, by row.

    Pointer arguments are Python ints inside a scratch allocation of at
    least 2 KiB at ``scratch_address``; the doubles are Python floats.
    """
    ptrs = tuple(scratch_address + 4 * i for i in range(512))
    doubles = tuple(1.2345 + i for i in range(512))
    return [
        ("empty kernel", "empty_kernel", ()),
        ("1 pointer arg", "small_kernel", ptrs[:1]),
        ("16 args", "small_kernel_16_args", ptrs[:16]),
        ("256 args", "small_kernel_256_args", ptrs[:256]),
        ("512 doubles", "small_kernel_512_doubles", doubles),
    ]


def _no_gpu_reason():
    try:
        from cuda_core import Device

        dev = Device(0)
        dev.set_current()
    except Exception as exc:  # noqa: BLE001 - any failure means "no usable GPU"
        return f"{type(exc).__name__}: {exc}"
    return None


def launch_sampler(batch, sync, before=None):
    """Return a function taking one turn of samples of ``batch(BATCH)`` launches.

    Warms up first (which also lets PyPy's JIT compile the launch loop).  A
    turn runs ``before()`` (if given) and one batch untimed, then
    ``TURN_BATCHES`` timed batches, each followed by an untimed ``sync()``,
    and returns their median in microseconds per launch: consecutive batches
    keep the caches warm for the implementation being timed, as in a real
    launch loop, while the turns still interleave the implementations.
    """
    for _ in range(WARMUP_BATCHES):
        batch(BATCH)
        sync()

    def sample():
        if before is not None:
            before()
        batch(BATCH)
        sync()
        times = []
        for _ in range(TURN_BATCHES):
            t0 = time.perf_counter()
            batch(BATCH)
            dt = time.perf_counter() - t0
            sync()
            times.append(dt / BATCH * 1e6)
        return statistics.median(times)

    return sample


def time_launches(samplers):
    """Return the median microseconds per launch of each of ``samplers``, interleaved.

    Enough turns for the fastest implementation to be timed for
    ``MIN_TIME`` seconds, within [``MIN_TURNS``, ``MAX_TURNS``].
    """
    fastest = min(sample() for sample in samplers.values())  # us per launch
    turns = int(MIN_TIME / (fastest * 1e-6 * BATCH * TURN_BATCHES)) + 1
    turns = min(max(turns, MIN_TURNS), MAX_TURNS)
    return interleaved(samplers, rounds=turns, reduce=statistics.median)


def _written_out(launch_fn, stream, config, kernel, args):
    """Return ``batch(n)``: n calls of ``launch_fn`` with ``args`` written out at the call site."""
    names = ", ".join(f"a{i}" for i in range(len(args)))
    src = (
        f"def spelled(n, launch, stream, config, kernel, {names}):\n"
        f"    for _ in range(n):\n"
        f"        launch(stream, config, kernel, {names})\n"
    )
    namespace = {}
    exec(src, namespace)  # noqa: S102 - fixed text
    spelled = namespace["spelled"]

    def batch(n):
        spelled(n, launch_fn, stream, config, kernel, *args)

    return batch


def _breakdown(case, stream, config, kernel, args, total):
    """Print where cuda_core's launch time goes (``--breakdown``).

    * blob only: ``cc_launch_blob`` on arguments packed once (C side + driver);
    * pack only: the argument plan's checks and packing, no driver call;
    * call only: calling a Python function like ``launch(s, c, k, *args)``
      that does nothing (the interpreter's cost of the call pattern);
    * positional: ``launch`` called with the arguments spelled out instead of
      ``*args`` (up to 16 arguments).
    """
    from cuda_core import _arg_plan
    from cuda_core._cuda_ffi import ffi, lib

    cfg = config._prepare()[1]
    s_h = stream._h
    plan, blob = _arg_plan._packed_arguments(kernel, args, cfg, s_h)
    c_blob = ffi.new("char[]", blob)
    go = lib.cc_launch_blob

    def blob_only(n):
        for _ in range(n):
            go(c_blob)

    pack = plan.pack  # the thread's buffer (PyPy) was made by _packed_arguments

    def pack_only(n):
        for _ in range(n):
            pack(cfg, s_h, args)

    def nothing(stream, config, kernel, *kernel_args):
        return None

    def call_only(n):
        for _ in range(n):
            nothing(stream, config, kernel, *args)

    def nop():
        return None

    samplers = {
        "blob only": launch_sampler(blob_only, stream.sync),
        "pack only": launch_sampler(pack_only, nop),
        "call only": launch_sampler(call_only, nop),
    }
    if 0 < len(args) <= 16:
        from cuda_core import launch

        samplers["positional"] = launch_sampler(
            _written_out(launch, stream, config, kernel, args), stream.sync
        )
    parts = {"total": total, **time_launches(samplers)}
    text = ", ".join(f"{k}={v:.3f}us" for k, v in parts.items())
    print(f"[{IMPL}] bench_launch breakdown | {case}: {text}", flush=True)


def main():
    breakdown = "--breakdown" in sys.argv[1:]
    reason = _no_gpu_reason()
    if reason is not None:
        print(f"bench_launch: skipped, no usable CUDA GPU ({reason})")
        return 0

    from cuda_core import Device, LaunchConfig, Program, ProgramOptions, launch
    from cuda_core._cuda_ffi import ffi, lib
    from cuda_core._errors import check

    floor_loops = c_floor_loops("bench_launch", "cc_bench_launch_loop")
    floor_labels = ["C floor", "C floor Ex", "C floor CUfunction"] if floor_loops else []
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    prog = Program(KERNEL_SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    module = prog.compile("cubin")
    cubin = bytes(module.code)

    scratch = dev.allocate(512 * 4, stream=stream)
    stream.sync()
    cases = launch_cases(int(scratch.handle))

    peers = {}
    cc = nvidia_core("launch")
    if cc is not None:
        try:
            cc_dev = cc.Device(0)
            cc_dev.set_current()
            cc_stream = cc_dev.create_stream()
            if hasattr(cc.ObjectCode, "from_cubin"):
                cc_module = cc.ObjectCode.from_cubin(cubin)
            else:  # cuda.core 0.1
                cc_module = cc.ObjectCode(cubin, "cubin")
            peers["cuda.core"] = (cc, cc_stream, cc_module, cc.LaunchConfig(grid=1, block=1))
        except Exception as exc:  # noqa: BLE001 - report and go on without it
            print(f"[{IMPL}] bench_launch: NVIDIA cuda.core unusable here: {exc}")
    cp = optional_import("cupy")
    cubin_path = None
    if cp is not None:
        try:
            fd, cubin_path = tempfile.mkstemp(suffix=".cubin")
            with os.fdopen(fd, "wb") as f:
                f.write(cubin)
            peers["cupy"] = (cp, cp.cuda.Stream(non_blocking=True), cp.RawModule(path=cubin_path))
        except Exception as exc:  # noqa: BLE001
            print(f"[{IMPL}] bench_launch: CuPy unusable here: {exc}")
    dev.set_current()

    config = LaunchConfig(grid=1, block=1)
    c_stream = stream._handle
    for case, name, args in cases:
        kernel = module.get_kernel(name)
        ours_current = dev.set_current
        # Every implementation of this case takes turns (see time_launches);
        # "written" samplers are the same launches with the arguments written
        # out at the call site (as code with a fixed argument list does): on
        # PyPy, ``f(a, b, c, *args)`` costs the caller time of its own,
        # whatever ``f`` is.
        written = 0 < len(args) <= 16
        samplers = {}

        def ours(n, kernel=kernel, args=args):
            for _ in range(n):
                launch(stream, config, kernel, *args)

        samplers["cuda_core"] = launch_sampler(ours, stream.sync, ours_current)
        if written:
            samplers["written cuda_core"] = launch_sampler(
                _written_out(launch, stream, config, kernel, args), stream.sync, ours_current
            )

        if "cuda.core" in peers:
            mod, cc_stream, cc_module, cc_config = peers["cuda.core"]
            cc_kernel = cc_module.get_kernel(name)
            cc_launch = mod.launch
            cc_current = mod.Device(0).set_current

            def theirs(n, k=cc_kernel, args=args, s=cc_stream, c=cc_config, go=cc_launch):
                for _ in range(n):
                    go(s, c, k, *args)

            samplers["cuda.core"] = launch_sampler(theirs, cc_stream.sync, cc_current)
            if written:
                samplers["written cuda.core"] = launch_sampler(
                    _written_out(cc_launch, cc_stream, cc_config, cc_kernel, args),
                    cc_stream.sync,
                    cc_current,
                )
            dev.set_current()
        if "cupy" in peers:
            cupy, cp_stream, cp_module = peers["cupy"]
            cp_kernel = cp_module.get_function(name)

            def cupy_launch(n, k=cp_kernel, args=args, s=cp_stream):
                for _ in range(n):
                    k((1,), (1,), args, stream=s)

            samplers["cupy"] = launch_sampler(cupy_launch, cp_stream.synchronize)
            dev.set_current()

        # C floor: a prepared parameter array, launched from a C loop.
        if floor_loops:
            if name == "small_kernel_512_doubles":
                values = ffi.new("double[]", list(args) or [0.0])
                width = 8
            else:
                values = ffi.new("unsigned long long[]", list(args) or [0])
                width = 8
            base = ffi.cast("char *", values)
            params = ffi.new("void *[]", [base + width * i for i in range(len(args))] or [ffi.NULL])
            c_params = params if args else ffi.NULL
            c_kernel = ffi.cast("CUfunction", kernel._handle)
            pfunc = ffi.new("CUfunction *")
            check(lib.cuKernelGetFunction(pfunc, kernel._handle))
            for label, func, use_ex in (
                ("C floor", c_kernel, 0),
                ("C floor Ex", c_kernel, 1),
                ("C floor CUfunction", pfunc[0], 0),
            ):

                def floor(n, func=func, use_ex=use_ex, c_params=c_params):
                    check(floor_loops[0](func, c_stream, c_params, n, use_ex))

                samplers[label] = launch_sampler(floor, stream.sync, ours_current)
        timed = time_launches(samplers)
        plain = [k for k in timed if not k.startswith("written ")]
        written = [k for k in timed if k.startswith("written ")]
        results = Timings({k: timed[k] for k in plain}, {k: timed.rounds[k] for k in plain})
        report("bench_launch", case, results)
        if written:
            # The C loops have no call site to write out: the same timings.
            keys = written + floor_labels
            spelled = Timings(
                {k.replace("written ", "", 1): timed[k] for k in keys},
                {k.replace("written ", "", 1): timed.rounds[k] for k in keys},
            )
            report("bench_launch", case + ", arguments written out", spelled)
        if breakdown:
            _breakdown(case, stream, config, kernel, args, results["cuda_core"])

    if cubin_path is not None:
        os.unlink(cubin_path)
    scratch.close(stream)
    stream.close()
    module.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
