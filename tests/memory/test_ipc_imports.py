# SPDX-License-Identifier: Apache-2.0
"""IPC imports in one process: one mapping per (pool, exported pointer).

Importing the same buffer descriptor twice into one resource gives two
Buffers over one mapping (the same handle); the memory is unmapped once,
when the last of them is closed, in either order.  The CPU tests drive the
import cache over a stand-in for the driver; the GPU tests spawn a child
(``multiprocessing`` with ``spawn``, on either interpreter) that imports,
closes in both orders and imports again, for device and pinned pools, and
share an IPC event across the two processes.  Also here: which class a
registered mapped resource may be returned as, and the moment an
IPC-enabled event with timing is refused.
"""

from __future__ import annotations

import gc
import types
import uuid

import numpy as np
import pytest
from _ipc_setup import ipc_device_pool, ipc_pinned_pool, run_child

from cuda_core import (
    Buffer,
    DeviceMemoryResource,
    EventOptions,
    MemoryResource,
    PinnedMemoryResource,
)
from cuda_core._cuda_ffi import ffi
from cuda_core._memory import IPCBufferDescriptor, _ipc, _ipc_imports, _release
from cuda_core._memory._owned_pool import _OwnedPool
from cuda_core._stream import _BORROWED, _adopt

SIZE = 1 << 20


# --------------------------------------------------------------------------
# No GPU: the import cache over a stand-in driver
# --------------------------------------------------------------------------
class _StandInPool(_OwnedPool):
    """Counts like an owned pool; there is no pool to destroy."""

    __slots__ = ()

    def _destroy(self, raise_errors):
        self.token.clear()


class _MappedStandIn(MemoryResource):
    """A mapped IPC pool as ``buffer_from_ipc_descriptor`` sees it; it allocates nothing."""

    def __init__(self, handle):
        self._pool = ffi.cast("CUmemoryPool", handle)
        self._h = handle
        self._state = _StandInPool(self._pool, "stand-in")
        self.is_ipc_enabled = True
        self.is_closed = False

    def allocate(self, size, stream=None):
        raise NotImplementedError

    def deallocate(self, ptr, size, stream=None):
        raise NotImplementedError

    is_device_accessible = True
    is_host_accessible = False
    device_id = -1


@pytest.fixture
def driver(monkeypatch):
    """Stand-ins for cuMemPoolImportPointer (a new address per call) and cuMemFreeAsync."""
    calls = types.SimpleNamespace(imports=[], frees=[])

    def import_pointer(out, pool, data):
        calls.imports.append(bytes(ffi.buffer(data.reserved)))
        out[0] = 0x10000 * len(calls.imports)
        return 0

    def free(ptr, c_stream):
        calls.frees.append(int(ptr))
        return 0

    monkeypatch.setattr(_ipc, "lib", types.SimpleNamespace(cuMemPoolImportPointer=import_pointer))
    monkeypatch.setattr(_release, "_cuMemFreeAsync", free)
    yield calls
    _ipc_imports._imports.clear()


def _descriptor(seed):
    return IPCBufferDescriptor._init(bytes([seed]) * 64, 4096)


def _stream():
    return _adopt(ffi.cast("CUstream", 0x50), 0x50, None, _BORROWED)


@pytest.mark.parametrize("first_closed", [0, 1])
def test_second_import_shares_the_mapping(driver, first_closed):
    mr = _MappedStandIn(0x7000)
    desc = _descriptor(1)
    bufs = [Buffer.from_ipc_descriptor(mr, desc, stream=_stream()) for _ in range(2)]
    assert bufs[0] is not bufs[1]
    assert bufs[0].handle == bufs[1].handle == 0x10000
    assert bufs[0].is_mapped and bufs[1].is_mapped and bufs[1].size == 4096
    assert len(driver.imports) == 1 and _ipc_imports.imported_count() == 1
    assert mr._state.live == [None]  # the pool counts one outstanding mapping
    bufs[first_closed].close()
    assert driver.frees == [] and not bufs[1 - first_closed].is_closed
    bufs[1 - first_closed].close()
    assert driver.frees == [0x10000]  # one mapping, one release
    assert _ipc_imports.imported_count() == 0 and mr._state.live == []
    # Sent again after the last close: a new mapping.
    again = Buffer.from_ipc_descriptor(mr, desc, stream=_stream())
    assert again.handle == 0x20000 and len(driver.imports) == 2
    again.close()
    assert driver.frees == [0x10000, 0x20000]


