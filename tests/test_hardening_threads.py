# SPDX-License-Identifier: Apache-2.0
"""Threads: many threads launching and allocating at once, and the GIL.

``THREADS`` threads each run ``ITERATIONS`` iterations of
allocate -> launch -> free on their own stream (a chain of stream-ordered
allocations, each computed from the previous one), and the final contents
are checked against NumPy.  Threads are joined with a timeout, so a
deadlock fails the test instead of hanging the run.

The GIL check runs in a subprocess (``tests/_scripts/gil_release.py``): if a
blocking call held the GIL, the script would hang, which its timeout turns
into a failure.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _scripts.hardening_util import compile_kernels, from_host, run_script, to_host

from cuda_core import Device, LaunchConfig, launch

pytestmark = pytest.mark.gpu

THREADS = 8
ITERATIONS = 10_000
N = 512
JOIN_TIMEOUT = 240


def test_threads_launch_and_allocate_on_their_own_streams(device):
    code, k = compile_kernels(device)
    copy_plus, add_value = k["copy_plus"], k["add_value"]
    cfg = LaunchConfig(grid=2, block=N // 2)
    n = np.uint64(N)
    results, errors = {}, []
    barrier = threading.Barrier(THREADS)

    def work(tid):
        try:
            dev = Device(0)
            dev.set_current()
            s = dev.create_stream()
            start = np.arange(N, dtype=np.uint32) * (tid + 1)
            acc = dev.allocate(4 * N, stream=s)
            from_host(start, acc, s)
            step = np.uint32(tid + 1)
            barrier.wait(60)
            for i in range(ITERATIONS):
                nxt = dev.allocate(4 * N, stream=s)
                launch(s, cfg, copy_plus, acc, nxt, n, step)
                acc.close()
                acc = nxt
                if i % 1000 == 999:
                    launch(s, cfg, add_value, acc, n, np.uint32(7))
            results[tid] = to_host(acc, s)
            acc.close()
            s.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append((tid, repr(exc)))
            barrier.abort()

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"threads still running after {JOIN_TIMEOUT}s (deadlock?): {alive}"
    assert not errors, errors
    assert sorted(results) == list(range(THREADS))
    for tid, got in results.items():
        start = np.arange(N, dtype=np.uint32) * (tid + 1)
        expected = start + np.uint32(ITERATIONS * (tid + 1) + 7 * (ITERATIONS // 1000))
        np.testing.assert_array_equal(got, expected, err_msg=f"thread {tid}")
    code.close()


def test_threads_share_one_kernel_and_resource(device):
    # All threads use the same Kernel, LaunchConfig and memory resource objects.
    code, k = compile_kernels(device)
    add_one = k["add_one"]
    cfg = LaunchConfig(grid=1, block=N)
    mr = device.memory_resource
    errors, sums = [], {}

    def work(tid):
        try:
            Device(0).set_current()
            s = Device(0).create_stream()
            buf = mr.allocate(4 * N, stream=s)
            buf.fill(0, stream=s)
            for _ in range(1000 + tid):
                launch(s, cfg, add_one, buf, np.uint64(N))
            sums[tid] = to_host(buf, s)
            buf.close()
            s.close()
        except BaseException as exc:  # noqa: BLE001
            errors.append((tid, repr(exc)))

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    assert not [t for t in threads if t.is_alive()], "deadlock"
    assert not errors, errors
    for tid, got in sums.items():
        np.testing.assert_array_equal(got, np.full(N, 1000 + tid, dtype=np.uint32))
    code.close()


def test_blocking_calls_release_the_gil():
    proc, result = run_script("gil_release.py", timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert result is not None, proc.stdout[-3000:]
    if "skip" in result:
        pytest.skip(result["skip"])
    assert set(result) == {"stream_sync", "event_sync", "event_blocking_sync", "device_sync"}
    for call, report in result.items():
        assert report["main_ran"] > 0, (call, report)
        assert report["worker_blocked"], f"{call} returned while the stream was held: {report}"
        assert report["event_pending"], (call, report)
        assert report["finished"] and report["error"] is None, (call, report)
