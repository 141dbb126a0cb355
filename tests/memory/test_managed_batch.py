# SPDX-License-Identifier: Apache-2.0
"""Batched managed-memory operations and ``ManagedBuffer.discard`` / ``discard_prefetch``.

The CPU tests cover the argument checks and the CUDA 12 behaviour (with
the driver version substituted); the GPU tests prefetch, discard and
re-write managed ranges, reading the driver's last-prefetch location back
with ``cuMemRangeGetAttribute`` and the data with NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import CuMemAllocManagedResource, FlagResource, skip_without_managed_batch

import cuda_core._slots as _slots
from cuda_core import (
    PER_THREAD_DEFAULT_STREAM,
    Buffer,
    Host,
    ManagedBuffer,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory import _location, _managed_memory_ops
from cuda_core.utils import copy_batch, discard_batch, discard_prefetch_batch, prefetch_batch

BATCH_FUNCTIONS = {
    "prefetch_batch": lambda s, bufs: prefetch_batch(s, bufs, Host()),
    "discard_batch": discard_batch,
    "discard_prefetch_batch": lambda s, bufs: discard_prefetch_batch(s, bufs, Host()),
}


class FakeDevice:
    """Stands in for a Device where no GPU is needed (what a location reads)."""

    def __init__(self, device_id):
        self.device_id = device_id


@pytest.fixture
def fake_locations(monkeypatch):
    """FakeDevice counts as the Device class, and the driver as CUDA 13.0 (NUMA hosts)."""
    monkeypatch.setattr(_slots, "Device", FakeDevice)
    monkeypatch.setattr(_location, "current_driver_version", lambda: 13000)


def _fake(n, managed=True, size=4096, cls=Buffer):
    mr = FlagResource(host=managed, managed=managed, device_id=0)
    return [cls._init(0x100000 + i * size, size, mr=mr) for i in range(n)]


# --------------------------------------------------------------------------
# CPU: argument checks
# --------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BATCH_FUNCTIONS))
def test_batch_rejects_bad_sequences(name):
    fn = BATCH_FUNCTIONS[name]
    bufs = _fake(2)
    with pytest.raises(TypeError, match=f"^{name}: pass a sequence of Buffers"):
        fn(PER_THREAD_DEFAULT_STREAM, bufs[0])
    with pytest.raises(TypeError, match=f"^{name}: buffers must be a sequence of Buffer, got int"):
        fn(PER_THREAD_DEFAULT_STREAM, 7)
    with pytest.raises(ValueError, match=f"^{name}: empty buffers sequence"):
        fn(PER_THREAD_DEFAULT_STREAM, [])
    with pytest.raises(TypeError, match=f"^{name}: expected Buffer, got str"):
        fn(PER_THREAD_DEFAULT_STREAM, [bufs[0], "b"])
    bufs[1].close()
    with pytest.raises(RuntimeError, match="Buffer at index 1 is closed"):
        fn(PER_THREAD_DEFAULT_STREAM, bufs)
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got "):
        fn(None, _fake(1))


@pytest.mark.parametrize("name", sorted(BATCH_FUNCTIONS))
def test_batch_requires_managed_memory(name):
    with pytest.raises(ValueError, match=f"^{name} requires a managed-memory allocation"):
        BATCH_FUNCTIONS[name](PER_THREAD_DEFAULT_STREAM, [*_fake(1), *_fake(1, managed=False)])


@pytest.mark.parametrize("fn", [prefetch_batch, discard_prefetch_batch])
def test_batch_locations(fn):
    name = fn.__name__
    bufs = _fake(3)
    with pytest.raises(
        ValueError, match=f"^{name}: location length 2 does not match targets length 3"
    ):
        fn(PER_THREAD_DEFAULT_STREAM, bufs, [Host(), Host()])
    with pytest.raises(ValueError, match="^location is required"):
        fn(PER_THREAD_DEFAULT_STREAM, bufs, None)
    with pytest.raises(ValueError, match="^location is required"):
        fn(PER_THREAD_DEFAULT_STREAM, bufs, [Host(), None, Host()])
    with pytest.raises(TypeError, match="^location must be a Device, Host, or None; got float"):
        fn(PER_THREAD_DEFAULT_STREAM, bufs, 1.5)
    # Device ordinals and -1 are not locations (as upstream): TypeError, alone or in a sequence.
    for bad in (0, -1, [Host(), 0, Host()]):
        with pytest.raises(TypeError, match="^location must be a Device, Host, or None; got int"):
            fn(PER_THREAD_DEFAULT_STREAM, bufs, bad)


def test_broadcast_locations(fake_locations):
    dev = (lib.CU_MEM_LOCATION_TYPE_DEVICE, 0)
    host = (lib.CU_MEM_LOCATION_TYPE_HOST, 0)
    numa = (lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, 1)
    broadcast = _managed_memory_ops._broadcast_locations
    assert broadcast(FakeDevice(0), 3, "x") == (dev, dev, dev)
    assert broadcast((FakeDevice(0), Host()), 2, "x") == (dev, host)
    assert broadcast([Host(numa_id=1)] * 2, 2, "x") == (numa, numa)


def test_numa_host_locations_need_a_cuda13_driver(monkeypatch):
    monkeypatch.setattr(_location, "current_driver_version", lambda: 12080)
    bufs = _fake(2, cls=ManagedBuffer)
    for fn in (prefetch_batch, discard_prefetch_batch):
        for host in (Host(numa_id=0), Host.numa_current()):
            with pytest.raises(TypeError, match=r"^Host\(numa_id=\.\.\.\) / Host\.numa_current"):
                fn(PER_THREAD_DEFAULT_STREAM, bufs, host)
    with pytest.raises(TypeError, match=r"^Host\(numa_id=\.\.\.\) / Host\.numa_current"):
        bufs[0].discard_prefetch(Host(numa_id=0), stream=PER_THREAD_DEFAULT_STREAM)


def test_discard_needs_a_cuda13_driver(monkeypatch):
    monkeypatch.setattr(_managed_memory_ops, "current_driver_version", lambda: 12080)
    bufs = _fake(2, cls=ManagedBuffer)
    with pytest.raises(NotImplementedError, match="^discard requires a CUDA 13.0 or newer driver"):
        discard_batch(PER_THREAD_DEFAULT_STREAM, bufs)
    with pytest.raises(NotImplementedError, match="^discard_prefetch requires a CUDA 13.0"):
        discard_prefetch_batch(PER_THREAD_DEFAULT_STREAM, bufs, Host())
    with pytest.raises(
        NotImplementedError, match="^discard requires .*this driver supports CUDA 12.8"
    ):
        bufs[0].discard(stream=PER_THREAD_DEFAULT_STREAM)
    with pytest.raises(NotImplementedError, match="^discard_prefetch requires"):
        bufs[0].discard_prefetch(Host(), stream=PER_THREAD_DEFAULT_STREAM)


def test_managed_buffer_discard_checks():
    buf = _fake(1, cls=ManagedBuffer)[0]
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got "):
        buf.discard(stream=3)
    with pytest.raises(ValueError, match="^location is required"):
        buf.discard_prefetch(None, stream=PER_THREAD_DEFAULT_STREAM)
    with pytest.raises(TypeError):
        buf.discard()  # stream is keyword-only and required
    plain = _fake(1, managed=False, cls=ManagedBuffer)[0]
    with pytest.raises(ValueError, match="^discard requires a managed-memory allocation"):
        plain.discard(stream=PER_THREAD_DEFAULT_STREAM)
    with pytest.raises(ValueError, match="^discard_prefetch requires a managed-memory allocation"):
        plain.discard_prefetch(Host(), stream=PER_THREAD_DEFAULT_STREAM)
    buf.close()
    with pytest.raises(RuntimeError, match="closed"):
        buf.discard(stream=PER_THREAD_DEFAULT_STREAM)
    with pytest.raises(RuntimeError, match="closed"):
        buf.discard_prefetch(Host(), stream=PER_THREAD_DEFAULT_STREAM)


# --------------------------------------------------------------------------
# CPU: ManagedBuffer locations (Device and Host only, as upstream)
# --------------------------------------------------------------------------
def test_managed_buffer_refuses_non_locations():
    buf = _fake(1, cls=ManagedBuffer)[0]
    for bad, name in ((0, "int"), (-1, "int"), ("gpu", "str")):
        msg = f"^location must be a Device, Host, or None; got {name}$"
        with pytest.raises(TypeError, match=msg):
            buf.prefetch(bad, stream=PER_THREAD_DEFAULT_STREAM)
        with pytest.raises(TypeError, match=msg):
            buf.discard_prefetch(bad, stream=PER_THREAD_DEFAULT_STREAM)
        with pytest.raises(TypeError, match=msg):
            buf.preferred_location = bad
        with pytest.raises(TypeError, match=f"^expected Device or Host, got {name}$"):
            buf.accessed_by.add(bad)
        with pytest.raises(
            TypeError, match=f"^accessed_by entries must be Device or Host, got {name}$"
        ):
            buf.accessed_by = [Host(), bad]
        # Non-locations are never members, and discarding them does nothing.
        assert bad not in buf.accessed_by
        buf.accessed_by.discard(bad)
    with pytest.raises(ValueError, match="^location is required"):
        buf.prefetch(None, stream=PER_THREAD_DEFAULT_STREAM)


def test_managed_buffer_checks_managed_memory_first():
    plain = _fake(1, managed=False, cls=ManagedBuffer)[0]
    with pytest.raises(ValueError, match="^prefetch requires a managed-memory allocation"):
        plain.prefetch(0, stream=PER_THREAD_DEFAULT_STREAM)  # before the location
    with pytest.raises(ValueError, match="^advise requires a managed-memory allocation"):
        plain.read_mostly = True
    with pytest.raises(ValueError, match="^advise requires a managed-memory allocation"):
        plain.preferred_location = Host()


def test_managed_buffer_advice_location_kinds(fake_locations):
    buf = _fake(1, cls=ManagedBuffer)[0]
    # Accessed-by advice takes a device or the plain host only.
    for host in (Host(numa_id=0), Host.numa_current()):
        kind = "host_numa_current" if host.is_numa_current else "host_numa"
        with pytest.raises(
            ValueError,
            match=f"^advise CU_MEM_ADVISE_SET_ACCESSED_BY does not support location_type='{kind}'$",
        ):
            buf.accessed_by.add(host)
        # A NUMA host can never be a member: discarding one asks nothing of the driver.
        buf.accessed_by.discard(host)


def test_managed_buffer_numa_hosts_need_a_cuda13_driver(monkeypatch):
    monkeypatch.setattr(_location, "current_driver_version", lambda: 12080)
    buf = _fake(1, cls=ManagedBuffer)[0]
    numa = r"^Host\(numa_id=\.\.\.\) / Host\.numa_current\(\) require"
    with pytest.raises(TypeError, match=numa):
        buf.prefetch(Host(numa_id=0), stream=PER_THREAD_DEFAULT_STREAM)
    with pytest.raises(TypeError, match=numa):
        buf.preferred_location = Host.numa_current()


@pytest.mark.parametrize(
    "version, values, expect",
    [
        (12080, {"legacy": -2}, None),
        (12080, {"legacy": -1}, Host()),
        (12080, {"legacy": 3}, ("device", 3)),
        (13000, {"type": 0, "id": 0}, None),
        (13000, {"type": int(lib.CU_MEM_LOCATION_TYPE_DEVICE), "id": 1}, ("device", 1)),
        (13000, {"type": int(lib.CU_MEM_LOCATION_TYPE_HOST), "id": 0}, Host()),
        (13000, {"type": int(lib.CU_MEM_LOCATION_TYPE_HOST_NUMA), "id": 2}, Host(numa_id=2)),
    ],
)
def test_last_prefetch_location_decoding(monkeypatch, fake_locations, version, values, expect):
    from cuda_core._memory import _managed_memory_resource

    asked = []
    attrs = {
        lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION: "legacy",
        lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE: "type",
        lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID: "id",
    }

    def range_int(self, attribute):
        asked.append(attrs[attribute])
        return values[attrs[attribute]]

    monkeypatch.setattr(
        _managed_memory_resource,
        "driver_at_least",
        lambda major, minor: version >= major * 1000 + minor * 10,
    )
    monkeypatch.setattr(ManagedBuffer, "_range_int", range_int)
    got = _fake(1, cls=ManagedBuffer)[0].last_prefetch_location
    if isinstance(expect, tuple):
        assert isinstance(got, FakeDevice) and got.device_id == expect[1]
    else:
        assert got == expect
    assert sorted(asked) == sorted(values)


def test_last_prefetch_location_is_read_only():
    buf = _fake(1, cls=ManagedBuffer)[0]
    with pytest.raises(AttributeError):
        buf.last_prefetch_location = Host()


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
SIZE = 1 << 20  # whole pages, so each range's last prefetch location is defined
#: Buffers that are discarded span whole 2 MiB pages of their own (the driver
#: discards at its page granularity; two 1 MiB buffers may share a 2 MiB page).
DISCARD_SIZE = 4 << 20


def _range_int(buf, attribute):
    out = ffi.new("int *")
    check(lib.cuMemRangeGetAttribute(out, 4, attribute, buf.handle, buf.size))
    return out[0]


def _last_prefetch(buf):
    """``(legacy id, location type)``: the id is the ordinal, -1 for the host, -2 for none."""
    return (
        _range_int(buf, lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION),
        _range_int(buf, lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE),
    )


@pytest.fixture
def managed(device):
    """Make ``n`` managed buffers of SIZE bytes; skip where the batch calls cannot work."""
    skip_without_managed_batch(device)
    made = []
    mr = CuMemAllocManagedResource()

    def make(n, size=SIZE):
        bufs = [mr.allocate(size, stream=None) for _ in range(n)]
        made.extend(bufs)
        return bufs

    yield make
    for buf in made:
        buf.close(PER_THREAD_DEFAULT_STREAM)


def _fill_host(buf, value):
    np.asarray(buf).view(np.uint8)[:] = value


def _host_values(buf):
    return np.asarray(buf).view(np.uint8)


@pytest.mark.gpu
def test_prefetch_batch_to_device_and_back(device, stream, managed):
    bufs = managed(6)
    for i, buf in enumerate(bufs):
        _fill_host(buf, 10 + i)
    dev_id = device.device_id
    prefetch_batch(stream, bufs, device)
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [(dev_id, lib.CU_MEM_LOCATION_TYPE_DEVICE)] * 6
    assert [b.last_prefetch_location for b in bufs] == [device] * 6
    prefetch_batch(stream, bufs, Host())
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [(-1, lib.CU_MEM_LOCATION_TYPE_HOST)] * 6
    assert [b.last_prefetch_location for b in bufs] == [Host()] * 6
    # One location per buffer: runs of equal neighbours share a driver entry.
    per_buffer = [device, device, Host(), device, Host(), Host()]
    prefetch_batch(stream, bufs, per_buffer)
    stream.sync()
    expect_ids = [dev_id, dev_id, -1, dev_id, -1, -1]
    assert [_last_prefetch(b)[0] for b in bufs] == expect_ids
    assert [b.last_prefetch_location for b in bufs] == per_buffer
    for i, buf in enumerate(bufs):
        assert (_host_values(buf) == 10 + i).all()


@pytest.mark.gpu
def test_prefetch_batch_then_copy_batch_with_hints(device, stream, managed):
    srcs = managed(3)
    dsts = managed(3)
    for i, buf in enumerate(srcs):
        _fill_host(buf, 100 + i)
    prefetch_batch(stream, srcs, device)
    from cuda_core.utils import CopyOptions

    copy_batch(
        stream,
        srcs,
        dsts,
        options=CopyOptions(src_location_hint=device, dst_location_hint=Host()),
    )
    stream.sync()
    for i, buf in enumerate(dsts):
        assert (_host_values(buf) == 100 + i).all()


@pytest.mark.gpu
def test_discard_batch_then_rewrite(device, stream, managed):
    # Discards act on whole (large) pages: buffers of DISCARD_SIZE never share one.
    bufs = managed(4, DISCARD_SIZE)
    for buf in bufs:
        _fill_host(buf, 0xAB)
    prefetch_batch(stream, bufs, device)
    discard_batch(stream, bufs)
    # The contents stay indeterminate until written; the discard completes
    # before the rewrite starts.  The rewrite is made from the host: with
    # driver 580 a device memset issued right after a batch discard was now
    # and then lost (the host read back the values from before the discard).
    stream.sync()
    for i, buf in enumerate(bufs):
        _fill_host(buf, 0x30 + i)
    prefetch_batch(stream, bufs, device)
    prefetch_batch(stream, bufs, Host())
    stream.sync()
    for i, buf in enumerate(bufs):
        assert (_host_values(buf) == 0x30 + i).all(), i
    # The single-buffer form, then a write from the host.
    bufs[0].discard(stream=stream)
    stream.sync()
    _fill_host(bufs[0], 0x5C)
    assert (_host_values(bufs[0]) == 0x5C).all()


@pytest.mark.gpu
def test_discard_prefetch_batch(device, stream, managed):
    bufs = managed(4, DISCARD_SIZE)
    for buf in bufs:
        _fill_host(buf, 0x77)
    dev_id = device.device_id
    discard_prefetch_batch(stream, bufs, device)
    stream.sync()
    assert [_last_prefetch(b) for b in bufs] == [(dev_id, lib.CU_MEM_LOCATION_TYPE_DEVICE)] * 4
    discard_prefetch_batch(stream, bufs, [Host(), device, Host(), device])
    stream.sync()
    assert [_last_prefetch(b)[0] for b in bufs] == [-1, dev_id, -1, dev_id]
    assert [b.last_prefetch_location for b in bufs] == [Host(), device, Host(), device]
    for i, buf in enumerate(bufs):
        buf.fill(0x40 + i, stream=stream)
    stream.sync()
    for i, buf in enumerate(bufs):
        assert (_host_values(buf) == 0x40 + i).all()
    bufs[1].discard_prefetch(Host(), stream=stream)
    stream.sync()
    assert _last_prefetch(bufs[1]) == (-1, lib.CU_MEM_LOCATION_TYPE_HOST)
    _fill_host(bufs[1], 0x12)
    assert (_host_values(bufs[1]) == 0x12).all()


@pytest.mark.gpu
def test_managed_pool_buffers_batch(device, stream, managed):
    """Buffers of a ManagedMemoryResource pool take the batch calls too.

    The pool is this test's own, destroyed at the end: discarded pages never
    go back to the device's default managed pool, whose later allocations
    other tests read from the host.
    """
    del managed  # only its skips
    mr = ManagedMemoryResource(ManagedMemoryResourceOptions(preferred_location=device.device_id))
    bufs = [mr.allocate(SIZE, stream=stream) for _ in range(3)]
    try:
        for i, buf in enumerate(bufs):
            buf.fill(0x20 + i, stream=stream)
        prefetch_batch(stream, bufs, device)
        discard_prefetch_batch(stream, bufs[:2], Host())
        stream.sync()  # the discard is complete before the ranges are written again
        bufs[0].fill(0x61, stream=stream)
        bufs[1].fill(0x62, stream=stream)
        prefetch_batch(stream, bufs, Host())
        stream.sync()
        for buf, value in zip(bufs, (0x61, 0x62, 0x22)):
            assert (_host_values(buf) == value).all(), hex(value)
    finally:
        for buf in bufs:
            buf.close(stream)
        stream.sync()
        mr.close()


@pytest.mark.gpu
def test_managed_batch_bad_input_on_gpu(device, stream, managed):
    bufs = managed(2)
    plain = device.allocate(SIZE, stream=stream)
    try:
        for name, fn in BATCH_FUNCTIONS.items():
            with pytest.raises(ValueError, match=f"^{name} requires a managed-memory allocation"):
                fn(stream, [bufs[0], plain])
        with pytest.raises(ValueError, match="location length"):
            prefetch_batch(stream, bufs, [device])
        with pytest.raises(TypeError, match="pass a sequence of Buffers"):
            discard_batch(stream, bufs[0])
    finally:
        plain.close(stream)
        stream.sync()


@pytest.mark.gpu
def test_last_prefetch_location(device, stream, managed):
    buf = managed(1)[0]
    assert buf.last_prefetch_location is None  # never prefetched
    buf.prefetch(device, stream=stream)
    stream.sync()
    assert buf.last_prefetch_location == device
    assert _last_prefetch(buf) == (device.device_id, lib.CU_MEM_LOCATION_TYPE_DEVICE)
    buf.prefetch(Host(), stream=stream)
    stream.sync()
    assert buf.last_prefetch_location is Host()
    buf.discard_prefetch(device, stream=stream)
    stream.sync()
    assert buf.last_prefetch_location == device


@pytest.mark.gpu
def test_last_prefetch_location_host_numa(device, stream, managed):
    props = device.properties
    if not props.pageable_memory_access:
        pytest.skip(
            "prefetching managed memory to a host NUMA node needs HMM or ATS "
            "(the device reports pageable_memory_access=0)"
        )
    numa = getattr(props, "host_numa_id", -1)
    if numa is None or numa < 0:
        pytest.skip("the device reports no host NUMA node")
    buf = managed(1)[0]
    buf.prefetch(Host(numa_id=numa), stream=stream)
    stream.sync()
    assert buf.last_prefetch_location == Host(numa_id=numa)
    prefetch_batch(stream, [buf], Host(numa_id=numa))
    stream.sync()
    assert buf.last_prefetch_location == Host(numa_id=numa)
