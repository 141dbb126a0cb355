# SPDX-License-Identifier: Apache-2.0
"""Check that blocking calls release the GIL (run by test_hardening_threads.py).

A stream is held at ``cuStreamWaitValue32`` on a host-mapped flag.  A worker
thread then blocks in one waiting call (``Stream.sync``, ``Event.sync``,
``Device.sync``, ``Event.sync`` with ``blocking_sync``); meanwhile the main
thread must keep running Python.  If the GIL were held during the call, the
main thread would never wake up from ``time.sleep`` and this script would
hang (the test's subprocess timeout turns that into a failure).

Prints ``RESULT {"<call>": {"main_ran": iterations, "worker_blocked": bool,
"finished": bool, "error": str or None}, ...}`` or ``{"skip": reason}``.
"""

from __future__ import annotations

import threading
import time

from hardening_util import StreamBlocker, emit

from cuda_core import Device, EventOptions


def one(dev, call):
    s = dev.create_stream()
    blocker = StreamBlocker(s)
    if blocker.status:  # unavailable here: nothing is held
        s.close()
        return None
    event = s.record(options=EventOptions(blocking_sync=call == "event_blocking_sync"))
    wait = {
        "stream_sync": s.sync,
        "event_sync": event.sync,
        "event_blocking_sync": event.sync,
        "device_sync": dev.sync,
    }[call]
    started, finished = threading.Event(), threading.Event()
    errors = []

    def worker():
        try:
            dev.set_current()
            started.set()
            wait()
        except Exception as exc:  # noqa: BLE001 - reported
            errors.append(repr(exc))
        finished.set()

    t = threading.Thread(target=worker, daemon=True)
    report = {}
    try:
        t.start()
        started.wait(30)
        time.sleep(0.1)  # the worker enters the blocking call
        deadline = time.perf_counter() + 0.2
        iterations = 0
        while time.perf_counter() < deadline:
            iterations += 1
        report["main_ran"] = iterations
        report["worker_blocked"] = t.is_alive() and not finished.is_set()
        report["event_pending"] = not event.is_done
    finally:
        blocker.release()
        t.join(60)
        blocker.free()
    report["finished"] = finished.is_set()
    report["error"] = errors[0] if errors else None
    event.close()
    s.close()
    return report


def main():
    dev = Device(0)
    dev.set_current()
    result = {}
    for call in ("stream_sync", "event_sync", "event_blocking_sync", "device_sync"):
        report = one(dev, call)
        if report is None:
            emit({"skip": "cuStreamWaitValue32 on host-mapped memory is not available"})
            return
        result[call] = report
    emit(result)


if __name__ == "__main__":
    main()
