# SPDX-License-Identifier: Apache-2.0
# Each case's closures run within that loop iteration only:
# ruff: noqa: B023, B007
"""Where the time of the goal rows of the benchmarks goes: many-argument launches,
the event cycle and 1 KiB pool allocations, split into parts timed in turns.

* launch (16 and 256 pointer-sized ints, 512 doubles): ``full`` is
  ``launch(stream, config, kernel, *args)``; ``blob buffer path`` calls the
  extension on arguments packed once (C side and driver, the packed values
  handed over as one parameter buffer); ``blob params path`` the same with a
  ``void *params[]`` array; ``C floor`` / ``C floor Ex`` the
  ``cuLaunchKernel`` / ``cuLaunchKernelEx`` loop in C; ``fill only`` (PyPy)
  the argument plan's packing alone; ``call only`` calling a Python function
  that does nothing the same way (``f(s, c, k, *args)``), the interpreter's
  own cost of that call;
* event cycle and pool 1 KiB: ``full`` through cuda_core, ``raw calls`` the
  same driver calls made from Python through the extension with no objects,
  ``C floor`` the loop in C (and NVIDIA ``cuda.core`` for the pool where
  importable).

Needs a GPU and the extension built with ``CUDA_CORE_BUILD_BENCH=1``.  Run
from the project root: ``python benchmarks/breakdown.py``.  Not part of
``run_all.py``: it explains rows, it does not add any.
"""

import os
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

import bench_launch as BL  # noqa: E402
from _harness import gpu_reason, nvidia_core  # noqa: E402

from cuda_core import (  # noqa: E402
    Device,
    LaunchConfig,
    Program,
    ProgramOptions,
    _arg_plan,  # noqa: E402
    launch,
)
from cuda_core._cuda_ffi import ffi, lib  # noqa: E402
from cuda_core._errors import check  # noqa: E402

IMPL = sys.implementation.name
if gpu_reason() is not None or not hasattr(lib, "cc_bench_launch_loop"):
    print(f"breakdown: skipped ({gpu_reason() or 'built without CUDA_CORE_BUILD_BENCH=1'})")
    sys.exit(0)
