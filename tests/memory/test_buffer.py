# SPDX-License-Identifier: Apache-2.0
"""Buffer: construction, ownership, lifetimes, DLPack/NumPy export, copies and fills.

The first half runs without a GPU (host memory from a Python memory
resource); the ``gpu`` tests check copies and fills against NumPy.
"""

from __future__ import annotations

import gc
import pickle
import sys
import warnings
import weakref

import numpy as np
import pytest
from _helpers import FlagResource, HostMemoryResource

from cuda_core import LEGACY_DEFAULT_STREAM, Buffer, CUDAError, CUDAWarning, MemoryResource
from cuda_core._cuda_ffi import ffi
from cuda_core._memory import _dlpack
from cuda_core._memory._buffer_helpers import _parse_fill_value

IS_PYPY = sys.implementation.name == "pypy"


def _collect():
    for _ in range(3):
        gc.collect()


# --------------------------------------------------------------------------
# Construction and ownership (no GPU)
# --------------------------------------------------------------------------
def test_buffer_cannot_be_constructed():
    with pytest.raises(RuntimeError, match="MemoryResource APIs"):
        Buffer()


def test_from_handle_view_properties():
    arr = np.arange(8, dtype=np.uint8)
    buf = Buffer.from_handle(arr.ctypes.data, arr.nbytes)
    assert buf.handle == arr.ctypes.data
    assert isinstance(buf.handle, int)
    assert buf.size == 8
    assert buf.memory_resource is None
    assert buf.owner is None
    assert not buf.is_closed
    assert not buf.is_mapped
    buf.close()
    assert buf.is_closed
    assert buf.handle == 0 and buf.size == 0
    np.testing.assert_array_equal(arr, np.arange(8))  # a view frees nothing


def test_from_handle_accepts_cffi_pointer_and_int_like():
    mem = ffi.new("char[]", 4)
    buf = Buffer.from_handle(mem, 4)
    assert buf.handle == int(ffi.cast("uintptr_t", mem))
    assert Buffer.from_handle(np.uint64(1234), 1).handle == 1234
    assert Buffer.from_handle(0, 0).handle == 0


@pytest.mark.parametrize("size", [0, 10])
def test_from_handle_refuses_none(size):
    # cuda.core converts ptr with int(), which refuses None: no silent null buffer
    with pytest.raises(TypeError, match="ptr must be an int address .* not NoneType"):
        Buffer.from_handle(None, size)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"mr": "MR", "owner": object()}, ValueError, "cannot be both"),
        ({"stream": LEGACY_DEFAULT_STREAM}, ValueError, "stream requires a memory resource"),
        ({"mr": object()}, TypeError, "mr must be a MemoryResource"),
    ],
)
def test_from_handle_bad_combinations(kwargs, exc, match):
    if kwargs.get("mr") == "MR":
        kwargs["mr"] = HostMemoryResource()
    with pytest.raises(exc, match=match):
        Buffer.from_handle(0x1000, 8, **kwargs)


@pytest.mark.parametrize(
    "size, exc",
    [
        (-1, ValueError),
        (1 << 64, ValueError),
        (1.5, TypeError),
        ("8", TypeError),
        (True, TypeError),
    ],
)
def test_from_handle_bad_size(size, exc):
    with pytest.raises(exc, match="size"):
        Buffer.from_handle(0x1000, size)


def test_from_handle_bad_pointer():
    with pytest.raises(TypeError, match="ptr"):
        Buffer.from_handle("0x1000", 8)
    with pytest.raises(ValueError, match="ptr"):
        Buffer.from_handle(-5, 8)


def test_owner_is_kept_alive_until_close():
    class Owner:
        pass

    owner = Owner()
    ref = weakref.ref(owner)
    buf = Buffer.from_handle(0x1000, 8, owner=owner)
    del owner
    _collect()
    assert ref() is not None
    assert buf.owner is ref()
    buf.close()
    _collect()
    assert ref() is None


