# SPDX-License-Identifier: Apache-2.0
"""Kernels, helpers and a recording memory resource shared by the graph conformance tests."""

from __future__ import annotations

import gc
import time

import pytest
from _graph_setup import _pinned, _view  # noqa: F401 (re-exported to the conformance tests)
from _helpers import HostOnlyResource

from cuda_core import (
    LaunchConfig,
    Program,
    ProgramOptions,
    Stream,
)
from cuda_core.graph import (
    GraphBuilder,
    GraphDefinition,
    _attachments,
)

gpu = pytest.mark.gpu

SRC = r"""
extern "C" __global__ void nothing() {}
extern "C" __global__ void bump(int *a) { a[0] += 1; }
"""
ONE = LaunchConfig(grid=1, block=1)


@pytest.fixture(scope="module")
def kernels():
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    code = Program(SRC, "c++", ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")

    class K:
        nothing = code.get_kernel("nothing")
        bump = code.get_kernel("bump")

    yield K
    code.close()


def _wait_for(predicate, timeout=5.0):
    """Poll ``predicate`` (draining released attachments) until true or ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        _attachments.drain()
        gc.collect()
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _fake_builder():
    # Over a borrowed handle that is never used: no CUDA call precedes the checks.
    return GraphBuilder._init(Stream.from_handle(0x10), owns_stream=False)


class _RecordingResource(HostOnlyResource):
    """A resource whose buffers are plain numbers; records each deallocation."""

    def __init__(self):
        self.freed = []

    def allocate(self, size, *, stream=None):
        raise NotImplementedError

    def deallocate(self, ptr, size, *, stream=None):
        self.freed.append(ptr)


def _copy_graph(dbuf, h_in, h_out, nbytes):
    gdef = GraphDefinition()
    gdef.memcpy(dbuf, h_in, nbytes).memcpy(h_out, dbuf, nbytes)
    return gdef
