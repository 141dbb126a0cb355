# SPDX-License-Identifier: Apache-2.0
"""Use CUDA in forked children after the parent initialized it (run by
test_hardening_processes.py).

The parent makes a device current, allocates, launches and syncs, then forks
three children, one after the other:

- ``ops``: tries a series of CUDA calls, then leaves with ``os._exit(0)``
  (no finalizers);
- ``exit``: makes no CUDA call and exits normally (``sys.exit(0)``), so only
  the finalizers of the objects inherited from the parent run;
- ``ops_exit``: the calls, then a normal exit (the realistic case).

Each child reports every call's outcome on a pipe as it goes (one JSON line
per call, so a crash loses nothing before it), and writes its stderr, with
``faulthandler`` tracebacks, to a file.  The parent waits at most
``CHILD_TIMEOUT`` seconds per child, kills a hung one, checks that its own
CUDA state still works, and prints ``RESULT {"children": {name: {"ops": {op:
outcome}, "exit_code", "signal", "hung", "stderr"}}, "parent_ok": bool}``.
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import tempfile
import time

import numpy as np
from hardening_util import compile_kernels, emit, outcome, to_host

from cuda_core import Device, LaunchConfig, launch

CHILD_TIMEOUT = 60
N = 256


def child_ops(dev, stream, buf, kernel, report):
    cfg = LaunchConfig(grid=1, block=N)
    calls = (
        ("set_current", dev.set_current),
        ("create_stream", lambda: dev.create_stream().close()),
        ("allocate", lambda: dev.allocate(1024, stream=stream).close()),
        ("launch", lambda: launch(stream, cfg, kernel, buf, np.uint64(N))),
        ("stream_sync", stream.sync),
        ("new_device_object", lambda: Device(0).create_event().close()),
    )
    for name, call in calls:
        report(name, outcome(call))


def run_child(kind, dev, stream, buf, kernel):
    """Fork one child of ``kind``; return what it reported and how it ended."""
    err_file = tempfile.NamedTemporaryFile(prefix="fork_child_", suffix=".err", delete=False)
    err_file.close()
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(r)
        fd = os.open(err_file.name, os.O_WRONLY | os.O_TRUNC)
        os.dup2(fd, 2)
        os.close(fd)
        faulthandler.enable(file=sys.stderr, all_threads=True)
        pipe = os.fdopen(w, "w")

        def report(name, result):
            pipe.write(json.dumps([name, result]) + "\n")
            pipe.flush()

        if kind != "exit":
            child_ops(dev, stream, buf, kernel, report)
        report("done", {"ok": True, "value": "before exit"})
        pipe.close()
        if kind == "ops":
            os._exit(0)
        sys.exit(0)  # a normal exit: the inherited objects are finalized here
    os.close(w)
    deadline = time.monotonic() + CHILD_TIMEOUT
    status, hung = None, False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            hung = True
            os.kill(pid, 9)
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.05)
    with os.fdopen(r) as pipe:
        lines = pipe.read().splitlines()
    with open(err_file.name) as f:
        child_stderr = f.read()
    os.unlink(err_file.name)
    ops = dict(json.loads(line) for line in lines if line)
    return {
        "ops": ops,
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "hung": hung,
        "stderr": child_stderr[-4000:],
    }


def main():
    dev = Device(0)
    dev.set_current()
    code, k = compile_kernels(dev)
    stream = dev.create_stream()
    buf = dev.allocate(4 * N, stream=stream)
    buf.fill(0, stream=stream)
    cfg = LaunchConfig(grid=1, block=N)
    launch(stream, cfg, k["add_one"], buf, np.uint64(N))
    stream.sync()
    children = {}
    for kind in ("ops", "exit", "ops_exit"):
        children[kind] = run_child(kind, dev, stream, buf, k["add_one"])
    # The parent's CUDA state is unaffected by its children.
    launch(stream, cfg, k["add_one"], buf, np.uint64(N))
    parent_ok = bool((to_host(buf, stream) == 2).all())
    buf.close()
    stream.close()
    code.close()
    emit({"children": children, "parent_ok": parent_ok})


if __name__ == "__main__":
    main()
