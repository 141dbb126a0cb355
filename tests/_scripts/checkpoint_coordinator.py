# SPDX-License-Identifier: Apache-2.0
"""Checkpoint a CUDA child process and restore it (run by test_checkpoint.py).

Starts checkpoint_target.py, waits (bounded) for its ``READY``, then with
:class:`cuda_core.checkpoint.Process` locks, checkpoints, restores and
unlocks it, recording the state after each step; finally lets the target
check its memory.  Prints one line ``RESULT {json}``; exits 77 when the
driver does not support checkpointing.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys

from cuda_core import checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 60


def _read_line(proc, timeout):
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise TimeoutError(f"no output from the target within {timeout} s")
    return proc.stdout.readline().strip()


def main():
    target = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "checkpoint_target.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    result = {"states": []}
    try:
        line = _read_line(target, TIMEOUT)
        if line != "READY":
            result["error"] = f"target said {line!r}: {target.stderr.read()}"
            return result, 1
        proc = checkpoint.Process(target.pid)
        result["pid_matches"] = proc.pid == target.pid
        try:
            result["states"].append(proc.state)
        except RuntimeError as exc:
            print(f"SKIP: {exc}", flush=True)
            return result, 77
        result["restore_thread_id"] = proc.restore_thread_id
        proc.lock(timeout_ms=10000)
        result["states"].append(proc.state)
        proc.checkpoint()
        result["states"].append(proc.state)
        proc.restore()
        result["states"].append(proc.state)
        proc.unlock()
        result["states"].append(proc.state)
        target.stdin.write("CHECK\n")
        target.stdin.flush()
        result["target_says"] = _read_line(target, TIMEOUT)
        result["target_exit"] = target.wait(timeout=TIMEOUT)
        return result, 0
    finally:
        if target.poll() is None:
            target.kill()
            target.wait()


if __name__ == "__main__":
    res, code = main()
    print("RESULT " + json.dumps(res), flush=True)
    sys.exit(code)
