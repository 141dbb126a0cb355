# SPDX-License-Identifier: Apache-2.0
"""Exit with live CUDA objects (run by test_hardening_shutdown.py).

Usage: ``python shutdown.py MODE`` where MODE says how the objects are left
behind at exit:

- ``globals``: referenced from module globals, the script falls off its end;
- ``cycles``: only reachable through reference cycles, with the garbage
  collector disabled (so only interpreter shutdown can reclaim them);
- ``pending``: as ``globals``, with kernels, copies and frees still queued;
- ``sys_exit``: ``sys.exit(0)`` from inside a function holding them in locals.

Objects: owned and borrowed streams, events, buffers from the default pool,
an owned pool, a pinned pool, legacy pinned memory, managed and virtual
memory (where supported), the memory resources themselves, an ObjectCode
with its kernels, a Program, a Linker, a completed Graph, a GraphBuilder
still capturing, and a GraphDefinition.  Prints ``RESULT {"made": [...]}``
just before exiting; the test checks the exit status and stderr.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
from hardening_util import compile_kernels, emit

from cuda_core import (
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    EventOptions,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    Linker,
    LinkerOptions,
    PinnedMemoryResource,
    Program,
    ProgramOptions,
    Stream,
    launch,
)

N = 1 << 16


def make_everything(pending):
    dev = Device(0)
    dev.set_current()
    made = {}
    code, kernels = compile_kernels(dev)
    made["object_code"] = code
    made["kernels"] = kernels
    s = dev.create_stream()
    made["stream"] = s
    made["borrowed_stream"] = Stream.from_handle(s.handle)
    made["wrapped_stream"] = dev.create_stream(s)
    made["event"] = s.record(options=EventOptions(timing_enabled=True))
    made["unrecorded_event"] = dev.create_event()
    made["default_pool_buffer"] = dev.allocate(4 * N, stream=s)
    own = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=1 << 26))
    made["owned_pool"] = own
    made["owned_pool_buffer"] = own.allocate(4 * N, stream=s)
    try:
        pinned = PinnedMemoryResource()
        made["pinned_pool"] = pinned
        made["pinned_pool_buffer"] = pinned.allocate(4 * N, stream=s)
    except Exception:  # noqa: BLE001, S110 - pinned pools need a CUDA 13 driver
        pass
    made["legacy_pinned_buffer"] = LegacyPinnedMemoryResource().allocate(4 * N, stream=s)
    try:
        from cuda_core import ManagedMemoryResource

        managed = ManagedMemoryResource()
        made["managed"] = managed
        made["managed_buffer"] = managed.allocate(4 * N, stream=s)
    except Exception:  # noqa: BLE001, S110 - optional on this system
        pass
    try:
        from cuda_core import VirtualMemoryResource

        vmr = VirtualMemoryResource(dev)
        made["vmm"] = vmr
        made["vmm_buffer"] = vmr.allocate(4 * N)
    except Exception:  # noqa: BLE001, S110 - optional on this system
        pass
    buf = made["default_pool_buffer"]
    buf.fill(0, stream=s)
    cfg = LaunchConfig(grid=N // 256, block=256)
    builder = dev.create_graph_builder().begin_building()
    launch(builder, cfg, kernels["add_one"], buf, np.uint64(N))
    builder.end_building()
    graph = builder.complete()
    made["graph_builder_ended"] = builder
    made["graph"] = graph
    made["graph_builder_unstarted"] = s.create_graph_builder()
    other = dev.create_stream()
    made["capture_stream"] = other
    capturing = other.create_graph_builder().begin_building()
    launch(capturing, cfg, kernels["add_one"], buf, np.uint64(N))
    made["graph_builder_capturing"] = capturing
    try:
        from cuda_core.graph import GraphDefinition

        gdef = GraphDefinition()
        gdef.launch(cfg, kernels["add_one"], buf, np.uint64(N))
        made["graph_definition"] = gdef
    except Exception:  # noqa: BLE001, S110 - optional API
        pass
    made["program"] = Program(
        "__global__ void k() {}", "c++", options=ProgramOptions(arch=f"sm_{dev.arch}")
    )
    rdc = Program(
        'extern "C" __global__ void k() {}',
        "c++",
        options=ProgramOptions(arch=f"sm_{dev.arch}", relocatable_device_code=True),
    ).compile("cubin")
    made["linker"] = Linker(rdc, options=LinkerOptions(arch=f"sm_{dev.arch}"))
    if pending:
        for _ in range(2000):
            launch(s, cfg, kernels["add_one"], buf, np.uint64(N))
            graph.launch(s)
        buf.copy_to(made["owned_pool_buffer"], stream=s)
        made["owned_pool_buffer"].close()  # a stream-ordered free still queued
        made.pop("owned_pool_buffer")
    else:
        graph.launch(s)
        s.sync()
    return made


def make_cycle(made):
    a, b = {"made": made}, {}
    a["b"], b["a"] = b, a
    return list(made)


def main():
    mode = sys.argv[1]
    if mode == "sys_exit":
        made = make_everything(pending=True)
        emit({"made": sorted(made)})
        sys.exit(0)
    if mode == "cycles":
        gc.disable()
        names = make_cycle(make_everything(pending=False))
        emit({"made": sorted(names)})
        return
    made = make_everything(pending=mode == "pending")
    globals()["LEFT_BEHIND"] = made
    emit({"made": sorted(made)})


if __name__ == "__main__":
    main()
