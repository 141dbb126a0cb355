# SPDX-License-Identifier: Apache-2.0
"""Discard managed ranges through cuda_core, rewrite them, count lost writes.

    python managed_discard_rewrite.py [--plain] [--iterations N] [--seconds S]

Each iteration allocates four 4 MiB managed ranges (``cuMemAllocManaged``),
and runs the steps of ``test_discard_batch_then_rewrite``:

* ``memset``: fill from the host, prefetch to the device, ``discard_batch``,
  ``stream.sync()``, ``Buffer.fill`` on the stream, prefetch to the host,
  sync, check every byte;
* ``host``: the same with the rewrite made from the host after the sync;
* ``single``: ``ManagedBuffer.discard``, sync, a host write, read at once.

``--plain`` discards with ``cuMemDiscardBatchAsync`` alone
(``_managed_memory_ops._PLAIN_DISCARD``: the behaviour before the fix, and
``cuda.core``'s).  Prints ``RESULT {json}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.dirname(_TESTS), _TESTS]  # the checkout, and tests/ for _helpers

import numpy as np  # noqa: E402
from _helpers import CuMemAllocManagedResource  # noqa: E402

from cuda_core import Device, Host  # noqa: E402
from cuda_core._memory import _managed_memory_ops  # noqa: E402
from cuda_core.utils import discard_batch, prefetch_batch  # noqa: E402

SIZE = 4 << 20


def _host(buf):
    return np.asarray(buf).view(np.uint8)


def _lost(bufs, base):
    return sum(1 for i, b in enumerate(bufs) if not (_host(b) == base + i).all())


def _fill_and_discard(stream, bufs, dev):
    """Fill ``bufs`` from the host, prefetch them to ``dev``, discard them and synchronize."""
    for b in bufs:
        _host(b)[:] = 0xAB
    prefetch_batch(stream, bufs, dev)
    discard_batch(stream, bufs)
    stream.sync()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plain", action="store_true", help="cuMemDiscardBatchAsync alone")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=1e9)
    args = ap.parse_args()
    _managed_memory_ops._PLAIN_DISCARD = args.plain
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    mr = CuMemAllocManagedResource()
    lost = {"memset": 0, "host": 0, "single": 0}
    t0 = time.monotonic()
    done = 0
    while done < args.iterations and time.monotonic() - t0 < args.seconds:
        bufs = [mr.allocate(SIZE, stream=stream) for _ in range(4)]
        # memset
        _fill_and_discard(stream, bufs, dev)
        for i, b in enumerate(bufs):
            b.fill(0x30 + i, stream=stream)
        prefetch_batch(stream, bufs, Host())
        stream.sync()
        lost["memset"] += _lost(bufs, 0x30)
        # host
        _fill_and_discard(stream, bufs, dev)
        for i, b in enumerate(bufs):
            _host(b)[:] = 0x40 + i
        prefetch_batch(stream, bufs, dev)
        prefetch_batch(stream, bufs, Host())
        stream.sync()
        lost["host"] += _lost(bufs, 0x40)
        # single
        bufs[0].discard(stream=stream)
        stream.sync()
        _host(bufs[0])[:] = 0x5C
        lost["single"] += int(not (_host(bufs[0]) == 0x5C).all())
        stream.sync()
        for b in bufs:
            b.close(stream)
        done += 1
    result = {
        "discard": "plain" if args.plain else "discard+prefetch",
        "iterations": done,
        "ranges_per_iteration": {"memset": 4, "host": 4, "single": 1},
        "lost_ranges": lost,
        "seconds": round(time.monotonic() - t0, 2),
        "interpreter": sys.implementation.name,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
