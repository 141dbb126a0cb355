# SPDX-License-Identifier: Apache-2.0
"""What :class:`~cuda_core.system.Device` returns: memory, PCI, utilization,
attributes, processes, performance states, MIG and infoROM views.

These are returned, never constructed by users.  The snapshot classes
(:class:`MemoryInfo`, :class:`PciInfo`'s static fields, :class:`Utilization`,
...) hold what NVML filled when the property was read (the struct itself,
or for :class:`MemoryInfo` its four numbers); the views
(:class:`MigInfo`, :class:`InforomInfo`, the PCI link figures) ask NVML on
every attribute read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.system._enums import to_nvml
from cuda_core.system._nvml import check, out_result, string_result, uint_result
from cuda_core.system.exceptions import NotFoundError, NotSupportedError
from cuda_core.system.typing import InforomObject

if TYPE_CHECKING:
    from cuda_core.system._device import Device

__all__ = [
    "BAR1MemoryInfo",
    "DeviceAttributes",
    "GpuDynamicPstatesInfo",
    "GpuDynamicPstatesUtilization",
    "InforomInfo",
    "MemoryInfo",
    "MigInfo",
    "PciInfo",
    "ProcessInfo",
    "RepairStatus",
    "Utilization",
]

_MODULE = "cuda_core.system._device"


class MemoryInfo:
    """Device memory in bytes: ``total``, ``free``, ``used`` and ``reserved``.

    A snapshot of four numbers, copied out of the struct NVML filled (which
    ``Device.memory_info`` reuses, one per thread).
    """

    __slots__ = ("_total", "_reserved", "_free", "_used")

    _total: int
    _reserved: int
    _free: int
    _used: int

    def __init__(self, struct: Any) -> None:
        self._total = struct.total
        self._reserved = struct.reserved
        self._free = struct.free
        self._used = struct.used

    def __repr__(self) -> str:
        return f"<{type(self).__name__} total={self.total} free={self.free} used={self.used}>"

    @property
    def free(self) -> int:
        """int: Unallocated memory, in bytes."""
        return self._free

    @property
    def total(self) -> int:
        """int: Installed memory, in bytes."""
        return self._total

    @property
    def used(self) -> int:
        """int: Allocated memory, in bytes."""
        return self._used

    @property
    def reserved(self) -> int:
        """int: Memory reserved by the system, in bytes."""
        return self._reserved


class BAR1MemoryInfo(MemoryInfo):
    """BAR1 (host-visible) memory in bytes: ``total``, ``free`` and ``used``.

    A snapshot of the three numbers of NVML's ``nvmlBAR1Memory_t``.
    """

    __slots__ = ()

    def __init__(self, struct: Any) -> None:
        self._total = struct.bar1Total
        self._free = struct.bar1Free
        self._used = struct.bar1Used

    @property
    def reserved(self) -> int:
        """BAR1 memory has no reserved figure: always raises :class:`AttributeError`."""
        raise AttributeError("BAR1 memory has no 'reserved' figure")


class PciInfo:
    """A device's PCI identity (fixed at the read) and PCIe link (asked on each read)."""

    __slots__ = ("_s", "_h")

    def __init__(self, struct: Any, handle: Any) -> None:
        self._s = struct
        self._h = handle

    def __repr__(self) -> str:
        return f"<PciInfo bus_id={self.bus_id!r}>"

    @property
    def bus(self) -> int:
        """int: The PCI bus number."""
        value: int = self._s.bus
        return value

    @property
    def bus_id(self) -> str:
        """str: The bus id, ``"domain:bus:device.function"`` (e.g. ``"00000000:01:00.0"``)."""
        bus_id: str = ffi.string(self._s.busId).decode()
        return bus_id

    @property
    def device(self) -> int:
        """int: The PCI device number."""
        value: int = self._s.device
        return value

    @property
    def domain(self) -> int:
        """int: The PCI domain."""
        value: int = self._s.domain
        return value

    @property
    def vendor_id(self) -> int:
        """int: The PCI vendor id (low 16 bits of the combined id)."""
        value: int = self._s.pciDeviceId & 0xFFFF
        return value

    @property
    def device_id(self) -> int:
        """int: The PCI device id (high 16 bits of the combined id)."""
        value: int = self._s.pciDeviceId >> 16
        return value

    @property
    def subsystem_id(self) -> int:
        """int: The PCI subsystem id, as NVML reports it."""
        value: int = self._s.pciSubSystemId
        return value

    @property
    def base_class(self) -> int:
        """int: The PCI base class."""
        value: int = self._s.baseClass
        return value

    @property
    def sub_class(self) -> int:
        """int: The PCI sub class."""
        value: int = self._s.subClass
        return value

    @property
    def link_generation(self) -> int:
        """int: The highest PCIe generation the device and system support."""
        return uint_result(lib.nvmlDeviceGetMaxPcieLinkGeneration, self._h)

    @property
    def max_link_generation(self) -> int:
        """int: The highest PCIe generation the device supports."""
        return uint_result(lib.nvmlDeviceGetGpuMaxPcieLinkGeneration, self._h)

    @property
    def max_link_width(self) -> int:
        """int: The widest PCIe link the device and system support (lanes)."""
        return uint_result(lib.nvmlDeviceGetMaxPcieLinkWidth, self._h)

    @property
    def current_link_generation(self) -> int:
        """int: The current PCIe generation."""
        return uint_result(lib.nvmlDeviceGetCurrPcieLinkGeneration, self._h)

    @property
    def current_link_width(self) -> int:
        """int: The current PCIe link width (lanes)."""
        return uint_result(lib.nvmlDeviceGetCurrPcieLinkWidth, self._h)

    @property
    def rx_throughput(self) -> int:
        """int: PCIe receive throughput over the last 20 ms, in KB/s."""
        return uint_result(lib.nvmlDeviceGetPcieThroughput, self._h, 1)

    @property
    def tx_throughput(self) -> int:
        """int: PCIe transmit throughput over the last 20 ms, in KB/s."""
        return uint_result(lib.nvmlDeviceGetPcieThroughput, self._h, 0)

    @property
    def replay_counter(self) -> int:
        """int: The PCIe replay counter."""
        return uint_result(lib.nvmlDeviceGetPcieReplayCounter, self._h)


