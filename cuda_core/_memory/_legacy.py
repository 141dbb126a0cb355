# SPDX-License-Identifier: Apache-2.0
"""Memory resources over the synchronous driver allocators.

:class:`LegacyPinnedMemoryResource` uses ``cuMemAllocHost`` /
``cuMemFreeHost``; ``_SynchronousMemoryResource`` (the device default where
memory pools are not supported) uses ``cuMemAlloc`` / ``cuMemFree``.  Both
synchronize the deallocation stream before freeing, since the free itself is
not stream-ordered; when that stream has been closed, they synchronize its
context instead (see :func:`_sync_before_free`).
"""

from __future__ import annotations

from cuda_core._context import _pop, _push_if_needed
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._buffer import (
    Buffer,
    MemoryResource,
    _as_size,
    _as_stream,
    _stream_accept,
)
from cuda_core._utils import as_int_handle

__all__ = ["LegacyPinnedMemoryResource", "_SynchronousMemoryResource"]


def _sync_before_free(stream):
    """Wait for the work that a synchronous free must not overtake.

    An open ``stream`` is synchronized.  A closed one can no longer be (its
    handle is destroyed, though work queued on it still runs to completion),
    and None names no stream: then the whole context is synchronized -- the
    closed stream's own context when known, else the current one (nothing
    when no context is current).

    Raises
    ------
    TypeError
        If ``stream`` is not a stream.
    """
    c_ctx = None
    if stream is not None:
        s = _stream_accept(stream, "stream")
        if not s._closed:
            s.sync()
            return
        ctx = getattr(s, "_ctx", None)
        c_ctx = None if ctx is None else ctx._handle
    if c_ctx is None:
        current = ffi.new("CUcontext *")
        check(lib.cuCtxGetCurrent(current), "cuCtxGetCurrent")
        if current[0] == ffi.NULL:
            return
        check(lib.cuCtxSynchronize(), "cuCtxSynchronize")
        return
    pushed = _push_if_needed(c_ctx)
    try:
        check(lib.cuCtxSynchronize(), "cuCtxSynchronize")
    finally:
        if pushed:
            _pop()


class LegacyPinnedMemoryResource(MemoryResource):
    """Pinned host memory from ``cuMemAllocHost`` (accessible from host and devices)."""

    __slots__ = ()
    # A buffer whose recorded stream was closed is still freed (see _Release).
    _accepts_closed_stream = True

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
        return Buffer._init(as_int_handle(out[0]), size, self, stream=s)

    def deallocate(self, ptr, size, stream=None):
        """Synchronize ``stream``, then free ``ptr`` with ``cuMemFreeHost``.

        When ``stream`` is closed or None, the context is synchronized
        instead (the closed stream's, else the current one).
        """
        ptr = int(ptr)
        if ptr:
            _sync_before_free(stream)
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
    # A buffer whose recorded stream was closed is still freed (see _Release).
    _accepts_closed_stream = True

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
        return Buffer._init(as_int_handle(out[0]), size, self, stream=s)

    def deallocate(self, ptr, size, stream=None):
        """Synchronize ``stream``, then free ``ptr`` with ``cuMemFree``.

        When ``stream`` is closed or None, the context is synchronized
        instead (the closed stream's, else the current one).
        """
        ptr = int(ptr)
        if ptr:
            _sync_before_free(stream)
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
