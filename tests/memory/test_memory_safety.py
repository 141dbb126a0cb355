# SPDX-License-Identifier: Apache-2.0
"""Memory-subsystem safety: closed streams, pool lifetimes, pinned access, input checks.

The CPU tests drive the bookkeeping with a stand-in driver (no GPU needed):
closed streams never reach the driver, an owned pool closed while buffers
are alive is destroyed only after the last of them is freed (by close() or
by the garbage collector), synchronous resources still free a buffer whose
stream was closed, and pinned pools grant devices access.  The ``gpu`` tests
check the same on a device, against NumPy.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
from _helpers import HostAndDeviceResource

from cuda_core import (
    Buffer,
    CUDAError,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    LegacyPinnedMemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    Stream,
    VirtualMemoryResourceOptions,
)
from cuda_core._cuda_ffi import ffi
from cuda_core._memory import (
    _buffer,
    _legacy,
    _memory_pool,
    _owned_pool,
    _pinned_memory_resource,
    _release,
)


def _collect():
    for _ in range(3):  # PyPy may need more than one pass to run every finalizer
        gc.collect()


def _closed_stream():
    s = Stream.from_handle(0x1234)
    s.close()
    return s


class _Recorder(HostAndDeviceResource):
    """A resource over fake addresses that records its deallocations."""

    def __init__(self):
        self.freed = []

    def allocate(self, size, *, stream=None):
        return Buffer.from_handle(0x10000, size, mr=self, stream=stream)

    def deallocate(self, ptr, size, *, stream=None):
        self.freed.append((int(ptr), size, stream))


# --------------------------------------------------------------------------
# Closed streams are refused before anything reaches the driver.
# --------------------------------------------------------------------------
def test_closed_stream_is_refused():
    closed = _closed_stream()
    buf = Buffer.from_handle(0x10000, 64)
    other = Buffer.from_handle(0x20000, 64)
    for use in (
        lambda: buf.fill(1, stream=closed),
        lambda: buf.copy_to(other, stream=closed),
        lambda: buf.copy_from(other, stream=closed),
        lambda: Buffer.from_handle(0x1000, 64, mr=_Recorder(), stream=closed),
        lambda: Buffer.from_handle(0x1000, 64, mr=_Recorder()).set_deallocation_stream(closed),
        lambda: _buffer._as_stream(closed),
    ):
        with pytest.raises(RuntimeError, match="Stream is closed"):
            use()


def test_closed_recorded_stream_frees_on_the_default_stream():
    # A resource that does not accept closed streams gets the default one.
    mr = _Recorder()
    s = Stream.from_handle(0x1234)
    buf = mr.allocate(64, stream=s)
    s.close()
    buf.close()
    ((ptr, size, stream),) = mr.freed
    assert (ptr, size) == (0x10000, 64)
    assert not stream.is_closed and stream is not s


# --------------------------------------------------------------------------
# Owned pools: destroyed after the last outstanding buffer.
# --------------------------------------------------------------------------
class _FakeDriver:
    """Records cuMemFreeAsync, cuStreamSynchronize and cuMemPoolDestroy calls."""

    def __init__(self):
        self.calls = []
        self.destroy_status = 0

    def cuMemFreeAsync(self, ptr, stream):  # noqa: N802 - driver name
        self.calls.append(("free", int(ptr)))
        return 0

    def cuStreamSynchronize(self, stream):  # noqa: N802 - driver name
        self.calls.append(("sync", int(ffi.cast("uintptr_t", stream))))
        return 0

    def cuMemPoolDestroy(self, pool):  # noqa: N802 - driver name
        self.calls.append(("destroy", int(ffi.cast("uintptr_t", pool))))
        return self.destroy_status


@pytest.fixture
def driver(monkeypatch):
    _collect()  # earlier tests' garbage goes to the real driver, not to the stand-in
    fake = _FakeDriver()
    monkeypatch.setattr(_memory_pool, "lib", fake)
    monkeypatch.setattr(_owned_pool, "lib", fake)
    monkeypatch.setattr(_release, "_cuMemFreeAsync", fake.cuMemFreeAsync)
    return fake


def _owned_resource(pool=0x5000):
    mr = object.__new__(DeviceMemoryResource)
    mr._ipc_data = None
    mr._set_pool(ffi.cast("CUmemoryPool", pool), True, 0)
    return mr


def _pool_buffer(mr, ptr):
    return Buffer._from_pool(ptr, 64, mr, Stream.from_handle(0x1234), pool=mr._state)


def test_owned_pool_without_buffers_is_destroyed_by_close(driver):
    mr = _owned_resource()
    mr.close()
    mr.close()
    assert driver.calls == [("destroy", 0x5000)]


def test_owned_pool_close_waits_for_the_last_buffer(driver):
    mr = _owned_resource()
    a = _pool_buffer(mr, 0x100)
    b = _pool_buffer(mr, 0x200)
    mr.close()
    assert mr.is_closed and mr.handle == 0 and not mr.is_handle_owned
    assert driver.calls == []  # two buffers are outstanding
    with pytest.raises(RuntimeError, match="closed"):
        mr.allocate(64, stream=Stream.from_handle(0x1234))
    a.close()
    assert driver.calls == [("free", 0x100)]
    b.close()
    b.close()
    # The stream of the last free is synchronized before the pool is destroyed.
    assert driver.calls == [("free", 0x100), ("free", 0x200), ("sync", 0x1234), ("destroy", 0x5000)]


def test_owned_pool_destroyed_after_collected_buffer(driver):
    mr = _owned_resource()
    buf = _pool_buffer(mr, 0x100)
    mr.close()
    del buf
    _collect()
    assert driver.calls == [("free", 0x100), ("sync", 0x1234), ("destroy", 0x5000)]


def test_owned_pool_collected_without_close(driver):
    mr = _owned_resource()
    buf = _pool_buffer(mr, 0x100)
    buf.close()
    del mr, buf
    _collect()
    assert driver.calls == [("free", 0x100), ("destroy", 0x5000)]


def test_owned_pool_collected_together_with_its_buffers(driver):
    # The resource and its buffers die in one cycle: whatever order the
    # finalizers run in, every buffer is freed before the pool is destroyed.
    mr = _owned_resource()
    mr.keep = [_pool_buffer(mr, 0x100), _pool_buffer(mr, 0x200)]
    del mr
    _collect()
    frees = [c for c in driver.calls if c[0] == "free"]
    assert sorted(frees) == [("free", 0x100), ("free", 0x200)]
    # The freeing stream is synchronized before the destroy, unless it was
    # itself finalized in the same collection (PyPy may do that first).
    rest = [c for c in driver.calls if c[0] != "free"]
    assert rest in ([("sync", 0x1234), ("destroy", 0x5000)], [("destroy", 0x5000)])
    assert driver.calls[-1] == ("destroy", 0x5000)


def test_deferred_destroy_failure(driver):
    driver.destroy_status = 1  # CUDA_ERROR_INVALID_VALUE
    mr = _owned_resource()
    a = _pool_buffer(mr, 0x100)
    b = _pool_buffer(mr, 0x200)
    mr.close()
    a.close()
    with pytest.raises(CUDAError, match="cuMemPoolDestroy"):
        b.close()  # frees the last buffer, then fails to destroy the pool
    assert a.is_closed and b.is_closed
    mr2 = _owned_resource(0x6000)
    buf = _pool_buffer(mr2, 0x300)
    mr2.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del buf
        _collect()
    assert any("cuMemPoolDestroy" in str(w.message) for w in caught)


def test_pool_not_owned_does_not_count(driver):
    mr = object.__new__(DeviceMemoryResource)
    mr._ipc_data = None
    mr._set_pool(ffi.cast("CUmemoryPool", 0x5000), False, 0)
    buf = _pool_buffer(mr, 0x100)
    assert buf._release is _release._InlinePool
    mr.close()
    buf.close()
    assert driver.calls == [("free", 0x100)]


# --------------------------------------------------------------------------
# Synchronous resources free a buffer whose stream was closed.
# --------------------------------------------------------------------------
class _FakeSyncDriver:
    def __init__(self):
        self.calls = []

    def cuCtxGetCurrent(self, out):  # noqa: N802 - driver name
        out[0] = ffi.cast("CUcontext", 0x77)
        return 0

    def cuCtxSynchronize(self):  # noqa: N802 - driver name
        self.calls.append("ctx sync")
        return 0

    def cuMemFreeHost(self, ptr):  # noqa: N802 - driver name
        self.calls.append(("free host", int(ffi.cast("uintptr_t", ptr))))
        return 0


def test_legacy_pinned_frees_after_its_stream_closed(monkeypatch):
    fake = _FakeSyncDriver()
    monkeypatch.setattr(_legacy, "lib", fake)
    monkeypatch.setattr(LegacyPinnedMemoryResource, "_c_free", staticmethod(fake.cuMemFreeHost))
    mr = LegacyPinnedMemoryResource()
    s = Stream.from_handle(0x1234)
    buf = Buffer.from_handle(0x10000, 64, mr=mr, stream=s)
    s.close()
    buf.close()
    assert fake.calls == ["ctx sync", ("free host", 0x10000)]
    mr.deallocate(0x20000, 64, stream=_closed_stream())
    assert fake.calls[2:] == ["ctx sync", ("free host", 0x20000)]


# --------------------------------------------------------------------------
# Pinned pools grant devices access.
# --------------------------------------------------------------------------
def _refusal(code):
    return CUDAError("refused", code=code)


@pytest.mark.parametrize("count", [1, 3])
def test_pinned_access_grant(monkeypatch, count):
    grants = []

    def set_access(mr, to_add, to_remove):
        to_add = list(to_add)
        grants.append(to_add)
        if len(to_add) > 1 or to_add == [1]:
            raise _refusal(801)  # CUDA_ERROR_NOT_SUPPORTED: device 1 cannot

    monkeypatch.setattr(_pinned_memory_resource, "device_count", lambda: count)
    monkeypatch.setattr(_pinned_memory_resource, "_set_peer_access", set_access)
    _pinned_memory_resource._grant_device_access(object())
    if count == 1:
        assert grants == [[0]]
    else:
        assert grants == [[0, 1, 2], [0], [1], [2]]


def test_pinned_access_grant_other_failure_raises(monkeypatch):
    def set_access(mr, to_add, to_remove):
        raise _refusal(1)  # CUDA_ERROR_INVALID_VALUE

    monkeypatch.setattr(_pinned_memory_resource, "device_count", lambda: 2)
    monkeypatch.setattr(_pinned_memory_resource, "_set_peer_access", set_access)
    with pytest.raises(CUDAError):
        _pinned_memory_resource._grant_device_access(object())


# --------------------------------------------------------------------------
# Input checks.
# --------------------------------------------------------------------------
class CUdeviceptr:
    """Looks like a cuda-bindings CUdeviceptr: its type name, getPtr() and int()."""

    __module__ = "cuda.bindings.driver"

    def getPtr(self):  # noqa: N802 - cuda.bindings' name
        return 0

    def __int__(self):
        return 0x4000


class _IntOnly:
    def __int__(self):
        return 0x4000


def test_buffer_addresses():
    assert Buffer.from_handle(np.uint64(0x4000), 8).handle == 0x4000
    assert Buffer.from_handle(CUdeviceptr(), 8).handle == 0x4000
    assert Buffer.from_handle(2**64 - 1, 0).handle == 2**64 - 1
    for bad in (True, 4096.0, "4096", _IntOnly(), float("inf"), float("nan")):
        with pytest.raises(TypeError, match="ptr"):
            Buffer.from_handle(bad, 8)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="ptr"):
            Buffer.from_handle(bad, 8)


@pytest.mark.parametrize(
    "cls", [DeviceMemoryResourceOptions, PinnedMemoryResourceOptions], ids=lambda c: c.__name__
)
def test_pool_options_max_size_fits_size_t(cls):
    assert cls(max_size=2**64 - 1).max_size == 2**64 - 1
    with pytest.raises(ValueError, match="max_size"):
        cls(max_size=2**64)


def test_virtual_options_checks():
    assert VirtualMemoryResourceOptions(gpu_direct_rdma=1).gpu_direct_rdma is True
    assert VirtualMemoryResourceOptions(peers=range(2)).peers == (0, 1)
    assert VirtualMemoryResourceOptions(peers={3}).peers == (3,)
    for bad in ("yes", None, 2, 1.0):
        with pytest.raises(TypeError, match="gpu_direct_rdma"):
            VirtualMemoryResourceOptions(gpu_direct_rdma=bad)
    for field in ("location_type", "handle_type", "granularity", "self_access", "peer_access"):
        with pytest.raises(TypeError, match=field):
            VirtualMemoryResourceOptions(**{field: {"device": 1}})
    for bad in (1, "", "01", b"\x01", None, [1.0], ["1"], [True]):
        with pytest.raises(TypeError, match="peers"):
            VirtualMemoryResourceOptions(peers=bad)
    with pytest.raises(ValueError, match="peers"):
        VirtualMemoryResourceOptions(peers=[0, -1])


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
def _to_host(buf, stream):
    host = LegacyPinnedMemoryResource().allocate(buf.size, stream=stream)
    buf.copy_to(host, stream=stream)
    stream.sync()
    out = np.array(np.asarray(host), copy=True)
    host.close()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["device", "pinned"])
def test_closed_owned_pool_buffer_stays_usable(device, stream, kind):
    if kind == "device":
        mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    else:
        mr = PinnedMemoryResource(PinnedMemoryResourceOptions())
    buf = mr.allocate(4096, stream=stream)
    other = mr.allocate(4096, stream=stream)
    state = mr._state
    mr.close()
    assert state.token  # not destroyed: buffers are outstanding
    buf.fill(9, stream=stream)
    np.testing.assert_array_equal(_to_host(buf, stream), np.full(4096, 9, np.uint8))
    buf.close()
    assert state.token
    del other
    _collect()  # the collector frees the last buffer, then destroys the pool
    assert not state.token
    stream.sync()
    device.allocate(64, stream=stream).close()
    stream.sync()


@pytest.mark.gpu
@pytest.mark.parametrize("owned", [False, True], ids=["default", "owned"])
def test_pinned_pool_buffer_fill(device, stream, owned):
    if owned:
        mr = PinnedMemoryResource(PinnedMemoryResourceOptions())
    else:
        try:
            mr = PinnedMemoryResource()
        except CUDAError as exc:  # cuMemGetMemPool needs a CUDA 13 driver
            pytest.skip(f"no current pinned pool: {exc}")
    buf = mr.allocate(1024, stream=stream)
    buf.fill(7, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(np.asarray(buf), np.full(1024, 7, np.uint8))
    buf.close()
    mr.close()


@pytest.mark.gpu
def test_closed_stream_refused_by_pools(device):
    s = device.create_stream()
    buf = device.allocate(64, stream=s)
    s.sync()
    closed = device.create_stream()
    closed.close()
    owned = DeviceMemoryResource(device, DeviceMemoryResourceOptions())
    for use in (
        lambda: device.allocate(64, stream=closed),
        lambda: owned.allocate(64, stream=closed),
        lambda: device.memory_resource.deallocate(buf.handle, 64, stream=closed),
    ):
        with pytest.raises(RuntimeError, match="Stream is closed"):
            use()
    buf.close()
    owned.close()
    s.sync()
    s.close()
