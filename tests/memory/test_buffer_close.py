# SPDX-License-Identifier: Apache-2.0
"""``close()`` of an open Buffer from a pool it does not own, without a GPU.

Such a Buffer (from a device's default pool, say) frees its memory itself
with ``cuMemFreeAsync`` on its deallocation stream.  Its ``close()`` is a
written-out hot path; these tests drive it with a stand-in for the driver
call: the memory is freed once, on the right stream (NULL for none or a
closed one), the Buffer is closed and retyped even when the free fails, and
a failure raises.
"""

from __future__ import annotations

import pytest

from cuda_core import Buffer, CUDAError
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._lifetime import GUARD_HANDLES
from cuda_core._memory import _release
from cuda_core._memory._memory_pool import _open_buffer_maker
from cuda_core._stream import _BORROWED, _adopt


@pytest.fixture
def frees(monkeypatch):
    calls = []
    status = [0]

    def free(ptr, c_stream):
        calls.append((ptr, c_stream))
        return status[0]

    monkeypatch.setattr(_release, "_cuMemFreeAsync", free)
    return calls, status


def _pool_buffer(dstream, ptr=0x1000):
    buf = _open_buffer_maker(Buffer)()  # with its PyPy guard
    buf._ptr = ptr
    buf._size = 64
    buf._mr = None
    buf._closed = False
    buf._extra = None
    buf._release = _release._InlinePool
    buf._dstream = dstream
    return buf


def _stream(address, closed=False):
    stream = _adopt(ffi.cast("CUstream", address), address, None, _BORROWED)
    stream._closed = closed
    return stream


def test_close_frees_once_on_the_deallocation_stream(frees):
    calls, _ = frees
    open_stream, closed_stream = _stream(0x50), _stream(0x60, closed=True)
    for dstream, expected in ((open_stream, 0x50), (closed_stream, 0), (None, 0)):
        calls.clear()
        buf = _pool_buffer(dstream)
        buf.close()
        assert type(buf) is Buffer and buf.is_closed
        assert (buf._ptr, buf._size, buf._mr) == (0, 0, None)
        buf.close()  # closing twice is a no-op
        assert len(calls) == 1
        ptr, c_stream = calls[0]
        assert ptr == 0x1000
        assert int(ffi.cast("intptr_t", c_stream)) == expected  # NULL: none, or closed


def test_close_with_a_stream_frees_on_that_stream(frees):
    calls, _ = frees
    buf = _pool_buffer(_stream(0x50))
    buf.close(_stream(0x70))
    assert type(buf) is Buffer and buf.is_closed
    assert [(p, int(ffi.cast("intptr_t", s))) for p, s in calls] == [(0x1000, 0x70)]


def test_failing_free_raises_and_leaves_the_buffer_closed(frees):
    calls, status = frees
    status[0] = lib.CUDA_ERROR_INVALID_VALUE
    buf = _pool_buffer(None)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        buf.close()
    assert type(buf) is Buffer and buf.is_closed and buf._ptr == 0
    buf.close()  # not freed twice
    assert len(calls) == 1


def test_open_buffer_safety_net_goes_with_close(frees):
    # The open Buffer's safety net: a guard on PyPy (no __del__ there, whose
    # objects PyPy keeps through one more collection), the open class's
    # __del__ on CPython.  close() removes it either way.
    buf = _pool_buffer(_stream(0x10))
    if GUARD_HANDLES:
        assert "__del__" not in vars(type(buf)) and buf._guard is not None
    else:
        assert "__del__" in vars(type(buf))
    buf.close()
    assert type(buf) is Buffer and not hasattr(Buffer, "__del__")
    assert getattr(buf, "_guard", None) is None
    assert frees[0] == [(0x1000, ffi.cast("CUstream", 0x10))]