def test_equality_and_hash():
    a = Buffer.from_handle(0x1000, 8)
    b = Buffer.from_handle(0x1000, 8)
    c = Buffer.from_handle(0x1000, 16)
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert (a == 5) is False
    assert len({a, b, c}) == 2
    assert "0x1000" in repr(a) and "size=8" in repr(a)


# --------------------------------------------------------------------------
# A user-defined memory resource, end to end (no GPU)
# --------------------------------------------------------------------------
def test_user_resource_close_frees_once():
    mr = HostMemoryResource()
    buf = mr.allocate(32)
    ptr = buf.handle
    assert buf.memory_resource is mr
    assert buf.is_host_accessible and not buf.is_device_accessible
    assert buf.device_id == -1
    assert not buf.is_managed
    buf.close()
    buf.close()  # idempotent
    assert mr.freed == [(ptr, 32)]
    assert mr.live == {}


def test_user_resource_with_statement():
    mr = HostMemoryResource()
    with mr.allocate(8) as buf:
        assert not buf.is_closed
    assert buf.is_closed
    assert len(mr.freed) == 1


def test_user_resource_garbage_collection_frees():
    mr = HostMemoryResource()
    buf = mr.allocate(64)
    ptr = buf.handle
    del buf
    _collect()
    assert mr.freed == [(ptr, 64)]


def test_closed_buffer_drops_its_finalizer():
    mr = HostMemoryResource()
    kept, closed, dropped = mr.allocate(8), mr.allocate(16), mr.allocate(32)
    for buf in (kept, closed, dropped):
        assert isinstance(buf, Buffer)
        assert type(buf).__name__ == "Buffer"
    closed_ptr, dropped_ptr = closed.handle, dropped.handle
    closed.close()
    assert isinstance(closed, Buffer) and closed.is_closed
    assert type(closed) is Buffer  # the plain class: no finalizer left to run
    closed.close()  # the plain class's close(): a no-op
    assert len(mr.freed) == 1
    del closed, dropped, buf
    _collect()
    # Freed once each: the closed one by close(), the dropped one by its finalizer.
    assert sorted(p for p, _ in mr.freed) == sorted([closed_ptr, dropped_ptr])
    kept.close()
    assert len(mr.freed) == 3


def test_buffer_subclass_from_init_is_finalized_and_keeps_its_class():
    class MyBuffer(Buffer):
        pass

    mr = HostMemoryResource()
    ptrs = []
    for _ in range(2):
        mem = ffi.new("char[]", 8)
        ptr = int(ffi.cast("uintptr_t", mem))
        mr.live[ptr] = mem
        ptrs.append(ptr)
    closed = MyBuffer._init(ptrs[0], 8, mr=mr)
    dropped = MyBuffer._init(ptrs[1], 8, mr=mr)
    assert isinstance(closed, MyBuffer) and type(closed).__name__ == "MyBuffer"
    closed.close()
    assert isinstance(closed, MyBuffer)
    assert type(closed) is MyBuffer
    closed.close()
    del dropped
    _collect()
    assert sorted(p for p, _ in mr.freed) == sorted(ptrs)


def test_user_resource_close_failure_raises():
    mr = HostMemoryResource(fail_free=True)
    buf = mr.allocate(8)
    with pytest.raises(CUDAError, match="simulated"):
        buf.close()
    assert buf.is_closed
    buf.close()  # no second attempt
    assert len(mr.freed) == 1