class Utilization:
    """GPU and memory utilization over the last sample period, in percent."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    def __repr__(self) -> str:
        return f"<Utilization gpu={self.gpu}% memory={self.memory}%>"

    @property
    def gpu(self) -> int:
        """int: Percent of time a kernel was running."""
        value: int = self._s.gpu
        return value

    @property
    def memory(self) -> int:
        """int: Percent of time device memory was read or written."""
        value: int = self._s.memory
        return value


def _struct_field(name: str, doc: str) -> property:
    return property(lambda self: getattr(self._s, name), doc=doc)


class DeviceAttributes:
    """Counts of a device's (or MIG device's) engines and slices, and its memory size."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    multiprocessor_count = _struct_field("multiprocessorCount", "int: Streaming multiprocessors.")
    shared_copy_engine_count = _struct_field("sharedCopyEngineCount", "int: Copy engines.")
    shared_decoder_count = _struct_field("sharedDecoderCount", "int: Decoder engines.")
    shared_encoder_count = _struct_field("sharedEncoderCount", "int: Encoder engines.")
    shared_jpeg_count = _struct_field("sharedJpegCount", "int: JPEG engines.")
    shared_ofa_count = _struct_field("sharedOfaCount", "int: Optical-flow engines.")
    gpu_instance_slice_count = _struct_field("gpuInstanceSliceCount", "int: GPU instance slices.")
    compute_instance_slice_count = _struct_field(
        "computeInstanceSliceCount", "int: Compute instance slices."
    )
    memory_size_mb = _struct_field("memorySizeMB", "int: Device memory, in MiB.")


