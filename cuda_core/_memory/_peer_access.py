# SPDX-License-Identifier: Apache-2.0
"""Access of other devices to a device memory pool.

:class:`PeerAccessibleBySetProxy` (``DeviceMemoryResource.peer_accessible_by``)
is a live set of the devices with read-write access; :class:`MemoryPoolAccess`
names the access levels and :func:`DMR_mempool_get_access` reads one device's.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, MutableSet, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._lifetime import require_open
from cuda_core._loader import device_count

if TYPE_CHECKING:
    from typing_extensions import Self

    from cuda_core._device import Device
    from cuda_core._memory._device_memory_resource import DeviceMemoryResource
    from cuda_core._memory._memory_pool import _MemPool

    _S = TypeVar("_S")

__all__ = ["MemoryPoolAccess", "PeerAccessibleBySetProxy", "DMR_mempool_get_access"]


class PeerAccessibleBySetProxy(MutableSet["Device"]):
    """Live set of the devices granted read-write access to a device memory pool.

    Reads query the driver (``cuMemPoolGetAccess``); writes call
    ``cuMemPoolSetAccess`` (bulk operations in a single call).  Iteration
    yields :class:`~cuda_core.Device` objects; ``add``, ``discard`` and
    ``in`` also accept device ordinals.  The owning device is ignored.
    """

    __slots__ = ("_mr",)

    _mr: _MemPool

    def __init__(self, mr: _MemPool) -> None:
        self._mr = mr

    @classmethod
    def _from_iterable(cls, it: Iterable[_S]) -> set[_S]:
        return set(it)

    def __contains__(self, value: object) -> bool:
        try:
            dev_id = _resolve_device_id(value)
        except (TypeError, ValueError):
            return False
        if dev_id == self._mr._dev_id:
            return False
        return _pool_access(self._mr, dev_id) == MemoryPoolAccess.READ_WRITE

    def __iter__(self) -> Iterator[Device]:
        return iter([_slots.device_class()(i) for i in _peer_ids(self._mr)])

    def __len__(self) -> int:
        return len(_peer_ids(self._mr))

    def __repr__(self) -> str:
        return f"PeerAccessibleBySetProxy({set(self)!r})"

    def add(self, value: Device | int) -> None:
        """Grant ``value`` (Device or ordinal) read-write access to the pool."""
        self._apply([value], ())

    def discard(self, value: object) -> None:
        """Revoke the access of ``value`` (Device or ordinal) to the pool."""
        self._apply((), [value])

    def clear(self) -> None:
        """Revoke all peer access in one driver call."""
        self._apply((), _peer_ids(self._mr))

    def update(self, *others: Iterable[Device | int]) -> None:
        """Grant access to every device in ``others`` in one driver call."""
        self._apply([v for other in others for v in other], ())

    def difference_update(self, *others: Iterable[object]) -> None:
        """Revoke access for every device in ``others`` in one driver call."""
        self._apply((), [v for other in others for v in other])

    def __ior__(  # type: ignore[misc, override]  # takes any iterable
        self, other: Iterable[Device | int]
    ) -> Self:
        self.update(other)
        return self

    def __isub__(self, other: Iterable[object]) -> Self:  # type: ignore[misc]  # any iterable
        if other is self:
            self.clear()
        else:
            self.difference_update(other)
        return self

    def _apply(self, additions: Iterable[Device | int], removals: Iterable[object]) -> None:
        mr = self._mr
        require_open(mr.is_closed, type(mr).__name__)
        owner = mr._dev_id
        current = set(_peer_ids(mr))
        add_ids: set[int] = set()
        for value in additions:
            dev_id = _resolve_device_id(value)
            if dev_id != owner:
                add_ids.add(dev_id)
        bad = sorted(d for d in add_ids - current if not _can_access_peer(owner, d))
        if bad:
            raise ValueError(
                f"Device {owner} cannot access peer(s): {', '.join(str(d) for d in bad)}"
            )
        remove_ids: set[int] = set()
        for item in removals:
            try:
                dev_id = _resolve_device_id(item)
            except (TypeError, ValueError):
                continue
            if dev_id != owner and dev_id in current:
                remove_ids.add(dev_id)
        _set_peer_access(mr, sorted(add_ids - current), sorted(remove_ids))


class MemoryPoolAccess(enum.IntEnum):
    """Access that a device has to the allocations of a memory pool.

    Values are the driver's ``CUmemAccess_flags``.
    """

    NONE = lib.CU_MEM_ACCESS_FLAGS_PROT_NONE
    READ = lib.CU_MEM_ACCESS_FLAGS_PROT_READ
    READ_WRITE = lib.CU_MEM_ACCESS_FLAGS_PROT_READWRITE


def DMR_mempool_get_access(  # noqa: N802 - upstream name
    dmr: DeviceMemoryResource, device_id: Device | int
) -> MemoryPoolAccess:
    """Return the :class:`MemoryPoolAccess` that ``device_id`` has to ``dmr``'s pool.

    Upstream returns the strings ``"rw"``, ``"r"`` or ``""``; cuda_core
    returns enum members instead (see DESIGN, error rule 6).
    """
    require_open(dmr.is_closed, type(dmr).__name__)
    return _pool_access(dmr, _resolve_device_id(device_id))


def _resolve_device_id(value: Any) -> int:
    """The ordinal of ``value`` (a Device or an int); TypeError or ValueError otherwise."""
    if isinstance(value, bool):
        raise TypeError("a device must be a Device or an int ordinal, not bool")
    return _slots.device_class()(value).device_id


def _pool_access(mr: _MemPool, dev_id: int) -> MemoryPoolAccess:
    require_open(mr.is_closed, type(mr).__name__)  # a closed pool may be destroyed
    loc = ffi.new("CUmemLocation *")
    loc.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
    loc.id = dev_id
    flags = ffi.new("CUmemAccess_flags *")
    check(lib.cuMemPoolGetAccess(flags, mr._pool, loc), "cuMemPoolGetAccess")
    return MemoryPoolAccess(int(flags[0]))


def _peer_ids(mr: _MemPool) -> tuple[int, ...]:
    """Device ordinals (other than the owner) with read-write access to ``mr``."""
    owner = mr._dev_id
    return tuple(
        i
        for i in range(device_count())
        if i != owner and _pool_access(mr, i) == MemoryPoolAccess.READ_WRITE
    )


def _set_peer_access(mr: _MemPool, to_add: Sequence[int], to_remove: Sequence[int]) -> None:
    """Grant and revoke peer access in one ``cuMemPoolSetAccess`` call."""
    n = len(to_add) + len(to_remove)
    if not n:
        return
    descs = ffi.new("CUmemAccessDesc[]", n)
    for i, (dev_id, flags) in enumerate(
        [(d, MemoryPoolAccess.READ_WRITE) for d in to_add]
        + [(d, MemoryPoolAccess.NONE) for d in to_remove]
    ):
        descs[i].location.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
        descs[i].location.id = dev_id
        descs[i].flags = int(flags)
    check(lib.cuMemPoolSetAccess(mr._pool, descs, n), "cuMemPoolSetAccess")


def _can_access_peer(dev_id: int, peer_id: int) -> bool:
    """Whether ``peer_id`` can access memory on ``dev_id`` (cuDeviceCanAccessPeer)."""
    out = ffi.new("int *")
    check(lib.cuDeviceCanAccessPeer(out, peer_id, dev_id), "cuDeviceCanAccessPeer")
    return bool(out[0])


def _set_peer_accessible_by(mr: _MemPool, devices: Iterable[Device | int]) -> None:
    """Make the set of peers with access exactly ``devices`` (one driver call)."""
    require_open(mr.is_closed, type(mr).__name__)
    owner = mr._dev_id
    target: set[int] = set()
    for value in devices:
        dev_id = _resolve_device_id(value)
        if dev_id != owner:
            target.add(dev_id)
    current = set(_peer_ids(mr))
    bad = sorted(d for d in target - current if not _can_access_peer(owner, d))
    if bad:
        raise ValueError(f"Device {owner} cannot access peer(s): {', '.join(str(d) for d in bad)}")
    _set_peer_access(mr, sorted(target - current), sorted(current - target))
