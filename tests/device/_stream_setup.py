# SPDX-License-Identifier: Apache-2.0
"""A foreign stream object and the priority range, shared by the stream tests."""

from __future__ import annotations

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check

ENV = "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"


class Foreign:
    """A foreign stream object implementing the ``__cuda_stream__`` protocol."""

    def __init__(self, address, version=0):
        self.address = address
        self.version = version

    def __cuda_stream__(self):
        return (self.version, self.address)


# ---------------------------------------------------------------- helpers (GPU)
def _priority_range():
    least, greatest = ffi.new("int *"), ffi.new("int *")
    check(lib.cuCtxGetStreamPriorityRange(least, greatest))
    return least[0], greatest[0]
