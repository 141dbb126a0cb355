# SPDX-License-Identifier: Apache-2.0
"""Soak: does a long-running program that makes and drops graphs and IPC imports stay flat?

Two phases, each reporting the host resident set size (``/proc/self/statm``)
and the device memory in use (``cuMemGetInfo``: total minus free, for the
whole device) at the start, at the peak and at the end, as a table:

* ``graphs``: ``--graphs`` cycles (default 100000) of: allocate a small
  device Buffer, define a graph (``GraphDefinition``) with a kernel node
  taking that Buffer and a NumPy scalar, then a host callback node (a fresh
  closure every cycle), instantiate it, launch it, close the executable
  graph, the definition and the Buffer.  The stream is synchronized every
  ``--sync-every`` cycles, so some launches are still running when their
  graph is closed.  At the end every callback must have run once.
* ``graphs, driver calls only``: the same number of cycles making only the
  driver calls of a graph that keeps something alive, through the extension
  with no cuda_core object: create a graph with the kernel node, attach one
  CUDA user object (whose destructor queues a token nobody holds),
  instantiate, launch, destroy the executable and the graph.  The driver
  keeps some host memory for every executable that held a user object and
  was launched (``tests/_scripts/user_object_launch_rss.c`` shows it
  without Python); this phase measures that floor, so that the first
  phase's growth can be read against it.  ``--no-floor`` skips it.
* ``ipc``: ``--ipc`` cycles (default 10000) between this process and a
  ``spawn`` child: allocate from an IPC-enabled pool, send the buffer's
  descriptor, the child imports it (``Buffer.from_ipc_descriptor``), closes
  it and answers, then the parent closes its buffer.  The child's own host
  memory is reported too.

Each phase first runs ``--warmup`` untimed cycles (200 graph, 20 IPC by
default: lazy imports, the pool's first growth, the child's context), then
samples memory every ``--sample-every`` cycles, after a synchronize and a
garbage collection (so the numbers are the program's, not the collector's
backlog).  ``--quick`` runs 2000 graph and 200 IPC cycles.
Results go to stdout and, when ``BENCH_JSON`` names a file, are appended to
it (as ``benchmarks/_harness.py``'s ``report`` does: one JSON line per
measure, the value in MiB).  Without a GPU the script says so and exits 0.

Run: ``python benchmarks/bench_soak.py [--quick] [--graphs N] [--ipc N]``
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import IMPL, gpu_reason, report  # noqa: E402

BENCH = "soak"
MIB = 1 << 20
SRC = r"""
extern "C" __global__ void bump(unsigned int *p, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1u;
}
"""
ELEMENTS = 64
CHILD_TIMEOUT = 120


def rss_bytes():
    """Resident set size of this process (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def device_used_bytes():
    """Device memory in use on the current context's device: total minus free."""
    from cuda_core._cuda_ffi import ffi, lib
    from cuda_core._errors import check

    free = ffi.new("size_t *")
    total = ffi.new("size_t *")
    check(lib.cuMemGetInfo(free, total))
    return total[0] - free[0]


class Tracker:
    """Start, peak and end of a few memory measures sampled during a phase."""

    def __init__(self, **probes):
        self.probes = probes
        self.start = {}
        self.peak = {}
        self.end = {}

    def sample(self, final=False):
        gc.collect()
        for name, probe in self.probes.items():
            value = probe()
            self.start.setdefault(name, value)
            self.peak[name] = max(self.peak.get(name, value), value)
            if final:
                self.end[name] = value

    def rows(self):
        return [(n, self.start[n], self.peak[n], self.end[n]) for n in self.probes]


def print_table(phase, cycles, seconds, rows):
    print(f"[{IMPL}] {BENCH} | {phase}: {cycles} cycles in {seconds:.1f} s", flush=True)
    head = f"{'measure':<28}{'start MiB':>12}{'peak MiB':>12}{'end MiB':>12}{'end-start':>12}"
    print(head)
    for name, start, peak, end in rows:
        print(
            f"{name:<28}{start / MIB:>12.1f}{peak / MIB:>12.1f}{end / MIB:>12.1f}"
            f"{(end - start) / MIB:>+12.1f}",
            flush=True,
        )
        report(
            BENCH,
            f"{phase}: {name} ({cycles} cycles)",
            {"start": start / MIB, "peak": peak / MIB, "end": end / MIB},
            unit="MiB",
        )


# -- graphs --------------------------------------------------------------------------------


def soak_graphs(dev, cycles, sync_every, sample_every, warmup):
    import numpy as np

    from cuda_core import LaunchConfig, Program, ProgramOptions
    from cuda_core.graph import GraphDefinition

    arch = "".join(str(i) for i in dev.compute_capability)
    prog = Program(SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
    kernel = prog.compile("cubin").get_kernel("bump")
    config = LaunchConfig(grid=1, block=ELEMENTS)
    stream = dev.create_stream()
    ran = [0]

    def make_callback(i):
        def callback():
            ran[0] += 1

        callback.cycle = i  # a distinct object per cycle, released with its graph
        return callback

    def cycle(i):
        buf = dev.allocate(4 * ELEMENTS, stream=stream)
        g = GraphDefinition()
        node = g.launch(config, kernel, buf, np.uint32(ELEMENTS))
        node.callback(make_callback(i))
        exe = g.instantiate()
        exe.launch(stream)
        exe.close()
        g.close()
        buf.close(stream)
        if (i + 1) % sync_every == 0:
            stream.sync()

    seconds, rows = _run_phase(cycle, stream, cycles, sample_every, warmup)
    if ran[0] != warmup + cycles:
        raise RuntimeError(f"{ran[0]} of {warmup + cycles} host callbacks ran")
    stream.close()
    return seconds, rows


def soak_graph_floor(dev, cycles, sync_every, sample_every, warmup):
    from cuda_core import Program, ProgramOptions
    from cuda_core._cuda_ffi import ffi, lib
    from cuda_core._errors import check
    from cuda_core.graph._attachments import _RELEASE_FN

    arch = "".join(str(i) for i in dev.compute_capability)
    prog = Program(SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
    kernel = prog.compile("cubin").get_kernel("bump")
    stream = dev.create_stream()
    buf = dev.allocate(4 * ELEMENTS, stream=stream)
    stream.sync()
    values = (ffi.new("unsigned long long *", int(buf.handle)), ffi.new("unsigned int *", ELEMENTS))
    params = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    params.kern = kernel._handle
    params.gridDimX = params.gridDimY = params.gridDimZ = 1
    params.blockDimX, params.blockDimY, params.blockDimZ = ELEMENTS, 1, 1
    params.kernelParams = arg_array = ffi.new("void *[2]", values)
    c_stream = ffi.cast("CUstream", int(stream.handle))
    graph, node = ffi.new("CUgraph *"), ffi.new("CUgraphNode *")
    exe, uo = ffi.new("CUgraphExec *"), ffi.new("CUuserObject *")
    no_sync = lib.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC

    def cycle(i):
        check(lib.cuGraphCreate(graph, 0))
        check(lib.cuGraphAddKernelNode(node, graph[0], ffi.NULL, 0, params))
        token = ffi.cast("void *", (1 << 62) + i)  # in no table: its release drops nothing
        check(lib.cuUserObjectCreate(uo, token, _RELEASE_FN, 1, no_sync))
        check(lib.cuGraphRetainUserObject(graph[0], uo[0], 1, lib.CU_GRAPH_USER_OBJECT_MOVE))
        check(lib.cuGraphInstantiateWithFlags(exe, graph[0], 0))
        check(lib.cuGraphLaunch(exe[0], c_stream))
        check(lib.cuGraphExecDestroy(exe[0]))
        check(lib.cuGraphDestroy(graph[0]))
        if (i + 1) % sync_every == 0:
            stream.sync()

    seconds, rows = _run_phase(cycle, stream, cycles, sample_every, warmup)
    del arg_array, values
    buf.close(stream)
    stream.close()
    return seconds, rows


def _run_phase(cycle, stream, cycles, sample_every, warmup):
    """Warm up, then run ``cycles`` cycles sampling memory; return (seconds, rows)."""
    for i in range(warmup):  # first-use costs (lazy modules, pool growth) before the start
        cycle(i)
    stream.sync()
    tracker = Tracker(host_rss=rss_bytes, device_used=device_used_bytes)
    tracker.sample()
    t0 = time.perf_counter()
    for i in range(cycles):
        cycle(i)
        if (i + 1) % sample_every == 0:
            stream.sync()
            tracker.sample()
    stream.sync()
    seconds = time.perf_counter() - t0
    tracker.sample(final=True)
    return seconds, tracker.rows()


# -- IPC -------------------------------------------------------------------------------


def _ipc_child(mr, conn, sample_every, warmup):
    """Import every descriptor received, close it, answer; then report memory."""
    from cuda_core import Buffer, Device

    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    tracker = Tracker(host_rss=rss_bytes)
    count = 0
    try:
        while True:
            desc = conn.recv()
            if desc is None:
                break
            buf = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
            buf.close(stream)
            count += 1
            if count == warmup:
                stream.sync()
                tracker.sample()
            elif count > warmup and (count - warmup) % sample_every == 0:
                stream.sync()
                tracker.sample()
            conn.send(True)
        stream.sync()
        tracker.sample(final=True)
        conn.send(("done", count - warmup, tracker.rows()))
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", repr(exc)))


def soak_ipc(dev, cycles, sample_every, warmup):
    from cuda_core import DeviceMemoryResource, DeviceMemoryResourceOptions

    try:
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True))
    except Exception as exc:  # noqa: BLE001 - IPC support depends on the system
        print(f"[{IMPL}] {BENCH} | ipc: skipped (IPC-enabled pools unavailable: {exc!r})")
        return None
    stream = dev.create_stream()
    ctx = multiprocessing.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    proc = ctx.Process(target=_ipc_child, args=(mr, child_end, sample_every, max(1, warmup)))
    proc.start()
    tracker = Tracker(host_rss=rss_bytes, device_used=device_used_bytes)

    def cycle(i):
        buf = mr.allocate(1 << 16, stream=stream)
        stream.sync()  # the allocation exists before the child maps it
        parent_end.send(buf.ipc_descriptor)
        if not parent_end.poll(CHILD_TIMEOUT):
            raise RuntimeError(f"the child did not answer (cycle {i})")
        answer = parent_end.recv()
        if answer is not True:
            raise RuntimeError(f"the child failed: {answer}")
        buf.close(stream)

    try:
        for i in range(max(1, warmup)):  # the child's context and first imports
            cycle(i)
        stream.sync()
        tracker.sample()
        t0 = time.perf_counter()
        for i in range(cycles):
            cycle(i)
            if (i + 1) % sample_every == 0:
                stream.sync()
                tracker.sample()
        parent_end.send(None)
        if not parent_end.poll(CHILD_TIMEOUT):
            raise RuntimeError("the child did not report")
        child = parent_end.recv()
    finally:
        parent_end.close()  # a child still waiting for a descriptor gets EOFError and ends
        proc.join(CHILD_TIMEOUT)
        if proc.is_alive():
            proc.kill()
            proc.join()
    stream.sync()
    seconds = time.perf_counter() - t0
    tracker.sample(final=True)
    if child[0] != "done" or child[1] != cycles:
        raise RuntimeError(f"the child reported {child!r}")
    rows = tracker.rows() + [("child " + n, *v) for n, *v in child[2]]
    stream.close()
    mr.close()
    return seconds, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2000 graph and 200 IPC cycles")
    ap.add_argument("--graphs", type=int, default=None, help="graph cycles (default 100000)")
    ap.add_argument("--ipc", type=int, default=None, help="IPC cycles (default 10000)")
    ap.add_argument("--no-floor", action="store_true", help="skip the driver-calls-only phase")
    ap.add_argument("--sync-every", type=int, default=16, help="graph cycles between syncs")
    ap.add_argument("--sample-every", type=int, default=None, help="cycles between samples")
    ap.add_argument(
        "--warmup", type=int, default=None, help="untimed cycles before the start sample"
    )
    args = ap.parse_args(argv)
    graphs = args.graphs if args.graphs is not None else (2000 if args.quick else 100_000)
    ipc = args.ipc if args.ipc is not None else (200 if args.quick else 10_000)
    reason = gpu_reason()
    if reason is not None:
        print(f"[{IMPL}] {BENCH}: skipped ({reason})")
        return 0
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    if graphs > 0:
        every = args.sample_every or max(1, graphs // 50)
        warm = args.warmup if args.warmup is not None else 200
        seconds, rows = soak_graphs(dev, graphs, max(1, args.sync_every), every, warm)
        print_table("graphs", graphs, seconds, rows)
        if not args.no_floor:
            seconds, rows = soak_graph_floor(dev, graphs, max(1, args.sync_every), every, warm)
            print_table("graphs, driver calls only", graphs, seconds, rows)
    if ipc > 0:
        every = args.sample_every or max(1, ipc // 50)
        warm = args.warmup if args.warmup is not None else 20
        result = soak_ipc(dev, ipc, every, warm)
        if result is not None:
            print_table("ipc", ipc, *result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
