# SPDX-License-Identifier: Apache-2.0
"""Memory resources: options, every resource kind end to end, pools, advice, VMM, leaks."""

from __future__ import annotations

import gc
import os
import sys

import numpy as np
import pytest
from _helpers import CuMemAllocManagedResource

from cuda_core import (
    Buffer,
    CUDAError,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Host,
    LegacyPinnedMemoryResource,
    ManagedBuffer,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    VirtualMemoryResource,
    VirtualMemoryResourceOptions,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _default_memory_resource, _SynchronousMemoryResource
from cuda_core._memory._peer_access import DMR_mempool_get_access, MemoryPoolAccess

IS_PYPY = sys.implementation.name == "pypy"


# --------------------------------------------------------------------------
# Options (no GPU)
# --------------------------------------------------------------------------
def test_device_options_validation():
    assert DeviceMemoryResourceOptions() == DeviceMemoryResourceOptions(False, 0)
    with pytest.raises(TypeError, match="ipc_enabled"):
        DeviceMemoryResourceOptions(ipc_enabled="yes")
    with pytest.raises(TypeError, match="max_size"):
        DeviceMemoryResourceOptions(max_size=1.5)
    with pytest.raises(ValueError, match="max_size"):
        DeviceMemoryResourceOptions(max_size=-1)


def test_pinned_options_validation():
    assert PinnedMemoryResourceOptions().numa_id is None
    with pytest.raises(ValueError, match="numa_id"):
        PinnedMemoryResourceOptions(numa_id=-2)
    with pytest.raises(TypeError, match="numa_id"):
        PinnedMemoryResourceOptions(numa_id="0")
    with pytest.raises(ValueError, match="max_size"):
        PinnedMemoryResourceOptions(max_size=-5)


def test_managed_options_validation():
    opts = ManagedMemoryResourceOptions(preferred_location=0, preferred_location_type="device")
    assert opts.preferred_location_type == "device"
    ManagedMemoryResourceOptions(preferred_location=-1)
    ManagedMemoryResourceOptions(preferred_location_type="host")
    ManagedMemoryResourceOptions(preferred_location_type="host_numa")
    with pytest.raises(ValueError, match="'gpu' is not a valid ManagedMemoryLocationType"):
        ManagedMemoryResourceOptions(preferred_location_type="gpu")
    with pytest.raises(ValueError, match="device ordinal"):
        ManagedMemoryResourceOptions(preferred_location_type="device")
    with pytest.raises(ValueError, match="None"):
        ManagedMemoryResourceOptions(preferred_location=1, preferred_location_type="host")
    with pytest.raises(ValueError, match="NUMA"):
        ManagedMemoryResourceOptions(preferred_location=-3, preferred_location_type="host_numa")
    with pytest.raises(TypeError, match="preferred_location"):
        ManagedMemoryResourceOptions(preferred_location="0")
    with pytest.raises(ValueError, match="device ordinal"):
        ManagedMemoryResourceOptions(preferred_location=-7)


def test_virtual_options_validation():
    opts = VirtualMemoryResourceOptions(peers=[1, 2], handle_type=None)
    assert opts.peers == (1, 2) and opts.handle_type is None
    assert opts.location_type == "device" and opts.granularity == "recommended"
    for field, bad in [
        ("allocation_type", "paged"),
        ("location_type", "gpu"),
        ("handle_type", "posix"),
        ("granularity", "max"),
        ("self_access", "w"),
        ("peer_access", "x"),
    ]:
        with pytest.raises(ValueError, match=field):
            VirtualMemoryResourceOptions(**{field: bad})
    with pytest.raises(ValueError, match="peers"):
        VirtualMemoryResourceOptions(peers=[-1])
    with pytest.raises(ValueError, match="addr_align"):
        VirtualMemoryResourceOptions(addr_align=-4)


def test_pool_access_enum():
    assert [m.value for m in MemoryPoolAccess] == [0, 1, 3]
    assert MemoryPoolAccess(lib.CU_MEM_ACCESS_FLAGS_PROT_READWRITE) is MemoryPoolAccess.READ_WRITE


# --------------------------------------------------------------------------
# GPU: every resource kind end to end
# --------------------------------------------------------------------------
class CuMemAllocResource(MemoryResource):
    """A user-defined resource over cuMemAlloc/cuMemFree."""

    def __init__(self, device_id):
        self._device_id = device_id
        self.deallocations = 0

    def allocate(self, size, *, stream):
        out = ffi.new("CUdeviceptr *")
        check(lib.cuMemAlloc(out, max(size, 1)))
        return Buffer.from_handle(int(out[0]), size, mr=self, stream=stream)

    def deallocate(self, ptr, size, *, stream):
        stream.sync()
        check(lib.cuMemFree(ptr))
        self.deallocations += 1

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return False

    @property
    def device_id(self):
        return self._device_id


def _attr(device_id, attr):
    out = ffi.new("int *")
    check(lib.cuDeviceGetAttribute(out, attr, device_id))
    return out[0]


def _make_resource(kind, device):
    dev_id = device.device_id
    try:
        if kind == "device_default":
            return DeviceMemoryResource(device)
        if kind == "device_owned":
            return DeviceMemoryResource(dev_id, DeviceMemoryResourceOptions())
        if kind in ("pinned_default", "pinned_owned"):
            if not _attr(dev_id, lib.CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED):
                pytest.skip("host memory pools are not supported by this device/driver")
            if kind == "pinned_default":
                return PinnedMemoryResource()
            return PinnedMemoryResource(PinnedMemoryResourceOptions())
        if kind == "managed_default":
            return ManagedMemoryResource()
        if kind == "managed_owned":
            return ManagedMemoryResource({"preferred_location": dev_id})
        if kind == "legacy_pinned":
            return LegacyPinnedMemoryResource()
        if kind == "vmm":
            if not _attr(dev_id, lib.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED):
                pytest.skip("VMM is not supported by this device")
            return VirtualMemoryResource(device)
        if kind == "sync":
            return _SynchronousMemoryResource(device)
        if kind == "user":
            return CuMemAllocResource(dev_id)
    except RuntimeError as exc:
        if "requires" in str(exc):
            pytest.skip(str(exc))
        raise
    raise AssertionError(kind)


# kind -> (device accessible, host accessible, managed, DLPack device type)
KINDS = {
    "device_default": (True, False, False, 2),
    "device_owned": (True, False, False, 2),
    "pinned_default": (True, True, False, 3),
    "pinned_owned": (True, True, False, 3),
    "managed_default": (True, True, True, 13),
    "managed_owned": (True, True, True, 13),
    "legacy_pinned": (True, True, False, 3),
    "vmm": (True, False, False, 2),
    "sync": (True, False, False, 2),
    "user": (True, False, False, 2),
}


def _host_buffer(arr):
    return Buffer.from_handle(arr.ctypes.data, arr.nbytes, owner=arr)


@pytest.mark.gpu
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("size", [0, 1, 12345, 1 << 20])
def test_resource_round_trip(device, stream, kind, size):
    mr = _make_resource(kind, device)
    dev_acc, host_acc, managed, dl_type = KINDS[kind]
    assert mr.is_device_accessible is dev_acc
    assert mr.is_host_accessible is host_acc
    assert mr.is_managed is managed
    buf = mr.allocate(size, stream=stream)
    assert buf.size >= size  # VMM rounds up to the granularity
    assert buf.memory_resource is mr
    assert buf.is_device_accessible is dev_acc and buf.is_host_accessible is host_acc
    assert buf.is_managed is managed
    if kind.startswith("managed"):
        assert isinstance(buf, ManagedBuffer)
    if buf.size:
        assert buf.__dlpack_device__()[0] == dl_type
    rng = np.random.default_rng(size)
    src = rng.integers(0, 256, buf.size, dtype=np.uint8)
    out = np.zeros(buf.size, dtype=np.uint8)
    buf.copy_from(_host_buffer(src), stream=stream)
    buf.copy_to(_host_buffer(out), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, src)
    if host_acc and buf.size:
        direct = np.asarray(buf)  # zero-copy host view
        assert direct.ctypes.data == buf.handle
        np.testing.assert_array_equal(direct, src)
        np.testing.assert_array_equal(np.from_dlpack(buf).view(np.uint8), src)
        del direct
    buf.close(stream=stream)
    assert buf.is_closed
    if kind == "user" and size:
        assert mr.deallocations == 1


@pytest.mark.gpu
def test_large_round_trip_pinned(device, stream):
    mr = LegacyPinnedMemoryResource()
    size = 256 << 20
    host = mr.allocate(size, stream=stream)
    src = np.asarray(host)
    src[:] = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8)
    dbuf = device.allocate(size, stream=stream)
    dbuf.copy_from(host, stream=stream)
    back = mr.allocate(size, stream=stream)
    back.copy_from(dbuf, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(np.asarray(back), src)
    for b in (dbuf, host, back):
        b.close(stream=stream)


@pytest.mark.gpu
def test_device_memory_resource_default_pool(device, stream):
    mr = DeviceMemoryResource(device.device_id)
    assert mr.device_id == device.device_id
    assert not mr.is_handle_owned and not mr.is_ipc_enabled and not mr.is_mapped
    assert mr.uuid is None
    assert isinstance(mr.handle, int) and mr.handle != 0
    assert mr.attributes.release_threshold == (1 << 64) - 1
    assert isinstance(mr.attributes.reuse_allow_opportunistic, bool)
    assert isinstance(mr.attributes.reuse_follow_event_dependencies, bool)
    assert isinstance(mr.attributes.reuse_allow_internal_dependencies, bool)
    assert "release_threshold" in repr(mr.attributes)
    mr.allocate(1 << 20, stream=stream).close()
    assert DMR_mempool_get_access(mr, device.device_id) is MemoryPoolAccess.READ_WRITE
    assert isinstance(_default_memory_resource(device), DeviceMemoryResource)
    assert isinstance(device.memory_resource, MemoryResource)
    mr.close()  # not owned: nothing is destroyed
    assert mr.is_closed
    assert DeviceMemoryResource(device).allocate(8, stream=stream).size == 8


@pytest.mark.gpu
def test_owned_pool_close(device, stream):
    mr = DeviceMemoryResource(device, {"max_size": 64 << 20})
    assert mr.is_handle_owned
    assert mr.attributes.release_threshold == 0
    assert mr.attributes.used_mem_current == 0
    buf = mr.allocate(1024, stream=stream)
    assert mr.attributes.used_mem_current >= 1024
    assert mr.attributes.used_mem_high >= mr.attributes.used_mem_current
    assert mr.attributes.reserved_mem_current >= mr.attributes.used_mem_current
    assert mr.attributes.reserved_mem_high >= mr.attributes.reserved_mem_current
    mr.close()
    mr.close()
    assert mr.is_closed and mr.handle == 0 and not mr.is_handle_owned
    with pytest.raises(RuntimeError, match="closed"):
        mr.allocate(16, stream=stream)
    with pytest.raises(RuntimeError, match="closed"):
        _ = mr.attributes
    buf.close()  # outstanding allocations can still be freed
    stream.sync()


@pytest.mark.gpu
def test_peer_accessible_by_single_device(device):
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    assert set(mr.peer_accessible_by) == set()
    assert len(mr.peer_accessible_by) == 0
    mr.peer_accessible_by = [device.device_id]  # the owner is ignored
    assert device.device_id not in mr.peer_accessible_by
    mr.peer_accessible_by = []
    with pytest.raises((ValueError, CUDAError)):
        mr.peer_accessible_by = [1000]
    count = ffi.new("int *")
    check(lib.cuDeviceGetCount(count))
    if count[0] > 1:
        peer = 1 if device.device_id == 0 else 0
        if device.can_access_peer(peer):
            mr.peer_accessible_by.add(peer)
            assert peer in mr.peer_accessible_by
            mr.peer_accessible_by.discard(peer)
            assert peer not in mr.peer_accessible_by


@pytest.mark.gpu
def test_allocation_bad_inputs(device, stream):
    mr = DeviceMemoryResource(device)
    with pytest.raises(ValueError, match="size"):
        mr.allocate(-1, stream=stream)
    with pytest.raises(ValueError, match="size_t"):
        mr.allocate(1 << 64, stream=stream)
    with pytest.raises(CUDAError) as info:
        mr.allocate(1 << 60, stream=stream)
    assert info.value.name in ("CUDA_ERROR_OUT_OF_MEMORY", "CUDA_ERROR_INVALID_VALUE")
    with pytest.raises(TypeError, match="Stream or GraphBuilder expected"):
        mr.allocate(16, stream=12345)
    with pytest.raises(TypeError):
        mr.allocate(16)  # the stream is required
    with pytest.raises(CUDAError) as info:
        _SynchronousMemoryResource(device).allocate(1 << 60)
    assert info.value.name == "CUDA_ERROR_OUT_OF_MEMORY"
    with pytest.raises(CUDAError):
        LegacyPinnedMemoryResource().allocate(1 << 60)


def _advisable_managed_buffer(stream, size):
    """A managed buffer whose range accepts cuMemAdvise (pool first, then cuMemAllocManaged)."""
    reasons = []
    candidates = []
    try:
        candidates.append(("pool", ManagedMemoryResource()))
    except RuntimeError as exc:
        reasons.append(f"pool: {exc}")
    candidates.append(("cuMemAllocManaged", CuMemAllocManagedResource()))
    for label, mr in candidates:
        buf = mr.allocate(size, stream=stream)
        try:
            buf.read_mostly = True
            buf.read_mostly = False
        except CUDAError as exc:
            if exc.name != "CUDA_ERROR_NOT_SUPPORTED":
                raise
            reasons.append(f"{label}: {exc}")
            buf.close(stream=stream)
            continue
        return buf
    pytest.skip("cuMemAdvise is not supported here: " + "; ".join(reasons))


@pytest.mark.gpu
def test_managed_buffer_advice_and_prefetch(device, stream):
    if not _attr(device.device_id, lib.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS):
        pytest.skip("managed-memory advice needs concurrent managed access")
    buf = _advisable_managed_buffer(stream, 1 << 20)
    assert isinstance(buf, ManagedBuffer) and buf.is_managed
    assert buf.read_mostly is False
    buf.read_mostly = True
    assert buf.read_mostly is True
    buf.read_mostly = False
    assert buf.read_mostly is False
    buf.preferred_location = device
    assert buf.preferred_location == device
    buf.preferred_location = None
    assert buf.preferred_location is None
    buf.accessed_by.add(device)
    assert device in buf.accessed_by and len(buf.accessed_by) == 1
    buf.accessed_by.discard(device)
    assert device not in buf.accessed_by
    buf.accessed_by = {device}
    assert set(buf.accessed_by) == {device}
    buf.accessed_by = set()
    assert len(buf.accessed_by) == 0
    buf.fill(0x5A, stream=stream)
    buf.prefetch(device, stream=stream)
    buf.prefetch(Host(), stream=stream)
    stream.sync()
    assert (np.asarray(buf) == 0x5A).all()
    with pytest.raises(TypeError, match="^location must be a Device, Host, or None; got str"):
        buf.prefetch("gpu", stream=stream)
    with pytest.raises(TypeError, match="^location must be a Device, Host, or None; got int"):
        buf.prefetch(-1, stream=stream)
    buf.close(stream=stream)


@pytest.mark.gpu
def test_managed_memory_resource_options(device, stream):
    try:
        default = ManagedMemoryResource()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    assert default.preferred_location is None and default.device_id == -1
    assert not default.is_handle_owned
    owned = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=device.device_id))
    assert owned.is_handle_owned
    assert owned.device_id == device.device_id
    assert owned.preferred_location == ("device", device.device_id)
    host = ManagedMemoryResource({"preferred_location_type": "host"})
    assert host.preferred_location == ("host", None) and host.device_id == -1
    buf = host.allocate(4096, stream=stream)
    buf.fill(9, stream=stream)
    stream.sync()
    assert (np.asarray(buf) == 9).all()
    buf.close(stream=stream)
    for mr in (owned, host):
        mr.close()


