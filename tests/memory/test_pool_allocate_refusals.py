# SPDX-License-Identifier: Apache-2.0
"""Pool ``allocate()``: what its fast path leaves to the extension call, refused in order.

On an open owned stream, ``allocate()`` tests only the size's class before
``cc_pool_alloc``: a negative size is refused by the argument conversion,
and a closed resource's NULL pool or a size of 0 by the C call itself,
before any driver call.  Each refusal then goes through the same checks as
before, in the same order: the closed (or mapped) resource first, then the
size.  These tests hold that order and that no refusal leaves a status
behind for the next allocation.
"""

from __future__ import annotations

import pytest

from cuda_core import Buffer, CUDAError, DeviceMemoryResource

pytestmark = pytest.mark.gpu

_SIZES = [16, 0, -1, 1 << 64, True, 2.5]


def _resource(device, owned):
    """A resource owning its pool, or one on the device's current pool."""
    if owned:
        return DeviceMemoryResource(device, {"max_size": 1 << 24})
    return DeviceMemoryResource(device)


@pytest.mark.parametrize("owned", [False, True], ids=["current-pool", "owned-pool"])
def test_closed_resource_refuses_every_size_as_closed(device, stream, owned):
    mr = _resource(device, owned)
    mr.close()
    for size in _SIZES:
        with pytest.raises(RuntimeError, match="DeviceMemoryResource is closed"):
            mr.allocate(size, stream=stream)


@pytest.mark.parametrize("owned", [False, True], ids=["current-pool", "owned-pool"])
def test_size_refusals_on_an_open_resource(device, stream, owned):
    mr = _resource(device, owned)
    with pytest.raises(ValueError, match="size"):
        mr.allocate(-1, stream=stream)
    with pytest.raises(ValueError, match="size_t"):
        mr.allocate(1 << 64, stream=stream)
    with pytest.raises(TypeError):
        mr.allocate(16.0, stream=stream)
    buf = mr.allocate(64, stream=stream)  # nothing refused above lingers
    assert buf.size == 64 and buf.handle != 0
    buf.close()
    mr.close()


@pytest.mark.parametrize("owned", [False, True], ids=["current-pool", "owned-pool"])
def test_zero_size_is_an_empty_buffer_and_leaves_no_status(device, stream, owned):
    mr = _resource(device, owned)
    empty = mr.allocate(0, stream=stream)
    assert isinstance(empty, Buffer)
    assert empty.size == 0 and empty.handle == 0 and empty.memory_resource is mr
    # The refusal of size 0 left its own status in C; a real failure after it
    # reports the driver's error, and a real allocation succeeds.
    with pytest.raises(CUDAError) as info:
        mr.allocate(1 << 60, stream=stream)
    assert info.value.name in ("CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_VALUE")
    buf = mr.allocate(256, stream=stream)
    assert buf.size == 256 and buf.handle != 0
    empty.close()
    buf.close()
    assert empty.is_closed and buf.is_closed
    stream.sync()
    mr.close()


class _Size(int):
    pass


def test_size_classes_on_the_fast_path(device, stream):
    mr = DeviceMemoryResource(device)
    buf = mr.allocate(_Size(48), stream=stream)
    assert buf.size == 48 and type(buf.size) is int
    buf.close()
    empty = mr.allocate(_Size(0), stream=stream)
    assert empty.size == 0 and type(empty.size) is int and empty.handle == 0
    empty.close()
    for size in (True, False):
        with pytest.raises(TypeError, match="size must be an int, not bool"):
            mr.allocate(size, stream=stream)
    stream.sync()
    mr.close()