class RepairStatus:
    """Whether channel or TPC repairs are pending."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    @property
    def channel_repair_pending(self) -> bool:
        """bool: A channel repair is pending."""
        return bool(self._s.bChannelRepairPending)

    @property
    def tpc_repair_pending(self) -> bool:
        """bool: A TPC repair is pending."""
        return bool(self._s.bTpcRepairPending)


class ProcessInfo:
    """A process running compute work on a device."""

    __slots__ = ("_h", "_owner", "_s")

    def __init__(self, handle: Any, array: Any, index: int) -> None:
        self._h = handle
        self._owner = array  # keeps the array holding the entry alive
        self._s = array[index]

    def __repr__(self) -> str:
        return f"<ProcessInfo pid={self.pid} used_gpu_memory={self.used_gpu_memory}>"

    @property
    def pid(self) -> int:
        """int: The process id."""
        value: int = self._s.pid
        return value

    @property
    def used_gpu_memory(self) -> int:
        """int: Device memory the process uses, in bytes (``2**64 - 1`` when unavailable)."""
        value: int = self._s.usedGpuMemory
        return value

    def _require_mig(self) -> None:
        if not out_result("unsigned int", lib.nvmlDeviceIsMigDeviceHandle, self._h):
            raise NotSupportedError(3)

    @property
    def gpu_instance_id(self) -> int:
        """int: The GPU instance id (MIG devices only; else :class:`NotSupportedError`)."""
        self._require_mig()
        value: int = self._s.gpuInstanceId
        return value

    @property
    def compute_instance_id(self) -> int:
        """int: The compute instance id (MIG devices only; else :class:`NotSupportedError`)."""
        self._require_mig()
        value: int = self._s.computeInstanceId
        return value


class GpuDynamicPstatesUtilization:
    """One utilization domain of :class:`GpuDynamicPstatesInfo`."""

    __slots__ = ("_owner", "_u")

    def __init__(self, owner: Any, item: Any) -> None:
        self._owner = owner  # keeps the struct holding ``item`` alive
        self._u = item

    @property
    def is_present(self) -> bool:
        """bool: The domain exists on this device."""
        return bool(self._u.bIsPresent)

    @property
    def percentage(self) -> int:
        """int: Utilization of the domain, in percent."""
        value: int = self._u.percentage
        return value

    @property
    def inc_threshold(self) -> int:
        """int: Utilization above which the performance state goes up."""
        value: int = self._u.incThreshold
        return value

    @property
    def dec_threshold(self) -> int:
        """int: Utilization below which the performance state goes down."""
        value: int = self._u.decThreshold
        return value


class GpuDynamicPstatesInfo:
    """The eight utilization domains that drive dynamic performance states."""

    __slots__ = ("_s",)

    def __init__(self, struct: Any) -> None:
        self._s = struct

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> GpuDynamicPstatesUtilization:
        if not isinstance(index, int) or not 0 <= index < 8:
            raise IndexError(f"utilization domain index {index!r} out of range 0..7")
        return GpuDynamicPstatesUtilization(self._s, self._s.utilization[index])


class MigInfo:
    """Multi-Instance GPU state of a device (asked on every read)."""

    __slots__ = ("_device",)

    def __init__(self, device: Device) -> None:
        self._device = device

    @property
    def is_mig_device(self) -> bool:
        """bool: The device is a MIG device (a slice of a GPU)."""
        return bool(out_result("unsigned int", lib.nvmlDeviceIsMigDeviceHandle, self._device._h))

    @property
    def mode(self) -> bool:
        """bool: MIG mode is enabled now.  Settable (needs privileges)."""
        cur, pend = ffi.new("unsigned int *"), ffi.new("unsigned int *")
        check(lib.nvmlDeviceGetMigMode(self._device._h, cur, pend))
        enabled: bool = cur[0] == 1
        return enabled

    @mode.setter
    def mode(self, enabled: bool) -> None:
        status = ffi.new("nvmlReturn_t *")
        check(lib.nvmlDeviceSetMigMode(self._device._h, 1 if enabled else 0, status))

    @property
    def pending_mode(self) -> bool:
        """bool: MIG mode will be enabled after the next GPU reset."""
        cur, pend = ffi.new("unsigned int *"), ffi.new("unsigned int *")
        check(lib.nvmlDeviceGetMigMode(self._device._h, cur, pend))
        pending: bool = pend[0] == 1
        return pending

    @property
    def device_count(self) -> int:
        """int: The most MIG devices this GPU can hold."""
        return uint_result(lib.nvmlDeviceGetMaxMigDeviceCount, self._device._h)

    @property
    def parent(self) -> Device:
        """Device: The physical GPU of this MIG device."""
        h = out_result(
            "nvmlDevice_t", lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle, self._device._h
        )
        return _slots.nvml_device_class()._from_handle(h)

    def get_device_by_index(self, index: int) -> Device:
        """Return the MIG device at ``index`` of this GPU.

        Raises
        ------
        NotFoundError
            No MIG device exists at ``index`` (so every index while MIG mode
            is off).
        """
        h = out_result(
            "nvmlDevice_t", lib.nvmlDeviceGetMigDeviceHandleByIndex, self._device._h, index
        )
        return _slots.nvml_device_class()._from_handle(h)

    def get_all_devices(self) -> Iterator[Device]:
        """Yield every existing MIG device of this GPU (a generator).

        With MIG mode off it yields nothing.
        """
        for i in range(self.device_count):
            try:
                yield self.get_device_by_index(i)
            except NotFoundError:
                continue


class InforomInfo:
    """A device's infoROM (asked on every read)."""

    __slots__ = ("_device",)

    def __init__(self, device: Device) -> None:
        self._device = device

    def get_version(self, inforom: InforomObject | str) -> str:
        """Return the version of infoROM object ``inforom`` (an :class:`InforomObject`)."""
        obj = to_nvml(InforomObject, inforom)
        return string_result(lib.nvmlDeviceGetInforomVersion, self._device._h, obj, size=16)

    @property
    def image_version(self) -> str:
        """str: The infoROM image version."""
        return string_result(lib.nvmlDeviceGetInforomImageVersion, self._device._h, size=16)

    @property
    def configuration_checksum(self) -> int:
        """int: The checksum of the infoROM configuration."""
        value: int = out_result(
            "unsigned int", lib.nvmlDeviceGetInforomConfigurationChecksum, self._device._h
        )
        return value

    def validate(self) -> None:
        """Check the infoROM; raise :class:`CorruptedInforomError` when it is corrupted."""
        check(lib.nvmlDeviceValidateInforom(self._device._h))

    @property
    def bbx_flush_time(self) -> tuple[int, int]:
        """tuple[int, int]: The last black-box flush: (timestamp, duration in µs)."""
        ts, dur = ffi.new("unsigned long long *"), ffi.new("unsigned long *")
        check(lib.nvmlDeviceGetLastBBXFlushTime(self._device._h, ts, dur))
        return (ts[0], dur[0])

    @property
    def board_part_number(self) -> str:
        """str: The board's part number."""
        return string_result(lib.nvmlDeviceGetBoardPartNumber, self._device._h, size=80)


for _name in __all__:
    globals()[_name].__module__ = _MODULE