@pytest.mark.gpu
def test_virtual_memory_resource_grow(device, stream):
    if not _attr(device.device_id, lib.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED):
        pytest.skip("VMM is not supported by this device")
    mr = VirtualMemoryResource(device, VirtualMemoryResourceOptions(handle_type=None))
    buf = mr.allocate(1000)
    gran = buf.size
    assert gran >= 1000 and gran % 4096 == 0
    assert mr.device_id == device.device_id and mr.is_device_accessible
    src = np.random.default_rng(3).integers(0, 256, gran, dtype=np.uint8)
    buf.copy_from(_host_buffer(src), stream=stream)
    stream.sync()
    grown = mr.modify_allocation(buf, 3 * gran + 5)
    assert grown is buf and buf.size == 3 * gran + 5
    out = np.zeros(gran, dtype=np.uint8)
    head = Buffer.from_handle(buf.handle, gran)
    head.copy_to(_host_buffer(out), stream=stream)
    tail = Buffer.from_handle(buf.handle + gran, 2 * gran)
    tail.fill(7, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, src)
    assert mr.modify_allocation(buf, 10) is buf  # shrinking only refreshes access
    with pytest.raises(ValueError, match="not allocated by this"):
        mr.modify_allocation(device.allocate(8, stream=stream), 100)
    buf.close()
    assert mr._regions == {}


