# SPDX-License-Identifier: Apache-2.0
"""cuda_core.install_as_cuda_core(): ``import cuda.core`` gives cuda_core.

Each case runs in a fresh interpreter (the one running the tests, so CPython
and PyPy both), since the call changes ``sys.modules`` for the whole process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _scripts.hardening_util import package_root
from conftest import gpu_status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SUBMODULES = [
    "utils",
    "graph",
    "system",
    "system.typing",
    "system.exceptions",
    "texture",
    "checkpoint",
    "typing",
]


def _run(code, *extra_path, timeout=120, check=True):
    env = dict(os.environ)
    path = [*extra_path, package_root(), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _result(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_imports_give_cuda_cores_objects():
    code = f"""
import json, sys
import cuda_core
cuda_core.install_as_cuda_core()
from cuda.core import Device, Program, launch
from cuda.core.utils import StridedMemoryView
import cuda.core
out = {{
    "core": cuda.core is cuda_core,
    "names": [Device is cuda_core.Device, Program is cuda_core.Program,
              launch is cuda_core.launch,
              StridedMemoryView is cuda_core.utils.StridedMemoryView],
    "subs": {{}},
}}
for name in {SUBMODULES!r}:
    __import__("cuda.core." + name)
    mine = sys.modules["cuda_core." + name]
    out["subs"][name] = [sys.modules["cuda.core." + name] is mine,
                         eval("cuda.core." + name) is mine]
print(json.dumps(out))
"""
    out = _result(_run(code))
    assert out["core"] is True
    assert out["names"] == [True, True, True, True]
    assert out["subs"] == {name: [True, True] for name in SUBMODULES}


def test_calling_twice_is_harmless():
    code = """
import json, sys
import cuda_core
cuda_core.install_as_cuda_core()
first = dict((k, v) for k, v in sys.modules.items() if k.startswith("cuda.core"))
cuda_core.install_as_cuda_core()
again = dict((k, v) for k, v in sys.modules.items() if k.startswith("cuda.core"))
import cuda.core.graph as g
print(json.dumps([first == again, g is cuda_core.graph, len(first) >= 9]))
"""
    assert _result(_run(code)) == [True, True, True]


def test_keeps_an_installed_cuda_namespace_package(tmp_path):
    # A stand-in for cuda-bindings / cuda-pathfinder: ``cuda`` is a namespace
    # package (no __init__.py) with subpackages of other distributions.
    for sub, value in (("bindings", 1), ("pathfinder", 2)):
        pkg = tmp_path / "cuda" / sub
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(f"VALUE = {value}\n")
    code = """
import json, sys
import cuda_core
cuda_core.install_as_cuda_core()
import cuda.bindings, cuda.pathfinder
from cuda.core import Device
import cuda
print(json.dumps([cuda.bindings.VALUE, cuda.pathfinder.VALUE, Device is cuda_core.Device,
                  cuda.core is cuda_core, hasattr(cuda, "__path__")]))
"""
    assert _result(_run(code, str(tmp_path))) == [1, 2, True, True, True]


def test_without_any_cuda_package():
    code = """
import json, sys
import cuda_core
cuda_core.install_as_cuda_core()
import cuda, cuda.core
from cuda.core.system import typing as st
print(json.dumps([cuda.core is cuda_core, st is cuda_core.system.typing]))
"""
    assert _result(_run(code)) == [True, True]


def test_refuses_when_the_real_cuda_core_is_imported(tmp_path):
    pkg = tmp_path / "cuda" / "core"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("REAL = True\n")
    code = """
import cuda.core
import cuda_core
try:
    cuda_core.install_as_cuda_core()
except RuntimeError as exc:
    print("REFUSED", exc)
else:
    print("INSTALLED")
import cuda.core
print("STILL_REAL", getattr(cuda.core, "REAL", False))
"""
    out = _run(code, str(tmp_path)).stdout
    assert "REFUSED" in out and "already imported" in out
    assert "install_as_cuda_core() before" in out
    assert "STILL_REAL True" in out


def test_documented_in_readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert "cuda_core.install_as_cuda_core()" in text


@pytest.mark.gpu
def test_example_runs_through_cuda_core_names():
    """One of our examples, its imports rewritten to ``cuda.core``, runs after the call."""
    available, reason = gpu_status()
    if not available:
        pytest.skip(reason)
    with open(os.path.join(ROOT, "examples", "vector_add.py"), encoding="utf-8") as f:
        source = f.read()
    assert "from cuda_core import" in source
    source = source.replace("from cuda_core import", "from cuda.core import")
    code = (
        "import cuda_core\n"
        "cuda_core.install_as_cuda_core()\n"
        "import sys\n"
        "sys.argv = ['vector_add.py']\n"
        "env = {'__name__': '__main__', '__file__': 'examples/vector_add.py'}\n"
        f"exec(compile({source!r}, 'vector_add.py', 'exec'), env)\n"
        "import cuda.core\n"
        "assert cuda.core is cuda_core\n"
    )
    proc = _run(code, timeout=300)
    output = proc.stdout + proc.stderr
    assert output.startswith("vector_add:"), output
    assert " OK" in output and "FAILED" not in output, output