dev = Device(0)
dev.set_current()
stream = dev.create_stream()
prog = Program(BL.KERNEL_SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
module = prog.compile("cubin")
scratch = dev.allocate(512 * 4, stream=stream)
stream.sync()
config = LaunchConfig(grid=1, block=1)
cfg = config._prepare()[1]
s_h = stream._h
c_stream = stream._handle


def rounds(samplers, R=15, per=8):
    res = {k: [] for k in samplers}
    for k, f in samplers.items():
        for _ in range(3):
            f()
    keys = list(samplers)
    for r in range(R):
        keys = keys[1:] + keys[:1]
        for k in keys:
            res[k].append(samplers[k]())
    return {k: statistics.median(v) for k, v in res.items()}, res


launch_sampler = BL.launch_sampler  # the batches and turns of bench_launch.py


def nop():
    pass


for case, name, args in BL.launch_cases(int(scratch.handle))[2:]:  # 16, 256 args, 512 doubles
    kernel = module.get_kernel(name)
    plan, blob = _arg_plan._packed_arguments(kernel, args, cfg, s_h)
    c_blob = ffi.new("char[]", blob)
    # params-path variant: same blob with a layout whose bufsize is 0
    lay_sz = ffi.sizeof("cc_arg_layout") + 4 * plan.nargs
    lay2 = ffi.new("char[]", bytes(ffi.buffer(plan.layout, lay_sz)))
    l2 = ffi.cast("cc_arg_layout *", lay2)
    l2.bufsize = 0
    c_blob2 = ffi.new("char[]", blob)
    ffi.cast("uintptr_t *", c_blob2)[0] = int(ffi.cast("uintptr_t", l2))
    go = lib.cc_launch_blob
    if name.endswith("doubles"):
        values = ffi.new("double[]", list(args))
    else:
        values = ffi.new("unsigned long long[]", list(args))
    base = ffi.cast("char *", values)
    params = ffi.new("void *[]", [base + 8 * i for i in range(len(args))])
    c_kernel = ffi.cast("CUfunction", kernel._handle)
    loop = lib.cc_bench_launch_loop

    def full(n, k=kernel, a=args):
        for _ in range(n):
            launch(stream, config, k, *a)

    def blob_buf(n):
        for _ in range(n):
            go(c_blob)

    def blob_params(n):
        for _ in range(n):
            go(c_blob2)

    def floor(n):
        check(loop(c_kernel, c_stream, params, n, 0))

    def floor_ex(n):
        check(loop(c_kernel, c_stream, params, n, 1))

    samplers = {
        "full": launch_sampler(full, stream.sync),
        "blob buffer path": launch_sampler(blob_buf, stream.sync),
        "blob params path": launch_sampler(blob_params, stream.sync),
        "C floor": launch_sampler(floor, stream.sync),
        "C floor Ex": launch_sampler(floor_ex, stream.sync),
    }
    if IMPL == "pypy":
        _arg_plan._thread_state(plan.size)
        pack = plan.pack  # fills the thread's buffer and returns it

        def fillonly(n):
            for _ in range(n):
                pack(cfg, s_h, args)

        samplers["fill only"] = launch_sampler(fillonly, nop)

    def nothing(s, c, k, *a):
        return None

    def callonly(n, a=args):
        for _ in range(n):
            nothing(stream, config, kernel, *a)

    samplers["call only"] = launch_sampler(callonly, nop)
    med, _ = rounds(samplers)
    print(
        f"[{IMPL}] launch {case}: " + ", ".join(f"{k}={v:.3f}" for k, v in med.items()), flush=True
    )

# ---- event cycle
ctx = dev._c_ctx


def ev_full():
    e = dev.create_event()
    stream.record(e)
    e.sync()
    e.close()


new_u = lib.cc_event_new_untimed
rec = lib.cuEventRecord
syn = lib.cuEventSynchronize
des = lib.cuEventDestroy


def ev_raw():
    e = new_u(ctx)
    rec(e, c_stream)
    syn(e)
    des(e)


pe = ffi.new("CUevent *")
cre = lib.cuEventCreate


def ev_raw_create():
    cre(pe, 2)
    e = pe[0]
    rec(e, c_stream)
    syn(e)
    des(e)


def ev_obj_only():
    e = dev.create_event()
    e.close()


evloop = lib.cc_bench_event_loop


def mk(fn, n=1000):
    def sample():
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) / n * 1e6

    return sample


def floor_ev():
    t0 = time.perf_counter()
    check(evloop(c_stream, 1000))
    return (time.perf_counter() - t0) / 1000 * 1e6


med, _ = rounds(
    {
        "full": mk(ev_full),
        "raw calls": mk(ev_raw),
        "raw cuEventCreate": mk(ev_raw_create),
        "create+close": mk(ev_obj_only),
        "C floor": floor_ev,
    },
    R=21,
)
print(f"[{IMPL}] event cycle: " + ", ".join(f"{k}={v:.3f}" for k, v in med.items()), flush=True)

# ---- pool 1 KiB
mr = dev.memory_resource


def p_full():
    mr.allocate(1024, stream=stream).close()


pa = lib.cc_pool_alloc
fr = lib.cuMemFreeAsync
c_pool = mr._fast


def p_raw():
    p = pa(1024, c_pool, c_stream)
    fr(p, c_stream)


pl = lib.cc_bench_pool_loop


def floor_pool():
    t0 = time.perf_counter()
    check(pl(mr._pool, c_stream, 1024, 1000))
    return (time.perf_counter() - t0) / 1000 * 1e6


S = {"full": mk(p_full), "raw calls": mk(p_raw), "C floor": floor_pool}
cc = nvidia_core("breakdown")
if cc is not None:
    cd = cc.Device(0)
    cd.set_current()
    cs = cd.create_stream()
    cmr = cd.memory_resource

    def p_cc():
        cmr.allocate(1024, stream=cs).close()

    S["cuda.core"] = mk(p_cc)
    dev.set_current()
med, raw = rounds(S, R=21)
line = ", ".join(f"{k}={v:.3f}" for k, v in med.items())
if "cuda.core" in raw:
    pr = statistics.median(a / b for a, b in zip(raw["full"], raw["cuda.core"]))
    line += f", paired full/cuda.core={pr:.3f}"
print(f"[{IMPL}] pool 1KiB: " + line, flush=True)