def test_user_resource_finalizer_failure_warns():
    mr = HostMemoryResource(fail_free=True)
    buf = mr.allocate(8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del buf
        _collect()
    assert any(issubclass(w.category, CUDAWarning) for w in caught), caught
    assert "simulated" in str([str(w.message) for w in caught])


def test_zero_size_user_allocation():
    mr = HostMemoryResource()
    buf = mr.allocate(0)
    assert buf.size == 0
    assert bytes(np.asarray(buf)) == b""
    buf.close()


def test_use_after_close_raises():
    mr = HostMemoryResource()
    buf = mr.allocate(8)
    buf.close()
    for attr in ("device_id", "is_device_accessible", "is_host_accessible", "is_managed"):
        with pytest.raises(RuntimeError, match="closed"):
            getattr(buf, attr)
    with pytest.raises(RuntimeError, match="closed"):
        buf.__dlpack__()
    with pytest.raises(RuntimeError, match="closed"):
        np.asarray(buf)
    with pytest.raises(RuntimeError, match="closed"):
        buf.fill(1, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(RuntimeError, match="closed"):
        buf.copy_to(stream=LEGACY_DEFAULT_STREAM)
    assert buf.memory_resource is None


def test_memory_resource_abc():
    class Incomplete(MemoryResource):
        def allocate(self, size, *, stream):
            return None

    with pytest.raises(TypeError):
        Incomplete()
    mr = HostMemoryResource()
    assert mr.is_managed is False
    assert mr.device_id == -1


# --------------------------------------------------------------------------
# Zero-copy NumPy interop for host memory (no GPU)
# --------------------------------------------------------------------------
def test_numpy_view_of_host_buffer_is_zero_copy_and_writable():
    mr = HostMemoryResource()
    buf = mr.allocate(16)
    a = np.asarray(buf)
    assert a.dtype == np.uint8 and a.shape == (16,)
    assert a.ctypes.data == buf.handle
    a[:] = np.arange(16)
    b = np.asarray(buf)
    np.testing.assert_array_equal(b, np.arange(16))
    # the array keeps the Buffer object alive
    ref = weakref.ref(buf)
    del buf
    _collect()
    assert ref() is not None
    del a, b
    _collect()
    assert ref() is None
    assert len(mr.freed) == 1


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_export_of_host_buffer(versioned):
    mr = HostMemoryResource()
    buf = mr.allocate(10)
    np.asarray(buf)[:] = np.arange(10)
    assert buf.__dlpack_device__() == (1, 0)
    capsule = buf.__dlpack__(max_version=(1, 0) if versioned else None)
    consumed = _dlpack.take_capsule(capsule)
    t = consumed.tensor
    assert int(ffi.cast("uintptr_t", t.data)) == buf.handle
    assert t.ndim == 1 and t.shape[0] == 10 and t.strides[0] == 1
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 8, 1)
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    assert consumed.versioned is versioned
    consumed.release()
    arr = np.from_dlpack(buf)
    assert arr.ctypes.data == buf.handle
    np.testing.assert_array_equal(arr, np.arange(10, dtype=np.int8))


def test_dlpack_capsule_keeps_buffer_alive_and_releases_it():
    mr = HostMemoryResource()
    buf = mr.allocate(4)
    ref = weakref.ref(buf)
    capsule = buf.__dlpack__()
    del buf
    _collect()
    assert ref() is not None  # the unconsumed capsule owns a reference
    del capsule
    _collect()
    assert ref() is None
    assert len(mr.freed) == 1


def test_dlpack_bad_arguments():
    buf = HostMemoryResource().allocate(4)
    with pytest.raises(BufferError, match="copy=True"):
        buf.__dlpack__(copy=True)
    # Any dl_device is refused, even the buffer's own (as in cuda.core).
    for dl_device in ((2, 0), (1, 0)):
        with pytest.raises(BufferError, match="^Sorry, not supported: dl_device other than None$"):
            buf.__dlpack__(dl_device=dl_device)
    with pytest.raises(BufferError, match="max_version"):
        buf.__dlpack__(max_version=1)
    capsule = buf.__dlpack__(copy=False)
    _dlpack.take_capsule(capsule).release()
    with pytest.raises(BufferError, match="consumed only once"):
        _dlpack.take_capsule(capsule)
    with pytest.raises(BufferError, match="DLPack capsule"):
        _dlpack.take_capsule(object())


@pytest.mark.parametrize(
    "flags, expected",
    [
        ((True, False, False), (2, 3)),
        ((True, True, False), (3, 0)),
        ((True, True, True), (13, 0)),
        ((False, True, False), (1, 0)),
    ],
)
def test_dlpack_device_classification(flags, expected):
    buf = Buffer.from_handle(0x1000, 8, mr=FlagResource(*flags, device_id=3), stream=None)
    # the resource is device-accessible in some cases: give it a stream-free path
    assert buf.__dlpack_device__() == expected
    buf._release = None  # nothing to free


def test_dlpack_device_of_inaccessible_memory_raises():
    buf = Buffer.from_handle(0x1000, 8, mr=FlagResource(False, False, device_id=3))
    with pytest.raises(BufferError, match="neither"):
        buf.__dlpack_device__()
    buf._release = None  # nothing to free


# --------------------------------------------------------------------------
# Argument validation of fill / copies (checked before any driver call)
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value, expected",
    [
        (0, (0, 1)),
        (255, (255, 1)),
        (np.uint8(7), (7, 1)),
        (np.uint16(0x1234), (0x1234, 2)),
        (np.int16(-1), (0xFFFF, 2)),
        (np.float32(1.5), (0x3FC00000, 4)),
        (np.uint32(0xDEADBEEF), (0xDEADBEEF, 4)),
        (b"\x01", (1, 1)),
        (b"\x01\x02", (int.from_bytes(b"\x01\x02", sys.byteorder), 2)),
        (b"\x01\x02\x03\x04", (int.from_bytes(b"\x01\x02\x03\x04", sys.byteorder), 4)),
        (bytearray(b"\xff\xff"), (0xFFFF, 2)),
    ],
)
def test_parse_fill_value(value, expected):
    assert _parse_fill_value(value) == expected


