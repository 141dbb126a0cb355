# SPDX-License-Identifier: Apache-2.0
"""NVML: the driver's view of the system and its GPUs (``cuda.core.system``).

Importing this package needs neither NVML nor a GPU: ``libnvidia-ml.so.1``
(from the NVIDIA driver, through the system loader, or the file named by
``CUDA_CORE_NVML_PATH``) is loaded and initialized at the first call, once
per process; a miss raises :class:`LibraryNotFoundError` naming what was
searched.  :func:`get_user_mode_driver_version` and :func:`get_num_devices`
fall back to the CUDA driver where NVML cannot be loaded.

Every NVML failure raises a subclass of :class:`NvmlError` (the classes are
in :mod:`cuda_core.system.exceptions` and here); the enumerations are in
:mod:`cuda_core.system.typing`.
"""

from __future__ import annotations

from cuda_core.system import exceptions, typing
from cuda_core.system._device import Device
from cuda_core.system._links import (
    NvlinkInfo,
    get_p2p_status,
    get_topology_common_ancestor,
)
from cuda_core.system._system import (
    CUDA_BINDINGS_NVML_IS_COMPATIBLE,
    get_driver_branch,
    get_kernel_mode_driver_version,
    get_num_devices,
    get_nvml_version,
    get_process_name,
    get_user_mode_driver_version,
)
from cuda_core.system._system_events import register_events
from cuda_core.system.exceptions import *  # noqa: F403

__all__ = [
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_process_name",
    "get_user_mode_driver_version",
    "get_nvml_version",
    "Device",
    "get_p2p_status",
    "get_topology_common_ancestor",
    "NvlinkInfo",
    "register_events",
    *exceptions.__all__,
]

# Read-only properties fail as on cuda.core's classes (see cuda_core._read_only).
from cuda_core._read_only import seal_read_only as _seal_read_only  # noqa: E402

_seal_read_only()
