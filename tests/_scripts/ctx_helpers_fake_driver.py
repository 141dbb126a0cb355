# SPDX-License-Identifier: Apache-2.0
"""The extension's create-in-a-context helpers over a stand-in driver (run by test_ctx_helpers.py).

Usage: ``ctx_helpers_fake_driver.py LIBRARY``, where LIBRARY is built from
``fake_ctx_driver.c``.  For each combination of push, create, pop and
priority-query statuses (set through the environment, which the stand-in
reads on every call) it records, per helper, the status returned and how
many objects were destroyed; then, under ``"claims"``, what the texture
and surface helpers do with a claim count.  Prints ``RESULT {"PUSH CREATE
POP PRIO": {...}, "claims": {...}}``.
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
        # Over a claim count (left at 2 whatever the creation's outcome).
        "cc_tex_object_new": lambda: new_over_claim(
            lambda c: lib.cc_tex_object_new(ctx, res, tex, c)
        ),
        "cc_surf_object_new": lambda: new_over_claim(lambda c: lib.cc_surf_object_new(ctx, res, c)),
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
    for name in ("PUSH", "CREATE", "POP", "PRIO"):
        os.environ[name] = "0"
    out["claims"] = claim_outcomes(ctx, res, tex, destroys)
    emit(out)


def new_over_claim(new):
    """Status of ``new(claims)`` over a count of 1, or "claims N" if it was not 2 after."""
    claims = ffi.new("int *", 1)
    handle = new(claims)
    if claims[0] != 2:
        return f"claims {claims[0]}"
    return lib.cc_status() if not handle else 0


def claim_outcomes(ctx, res, tex, destroys):
    """[result, count left, destroys] of each texture.c helper over a claim count."""
    out = {}
    for claims_before in (0, 1, 2, None):
        for name, call in (
            ("tex_new", lambda c: lib.cc_tex_object_new(ctx, res, tex, c)),
            ("surf_new", lambda c: lib.cc_surf_object_new(ctx, res, c)),
            ("tex_release", lambda c: lib.cc_tex_object_release(0x77, c)),
            ("surf_release", lambda c: lib.cc_surf_object_release(0x77, c)),
        ):
            for destroy in (0, 5, 2147418113):  # a CC_* sentinel too
                os.environ["DESTROY"] = str(destroy)
                claims = ffi.NULL if claims_before is None else ffi.new("int *", claims_before)
                destroys.value = 0
                result = int(call(claims))
                if name.endswith("_new"):
                    result = [result, int(lib.cc_status())]
                left = None if claims_before is None else claims[0]
                out[f"{name} {claims_before} {destroy}"] = [result, left, destroys.value]
    os.environ["DESTROY"] = "0"
    retained = ffi.new("int *", 1)
    out["retain drop"] = [
        lib.cc_claim_retain(retained),
        lib.cc_claim_drop(retained),
        lib.cc_claim_drop(retained),
        lib.cc_claim_retain(retained),
        retained[0],
    ]
    return out


if __name__ == "__main__":
    main()
