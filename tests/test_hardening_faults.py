# SPDX-License-Identifier: Apache-2.0
"""GPU faults surface as named CUDAErrors, and nothing crashes or hangs afterwards.

Each fault runs in its own interpreter (``tests/_scripts/fault.py``; the
four run at the same time): a kernel fault poisons the CUDA context for the
rest of the process, which must not leak into other tests.  The
subprocesses have a timeout, so a hang fails the test instead of the run.

Faults tried: an illegal address (a store to unmapped memory), ``__trap()``,
a failed device-side ``assert``, and device / host / VMM out-of-memory.
"""

from __future__ import annotations

import pytest
from _scripts.hardening_util import run_scripts

pytestmark = pytest.mark.gpu

TIMEOUT = 180

# The status each fault must surface as (trap: "unspecified launch failure";
# some drivers report an illegal instruction for it).
EXPECTED = {
    "illegal_address": {"CUDA_ERROR_ILLEGAL_ADDRESS"},
    "trap": {"CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_ILLEGAL_INSTRUCTION"},
    "assert": {"CUDA_ERROR_ASSERT"},
}

# Calls that must keep failing with the sticky error once the context is poisoned.
MUST_FAIL_AFTER = ("stream_sync_again", "device_sync", "stream_sync_after_launch")


@pytest.fixture(scope="module")
def outcomes():
    """Run every fault script at once (each in its own process and context)."""
    modes = [*sorted(EXPECTED), "oom"]
    return run_scripts({mode: ("fault.py", mode) for mode in modes}, timeout=TIMEOUT)


def _run(outcomes, mode):
    proc, result = outcomes[mode]
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, detail
    assert "Segmentation fault" not in proc.stderr and "Fatal Python error" not in proc.stderr
    assert result is not None, detail
    return result, detail


def _assert_cuda_error(out, names, what, detail):
    assert not out["ok"], f"{what} did not raise: {out}\n{detail}"
    assert "CUDAError" in out["bases"], f"{what} raised a non-CUDAError: {out}"
    assert out["name"] in names, f"{what}: expected one of {sorted(names)}, got {out}"
    assert out["message"].startswith(out["name"]), out["message"]


@pytest.mark.parametrize("mode", sorted(EXPECTED))
def test_kernel_fault_is_named_and_sticky(outcomes, mode):
    result, detail = _run(outcomes, mode)
    names = EXPECTED[mode]
    _assert_cuda_error(result["fault"], names, f"{mode}: first sync", detail)
    after = result["after"]
    for op in MUST_FAIL_AFTER:
        _assert_cuda_error(after[op], names, f"{mode}: {op}", detail)
    # Every other call either works or raises a CUDAError; none crashes
    # (the process exited 0) and none raises anything else.
    for op, out in after.items():
        if not out["ok"]:
            assert "CUDAError" in out["bases"], f"{mode}: {op} raised {out}"
            assert out["message"], f"{mode}: {op} raised with an empty message"
    # Closing twice after a fault stays a no-op.
    assert after["stream_close_again"]["ok"], after["stream_close_again"]


def test_out_of_memory_then_normal_allocation_works(outcomes):
    result, detail = _run(outcomes, "oom")
    _assert_cuda_error(
        result["fault"], {"CUDA_ERROR_OUT_OF_MEMORY"}, "Device.allocate(1 << 50)", detail
    )
    after = result["after"]
    assert after["normal_allocation"]["ok"], after["normal_allocation"]
    _assert_cuda_error(
        after["owned_pool_huge"], {"CUDA_ERROR_OUT_OF_MEMORY"}, "owned pool 1 << 50", detail
    )
    assert after["owned_pool_normal"]["ok"], after["owned_pool_normal"]
    # Host memory: the driver refuses 1 PiB (out of memory or invalid value),
    # and a normal pinned allocation still works afterwards.
    out = after["pinned_huge"]
    assert not out["ok"] and "CUDAError" in out["bases"] and out["message"], out
    assert after["pinned_normal"]["ok"], after["pinned_normal"]
    if "vmm_normal" in after:
        _assert_cuda_error(
            after["vmm_huge"],
            {"CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_VALUE"},
            "VirtualMemoryResource 1 << 50",
            detail,
        )
        assert after["vmm_normal"]["ok"], after["vmm_normal"]
