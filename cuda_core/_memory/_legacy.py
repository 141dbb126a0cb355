# SPDX-License-Identifier: Apache-2.0
"""Memory resources over the synchronous driver allocators.

:class:`LegacyPinnedMemoryResource` uses ``cuMemAllocHost`` /
``cuMemFreeHost``; ``_SynchronousMemoryResource`` (the device default where
memory pools are not supported) uses ``cuMemAlloc`` / ``cuMemFree``.  Both
synchronize the deallocation stream before freeing, since the free itself is
not stream-ordered.
"""

from __future__ import annotations

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._buffer import Buffer, MemoryResource, _as_size, _as_stream

__all__ = ["LegacyPinnedMemoryResource", "_SynchronousMemoryResource"]


class LegacyPinnedMemoryResource(MemoryResource):
    """Pinned host memory from ``cuMemAllocHost`` (accessible from host and devices)."""

    __slots__ = ()

    def __repr__(self):
        return "<LegacyPinnedMemoryResource>"

    def allocate(self, size, stream=None):
        """Allocate ``size`` bytes of pinned host memory (synchronously).

        Parameters
        ----------
        size : int
            Size in bytes.
        stream : Stream or GraphBuilder, optional
            Recorded as the deallocation stream; the allocation itself is
            synchronous.  Defaults to the default stream.

        Returns
        -------
        Buffer
        """
        size = _as_size(size)
        s = _as_stream(stream) if stream is not None else None
        if size == 0:
            return Buffer._init(0, 0, self, stream=s)
        out = ffi.new("void **")
        check(lib.cuMemAllocHost(out, size), f"cuMemAllocHost({size})")
        return Buffer._init(int(ffi.cast("uintptr_t", out[0])), size, self, stream=s)

    def deallocate(self, ptr, size, stream=None):
        """Synchronize ``stream`` (if given), then free ``ptr`` with ``cuMemFreeHost``."""
        if stream is not None:
            _as_stream(stream).sync()
        ptr = int(ptr)
        if ptr:
            check(lib.cuMemFreeHost(ffi.cast("void *", ptr)), "cuMemFreeHost")

    @property
    def is_device_accessible(self):
        """bool: True."""
        return True

    @property
    def is_host_accessible(self):
        """bool: True."""
        return True

    @property
    def device_id(self):
        """int: -1; this memory belongs to no device."""
        return -1


class _SynchronousMemoryResource(MemoryResource):
    """Device memory from ``cuMemAlloc``; freeing syncs the stream, then ``cuMemFree``."""

    __slots__ = ("_device_id",)

    def __init__(self, device_id):
        from cuda_core._device import Device

        self._device_id = Device(device_id).device_id

    def __repr__(self):
        return f"<_SynchronousMemoryResource device_id={self._device_id}>"

    def allocate(self, size, stream=None):
        """Allocate ``size`` bytes of device memory (synchronously)."""
        size = _as_size(size)
        s = _as_stream(stream) if stream is not None else None
        if size == 0:
            return Buffer._init(0, 0, self, stream=s)
        out = ffi.new("CUdeviceptr *")
        check(lib.cuMemAlloc(out, size), f"cuMemAlloc({size})")
        return Buffer._init(int(out[0]), size, self, stream=s)

    def deallocate(self, ptr, size, stream=None):
        """Synchronize ``stream`` (if given), then free ``ptr`` with ``cuMemFree``."""
        if stream is not None:
            _as_stream(stream).sync()
        ptr = int(ptr)
        if ptr:
            check(lib.cuMemFree(ptr), "cuMemFree")

    @property
    def is_device_accessible(self):
        """bool: True."""
        return True

    @property
    def is_host_accessible(self):
        """bool: False."""
        return False

    @property
    def device_id(self):
        """int: The device ordinal."""
        return self._device_id
