# SPDX-License-Identifier: Apache-2.0
"""Kernel-free GPU helpers shared by the stream and event tests."""

from __future__ import annotations

import numpy as np
import pytest
from _scripts.hardening_util import StreamBlocker

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


class Blocker(StreamBlocker):
    """A :class:`StreamBlocker` that skips the test where the wait is unavailable."""

    def __init__(self, stream):
        super().__init__(stream)
        if self.status:
            pytest.skip(f"cuStreamWaitValue32 on host memory is unavailable (status {self.status})")


def record_calls(monkeypatch, module, name):
    """Make ``module.name`` record the first argument of each call (then run it).

    Returns the list the arguments are appended to; ``monkeypatch`` restores
    the original at the end of the test.
    """
    calls = []
    real = getattr(module, name)

    def recording(arg, *rest):
        calls.append(arg)
        return real(arg, *rest)

    monkeypatch.setattr(module, name, recording)
    return calls
