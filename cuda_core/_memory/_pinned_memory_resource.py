# SPDX-License-Identifier: Apache-2.0
"""Pinned host memory from stream-ordered memory pools (:class:`PinnedMemoryResource`)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from cuda_core._coerce import check_or_create_options
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check_allowing, status_in
from cuda_core._loader import device_count, init_driver
from cuda_core._memory import _ipc
from cuda_core._memory._forking_pickler import register as register_reducer
from cuda_core._memory._memory_pool import _check_pool_options, _MemPool
from cuda_core._memory._memory_resource import _SharedMemory
from cuda_core._memory._peer_access import _set_peer_access

__all__ = ["PinnedMemoryResource", "PinnedMemoryResourceOptions"]


@dataclasses.dataclass
class PinnedMemoryResourceOptions:
    """Options of a :class:`PinnedMemoryResource` that creates its own pool.

    Attributes
    ----------
    ipc_enabled : bool
        Create a pool whose pinned host allocations other processes can map
        (Linux; the pool then sits on one NUMA node, see ``numa_id``).
        Default False.
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

    def __post_init__(self) -> None:
        _check_pool_options(self, "PinnedMemoryResourceOptions")
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


class PinnedMemoryResource(_SharedMemory, _MemPool):
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
    A host memory pool is accessible from no device until access is
    granted: every resource grants read-write access to all devices when it
    creates, wraps or imports its pool (devices that cannot access host
    memory pools are skipped).

    IPC works as for :class:`DeviceMemoryResource`, except that
    :meth:`from_allocation_handle` takes no device.  An IPC-enabled pool is
    placed on a host NUMA node (``CU_MEM_LOCATION_TYPE_HOST_NUMA``).
    """

    def __init__(self, options: PinnedMemoryResourceOptions | dict[str, Any] | None = None) -> None:
        opts = check_or_create_options(
            PinnedMemoryResourceOptions, options, "PinnedMemoryResource options", keep_none=True
        )
        init_driver()
        self._numa_id = -1
        if opts is None:
            self._init_current_pool(
                lib.CU_MEM_LOCATION_TYPE_HOST, 0, lib.CU_MEM_ALLOCATION_TYPE_PINNED, -1
            )
            self._raise_release_threshold()
            _grant_device_access(self)
            return
        if opts.ipc_enabled and not _ipc.is_supported():
            import platform

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
        _grant_device_access(self)

    @classmethod
    def from_allocation_handle(
        cls, alloc_handle: _ipc.IPCAllocationHandle | int
    ) -> PinnedMemoryResource:
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
        init_driver()
        mr = _ipc.mempool_from_allocation_handle(cls, alloc_handle, -1)
        if not hasattr(mr, "_numa_id"):
            mr._numa_id = -1
        # Access rights are not carried over by IPC: an imported host pool is
        # reachable from no device until the importing process grants it.
        # (A resource found in the registry was granted when it was mapped.)
        if not mr.is_closed:
            _grant_device_access(mr)
        return mr

    @property
    def device_id(self) -> int:
        """int: -1; pinned memory belongs to no device."""
        return -1

    @property
    def numa_id(self) -> int:
        """int: The host NUMA node of the pool, or -1 for OS-managed placement."""
        return self._numa_id


# Statuses of cuMemPoolSetAccess for a device that cannot access host pools.
_NO_HOST_POOL_ACCESS = (lib.CUDA_ERROR_NOT_SUPPORTED, lib.CUDA_ERROR_INVALID_DEVICE)


def _grant_device_access(mr: PinnedMemoryResource) -> None:
    """Grant every device read-write access to ``mr``'s host memory pool.

    A host pool is reachable only from the host until ``cuMemPoolSetAccess``
    grants devices access (copies work regardless through DMA, but kernels
    and memsets need it).  One call grants all devices; if the driver refuses
    because some device cannot access host pools (``NOT_SUPPORTED`` or
    ``INVALID_DEVICE``), each device is granted on its own and those
    refusing that way are skipped.  Any other failure raises.
    """
    count = device_count()
    if count <= 0:
        return
    try:
        _set_peer_access(mr, range(count), ())
        return
    except CUDAError as exc:
        if not status_in(exc, _NO_HOST_POOL_ACCESS):
            raise
        if count == 1:
            return  # the only device cannot access host pools
    for dev_id in range(count):
        try:
            _set_peer_access(mr, (dev_id,), ())
        except CUDAError as exc:
            if not status_in(exc, _NO_HOST_POOL_ACCESS):
                raise


def _host_numa_id_for_current_device() -> int:
    """Host NUMA node closest to the current device (0 when unknown)."""
    dev = ffi.new("CUdevice *")
    no_context = (lib.CUDA_ERROR_INVALID_CONTEXT, lib.CUDA_ERROR_NOT_INITIALIZED)
    if not check_allowing(lib.cuCtxGetDevice(dev), no_context, "cuCtxGetDevice"):
        return 0
    value = ffi.new("int *")
    status = lib.cuDeviceGetAttribute(value, lib.CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev[0])
    unknown = (lib.CUDA_ERROR_INVALID_VALUE, lib.CUDA_ERROR_NOT_SUPPORTED)
    if not check_allowing(status, unknown, "cuDeviceGetAttribute(HOST_NUMA_ID)"):
        return 0
    numa_id: int = value[0]
    return max(numa_id, 0)


def _deep_reduce_pinned_memory_resource(
    mr: PinnedMemoryResource,
) -> tuple[Callable[..., _MemPool], tuple[Any, ...]]:
    return _ipc.deep_reduce_mempool(mr)


register_reducer(PinnedMemoryResource, _deep_reduce_pinned_memory_resource)
