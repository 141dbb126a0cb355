# SPDX-License-Identifier: Apache-2.0
"""Memory from the CUDA virtual memory management (VMM) API.

:class:`VirtualMemoryResource` creates physical memory (``cuMemCreate``),
reserves an address range (``cuMemAddressReserve``), maps one into the other
(``cuMemMap``) and grants access (``cuMemSetAccess``).  Sizes are rounded up
to the allocation granularity.  :meth:`VirtualMemoryResource.modify_allocation`
grows an allocation, in place when the following address range is free.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import cuda_core._slots as _slots
from cuda_core._coerce import as_flag, as_int_handle, check_or_create_options
from cuda_core._coerce import as_size as _as_size
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._lifetime import require_open
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._legacy import _sync_before_free
from cuda_core._memory._memory_resource import MemoryResource
from cuda_core._memory._release import _Release
from cuda_core._memory._virtual_memory_regions import _Region, _release_region, _Undo
from cuda_core._stream import _as_stream
from cuda_core.typing import (
    VirtualMemoryAccessType,
    VirtualMemoryAllocationType,
    VirtualMemoryGranularityType,
    VirtualMemoryHandleType,
    VirtualMemoryLocationType,
)

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__ = [
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
    "VirtualMemoryResource",
    "VirtualMemoryResourceOptions",
]


def _release_of(buf: Buffer) -> _Release:
    """The release record of a buffer this resource allocated (always a ``_Release``)."""
    rel = buf._release
    assert isinstance(rel, _Release)
    return rel


_K = TypeVar("_K")

_ALLOCATION_TYPES: dict[str, str] = {
    "pinned": "CU_MEM_ALLOCATION_TYPE_PINNED",
    "managed": "CU_MEM_ALLOCATION_TYPE_MANAGED",
}
_LOCATION_TYPES: dict[str, str] = {
    "device": "CU_MEM_LOCATION_TYPE_DEVICE",
    "host": "CU_MEM_LOCATION_TYPE_HOST",
    "host_numa": "CU_MEM_LOCATION_TYPE_HOST_NUMA",
    "host_numa_current": "CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT",
}
_HANDLE_TYPES: dict[str | None, str] = {
    None: "CU_MEM_HANDLE_TYPE_NONE",
    "posix_fd": "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR",
    "win32": "CU_MEM_HANDLE_TYPE_WIN32",
    "win32_kmt": "CU_MEM_HANDLE_TYPE_WIN32_KMT",
    "fabric": "CU_MEM_HANDLE_TYPE_FABRIC",
}
_GRANULARITY: dict[str, str] = {
    "minimum": "CU_MEM_ALLOC_GRANULARITY_MINIMUM",
    "recommended": "CU_MEM_ALLOC_GRANULARITY_RECOMMENDED",
}
_ACCESS: dict[str | None, str | None] = {
    "rw": "CU_MEM_ACCESS_FLAGS_PROT_READWRITE",
    "r": "CU_MEM_ACCESS_FLAGS_PROT_READ",
    None: None,
}


def _choice(cls_name: str, field: str, value: Any, table: Mapping[_K, object]) -> _K:
    key: _K = value.value if isinstance(value, enum.Enum) else value
    try:
        known = key in table
    except TypeError:  # unhashable
        allowed = ", ".join(repr(k) for k in table)
        raise TypeError(
            f"{cls_name}.{field} must be one of {allowed}; got {type(value).__name__} {value!r}"
        ) from None
    if not known:
        allowed = ", ".join(repr(k) for k in table)
        raise ValueError(f"{cls_name}.{field} must be one of {allowed}; got {value!r}")
    return key


@dataclasses.dataclass
class VirtualMemoryResourceOptions:
    """Configuration of a :class:`VirtualMemoryResource`.

    Attributes
    ----------
    allocation_type : str
        ``"pinned"`` (default) or ``"managed"``.
    location_type : str
        ``"device"`` (default), ``"host"``, ``"host_numa"`` or
        ``"host_numa_current"``.
    handle_type : str or None
        Exportable handle type: ``"posix_fd"`` (default), ``"win32"``,
        ``"win32_kmt"``, ``"fabric"`` or None.
    granularity : str
        ``"recommended"`` (default) or ``"minimum"``: sizes are rounded up
        to this granularity.
    gpu_direct_rdma : bool
        Request GPUDirect-RDMA-capable memory (the ints 0 and 1 are taken
        as False and True; anything else that is not a bool is refused).
    addr_hint : int
        Preferred virtual address (0 lets the driver choose).
    addr_align : int or None
        Alignment of the reservation (None: the granularity).
    peers : iterable of Device or int
        Other devices granted access (stored as a tuple of ordinals).
    self_access, peer_access : str or None
        ``"rw"`` (default), ``"r"`` or None for the owner and for the peers.
    win32_handle_metadata : int
        Windows security attributes (unused on Linux).
    """

    allocation_type: str = "pinned"
    location_type: str = "device"
    handle_type: str | None = "posix_fd"
    granularity: str = "recommended"
    gpu_direct_rdma: bool = False
    addr_hint: int | None = 0
    addr_align: int | None = None
    peers: Iterable[Device | int] = dataclasses.field(default_factory=tuple)
    self_access: str | None = "rw"
    peer_access: str | None = "rw"
    win32_handle_metadata: int | None = 0

    def __post_init__(self) -> None:
        name = type(self).__name__
        self.allocation_type = _choice(
            name, "allocation_type", self.allocation_type, _ALLOCATION_TYPES
        )
        self.location_type = _choice(name, "location_type", self.location_type, _LOCATION_TYPES)
        self.handle_type = _choice(name, "handle_type", self.handle_type, _HANDLE_TYPES)
        self.granularity = _choice(name, "granularity", self.granularity, _GRANULARITY)
        self.self_access = _choice(name, "self_access", self.self_access, _ACCESS)
        self.peer_access = _choice(name, "peer_access", self.peer_access, _ACCESS)
        for field in ("addr_hint", "addr_align"):
            value = getattr(self, field)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(
                    f"{name}.{field} must be a non-negative int or None, got {value!r}"
                )
        self.gpu_direct_rdma = as_flag(self.gpu_direct_rdma, f"{name}.gpu_direct_rdma")
        self.peers = _peer_ordinals(name, self.peers)

    # cuda.core's translators from an option value to the driver's constant,
    # under its names and with its messages.

    @staticmethod
    def _access_to_flags(spec: str | None) -> int:
        """Return the ``CUmemAccess_flags`` for ``"rw"``, ``"r"`` or None (0)."""
        return _to_driver(spec, _ACCESS, "Unknown access spec")

    @staticmethod
    def _allocation_type_to_driver(spec: str) -> int:
        """Return the ``CUmemAllocationType`` for ``"pinned"`` or ``"managed"``."""
        return _to_driver(spec, _ALLOCATION_TYPES, "Unsupported allocation_type")

    @staticmethod
    def _location_type_to_driver(spec: str) -> int:
        """Return the ``CUmemLocationType`` for a location type."""
        return _to_driver(spec, _LOCATION_TYPES, "Unsupported location_type")

    @staticmethod
    def _handle_type_to_driver(spec: str | None) -> int:
        """Return the ``CUmemAllocationHandleType`` for a handle type (None: none)."""
        return _to_driver(spec, _HANDLE_TYPES, "Unsupported handle_type")

    @staticmethod
    def _granularity_to_driver(spec: str) -> int:
        """Return the ``CUmemAllocationGranularity_flags`` for a granularity."""
        return _to_driver(spec, _GRANULARITY, "Unsupported granularity")


def _to_driver(spec: Any, table: Mapping[Any, str | None], what: str) -> int:
    key = spec.value if isinstance(spec, enum.Enum) else spec
    try:
        name = table[key]
    except (KeyError, TypeError):
        raise ValueError(f"{what}: {spec!r}") from None
    return 0 if name is None else int(getattr(lib, name))


def _peer_ordinals(cls_name: str, peers: Any) -> tuple[int, ...]:
    """Return ``peers`` (an iterable of Devices or ordinals) as a tuple of ordinals."""
    if isinstance(peers, (str, bytes, bytearray)):
        raise TypeError(
            f"{cls_name}.peers must be an iterable of Devices or device ordinals, not "
            f"{type(peers).__name__}"
        )
    try:
        items = iter(peers)
    except TypeError:
        raise TypeError(
            f"{cls_name}.peers must be an iterable of Devices or device ordinals, not "
            f"{type(peers).__name__}"
        ) from None
    ordinals: list[int] = []
    for p in items:
        dev_id = p.device_id if isinstance(p, _slots.device_class()) else p
        if isinstance(dev_id, bool) or not isinstance(dev_id, int):
            raise TypeError(
                f"{cls_name}.peers must hold Devices or device ordinals, got "
                f"{type(p).__name__} {p!r}"
            )
        if dev_id < 0:
            raise ValueError(f"{cls_name}.peers must hold device ordinals >= 0, got {p!r}")
        ordinals.append(dev_id)
    return tuple(ordinals)


class VirtualMemoryResource(MemoryResource):
    """Memory allocated through the CUDA virtual memory management API.

    Allocation is synchronous.  Sizes are rounded up to the configured
    granularity (the buffer's ``size`` is the rounded size).

    Parameters
    ----------
    device_id : Device or int
        The owning device (ignored for host locations).
    config : VirtualMemoryResourceOptions or dict, optional
        The configuration; defaults to pinned device memory.

    Raises
    ------
    RuntimeError
        If the device does not support VMM (or GPUDirect RDMA when requested).
    """

    # A buffer whose recorded stream was closed is still freed (see _Release).
    _accepts_closed_stream = True

    def __init__(
        self,
        device_id: Device | int,
        config: VirtualMemoryResourceOptions | dict[str, Any] | None = None,
    ) -> None:
        self.config = check_or_create_options(
            VirtualMemoryResourceOptions, config, "VirtualMemoryResource options"
        )
        self._regions: dict[int, _Region] = {}
        device = _slots.device_class()(device_id)
        self._dev_id = device.device_id
        self.device: Device | None = (
            None if self.config.location_type.startswith("host") else device
        )
        if self.device is not None:
            if not _device_attribute(
                self._dev_id, lib.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED
            ):
                raise RuntimeError("VirtualMemoryResource requires CUDA VMM API support")
            if self.config.gpu_direct_rdma and not _device_attribute(
                self._dev_id, lib.CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED
            ):
                raise RuntimeError("GPU Direct RDMA is not supported on this device")

    def __repr__(self) -> str:
        location = self.config.location_type
        return f"<VirtualMemoryResource device_id={self.device_id} location={location}>"

    def allocate(self, size: int, *, stream: Stream | GraphBuilder | None = None) -> Buffer:
        """Allocate at least ``size`` bytes (rounded up to the granularity).

        Parameters
        ----------
        size : int
            Requested size in bytes.
        stream : Stream or GraphBuilder, optional
            Keyword-only; recorded as the deallocation stream (allocation is
            synchronous).

        Returns
        -------
        Buffer
            Of the rounded size.

        Raises
        ------
        CUDAError
            If a VMM call fails; everything done so far is rolled back.
        """
        size = _as_size(size)
        s = _as_stream(stream) if stream is not None else None
        if size == 0:
            return Buffer._init(0, 0, self, stream=s)
        prop = self._allocation_prop()
        gran = self._granularity(prop)
        aligned = _align_up(size, gran)
        align = self.config.addr_align or gran
        c_ptr = ffi.new("CUdeviceptr *")
        with _Undo() as undo:
            check(
                lib.cuMemAddressReserve(c_ptr, aligned, align, self.config.addr_hint or 0, 0),
                "cuMemAddressReserve",
            )
            ptr = as_int_handle(c_ptr[0])
            undo.add(lib.cuMemAddressFree, ptr, aligned)
            self._map_new(undo, prop, ptr, aligned)
            self._set_access(prop, ptr, aligned)
            undo.commit()
        region = _Region()
        region.reservations.append((ptr, aligned))
        region.mappings.append((ptr, aligned))
        region.total = aligned
        self._regions[ptr] = region
        return Buffer._init(ptr, aligned, self, stream=s)

    def deallocate(
        self, ptr: DevicePointerType, size: int, *, stream: Stream | GraphBuilder | None = None
    ) -> None:
        """Unmap and free an allocation (after synchronizing ``stream`` if given).

        A closed ``stream`` cannot be synchronized: its context is
        synchronized instead.
        """
        ptr = int(ptr)  # type: ignore[arg-type]  # None raises TypeError, as in cuda.core
        if not ptr:
            return
        if stream is not None:
            _sync_before_free(stream)
        region = self._regions.pop(ptr, None)
        if region is None:
            size = int(size)
            check(lib.cuMemUnmap(ptr, size), "cuMemUnmap")
            check(lib.cuMemAddressFree(ptr, size), "cuMemAddressFree")
            return
        _release_region(region)

    def modify_allocation(
        self,
        buf: Buffer,
        new_size: int,
        config: VirtualMemoryResourceOptions | dict[str, Any] | None = None,
    ) -> Buffer:
        """Grow ``buf`` to ``new_size`` bytes, keeping its contents.

        The address is kept when the range after the allocation can be
        reserved; otherwise the memory is remapped to a new range and ``buf``
        is updated to the new address.  On failure nothing changes.

        Parameters
        ----------
        buf : Buffer
            A buffer allocated by this resource.
        new_size : int
            The new size in bytes (a smaller size only updates access rights).
        config : VirtualMemoryResourceOptions or dict, optional
            Replaces this resource's configuration first.

        Returns
        -------
        Buffer
            ``buf`` itself, updated.
        """
        if config is not None:
            self.config = check_or_create_options(
                VirtualMemoryResourceOptions, config, "VirtualMemoryResource options"
            )
        if not isinstance(buf, Buffer):
            raise TypeError(f"buf must be a Buffer, not {type(buf).__name__}")
        require_open(buf.is_closed, "Buffer")
        new_size = _as_size(new_size)
        region = self._regions.get(buf.handle)
        if buf.memory_resource is not self or region is None:
            raise ValueError(
                "modify_allocation: buf was not allocated by this VirtualMemoryResource"
            )
        prop = self._allocation_prop()
        gran = self._granularity(prop)
        if new_size <= buf.size:
            for va, size in region.mappings:
                self._set_access(prop, va, size)
            return buf
        new_total = _align_up(new_size, gran)
        extra = new_total - region.total
        if extra <= 0:
            buf._size = new_size
            _release_of(buf).size = new_size
            return buf
        align = self.config.addr_align or gran
        end = buf.handle + region.total
        c_ptr = ffi.new("CUdeviceptr *")
        status = lib.cuMemAddressReserve(c_ptr, extra, align, end, 0)
        if not status and int(c_ptr[0]) == end:
            with _Undo() as undo:
                undo.add(lib.cuMemAddressFree, end, extra)
                self._map_new(undo, prop, end, extra)
                self._set_access(prop, end, extra)
                undo.commit()
            region.reservations.append((end, extra))
            region.mappings.append((end, extra))
            region.total = new_total
            buf._size = new_size
            _release_of(buf).size = new_size
            return buf
        if not status:
            check(lib.cuMemAddressFree(int(c_ptr[0]), extra), "cuMemAddressFree")
        return self._grow_by_remapping(buf, region, prop, new_size, new_total, align)

    def _grow_by_remapping(
        self, buf: Buffer, region: _Region, prop: Any, new_size: int, new_total: int, align: int
    ) -> Buffer:
        """Reserve a new range, map the old memory and a new chunk into it."""
        old_ptr = buf.handle
        c_ptr = ffi.new("CUdeviceptr *")
        with _Undo() as undo:
            check(lib.cuMemAddressReserve(c_ptr, new_total, align, 0, 0), "cuMemAddressReserve")
            new_ptr = as_int_handle(c_ptr[0])
            undo.add(lib.cuMemAddressFree, new_ptr, new_total)
            c_handle = ffi.new("CUmemGenericAllocationHandle *")
            mappings: list[tuple[int, int]] = []
            for va, size in region.mappings:
                check(
                    lib.cuMemRetainAllocationHandle(c_handle, ffi.cast("void *", va)),
                    "cuMemRetainAllocationHandle",
                )
                h = c_handle[0]
                dst = new_ptr + (va - old_ptr)
                status = lib.cuMemMap(dst, size, 0, h, 0)
                lib.cuMemRelease(h)  # the mappings keep the memory alive
                check(status, "cuMemMap")
                undo.add(lib.cuMemUnmap, dst, size)
                mappings.append((dst, size))
            self._map_new(undo, prop, new_ptr + region.total, new_total - region.total)
            mappings.append((new_ptr + region.total, new_total - region.total))
            for va, size in mappings:
                self._set_access(prop, va, size)
            undo.commit()
        _release_region(region)
        del self._regions[old_ptr]
        new_region = _Region()
        new_region.reservations.append((new_ptr, new_total))
        new_region.mappings.extend(mappings)
        new_region.total = new_total
        self._regions[new_ptr] = new_region
        # Re-point the buffer (and its deallocation) at the new range.
        rel = _release_of(buf)
        rel.ptr = new_ptr
        rel.size = new_size
        buf._ptr = new_ptr
        buf._size = new_size
        if buf._extra is not None:
            buf._extra.attrs = None
        return buf

    def _allocation_prop(self) -> Any:
        """A ``CUmemAllocationProp *`` for this resource's configuration."""
        config = self.config
        prop = ffi.new("CUmemAllocationProp *")
        prop.type = getattr(lib, _ALLOCATION_TYPES[config.allocation_type])
        prop.location.type = getattr(lib, _LOCATION_TYPES[config.location_type])
        if config.location_type == "device":
            prop.location.id = self._dev_id
        elif config.location_type == "host_numa":
            prop.location.id = max(
                _device_attribute(self._dev_id, lib.CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), 0
            )
        else:
            prop.location.id = 0
        prop.requestedHandleTypes = getattr(lib, _HANDLE_TYPES[config.handle_type])
        prop.allocFlags.gpuDirectRDMACapable = 1 if config.gpu_direct_rdma else 0
        return prop

    def _granularity(self, prop: Any) -> int:
        gran = ffi.new("size_t *")
        flag = getattr(lib, _GRANULARITY[self.config.granularity])
        check(lib.cuMemGetAllocationGranularity(gran, prop, flag), "cuMemGetAllocationGranularity")
        return int(gran[0])

    def _map_new(self, undo: _Undo, prop: Any, ptr: int, size: int) -> None:
        """Create ``size`` bytes of physical memory and map them at ``ptr``."""
        c_handle = ffi.new("CUmemGenericAllocationHandle *")
        check(lib.cuMemCreate(c_handle, size, prop, 0), f"cuMemCreate({size})")
        h = c_handle[0]
        status = lib.cuMemMap(ptr, size, 0, h, 0)
        release = lib.cuMemRelease(h)  # the mapping keeps the memory alive
        check(status, "cuMemMap")
        undo.add(lib.cuMemUnmap, ptr, size)
        check(release, "cuMemRelease")

    def _set_access(self, prop: Any, ptr: int, size: int) -> None:
        descs: list[tuple[int, int, int]] = []
        flags = _ACCESS[self.config.self_access]
        if flags is not None:
            descs.append((prop.location.type, prop.location.id, getattr(lib, flags)))
        flags = _ACCESS[self.config.peer_access]
        if flags is not None:
            peers: tuple[int, ...] = self.config.peers  # type: ignore[assignment]  # ordinals
            for peer in peers:
                descs.append((lib.CU_MEM_LOCATION_TYPE_DEVICE, peer, getattr(lib, flags)))
        if not descs:
            return
        c_descs = ffi.new("CUmemAccessDesc[]", len(descs))
        for i, (loc_type, loc_id, f) in enumerate(descs):
            c_descs[i].location.type = loc_type
            c_descs[i].location.id = loc_id
            c_descs[i].flags = f
        check(lib.cuMemSetAccess(ptr, size, c_descs, len(descs)), "cuMemSetAccess")

    @property
    def is_device_accessible(self) -> bool:
        """bool: Whether the memory is device memory (``location_type == "device"``)."""
        return self.config.location_type == "device"

    @property
    def is_host_accessible(self) -> bool:
        """bool: Whether the memory is host memory (``location_type == "host"``)."""
        return self.config.location_type == "host"

    @property
    def is_ipc_enabled(self) -> bool:
        """bool: Whether the physical memory is exportable (a handle type is set)."""
        return self.config.handle_type is not None

    @property
    def device_id(self) -> int:
        """int: The device ordinal, or -1 for host locations."""
        return self._dev_id if self.config.location_type == "device" else -1


def _align_up(size: int, gran: int) -> int:
    return (size + gran - 1) // gran * gran


def _device_attribute(dev_id: int, attr: int) -> int:
    out = ffi.new("int *")
    check(lib.cuDeviceGetAttribute(out, attr, dev_id), "cuDeviceGetAttribute")
    value: int = out[0]
    return value
