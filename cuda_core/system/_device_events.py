# SPDX-License-Identifier: Apache-2.0
"""Device events: :meth:`Device.register_events` returns a :class:`DeviceEvents`.

A :class:`DeviceEvents` owns an NVML event set: :meth:`~DeviceEvents.close`
(idempotent, also through ``with``) frees it; a finalizer frees it too if
it is dropped open.  :meth:`~DeviceEvents.wait` blocks (without the GIL) for
the next event and returns an :class:`EventData`.
"""

from __future__ import annotations

import enum
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._lifetime import Closeable
from cuda_core.system._enums import from_nvml, to_nvml
from cuda_core.system._nvml import check, is_initialized
from cuda_core.system.exceptions import NvmlError
from cuda_core.system.typing import EventType

if TYPE_CHECKING:
    from cuda_core.system._device import Device

__all__ = ["DeviceEvents", "EventData", "event_mask"]

_MODULE = "cuda_core.system._device"


def event_mask(cls: type[enum.Enum], events: object) -> int:
    """Return the OR of NVML's bits for ``events`` (a member, its string, or a list).

    Raises
    ------
    TypeError
        If ``events`` is not a member, a string or a list of them.
    ValueError
        If an item is not a valid ``cls`` value.
    """
    if isinstance(events, str):
        events = [events]
    if not isinstance(events, list):
        raise TypeError(
            f"events must be a {cls.__name__} member, its str value or a list of them, "
            f"got {type(events).__name__}"
        )
    mask = 0
    for event in events:
        mask |= to_nvml(cls, event)
    return mask


class DeviceEvents(Closeable):
    """Events registered on one device; wait for them with :meth:`wait`."""

    def __init__(self, handle: Any, mask: int) -> None:
        self._device_h = handle
        out = ffi.new("nvmlEventSet_t *")
        check(lib.nvmlEventSetCreate(out))
        self._set: Any = out[0]
        self._finalizer = weakref.finalize(self, _free_event_set, self._set)
        try:
            check(lib.nvmlDeviceRegisterEvents(handle, mask, self._set))
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        state = "closed" if self._set is None else f"handle={self.handle:#x}"
        return f"<DeviceEvents {state}>"

    def close(self) -> None:
        """Free the event set (idempotent)."""
        c_set, self._set = self._set, None
        if c_set is None:
            return
        self._finalizer.detach()
        if c_set != ffi.NULL and is_initialized():
            check(lib.nvmlEventSetFree(c_set))

    @property
    def handle(self) -> int:
        """int: The ``nvmlEventSet_t`` as an int (0 once closed)."""
        return 0 if self._set is None else int(ffi.cast("uintptr_t", self._set))

    def wait(self, timeout_ms: int = 0) -> EventData:
        """Wait up to ``timeout_ms`` milliseconds for the next event.

        Raises
        ------
        TimeoutError
            (:class:`cuda_core.system.TimeoutError`) no event arrived in time.
            NVML treats ``timeout_ms`` as the longest wait.
        """
        if self._set is None:
            raise RuntimeError("this DeviceEvents is closed")
        data = ffi.new("nvmlEventData_t *")
        check(lib.nvmlEventSetWait_v2(self._set, data, timeout_ms))
        return EventData(data)


class EventData:
    """One device event, as :meth:`DeviceEvents.wait` received it."""

    __slots__ = ("_d",)

    def __init__(self, data: Any) -> None:
        self._d = data

    def __repr__(self) -> str:
        return f"<EventData event_type={self._d.eventType:#x}>"

    @property
    def device(self) -> Device:
        """Device: The device the event happened on."""
        return _slots.nvml_device_class()._from_handle(self._d.device)

    @property
    def event_type(self) -> EventType:
        """EventType: What happened (KeyError for a bit this version does not know)."""
        member: EventType = from_nvml(EventType, self._d.eventType)
        return member

    def _require_xid(self) -> None:
        if self.event_type != EventType.XID_CRITICAL_ERROR:
            raise ValueError(
                f"only XID_CRITICAL_ERROR events carry this field, not {self.event_type.name}"
            )

    @property
    def event_data(self) -> int:
        """int: The Xid number (XID_CRITICAL_ERROR events only, else ValueError)."""
        self._require_xid()
        value: int = self._d.eventData
        return value

    @property
    def gpu_instance_id(self) -> int:
        """int: The GPU instance (XID_CRITICAL_ERROR events only, else ValueError)."""
        self._require_xid()
        value: int = self._d.gpuInstanceId
        return value

    @property
    def compute_instance_id(self) -> int:
        """int: The compute instance (XID_CRITICAL_ERROR events only, else ValueError)."""
        self._require_xid()
        value: int = self._d.computeInstanceId
        return value


def _free_event_set(c_set: Any) -> None:
    """Finalizer: free a set dropped open; a failure becomes a warning."""
    if c_set == ffi.NULL or not is_initialized():
        return  # NVML shut down (or a forked child): the set went with it
    try:
        check(lib.nvmlEventSetFree(c_set))
    except NvmlError as exc:
        warnings.warn(f"freeing an NVML event set failed: {exc}", RuntimeWarning, stacklevel=2)


for _cls in (DeviceEvents, EventData):
    _cls.__module__ = _MODULE
