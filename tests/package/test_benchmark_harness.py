# SPDX-License-Identifier: Apache-2.0
"""The benchmark harness's statistics and report (no GPU needed)."""

import os
import sys

import pytest
from _helpers import CHECKOUT

BENCH_DIR = os.path.join(CHECKOUT, "benchmarks")


@pytest.fixture(scope="module")
def harness():
    sys.path.insert(0, BENCH_DIR)
    try:
        import _harness
        import run_all

        yield _harness, run_all
    finally:
        sys.path.remove(BENCH_DIR)


def test_interleaved_keeps_every_round(harness):
    h, _ = harness
    values = {"cuda_core": iter([3.0, 1.0, 2.0]), "peer": iter([6.0, 2.0, 1.0])}
    timings = h.interleaved({k: (lambda it=it: next(it)) for k, it in values.items()}, rounds=3)
    assert dict(timings) == {"cuda_core": 1.0, "peer": 1.0}  # min of each
    assert timings.rounds == {"cuda_core": [3.0, 1.0, 2.0], "peer": [6.0, 2.0, 1.0]}


def test_paired_ratio_is_the_median_of_per_round_ratios(harness):
    h, _ = harness
    rounds = {"cuda_core": [1.0, 2.0, 4.0, 1.0], "peer": [2.0, 2.0, 2.0, 0.0], "other": [1.0]}
    ratios = h.paired_ratios(rounds)
    # Rounds with a zero peer sample are left out; zip stops at the shorter list.
    assert ratios == {"peer": 1.0, "other": 1.0}
    assert h.paired_ratios({"peer": [1.0]}) == {}


def test_report_saves_paired_ratios_and_run_all_prefers_them(harness, tmp_path, monkeypatch):
    h, run_all = harness
    path = tmp_path / "results.jsonl"
    monkeypatch.setenv("BENCH_JSON", str(path))
    # A drifting machine: the minimums alone would say 0.5; every round says 1.0.
    timings = h.Timings(
        {"cuda_core": 1.0, "cuda.core": 2.0},
        {"cuda_core": [1.0, 4.0, 4.0], "cuda.core": [1.0, 4.0, 2.0]},
    )
    h.report("device", "case", timings)
    h.report("device", "plain", {"cuda_core": 3.0, "cuda.core": 2.0})
    import json

    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[0]["paired"] == {"cuda.core": 1.0}
    assert "paired" not in rows[1]
    for row in rows:
        row["interpreter"] = "CPython"
    md = run_all.to_markdown(run_all.combine(rows), [("CPython", "", "")])
    lines = {line.split(" | ")[1]: line for line in md.splitlines()[2:]}
    assert lines["case"].endswith("| 1.00 |")  # the paired ratio
    assert lines["plain"].endswith("| 1.50 |")  # no rounds: the quotient of the times


def test_c_floor_loops_follow_the_build(harness, capsys):
    """The C floor loops are found when built in, else reported absent (None)."""
    from cuda_core._cuda_ffi import lib

    h, _ = harness
    names = ("cc_bench_launch_loop", "cc_bench_pool_loop")
    loops = h.c_floor_loops("bench_x", *names)
    out = capsys.readouterr().out
    if all(hasattr(lib, n) for n in names):
        assert loops == [getattr(lib, n) for n in names]
        assert out == ""
    else:
        assert loops is None
        assert "bench_x: C floor skipped" in out and "CUDA_CORE_BUILD_BENCH=1" in out


def test_c_floor_loops_absent_name_is_reported(harness, capsys):
    h, _ = harness
    assert h.c_floor_loops("bench_x", "cc_bench_no_such_loop") is None
    assert "C floor skipped" in capsys.readouterr().out


