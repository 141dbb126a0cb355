# SPDX-License-Identifier: Apache-2.0
"""Sharing memory pools and buffers between processes.

The CPU tests cover the descriptor and handle objects (including passing a
file descriptor through multiprocessing's pickler); the GPU tests spawn a
real second process that maps the pool, checks a buffer's contents and
writes new ones that the parent reads back.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import uuid
import warnings

import numpy as np
import pytest
from _ipc_setup import ipc_device_pool, ipc_pinned_pool, run_child

from cuda_core import (
    Buffer,
    DeviceMemoryResource,
)
from cuda_core._memory import IPCAllocationHandle, IPCBufferDescriptor, _ipc

SIZE = 1 << 20


# --------------------------------------------------------------------------
# No GPU
# --------------------------------------------------------------------------
def test_descriptor_objects():
    with pytest.raises(RuntimeError, match="cannot be instantiated"):
        IPCBufferDescriptor()
    with pytest.raises(RuntimeError, match="cannot be instantiated"):
        IPCAllocationHandle()
    desc = IPCBufferDescriptor._init(bytes(range(64)), 4096)
    again = pickle.loads(pickle.dumps(desc))
    assert again.size == 4096 and again._payload == bytes(range(64))
    with pytest.raises(ValueError, match="64 bytes"):
        IPCBufferDescriptor._init(b"short", 1)


def test_allocation_handle_owns_its_descriptor():
    r, w = os.pipe()
    os.close(w)
    h = IPCAllocationHandle._init(r, uuid.uuid4())
    assert int(h) == r and h.handle == r and not h.is_closed
    h.close()
    h.close()
    assert h.is_closed and h.handle == -1
    with pytest.raises(ValueError, match="closed"):
        int(h)
    with pytest.raises(OSError):
        os.fstat(r)
    r2, w2 = os.pipe()
    os.close(w2)
    IPCAllocationHandle._init(r2, None)  # dropped: the finalizer closes the fd
    gc.collect()
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(r2)


def test_allocation_handle_travels_through_multiprocessing_pickler():
    from multiprocessing.reduction import ForkingPickler

    r, w = os.pipe()
    key = uuid.uuid4()
    h = IPCAllocationHandle._init(r, key)
    # Pickling outside a spawn warns exactly when 'fork' is the start method.
    fork = multiprocessing.get_start_method(allow_none=True) == "fork"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = ForkingPickler.dumps(h)
    assert any("'fork' start method" in str(w.message) for w in caught) == fork
    h2 = pickle.loads(data)
    assert h2.uuid == key
    assert h2.handle != h.handle
    os.write(w, b"x")
    assert os.read(h2.handle, 1) == b"x"  # a duplicate of the same pipe
    h.close()
    h2.close()
    os.close(w)


def test_registry_miss_and_platform():
    assert _ipc.is_supported() == (os.name == "posix" and os.uname().sysname == "Linux")
    with pytest.raises(RuntimeError, match="was not found"):
        DeviceMemoryResource.from_registry(uuid.uuid4())


# --------------------------------------------------------------------------
# GPU: a second process
# --------------------------------------------------------------------------
def _child_check_and_write(conn, mr, buf, expected, device_id):
    """Runs in the spawned process: verify ``buf`` and overwrite it with 0x77."""
    try:
        from cuda_core import Device

        dev = Device(device_id)
        dev.set_current()
        stream = dev.create_stream()
        result = {"is_mapped": mr.is_mapped, "buf_mapped": buf.is_mapped, "size": buf.size}
        host = np.zeros(buf.size, dtype=np.uint8)
        buf.copy_to(Buffer.from_handle(host.ctypes.data, host.nbytes, owner=host), stream=stream)
        stream.sync()
        result["matches"] = bool((host == expected).all())
        try:
            mr.allocate(16, stream=stream)
            result["allocate"] = "allowed"
        except TypeError as exc:
            result["allocate"] = str(exc)
        result["refusals"] = []  # sizes refused on their own elsewhere: mapped first
        for size in (0, -1, 1 << 64):
            try:
                mr.allocate(size, stream=stream)
                result["refusals"].append("allowed")
            except TypeError as exc:
                result["refusals"].append(str(exc))
        buf.fill(0x77, stream=stream)
        stream.sync()
        buf.close()
        conn.send(result)
    except BaseException as exc:  # report everything to the parent
        conn.send({"error": repr(exc)})


def _child_explicit_import(conn, device_id, alloc_handle, desc, expected):
    """Runs in the spawned process: map with the explicit API, then verify."""
    try:
        from cuda_core import Device

        dev = Device(device_id)
        dev.set_current()
        stream = dev.create_stream()
        mr = DeviceMemoryResource.from_allocation_handle(dev, alloc_handle)
        buf = Buffer.from_ipc_descriptor(mr, desc, stream=stream)
        host = np.zeros(buf.size, dtype=np.uint8)
        buf.copy_to(Buffer.from_handle(host.ctypes.data, host.nbytes, owner=host), stream=stream)
        stream.sync()
        buf.close()
        registered = DeviceMemoryResource.from_registry(alloc_handle.uuid) is mr
        conn.send({"matches": bool((host == expected).all()), "registered": registered})
    except BaseException as exc:
        conn.send({"error": repr(exc)})


@pytest.mark.gpu
def test_ipc_resource_properties(device, stream):
    mr = ipc_device_pool(device)
    assert mr.is_ipc_enabled and not mr.is_mapped and mr.is_handle_owned
    assert isinstance(mr.uuid, uuid.UUID)
    handle = mr.allocation_handle
    assert isinstance(handle, IPCAllocationHandle) and handle.uuid == mr.uuid
    assert int(handle) >= 0
    buf = mr.allocate(SIZE, stream=stream)
    desc = buf.ipc_descriptor
    assert desc.size == SIZE and buf.ipc_descriptor is desc
    assert pickle.loads(pickle.dumps(desc)).size == SIZE
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        _ = DeviceMemoryResource(device).allocation_handle
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        _ = device.allocate(16, stream=stream).ipc_descriptor
    buf.close()


@pytest.mark.gpu
def test_buffer_shared_with_second_process(device, stream):
    mr = ipc_device_pool(device)
    buf = mr.allocate(SIZE, stream=stream)
    pattern = (np.arange(SIZE) % 251).astype(np.uint8)
    buf.copy_from(Buffer.from_handle(pattern.ctypes.data, SIZE, owner=pattern), stream=stream)
    stream.sync()
    result = run_child(_child_check_and_write, mr, buf, pattern, device.device_id)
    assert result["matches"], result
    assert result["is_mapped"] and result["buf_mapped"] and result["size"] == SIZE
    assert "mapped" in result["allocate"]
    assert [("mapped" in r) for r in result["refusals"]] == [True] * 3, result["refusals"]
    out = np.zeros(SIZE, dtype=np.uint8)
    buf.copy_to(Buffer.from_handle(out.ctypes.data, SIZE, owner=out), stream=stream)
    stream.sync()
    assert (out == 0x77).all()  # the child's writes are visible here
    buf.close()
    mr.close()


@pytest.mark.gpu
def test_explicit_handle_and_descriptor(device, stream):
    mr = ipc_device_pool(device)
    buf = mr.allocate(4096, stream=stream)
    buf.fill(0x3C, stream=stream)
    stream.sync()
    expected = np.full(4096, 0x3C, dtype=np.uint8)
    result = run_child(
        _child_explicit_import, device.device_id, mr.allocation_handle, buf.ipc_descriptor, expected
    )
    assert result["matches"] and result["registered"]
    buf.close()


@pytest.mark.gpu
def test_pinned_buffer_shared_with_second_process(device, stream):
    mr = ipc_pinned_pool(device)
    assert mr.is_ipc_enabled and mr.numa_id >= 0 and mr.device_id == -1
    buf = mr.allocate(SIZE, stream=stream)
    pattern = (np.arange(SIZE) % 13).astype(np.uint8)
    np.asarray(buf)[:] = pattern
    result = run_child(_child_check_and_write, mr, buf, pattern, device.device_id)
    assert result["matches"], result
    assert result["is_mapped"] and result["buf_mapped"]
    stream.sync()
    assert (np.asarray(buf) == 0x77).all()
    buf.close()
