# SPDX-License-Identifier: Apache-2.0
"""Share a device buffer with a ``spawn`` child through IPC (run by
test_hardening_processes.py).

The parent allocates from an IPC-enabled pool, writes ``arange(N) * 3`` and
sends the memory resource and the buffer to a spawned child
(``multiprocessing`` pickles them as IPC handles).  The child checks the
contents, adds ``CHILD_ADD`` with a kernel, syncs and reports; the parent
then reads the buffer back.  Prints ``RESULT {"child": {...}, "parent_sees":
bool, "exitcode": int}`` or ``{"skip": reason}``.
"""

from __future__ import annotations

import multiprocessing
import queue

import numpy as np
from hardening_util import compile_kernels, emit, from_host, to_host

from cuda_core import (
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    LaunchConfig,
    launch,
)

N = 4096
CHILD_ADD = 1000
TIMEOUT = 120


def child(mr, buf, results):
    report = {}
    try:
        dev = Device(0)
        dev.set_current()
        s = dev.create_stream()
        got = to_host(buf, s)
        report["contents_ok"] = bool((got == np.arange(N, dtype=np.uint32) * 3).all())
        report["is_mapped"] = bool(mr.is_mapped)
        code, k = compile_kernels(dev)
        launch(
            s,
            LaunchConfig(grid=N // 256, block=256),
            k["add_value"],
            buf,
            np.uint64(N),
            np.uint32(CHILD_ADD),
        )
        s.sync()
        buf.close()
        code.close()
        s.close()
        report["error"] = None
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        report["error"] = repr(exc)
    results.put(report)


def main():
    dev = Device(0)
    dev.set_current()
    try:
        mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True))
    except Exception as exc:  # noqa: BLE001 - IPC support depends on the system
        emit({"skip": f"IPC-enabled memory pools are not available: {exc!r}"})
        return
    s = dev.create_stream()
    buf = mr.allocate(4 * N, stream=s)
    from_host(np.arange(N, dtype=np.uint32) * 3, buf, s)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    proc = ctx.Process(target=child, args=(mr, buf, results))
    proc.start()
    try:
        report = results.get(timeout=TIMEOUT)
    except queue.Empty:
        report = None
    proc.join(TIMEOUT)
    if proc.is_alive():
        proc.kill()
        proc.join()
    got = to_host(buf, s)
    expected = np.arange(N, dtype=np.uint32) * 3 + CHILD_ADD
    emit(
        {
            "child": report,
            "exitcode": proc.exitcode,
            "parent_sees": bool((got == expected).all()),
        }
    )
    buf.close()
    s.close()
    mr.close()


if __name__ == "__main__":
    main()
