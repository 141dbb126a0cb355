# SPDX-License-Identifier: Apache-2.0
"""benchmarks/bench_soak.py: its bookkeeping and its exit without a GPU (the soak itself runs
on the GPU machine: ``python benchmarks/bench_soak.py --quick``)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from conftest import gpu_status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "bench_soak.py")


def _load():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("bench_soak_under_test", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    return module


def test_tracker_keeps_start_peak_and_end():
    soak = _load()
    values = iter([5, 9, 7, 6])
    t = soak.Tracker(x=lambda: next(values))
    for final in (False, False, False, True):
        t.sample(final=final)
    assert t.rows() == [("x", 5, 9, 6)]


def test_table_and_json_lines(tmp_path, monkeypatch, capsys):
    soak = _load()
    out = tmp_path / "soak.jsonl"
    monkeypatch.setenv("BENCH_JSON", str(out))
    mib = soak.MIB
    soak.print_table("graphs", 10, 1.5, [("host_rss", 100 * mib, 120 * mib, 101 * mib)])
    text = capsys.readouterr().out
    assert "graphs: 10 cycles in 1.5 s" in text
    assert "host_rss" in text and "+1.0" in text
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["benchmark"] == "soak" and record["unit"] == "MiB"
    assert record["results"] == {"start": 100.0, "peak": 120.0, "end": 101.0}


def test_without_a_gpu_it_says_so_and_exits_0():
    if gpu_status()[0]:
        import pytest

        pytest.skip("a GPU is present: the soak would run")
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--quick"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "soak: skipped" in proc.stdout
