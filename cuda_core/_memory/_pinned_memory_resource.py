# SPDX-License-Identifier: Apache-2.0
"""Pinned host memory from stream-ordered memory pools (:class:`PinnedMemoryResource`)."""

from __future__ import annotations

import dataclasses
import multiprocessing.reduction
import platform

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _ipc
from cuda_core._memory._memory_pool import _MemPool, _set_peer_access
from cuda_core._utils import check_or_create_options

__all__ = ["PinnedMemoryResource", "PinnedMemoryResourceOptions"]


@dataclasses.dataclass
class PinnedMemoryResourceOptions:
    """Options of a :class:`PinnedMemoryResource` that creates its own pool.

    Attributes
    ----------
    ipc_enabled : bool
        Create a pool whose allocations can be shared with other processes
        (Linux).  Default False.
    max_size : int
        Maximum pool size in bytes; 0 (the default) lets the driver choose.
    numa_id : int or None
        Host NUMA node of the pool.  ``None`` (the default) means OS-managed
        placement without IPC, and the current device's ``host_numa_id``
        with IPC (that needs a current context).  A non-negative value
        selects that node in both cases.
    """

    ipc_enabled: bool = False
    max_size: int = 0
    numa_id: int | None = None

    def __post_init__(self):
        if not isinstance(self.ipc_enabled, bool):
            raise TypeError(
                f"PinnedMemoryResourceOptions.ipc_enabled must be a bool, not "
                f"{type(self.ipc_enabled).__name__}"
            )
        if isinstance(self.max_size, bool) or not isinstance(self.max_size, int):
            raise TypeError(
                f"PinnedMemoryResourceOptions.max_size must be an int, not "
                f"{type(self.max_size).__name__}"
            )
        if self.max_size < 0:
            raise ValueError(
                f"PinnedMemoryResourceOptions.max_size must be >= 0, got {self.max_size}"
            )
        if self.numa_id is not None:
            if isinstance(self.numa_id, bool) or not isinstance(self.numa_id, int):
                raise TypeError(
                    f"PinnedMemoryResourceOptions.numa_id must be an int or None, not "
                    f"{type(self.numa_id).__name__}"
                )
            if self.numa_id < 0:
                raise ValueError(
                    f"PinnedMemoryResourceOptions.numa_id must be >= 0 or None, got {self.numa_id}"
                )


class PinnedMemoryResource(_MemPool):
    """Page-locked host memory from a stream-ordered memory pool.

    The memory is accessible from the host and from every device.

    Parameters
    ----------
    options : PinnedMemoryResourceOptions or dict, optional
        ``None`` (the default) uses the driver's current pinned host pool
        (needs a CUDA 13 driver), which this resource does not own.  With
        options, a new pool is created and owned.

    Notes
    -----
    IPC works as for :class:`DeviceMemoryResource`, except that
    :meth:`from_allocation_handle` takes no device.  An IPC-enabled pool is
    placed on a host NUMA node (``CU_MEM_LOCATION_TYPE_HOST_NUMA``).
    """

    def __init__(self, options=None):
        opts = check_or_create_options(
            PinnedMemoryResourceOptions, options, "PinnedMemoryResource options", keep_none=True
        )
        _ensure_initialized()
        self._numa_id = -1
        if opts is None:
            self._init_current_pool(
                lib.CU_MEM_LOCATION_TYPE_HOST, 0, lib.CU_MEM_ALLOCATION_TYPE_PINNED, -1
            )
            self._raise_release_threshold()
            return
        if opts.ipc_enabled and not _ipc.is_supported():
            raise RuntimeError(f"IPC is not available on {platform.system()}")
        numa_id = opts.numa_id
        if numa_id is None and opts.ipc_enabled:
            numa_id = _host_numa_id_for_current_device()
        if numa_id is None:
            loc_type, loc_id = lib.CU_MEM_LOCATION_TYPE_HOST, 0
        else:
            loc_type, loc_id = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, numa_id
            self._numa_id = numa_id
        self._init_create_pool(
            loc_type, loc_id, lib.CU_MEM_ALLOCATION_TYPE_PINNED, opts.ipc_enabled, opts.max_size, -1
        )

    @classmethod
    def from_allocation_handle(cls, alloc_handle):
        """Map a pinned pool exported by another process.

        Parameters
        ----------
        alloc_handle : IPCAllocationHandle or int
            The exported handle; an ``int`` file descriptor is duplicated and
            stays the caller's to close.

        Returns
        -------
        PinnedMemoryResource
            A mapped resource (``is_mapped`` is True).
        """
        _ensure_initialized()
        mr = _ipc.mempool_from_allocation_handle(cls, alloc_handle, -1)
        if not hasattr(mr, "_numa_id"):
            mr._numa_id = -1
        # Access rights are not carried over by IPC: an imported host pool is
        # reachable from no device until the importing process grants it.
        count = ffi.new("int *")
        check(lib.cuDeviceGetCount(count), "cuDeviceGetCount")
        _set_peer_access(mr, list(range(count[0])), [])
        return mr

    @property
    def device_id(self):
        """int: -1; pinned memory belongs to no device."""
        return -1

    @property
    def numa_id(self):
        """int: The host NUMA node of the pool, or -1 for OS-managed placement."""
        return self._numa_id

    @property
    def is_device_accessible(self):
        """bool: True; devices can access the buffers."""
        return True

    @property
    def is_host_accessible(self):
        """bool: True; the host can access the buffers."""
        return True


def _ensure_initialized():
    check(lib.cuInit(0), "cuInit")


def _host_numa_id_for_current_device():
    """Host NUMA node closest to the current device (0 when unknown)."""
    dev = ffi.new("CUdevice *")
    status = lib.cuCtxGetDevice(dev)
    if status in (lib.CUDA_ERROR_INVALID_CONTEXT, lib.CUDA_ERROR_NOT_INITIALIZED):
        return 0
    check(status, "cuCtxGetDevice")
    value = ffi.new("int *")
    status = lib.cuDeviceGetAttribute(value, lib.CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev[0])
    if status in (lib.CUDA_ERROR_INVALID_VALUE, lib.CUDA_ERROR_NOT_SUPPORTED):
        return 0
    check(status, "cuDeviceGetAttribute(HOST_NUMA_ID)")
    return max(value[0], 0)


def _deep_reduce_pinned_memory_resource(mr):
    return _ipc.deep_reduce_mempool(mr)


multiprocessing.reduction.register(PinnedMemoryResource, _deep_reduce_pinned_memory_resource)
