# SPDX-License-Identifier: Apache-2.0
"""Fork safety of the driver wrappers, without a GPU (run by test_hardening_processes.py).

Usage: ``fork_fake_driver.py LIBRARY``, where LIBRARY is a stand-in for
``libcuda.so.1`` whose every entry point returns success (as the real
driver does for some calls in a forked child).  The script loads it as the
driver, checks that calls succeed, forks, and reports what the child (and a
grandchild) observe: every driver call must fail with
``CUDA_ERROR_NOT_INITIALIZED`` there, with the fork() hint in the message,
finalizer warnings silenced, and the parent unaffected.  Prints
``RESULT {"parent": {...}, "child": {...}}``.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

from hardening_util import emit, outcome

from cuda_core._cuda_ffi import ffi, lib


def driver_calls():
    ptr = ffi.new("CUdeviceptr *")
    return {
        "cuStreamSynchronize": int(lib.cuStreamSynchronize(ffi.NULL)),
        "cuMemAllocFromPoolAsync": int(lib.cuMemAllocFromPoolAsync(ptr, 64, ffi.NULL, ffi.NULL)),
        "cuMemFreeAsync": int(lib.cuMemFreeAsync(0, ffi.NULL)),
        "cuInit": int(lib.cuInit(0)),
        "cc_pool_alloc": int(
            lib.cc_pool_alloc(64, ffi.NULL, ffi.NULL) or lib.cc_pool_alloc_status()
        ),
    }


def child_report():
    from cuda_core import Device, _errors
    from cuda_core._loader import load_driver

    out = {
        "state": int(lib.cc_library_state(lib.CC_LIB_DRIVER)),
        "in_forked_child": _errors.in_forked_child(),
        "calls": driver_calls(),
        "reload": int(lib.cc_load_library(lib.CC_LIB_DRIVER, sys.argv[1].encode())),
        "load_driver": outcome(load_driver),
        "device": outcome(lambda: Device(0)),
        "check": outcome(lambda: _errors.check(lib.cuStreamSynchronize(ffi.NULL))),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _errors.warn_cuda("cuStreamDestroy (Stream finalizer)", 3)
    out["finalizer_warnings"] = [str(w.message) for w in caught]
    pid = os.fork()
    if pid == 0:  # a grandchild: still refused
        os._exit(0 if lib.cuStreamSynchronize(ffi.NULL) == 3 else 1)
    _, status = os.waitpid(pid, 0)
    out["grandchild_exit"] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    return out


def main():
    if lib.cc_load_library(lib.CC_LIB_DRIVER, sys.argv[1].encode()) != 0:
        emit({"error": ffi.string(lib.cc_library_error(lib.CC_LIB_DRIVER)).decode()})
        return
    before = driver_calls()
    r, w = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            report = child_report()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            report = {"crash": repr(exc)}
        with os.fdopen(w, "w") as pipe:
            pipe.write(json.dumps(report))
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    from cuda_core import _errors

    emit(
        {
            "parent": {
                "before": before,
                "after": driver_calls(),
                "state": int(lib.cc_library_state(lib.CC_LIB_DRIVER)),
                "in_forked_child": _errors.in_forked_child(),
            },
            "child": json.loads(data) if data else None,
            "child_exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1,
        }
    )


if __name__ == "__main__":
    main()