def test_run_all_writes_a_new_file_unless_told_to_overwrite(harness, tmp_path, monkeypatch):
    _, run_all = harness
    monkeypatch.setattr(run_all, "HERE", str(tmp_path))
    out, raw = run_all.output_paths(stamp="20250101-120000")
    assert out == str(tmp_path / "results-20250101-120000.md") and raw is None
    (tmp_path / "results-20250101-120000.md").write_text("an earlier run")
    out, _ = run_all.output_paths(stamp="20250101-120000")
    assert out == str(tmp_path / "results-20250101-120000-2.md")  # never an existing file
    assert run_all.output_paths(str(tmp_path / "mine.md"), "raw.jsonl") == (
        str(tmp_path / "mine.md"),
        "raw.jsonl",
    )
    # The published report is rewritten only on request (or when --out names it).
    assert run_all.output_paths(overwrite=True) == (run_all.PUBLISHED, run_all.PUBLISHED_JSON)
    assert run_all.PUBLISHED.endswith(os.path.join("benchmarks", "RESULTS.md"))
    assert run_all.PUBLISHED_JSON.endswith(os.path.join("benchmarks", "results.jsonl"))
    # A report rebuilt from the published raw results lands in a new file.
    with open(run_all.PUBLISHED) as f:
        published = f.read()
    assert run_all.main(["--from-json", run_all.PUBLISHED_JSON]) == 0
    written = [p for p in os.listdir(tmp_path) if p.endswith(".md") and "2025" not in p]
    assert len(written) == 1 and written[0].startswith("results-"), written
    assert "pool allocate+close 1 MiB |" in (tmp_path / written[0]).read_text()
    with open(run_all.PUBLISHED) as f:
        assert f.read() == published


def test_ab_table_pairs_the_trees_by_round(tmp_path, capsys):
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location(
        "_ab_table", os.path.join(BENCH_DIR, "ab_table.py")
    )
    ab_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab_table)

    def write(name, pypy_us, cp_us, paired):
        recs = [
            {"interpreter": "PyPy", "benchmark": "b", "case": "c", "unit": "us",
             "results": {"cuda_core": pypy_us}},
            {"interpreter": "CPython", "benchmark": "b", "case": "c", "unit": "us",
             "results": {"cuda_core": cp_us, "cuda.core": 1.0}, "paired": {"cuda.core": paired}},
        ]  # fmt: skip
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return str(path)

    # Round 2 ran slower as a whole: the medians of the times move, the
    # per-round quotients (1.0 and 1.1 for PyPy) do not.
    paths = [
        write("base-1.jsonl", 1.0, 2.0, 1.00),
        write("new-1.jsonl", 1.0, 2.2, 1.10),
        write("base-2.jsonl", 2.0, 2.0, 1.00),
        write("new-2.jsonl", 2.2, 2.0, 1.00),
    ]
    assert ab_table._round_of(paths[1]) == 1 and ab_table._round_of("x.jsonl") is None
    assert ab_table.main(paths) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("| per round after/before |")
    cells = {line.split(" | ")[0]: line.split(" | ") for line in lines[2:]}
    pypy, cpython = cells["| PyPy"], cells["| CPython"]
    assert pypy[4:7] == ["1.500", "1.600", "1.067 **"]  # medians of the times
    assert pypy[-1] == "1.050 (1.00–1.10) |"
    assert cpython[7:10] == ["cuda.core: 1.000", "1.050", "1.050 **"]  # the paired medians
    assert cpython[-1] == "1.050 (1.00–1.10) |"


def test_ab_table_pairs_pypy_with_the_bare_calls(tmp_path, capsys):
    # The pool rows' "bare calls" peer pairs a PyPy row that has no cuda.core:
    # a process running slower as a whole moves the times, not the pairing.
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location(
        "_ab_table", os.path.join(BENCH_DIR, "ab_table.py")
    )
    ab_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab_table)
    paths = []
    for name, us, paired in (("base-1", 0.7, 1.10), ("new-1", 1.4, 1.08)):
        rec = {"interpreter": "PyPy", "benchmark": "memory", "case": "pool", "unit": "us",
               "results": {"cuda_core": us, "bare calls": us / paired},
               "paired": {"bare calls": paired}}  # fmt: skip
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps(rec) + "\n")
        paths.append(str(path))
    assert ab_table.main(paths) == 0
    row = capsys.readouterr().out.splitlines()[2].split(" | ")
    assert row[6] == "2.000"  # the times' quotient, with no flag: the row is paired
    assert row[7:10] == ["bare calls: 1.100", "1.080", "0.982"]
