# SPDX-License-Identifier: Apache-2.0
"""Kernel-free GPU helpers shared by the stream and event tests."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check


class RawBuffer:
    """A raw cuMemAlloc allocation of ``n`` uint32 values (kernel-free GPU work)."""

    def __init__(self, n):
        self.n = n
        out = ffi.new("CUdeviceptr *")
        check(lib.cuMemAlloc(out, 4 * n))
        self.ptr = out[0]

    def fill(self, value, stream, repeat=1):
        for _ in range(repeat):
            check(lib.cuMemsetD32Async(self.ptr, value, self.n, stream._handle))

    def to_host(self, stream):
        host = np.zeros(self.n, dtype=np.uint32)
        check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(host), self.ptr, 4 * self.n, stream._handle))
        return host

    def free(self):
        check(lib.cuMemFree(self.ptr))


class Blocker:
    """Hold a stream at a ``cuStreamWaitValue32`` until :meth:`release` (host-mapped flag).

    Both :meth:`release` and :meth:`free` may be called more than once.
    """

    def __init__(self, stream):
        out = ffi.new("void **")
        check(lib.cuMemHostAlloc(out, 4, lib.CU_MEMHOSTALLOC_DEVICEMAP))
        self.host = out[0]
        self.word = ffi.cast("uint32_t *", self.host)
        self.word[0] = 0
        dptr = ffi.new("CUdeviceptr *")
        check(lib.cuMemHostGetDevicePointer(dptr, self.host, 0))
        status = lib.cuStreamWaitValue32(stream._handle, dptr[0], 1, 0)  # 0: WAIT_VALUE_GEQ
        if status:
            check(lib.cuMemFreeHost(self.host))
            pytest.skip(f"cuStreamWaitValue32 on host memory is unavailable (status {status})")
        self.released = False
        self.freed = False

    def release(self):
        if not self.released:
            self.word[0] = 1
            self.released = True

    def free(self):
        if not self.freed:
            self.release()
            check(lib.cuCtxSynchronize())
            check(lib.cuMemFreeHost(self.host))
            self.freed = True
