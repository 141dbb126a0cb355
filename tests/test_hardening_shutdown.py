# SPDX-License-Identifier: Apache-2.0
"""Interpreter shutdown with live CUDA objects: exit 0, no crash, no error spam.

``tests/_scripts/shutdown.py`` creates streams, events, buffers of every
memory resource, graphs (completed, still capturing, explicit definitions),
modules, programs and linkers, and exits without closing any of them, in
four ways (module globals, reference cycles with the collector disabled,
work still queued, ``sys.exit`` from a function).  On every interpreter the
process must exit with status 0 and write nothing to stderr (no
"Exception ignored in", no warnings, no segfault).
"""

from __future__ import annotations

import pytest
from _scripts.hardening_util import run_scripts

pytestmark = pytest.mark.gpu

MODES = ("globals", "cycles", "pending", "sys_exit")
MUST_HAVE = {
    "stream",
    "event",
    "default_pool_buffer",
    "owned_pool",
    "legacy_pinned_buffer",
    "object_code",
    "kernels",
    "graph",
    "graph_builder_capturing",
    "program",
    "linker",
}


@pytest.fixture(scope="module")
def outcomes():
    """Run the four scenarios at once, each in its own interpreter."""
    return run_scripts({mode: ("shutdown.py", mode) for mode in MODES}, timeout=180)


@pytest.mark.parametrize("mode", MODES)
def test_exit_with_live_objects_is_clean(outcomes, mode):
    proc, result = outcomes[mode]
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}"
    assert result is not None, f"the script did not get to the end\n{detail}"
    assert MUST_HAVE <= set(result["made"]), result["made"]
    assert proc.returncode == 0, detail
    assert proc.stderr.strip() == "", f"stderr is not empty at exit:\n{detail}"
