# SPDX-License-Identifier: Apache-2.0
"""CUDA graph replay versus eager launches.

Cases, in microseconds per kernel (end to end: submission plus execution,
ending with a stream synchronization):

* ``graph replay, 100 kernels``: one ``Graph.launch`` of a captured graph of
  100 empty-kernel launches;
* ``eager, 100 launch() calls``: the same 100 launches one by one.

Both are timed through cuda_core and, where importable in this interpreter,
NVIDIA's ``cuda.core`` in the same process; ratios ours/theirs are printed
(goal for replay: <= 1.0 against cuda.core), and the replay/eager ratio of
each library.  Without a GPU the script says so and exits 0.

Run: ``python benchmarks/bench_graph.py``
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

from _harness import IMPL, gpu_reason, interleaved, nvidia_core, report, sampler  # noqa: E402

BENCH = "graph"
KERNELS = 100
SRC = 'extern "C" __global__ void empty_kernel() {}'


def _setup(core):
    """Build (graph, eager callable, stream) with module ``core`` (ours or cuda.core)."""
    dev = core.Device(0)
    dev.set_current()
    arch = "".join(str(i) for i in dev.compute_capability)
    prog = core.Program(SRC, code_type="c++", options=core.ProgramOptions(arch=f"sm_{arch}"))
    kernel = prog.compile("cubin").get_kernel("empty_kernel")
    config = core.LaunchConfig(grid=1, block=1)
    launch = core.launch
    stream = dev.create_stream()

    gb = dev.create_graph_builder().begin_building()
    for _ in range(KERNELS):
        launch(gb, config, kernel)
    graph = gb.end_building().complete()
    graph.upload(stream)

    def replay():
        graph.launch(stream)
        stream.sync()

    def eager():
        for _ in range(KERNELS):
            launch(stream, config, kernel)
        stream.sync()

    return replay, eager, (graph, gb, kernel, prog)


def main():
    reason = gpu_reason()
    if reason is not None:
        print(f"[{IMPL}] {BENCH}: skipped ({reason})")
        return 0
    import cuda_core

    ours = _setup(cuda_core)
    theirs = None
    core = nvidia_core("Device", "launch")
    if core is not None:
        try:
            theirs = _setup(core)
        except Exception as exc:  # noqa: BLE001 - report and go on with ours only
            print(f"[{IMPL}] {BENCH}: cuda.core unavailable for this benchmark: {exc}")

    impls = {"cuda_core": ours} if theirs is None else {"cuda_core": ours, "cuda.core": theirs}
    replay = interleaved({k: sampler(v[0], scale=KERNELS) for k, v in impls.items()})
    eager = interleaved({k: sampler(v[1], scale=KERNELS) for k, v in impls.items()})
    report(BENCH, f"graph replay, {KERNELS} kernels (us/kernel)", replay)
    report(BENCH, f"eager, {KERNELS} launch() calls (us/kernel)", eager)
    for label in replay:
        print(
            f"[{IMPL}] {BENCH} | replay/eager for {label}: {replay[label] / eager[label]:.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
