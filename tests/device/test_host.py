# SPDX-License-Identifier: Apache-2.0
"""Host as a memory location: the object itself, and memory placed by it.

GPU part: a pinned memory resource on this machine's NUMA node gives pages
on that node (checked with the kernel's ``move_pages``), and a managed
buffer's preferred location and prefetch target round-trip through the
driver's range attributes.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import platform

import pytest
from _helpers import FlagResource

from cuda_core import (
    Device,
    Host,
    ManagedBuffer,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _location
from cuda_core._memory._managed_memory_resource import AccessedBySet


def test_forms_and_singletons():
    assert Host().numa_id is None and Host().is_numa_current is False
    assert Host(numa_id=3).numa_id == 3 and Host(3) is Host(numa_id=3)
    current = Host.numa_current()
    assert current.is_numa_current and current.numa_id is None
    assert Host(is_numa_current=True) is current
    assert Host() is Host() and Host() is not current
    assert Host() == Host() and Host() != Host(numa_id=0) and current != Host()
    assert hash(Host(numa_id=1)) == hash(Host(numa_id=1))
    assert Host() != Device  # other types are never equal
    assert (repr(Host()), repr(Host(numa_id=2)), repr(current)) == (
        "Host()",
        "Host(numa_id=2)",
        "Host.numa_current()",
    )


@pytest.mark.parametrize("bad", [-1, True, False, 1.0, "0"])
def test_bad_numa_id(bad):
    with pytest.raises(ValueError, match="numa_id must be a non-negative int"):
        Host(numa_id=bad)


def test_exclusive_and_immutable():
    with pytest.raises(ValueError, match="mutually exclusive"):
        Host(numa_id=0, is_numa_current=True)
    h = Host(numa_id=2)
    with pytest.raises(AttributeError):
        h.numa_id = 3
    with pytest.raises(AttributeError):
        h._numa_id = 3
    assert h.numa_id == 2


def test_pickle_keeps_identity():
    for h in (Host(), Host(numa_id=5), Host.numa_current()):
        assert pickle.loads(pickle.dumps(h)) is h


def test_accessed_by_refuses_numa_hosts_before_advising(monkeypatch):
    # A made-up managed range on a CUDA 13 driver with no advice yet: the
    # location check comes before any cuMemAdvise.
    monkeypatch.setattr(_location, "current_driver_version", lambda: 13000)
    monkeypatch.setattr(AccessedBySet, "_ids", lambda self: set())
    buf = ManagedBuffer._init(0x100000, 4096, mr=FlagResource(managed=True))
    for host, kind in ((Host(numa_id=0), "host_numa"), (Host.numa_current(), "host_numa_current")):
        msg = f"^advise CU_MEM_ADVISE_SET_ACCESSED_BY does not support location_type='{kind}'$"
        with pytest.raises(ValueError, match=msg):
            buf.accessed_by.add(host)
        with pytest.raises(ValueError, match=msg):
            buf.accessed_by = [Host(), host]
        buf.accessed_by.discard(host)  # never a member: nothing to do


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
_MOVE_PAGES = {"x86_64": 279, "aarch64": 239}


def _numa_nodes_of(address, nbytes):
    """Return the NUMA node of each page of [address, address + nbytes) (move_pages query)."""
    nr = _MOVE_PAGES.get(platform.machine())
    if nr is None or not os.path.exists("/sys/devices/system/node/node0"):
        pytest.skip("move_pages (NUMA query) is not available here")
    page = os.sysconf("SC_PAGE_SIZE")
    count = (nbytes + page - 1) // page
    pages = (ctypes.c_void_p * count)(*[address + i * page for i in range(count)])
    status = (ctypes.c_int * count)()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    rc = libc.syscall(
        ctypes.c_long(nr), 0, ctypes.c_ulong(count), pages, None, status, ctypes.c_int(0)
    )
    if rc != 0:
        pytest.skip(f"move_pages failed: errno {ctypes.get_errno()}")
    nodes = list(status)
    if any(n < 0 for n in nodes):  # e.g. -EFAULT: a driver mapping the kernel cannot place
        return None
    return nodes


@pytest.fixture
def host_numa(device):
    numa = getattr(device.properties, "host_numa_id", -1)
    if numa is None or numa < 0:
        pytest.skip("the device reports no host NUMA node")
    return Host(numa_id=numa)


@pytest.mark.gpu
def test_pinned_memory_lands_on_the_numa_node(device, stream, host_numa):
    if not getattr(device.properties, "host_memory_pools_supported", False):
        pytest.skip("host memory pools are not supported")
    mr = PinnedMemoryResource(PinnedMemoryResourceOptions(numa_id=host_numa.numa_id))
    nbytes = 1 << 20
    buf = mr.allocate(nbytes, stream=stream)
    stream.sync()
    assert mr.numa_id == host_numa.numa_id and buf.device_id == -1 and buf.is_host_accessible
    ctypes.memset(buf.handle, 0x5A, nbytes)  # touch every page
    assert ctypes.string_at(buf.handle + nbytes - 4, 4) == b"\x5a" * 4
    nodes = _numa_nodes_of(buf.handle, nbytes)
    buf.close(stream)
    mr.close()
    if nodes is None:
        pytest.skip("the kernel cannot report the NUMA node of these driver-mapped pages")
    assert set(nodes) == {host_numa.numa_id}


def _range_attr(buf, attribute):
    out = ffi.new("int *")
    check(lib.cuMemRangeGetAttribute(out, 4, attribute, buf.handle, buf.size))
    return out[0]


@pytest.fixture
def managed_buffer(device, stream):
    """A ``cuMemAllocManaged`` range, freed at the end of the test.

    Advice is documented for ``cuMemAllocManaged`` memory; ranges of a managed
    pool refuse some advice (CUDA_ERROR_NOT_SUPPORTED), and advice left on a
    pool's pages would follow them into other tests' allocations.
    """
    if not device.properties.concurrent_managed_access:
        pytest.skip("the device has no concurrent managed access")
    size = 1 << 20
    out = ffi.new("CUdeviceptr *")
    check(lib.cuMemAllocManaged(out, size, lib.CU_MEM_ATTACH_GLOBAL))
    buf = ManagedBuffer.from_handle(int(out[0]), size)
    try:
        yield buf
    finally:
        buf.close()
        stream.sync()
        check(lib.cuMemFree(int(out[0])))


@pytest.mark.gpu
def test_managed_preferred_location_round_trips(device, managed_buffer, host_numa):
    buf = managed_buffer
    assert buf.preferred_location is None
    buf.preferred_location = Host()
    assert buf.preferred_location is Host()
    assert _range_attr(buf, lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE) == (
        lib.CU_MEM_LOCATION_TYPE_HOST
    )
    buf.preferred_location = device
    assert buf.preferred_location == device
    buf.preferred_location = None
    assert buf.preferred_location is None
    # A host NUMA node: the property reports what the driver recorded.
    buf.preferred_location = host_numa
    kind = _range_attr(buf, lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE)
    if kind != lib.CU_MEM_LOCATION_TYPE_HOST_NUMA:
        assert kind == lib.CU_MEM_LOCATION_TYPE_INVALID and buf.preferred_location is None
        pytest.skip(
            "this driver accepts a host-NUMA preferred location but does not record it "
            "(the range reports no preferred location)"
        )
    assert _range_attr(buf, lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID) == host_numa.numa_id
    assert buf.preferred_location == host_numa
    buf.preferred_location = None
    assert buf.preferred_location is None


@pytest.mark.gpu
def test_managed_prefetch_to_host_numa(device, stream, managed_buffer, host_numa):
    buf = managed_buffer
    buf.prefetch(device, stream=stream)
    stream.sync()
    assert _range_attr(buf, lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION) == device.device_id
    buf.prefetch(host_numa, stream=stream)
    stream.sync()
    assert _range_attr(buf, lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE) == (
        lib.CU_MEM_LOCATION_TYPE_HOST_NUMA
    )
    assert _range_attr(buf, lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID) == (
        host_numa.numa_id
    )
    nodes = _numa_nodes_of(buf.handle, buf.size)
    if nodes is not None:  # where the kernel can place the migrated pages, they agree
        assert set(nodes) == {host_numa.numa_id}


@pytest.mark.gpu
def test_managed_accessed_by_host(managed_buffer, host_numa):
    buf = managed_buffer
    # The driver takes accessed-by advice for devices and the plain host only.
    for numa_host, kind in ((host_numa, "host_numa"), (Host.numa_current(), "host_numa_current")):
        with pytest.raises(ValueError, match=f"does not support location_type='{kind}'"):
            buf.accessed_by.add(numa_host)
        with pytest.raises(ValueError, match=f"does not support location_type='{kind}'"):
            buf.accessed_by = {Host(), numa_host}
    assert len(buf.accessed_by) == 0  # the refused assignments changed nothing
    buf.accessed_by.add(Host())
    assert Host() in buf.accessed_by and list(buf.accessed_by) == [Host()]
    buf.accessed_by.discard(host_numa)  # never a member: no effect
    assert Host() in buf.accessed_by
    buf.accessed_by.discard(Host())
    assert len(buf.accessed_by) == 0
