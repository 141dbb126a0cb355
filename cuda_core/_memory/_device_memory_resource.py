# SPDX-License-Identifier: Apache-2.0
"""Device memory from stream-ordered memory pools (:class:`DeviceMemoryResource`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import cuda_core._slots as _slots
from cuda_core._coerce import check_or_create_options
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _ipc
from cuda_core._memory._forking_pickler import register as register_reducer
from cuda_core._memory._memory_pool import _check_pool_options, _MemPool
from cuda_core._memory._memory_resource import _DeviceMemory
from cuda_core._memory._peer_access import PeerAccessibleBySetProxy, _set_peer_accessible_by

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cuda_core._device import Device

__all__ = ["DeviceMemoryResource", "DeviceMemoryResourceOptions"]


@dataclasses.dataclass
class DeviceMemoryResourceOptions:
    """Options of a :class:`DeviceMemoryResource` that creates its own pool.

    Attributes
    ----------
    ipc_enabled : bool
        Create a pool whose allocations can be shared with other processes
        (Linux).  Default False.
    max_size : int
        Maximum pool size in bytes; 0 (the default) lets the driver choose.
    """

    ipc_enabled: bool = False
    max_size: int = 0

    def __post_init__(self) -> None:
        _check_pool_options(self, "DeviceMemoryResourceOptions")


class DeviceMemoryResource(_DeviceMemory, _MemPool):
    """Device memory from a stream-ordered memory pool.

    Parameters
    ----------
    device_id : Device or int
        The device whose memory is allocated.
    options : DeviceMemoryResourceOptions or dict, optional
        ``None`` (the default) uses the device's current memory pool, which
        this resource does not own (``close`` leaves it alone); its release
        threshold is raised so that freed memory stays in the pool.  With
        options, a new pool is created and owned by the resource.

    Notes
    -----
    IPC (``ipc_enabled=True``): the pool is shared through
    :attr:`allocation_handle` (a file descriptor) and mapped in another
    process with :meth:`from_allocation_handle`; a mapped resource cannot
    allocate, it imports buffers with :meth:`Buffer.from_ipc_descriptor
    <cuda_core.Buffer.from_ipc_descriptor>`.  Through :mod:`multiprocessing`
    (spawn or forkserver), resources and buffers can be sent directly: the
    resource is mapped and registered by UUID in the receiving process, and
    buffers are imported when unpickled.  Only exchange them with trusted
    processes.
    """

    def __init__(
        self,
        device_id: Device | int,
        options: DeviceMemoryResourceOptions | dict[str, Any] | None = None,
    ) -> None:
        dev_id = _slots.device_class()(device_id).device_id
        opts = check_or_create_options(
            DeviceMemoryResourceOptions, options, "DeviceMemoryResource options", keep_none=True
        )
        if opts is None:
            c_pool = ffi.new("CUmemoryPool *")
            check(lib.cuDeviceGetMemPool(c_pool, dev_id), "cuDeviceGetMemPool")
            self._ipc_data = None
            self._set_pool(c_pool[0], False, dev_id)
            self._raise_release_threshold()
        else:
            if opts.ipc_enabled and not _ipc.is_supported():
                import platform

                raise RuntimeError(f"IPC is not available on {platform.system()}")
            self._init_create_pool(
                lib.CU_MEM_LOCATION_TYPE_DEVICE,
                dev_id,
                lib.CU_MEM_ALLOCATION_TYPE_PINNED,
                opts.ipc_enabled,
                opts.max_size,
                dev_id,
            )

    @classmethod
    def from_allocation_handle(
        cls, device_id: Device | int, alloc_handle: _ipc.IPCAllocationHandle | int
    ) -> DeviceMemoryResource:
        """Map a pool exported by another process.

        Parameters
        ----------
        device_id : Device or int
            The device the pool belongs to.
        alloc_handle : IPCAllocationHandle or int
            The exported handle; an ``int`` file descriptor is duplicated and
            stays the caller's to close.

        Returns
        -------
        DeviceMemoryResource
            A mapped resource (``is_mapped`` is True), registered under the
            exporter's UUID when the handle carries one.
        """
        dev_id = _slots.device_class()(device_id).device_id
        return _ipc.mempool_from_allocation_handle(cls, alloc_handle, dev_id)

    @property
    def device_id(self) -> int:
        """int: The device ordinal."""
        return self._dev_id

    @property
    def peer_accessible_by(self) -> PeerAccessibleBySetProxy:
        """PeerAccessibleBySetProxy: Devices granted read-write access to this pool.

        A live, set-like view; assign any iterable of :class:`~cuda_core.Device`
        objects or ordinals to replace it (``mr.peer_accessible_by = {1}``;
        ``mr.peer_accessible_by = []`` revokes all).  Access applies to all
        allocations of the pool.
        """
        return PeerAccessibleBySetProxy(self)

    @peer_accessible_by.setter
    def peer_accessible_by(self, devices: Iterable[Device | int]) -> None:
        _set_peer_accessible_by(self, devices)


def _deep_reduce_device_memory_resource(mr: DeviceMemoryResource) -> tuple[Any, ...]:
    return _ipc.deep_reduce_mempool(mr, mr.device_id)


register_reducer(DeviceMemoryResource, _deep_reduce_device_memory_resource)
