# SPDX-License-Identifier: Apache-2.0
"""The README's example runs as written (launching where a GPU is present)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from _helpers import CHECKOUT
from _scripts.hardening_util import package_root
from conftest import gpu_status

ROOT = CHECKOUT


def _readme_example():
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    return next(b for b in blocks if "launch(" in b)


def test_readme_example_runs(tmp_path):
    script = tmp_path / "readme_example.py"
    script.write_text(_readme_example())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root(), env.get("PYTHONPATH")) if p)
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env
    )
    assert "cubin" in r.stdout and "bytes" in r.stdout, r.stdout + r.stderr
    if gpu_status()[0]:
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
    else:
        assert r.returncode == 1  # SystemExit with the reason
        assert "no GPU here" in r.stderr
