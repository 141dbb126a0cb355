# SPDX-License-Identifier: Apache-2.0
"""System events (a GPU bound to or unbound from the driver):
:func:`register_events` returns a :class:`RegisteredSystemEvents`.

A :class:`RegisteredSystemEvents` owns an NVML system event set:
:meth:`~RegisteredSystemEvents.close` (idempotent, also through ``with``)
frees it; a finalizer frees it too if it is dropped open.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._lifetime import Closeable
from cuda_core.system._device import Device
from cuda_core.system._device_events import event_mask
from cuda_core.system._enums import from_nvml
from cuda_core.system._nvml import CArrayView, check, initialize, is_initialized, struct_version
from cuda_core.system.exceptions import NvmlError
from cuda_core.system.typing import SystemEventType

__all__ = ["RegisteredSystemEvents", "SystemEvent", "SystemEvents", "register_events"]

_SET_VERSION = struct_version("nvmlSystemEventSetCreateRequest_v1_t", 1)
_FREE_VERSION = struct_version("nvmlSystemEventSetFreeRequest_v1_t", 1)
_REGISTER_VERSION = struct_version("nvmlSystemRegisterEventRequest_v1_t", 1)
_WAIT_VERSION = struct_version("nvmlSystemEventSetWaitRequest_v1_t", 1)


def register_events(
    events: SystemEventType | str | list[SystemEventType | str],
) -> RegisteredSystemEvents:
    """Register for system events (a :class:`SystemEventType`, its string, or a list).

    Returns
    -------
    RegisteredSystemEvents
        Close it (or use ``with``) when done.  Linux only.
    """
    mask = event_mask(SystemEventType, events)
    initialize()
    return RegisteredSystemEvents(mask)


class RegisteredSystemEvents(Closeable):
    """A registered system event set; wait for events with :meth:`wait`."""

    def __init__(self, mask: int) -> None:
        create = ffi.new("nvmlSystemEventSetCreateRequest_t *")
        create.version = _SET_VERSION
        check(lib.nvmlSystemEventSetCreate(create))
        self._set: Any = create.set
        self._finalizer = weakref.finalize(self, _free_set, self._set)
        try:
            request = ffi.new("nvmlSystemRegisterEventRequest_t *")
            request.version = _REGISTER_VERSION
            request.eventTypes = mask
            request.set = self._set
            check(lib.nvmlSystemRegisterEvents(request))
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        state = "closed" if self._set is None else f"handle={self.handle:#x}"
        return f"<RegisteredSystemEvents {state}>"

    def close(self) -> None:
        """Free the event set (idempotent)."""
        c_set, self._set = self._set, None
        if c_set is None:
            return
        self._finalizer.detach()
        check(_free_status(c_set))

    @property
    def handle(self) -> int:
        """int: The ``nvmlSystemEventSet_t`` as an int (0 once closed)."""
        return 0 if self._set is None else int(ffi.cast("uintptr_t", self._set))

    def wait(self, timeout_ms: int = 0, buffer_size: int = 1) -> SystemEvents:
        """Wait up to ``timeout_ms`` ms for events; return up to ``buffer_size`` of them.

        Returns
        -------
        SystemEvents

        Raises
        ------
        TimeoutError
            (:class:`cuda_core.system.TimeoutError`) no event arrived in time:
            NVML raises this rather than returning no events.
        """
        if self._set is None:
            raise RuntimeError("this RegisteredSystemEvents is closed")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be at least 1, got {buffer_size}")
        data = ffi.new("nvmlSystemEventData_v1_t[]", buffer_size)
        request = ffi.new("nvmlSystemEventSetWaitRequest_t *")
        request.version = _WAIT_VERSION
        request.timeoutms = timeout_ms
        request.set = self._set
        request.data = data
        request.dataSize = buffer_size
        check(lib.nvmlSystemEventSetWait(request))
        return SystemEvents(data, min(request.numEvent, buffer_size))


class SystemEvent:
    """One system event."""

    __slots__ = ("_owner", "_e")

    def __init__(self, owner: Any, item: Any) -> None:
        self._owner = owner  # keeps the array holding ``item`` alive
        self._e = item

    def __repr__(self) -> str:
        return f"<SystemEvent event_type={self._e.eventType:#x} gpu_id={self._e.gpuId:#x}>"

    @property
    def event_type(self) -> SystemEventType:
        """SystemEventType: What happened (KeyError for a bit this version does not know)."""
        member: SystemEventType = from_nvml(SystemEventType, self._e.eventType)
        return member

    @property
    def gpu_id(self) -> int:
        """int: The GPU, as NVML's PCI-format id."""
        value: int = self._e.gpuId
        return value

    @property
    def device(self) -> Device:
        """Device: The GPU the event is about.

        The id is read as the standard PCI packing (domain << 16 | bus << 8 |
        device << 3 | function), formatted as NVML's bus id.
        """
        gid = self._e.gpuId
        bus_id = f"{gid >> 16:08X}:{(gid >> 8) & 0xFF:02X}:{(gid >> 3) & 0x1F:02X}.{gid & 7}"
        return Device(pci_bus_id=bus_id)


class SystemEvents(CArrayView):
    """The events one :meth:`RegisteredSystemEvents.wait` received."""

    __slots__ = ()
    _item_name = "event"
    _item_type = SystemEvent


def _free_status(c_set: Any) -> int:
    if c_set == ffi.NULL or not is_initialized():
        return 0  # NVML shut down (or a forked child): the set went with it
    request = ffi.new("nvmlSystemEventSetFreeRequest_t *")
    request.version = _FREE_VERSION
    request.set = c_set
    status: int = lib.nvmlSystemEventSetFree(request)
    return status


def _free_set(c_set: Any) -> None:
    """Finalizer: free a set dropped open; a failure becomes a warning."""
    try:
        check(_free_status(c_set))
    except NvmlError as exc:
        warnings.warn(
            f"freeing an NVML system event set failed: {exc}", RuntimeWarning, stacklevel=2
        )


for _cls in (RegisteredSystemEvents, SystemEvent, SystemEvents):
    _cls.__module__ = "cuda_core.system._system_events"
