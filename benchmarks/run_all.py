# SPDX-License-Identifier: Apache-2.0
"""Run every benchmark under each interpreter and write a combined report.

Usage::

    python benchmarks/run_all.py [--interp LABEL=PYTHON[:PYTHONPATH]]... [--out FILE]
                                 [--overwrite]

Each ``benchmarks/bench_*.py`` runs in its own process per interpreter (the
default is only the running one) with ``BENCH_JSON`` pointing at a results
file.  NVIDIA's ``cuda.core`` and CuPy exist only for CPython, so the report
puts each interpreter's cuda_core time beside the peers' times measured in
the same session and prints the ratios.  A markdown table goes to ``--out``
(default: a new ``benchmarks/results-<date>-<time>.md``) and, when
matplotlib is installed, a bar chart of the ratios next to it (``.png``).
The published ``benchmarks/RESULTS.md`` (with ``RESULTS.png`` and the raw
``results.jsonl``) is rewritten only with ``--overwrite``, or when ``--out``
/ ``--save-json`` names it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PUBLISHED = os.path.join(HERE, "RESULTS.md")
PUBLISHED_JSON = os.path.join(HERE, "results.jsonl")


def output_paths(out=None, save_json=None, overwrite=False, stamp=None):
    """Return ``(report, raw_json_or_None)``: where this run writes.

    Without ``out`` a new ``results-<stamp>.md`` next to the published report
    (never an existing file); ``overwrite`` makes the published files the
    default instead.
    """
    if overwrite:
        return out or PUBLISHED, save_json or PUBLISHED_JSON
    if out is None:
        stamp = stamp or time.strftime("%Y%m%d-%H%M%S")
        out = os.path.join(HERE, f"results-{stamp}.md")
        n = 1
        while os.path.exists(out):
            n += 1
            out = os.path.join(HERE, f"results-{stamp}-{n}.md")
    return out, save_json


def _parse_interp(text):
    label, _, rest = text.partition("=")
    python, _, path = rest.partition(":")
    if not label or not python:
        raise argparse.ArgumentTypeError(f"expected LABEL=PYTHON[:PYTHONPATH], got {text!r}")
    return label, python, path


def run_benchmarks(interps, only=None, timeout=600):
    """Run each benchmark script under each interpreter; return the rows."""
    rows = []
    scripts = sorted(glob.glob(os.path.join(HERE, "bench_*.py")))
    if only:
        scripts = [s for s in scripts if any(o in os.path.basename(s) for o in only)]
    for label, python, path in interps:
        for script in scripts:
            fd, out = tempfile.mkstemp(suffix=".jsonl")
            os.close(fd)
            env = dict(os.environ, BENCH_JSON=out, PYTHONUNBUFFERED="1")
            if path:
                env["PYTHONPATH"] = path
            print(f"--- {label}: {os.path.basename(script)}", flush=True)
            try:
                r = subprocess.run([python, script], env=env, timeout=timeout)
                if r.returncode:
                    print(f"    exited with {r.returncode}", flush=True)
            except subprocess.TimeoutExpired:
                print(f"    timed out after {timeout}s", flush=True)
            with open(out) as f:
                for line in f:
                    rec = json.loads(line)
                    rec["interpreter"] = label
                    rows.append(rec)
            os.unlink(out)
    return rows


def combine(rows):
    """Group rows by (benchmark, case): our time per interpreter + peer times."""
    table = {}
    for rec in rows:
        key = (rec["benchmark"], rec["case"])
        entry = table.setdefault(
            key, {"unit": rec.get("unit", "us"), "ours": {}, "peers": {}, "local": {}, "paired": {}}
        )
        for impl, ratio in rec.get("paired", {}).items():
            entry["paired"][(rec["interpreter"], impl)] = ratio
        for impl, value in rec["results"].items():
            if impl == "cuda_core":
                entry["ours"][rec["interpreter"]] = value
            else:
                entry["peers"].setdefault(impl, value)
                # A peer measured in this interpreter's own process (the C floor)
                # is what that interpreter's ratio uses.
                entry["local"][(rec["interpreter"], impl)] = value
    return table


# Peer columns shown (variants such as other C-floor flavours stay in the JSON),
# and the peers each interpreter's time is divided by.
SHOWN = ("cuda.core", "cuda.core hit", "cupy", "C floor", "raw NVRTC", "cold compile")
RATIOS = ("cuda.core", "cuda.core hit", "C floor", "raw NVRTC")


def to_markdown(table, interps):
    labels = [label for label, _, _ in interps]
    present = {p for e in table.values() for p in e["peers"]}
    peers = [p for p in SHOWN if p in present]
    ratio_peers = [p for p in RATIOS if p in present]
    head = ["benchmark", "case", "unit"] + [f"cuda_core ({lb})" for lb in labels] + peers
    ratio_cols = [f"{lb} / {p}" for lb in labels for p in ratio_peers]
    lines = [
        "| " + " | ".join(head + ratio_cols) + " |",
        "|" + "---|" * (len(head) + len(ratio_cols)),
    ]
    for (bench, case), e in sorted(table.items()):
        cells = [bench, case, e["unit"]]
        cells += [f"{e['ours'][lb]:.3f}" if lb in e["ours"] else "–" for lb in labels]
        cells += [f"{e['peers'][p]:.3f}" if p in e["peers"] else "–" for p in peers]
        for lb in labels:
            for p in ratio_peers:
                paired = e["paired"].get((lb, p))
                if paired is not None:  # measured in one process: the paired ratio
                    cells.append(f"{paired:.2f}")
                    continue
                o = e["ours"].get(lb)
                v = e["local"].get((lb, p), e["peers"].get(p))
                cells.append(f"{o / v:.2f}" if o and v else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(table, interps, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart written")
        return None
    names, series = [], {}
    for (bench, case), e in sorted(table.items()):
        peer = "cuda.core" if e["peers"].get("cuda.core") else "C floor"
        ref = e["peers"].get(peer)
        if not ref:
            continue
        names.append(f"{bench}\n{case}")
        for label, _, _ in interps:
            ratio = e["paired"].get((label, peer))
            if ratio is None:
                ratio = e["ours"].get(label, 0) / ref
            series.setdefault(label, []).append(ratio)
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(max(8, len(names) * 0.9), 5))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series.items()):
        ax.bar([x + i * width for x in range(len(names))], values, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(names))])
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("cuda_core time / reference (cuda.core, else C floor)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--interp", action="append", type=_parse_interp, default=[])
    ap.add_argument("--out", help="the report (default: a new benchmarks/results-<date>-<time>.md)")
    ap.add_argument(
        "--overwrite",
        action="store_true",
        help="update the published benchmarks/RESULTS.md and results.jsonl",
    )
    ap.add_argument("--only", action="append", help="run only scripts whose name contains this")
    ap.add_argument("--save-json", help="also write the raw results (JSON lines) here")
    ap.add_argument(
        "--from-json", help="do not run anything: rebuild the report from a --save-json file"
    )
    args = ap.parse_args(argv)
    args.out, args.save_json = output_paths(args.out, args.save_json, args.overwrite)
    interps = args.interp or [("this interpreter", sys.executable, "")]
    if args.from_json:
        with open(args.from_json) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        labels = []
        for rec in rows:
            if rec["interpreter"] not in labels:
                labels.append(rec["interpreter"])
        interps = [(label, "", "") for label in labels]
    else:
        rows = run_benchmarks(interps, args.only)
        if args.save_json:
            with open(args.save_json, "w") as f:
                f.writelines(json.dumps(rec) + "\n" for rec in rows)
    if not rows:
        print("no benchmark produced results (no GPU here?)")
        return 0
    table = combine(rows)
    md = to_markdown(table, interps)
    with open(args.out, "w") as f:
        f.write(
            "# Benchmark results\n\nEach row times one operation through cuda_core under "
            "each interpreter and through the peers (NVIDIA cuda.core and CuPy on CPython; "
            "'C floor' is the same driver call made from a C loop) in the same session. "
            "For times (us, ms) lower is better and a ratio below 1.0 means cuda_core is "
            "faster; for bandwidths (GB/s) higher is better. Where cuda_core and the peer "
            "ran in one process (CPython with cuda.core and CuPy, either interpreter with "
            "the C floor), the ratio is the median over the timing rounds of the two "
            "samples taken back to back in each round, which a drifting machine speed "
            "does not skew; otherwise it is the quotient of the times shown.\n\n" + md + "\n"
        )
    png = plot(table, interps, os.path.splitext(args.out)[0] + ".png")
    print(md)
    print(f"wrote {args.out}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
