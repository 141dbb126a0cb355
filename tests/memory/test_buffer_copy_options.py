# SPDX-License-Identifier: Apache-2.0
"""``Buffer.copy_to`` / ``Buffer.copy_from`` with ``options=CopyOptions``.

The CPU tests stand a recording fake in for the driver entry points the
single-copy path calls, and substitute the driver version, to check which
entry point each case reaches and what it is given.  The GPU tests copy
real memory (checked with NumPy) on whatever driver the machine has: with a
CUDA 13.2 driver through ``cuMemcpyWithAttributesAsync``, before it through
the ``cuMemcpyAsync`` fallback.
"""

from __future__ import annotations

import numpy as np
import pytest

import cuda_core._slots as _slots
from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Buffer,
    Host,
    LegacyPinnedMemoryResource,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._memory import _copy_with_options, _location
from cuda_core.utils import CopyOptions, MemcpySrcAccessOrder


class FakeDevice:
    """Stands in for a Device where no GPU is needed (what a location reads)."""

    def __init__(self, device_id):
        self.device_id = device_id


class FakeDriver:
    """Records the copy entry points' calls; reports a chosen capture status."""

    CU_STREAM_CAPTURE_STATUS_ACTIVE = lib.CU_STREAM_CAPTURE_STATUS_ACTIVE

    def __init__(self, capture_status=lib.CU_STREAM_CAPTURE_STATUS_NONE):
        self.calls = []
        self.capture_status = capture_status

    def cuMemcpyAsync(self, dst, src, size, stream):
        self.calls.append(("cuMemcpyAsync", int(dst), int(src), size))
        return 0

    def cuMemcpyWithAttributesAsync(self, dst, src, size, attr, stream):
        fields = (
            attr.srcAccessOrder,
            attr.flags,
            (attr.srcLocHint.type, attr.srcLocHint.id),
            (attr.dstLocHint.type, attr.dstLocHint.id),
        )
        self.calls.append(("cuMemcpyWithAttributesAsync", int(dst), int(src), size, fields))
        return 0

    def cuStreamIsCapturing(self, stream, c_status):
        c_status[0] = self.capture_status
        return 0


@pytest.fixture
def fake_driver(monkeypatch):
    """Install a FakeDriver; ``set_version(v)`` picks the driver version (13.2 to start)."""
    driver = FakeDriver()
    monkeypatch.setattr(_copy_with_options, "lib", driver)
    monkeypatch.setattr(_slots, "Device", FakeDevice)
    versions = [13020]
    monkeypatch.setattr(_location, "current_driver_version", lambda: versions[0])
    monkeypatch.setattr(_copy_with_options, "current_driver_version", lambda: versions[0])

    def set_version(v):
        versions[0] = v

    driver.set_version = set_version
    return driver


def _pair(n=64):
    return Buffer.from_handle(0x10000, n), Buffer.from_handle(0x20000, n)


# --------------------------------------------------------------------------
# CPU: what reaches the driver
# --------------------------------------------------------------------------
def test_no_options_is_a_plain_copy(fake_driver):
    src, dst = _pair()
    assert src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM) is dst
    dst.copy_from(src, stream=LEGACY_DEFAULT_STREAM, options=None)
    assert fake_driver.calls == [
        ("cuMemcpyAsync", 0x20000, 0x10000, 64),
        ("cuMemcpyAsync", 0x20000, 0x10000, 64),
    ]


def test_options_reach_cuMemcpyWithAttributesAsync(fake_driver):
    src, dst = _pair(128)
    opts = CopyOptions(
        src_access_order="during_api_call",
        src_location_hint=FakeDevice(1),
        dst_location_hint=Host(numa_id=2),
        overlap_mode="prefer_overlap_with_compute",
    )
    src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=opts)
    dst.copy_from(src, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions())
    assert fake_driver.calls == [
        (
            "cuMemcpyWithAttributesAsync",
            0x20000,
            0x10000,
            128,
            (
                lib.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL,
                lib.CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE,
                (lib.CU_MEM_LOCATION_TYPE_DEVICE, 1),
                (lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, 2),
            ),
        ),
        (
            "cuMemcpyWithAttributesAsync",
            0x20000,
            0x10000,
            128,
            (lib.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, lib.CU_MEMCPY_FLAG_DEFAULT, (0, 0), (0, 0)),
        ),
    ]