def test_imports_are_keyed_by_pool_and_descriptor(driver):
    mr_a, mr_b = _MappedStandIn(0x7000), _MappedStandIn(0x8000)
    a1 = Buffer.from_ipc_descriptor(mr_a, _descriptor(1), stream=_stream())
    a2 = Buffer.from_ipc_descriptor(mr_a, _descriptor(2), stream=_stream())
    b1 = Buffer.from_ipc_descriptor(mr_b, _descriptor(1), stream=_stream())
    assert len({a1.handle, a2.handle, b1.handle}) == 3 and len(driver.imports) == 3
    for buf in (a1, a2, b1):
        buf.close()
    assert sorted(driver.frees) == [0x10000, 0x20000, 0x30000]


def test_collected_imports_release_the_mapping_once(driver):
    mr = _MappedStandIn(0x7000)
    desc = _descriptor(3)
    first = Buffer.from_ipc_descriptor(mr, desc, stream=_stream())
    second = Buffer.from_ipc_descriptor(mr, desc, stream=_stream())
    first.close()
    del second
    for _ in range(3):
        gc.collect()
    assert driver.frees == [0x10000] and _ipc_imports.imported_count() == 0


def test_a_failed_second_wrap_gives_its_claim_back(driver, monkeypatch):
    mr = _MappedStandIn(0x7000)
    desc = _descriptor(4)
    first = Buffer.from_ipc_descriptor(mr, desc, stream=_stream())

    def broken(*args, **kwargs):
        raise MemoryError("no Buffer")

    monkeypatch.setattr(Buffer, "_from_shared", classmethod(broken))
    with pytest.raises(MemoryError):
        Buffer.from_ipc_descriptor(mr, desc, stream=_stream())
    first.close()
    assert driver.frees == [0x10000]


def test_registered_resource_of_another_class_is_refused():
    key = uuid.uuid4()
    pinned = object.__new__(PinnedMemoryResource)
    _ipc._registry[key] = pinned
    handle = types.SimpleNamespace(uuid=key)
    try:
        with pytest.raises(
            TypeError,
            match=rf"^Registry contains a PinnedMemoryResource for uuid {key}, "
            r"but DeviceMemoryResource was requested$",
        ):
            _ipc.mempool_from_allocation_handle(DeviceMemoryResource, handle, 0)
        assert _ipc.mempool_from_allocation_handle(PinnedMemoryResource, handle, -1) is pinned
    finally:
        del _ipc._registry[key]


def test_ipc_event_options_construct():
    opts = EventOptions(ipc_enabled=True, timing_enabled=True)
    assert opts.ipc_enabled and opts.timing_enabled


# --------------------------------------------------------------------------
# GPU: a spawned child imports twice
# --------------------------------------------------------------------------
def _read(buf, stream):
    host = np.zeros(buf.size, dtype=np.uint8)
    buf.copy_to(Buffer.from_handle(host.ctypes.data, host.nbytes, owner=host), stream=stream)
    stream.sync()
    return host


def _child_imports_twice(conn, mr, desc, fill):
    """Import ``desc`` twice, close in both orders, import again; report what was seen."""
    try:
        from cuda_core import Device
        from cuda_core._memory import _ipc_imports

        dev = Device(0)
        dev.set_current()
        s = dev.create_stream()
        report = {"rounds": []}
        for first_closed in (0, 1):
            a = Buffer.from_ipc_descriptor(mr, desc, stream=s)
            b = Buffer.from_ipc_descriptor(mr, desc, stream=s)
            seen = {"same": a.handle == b.handle, "mapped": a.is_mapped and b.is_mapped}
            seen["contents"] = bool((_read(b, s) == fill).all())
            pair = (a, b)
            pair[first_closed].close()
            other = pair[1 - first_closed]
            seen["still_readable"] = bool((_read(other, s) == fill).all())
            other.close()
            s.sync()
            seen["cached_after"] = _ipc_imports.imported_count()
            report["rounds"].append(seen)
        # Sent again: a third mapping after both were released, written to.
        c = Buffer.from_ipc_descriptor(mr, desc, stream=s)
        c.fill(0x5A, stream=s)
        s.sync()
        c.close()
        s.sync()
        report["cached_end"] = _ipc_imports.imported_count()
        s.close()
        conn.send(report)
    except BaseException as exc:  # report everything to the parent
        conn.send({"error": repr(exc)})


