# SPDX-License-Identifier: Apache-2.0
"""Memory locations: a Device or a Host as the driver's ``CUmemLocation``.

Prefetches, advice, batched managed-memory operations and copy location
hints name where memory should live with a :class:`~cuda_core.Device` or a
:class:`~cuda_core.Host`; :func:`location_pair` turns either into the
``(CUmemLocationType, id)`` pair the driver takes, with ``cuda.core``'s
checks.  Device ordinals are not locations (as in ``cuda.core``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import lib
from cuda_core._host import Host
from cuda_core._loader import driver_version

__all__: list[str] = []

if TYPE_CHECKING:
    from cuda_core._device import Device

#: The driver version that introduced host NUMA locations in cuda.core's
#: managed-memory and copy operations.
_NUMA_DRIVER = 13000

_LOC_DEVICE = lib.CU_MEM_LOCATION_TYPE_DEVICE
_LOC_HOST = lib.CU_MEM_LOCATION_TYPE_HOST
_LOC_HOST_NUMA = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA
_LOC_HOST_NUMA_CURRENT = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT

#: The driver's CUDA version (asked once per process, by the loader).
current_driver_version = driver_version


@overload
def location_pair(value: Any, *, allow_none: Literal[False] = ...) -> tuple[int, int]: ...
@overload
def location_pair(value: Any, *, allow_none: bool) -> tuple[int, int] | None: ...
def location_pair(value: Any, *, allow_none: bool = False) -> tuple[int, int] | None:
    """Return ``(CUmemLocationType, id)`` for a memory location, or None.

    Accepts a :class:`~cuda_core.Device` or a :class:`~cuda_core.Host` (the
    plain host, a host NUMA node or the calling thread's NUMA node);
    ``None`` gives None when ``allow_none`` is true.

    Raises
    ------
    ValueError
        For ``None`` when not allowed ("location is required").
    TypeError
        For anything else (device ordinals included), and for a NUMA-specific
        Host with a driver older than CUDA 13.0.
    """
    if _is_device(value):
        return (_LOC_DEVICE, value.device_id)
    if isinstance(value, Host):
        if value.is_numa_current:
            _require_numa_driver()
            return (_LOC_HOST_NUMA_CURRENT, 0)
        if value.numa_id is not None:
            _require_numa_driver()
            return (_LOC_HOST_NUMA, value.numa_id)
        return (_LOC_HOST, 0)
    if value is None:
        if allow_none:
            return None
        raise ValueError("location is required")
    raise TypeError(f"location must be a Device, Host, or None; got {type(value).__name__}")


def is_location(value: object) -> bool:
    """Whether ``value`` is a Device or a Host."""
    return isinstance(value, Host) or _is_device(value)


def device_location(ordinal: int) -> Device:
    """Return the :class:`~cuda_core.Device` of ``ordinal`` (a location the driver reported)."""
    return _slots.device_class()(ordinal)


def _is_device(value: object) -> bool:
    device_class = _slots.device_class()
    return device_class is not None and isinstance(value, device_class)


def _require_numa_driver() -> None:
    """Refuse a NUMA-specific Host before CUDA 13.0, as ``cuda.core`` does.

    ``cuda.core`` bound to CUDA 12 passes host locations as the legacy
    device ordinal -1, which names no NUMA node.
    """
    if current_driver_version() < _NUMA_DRIVER:
        raise TypeError(
            "Host(numa_id=...) / Host.numa_current() require a CUDA 13+ driver; use Host() instead"
        )
