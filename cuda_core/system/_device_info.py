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

from cuda_core._cuda_ffi import ffi, lib
from cuda_core.system._enums import to_nvml
from cuda_core.system._nvml import check, out_result, string_result
from cuda_core.system.exceptions import NotFoundError, NotSupportedError
from cuda_core.system.typing import InforomObject

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

# Filled by cuda_core.system._device at import: handle (cdata) -> Device.
device_from_handle = []


class MemoryInfo:
    """Device memory in bytes: ``total``, ``free``, ``used`` and ``reserved``.

    A snapshot of four numbers, copied out of the struct NVML filled (which
    ``Device.memory_info`` reuses, one per thread).
    """

    __slots__ = ("_total", "_reserved", "_free", "_used")

    def __init__(self, struct):
        self._total = struct.total
        self._reserved = struct.reserved
        self._free = struct.free
        self._used = struct.used

    def __repr__(self):
        return f"<{type(self).__name__} total={self.total} free={self.free} used={self.used}>"

    @property
    def free(self):
        """int: Unallocated memory, in bytes."""
        return self._free

    @property
    def total(self):
        """int: Installed memory, in bytes."""
        return self._total

    @property
    def used(self):
        """int: Allocated memory, in bytes."""
        return self._used

    @property
    def reserved(self):
        """int: Memory reserved by the system, in bytes."""
        return self._reserved


class BAR1MemoryInfo(MemoryInfo):
    """BAR1 (host-visible) memory in bytes: ``total``, ``free`` and ``used``.

    A snapshot of the three numbers of NVML's ``nvmlBAR1Memory_t``.
    """

    __slots__ = ()

    def __init__(self, struct):
        self._total = struct.bar1Total
        self._free = struct.bar1Free
        self._used = struct.bar1Used

    @property
    def free(self):
        """int: Unallocated BAR1 memory, in bytes."""
        return self._free

    @property
    def total(self):
        """int: BAR1 memory size, in bytes."""
        return self._total

    @property
    def used(self):
        """int: Allocated BAR1 memory, in bytes."""
        return self._used

    @property
    def reserved(self):
        """BAR1 memory has no reserved figure: always raises :class:`AttributeError`."""
        raise AttributeError("BAR1 memory has no 'reserved' figure")


class PciInfo:
    """A device's PCI identity (fixed at the read) and PCIe link (asked on each read)."""

    __slots__ = ("_s", "_h")

    def __init__(self, struct, handle):
        self._s = struct
        self._h = handle

    def __repr__(self):
        return f"<PciInfo bus_id={self.bus_id!r}>"

    @property
    def bus(self):
        """int: The PCI bus number."""
        return self._s.bus

    @property
    def bus_id(self):
        """str: The bus id, ``"domain:bus:device.function"`` (e.g. ``"00000000:01:00.0"``)."""
        return ffi.string(self._s.busId).decode()

    @property
    def device(self):
        """int: The PCI device number."""
        return self._s.device

    @property
    def domain(self):
        """int: The PCI domain."""
        return self._s.domain

    @property
    def vendor_id(self):
        """int: The PCI vendor id (low 16 bits of the combined id)."""
        return self._s.pciDeviceId & 0xFFFF

    @property
    def device_id(self):
        """int: The PCI device id (high 16 bits of the combined id)."""
        return self._s.pciDeviceId >> 16

    @property
    def subsystem_id(self):
        """int: The PCI subsystem id, as NVML reports it."""
        return self._s.pciSubSystemId

    @property
    def base_class(self):
        """int: The PCI base class."""
        return self._s.baseClass

    @property
    def sub_class(self):
        """int: The PCI sub class."""
        return self._s.subClass

    @property
    def link_generation(self):
        """int: The highest PCIe generation the device and system support."""
        return out_result("unsigned int", lib.nvmlDeviceGetMaxPcieLinkGeneration, self._h)

    @property
    def max_link_generation(self):
        """int: The highest PCIe generation the device supports."""
        return out_result("unsigned int", lib.nvmlDeviceGetGpuMaxPcieLinkGeneration, self._h)

    @property
    def max_link_width(self):
        """int: The widest PCIe link the device and system support (lanes)."""
        return out_result("unsigned int", lib.nvmlDeviceGetMaxPcieLinkWidth, self._h)

    @property
    def current_link_generation(self):
        """int: The current PCIe generation."""
        return out_result("unsigned int", lib.nvmlDeviceGetCurrPcieLinkGeneration, self._h)

    @property
    def current_link_width(self):
        """int: The current PCIe link width (lanes)."""
        return out_result("unsigned int", lib.nvmlDeviceGetCurrPcieLinkWidth, self._h)

    @property
    def rx_throughput(self):
        """int: PCIe receive throughput over the last 20 ms, in KB/s."""
        return out_result("unsigned int", lib.nvmlDeviceGetPcieThroughput, self._h, 1)

    @property
    def tx_throughput(self):
        """int: PCIe transmit throughput over the last 20 ms, in KB/s."""
        return out_result("unsigned int", lib.nvmlDeviceGetPcieThroughput, self._h, 0)

    @property
    def replay_counter(self):
        """int: The PCIe replay counter."""
        return out_result("unsigned int", lib.nvmlDeviceGetPcieReplayCounter, self._h)


