# SPDX-License-Identifier: Apache-2.0
"""The process being checkpointed (run by checkpoint_coordinator.py).

Allocates device memory, fills it with a pattern, prints ``READY``, then
waits for one line on stdin (the coordinator has locked, checkpointed,
restored and unlocked it meanwhile), reads the memory back and prints
``INTACT`` or ``CORRUPT``; exits 0 only when the pattern survived.
"""

from __future__ import annotations

import sys

import numpy as np

from cuda_core import Device, LegacyPinnedMemoryResource

N = 1 << 20  # int32 elements


def main():
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    pattern = (np.arange(N, dtype=np.int64) * 2654435761 % 2**31).astype(np.int32)
    host_mr = LegacyPinnedMemoryResource()
    staging = host_mr.allocate(pattern.nbytes)
    np.asarray(staging).view(np.int32)[:] = pattern
    buf = dev.allocate(pattern.nbytes, stream=stream)
    buf.copy_from(staging, stream=stream)
    stream.sync()
    np.asarray(staging).view(np.int32)[:] = 0
    print("READY", flush=True)
    sys.stdin.readline()
    buf.copy_to(staging, stream=stream)
    stream.sync()
    ok = np.array_equal(np.asarray(staging).view(np.int32), pattern)
    print("INTACT" if ok else "CORRUPT", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
