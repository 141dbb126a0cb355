# SPDX-License-Identifier: Apache-2.0
"""The extension's create-in-a-context helpers over a stand-in driver (run by test_ctx_helpers.py).

Usage: ``ctx_helpers_fake_driver.py LIBRARY``, where LIBRARY is built from
``fake_ctx_driver.c``.  For each combination of push, create, pop and
priority-query statuses (set through the environment, which the stand-in
reads on every call) it records, per helper, the status returned and how
many objects were destroyed.  Prints ``RESULT {"PUSH CREATE POP PRIO": {...}}``.
"""

from __future__ import annotations

import ctypes
import os
import sys

from hardening_util import emit

from cuda_core._cuda_ffi import ffi, lib

COMBINATIONS = [(0, 0, 0, 0), (0, 0, 2, 0), (0, 1, 0, 0), (0, 1, 2, 0), (3, 0, 0, 0), (0, 0, 0, 4)]


def main():
    path = sys.argv[1]
    if lib.cc_load_library(lib.CC_LIB_DRIVER, path.encode()) != 0:
        emit({"error": ffi.string(lib.cc_library_error(lib.CC_LIB_DRIVER)).decode()})
        return
    destroys = ctypes.c_int.in_dll(ctypes.CDLL(path), "fake_destroys")
    ctx = ffi.cast("CUcontext", 0x2)  # not the current one: pushed and popped
    res = ffi.new("CUDA_RESOURCE_DESC *")
    tex = ffi.new("CUDA_TEXTURE_DESC *")
    calls = {
        "cc_stream_create": lambda: lib.cc_stream_create(ctx, 0, 0, ffi.new("CUstream *")),
        "cc_event_create": lambda: lib.cc_event_create(ctx, 0, ffi.new("CUevent *")),
        "cc_tex_object_create": lambda: lib.cc_tex_object_create(
            ctx, ffi.new("CUtexObject *"), res, tex
        ),
        "cc_surf_object_create": lambda: lib.cc_surf_object_create(
            ctx, ffi.new("CUsurfObject *"), res
        ),
        # The single-result forms: a NULL handle on failure, the status kept.
        "cc_stream_new": lambda: lib.cc_status() if not lib.cc_stream_new(ctx) else 0,
        "cc_event_new": lambda: lib.cc_status() if not lib.cc_event_new(ctx, 0) else 0,
    }
    out = {}
    for combo in COMBINATIONS:
        for name, value in zip(("PUSH", "CREATE", "POP", "PRIO"), combo):
            os.environ[name] = str(value)
        row = out[" ".join(map(str, combo))] = {}
        for name, call in calls.items():
            destroys.value = 0
            status = int(call())
            row[name] = [status, destroys.value]
    emit(out)


if __name__ == "__main__":
    main()