class Utilization:
    """GPU and memory utilization over the last sample period, in percent."""

    __slots__ = ("_s",)

    def __init__(self, struct):
        self._s = struct

    def __repr__(self):
        return f"<Utilization gpu={self.gpu}% memory={self.memory}%>"

    @property
    def gpu(self):
        """int: Percent of time a kernel was running."""
        return self._s.gpu

    @property
    def memory(self):
        """int: Percent of time device memory was read or written."""
        return self._s.memory


def _struct_field(name, doc):
    return property(lambda self: getattr(self._s, name), doc=doc)


class DeviceAttributes:
    """Counts of a device's (or MIG device's) engines and slices, and its memory size."""

    __slots__ = ("_s",)

    def __init__(self, struct):
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

    def __init__(self, struct):
        self._s = struct

    @property
    def channel_repair_pending(self):
        """bool: A channel repair is pending."""
        return bool(self._s.bChannelRepairPending)

    @property
    def tpc_repair_pending(self):
        """bool: A TPC repair is pending."""
        return bool(self._s.bTpcRepairPending)


class ProcessInfo:
    """A process running compute work on a device."""

    __slots__ = ("_h", "_owner", "_s")

    def __init__(self, handle, array, index):
        self._h = handle
        self._owner = array  # keeps the array holding the entry alive
        self._s = array[index]

    def __repr__(self):
        return f"<ProcessInfo pid={self.pid} used_gpu_memory={self.used_gpu_memory}>"

    @property
    def pid(self):
        """int: The process id."""
        return self._s.pid

    @property
    def used_gpu_memory(self):
        """int: Device memory the process uses, in bytes (``2**64 - 1`` when unavailable)."""
        return self._s.usedGpuMemory

    def _require_mig(self):
        if not out_result("unsigned int", lib.nvmlDeviceIsMigDeviceHandle, self._h):
            raise NotSupportedError(3)

    @property
    def gpu_instance_id(self):
        """int: The GPU instance id (MIG devices only; else :class:`NotSupportedError`)."""
        self._require_mig()
        return self._s.gpuInstanceId

    @property
    def compute_instance_id(self):
        """int: The compute instance id (MIG devices only; else :class:`NotSupportedError`)."""
        self._require_mig()
        return self._s.computeInstanceId


class GpuDynamicPstatesUtilization:
    """One utilization domain of :class:`GpuDynamicPstatesInfo`."""

    __slots__ = ("_owner", "_u")

    def __init__(self, owner, item):
        self._owner = owner  # keeps the struct holding ``item`` alive
        self._u = item

    @property
    def is_present(self):
        """bool: The domain exists on this device."""
        return bool(self._u.bIsPresent)

    @property
    def percentage(self):
        """int: Utilization of the domain, in percent."""
        return self._u.percentage

    @property
    def inc_threshold(self):
        """int: Utilization above which the performance state goes up."""
        return self._u.incThreshold

    @property
    def dec_threshold(self):
        """int: Utilization below which the performance state goes down."""
        return self._u.decThreshold