def _child_wrong_class(conn, mr, handle):
    """``mr`` arrives mapped (and registered); map its handle with the other class."""
    try:
        from cuda_core import Device

        dev = Device(0)
        dev.set_current()
        try:
            if isinstance(mr, PinnedMemoryResource):
                DeviceMemoryResource.from_allocation_handle(dev, handle)
            else:
                PinnedMemoryResource.from_allocation_handle(handle)
            conn.send({"raised": None})
        except TypeError as exc:
            conn.send({"raised": str(exc)})
    except BaseException as exc:
        conn.send({"error": repr(exc)})


def _child_waits_on_event(conn, mr, desc):
    """Wait for the parent's IPC event, then read the buffer it ordered."""
    try:
        from cuda_core import Device

        dev = Device(0)
        dev.set_current()
        event = conn.recv()  # opened on arrival: a context is current now
        s = dev.create_stream()
        s.wait(event)
        buf = Buffer.from_ipc_descriptor(mr, desc, stream=s)
        again = Buffer.from_ipc_descriptor(mr, desc, stream=s)
        host = _read(buf, s)
        event.sync()
        report = {
            "ipc": event.is_ipc_enabled,
            "done": event.is_done,
            "contents": bool((host == 0x42).all()),
            "same": buf.handle == again.handle,
        }
        again.close()
        buf.close()
        event.close()
        s.close()
        conn.send(report)
    except BaseException as exc:
        conn.send({"error": repr(exc)})


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["device", "pinned"])
def test_child_imports_one_descriptor_twice(device, stream, kind):
    mr = ipc_device_pool(device) if kind == "device" else ipc_pinned_pool(device)
    buf = mr.allocate(SIZE, stream=stream)
    buf.fill(0x3C, stream=stream)
    stream.sync()
    report = run_child(_child_imports_twice, mr, buf.ipc_descriptor, 0x3C)
    for seen in report["rounds"]:
        assert seen == {
            "same": True,
            "mapped": True,
            "contents": True,
            "still_readable": True,
            "cached_after": 0,
        }, report
    assert report["cached_end"] == 0
    assert (_read(buf, stream) == 0x5A).all()  # the re-sent import wrote here
    buf.close()
    mr.close()


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["device", "pinned"])
def test_child_maps_a_handle_with_the_wrong_class(device, kind):
    mr = ipc_device_pool(device) if kind == "device" else ipc_pinned_pool(device)
    result = run_child(_child_wrong_class, mr, mr.allocation_handle)
    other = "PinnedMemoryResource" if kind == "device" else "DeviceMemoryResource"
    assert result["raised"] == (
        f"Registry contains a {type(mr).__name__} for uuid {mr.uuid}, but {other} was requested"
    )
    mr.close()


@pytest.mark.gpu
def test_ipc_event_orders_the_child_after_the_parent(device, stream):
    if not device.properties.ipc_event_supported:
        pytest.skip("this device does not support IPC events")
    mr = ipc_device_pool(device)
    buf = mr.allocate(SIZE, stream=stream)
    buf.fill(0x42, stream=stream)
    event = stream.record(options=EventOptions(ipc_enabled=True))
    report = run_child(_child_waits_on_event, mr, buf.ipc_descriptor, send=event)
    assert report == {"ipc": True, "done": True, "contents": True, "same": True}
    event.close()
    buf.close()
    mr.close()


@pytest.mark.gpu
def test_ipc_event_with_timing_is_refused_when_created(device, stream):
    opts = EventOptions(ipc_enabled=True, timing_enabled=True)  # constructs
    for options in (opts, {"ipc_enabled": True, "timing_enabled": True}):
        with pytest.raises(TypeError, match=r"^IPC-enabled events cannot use timing\.$"):
            stream.record(options=options)
    with pytest.raises(TypeError, match="must be bound"):
        device.create_event(opts)
