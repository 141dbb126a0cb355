# SPDX-License-Identifier: Apache-2.0
"""``_ffi_types``: every C type string the library gives ``ffi`` is parsed before threads race.

PyPy's cffi can hand one thread the type another thread was parsing at the
same moment (and cache it).  cuda_core parses its literal type strings at
import (``TYPES``) and every type built at run time through ``ctype_of``,
under a lock.  These tests hold ``TYPES`` equal to the literals in the
source, keep run-time types on ``ctype_of``, and race ``ctype_of`` itself.
"""

from __future__ import annotations

import ast
import pathlib
import threading

import pytest
from _helpers import CHECKOUT

from cuda_core._cuda_ffi import ffi
from cuda_core._ffi_types import TYPES, ctype_of

ROOT = pathlib.Path(CHECKOUT) / "cuda_core"

#: ``ffi`` methods whose first argument may be a C type string.
PARSING = {"new", "cast", "typeof", "sizeof", "offsetof", "alignof", "callback", "new_allocator"}

#: First arguments that are not literals and not ``ctype_of(...)``, with why they are safe.
NOT_STRINGS = {
    ("system/_nvml.py", "_out_type(ctype)"): "a type from ctype_of, cached per name",
    ("system/_device.py", "states"): "a cdata array (its size)",
    ("system/_system.py", "info.branch"): "a cdata field (its size)",
}


def _type_arguments():
    """Yield ``(path, line, first-argument node)`` of every type-taking ``ffi`` call."""
    for path in sorted(ROOT.rglob("*.py")):
        if path.name == "_ffi_types.py":  # the parsing itself
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            func = node.func
            if not (isinstance(func.value, ast.Name) and func.value.id == "ffi") or not node.args:
                continue
            # from_buffer takes a type only as the first of two arguments.
            if func.attr in PARSING or (func.attr == "from_buffer" and len(node.args) == 2):
                yield path.relative_to(ROOT).as_posix(), node.lineno, node.args[0]


def test_types_lists_every_literal_in_the_source():
    literals = {
        arg.value
        for _, _, arg in _type_arguments()
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }
    missing = sorted(literals - set(TYPES))
    stale = sorted(set(TYPES) - literals)
    assert not missing, f"add to cuda_core/_ffi_types.py TYPES: {missing}"
    assert not stale, f"no longer used; remove from TYPES: {stale}"
    assert len(TYPES) == len(set(TYPES)) and list(TYPES) == sorted(TYPES)


def test_types_built_at_run_time_go_through_ctype_of():
    loose = []
    for path, line, arg in _type_arguments():
        if isinstance(arg, ast.Constant):
            continue
        if isinstance(arg, ast.Call) and getattr(arg.func, "id", None) == "ctype_of":
            continue
        if (path, ast.unparse(arg)) in NOT_STRINGS:
            continue
        loose.append(f"{path}:{line}: {ast.unparse(arg)}")
    assert not loose, "pass a type built at run time through ctype_of():\n" + "\n".join(loose)


@pytest.mark.parametrize("decl", TYPES)
def test_every_listed_type_parses(decl):
    assert ffi.typeof(decl) is ctype_of(decl)


def test_ctype_of_is_safe_across_threads():
    # Each thread asks for types no one has parsed yet, so every call parses:
    # without the lock, PyPy gives some thread another thread's type now and then.
    threads, per_thread = 8, 1500
    wrong, errors = [], []
    barrier = threading.Barrier(threads)

    def work(tid):
        try:
            barrier.wait(30)
            for i in range(per_thread):
                decl = f"{'char' if i % 2 else 'int'}[{1_000_003 + i * threads + tid}]"
                got = ctype_of(decl).cname
                if got != decl:
                    wrong.append((decl, got))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(60)
    assert not errors, errors
    assert not wrong, wrong[:5]
    assert ctype_of("int[1000003]") is ctype_of("int[1000003]")
