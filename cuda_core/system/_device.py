# SPDX-License-Identifier: Apache-2.0
"""NVML's view of a GPU: :class:`Device`, :class:`NvlinkInfo` and the
topology queries between two devices.

A :class:`Device` holds only NVML's handle (``_handle``, an int); every
property asks NVML when it is read.  A feature the GPU lacks raises NVML's
error (usually :class:`~cuda_core.system.NotSupportedError`) rather than
returning a placeholder; the few exceptions are noted on each property.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.system._device_events import DeviceEvents, event_mask
from cuda_core.system._device_info import (
    BAR1MemoryInfo,
    DeviceAttributes,
    GpuDynamicPstatesInfo,
    InforomInfo,
    MemoryInfo,
    MigInfo,
    PciInfo,
    ProcessInfo,
    RepairStatus,
    Utilization,
)
from cuda_core.system._device_sensors import (
    ClockInfo,
    CoolerInfo,
    FanInfo,
    FieldValues,
    Temperature,
    field_value_array,
)
from cuda_core.system._enums import bits_to_members, from_nvml, to_nvml
from cuda_core.system._links import NvlinkInfo
from cuda_core.system._nvml import (
    READ_FAILED,
    check,
    initialize,
    out_result,
    string_result,
    struct_version,
    two_call,
    uint_result,
)
from cuda_core.system.exceptions import InvalidArgumentError, NotFoundError
from cuda_core.system.typing import (
    AddressingMode,
    AffinityScope,
    ClocksEventReasons,
    DeviceArch,
    EventType,
    FieldId,
    GpuTopologyLevel,
)

if TYPE_CHECKING:
    from cuda_core._device import Device as CudaDevice
    from cuda_core.system.typing import ClockType

__all__ = ["Device"]

_BRANDS = {
    0: "Unknown",
    1: "Quadro",
    2: "Tesla",
    3: "NVS",
    4: "GRID",
    5: "GeForce",
    6: "Titan",
    7: "NVIDIA vApps",
    8: "NVIDIA VPC",
    9: "NVIDIA VCS",
    10: "NVIDIA VWS",
    11: "NVIDIA vGaming",
    12: "Quadro RTX",
    13: "NVIDIA RTX",
    14: "NVIDIA",
    15: "GeForce RTX",
    16: "Titan RTX",
}


_PSTATE_UNKNOWN = 32
_tls = threading.local()  # per-thread out-structs of the hot reads
_new_object = object.__new__
_PCI_VERSION = struct_version("nvmlPciInfoExt_v1_t", 1)
_COOLER_VERSION = struct_version("nvmlCoolerInfo_v1_t", 1)
_REPAIR_VERSION = struct_version("nvmlRepairStatus_v1_t", 1)
_ADDRESSING_VERSION = struct_version("nvmlDeviceAddressingMode_v1_t", 1)


class Device:
    """A GPU as NVML sees it.

    Give exactly one of ``index`` (NVML's order, which may differ from
    CUDA's), ``uuid`` (``"GPU-..."``/``"MIG-..."``, bytes or str) or
    ``pci_bus_id`` (``"00000000:01:00.0"``).

    Raises
    ------
    ValueError
        If none or more than one of them is given.
    TypeError
        If ``uuid`` or ``pci_bus_id`` is not a str or bytes.
    InvalidArgumentError
        If ``index`` is out of range (a negative index: OverflowError).
    NotFoundError
        If no device has that ``uuid`` or ``pci_bus_id``.
    """

    _h: Any
    _handle: int
    _temperature: Temperature

    def __init__(
        self,
        *,
        index: int | None = None,
        uuid: bytes | str | None = None,
        pci_bus_id: bytes | str | None = None,
    ) -> None:
        given = (index is not None) + (uuid is not None) + (pci_bus_id is not None)
        if given > 1:
            raise ValueError("Handle requires only one of `index`, `uuid`, or `pci_bus_id`.")
        if given == 0:
            raise ValueError("Handle requires either a device `index`, `uuid`, or `pci_bus_id`.")
        initialize()
        out = ffi.new("nvmlDevice_t *")
        if index is not None:
            check(lib.nvmlDeviceGetHandleByIndex_v2(index, out))
        elif uuid is not None:
            check(lib.nvmlDeviceGetHandleByUUID(_c_text(uuid, "uuid"), out))
        else:
            check(lib.nvmlDeviceGetHandleByPciBusId_v2(_c_text(pci_bus_id, "pci_bus_id"), out))
        self._h = out[0]
        self._handle = int(ffi.cast("uintptr_t", self._h))

    @classmethod
    def _from_handle(cls, c_handle: Any) -> Device:
        self = cls.__new__(cls)
        self._h = ffi.cast("nvmlDevice_t", c_handle)
        self._handle = int(ffi.cast("uintptr_t", c_handle))
        return self

    @classmethod
    def _from_cuda_uuid(cls, uuid: str) -> Device:
        """Return the device whose UUID (CUDA's form, without prefix) is ``uuid``.

        NVML accepts the un-prefixed form (seen with driver 580); the retry
        with the ``"GPU-"`` prefix serves drivers that do not.
        """
        try:
            return cls(uuid=uuid)
        except (NotFoundError, InvalidArgumentError):
            return cls(uuid="GPU-" + uuid)

    # --- classmethods ---------------------------------------------------

    @classmethod
    def get_device_count(cls) -> int:
        """Return the number of GPUs NVML sees (all of them, whatever CUDA_VISIBLE_DEVICES)."""
        n: int = lib.cc_nvml_device_count()
        if n > READ_FAILED:
            return n
        initialize()  # not initialized yet (or a failure): initialize, then ask again
        count: int = out_result("unsigned int", lib.nvmlDeviceGetCount_v2)
        return count

    @classmethod
    def get_all_devices(cls) -> Iterator[Device]:
        """Yield every GPU NVML sees, in NVML's order (a generator)."""
        for i in range(cls.get_device_count()):
            yield cls(index=i)

    @classmethod
    def get_all_devices_with_cpu_affinity(cls, cpu_index: int) -> Iterator[Device]:
        """Yield the GPUs with affinity to CPU ``cpu_index`` (a generator; Linux)."""
        initialize()
        handles, count = two_call("nvmlDevice_t", lib.nvmlSystemGetTopologyGpuSet, cpu_index)
        for i in range(count):
            yield cls._from_handle(handles[i])

    # --- methods --------------------------------------------------------

    def to_cuda_device(self) -> CudaDevice:
        """Return the :class:`cuda_core.Device` of this GPU (matched by UUID).

        Raises
        ------
        RuntimeError
            If CUDA has no such device (a GPU in MIG mode, or one hidden by
            ``CUDA_VISIBLE_DEVICES``).
        """
        want = self.uuid_without_prefix.lower()
        for dev in _slots.device_class().get_all_devices():
            if dev.uuid.lower() == want:
                found: CudaDevice = dev
                return found
        raise RuntimeError("No corresponding CUDA device found for this NVML device.")

    def get_memory_affinity(self, scope: AffinityScope | str = AffinityScope.NODE) -> list[int]:
        """Return the NUMA nodes (``scope`` NODE) or sockets near this GPU's memory."""
        return self._affinity(lib.nvmlDeviceGetMemoryAffinity, scope)

    def get_cpu_affinity(self, scope: AffinityScope | str = AffinityScope.NODE) -> list[int]:
        """Return the CPUs near this GPU, within a NUMA node or socket (``scope``)."""
        return self._affinity(lib.nvmlDeviceGetCpuAffinityWithinScope, scope)

    def _affinity(self, fn: Callable[..., int], scope: AffinityScope | str) -> list[int]:
        c_scope = to_nvml(AffinityScope, scope)
        words = max(1, -(-(os.cpu_count() or 1) // 64))
        mask = ffi.new("unsigned long[]", words)
        check(fn(self._h, words, mask, c_scope))
        bits: int = ffi.sizeof("unsigned long") * 8
        return [w * bits + b for w in range(words) for b in range(bits) if mask[w] >> b & 1]

    def set_cpu_affinity(self) -> None:
        """Bind the calling process's threads to the CPUs near this GPU."""
        check(lib.nvmlDeviceSetCpuAffinity(self._h))

    def clear_cpu_affinity(self) -> None:
        """Undo :meth:`set_cpu_affinity`."""
        check(lib.nvmlDeviceClearCpuAffinity(self._h))

    def get_clock(self, clock_type: ClockType | str) -> ClockInfo:
        """Return the :class:`ClockInfo` of clock domain ``clock_type`` (a :class:`ClockType`)."""
        return ClockInfo(self._h, clock_type)

    def register_events(self, events: EventType | str | list[EventType | str]) -> DeviceEvents:
        """Register for ``events`` (an :class:`EventType`, its string, or a list).

        Returns
        -------
        DeviceEvents
            Close it (or use ``with``) when done.

        Raises
        ------
        NotSupportedError
            If the device supports none of the requested events.
        """
        return DeviceEvents(self._h, event_mask(EventType, events))

    def get_supported_event_types(self) -> list[EventType]:
        """Return the :class:`EventType` members this device can report."""
        mask = out_result("unsigned long long", lib.nvmlDeviceGetSupportedEventTypes, self._h)
        return bits_to_members(EventType, mask)

    def get_fan(self, fan: int = 0) -> FanInfo:
        """Return a :class:`FanInfo` for fan ``fan`` (ValueError unless ``0 <= fan < num_fans``)."""
        count = self.num_fans
        if not 0 <= fan < count:
            raise ValueError(f"fan index {fan} out of range: this device has {count} fan(s)")
        return FanInfo(self._h, fan)

    def get_field_values(self, field_ids: Iterable[int | tuple[int, int]]) -> FieldValues:
        """Read the NVML field values ``field_ids`` (ids or ``(id, scope)`` pairs).

        Returns
        -------
        FieldValues
            One entry per request; an entry's error is raised when its value
            is read.  An id NVML does not know does not fail the call: its
            entry's ``value`` raises :class:`InvalidArgumentError` (and its
            ``field_id`` ValueError).
        """
        array, count = field_value_array(field_ids)
        if count:
            check(lib.nvmlDeviceGetFieldValues(self._h, count, array))
        return FieldValues(array, count)

    def clear_field_values(self, field_ids: Iterable[int | tuple[int, int]]) -> None:
        """Reset the NVML field values ``field_ids`` (ids or ``(id, scope)`` pairs)."""
        array, count = field_value_array(field_ids)
        if count:
            check(lib.nvmlDeviceClearFieldValues(self._h, count, array))

    def get_nvlink_count(self) -> int:
        """Return the number of NVLink links of this device."""
        count: int = self.get_field_values([FieldId["DEV_NVLINK_LINK_COUNT"]])[0].value
        return count

    def get_nvlink(self, link: int) -> NvlinkInfo:
        """Return the :class:`NvlinkInfo` of ``link`` (ValueError when out of range)."""
        count = self.get_nvlink_count()
        if not 0 <= link < count:
            raise ValueError(f"NVLink index {link} out of range: this device has {count} link(s)")
        return NvlinkInfo(self, link)

    def get_nvlinks(self) -> Iterator[NvlinkInfo]:
        """Yield the :class:`NvlinkInfo` of every link (a generator)."""
        for link in range(self.get_nvlink_count()):
            yield NvlinkInfo(self, link)

    def get_topology_nearest_gpus(self, level: GpuTopologyLevel | str) -> Iterator[Device]:
        """Yield the GPUs at topology ``level`` (a :class:`GpuTopologyLevel`) from this one."""
        c_level = to_nvml(GpuTopologyLevel, level)
        handles, count = two_call(
            "nvmlDevice_t", lib.nvmlDeviceGetTopologyNearestGpus, self._h, c_level
        )
        for i in range(count):
            yield Device._from_handle(handles[i])

    # --- identity -------------------------------------------------------

    @property
    def index(self) -> int:
        """int: NVML's index of the device (may differ from the CUDA ordinal)."""
        return uint_result(lib.nvmlDeviceGetIndex, self._h)

    @property
    def uuid(self) -> str:
        """str: The UUID with its prefix, ``"GPU-..."`` or ``"MIG-..."``."""
        return string_result(lib.nvmlDeviceGetUUID, self._h, size=96)

    @property
    def uuid_without_prefix(self) -> str:
        """str: The UUID without its prefix: CUDA's 8-4-4-4-12 form."""
        return self.uuid[4:]

    @property
    def pci_bus_id(self) -> str:
        """str: The PCI bus id, e.g. ``"00000000:01:00.0"``."""
        return self.pci_info.bus_id

    @property
    def numa_node_id(self) -> int:
        """int: The NUMA node nearest the device."""
        return uint_result(lib.nvmlDeviceGetNumaNodeId, self._h)

    @property
    def arch(self) -> DeviceArch:
        """DeviceArch: The architecture (UNKNOWN for one this version does not know)."""
        value = out_result("nvmlDeviceArchitecture_t", lib.nvmlDeviceGetArchitecture, self._h)
        try:
            return DeviceArch(value)
        except ValueError:
            return DeviceArch.UNKNOWN

    @property
    def name(self) -> str:
        """str: The product name."""
        return string_result(lib.nvmlDeviceGetName, self._h, size=96)

    @property
    def brand(self) -> str:
        """str: The brand, e.g. ``"Tesla"`` (``"Unknown"`` when unmapped)."""
        value: int = out_result("nvmlBrandType_t", lib.nvmlDeviceGetBrand, self._h)
        return _BRANDS.get(value, "Unknown")

    @property
    def serial(self) -> str:
        """str: The board serial number."""
        return string_result(lib.nvmlDeviceGetSerial, self._h, size=30)

    @property
    def module_id(self) -> int:
        """int: The module id on a baseboard (0 on other parts)."""
        return uint_result(lib.nvmlDeviceGetModuleId, self._h)

    @property
    def minor_number(self) -> int:
        """int: N of the device file ``/dev/nvidiaN``."""
        return uint_result(lib.nvmlDeviceGetMinorNumber, self._h)

    @property
    def is_c2c_enabled(self) -> bool:
        """bool: Chip-to-chip (C2C) mode is enabled."""
        info = ffi.new("nvmlC2cModeInfo_v1_t *")
        check(lib.nvmlDeviceGetC2cModeInfoV(self._h, info))
        return bool(info.isC2cEnabled)

    @property
    def is_persistence_mode_enabled(self) -> bool:
        """bool: Persistence mode is on.  Settable (needs root)."""
        value: int = out_result("nvmlEnableState_t", lib.nvmlDeviceGetPersistenceMode, self._h)
        return value == 1

    @is_persistence_mode_enabled.setter
    def is_persistence_mode_enabled(self, enabled: bool) -> None:
        check(lib.nvmlDeviceSetPersistenceMode(self._h, 1 if enabled else 0))

    @property
    def cuda_compute_capability(self) -> tuple[int, int]:
        """tuple[int, int]: ``(major, minor)``."""
        major, minor = ffi.new("int *"), ffi.new("int *")
        check(lib.nvmlDeviceGetCudaComputeCapability(self._h, major, minor))
        capability: tuple[int, int] = (major[0], minor[0])
        return capability

    @property
    def addressing_mode(self) -> AddressingMode | None:
        """AddressingMode or None: How the GPU addresses host memory (None: neither)."""
        info = ffi.new("nvmlDeviceAddressingMode_t *")
        info.version = _ADDRESSING_VERSION
        check(lib.nvmlDeviceGetAddressingMode(self._h, info))
        mode: AddressingMode | None = from_nvml(AddressingMode, info.value, None)
        return mode

    @property
    def mig(self) -> MigInfo:
        """MigInfo: Multi-Instance GPU state and devices."""
        return MigInfo(self)

    @property
    def inforom(self) -> InforomInfo:
        """InforomInfo: The device's infoROM."""
        return InforomInfo(self)

    # --- clocks, cooling, temperature -----------------------------------

    @property
    def is_auto_boosted_clocks_enabled(self) -> tuple[bool, bool]:
        """tuple[bool, bool]: Auto boosted clocks on now, and by default."""
        cur, default = ffi.new("nvmlEnableState_t *"), ffi.new("nvmlEnableState_t *")
        check(lib.nvmlDeviceGetAutoBoostedClocksEnabled(self._h, cur, default))
        enabled: tuple[bool, bool] = (cur[0] == 1, default[0] == 1)
        return enabled

    @property
    def current_clock_event_reasons(self) -> list[ClocksEventReasons]:
        """list[ClocksEventReasons]: Why clocks are held down now (empty: they are not)."""
        mask = out_result("unsigned long long", lib.nvmlDeviceGetCurrentClocksEventReasons, self._h)
        return bits_to_members(ClocksEventReasons, mask)

    @property
    def supported_clock_event_reasons(self) -> list[ClocksEventReasons]:
        """list[ClocksEventReasons]: The reasons this device can report."""
        mask = out_result(
            "unsigned long long", lib.nvmlDeviceGetSupportedClocksEventReasons, self._h
        )
        return bits_to_members(ClocksEventReasons, mask)

    @property
    def cooler(self) -> CoolerInfo:
        """CoolerInfo: Cooler 0 of the device."""
        info = ffi.new("nvmlCoolerInfo_t *")
        info.version = _COOLER_VERSION
        check(lib.nvmlDeviceGetCoolerInfo(self._h, info))
        return CoolerInfo(info)

    @property
    def num_fans(self) -> int:
        """int: The number of fans.

        A passively cooled board reports 0 (an H100 with driver 580 does),
        and :meth:`get_fan` then raises ValueError for every index.
        """
        return uint_result(lib.nvmlDeviceGetNumFans, self._h)

    @property
    def temperature(self) -> Temperature:
        """Temperature: The device's temperatures."""
        try:
            t: Temperature = self._temperature  # stateless (it holds only the handle): made once
        except AttributeError:
            t = self._temperature = Temperature(self._h)
            return t
        return t

    # --- memory, PCI, use -----------------------------------------------

    @property
    def attributes(self) -> DeviceAttributes:
        """DeviceAttributes: Engine and slice counts (Ampere and newer, Linux).

        Raises
        ------
        NotSupportedError
            Where NVML does not report them: with driver 580 a full (non-MIG)
            H100 raises this.
        """
        info = ffi.new("nvmlDeviceAttributes_t *")
        check(lib.nvmlDeviceGetAttributes_v2(self._h, info))
        return DeviceAttributes(info)

    @property
    def is_display_connected(self) -> bool:
        """bool: A display is connected."""
        value: int = out_result("nvmlEnableState_t", lib.nvmlDeviceGetDisplayMode, self._h)
        return value == 1

    @property
    def is_display_active(self) -> bool:
        """bool: A display is initialized on the device."""
        value: int = out_result("nvmlEnableState_t", lib.nvmlDeviceGetDisplayActive, self._h)
        return value == 1

    @property
    def bar1_memory_info(self) -> BAR1MemoryInfo:
        """BAR1MemoryInfo: BAR1 memory, in bytes."""
        info = ffi.new("nvmlBAR1Memory_t *")
        check(lib.nvmlDeviceGetBAR1MemoryInfo(self._h, info))
        return BAR1MemoryInfo(info)

    @property
    def memory_info(self) -> MemoryInfo:
        """MemoryInfo: Device memory, in bytes."""
        try:
            info = _tls.memory  # this thread's nvmlMemory_v2_t, reused
        except AttributeError:
            info = _tls.memory = ffi.new("nvmlMemory_v2_t *")
        status = lib.cc_nvml_memory_info(self._h, info)  # sets info.version too
        if status:
            check(status)
        m: MemoryInfo = _new_object(MemoryInfo)  # MemoryInfo(info), without the __init__ call
        m._total = info.total
        m._reserved = info.reserved
        m._free = info.free
        m._used = info.used
        return m

    @property
    def pci_info(self) -> PciInfo:
        """PciInfo: PCI identity and link.

        Raises
        ------
        RuntimeError
            For a device without PCI attributes (a MIG device).
        """
        info = ffi.new("nvmlPciInfoExt_t *")
        info.version = _PCI_VERSION
        try:
            check(lib.nvmlDeviceGetPciInfoExt(self._h, info))
        except InvalidArgumentError:
            raise RuntimeError("This device does not have PCI attributes") from None
        return PciInfo(info, self._h)

    @property
    def performance_state(self) -> int | None:
        """int or None: The performance state, 0 (P0, fastest) to 15; None if unknown."""
        value: int = out_result("nvmlPstates_t", lib.nvmlDeviceGetPerformanceState, self._h)
        return None if value == _PSTATE_UNKNOWN else value

    @property
    def dynamic_pstates_info(self) -> GpuDynamicPstatesInfo:
        """GpuDynamicPstatesInfo: The utilization domains behind dynamic P-states."""
        info = ffi.new("nvmlGpuDynamicPstatesInfo_t *")
        check(lib.nvmlDeviceGetDynamicPstatesInfo(self._h, info))
        return GpuDynamicPstatesInfo(info)

    @property
    def supported_pstates(self) -> list[int]:
        """list[int]: The performance states the device supports, in NVML's order.

        NVML's order need not be sorted: an H100 reports ``[2, 0]``.
        """
        states = ffi.new("nvmlPstates_t[16]", [_PSTATE_UNKNOWN] * 16)
        check(lib.nvmlDeviceGetSupportedPerformanceStates(self._h, states, ffi.sizeof(states)))
        supported: list[int] = [s for s in states if s != _PSTATE_UNKNOWN]
        return supported

    @property
    def compute_running_processes(self) -> list[ProcessInfo]:
        """list[ProcessInfo]: The processes with a compute context on the device."""
        infos, count = two_call(
            "nvmlProcessInfo_t", lib.nvmlDeviceGetComputeRunningProcesses_v3, self._h
        )
        return [ProcessInfo(self._h, infos, i) for i in range(count)]

    @property
    def repair_status(self) -> RepairStatus:
        """RepairStatus: Pending channel and TPC repairs."""
        info = ffi.new("nvmlRepairStatus_t *")
        info.version = _REPAIR_VERSION
        check(lib.nvmlDeviceGetRepairStatus(self._h, info))
        return RepairStatus(info)

    @property
    def utilization(self) -> Utilization:
        """Utilization: GPU and memory utilization, in percent (not on MIG devices)."""
        info = ffi.new("nvmlUtilization_t *")
        check(lib.nvmlDeviceGetUtilizationRates(self._h, info))
        return Utilization(info)


def _c_text(value: object, what: str) -> bytes:
    if isinstance(value, bytes):
        value = value.decode("ascii")
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str or bytes, got {type(value).__name__}")
    return value.encode()


_slots.NvmlDevice = Device