@pytest.mark.parametrize("value", [-1, 256, 1 << 40])
def test_fill_int_out_of_range(value):
    buf = HostMemoryResource().allocate(8)
    with pytest.raises(OverflowError, match=r"\[0, 256\)"):
        buf.fill(value, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(ValueError):
        buf.fill(value, stream=LEGACY_DEFAULT_STREAM)


def test_fill_bad_values():
    buf = HostMemoryResource().allocate(6)
    with pytest.raises(TypeError, match="fill value"):
        buf.fill(1.5, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(ValueError, match="1, 2 or 4 bytes"):
        buf.fill(np.float64(1.0), stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(ValueError, match="1, 2 or 4 bytes"):
        buf.fill(b"abc", stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(ValueError, match="divisible by 4"):
        buf.fill(np.uint32(1), stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match="Stream or GraphBuilder expected"):
        buf.fill(1, stream=42)
    with pytest.raises(TypeError, match="Stream or GraphBuilder expected"):
        buf.fill(1, stream=None)


def test_copy_validation():
    mr = HostMemoryResource()
    a, b, c = mr.allocate(8), mr.allocate(8), mr.allocate(4)
    with pytest.raises(ValueError, match="sizes mismatch"):
        a.copy_to(c, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(ValueError, match="sizes mismatch"):
        a.copy_from(c, stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match="dst must be a Buffer"):
        a.copy_to(b"12345678", stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match="src must be a Buffer"):
        a.copy_from(bytearray(8), stream=LEGACY_DEFAULT_STREAM)
    with pytest.raises(TypeError, match="Stream or GraphBuilder expected"):
        a.copy_to(b, stream="default")
    with pytest.raises(TypeError, match="^copy_to: options must be CopyOptions, got object"):
        a.copy_to(b, stream=LEGACY_DEFAULT_STREAM, options=object())
    with pytest.raises(TypeError, match="^copy_from: options must be CopyOptions, got dict"):
        a.copy_from(b, stream=LEGACY_DEFAULT_STREAM, options={})
    with pytest.raises(ValueError, match="sizes mismatch"):  # sizes are checked first
        a.copy_to(c, stream=LEGACY_DEFAULT_STREAM, options=object())
    view = Buffer.from_handle(0x1000, 8)
    with pytest.raises(ValueError, match="destination buffer must be provided"):
        view.copy_to(stream=LEGACY_DEFAULT_STREAM)
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        a.copy_to(b, stream=LEGACY_DEFAULT_STREAM)


def test_non_ipc_buffer_has_no_descriptor_and_does_not_pickle():
    buf = HostMemoryResource().allocate(8)
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        _ = buf.ipc_descriptor
    with pytest.raises(RuntimeError, match="not IPC-enabled"):
        pickle.dumps(buf)


# --------------------------------------------------------------------------
# GPU: copies and fills checked against NumPy
# --------------------------------------------------------------------------
def _host_buffer(arr):
    return Buffer.from_handle(arr.ctypes.data, arr.nbytes, owner=arr)


@pytest.mark.gpu
@pytest.mark.parametrize("size", [0, 1, 12345, 1 << 20, 256 << 20])
def test_round_trip_host_device_host(device, stream, size):
    rng = np.random.default_rng(size)
    src = rng.integers(0, 256, size, dtype=np.uint8)
    dst = np.zeros(size, dtype=np.uint8)
    dbuf = device.allocate(size, stream=stream)
    assert dbuf.size == size
    dbuf.copy_from(_host_buffer(src), stream=stream)
    dbuf.copy_to(_host_buffer(dst), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(dst, src)
    dbuf.close()


@pytest.mark.gpu
def test_copy_to_allocates_destination(device, stream):
    src = np.arange(1000, dtype=np.int32)
    a = device.allocate(src.nbytes, stream=stream)
    a.copy_from(_host_buffer(src), stream=stream)
    b = a.copy_to(stream=stream)
    assert b.size == a.size and b.memory_resource is a.memory_resource and b != a
    out = np.empty_like(src)
    b.copy_to(_host_buffer(out), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, src)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "value, dtype, expected",
    [
        (0xAB, np.uint8, 0xAB),
        (np.uint8(7), np.uint8, 7),
        (np.uint16(0x1234), np.uint16, 0x1234),
        (np.int16(-2), np.int16, -2),
        (np.float32(1.5), np.float32, 1.5),
        (np.int32(-123456), np.int32, -123456),
        (b"\x01\x02\x03\x04", np.uint32, int.from_bytes(b"\x01\x02\x03\x04", sys.byteorder)),
    ],
)
def test_fill_each_width(device, stream, value, dtype, expected):
    n = 4096
    buf = device.allocate(n * np.dtype(dtype).itemsize, stream=stream)
    buf.fill(value, stream=stream)
    out = np.zeros(n, dtype=dtype)
    buf.copy_to(_host_buffer(out), stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, np.full(n, expected, dtype=dtype))


@pytest.mark.gpu
def test_device_buffer_properties_and_dlpack_device(device, stream):
    buf = device.allocate(64, stream=stream)
    assert buf.is_device_accessible and not buf.is_host_accessible
    assert buf.device_id == device.device_id
    assert buf.__dlpack_device__() == (2, device.device_id)
    assert not hasattr(buf, "__array_interface__")
    # a view of the same pointer learns its attributes from the driver
    view = Buffer.from_handle(buf.handle, 64)
    assert view.is_device_accessible and not view.is_host_accessible
    assert view.device_id == device.device_id and not view.is_managed
    host = np.zeros(4)
    hview = Buffer.from_handle(host.ctypes.data, host.nbytes, owner=host)
    assert hview.is_host_accessible and not hview.is_device_accessible
    assert hview.device_id == -1
    buf.close(stream=stream)
    assert buf.is_closed


@pytest.mark.gpu
def test_close_on_another_stream_and_set_deallocation_stream(device, stream):
    other = device.create_stream()
    buf = device.allocate(1024, stream=stream)
    buf.set_deallocation_stream(other)
    with pytest.raises(TypeError):
        buf.set_deallocation_stream(None)
    buf.close()
    buf2 = device.allocate(1024, stream=stream)
    buf2.close(stream=other)
    with pytest.raises(TypeError, match="Stream or GraphBuilder expected"):
        device.allocate(16, stream=stream).close(stream=3)
    other.sync()
    other.close()


@pytest.mark.gpu
def test_cupy_interop(device, stream):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed in this interpreter")
    src = np.arange(256, dtype=np.uint8)
    buf = device.allocate(256, stream=stream)
    buf.copy_from(_host_buffer(src), stream=stream)
    stream.sync()
    arr = cp.from_dlpack(buf)
    assert arr.data.ptr == buf.handle
    np.testing.assert_array_equal(cp.asnumpy(arr).view(np.uint8), src)
