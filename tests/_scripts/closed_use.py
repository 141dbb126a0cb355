# SPDX-License-Identifier: Apache-2.0
"""Use after close that may reach the driver (run by test_hardening_close.py).

Usage: ``python closed_use.py CASE``.  Mostly: pass a closed Stream to
another API.  A destroyed ``CUstream`` handle must never reach the driver
(that is undefined behaviour: a crash, an error, or work silently landing on
a new stream that reuses the address), so each case runs in its own
interpreter.  Also: buffers of pinned pools, and buffers that outlive the
pool they came from.  Prints ``RESULT {"outcome": outcome}``.
"""

from __future__ import annotations

import sys

from hardening_util import emit, outcome

from cuda_core import (
    CUDAError,
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    LegacyPinnedMemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)


def main():
    case = sys.argv[1]
    dev = Device(0)
    dev.set_current()
    live = dev.create_stream()
    closed = dev.create_stream()
    buf = dev.allocate(4096, stream=live)
    other = dev.allocate(4096, stream=live)
    live.sync()
    closed.close()
    replacement = dev.create_stream()  # may reuse the destroyed stream's address
    cases = {
        "device_allocate": lambda: dev.allocate(4096, stream=closed),
        "owned_pool_allocate": lambda: DeviceMemoryResource(
            dev, DeviceMemoryResourceOptions()
        ).allocate(4096, stream=closed),
        "fill": lambda: buf.fill(1, stream=closed),
        "copy_to": lambda: buf.copy_to(other, stream=closed),
        "copy_from": lambda: buf.copy_from(other, stream=closed),
        "deallocate": lambda: dev.memory_resource.deallocate(other.handle, 4096, stream=closed),
        "pool_buffer_close_after_its_stream_closed": lambda: _pool_close(dev),
        "legacy_pinned_close_after_its_stream_closed": lambda: _legacy_close(dev),
        "pinned_pool_buffer_fill": lambda: _pinned_fill(live),
        "buffer_outlives_owned_device_pool": lambda: _outlive(
            DeviceMemoryResource(dev, DeviceMemoryResourceOptions()), dev, live
        ),
        "buffer_outlives_owned_pinned_pool": lambda: _outlive(
            PinnedMemoryResource(PinnedMemoryResourceOptions()), dev, live
        ),
    }
    result = outcome(cases[case])
    live.sync()
    replacement.sync()
    emit({"outcome": result})


def _pool_close(dev):
    s = dev.create_stream()
    b = dev.allocate(4096, stream=s)
    s.close()
    b.close()  # freed in stream order on the legacy default stream instead


def _pinned_fill(stream):
    b = PinnedMemoryResource().allocate(4096, stream=stream)
    try:
        b.fill(7, stream=stream)
        stream.sync()
    finally:
        b.close()
    stream.sync()


def _outlive(mr, dev, stream):
    """Close a resource that owns its pool while a buffer from it is alive, then
    use and free the buffer, and keep using the device.  Returns the names of
    the CUDA errors met (none: the pool is destroyed after its last buffer)."""
    b = mr.allocate(4096, stream=stream)
    mr.close()
    errors = []
    for step in (
        lambda: b.fill(0, stream=stream),
        b.close,
        stream.sync,
        lambda: dev.allocate(4096, stream=stream).close(),
        stream.sync,
        dev.sync,
    ):
        try:
            step()
        except CUDAError as exc:
            errors.append(exc.name)
    return errors


def _legacy_close(dev):
    s = dev.create_stream()
    b = LegacyPinnedMemoryResource().allocate(4096, stream=s)
    s.close()
    b.close()  # the buffer must still be freeable


if __name__ == "__main__":
    main()
