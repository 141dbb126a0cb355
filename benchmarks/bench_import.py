# SPDX-License-Identifier: Apache-2.0
"""Import-time benchmark: ``import cuda_core`` in a fresh interpreter.

Cases, each timed as the wall time of a new process running ``python -c
STATEMENT`` (interpreter start-up included), the minimum and median of
``--runs`` processes, the implementations taking turns:

* ``import cuda_core`` vs ``import cuda.core`` (where importable) and vs
  ``import numpy`` (a familiar yardstick);
* ``from cuda_core import Device, LaunchConfig, Program, ProgramOptions, launch``
  (what a typical script names) vs the same from ``cuda.core``;
* ``pass`` (the interpreter alone), so the import's own share can be read off.

Byte code is written before timing (one untimed run each), so the numbers
are warm-cache imports, as a user sees them after the first.  Needs no GPU.
Run: ``python benchmarks/bench_import.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

from _harness import IMPL, report  # noqa: E402

BENCH = "import"
_TYPICAL = "Device, LaunchConfig, Program, ProgramOptions, launch"


def _env():
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time imports from byte code, as users see them
    path = [os.path.dirname(_HERE)]  # the source tree above, as the other benchmarks use
    if env.get("PYTHONPATH"):
        path.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def _run(statement, env):
    """Return the wall time (ms) of a new interpreter running ``statement``; None if it failed."""
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", statement],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    dt = (time.perf_counter() - t0) * 1e3
    return dt if r.returncode == 0 else None


def _case(name, statements, env, runs):
    """Time each of ``statements`` ({label: code}) ``runs`` times, interleaved; report them."""
    usable = {}
    for label, code in statements.items():
        if _run(code, env) is not None:  # also writes the byte code
            usable[label] = code
    samples = {label: [] for label in usable}
    labels = list(usable)
    for r in range(runs):
        k = r % len(labels) if labels else 0
        for label in labels[k:] + labels[:k]:
            dt = _run(usable[label], env)
            if dt is not None:
                samples[label].append(dt)
    samples = {label: values for label, values in samples.items() if values}
    if "cuda_core" not in samples:
        print(f"[{IMPL}] {BENCH} | {name}: cuda_core failed to import")
        return
    report(BENCH, f"{name} (min)", {label: min(v) for label, v in samples.items()}, unit="ms")
    report(
        BENCH,
        f"{name} (median)",
        {label: statistics.median(v) for label, v in samples.items()},
        unit="ms",
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="processes per statement (default 15)")
    args = parser.parse_args(argv)
    env = _env()
    _case(
        "import cuda_core",
        {
            "cuda_core": "import cuda_core",
            "cuda.core": "import cuda.core",
            "numpy": "import numpy",
            "interpreter alone": "pass",
        },
        env,
        args.runs,
    )
    _case(
        "from cuda_core import " + _TYPICAL,
        {
            "cuda_core": f"from cuda_core import {_TYPICAL}",
            "cuda.core": f"from cuda.core import {_TYPICAL}",
        },
        env,
        args.runs,
    )


if __name__ == "__main__":
    main()
