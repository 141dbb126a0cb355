# SPDX-License-Identifier: Apache-2.0
"""Provoke one GPU fault and report how every later call behaves.

Usage: ``python fault.py MODE`` with MODE one of ``illegal_address``,
``trap``, ``assert`` (each poisons the context) or ``oom`` (does not).
Prints one ``RESULT {json}`` line: ``{"fault": outcome, "after": {op: outcome}}``
(see :func:`hardening_util.outcome`) and exits 0 unless the script itself is
broken.  Run by tests/test_hardening_faults.py.
"""

from __future__ import annotations

import sys

import numpy as np
from hardening_util import compile_kernels, emit, outcome, to_host

from cuda_core import (
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    launch,
)

N = 1024
HUGE = 1 << 50  # 1 PiB: more than any GPU has


def poisoning(mode):
    dev = Device(0)
    dev.set_current()
    code, k = compile_kernels(dev)
    s = dev.create_stream()
    buf = dev.allocate(4 * N, stream=s)
    buf.fill(0, stream=s)
    s.sync()
    cfg = LaunchConfig(grid=1, block=1)
    if mode == "illegal_address":
        launch(s, cfg, k["poke"], 0xDEAD0000)  # unmapped: the launch itself is accepted
    elif mode == "trap":
        launch(s, cfg, k["trap_kernel"])
    else:
        launch(s, cfg, k["assert_kernel"], np.int32(1))
    result = {"fault": outcome(s.sync)}
    after = result["after"] = {}
    after["stream_sync_again"] = outcome(s.sync)
    after["device_sync"] = outcome(dev.sync)
    after["launch"] = outcome(
        lambda: launch(s, LaunchConfig(grid=N // 256, block=256), k["add_one"], buf, N)
    )
    after["stream_sync_after_launch"] = outcome(s.sync)
    after["allocate"] = outcome(lambda: dev.allocate(4096, stream=s).close())
    after["fill"] = outcome(lambda: buf.fill(1, stream=s))
    after["create_stream"] = outcome(lambda: dev.create_stream().close())
    after["create_event"] = outcome(lambda: dev.create_event().close())
    after["record"] = outcome(lambda: s.record().close())
    after["get_kernel"] = outcome(lambda: code.get_kernel("add_one"))
    after["buffer_close"] = outcome(buf.close)
    after["stream_close"] = outcome(s.close)
    after["code_close"] = outcome(code.close)
    after["stream_close_again"] = outcome(s.close)
    return result


def oom():
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    result = {"fault": outcome(lambda: dev.allocate(HUGE, stream=s))}
    after = result["after"] = {}
    # A normal allocation still works and holds what is written to it.
    buf = dev.allocate(4 * N, stream=s)
    buf.fill(np.uint32(0x01020304), stream=s)
    host = to_host(buf, s)
    after["normal_allocation"] = {"ok": bool((host == 0x01020304).all()), "value": int(host[0])}
    buf.close()
    own = DeviceMemoryResource(dev, DeviceMemoryResourceOptions())
    after["owned_pool_huge"] = outcome(lambda: own.allocate(HUGE, stream=s))
    after["owned_pool_normal"] = outcome(lambda: own.allocate(4 * N, stream=s).close())
    own.close()
    after["pinned_huge"] = outcome(lambda: LegacyPinnedMemoryResource().allocate(HUGE))
    after["pinned_normal"] = outcome(lambda: LegacyPinnedMemoryResource().allocate(4096).close())
    try:
        from cuda_core import VirtualMemoryResource

        vmr = VirtualMemoryResource(dev)
    except Exception as exc:  # noqa: BLE001 - VMM support is optional
        after["vmm_huge"] = {"ok": True, "value": f"skipped: {exc}"}
    else:
        after["vmm_huge"] = outcome(lambda: vmr.allocate(HUGE))
        after["vmm_normal"] = outcome(lambda: vmr.allocate(4096).close())
    s.sync()
    s.close()
    return result


def main():
    mode = sys.argv[1]
    emit(oom() if mode == "oom" else poisoning(mode))


if __name__ == "__main__":
    main()
