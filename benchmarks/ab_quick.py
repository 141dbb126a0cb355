# SPDX-License-Identifier: Apache-2.0
"""The rows the speed goals name, timed in one short process, for A/B rounds.

``run_all.py`` runs every benchmark in full: one round of it takes minutes.
The goals of ``RESULTS.md`` name a handful of rows; this script times just
those, each through cuda_core and, where importable (CPython), NVIDIA's
``cuda.core`` in the same process, the two taking turns
(``_harness.interleaved``), and reports them under the benchmark and case
names of the full scripts, so that ``ab_table.py`` reads its results alike.
``ab_rounds.sh`` runs it in place of ``run_all.py`` with ``AB_QUICK=1``.

Rows: texture and surface object create+close, tensor-map encode (the
setups of ``bench_texture.py``); pool allocate+close of 1 KiB and 1 MiB
(``bench_memory.py``); ``Device()`` and ``Device(0)`` lookup and the event
cycle (``bench_device.py``); launches with no, 1, 16 and 256 pointer
arguments and 512 doubles (the kernels of ``bench_launch.py``).

The pool and launch rows are also timed as their bare driver calls (peer
"bare calls", see ``_bare_cases``), an in-process reference on both
interpreters, and the pool rows through the least Python a Buffer can cost
(peer "least Python", see ``_least_python_cases``).

Run: ``python benchmarks/ab_quick.py [--rounds N]``; exits 0 with a message
without a GPU.  Results go to stdout and to ``$BENCH_JSON`` when set.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import gpu_reason, interleaved, nvidia_core, report, sampler  # noqa: E402

LAUNCHES = 256  # launches per call of a launch case, then one synchronize
MIN_TIME = 0.05


def _launch_cases(core, cubin):
    """``{case: fn}`` launching the kernels of bench_launch ``LAUNCHES`` times, then syncing."""
    import bench_launch

    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    module = core.ObjectCode.from_cubin(cubin)
    scratch = dev.allocate(512 * 4, stream=stream)
    stream.sync()
    config = core.LaunchConfig(grid=1, block=1)
    go = core.launch
    cases = {}
    for case, name, args in bench_launch.launch_cases(int(scratch.handle)):
        kernel = module.get_kernel(name)

        def fn(kernel=kernel, args=args):
            for _ in range(LAUNCHES):
                go(stream, config, kernel, *args)
            stream.sync()

        cases[case] = fn
    return cases, (stream, scratch, module)


def _bare_cases(keep_mem, keep_launch):
    """Peer "bare calls": the pool and launch rows as their driver calls from a bare loop.

    The pool rows make the same ``cc_pool_alloc`` and ``cuMemFreeAsync``
    calls on cuda_core's pool and stream, without the Buffer; the launch rows
    call ``cuLaunchKernel`` on cuda_core's kernels with parameter arrays
    packed once.  They are timed in the same process as cuda_core's rows, so
    their paired ratio holds where processes differ in speed (PyPy has no
    ``cuda.core`` to pair with).
    """
    import bench_launch

    from cuda_core._cuda_ffi import ffi, lib

    stream, mr = keep_mem[0], keep_mem[4]
    pool, handle = mr._pool, stream._handle
    alloc, free, launch = lib.cc_pool_alloc, lib.cuMemFreeAsync, lib.cuLaunchKernel
    null = ffi.NULL

    def pool_cycle(size):
        def fn():
            ptr = alloc(size, pool, handle)
            if not ptr or free(ptr, handle):
                raise RuntimeError("bare pool calls failed")

        return fn

    cases = {
        ("memory", "pool allocate+close 1 KiB"): (pool_cycle(1024), 1),
        ("memory", "pool allocate+close 1 MiB"): (pool_cycle(1 << 20), 1),
    }
    lstream, scratch, module = keep_launch
    lhandle, keep = lstream._handle, []
    for case, name, args in bench_launch.launch_cases(int(scratch.handle)):
        params = null
        if args:
            kind = "double[]" if type(args[0]) is float else "uint64_t[]"
            values = ffi.new(kind, list(args))
            params = ffi.new("void *[]", [values + i for i in range(len(args))])
            keep += [values, params]
        func = ffi.cast("CUfunction", module.get_kernel(name)._handle)

        def fn(func=func, params=params):
            for _ in range(LAUNCHES):
                if launch(func, 1, 1, 1, 1, 1, 1, 0, lhandle, params, null):
                    raise RuntimeError("bare launch failed")
            lstream.sync()

        cases[("bench_launch", case)] = (fn, LAUNCHES)
    return cases, keep


def _least_python_cases(keep_mem):
    """Peer "least Python": the pool rows through the least Python a Buffer can cost.

    The same two extension calls as "bare calls", wrapped the way any Python
    class over them must be: ``allocate(size, stream=...)`` returns an object
    with the seven fields of cuda_core's Buffer, made as an open twin with a
    finalizer, and its ``close()`` frees, clears and retypes it to the plain
    class.  None of cuda_core's checks (the size, the stream, a closed or
    mapped resource), no owned-pool count and no error translation.  Its
    ratio to ``cuda.core`` bounds where cuda_core's pool rows can get
    without C code that builds Python objects.
    """
    from cuda_core._cuda_ffi import lib
    from cuda_core._memory._buffer import Buffer

    stream, mr = keep_mem[0], keep_mem[4]
    alloc, free = lib.cc_pool_alloc, lib.cuMemFreeAsync

    class Closed:
        __slots__ = Buffer.__slots__  # the same layout as cuda_core's Buffer

    class Open(Closed):
        __slots__ = ()
        __init__ = object.__init__

        def __del__(self):  # the safety net's place; a closed object has none
            pass

        def close(self, stream=None):
            self._closed = True
            self.__class__ = Closed
            status = free(self._ptr, self._dstream._handle)
            self._ptr = 0
            self._size = 0
            self._mr = None
            self._extra = None
            if status:
                raise RuntimeError("cuMemFreeAsync failed")

    class Resource:
        __slots__ = ("_pool",)

        def allocate(self, size, *, stream):
            ptr = alloc(size, self._pool, stream._handle)
            if not ptr:
                raise RuntimeError("cc_pool_alloc failed")
            buf = Open()
            buf._ptr = ptr
            buf._size = size
            buf._mr = self
            buf._closed = False
            buf._extra = None
            buf._release = None
            buf._dstream = stream
            return buf

    res = Resource()
    res._pool = mr._pool

    def cycle(size):
        def fn():
            res.allocate(size, stream=stream).close()

        return fn

    return {
        ("memory", "pool allocate+close 1 KiB"): (cycle(1024), 1),
        ("memory", "pool allocate+close 1 MiB"): (cycle(1 << 20), 1),
    }, res


def _suites(core, cubin):
    """``{(benchmark, case): (fn, scale)}`` and what must stay alive, for ``core``."""
    import importlib

    import bench_device
    import bench_memory
    import bench_texture

    texture = importlib.import_module(core.__name__ + ".texture")
    typing = importlib.import_module(core.__name__ + ".typing")
    tex, keep_tex = bench_texture._setup(core, texture, typing)
    mem, keep_mem = bench_memory._suite(core, core.LegacyPinnedMemoryResource)
    dev = bench_device._cases(core)
    launches, keep_launch = _launch_cases(core, cubin)
    cases = {("texture", f"{c} (us/op)"): (fn, 1) for c, fn in tex.items()}
    for c in ("pool allocate+close 1 KiB", "pool allocate+close 1 MiB"):
        cases[("memory", c)] = (mem[c][1], 1)
    for c in ("Device() lookup", "Device(0) lookup", "event create+record+sync+close"):
        cases[("device", c)] = (dev[c], 1)
    for c, fn in launches.items():
        cases[("bench_launch", c)] = (fn, LAUNCHES)
    return cases, (keep_tex, keep_mem, keep_launch)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="turns of each implementation")
    args = ap.parse_args(argv)
    reason = gpu_reason()
    if reason is not None:
        print(f"ab_quick: skipped ({reason})")
        return 0
    import bench_launch

    import cuda_core as ours

    dev = ours.Device(0)
    dev.set_current()
    cubin = bytes(
        ours.Program(
            bench_launch.KERNEL_SOURCE, "c++", options=ours.ProgramOptions(arch=f"sm_{dev.arch}")
        )
        .compile("cubin")
        .code
    )
    impls = {"cuda_core": _suites(ours, cubin)}
    impls["bare calls"] = _bare_cases(impls["cuda_core"][1][1], impls["cuda_core"][1][2])
    impls["least Python"] = _least_python_cases(impls["cuda_core"][1][1])
    peer = nvidia_core("launch", "LegacyPinnedMemoryResource")
    if peer is not None:
        try:
            impls["cuda.core"] = _suites(peer, cubin)
        except Exception as exc:  # noqa: BLE001 - report and go on without it
            print(f"ab_quick: NVIDIA cuda.core unusable here: {exc}")
    for key in impls["cuda_core"][0]:
        samplers = {}
        for label, (cases, _) in impls.items():
            if key in cases:
                fn, scale = cases[key]
                samplers[label] = sampler(fn, min_time=MIN_TIME, scale=scale)
        report(key[0], key[1], interleaved(samplers, rounds=args.rounds, reduce=min))
    return 0


if __name__ == "__main__":
    sys.exit(main())
