# SPDX-License-Identifier: Apache-2.0
"""No write made after a discard is lost (``discard_batch``, ``ManagedBuffer.discard``).

With driver 580 a plain batch discard (``cuMemDiscardBatchAsync``)
followed by a stream synchronize still takes effect after a later write (a
device memset, or a write from the host), which is then lost.
``discard_batch`` therefore discards and prefetches to the stream's device
in one call (``_managed_memory_ops._discard``); the GPU test repeats the
rewrites many times and counts every lost range.
``tests/_scripts/managed_discard_rewrite.py`` and
``tests/_scripts/managed_discard_repro.c`` measure the same steps at length.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import CuMemAllocManagedResource, skip_without_managed_batch

from cuda_core import PER_THREAD_DEFAULT_STREAM, Host
from cuda_core._cuda_ffi import lib
from cuda_core._memory import _managed_memory_ops
from cuda_core.utils import discard_batch, prefetch_batch

SIZE = 4 << 20  # whole 2 MiB pages of their own
REPEATS = 25


def _host(buf):
    return np.asarray(buf).view(np.uint8)


def test_discard_is_made_with_the_combined_call(monkeypatch):
    """discard_batch calls cuMemDiscardAndPrefetchBatchAsync (to the stream's device), never
    cuMemDiscardBatchAsync alone."""
    from _helpers import FlagResource

    from cuda_core import Buffer
    from cuda_core._memory import _location

    calls = []

    class FakeLib:
        def __getattr__(self, name):
            return getattr(lib, name)

        def cuMemDiscardAndPrefetchBatchAsync(self, ptrs, sizes, n, locs, idxs, nlocs, fl, s):
            calls.append(("discard+prefetch", n, (locs[0].type, locs[0].id), nlocs))
            return 0

        def cuMemDiscardBatchAsync(self, *args):
            calls.append(("discard",))
            return 0

    class FakeStream:
        _handle = 0
        device = None

    monkeypatch.setattr(_managed_memory_ops, "lib", FakeLib())
    monkeypatch.setattr(_managed_memory_ops, "current_driver_version", lambda: 13000)
    monkeypatch.setattr(_managed_memory_ops, "location_pair", lambda dev: (1, 3))
    monkeypatch.setattr(_location, "current_driver_version", lambda: 13000)
    mr = FlagResource(host=True, managed=True, device_id=0)
    bufs = [Buffer._init(0x200000 * (i + 1), 4096, mr=mr) for i in range(3)]
    _managed_memory_ops._discard(bufs, FakeStream(), "discard")
    assert calls == [("discard+prefetch", 3, (1, 3), 1)]


@pytest.mark.gpu
def test_writes_after_discard_are_never_lost(device, stream):
    skip_without_managed_batch(device)
    mr = CuMemAllocManagedResource()
    lost = {"memset": 0, "host": 0, "single": 0}
    for _ in range(REPEATS):
        bufs = [mr.allocate(SIZE, stream=stream) for _ in range(4)]
        try:
            for b in bufs:
                _host(b)[:] = 0xAB
            prefetch_batch(stream, bufs, device)
            discard_batch(stream, bufs)
            stream.sync()
            for i, b in enumerate(bufs):
                b.fill(0x30 + i, stream=stream)
            prefetch_batch(stream, bufs, Host())
            stream.sync()
            lost["memset"] += sum(not (_host(b) == 0x30 + i).all() for i, b in enumerate(bufs))
            prefetch_batch(stream, bufs, device)
            discard_batch(stream, bufs)
            stream.sync()
            for i, b in enumerate(bufs):
                _host(b)[:] = 0x40 + i
            prefetch_batch(stream, bufs, device)
            prefetch_batch(stream, bufs, Host())
            stream.sync()
            lost["host"] += sum(not (_host(b) == 0x40 + i).all() for i, b in enumerate(bufs))
            bufs[0].discard(stream=stream)
            stream.sync()
            _host(bufs[0])[:] = 0x5C
            lost["single"] += int(not (_host(bufs[0]) == 0x5C).all())
        finally:
            for b in bufs:
                b.close(PER_THREAD_DEFAULT_STREAM)
    assert lost == {"memset": 0, "host": 0, "single": 0}, f"lost ranges in {REPEATS} repeats"
