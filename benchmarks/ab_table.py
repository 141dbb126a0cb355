# SPDX-License-Identifier: Apache-2.0
"""Compare the results of ``ab_rounds.sh``: cuda_core before against after.

Usage::

    tar -xf OUT/ab-rounds.tar -C DIR
    python benchmarks/ab_table.py DIR/*.jsonl

Without any "before" file (``AB_NEW_ONLY=1``) it prints, for each
interpreter and case, cuda_core's time and its paired ratio to each peer as
min / median / max over the rounds instead.

Files whose name contains ``base`` are "before", the others "after".  For
each interpreter and case it prints the median of cuda_core's time over the
rounds before and after and their quotient (bandwidths inverted, so that
above 1 is always slower), then the median paired ratio against a peer
measured in the same process, before and after, and the quotient of those.
The paired quotient is the one to read where there is a peer: a process
that runs slower as a whole slows the peer alike, while the times of the
same code differ by more than the 3% of interest from one process to the
next.  ``**`` marks a quotient above 1.03: the paired one where there is a
peer, otherwise the times'.  The last column pairs the trees by round
instead (``base-N`` with ``new-N``, run back to back): cuda_core's time
after ÷ before in each round, as median (min–max) over the rounds, which
shows how far the rounds scatter where there is no peer (PyPy).
"""

from __future__ import annotations

import collections
import json
import os
import re
import statistics
import sys

PEERS = ("cuda.core", "C floor", "cuda.core hit", "bare calls")


def _round_of(path):
    """The round number in a file name such as ``new-3.jsonl`` (None without one)."""
    m = re.search(r"-(\d+)\.jsonl$", os.path.basename(path))
    return int(m.group(1)) if m else None


def _load(paths):
    rows = collections.defaultdict(list)
    for path in paths:
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                rec["_round"] = _round_of(path)
                rows[(rec["interpreter"], rec["benchmark"], rec["case"])].append(rec)
    return rows


def _by_round(base_recs, new_recs, inverted):
    """``median (min–max)`` of after ÷ before per round, or ``–`` where no round pairs."""
    before = {r["_round"]: r["results"]["cuda_core"] for r in base_recs if r["_round"]}
    ratios = [
        (before[r["_round"]] / r["results"]["cuda_core"])
        if inverted
        else (r["results"]["cuda_core"] / before[r["_round"]])
        for r in new_recs
        if r["_round"] in before
    ]
    if not ratios:
        return "–"
    return f"{statistics.median(ratios):.3f} ({min(ratios):.2f}–{max(ratios):.2f})"


def _paired(recs, peer):
    return [r["paired"][peer] for r in recs if r.get("paired", {}).get(peer)]


def _spread(values, digits):
    """``median (min–max, count)`` of ``values``."""
    v = sorted(values)
    return f"{statistics.median(v):.{digits}f} ({v[0]:.{digits}f}–{v[-1]:.{digits}f}, {len(v)})"


def _rounds_table(new):
    """One tree's rounds: time and paired ratio to each peer, median (min–max, rounds)."""
    print("| interpreter | benchmark | case | unit | cuda_core | ratios to peers (paired) |")
    print("|---|---|---|---|---|---|")
    for key in sorted(new):
        recs = new[key]
        unit = recs[0].get("unit", "us")
        times = _spread([r["results"]["cuda_core"] for r in recs], 3)
        peers = sorted({p for r in recs for p in r.get("paired", {})})
        ratios = "; ".join(
            f"{p}: {_spread(_paired(recs, p), 3)}" for p in peers if _paired(recs, p)
        )
        print(f"| {key[0]} | {key[1]} | {key[2]} | {unit} | {times} | {ratios or '–'} |")
    return 0


def main(argv):
    base = _load([p for p in argv if "base" in p])
    new = _load([p for p in argv if "base" not in p])
    if not base:
        return _rounds_table(new)
    head = ("interpreter", "benchmark", "case", "unit", "before", "after", "after/before")
    tail = ("paired before", "after", "after/before", "per round after/before")
    print("| " + " | ".join(head + tail) + " |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(set(base) & set(new)):
        before = statistics.median(r["results"]["cuda_core"] for r in base[key])
        after = statistics.median(r["results"]["cuda_core"] for r in new[key])
        unit = new[key][0].get("unit", "us")
        q = before / after if unit == "GB/s" else after / before
        peer_cells, paired = "– | – | –", False
        for peer in PEERS:
            pb, pa = _paired(base[key], peer), _paired(new[key], peer)
            if pb and pa:
                mb, ma = statistics.median(pb), statistics.median(pa)
                paired = True
                flag = " **" if ma / mb > 1.03 else ""
                peer_cells = f"{peer}: {mb:.3f} | {ma:.3f} | {ma / mb:.3f}{flag}"
                break
        flag = " **" if not paired and q > 1.03 else ""
        rounds = _by_round(base[key], new[key], unit == "GB/s")
        print(
            f"| {key[0]} | {key[1]} | {key[2]} | {unit} | {before:.3f} | {after:.3f} "
            f"| {q:.3f}{flag} | {peer_cells} | {rounds} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
