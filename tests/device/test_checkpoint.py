# SPDX-License-Identifier: Apache-2.0
"""cuda_core.checkpoint: argument checks, and a real checkpoint/restore of a child.

The GPU test runs the coordinator (tests/_scripts/checkpoint_coordinator.py)
in its own process group with a time limit, so a driver that hangs cannot
hang the test run; the coordinator checkpoints a child that holds a pattern
in device memory, and the child finds the pattern intact afterwards.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys

import pytest
from _helpers import CHECKOUT

from cuda_core import CUDAError, checkpoint
from cuda_core._cuda_ffi import ffi, lib

SCRIPTS = os.path.join(CHECKOUT, "tests", "_scripts")


@pytest.mark.parametrize(
    ("pid", "error", "match"),
    [
        ("abc", TypeError, "pid must be an int"),
        (True, TypeError, "pid must be an int"),
        (1.0, TypeError, "pid must be an int"),
        (0, ValueError, "pid must be a positive int"),
        (-1, ValueError, "pid must be a positive int"),
    ],
)
def test_bad_pid(pid, error, match):
    with pytest.raises(error, match=match):
        checkpoint.Process(pid)


def test_public_surface():
    assert checkpoint.__all__ == ["Process"]
    assert not hasattr(checkpoint, "ProcessStateType")
    proc = checkpoint.Process(1)
    assert proc.pid == 1
    with pytest.raises(AttributeError):
        proc.pid = 2
    from cuda_core.typing import ProcessStateType

    assert set(ProcessStateType.__args__) == {"running", "locked", "checkpointed", "failed"}


def test_gpu_mapping_conversion():
    pairs = checkpoint._gpu_pairs({"00112233-4455-6677-8899-aabbccddeeff": bytes(range(16))})
    assert bytes(ffi.buffer(ffi.addressof(pairs[0], "oldUuid"), 16)).hex() == (
        "00112233445566778899aabbccddeeff"
    )
    assert bytes(ffi.buffer(ffi.addressof(pairs[0], "newUuid"), 16)) == bytes(range(16))
    assert checkpoint._gpu_pairs(None) is None and checkpoint._gpu_pairs({}) is None
    with pytest.raises(TypeError, match="gpu_mapping must be a mapping"):
        checkpoint._gpu_pairs([("a", "b")])
    with pytest.raises(ValueError, match="32 hex characters"):
        checkpoint._gpu_pairs({"xyz": "00112233-4455-6677-8899-aabbccddeeff"})
    with pytest.raises(TypeError, match="UUID strings"):
        checkpoint._gpu_pairs({1: 2})


def test_states_follow_the_driver_enum():
    assert checkpoint._STATES == {0: "running", 1: "locked", 2: "checkpointed", 3: "failed"}


@pytest.mark.skipif(
    lib.cc_load_library(lib.CC_LIB_DRIVER, ffi.NULL) == 0,
    reason="a CUDA driver is installed; the no-driver error needs a machine without one",
)
def test_without_a_driver_the_error_says_so():
    with pytest.raises(CUDAError, match="libcuda"):
        checkpoint.Process(12345).state  # noqa: B018


def test_unsupported_statuses_become_runtime_errors():
    with pytest.raises(RuntimeError, match="^CUDA checkpointing is not supported"):
        checkpoint._call(801, "cuCheckpointProcessLock")
    with pytest.raises(RuntimeError, match="^CUDA checkpointing is not supported"):
        checkpoint._call(500, "cuCheckpointProcessGetState")
    with pytest.raises(CUDAError, match="^CUDA_ERROR_ILLEGAL_STATE"):
        checkpoint._call(401, "cuCheckpointProcessCheckpoint")


@pytest.mark.gpu
@pytest.mark.skipif(sys.platform != "linux", reason="CUDA checkpointing is Linux-only")
def test_checkpoint_and_restore_a_child_process():
    proc = subprocess.Popen(
        [sys.executable, os.path.join(SCRIPTS, "checkpoint_coordinator.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"checkpoint coordinator hung\nstdout:\n{out}\nstderr:\n{err}")
    if proc.returncode == 77:
        pytest.skip(out.strip())
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, f"rc={proc.returncode}\n{out}\n{err}"
    res = json.loads(lines[-1][len("RESULT ") :])
    assert res["pid_matches"]
    assert res["states"] == ["running", "locked", "checkpointed", "locked", "running"]
    assert res["restore_thread_id"] > 0
    assert res["target_says"] == "INTACT"
    assert res["target_exit"] == 0


def _line(child, timeout=60):
    ready, _, _ = select.select([child.stdout], [], [], timeout)
    assert ready, f"no output from the child within {timeout} s"
    return child.stdout.readline().strip()


@pytest.mark.gpu
@pytest.mark.skipif(sys.platform != "linux", reason="CUDA checkpointing is Linux-only")
def test_wrong_state_is_a_cuda_error():
    child = subprocess.Popen(
        [sys.executable, os.path.join(SCRIPTS, "checkpoint_target.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _line(child) == "READY"
        proc = checkpoint.Process(child.pid)
        try:
            assert proc.state == "running"
        except RuntimeError as exc:
            pytest.skip(str(exc))
        with pytest.raises(CUDAError):
            proc.checkpoint()  # not locked
        with pytest.raises(CUDAError):
            proc.unlock()  # not locked
        assert proc.state == "running"
        child.stdin.write("CHECK\n")
        child.stdin.flush()
        assert _line(child) == "INTACT"
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
