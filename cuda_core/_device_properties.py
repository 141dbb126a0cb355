# SPDX-License-Identifier: Apache-2.0
"""Device attributes as read-only properties (:class:`DeviceProperties`).

Every property maps one-to-one to a ``CU_DEVICE_ATTRIBUTE_*`` value: the
property name is the attribute name without its prefix, in lower case.  The
properties are generated from the table below rather than written out one by
one.  Flags are returned as ``bool``, everything else as ``int``; values are
cached per :class:`DeviceProperties` instance, except the few that can change
while a process runs (clock rates, compute mode, ...).

An attribute that the GPU or the installed driver does not know raises
:class:`DeviceAttributeNotSupportedError`, an :class:`AttributeError`
subclass, so ``getattr(props, name, default)`` is the ``dict.get``-like way
to ask for an optional attribute; a genuine 0 is returned as 0.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check_allowing

if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = ["DeviceAttributeNotSupportedError", "DeviceProperties"]

_tls = threading.local()

# (property name, kind, description); kind "b" is a flag (bool), "i" an int.
# The CU_DEVICE_ATTRIBUTE_* name is "CU_DEVICE_ATTRIBUTE_" + name.upper().
_ATTRIBUTES = (
    ("max_threads_per_block", "i", "Largest number of threads a block may have."),
    ("max_block_dim_x", "i", "Largest block size in x."),
    ("max_block_dim_y", "i", "Largest block size in y."),
    ("max_block_dim_z", "i", "Largest block size in z."),
    ("max_grid_dim_x", "i", "Largest grid size in x."),
    ("max_grid_dim_y", "i", "Largest grid size in y."),
    ("max_grid_dim_z", "i", "Largest grid size in z."),
    ("max_shared_memory_per_block", "i", "Shared memory a block may use by default, in bytes."),
    ("total_constant_memory", "i", "Constant memory on the device, in bytes."),
    ("warp_size", "i", "Number of threads in a warp."),
    ("max_pitch", "i", "Largest pitch allowed by pitched memory copies, in bytes."),
    ("maximum_texture1d_width", "i", "Largest width of a 1D texture."),
    ("maximum_texture1d_linear_width", "i", "Largest width of a 1D texture on linear memory."),
    ("maximum_texture1d_mipmapped_width", "i", "Largest width of a mipmapped 1D texture."),
    ("maximum_texture2d_width", "i", "Largest width of a 2D texture."),
    ("maximum_texture2d_height", "i", "Largest height of a 2D texture."),
    ("maximum_texture2d_linear_width", "i", "Largest width of a 2D texture on linear memory."),
    ("maximum_texture2d_linear_height", "i", "Largest height of a 2D texture on linear memory."),
    (
        "maximum_texture2d_linear_pitch",
        "i",
        "Largest pitch of a 2D texture on linear memory, in bytes.",
    ),
    ("maximum_texture2d_mipmapped_width", "i", "Largest width of a mipmapped 2D texture."),
    ("maximum_texture2d_mipmapped_height", "i", "Largest height of a mipmapped 2D texture."),
    ("maximum_texture3d_width", "i", "Largest width of a 3D texture."),
    ("maximum_texture3d_height", "i", "Largest height of a 3D texture."),
    ("maximum_texture3d_depth", "i", "Largest depth of a 3D texture."),
    (
        "maximum_texture3d_width_alternate",
        "i",
        "Alternate largest 3D texture width (0 when there is no alternate size).",
    ),
    (
        "maximum_texture3d_height_alternate",
        "i",
        "Alternate largest 3D texture height (0 when there is no alternate size).",
    ),
    (
        "maximum_texture3d_depth_alternate",
        "i",
        "Alternate largest 3D texture depth (0 when there is no alternate size).",
    ),
    ("maximum_texturecubemap_width", "i", "Largest width (and height) of a cubemap texture."),
    ("maximum_texture1d_layered_width", "i", "Largest width of a layered 1D texture."),
    ("maximum_texture1d_layered_layers", "i", "Most layers a layered 1D texture may have."),
    ("maximum_texture2d_layered_width", "i", "Largest width of a layered 2D texture."),
    ("maximum_texture2d_layered_height", "i", "Largest height of a layered 2D texture."),
    ("maximum_texture2d_layered_layers", "i", "Most layers a layered 2D texture may have."),
    (
        "maximum_texturecubemap_layered_width",
        "i",
        "Largest width (and height) of a layered cubemap texture.",
    ),
    (
        "maximum_texturecubemap_layered_layers",
        "i",
        "Most layers a layered cubemap texture may have.",
    ),
    ("maximum_surface1d_width", "i", "Largest width of a 1D surface."),
    ("maximum_surface2d_width", "i", "Largest width of a 2D surface."),
    ("maximum_surface2d_height", "i", "Largest height of a 2D surface."),
    ("maximum_surface3d_width", "i", "Largest width of a 3D surface."),
    ("maximum_surface3d_height", "i", "Largest height of a 3D surface."),
    ("maximum_surface3d_depth", "i", "Largest depth of a 3D surface."),
    ("maximum_surface1d_layered_width", "i", "Largest width of a layered 1D surface."),
    ("maximum_surface1d_layered_layers", "i", "Most layers a layered 1D surface may have."),
    ("maximum_surface2d_layered_width", "i", "Largest width of a layered 2D surface."),
    ("maximum_surface2d_layered_height", "i", "Largest height of a layered 2D surface."),
    ("maximum_surface2d_layered_layers", "i", "Most layers a layered 2D surface may have."),
    ("maximum_surfacecubemap_width", "i", "Largest width of a cubemap surface."),
    (
        "maximum_surfacecubemap_layered_width",
        "i",
        "Largest width of a layered cubemap surface.",
    ),
    (
        "maximum_surfacecubemap_layered_layers",
        "i",
        "Most layers a layered cubemap surface may have.",
    ),
    ("max_registers_per_block", "i", "32-bit registers available to one block."),
    ("clock_rate", "i", "Typical clock frequency, in kHz (queried on every access)."),
    ("texture_alignment", "i", "Alignment required for textures, in bytes."),
    ("texture_pitch_alignment", "i", "Pitch alignment required for 2D textures, in bytes."),
    (
        "gpu_overlap",
        "b",
        "Whether copies and kernels may run concurrently (deprecated: see "
        ":attr:`async_engine_count`).",
    ),
    ("multiprocessor_count", "i", "Number of streaming multiprocessors."),
    (
        "kernel_exec_timeout",
        "b",
        "Whether kernels have a run-time limit (queried on every access).",
    ),
    ("integrated", "b", "Whether the GPU is integrated with (shares) host memory."),
    ("can_map_host_memory", "b", "Whether host memory can be mapped into the device space."),
    ("compute_mode", "i", "The compute mode, a ``CUcomputemode`` value (queried every time)."),
    ("concurrent_kernels", "b", "Whether several kernels may run at the same time."),
    ("ecc_enabled", "b", "Whether ECC memory protection is on."),
    ("pci_bus_id", "i", "PCI bus number of the device."),
    ("pci_device_id", "i", "PCI device (slot) number of the device."),
    ("pci_domain_id", "i", "PCI domain number of the device."),
    ("tcc_driver", "b", "Whether the device runs under the TCC driver model (Windows)."),
    ("memory_clock_rate", "i", "Peak memory clock, in kHz (queried on every access)."),
    ("global_memory_bus_width", "i", "Width of the global memory bus, in bits."),
    ("l2_cache_size", "i", "Size of the L2 cache, in bytes."),
    ("max_threads_per_multiprocessor", "i", "Most threads resident on one multiprocessor."),
    ("unified_addressing", "b", "Whether the device shares one address space with the host."),
    ("compute_capability_major", "i", "Major compute capability number."),
    ("compute_capability_minor", "i", "Minor compute capability number."),
    ("global_l1_cache_supported", "b", "Whether globals can be cached in L1."),
    ("local_l1_cache_supported", "b", "Whether locals can be cached in L1."),
    (
        "max_shared_memory_per_multiprocessor",
        "i",
        "Shared memory available on one multiprocessor, in bytes.",
    ),
    (
        "max_registers_per_multiprocessor",
        "i",
        "32-bit registers available on one multiprocessor.",
    ),
    ("managed_memory", "b", "Whether managed (unified) memory can be allocated."),
    ("multi_gpu_board", "b", "Whether the device sits on a board with several GPUs."),
    ("multi_gpu_board_group_id", "i", "Identifier shared by the GPUs of one multi-GPU board."),
    (
        "host_native_atomic_supported",
        "b",
        "Whether the host link supports every native atomic operation.",
    ),
    (
        "single_to_double_precision_perf_ratio",
        "i",
        "Single- to double-precision throughput ratio (queried on every access).",
    ),
    (
        "pageable_memory_access",
        "b",
        "Whether pageable host memory can be accessed coherently without registering it.",
    ),
    (
        "concurrent_managed_access",
        "b",
        "Whether managed memory can be accessed by the device while the CPU uses it.",
    ),
    ("compute_preemption_supported", "b", "Whether compute work can be preempted."),
    (
        "can_use_host_pointer_for_registered_mem",
        "b",
        "Whether registered host memory has the same address on the device and the host.",
    ),
    ("cooperative_launch", "b", "Whether cooperative kernels can be launched."),
    (
        "max_shared_memory_per_block_optin",
        "i",
        "Shared memory a block may use after opting in, in bytes.",
    ),
    (
        "pageable_memory_access_uses_host_page_tables",
        "b",
        "Whether pageable memory is accessed through the host's page tables.",
    ),
    (
        "direct_managed_mem_access_from_host",
        "b",
        "Whether the host can access managed memory on the device without migration.",
    ),
    (
        "virtual_memory_management_supported",
        "b",
        "Whether the virtual memory management APIs (cuMemCreate, cuMemMap, ...) work.",
    ),
    (
        "handle_type_posix_file_descriptor_supported",
        "b",
        "Whether allocations can be exported as POSIX file descriptors.",
    ),
    (
        "handle_type_win32_handle_supported",
        "b",
        "Whether allocations can be exported as Win32 NT handles.",
    ),
    (
        "handle_type_win32_kmt_handle_supported",
        "b",
        "Whether allocations can be exported as Win32 KMT handles.",
    ),
    ("max_blocks_per_multiprocessor", "i", "Most blocks resident on one multiprocessor."),
    ("generic_compression_supported", "b", "Whether memory compression is supported."),
    (
        "max_persisting_l2_cache_size",
        "i",
        "Largest L2 set-aside for persisting accesses, in bytes.",
    ),
    (
        "max_access_policy_window_size",
        "i",
        "Largest ``num_bytes`` of an access policy window.",
    ),
    (
        "gpu_direct_rdma_with_cuda_vmm_supported",
        "b",
        "Whether cuMemCreate accepts the GPUDirect RDMA flag.",
    ),
    (
        "reserved_shared_memory_per_block",
        "i",
        "Shared memory the driver reserves in every block, in bytes.",
    ),
    ("sparse_cuda_array_supported", "b", "Whether sparse CUDA arrays are supported."),
    (
        "read_only_host_register_supported",
        "b",
        "Whether host memory can be registered read-only for the device.",
    ),
    (
        "memory_pools_supported",
        "b",
        "Whether stream-ordered allocation (cuMemAllocAsync, memory pools) is supported.",
    ),
    ("gpu_direct_rdma_supported", "b", "Whether the GPUDirect RDMA APIs are supported."),
    (
        "gpu_direct_rdma_flush_writes_options",
        "i",
        "Bit mask of ``CUflushGPUDirectRDMAWritesOptions`` values.",
    ),
    (
        "gpu_direct_rdma_writes_ordering",
        "i",
        "Scope within which GPUDirect RDMA writes need no flush "
        "(a ``CUGPUDirectRDMAWritesOrdering`` value).",
    ),
    (
        "mempool_supported_handle_types",
        "i",
        "Bit mask of the handle types memory pools can export for IPC.",
    ),
    (
        "deferred_mapping_cuda_array_supported",
        "b",
        "Whether CUDA arrays with deferred mapping are supported.",
    ),
    ("numa_config", "i", "NUMA configuration, a ``CUdeviceNumaConfig`` value."),
    ("numa_id", "i", "NUMA node of the device's memory."),
    ("multicast_supported", "b", "Whether switch multicast and reductions are supported."),
    ("surface_alignment", "i", "Alignment required for surfaces, in bytes."),
    ("async_engine_count", "i", "Number of asynchronous copy engines."),
    ("can_tex2d_gather", "b", "Whether 2D texture gather is supported."),
    ("maximum_texture2d_gather_width", "i", "Largest width of a 2D texture used for gather."),
    ("maximum_texture2d_gather_height", "i", "Largest height of a 2D texture used for gather."),
    ("stream_priorities_supported", "b", "Whether streams can have priorities."),
    (
        "can_flush_remote_writes",
        "b",
        "Whether the flush-remote-writes stream memory operations are supported.",
    ),
    ("host_register_supported", "b", "Whether host memory can be registered (page-locked)."),
    (
        "timeline_semaphore_interop_supported",
        "b",
        "Whether external timeline semaphores can be imported.",
    ),
    ("cluster_launch", "b", "Whether thread block clusters can be launched."),
    (
        "can_use_64_bit_stream_mem_ops",
        "b",
        "Whether 64-bit stream memory operations are supported.",
    ),
    (
        "can_use_stream_wait_value_nor",
        "b",
        "Whether the NOR wait condition of stream memory operations is supported.",
    ),
    ("dma_buf_supported", "b", "Whether memory can be shared through dma_buf."),
    ("ipc_event_supported", "b", "Whether events can be shared between processes."),
    ("mem_sync_domain_count", "i", "Number of memory synchronization domains."),
    ("tensor_map_access_supported", "b", "Whether memory can be accessed through tensor maps."),
    (
        "handle_type_fabric_supported",
        "b",
        "Whether allocations can be exported as fabric handles.",
    ),
    ("unified_function_pointers", "b", "Whether function pointers are unified with the host."),
    ("mps_enabled", "b", "Whether contexts on this device are shared through MPS."),
    (
        "host_numa_id",
        "i",
        "NUMA node of the host closest to the device (-1 without NUMA support).",
    ),
    ("d3d12_cig_supported", "b", "Whether CUDA-in-graphics with D3D12 is supported."),
    (
        "mem_decompress_algorithm_mask",
        "i",
        "Bit mask of the supported ``CUmemDecompressAlgorithm`` values.",
    ),
    (
        "mem_decompress_maximum_length",
        "i",
        "Longest allowed single decompression, in bytes.",
    ),
    ("vulkan_cig_supported", "b", "Whether CUDA-in-graphics with Vulkan is supported."),
    (
        "gpu_pci_device_id",
        "i",
        "PCI device id and vendor id, combined into one 32-bit value.",
    ),
    (
        "gpu_pci_subsystem_id",
        "i",
        "PCI subsystem id and subsystem vendor id, combined into one 32-bit value.",
    ),
    (
        "host_numa_virtual_memory_management_supported",
        "b",
        "Whether the virtual memory management APIs accept HOST_NUMA locations.",
    ),
    (
        "host_numa_memory_pools_supported",
        "b",
        "Whether memory pools accept HOST_NUMA locations.",
    ),
    (
        "host_numa_multinode_ipc_supported",
        "b",
        "Whether HOST_NUMA memory can be shared between nodes of a multi-node system.",
    ),
    ("host_memory_pools_supported", "b", "Whether memory pools accept HOST locations."),
    (
        "host_virtual_memory_management_supported",
        "b",
        "Whether the virtual memory management APIs accept HOST locations.",
    ),
    (
        "host_alloc_dma_buf_supported",
        "b",
        "Whether page-locked host memory can be shared through dma_buf.",
    ),
    (
        "only_partial_host_native_atomic_supported",
        "b",
        "Whether the host link supports only some native atomic operations.",
    ),
)

# Values that can change while the process runs: never cached.
_UNCACHED = frozenset(
    {
        "clock_rate",
        "kernel_exec_timeout",
        "compute_mode",
        "memory_clock_rate",
        "single_to_double_precision_perf_ratio",
    }
)

_UNSUPPORTED = object()  # cache marker for attributes the driver rejected
_UNKNOWN = (lib.CUDA_ERROR_INVALID_VALUE,)  # how the driver rejects them


class DeviceAttributeNotSupportedError(AttributeError):
    """A device attribute that this GPU or the installed driver does not support.

    A subclass of :class:`AttributeError`, so ``getattr(props, name, default)``
    returns ``default`` for such attributes.

    Attributes
    ----------
    attribute : str
        The property name, e.g. ``"numa_id"``.
    device_id : int
        The device that was asked.
    """

    def __init__(
        self, message: str, *, attribute: str | None = None, device_id: int | None = None
    ) -> None:
        super().__init__(message)
        self.attribute = attribute
        self.device_id = device_id


class DeviceProperties:
    """Read-only attributes of a CUDA device, one property per ``CU_DEVICE_ATTRIBUTE_*``.

    Obtained from :attr:`Device.properties <cuda_core.Device.properties>`;
    it cannot be constructed directly.  Flags are ``bool``, other values
    ``int``.  An attribute that this GPU or driver does not support raises
    :class:`DeviceAttributeNotSupportedError` (an :class:`AttributeError`), so
    ``getattr(props, "numa_id", None)`` is the way to ask for an optional one.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_device_id", "_cache")
    _device_id: int
    _cache: dict[int, object]

    if TYPE_CHECKING:
        # One property per entry of _ATTRIBUTES, made below: bool or int.
        def __getattr__(self, name: str) -> Any: ...

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError(
            "DeviceProperties cannot be instantiated directly. Please use Device APIs "
            "(Device.properties)."
        )

    @classmethod
    def _init(cls, device_id: int) -> DeviceProperties:
        """Return the properties of device ordinal ``device_id`` (no driver call)."""
        self = object.__new__(cls)
        self._device_id = int(device_id)
        self._cache = {}
        return self

    def __repr__(self) -> str:
        return f"<DeviceProperties device={self._device_id}>"

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_NAMES))

    def _query(self, name: str, c_attr: int) -> object:
        """Ask the driver for attribute ``c_attr`` (property ``name``)."""
        try:
            out = _tls.int_out
        except AttributeError:
            out = _tls.int_out = ffi.new("int *")
        # INVALID_VALUE: the documented answer for an attribute this driver/GPU does not know.
        if check_allowing(lib.cuDeviceGetAttribute(out, c_attr, self._device_id), _UNKNOWN):
            return out[0]
        return _UNSUPPORTED

    def _unsupported(self, name: str) -> DeviceAttributeNotSupportedError:
        return DeviceAttributeNotSupportedError(
            f"device attribute {name} (CU_DEVICE_ATTRIBUTE_{name.upper()}) is not supported "
            f"by device {self._device_id} with the installed driver",
            attribute=name,
            device_id=self._device_id,
        )


def _make_property(name: str, kind: str, doc: str) -> property:
    c_attr = getattr(lib, "CU_DEVICE_ATTRIBUTE_" + name.upper())
    convert: Callable[[Any], object] = bool if kind == "b" else int
    if name in _UNCACHED:

        def fget(self: DeviceProperties) -> object:
            value = self._query(name, c_attr)
            if value is _UNSUPPORTED:
                raise self._unsupported(name)
            return convert(value)

    else:

        def fget(self: DeviceProperties) -> object:
            try:
                value = self._cache[c_attr]
            except KeyError:
                value = self._query(name, c_attr)
                if value is not _UNSUPPORTED:
                    value = convert(value)
                self._cache[c_attr] = value
            if value is _UNSUPPORTED:
                raise self._unsupported(name)
            return value

    fget.__name__ = name
    fget.__qualname__ = f"DeviceProperties.{name}"
    type_name = "bool" if kind == "b" else "int"
    return property(fget, doc=f"{type_name}: {doc}")


for _name, _kind, _doc in _ATTRIBUTES:
    setattr(DeviceProperties, _name, _make_property(_name, _kind, _doc))
del _name, _kind, _doc

_NAMES = tuple(entry[0] for entry in _ATTRIBUTES)