def test_empty_copies_are_checked_but_not_issued(fake_driver):
    src, dst = _pair(0)
    src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions())
    src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM)
    assert fake_driver.calls == []
    with pytest.raises(TypeError, match="^copy_to does not accept LEGACY_DEFAULT_STREAM"):
        src.copy_to(dst, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions())


@pytest.mark.parametrize("order", ["stream", "any"])
def test_before_cuda_13_2_options_fall_back_to_a_plain_copy(fake_driver, order):
    fake_driver.set_version(13000)
    src, dst = _pair()
    # The hints are dropped, not converted: the fallback cannot pass them on.
    opts = CopyOptions(src_access_order=order, src_location_hint=FakeDevice(0))
    src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=opts)
    dst.copy_from(src, stream=PER_THREAD_DEFAULT_STREAM, options=opts)
    assert [c[0] for c in fake_driver.calls] == ["cuMemcpyAsync", "cuMemcpyAsync"]


def test_before_cuda_13_2_during_api_call_is_refused(fake_driver):
    fake_driver.set_version(12080)
    src, dst = _pair()
    opts = CopyOptions(src_access_order=MemcpySrcAccessOrder.DURING_API_CALL)
    for call in (
        lambda: src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=opts),
        lambda: dst.copy_from(src, stream=PER_THREAD_DEFAULT_STREAM, options=opts),
    ):
        with pytest.raises(RuntimeError) as info:
            call()
        msg = str(info.value)
        assert msg.startswith("src_access_order=DURING_API_CALL requires a driver for CUDA 13.2")
        assert "cuMemcpyWithAttributesAsync" in msg and "at index" not in msg
    assert fake_driver.calls == []


def test_options_checks_and_their_order(fake_driver):
    src, dst = _pair()
    small = Buffer.from_handle(0x30000, 8)
    with pytest.raises(TypeError, match="^copy_to: options must be CopyOptions, got dict$"):
        src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options={"src_access_order": "any"})
    with pytest.raises(TypeError, match="^copy_from: options must be CopyOptions, got list$"):
        dst.copy_from(src, stream=PER_THREAD_DEFAULT_STREAM, options=[CopyOptions()])
    # Sizes are checked before options, as upstream does.
    with pytest.raises(ValueError, match="^buffer sizes mismatch"):
        src.copy_to(small, stream=PER_THREAD_DEFAULT_STREAM, options="bad")
    # The legacy default stream is refused with options only.
    for name, call in (
        ("copy_to", lambda: src.copy_to(dst, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions())),
        (
            "copy_from",
            lambda: dst.copy_from(src, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions()),
        ),
    ):
        with pytest.raises(TypeError, match=f"^{name} does not accept LEGACY_DEFAULT_STREAM"):
            call()
    # Bad location hints surface when the attributes are built.
    with pytest.raises(TypeError, match="^location must be a Device, Host, or None; got int$"):
        src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions(dst_location_hint=0))
    assert fake_driver.calls == []


def test_capturing_stream_is_refused_with_options(fake_driver):
    fake_driver.capture_status = lib.CU_STREAM_CAPTURE_STATUS_ACTIVE
    src, dst = _pair()
    with pytest.raises(TypeError, match="^copy_to does not support graph capture with options"):
        src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions())
    with pytest.raises(TypeError, match="^copy_from does not support graph capture with options"):
        dst.copy_from(src, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions())
    assert fake_driver.calls == []
    # Without options a capturing stream takes the copy (it becomes a graph node).
    src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM)
    assert [c[0] for c in fake_driver.calls] == ["cuMemcpyAsync"]


def test_capture_check_only_counts_active_capture(fake_driver):
    fake_driver.capture_status = lib.CU_STREAM_CAPTURE_STATUS_INVALIDATED
    src, dst = _pair()
    src.copy_to(dst, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions())
    assert [c[0] for c in fake_driver.calls] == ["cuMemcpyWithAttributesAsync"]


