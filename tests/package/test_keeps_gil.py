# SPDX-License-Identifier: Apache-2.0
"""The calls whose CPython wrappers keep the GIL (``build_ffi.KEEPS_GIL``).

``cffi_src/csrc/cffi_wrappers.c`` turns cffi's release of the GIL around a
call into a no-op for the functions listed, by the wrapper's ``__func__``.
A small extension built the same way checks what a call sees: a listed
function runs holding the GIL, any other without it.  The list itself is
checked against the declarations and against the rule it follows.
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest
from _helpers import build_ffi_module

build_ffi = build_ffi_module()

CPYTHON = sys.implementation.name == "cpython"


def _declared():
    names = set()
    for filename in build_ffi.declaration_files():
        names.update(p.name for p in build_ffi.read_declarations(filename).prototypes)
    return names


def test_every_listed_function_is_declared():
    missing = sorted(set(build_ffi.KEEPS_GIL) - _declared())
    assert not missing, f"KEEPS_GIL names functions nobody declares: {missing}"
    assert len(set(build_ffi.KEEPS_GIL)) == len(build_ffi.KEEPS_GIL)


def test_nothing_that_queues_or_waits_keeps_the_gil():
    # The rule of cffi_wrappers.c: work on a stream or a wait may block, and
    # must let other threads (a host callback among them) run meanwhile.
    queued_or_waiting = (
        "Launch",
        "Record",
        "Synchronize",
        "Alloc",
        "Free",
        "Memcpy",
        "Memset",
        "Wait",
        "launch",
        "alloc",
        "free",
        "sync",
    )
    listed = [n for n in build_ffi.KEEPS_GIL if any(w in n for w in queued_or_waiting)]
    assert listed == ["cc_pool_alloc_status"], listed  # a read of a thread-local status


def test_macro_names_each_wrapper():
    macro = build_ffi.keeps_gil_macro(("f", "g"))
    assert macro == (
        '#define CC_KEEPS_GIL(f) (__builtin_strcmp((f), "_cffi_f_f") == 0'
        ' || __builtin_strcmp((f), "_cffi_f_g") == 0)'
    )
    assert build_ffi.keeps_gil_macro(()) == "#define CC_KEEPS_GIL(f) (0)"


@pytest.mark.skipif(not CPYTHON, reason="PyPy calls the functions directly: no GIL macros")
def test_listed_call_keeps_the_gil_others_release_it(tmp_path):
    cffi = pytest.importorskip("cffi")
    if tuple(int(x) for x in cffi.__version__.split(".")[:2]) < (1, 16):
        pytest.skip("cffi older than 1.16 cannot build without the limited API")
    with open(os.path.join(build_ffi.SRC, "csrc", build_ffi.LAST_SOURCE)) as f:
        wrappers = f.read()
    ffi = cffi.FFI()
    ffi.cdef("int gil_held_kept(void); int gil_held_released(void);")
    ffi.set_source(
        "_keeps_gil_probe",
        "\n".join(
            [
                "static int gil_held_kept(void) { return PyGILState_Check(); }",
                "static int gil_held_released(void) { return PyGILState_Check(); }",
                build_ffi.keeps_gil_macro(("gil_held_kept",)),
                wrappers,
            ]
        ),
        # PyGILState_Check is outside the limited API cffi builds against.
        define_macros=[("_CFFI_NO_LIMITED_API", "1")],
        extra_compile_args=["-O2"],
    )
    ffi.compile(tmpdir=str(tmp_path))
    sys.path.insert(0, str(tmp_path))
    try:
        probe = importlib.import_module("_keeps_gil_probe")
    finally:
        sys.path.remove(str(tmp_path))
    assert probe.lib.gil_held_kept() == 1
    assert probe.lib.gil_held_released() == 0
