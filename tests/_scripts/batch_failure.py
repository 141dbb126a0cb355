# SPDX-License-Identifier: Apache-2.0
"""Give ``copy_batch`` one copy the driver must refuse and report the error.

The bad copy's destination claims 64 MiB at the start of a 4 KiB
``cuMemAlloc`` allocation, so the range runs past the end of the
allocation.  Runs in its own interpreter (a copy the driver did not refuse
could fault and poison the context).  Prints one ``RESULT {json}`` line:
``{"copy_batch": outcome, "after": outcome, "bad_index", "bad_dst", "count"}``.
Run by tests/test_copy_batch.py.
"""

from __future__ import annotations

import numpy as np
from hardening_util import emit, outcome

from cuda_core import Buffer, Device, LegacyPinnedMemoryResource
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.utils import copy_batch

COUNT = 8
BAD = 5
SIZE = 4096
BIG = 64 << 20


def main():
    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    srcs = [dev.allocate(SIZE, stream=s) for _ in range(COUNT)]
    dsts = [dev.allocate(SIZE, stream=s) for _ in range(COUNT)]
    for i, buf in enumerate(srcs):
        buf.fill(i + 1, stream=s)
    big_src = dev.allocate(BIG, stream=s)
    small = ffi.new("CUdeviceptr *")
    check(lib.cuMemAlloc(small, SIZE))
    bad_dst = Buffer.from_handle(int(small[0]), BIG)
    s.sync()
    batch_srcs = list(srcs)
    batch_dsts = list(dsts)
    batch_srcs[BAD] = big_src
    batch_dsts[BAD] = bad_dst
    failed = outcome(lambda: copy_batch(s, batch_srcs, batch_dsts))

    def good_batch():
        copy_batch(s, srcs, dsts)
        host = LegacyPinnedMemoryResource().allocate(SIZE)
        view = np.asarray(host).view(np.uint8)
        seen = []
        for buf in dsts:
            buf.copy_to(host, stream=s)
            s.sync()
            seen.append(int(view[0]) if (view == view[0]).all() else -1)
        host.close()
        if seen != list(range(1, COUNT + 1)):
            raise AssertionError(f"copied values {seen}")
        return seen

    after = outcome(good_batch)
    emit(
        {
            "copy_batch": failed,
            "after": after,
            "bad_index": BAD,
            "bad_dst": int(small[0]),
            "count": COUNT,
        }
    )


if __name__ == "__main__":
    main()
