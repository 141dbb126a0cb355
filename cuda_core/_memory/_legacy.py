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

from typing import TYPE_CHECKING

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle
from cuda_core._coerce import as_size as _as_size
from cuda_core._context import _pop, _push_if_needed
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._ffi_types import ctype_of
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._memory_resource import MemoryResource, _DeviceMemory, _SharedMemory
from cuda_core._stream import _as_stream

if TYPE_CHECKING:
    from typing import Any, ClassVar

    from cuda_core._device import Device
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__ = ["LegacyPinnedMemoryResource", "_SynchronousMemoryResource"]


class _SynchronousAllocatorResource(MemoryResource):
    """Base of the resources over a synchronous driver allocator.

    A subclass names its allocator in class attributes: ``_c_out_type`` (the
    allocator's out-parameter), ``_c_alloc`` and ``_c_free`` (the driver
    functions), ``_free_takes_pointer`` (whether ``_c_free`` takes a
    ``void *`` rather than an address) and ``_alloc_name``/``_free_name``
    (for error messages).
    """

    __slots__ = ()
    # A buffer whose recorded stream was closed is still freed (see _Release).
    _accepts_closed_stream = True
    _c_out_type: ClassVar[str]
    _free_takes_pointer: ClassVar[bool]
    _alloc_name: ClassVar[str]
    _free_name: ClassVar[str]
    if TYPE_CHECKING:  # set by each subclass

        @staticmethod
        def _c_alloc(out: Any, size: int) -> int: ...
        @staticmethod
        def _c_free(ptr: Any) -> int: ...

    def allocate(self, size: int, stream: Stream | GraphBuilder | None = None) -> Buffer:
        """Allocate ``size`` bytes (synchronously).

        :class:`LegacyPinnedMemoryResource` allocates pinned host memory,
        ``_SynchronousMemoryResource`` device memory.

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
        out = ffi.new(ctype_of(self._c_out_type))
        check(self._c_alloc(out, size), f"{self._alloc_name}({size})")
        return Buffer._init(as_int_handle(out[0]), size, self, stream=s)

    def deallocate(
        self, ptr: DevicePointerType, size: int, stream: Stream | GraphBuilder | None = None
    ) -> None:
        """Synchronize ``stream``, then free ``ptr`` (``cuMemFreeHost`` or ``cuMemFree``).

        When ``stream`` is closed or None, the context is synchronized
        instead (the closed stream's, else the current one).
        """
        ptr = int(ptr)  # type: ignore[arg-type]  # None raises TypeError, as in cuda.core
        if ptr:
            _sync_before_free(stream)
            c_ptr = ffi.cast("void *", ptr) if self._free_takes_pointer else ptr
            check(self._c_free(c_ptr), self._free_name)


class LegacyPinnedMemoryResource(_SharedMemory, _SynchronousAllocatorResource):
    """Pinned host memory from ``cuMemAllocHost`` (accessible from host and devices)."""

    __slots__ = ()
    _c_out_type = "void **"
    _c_alloc = staticmethod(lib.cuMemAllocHost)
    _c_free = staticmethod(lib.cuMemFreeHost)
    _free_takes_pointer = True
    _alloc_name = "cuMemAllocHost"
    _free_name = "cuMemFreeHost"

    def __repr__(self) -> str:
        return "<LegacyPinnedMemoryResource>"

    #: Read by :attr:`Buffer.device_id`, which gives -1 for this memory.
    _bound_to_no_gpu = True

    @property
    def device_id(self) -> int:
        """This memory resource is not bound to any GPU.

        Raises
        ------
        RuntimeError
            Always, as in ``cuda.core`` (a buffer of this resource reports -1).
        """
        raise RuntimeError("a pinned memory resource is not bound to any GPU")


class _SynchronousMemoryResource(_DeviceMemory, _SynchronousAllocatorResource):
    """Device memory from ``cuMemAlloc``; freeing syncs the stream, then ``cuMemFree``."""

    __slots__ = ("_device_id",)
    _device_id: int
    _c_out_type = "CUdeviceptr *"
    _c_alloc = staticmethod(lib.cuMemAlloc)
    _c_free = staticmethod(lib.cuMemFree)
    _free_takes_pointer = False
    _alloc_name = "cuMemAlloc"
    _free_name = "cuMemFree"

    def __init__(self, device_id: Device | int) -> None:
        self._device_id = _slots.device_class()(device_id).device_id

    def __repr__(self) -> str:
        return f"<_SynchronousMemoryResource device_id={self._device_id}>"

    @property
    def device_id(self) -> int:
        """int: The device ordinal."""
        return self._device_id


def _sync_before_free(stream: Stream | GraphBuilder | None) -> None:
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
        s = _as_stream(stream, check_open=False)
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
