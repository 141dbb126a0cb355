# SPDX-License-Identifier: Apache-2.0
"""The launch examples run as scripts: they check their results against NumPy
on a GPU and exit 0 with a "skipped" message without one."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _helpers import CHECKOUT
from _scripts.hardening_util import package_root
from conftest import gpu_status

ROOT = CHECKOUT
EXAMPLES = [
    "vector_add",
    "saxpy",
    "matmul_tiled",
    "thread_block_cluster",
    "cooperative_grid_sync",
    "streams_events",
    "texture_sampling",
    "tma_tile_copy",
]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example(name):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root(), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", f"{name}.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert output.startswith(f"{name}:"), output
    if gpu_status()[0]:
        assert " OK" in output or "skipped" in output, output
        assert "FAILED" not in output, output
    else:
        assert f"{name}: skipped" in output, output