def test_cuMemcpyWithAttributesAsync_is_declared_for_cuda_13_2():
    assert callable(lib.cuMemcpyWithAttributesAsync)
    assert ffi.sizeof("CUmemcpyAttributes") == 24


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
def _pinned(mr, size):
    buf = mr.allocate(size)
    return buf, np.asarray(buf)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "opts",
    [
        CopyOptions(),
        CopyOptions(src_access_order="any"),
        CopyOptions(overlap_mode="prefer_overlap_with_compute"),
        CopyOptions(src_access_order="stream", dst_location_hint=Host()),
    ],
    ids=["defaults", "any", "overlap", "host-hint"],
)
def test_copy_with_options_round_trip(device, stream, opts):
    pinned = LegacyPinnedMemoryResource()
    size = 1 << 16
    h_src, h_src_np = _pinned(pinned, size)
    h_out, h_out_np = _pinned(pinned, size)
    h_src_np[:] = np.random.default_rng(5).integers(0, 256, size, dtype=np.uint8)
    h_out_np[:] = 0
    d_buf = device.allocate(size, stream=stream)
    try:
        h_src.copy_to(d_buf, stream=stream, options=opts)
        h_out.copy_from(d_buf, stream=stream, options=opts)
        stream.sync()
        np.testing.assert_array_equal(h_out_np, h_src_np)
        # copy_to without a destination allocates one from the source's resource.
        d_copy = d_buf.copy_to(stream=stream, options=opts)
        h_out_np[:] = 0
        d_copy.copy_to(h_out, stream=stream, options=opts)
        stream.sync()
        np.testing.assert_array_equal(h_out_np, h_src_np)
        d_copy.close(stream)
    finally:
        stream.sync()
        d_buf.close(stream)
        stream.sync()
        h_src.close()
        h_out.close()


@pytest.mark.gpu
def test_copy_with_during_api_call_follows_the_driver(device, stream):
    """DURING_API_CALL copies with CUDA 13.2 and is refused before it."""
    from cuda_core._loader import driver_version

    pinned = LegacyPinnedMemoryResource()
    h_src, h_src_np = _pinned(pinned, 4096)
    h_src_np[:] = np.arange(4096) % 253
    d_buf = device.allocate(4096, stream=stream)
    stream.sync()
    opts = CopyOptions(src_access_order="during_api_call")
    try:
        if driver_version() >= 13020:
            h_src.copy_to(d_buf, stream=stream, options=opts)
            h_back, h_back_np = _pinned(pinned, 4096)
            d_buf.copy_to(h_back, stream=stream)
            stream.sync()
            np.testing.assert_array_equal(h_back_np, h_src_np)
            h_back.close()
        else:
            with pytest.raises(RuntimeError, match="^src_access_order=DURING_API_CALL requires"):
                h_src.copy_to(d_buf, stream=stream, options=opts)
    finally:
        stream.sync()
        d_buf.close(stream)
        stream.sync()
        h_src.close()


@pytest.mark.gpu
def test_copy_with_options_refuses_legacy_stream_and_capture(device, stream):
    d_a = device.allocate(256, stream=stream)
    d_b = device.allocate(256, stream=stream)
    stream.sync()
    try:
        with pytest.raises(TypeError, match="^copy_to does not accept LEGACY_DEFAULT_STREAM"):
            d_a.copy_to(d_b, stream=LEGACY_DEFAULT_STREAM, options=CopyOptions())
        # PER_THREAD_DEFAULT_STREAM is a real stream to the driver: accepted.
        d_a.copy_to(d_b, stream=PER_THREAD_DEFAULT_STREAM, options=CopyOptions())
        PER_THREAD_DEFAULT_STREAM.sync()
        builder = stream.create_graph_builder().begin_building()
        try:
            with pytest.raises(TypeError, match="^copy_from does not support graph capture"):
                d_b.copy_from(d_a, stream=builder, options=CopyOptions())
        finally:
            builder.end_building().close()
    finally:
        d_a.close(stream)
        d_b.close(stream)
        stream.sync()
