# SPDX-License-Identifier: Apache-2.0
"""Processes: CUDA in a forked child fails clearly; spawn + IPC works.

Both scenarios run in their own interpreter with a timeout
(``tests/_scripts/fork_child.py``, ``tests/_scripts/spawn_ipc.py``), so
neither a fork of the test process nor a hung child can affect the run.
"""

from __future__ import annotations

import pytest
from _scripts.hardening_util import run_script

TIMEOUT = 240


def _run(name):
    proc, result = run_script(name, timeout=TIMEOUT)
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, detail
    assert result is not None, detail
    return result, detail


@pytest.fixture(scope="module")
def forked():
    from conftest import gpu_status

    if not gpu_status()[0]:
        pytest.skip(f"needs a GPU ({gpu_status()[1]})")
    result, detail = _run("fork_child.py")
    for kind, child in result["children"].items():
        summary = {op: out.get("name") or out.get("value") for op, out in child["ops"].items()}
        print(
            f"forked child {kind}: {summary}; exit={child['exit_code']} "
            f"signal={child['signal']} hung={child['hung']}"
        )
        if child["stderr"]:
            print(f"forked child {kind} stderr:\n{child['stderr']}")
    return result, detail


@pytest.mark.gpu
def test_forked_children_never_hang_and_parent_is_unaffected(forked):
    result, detail = forked
    for kind, child in result["children"].items():
        assert not child["hung"], f"forked child {kind!r} hung\n{child}"
        assert "done" in child["ops"], f"forked child {kind!r} did not get to its exit: {child}"
    assert result["parent_ok"], "the parent's CUDA state changed"


# Calls that go through the driver's initialization check in a forked child.
CHECKED_IN_CHILD = ("set_current", "create_stream", "launch", "new_device_object")


@pytest.mark.gpu
def test_forked_child_cuda_calls_raise_a_clear_error(forked):
    result, _ = forked
    ops = result["children"]["ops"]["ops"]
    for op in CHECKED_IN_CHILD:
        out = ops[op]
        assert not out["ok"], f"{op} succeeded in a forked child: {out}"
        assert "CUDAError" in out["bases"], f"{op}: {out}"
        assert out["name"] == "CUDA_ERROR_NOT_INITIALIZED", out
        assert "fork()" in out["message"] and "spawn" in out["message"], out["message"]


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["allocate", "stream_sync"])
def test_forked_child_allocate_and_sync_raise(forked, op):
    # The driver itself returns success for these in a forked child (observed on
    # an H200, driver 580): the extension's fork handler must stop them.
    result, _ = forked
    out = result["children"]["ops"]["ops"][op]
    assert not out["ok"], f"{op} succeeded in a forked child: {out}"
    assert "CUDAError" in out["bases"], out
    assert out["name"] == "CUDA_ERROR_NOT_INITIALIZED", out
    assert "fork()" in out["message"] and "spawn" in out["message"], out["message"]


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["exit", "ops_exit"])
def test_forked_child_exits_cleanly(forked, kind):
    """A child that exits normally finalizes the objects it inherited: no crash, no spam."""
    result, _ = forked
    child = result["children"][kind]
    assert child["signal"] is None, f"child {kind!r} died from signal {child['signal']}:\n{child}"
    assert child["exit_code"] == 0, child
    assert "Fatal Python error" not in child["stderr"], child["stderr"]
    assert "CUDAWarning" not in child["stderr"], child["stderr"]


FAKE_DRIVER_SOURCE = r"""
/* A stand-in for libcuda.so.1: every entry point returns CUDA_SUCCESS. */
typedef int CUresult;
static CUresult succeed(void) { return 0; }
CUresult cuInit(unsigned int flags) { (void)flags; return 0; }
CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version,
                             unsigned long long flags, int *status) {
    (void)name; (void)version; (void)flags;
    *pfn = (void *)succeed;
    if (status) *status = 0;
    return 0;
}
"""


def test_fork_refuses_every_driver_call_in_the_child(tmp_path):
    # CPU: with a driver whose every call succeeds, a forked child must still
    # get CUDA_ERROR_NOT_INITIALIZED (3) from every wrapper, and the parent
    # must keep working (the extension's pthread_atfork child handler).
    import shutil
    import subprocess

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in driver")
    src = tmp_path / "fake_cuda.c"
    src.write_text(FAKE_DRIVER_SOURCE)
    lib_path = tmp_path / "libfake_cuda.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib_path), str(src)], check=True)
    proc, result = run_script("fork_fake_driver.py", str(lib_path), timeout=TIMEOUT)
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0 and result is not None, detail
    assert "error" not in result, result
    parent, child = result["parent"], result["child"]
    assert result["child_exit"] == 0 and child is not None and "crash" not in child, result
    # The parent: the stand-in driver answers success, before and after the fork.
    assert set(parent["before"].values()) == {0}, parent
    assert parent["after"] == parent["before"], parent
    assert parent["state"] == 1 and not parent["in_forked_child"], parent
    # The child: every call refused at once, whatever the driver would say.
    assert child["state"] == 3, child  # CC_DRIVER_FORKED
    assert child["in_forked_child"], child
    assert set(child["calls"].values()) == {3}, child["calls"]
    assert child["reload"] != 0, child
    assert child["grandchild_exit"] == 0, child
    for what in ("load_driver", "device", "check"):
        out = child[what]
        assert not out["ok"] and out["type"] == "CUDAError", (what, out)
        assert out["name"] == "CUDA_ERROR_NOT_INITIALIZED", (what, out)
        assert "fork()" in out["message"] and "spawn" in out["message"], (what, out)
    assert child["finalizer_warnings"] == [], child


def test_fork_hint_in_not_initialized_errors(monkeypatch):
    # CPU: in a forked child, CUDA_ERROR_NOT_INITIALIZED explains fork() and
    # the finalizers' warnings are silenced (the objects belong to the parent).
    import warnings

    from cuda_core import _errors

    monkeypatch.setattr(_errors, "_FORKED_CHILD", [True])
    assert _errors.in_forked_child()
    message = str(_errors.driver_error(3))
    assert message.startswith("CUDA_ERROR_NOT_INITIALIZED") and "fork()" in message
    assert "fork()" not in str(_errors.driver_error(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _errors.warn_cuda("cuStreamDestroy (Stream finalizer)", 3)
    monkeypatch.setattr(_errors, "_FORKED_CHILD", [False])
    assert "fork()" not in str(_errors.driver_error(3))


@pytest.mark.gpu
def test_spawn_child_shares_a_buffer_through_ipc():
    result, detail = _run("spawn_ipc.py")
    if "skip" in result:
        pytest.skip(result["skip"])
    child = result["child"]
    assert child is not None, f"the spawned child reported nothing\n{detail}"
    assert child["error"] is None, child
    assert child["contents_ok"], "the child did not see the parent's data"
    assert child["is_mapped"]
    assert result["exitcode"] == 0, result
    assert result["parent_sees"], "the parent did not see the child's writes"
