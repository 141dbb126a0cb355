# SPDX-License-Identifier: Apache-2.0
"""Memory: buffers, memory resources, IPC and DLPack export."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._buffer import *  # noqa: F403
from cuda_core._memory._buffer import __all__ as _buffer_all
from cuda_core._memory._device_memory_resource import *  # noqa: F403
from cuda_core._memory._device_memory_resource import __all__ as _dmr_all
from cuda_core._memory._graph_memory_resource import *  # noqa: F403
from cuda_core._memory._graph_memory_resource import __all__ as _gmr_all
from cuda_core._memory._ipc import *  # noqa: F403
from cuda_core._memory._ipc import __all__ as _ipc_all
from cuda_core._memory._legacy import *  # noqa: F403
from cuda_core._memory._legacy import __all__ as _legacy_all
from cuda_core._memory._managed_memory_resource import *  # noqa: F403
from cuda_core._memory._managed_memory_resource import __all__ as _managed_all
from cuda_core._memory._memory_resource import *  # noqa: F403
from cuda_core._memory._memory_resource import __all__ as _mr_all
from cuda_core._memory._pinned_memory_resource import *  # noqa: F403
from cuda_core._memory._pinned_memory_resource import __all__ as _pinned_all
from cuda_core._memory._virtual_memory_resource import *  # noqa: F403
from cuda_core._memory._virtual_memory_resource import __all__ as _vmr_all

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core._memory._memory_resource import MemoryResource

__all__ = [
    *_buffer_all,
    *_mr_all,
    *_dmr_all,
    *_gmr_all,
    *_ipc_all,
    *_legacy_all,
    *_managed_all,
    *_pinned_all,
    *_vmr_all,
    "_default_memory_resource",
]


def _default_memory_resource(device: Device | int) -> MemoryResource:
    """Return the default memory resource of ``device`` (a Device or ordinal).

    A :class:`DeviceMemoryResource` over the device's current pool where
    memory pools are supported, otherwise a ``_SynchronousMemoryResource``
    (``cuMemAlloc``/``cuMemFree``).
    """
    dev_id = device if isinstance(device, int) else device.device_id
    supported = ffi.new("int *")
    check(
        lib.cuDeviceGetAttribute(supported, lib.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev_id),
        "cuDeviceGetAttribute(MEMORY_POOLS_SUPPORTED)",
    )
    if supported[0]:
        return DeviceMemoryResource(device)  # noqa: F405
    return _SynchronousMemoryResource(device)  # noqa: F405
