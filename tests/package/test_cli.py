# SPDX-License-Identifier: Apache-2.0
"""``python -m cuda_core``: --help, --version, and --check for scripts and CI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _scripts.hardening_util import package_root

import cuda_core
import cuda_core.__main__ as cli
from cuda_core._version import UPSTREAM_VERSION


def _run(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root(), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "cuda_core", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_help_names_the_options_and_exits_0():
    r = _run("--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: python -m cuda_core")
    for word in ("--check", "--version", "NVRTC", "cuda-core-cffi[cu13]"):
        assert word in r.stdout


def test_version_prints_both_versions():
    r = _run("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (
        f"cuda_core {cuda_core.__version__} (the API of NVIDIA cuda.core {UPSTREAM_VERSION})"
    )


def test_unknown_option_is_a_usage_error():
    r = _run("--no-such-option")
    assert r.returncode == 2
    assert "unrecognized arguments: --no-such-option" in r.stderr


def test_report_exits_0_whatever_is_found():
    r = _run()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"cuda_core {cuda_core.__version__}")
    assert "check " not in r.stdout  # no verdict without --check


def test_check_agrees_with_the_report():
    r = _run("--check")
    problems = []
    cli._report(problems)
    if problems:
        assert r.returncode == 1, r.stdout + r.stderr
        assert r.stdout.rstrip().splitlines()[-1].startswith("check failed: ")
    else:
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.rstrip().endswith("check passed: CUDA driver, GPU and NVRTC usable")


def _fake_report(monkeypatch, *, nvrtc, driver, gpus):
    """Make the report see the given libraries, driver and GPU count, without a GPU."""
    from cuda_core._errors import LibraryNotFoundError

    def ensure_loaded(name):
        if name == "nvrtc" and not nvrtc:
            raise LibraryNotFoundError("NVRTC could not be found. Fix: do X")

    def gpu_lines(problems=None):
        if not driver:
            problems.append("no CUDA driver")
            return ["  no CUDA driver found: x"], None
        if not gpus:
            problems.append("no GPU")
        return [f"  GPUs       {gpus}"], "13.0"

    monkeypatch.setattr(cli, "ensure_loaded", ensure_loaded)
    monkeypatch.setattr(cli, "library_path", lambda name: "/x")
    monkeypatch.setattr(cli, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(cli, "nvjitlink_version", lambda: (13, 0))
    monkeypatch.setattr(cli, "nvvm_version", lambda: (2, 0))
    monkeypatch.setattr(cli, "_gpu_lines", gpu_lines)
    monkeypatch.setattr(cli, "_nvml_lines", lambda: ["  NVML not found"])


@pytest.mark.parametrize(
    ("nvrtc", "driver", "gpus", "failure"),
    [
        (True, True, 1, None),
        (False, True, 1, "NVRTC not found"),
        (True, False, 0, "no CUDA driver"),
        (True, True, 0, "no GPU"),
        (False, False, 0, "NVRTC not found; no CUDA driver"),
    ],
)
def test_check_exit_status(monkeypatch, capsys, nvrtc, driver, gpus, failure):
    _fake_report(monkeypatch, nvrtc=nvrtc, driver=driver, gpus=gpus)
    assert cli.main([]) == 0  # the plain report never fails
    capsys.readouterr()
    rc = cli.main(["--check"])
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    if failure is None:
        assert rc == 0 and last.startswith("check passed")
    else:
        assert rc == 1 and last == f"check failed: {failure}"