class GpuDynamicPstatesInfo:
    """The eight utilization domains that drive dynamic performance states."""

    __slots__ = ("_s",)

    def __init__(self, struct):
        self._s = struct

    def __len__(self):
        return 8

    def __getitem__(self, index):
        if not isinstance(index, int) or not 0 <= index < 8:
            raise IndexError(f"utilization domain index {index!r} out of range 0..7")
        return GpuDynamicPstatesUtilization(self._s, self._s.utilization[index])


class MigInfo:
    """Multi-Instance GPU state of a device (asked on every read)."""

    __slots__ = ("_device",)

    def __init__(self, device):
        self._device = device

    @property
    def is_mig_device(self):
        """bool: The device is a MIG device (a slice of a GPU)."""
        return bool(out_result("unsigned int", lib.nvmlDeviceIsMigDeviceHandle, self._device._h))

    @property
    def mode(self):
        """bool: MIG mode is enabled now.  Settable (needs privileges)."""
        cur, pend = ffi.new("unsigned int *"), ffi.new("unsigned int *")
        check(lib.nvmlDeviceGetMigMode(self._device._h, cur, pend))
        return cur[0] == 1

    @mode.setter
    def mode(self, enabled):
        status = ffi.new("nvmlReturn_t *")
        check(lib.nvmlDeviceSetMigMode(self._device._h, 1 if enabled else 0, status))

    @property
    def pending_mode(self):
        """bool: MIG mode will be enabled after the next GPU reset."""
        cur, pend = ffi.new("unsigned int *"), ffi.new("unsigned int *")
        check(lib.nvmlDeviceGetMigMode(self._device._h, cur, pend))
        return pend[0] == 1

    @property
    def device_count(self):
        """int: The most MIG devices this GPU can hold."""
        return out_result("unsigned int", lib.nvmlDeviceGetMaxMigDeviceCount, self._device._h)

    @property
    def parent(self):
        """Device: The physical GPU of this MIG device."""
        h = out_result(
            "nvmlDevice_t", lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle, self._device._h
        )
        return device_from_handle[0](h)

    def get_device_by_index(self, index):
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
        return device_from_handle[0](h)

    def get_all_devices(self):
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

    def __init__(self, device):
        self._device = device

    def get_version(self, inforom):
        """Return the version of infoROM object ``inforom`` (an :class:`InforomObject`)."""
        obj = to_nvml(InforomObject, inforom)
        return string_result(lib.nvmlDeviceGetInforomVersion, self._device._h, obj, size=16)

    @property
    def image_version(self):
        """str: The infoROM image version."""
        return string_result(lib.nvmlDeviceGetInforomImageVersion, self._device._h, size=16)

    @property
    def configuration_checksum(self):
        """int: The checksum of the infoROM configuration."""
        return out_result(
            "unsigned int", lib.nvmlDeviceGetInforomConfigurationChecksum, self._device._h
        )

    def validate(self):
        """Check the infoROM; raise :class:`CorruptedInforomError` when it is corrupted."""
        check(lib.nvmlDeviceValidateInforom(self._device._h))

    @property
    def bbx_flush_time(self):
        """tuple[int, int]: The last black-box flush: (timestamp, duration in µs)."""
        ts, dur = ffi.new("unsigned long long *"), ffi.new("unsigned long *")
        check(lib.nvmlDeviceGetLastBBXFlushTime(self._device._h, ts, dur))
        return (ts[0], dur[0])

    @property
    def board_part_number(self):
        """str: The board's part number."""
        return string_result(lib.nvmlDeviceGetBoardPartNumber, self._device._h, size=80)


for _name in __all__:
    globals()[_name].__module__ = _MODULE