@pytest.mark.gpu
def test_synchronous_resource_and_user_resource_through_device(device, stream):
    user = CuMemAllocResource(device.device_id)
    old = device.memory_resource
    device.memory_resource = user
    try:
        buf = device.allocate(100, stream=stream)
        assert buf.memory_resource is user
        buf.fill(3, stream=stream)
        out = np.zeros(100, dtype=np.uint8)
        buf.copy_to(_host_buffer(out), stream=stream)
        stream.sync()
        assert (out == 3).all()
        del buf
        gc.collect()
        gc.collect()
        assert user.deallocations == 1  # the GC path went through deallocate
    finally:
        device.memory_resource = old


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _free_device_memory():
    free, total = ffi.new("size_t *"), ffi.new("size_t *")
    check(lib.cuMemGetInfo(free, total))
    return free[0]


@pytest.mark.gpu
def test_alloc_free_loop_does_not_leak(device, stream):
    """100k allocate/close cycles: device free memory within 64 MiB, host RSS within 64 MiB."""
    mr = DeviceMemoryResource(device)
    for _ in range(2000):  # warm up the pool and the JIT
        mr.allocate(1024, stream=stream).close()
    stream.sync()
    gc.collect()
    free0, rss0 = _free_device_memory(), _rss_bytes()
    for i in range(100_000):
        buf = mr.allocate(1024 + (i & 7) * 512, stream=stream)
        buf.close()
    stream.sync()
    gc.collect()
    free1, rss1 = _free_device_memory(), _rss_bytes()
    assert free0 - free1 <= 64 << 20, (free0, free1)
    assert rss1 - rss0 <= 64 << 20, (rss0, rss1)


@pytest.mark.gpu
def test_garbage_collected_buffers_return_to_pool(device, stream):
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    bufs = [mr.allocate(4096, stream=stream) for _ in range(1000)]
    assert mr.attributes.used_mem_current >= 1000 * 4096
    del bufs
    for _ in range(3):
        gc.collect()
    stream.sync()
    assert mr.attributes.used_mem_current == 0
    mr.close()
