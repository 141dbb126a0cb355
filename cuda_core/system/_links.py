# SPDX-License-Identifier: Apache-2.0
"""Links between GPUs: :class:`NvlinkInfo` and the topology and
peer-to-peer queries between two :class:`~cuda_core.system.Device` objects."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import lib
from cuda_core.system._enums import from_nvml, to_nvml
from cuda_core.system._nvml import out_result
from cuda_core.system.typing import GpuP2PCapsIndex, GpuP2PStatus, GpuTopologyLevel

if TYPE_CHECKING:
    from cuda_core.system._device import Device

__all__ = ["NvlinkInfo", "get_p2p_status", "get_topology_common_ancestor"]

_NVLINK_VERSIONS = {1: (1, 0), 2: (2, 0), 3: (2, 2), 4: (3, 0), 5: (3, 1), 6: (4, 0)}
_NVLINK_VERSIONS.update({7: (5, 0), 8: (6, 0)})


class _NvlinkInfoType(type):
    @property
    def max_links(cls) -> int:
        """int: NVML_NVLINK_MAX_LINKS as of NVML 12 (deprecated)."""
        warnings.warn(
            "NvlinkInfo.max_links is deprecated; use Device.get_nvlink_count()",
            DeprecationWarning,
            stacklevel=2,
        )
        return 18


class NvlinkInfo(metaclass=_NvlinkInfoType):
    """One NVLink link of a device (asked on every read)."""

    __slots__ = ("_device", "_link")

    def __init__(self, device: Device, link: int) -> None:
        self._device = device
        self._link = link

    def __repr__(self) -> str:
        return f"<NvlinkInfo link={self._link}>"

    @property
    def version(self) -> tuple[int, int]:
        """tuple[int, int]: The NVLink version, e.g. ``(4, 0)``."""
        value = out_result(
            "unsigned int", lib.nvmlDeviceGetNvLinkVersion, self._device._h, self._link
        )
        try:
            return _NVLINK_VERSIONS[value]
        except KeyError:
            raise RuntimeError(f"unknown NVLink version {value}") from None

    @property
    def state(self) -> bool:
        """bool: The link is active."""
        value: int = out_result(
            "nvmlEnableState_t", lib.nvmlDeviceGetNvLinkState, self._device._h, self._link
        )
        return value == 1


def get_topology_common_ancestor(device1: Device, device2: Device) -> GpuTopologyLevel:
    """Return the closest :class:`GpuTopologyLevel` shared by two devices."""
    value = out_result(
        "nvmlGpuTopologyLevel_t", lib.nvmlDeviceGetTopologyCommonAncestor, device1._h, device2._h
    )
    level: GpuTopologyLevel = from_nvml(GpuTopologyLevel, value)
    return level


def get_p2p_status(device1: Device, device2: Device, index: GpuP2PCapsIndex | str) -> GpuP2PStatus:
    """Return whether peer-to-peer capability ``index`` works between two devices.

    Parameters
    ----------
    index : GpuP2PCapsIndex or str
        The capability (ValueError for an unknown one).

    Returns
    -------
    GpuP2PStatus
        UNKNOWN for a status this version does not know.
    """
    c_index = to_nvml(GpuP2PCapsIndex, index)
    value = out_result(
        "nvmlGpuP2PStatus_t", lib.nvmlDeviceGetP2PStatus, device1._h, device2._h, c_index
    )
    status: GpuP2PStatus = from_nvml(GpuP2PStatus, value, GpuP2PStatus.UNKNOWN)
    return status


NvlinkInfo.__module__ = "cuda_core.system._device"
