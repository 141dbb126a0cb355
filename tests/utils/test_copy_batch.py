# SPDX-License-Identifier: Apache-2.0
"""``cuda_core.utils.copy_batch`` and ``CopyOptions``.

The CPU tests cover the option types, their encoding into driver records
and every argument check that happens before the driver is called; the GPU
tests copy data (checked against NumPy) and provoke a failing copy.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _scripts.hardening_util import run_script

import cuda_core._slots as _slots
from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Buffer,
    Host,
    LegacyPinnedMemoryResource,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._memory import _batch, _location
from cuda_core._memory._copy_with_options import (
    _fill_attributes,
    _normalize_copy_options,
    _reject_unsupported_during_api_call,
)
from cuda_core.utils import (
    CopyOptions,
    MemcpyOverlapMode,
    MemcpySrcAccessOrder,
    _copy_batch,
    copy_batch,
)
from cuda_core.utils._copy_batch import _attr_run_starts


class FakeDevice:
    """Stands in for a Device where no GPU is needed (what a location reads)."""

    def __init__(self, device_id):
        self.device_id = device_id

    def set_current(self):
        raise AssertionError("not used")


@pytest.fixture
def fake_locations(monkeypatch):
    """FakeDevice counts as the Device class, and the driver as CUDA 13.0 (NUMA hosts)."""
    monkeypatch.setattr(_slots, "Device", FakeDevice)
    monkeypatch.setattr(_location, "current_driver_version", lambda: 13000)


def _views(n, size=64, base=0x10000):
    """Non-owning Buffers over made-up addresses (never dereferenced)."""
    return [Buffer.from_handle(base + i * size, size) for i in range(n)]


# --------------------------------------------------------------------------
# Enumerations and CopyOptions
# --------------------------------------------------------------------------
def test_enum_values_and_strings():
    assert [m.value for m in MemcpySrcAccessOrder] == ["stream", "during_api_call", "any"]
    assert [m.value for m in MemcpyOverlapMode] == ["default", "prefer_overlap_with_compute"]
    assert MemcpySrcAccessOrder("any") is MemcpySrcAccessOrder.ANY
    assert str(MemcpySrcAccessOrder.DURING_API_CALL) == "during_api_call"
    assert f"{MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE}" == "prefer_overlap_with_compute"
    assert MemcpySrcAccessOrder.STREAM == "stream"


def test_copy_options_defaults_and_coercion():
    opts = CopyOptions()
    assert opts.src_access_order is MemcpySrcAccessOrder.STREAM
    assert opts.overlap_mode is MemcpyOverlapMode.DEFAULT
    assert opts.src_location_hint is None and opts.dst_location_hint is None
    opts = CopyOptions(src_access_order="any", overlap_mode="prefer_overlap_with_compute")
    assert opts.src_access_order is MemcpySrcAccessOrder.ANY
    assert opts.overlap_mode is MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE
    assert opts == CopyOptions(
        src_access_order=MemcpySrcAccessOrder.ANY,
        overlap_mode=MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE,
    )
    assert hash(opts) == hash(CopyOptions(src_access_order="any", overlap_mode=opts.overlap_mode))
    assert opts != CopyOptions()


def test_copy_options_is_frozen():
    opts = CopyOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.src_access_order = "any"


@pytest.mark.parametrize("value", ["sideways", 3, None])
def test_copy_options_rejects_bad_values(value):
    with pytest.raises(ValueError, match="^invalid src_access_order"):
        CopyOptions(src_access_order=value)
    with pytest.raises(ValueError, match="^invalid overlap_mode"):
        CopyOptions(overlap_mode=value)


# --------------------------------------------------------------------------
# Encoding of options into CUmemcpyAttributes runs
# --------------------------------------------------------------------------
def test_normalize_copy_options():
    anyo = CopyOptions(src_access_order="any")
    assert _normalize_copy_options(None, 3) == (CopyOptions(),) * 3
    assert _normalize_copy_options(anyo, 4) == (anyo,) * 4
    assert _normalize_copy_options([anyo, CopyOptions()], 2) == (anyo, CopyOptions())
    with pytest.raises(ValueError, match="options length 1 does not match buffers length 4"):
        _normalize_copy_options([anyo], 4)
    with pytest.raises(TypeError, match="options must be CopyOptions"):
        _normalize_copy_options(42, 2)
    with pytest.raises(TypeError, match="options must be CopyOptions"):
        _normalize_copy_options("any", 3)
    with pytest.raises(TypeError, match="each options element must be CopyOptions, got str"):
        _normalize_copy_options([anyo, "any"], 2)


def test_attr_run_starts():
    s, a = CopyOptions(), CopyOptions(src_access_order="any")
    assert _attr_run_starts([s]) == [0]
    assert _attr_run_starts([s] * 5) == [0]
    # Equal values, not identical objects, share a run.
    assert _attr_run_starts([CopyOptions(src_access_order="any") for _ in range(3)]) == [0]
    assert _attr_run_starts([s, s, a, a, s]) == [0, 2, 4]
    assert _attr_run_starts([s, a, s, a]) == [0, 1, 2, 3]


def test_fill_attributes(fake_locations):
    c = ffi.new("CUmemcpyAttributes *")
    _fill_attributes(c[0], CopyOptions())
    assert c.srcAccessOrder == lib.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM
    assert c.flags == lib.CU_MEMCPY_FLAG_DEFAULT
    assert c.srcLocHint.type == 0 and c.dstLocHint.type == 0
    c = ffi.new("CUmemcpyAttributes *")
    opts = CopyOptions(
        src_access_order="during_api_call",
        src_location_hint=FakeDevice(3),
        dst_location_hint=Host(numa_id=1),
        overlap_mode="prefer_overlap_with_compute",
    )
    _fill_attributes(c[0], opts)
    assert c.srcAccessOrder == lib.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL == 2
    assert c.flags == lib.CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE == 1
    assert (c.srcLocHint.type, c.srcLocHint.id) == (lib.CU_MEM_LOCATION_TYPE_DEVICE, 3)
    assert (c.dstLocHint.type, c.dstLocHint.id) == (lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, 1)
    c = ffi.new("CUmemcpyAttributes *")
    _fill_attributes(c[0], CopyOptions(src_access_order="any", dst_location_hint=Host()))
    assert c.srcAccessOrder == lib.CU_MEMCPY_SRC_ACCESS_ORDER_ANY == 3
    assert c.dstLocHint.type == lib.CU_MEM_LOCATION_TYPE_HOST
    # Device ordinals are not locations (as upstream).
    c = ffi.new("CUmemcpyAttributes *")
    with pytest.raises(TypeError, match="^location must be a Device, Host, or None; got int"):
        _fill_attributes(c[0], CopyOptions(dst_location_hint=-1))
    # A bad hint is reported when the options are used, as upstream does.
    c = ffi.new("CUmemcpyAttributes *")
    with pytest.raises(TypeError, match="^location must be a Device, Host"):
        _fill_attributes(c[0], CopyOptions(src_location_hint="gpu0"))


def test_location_pair(fake_locations):
    pair = _location.location_pair
    assert pair(FakeDevice(2)) == (lib.CU_MEM_LOCATION_TYPE_DEVICE, 2)
    assert pair(Host()) == (lib.CU_MEM_LOCATION_TYPE_HOST, 0)
    assert pair(Host(numa_id=4)) == (lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, 4)
    assert pair(Host.numa_current()) == (lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0)
    assert pair(None, allow_none=True) is None
    with pytest.raises(ValueError, match="^location is required"):
        pair(None)
    # Device ordinals (and -1 for the host) are refused, as upstream refuses them.
    for value, name in ((0, "int"), (-1, "int"), (True, "bool"), ("host", "str")):
        with pytest.raises(
            TypeError, match=f"^location must be a Device, Host, or None; got {name}$"
        ):
            pair(value)
    # Duck-typed host objects are not Hosts.
    duck = type("DuckHost", (), {"numa_id": None, "is_numa_current": False})()
    with pytest.raises(TypeError, match="got DuckHost"):
        pair(duck)
    # A Buffer has a device_id too, but is not a location.
    with pytest.raises(TypeError, match="got Buffer"):
        pair(_views(1)[0])


def test_location_pair_numa_host_needs_cuda13_driver(monkeypatch, fake_locations):
    monkeypatch.setattr(_location, "current_driver_version", lambda: 12090)
    assert _location.location_pair(Host()) == (lib.CU_MEM_LOCATION_TYPE_HOST, 0)
    assert _location.location_pair(FakeDevice(1)) == (lib.CU_MEM_LOCATION_TYPE_DEVICE, 1)
    for host in (Host(numa_id=0), Host.numa_current()):
        with pytest.raises(
            TypeError, match=r"^Host\(numa_id=\.\.\.\) / Host\.numa_current\(\) require"
        ):
            _location.location_pair(host)


def test_location_device_class_comes_from_device_module():
    # cuda_core._device fills the slot at import: real Devices are locations.
    from cuda_core import Device

    assert _slots.Device is Device


def test_reject_unsupported_during_api_call():
    for order in (MemcpySrcAccessOrder.STREAM, MemcpySrcAccessOrder.ANY):
        _reject_unsupported_during_api_call(order, "x", index=0)
    with pytest.raises(RuntimeError, match="^src_access_order=DURING_API_CALL at index 5 requires"):
        _reject_unsupported_during_api_call(MemcpySrcAccessOrder.DURING_API_CALL, "x", index=5)
    with pytest.raises(RuntimeError) as info:
        _reject_unsupported_during_api_call(MemcpySrcAccessOrder.DURING_API_CALL, "a new driver")
    assert "at index" not in str(info.value) and "requires a new driver" in str(info.value)


# --------------------------------------------------------------------------
# copy_batch argument checks (all before any driver call)
# --------------------------------------------------------------------------
def test_copy_batch_rejects_bad_sequences():
    srcs, dsts = _views(3), _views(3, base=0x90000)
    with pytest.raises(TypeError, match="^copy_batch: pass a sequence of Buffers"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs[0], dsts)
    with pytest.raises(TypeError, match="^copy_batch: pass a sequence of Buffers"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, dsts[0])
    with pytest.raises(TypeError, match="must be a sequence of Buffer, got int"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, 42, dsts)
    with pytest.raises(TypeError, match="must be a sequence of Buffer, got NoneType"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, None)
    with pytest.raises(TypeError, match="must be a sequence of Buffer, got set"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, set(srcs), dsts)
    with pytest.raises(ValueError, match="^copy_batch: empty buffers sequence"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, [], [])
    with pytest.raises(ValueError, match="^copy_batch: empty buffers sequence"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, ())
    with pytest.raises(TypeError, match="^copy_batch: expected Buffer, got int"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, [srcs[0], 42], dsts[:2])
    with pytest.raises(TypeError, match="^copy_batch: expected Buffer, got NoneType"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs[:2], [dsts[0], None])
    with pytest.raises(ValueError, match="^copy_batch: srcs length 2 does not match dsts length 3"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs[:2], dsts)


def test_copy_batch_rejects_closed_buffer():
    srcs, dsts = _views(3), _views(3, base=0x90000)
    dsts[2].close()
    with pytest.raises(RuntimeError, match="Buffer at index 2 is closed"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, dsts)


def test_copy_batch_rejects_legacy_default_stream_and_non_streams():
    srcs, dsts = _views(2), _views(2, base=0x90000)
    with pytest.raises(TypeError, match="^copy_batch does not accept LEGACY_DEFAULT_STREAM"):
        copy_batch(LEGACY_DEFAULT_STREAM, srcs, dsts)
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got "):
        copy_batch(object(), srcs, dsts)


def test_copy_batch_fallback_refuses_during_api_call(monkeypatch):
    """Before CUDA 12.8 copies are stream-ordered: DURING_API_CALL cannot be honoured."""
    monkeypatch.setattr(_copy_batch, "current_driver_version", lambda: 12060)
    monkeypatch.setattr(_copy_batch, "_refuse_capture", lambda s: None)
    srcs, dsts = _views(3), _views(3, base=0x90000)
    opts = [CopyOptions(), CopyOptions(src_access_order="during_api_call"), CopyOptions()]
    with pytest.raises(
        RuntimeError, match="DURING_API_CALL at index 1 requires a driver for CUDA 12.8"
    ):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, dsts, options=opts)
    with pytest.raises(ValueError, match="options length 2 does not match"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, dsts, options=opts[:2])


def test_copy_batch_size_mismatch_names_index(monkeypatch):
    monkeypatch.setattr(_copy_batch, "_refuse_capture", lambda s: None)
    srcs = _views(3)
    dsts = [*_views(2, base=0x90000), Buffer.from_handle(0xA0000, 65)]
    with pytest.raises(ValueError, match=r"size mismatch at index 2 \(src=64, dst=65\)"):
        copy_batch(PER_THREAD_DEFAULT_STREAM, srcs, dsts)


def test_batch_error_names_the_failed_copy():
    srcs, dsts = _views(4), _views(4, base=0x90000)
    live = [0, 2, 3]  # copy 1 was empty and left out of the driver's batch
    err = _copy_batch._batch_error(1, 1, live, srcs, dsts)
    assert err.name == "CUDA_ERROR_INVALID_VALUE"
    assert "copy 2 of 4 failed" in str(err)
    assert f"src=0x{srcs[2].handle:x}" in str(err) and f"dst=0x{dsts[2].handle:x}" in str(err)
    err = _copy_batch._batch_error(1, _batch.SIZE_MAX, live, srcs, dsts)
    assert "the driver named no copy" in str(err)
    err = _copy_batch._batch_error(1, 3, None, srcs, dsts)  # no copy was left out
    assert "copy 3 of 4 failed" in str(err) and f"size={srcs[3].size}" in str(err)


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
def _pinned(mr, size):
    buf = mr.allocate(size)
    return buf, np.asarray(buf).view(np.uint8)


def _mixed_batch(device, stream, n, seed):
    """``n`` copies of mixed sizes and kinds; returns what to check them with.

    Copies cycle through host-to-device, device-to-host and device-to-device,
    each between its own non-overlapping slices of four arenas: pinned host
    source, device source, pinned host destination, device destination.
    """
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9000, n)
    sizes[::97] = 4096
    kinds = [("h2d", "d2h", "d2d")[i % 3] for i in range(n)]
    need = {
        k: int(sum(sz for sz, kk in zip(sizes, kinds) if kk == k)) for k in ("h2d", "d2h", "d2d")
    }
    pinned_mr = LegacyPinnedMemoryResource()
    h_src, h_src_np = _pinned(pinned_mr, need["h2d"])
    h_dst, h_dst_np = _pinned(pinned_mr, need["d2h"])
    d_src = device.allocate(need["d2h"] + need["d2d"], stream=stream)
    d_dst = device.allocate(need["h2d"] + need["d2d"], stream=stream)
    h_src_np[:] = rng.integers(0, 256, h_src_np.size, dtype=np.uint8)
    h_dst_np[:] = 0xEE
    d_src_np = rng.integers(0, 256, d_src.size, dtype=np.uint8)
    staging, staging_np = _pinned(pinned_mr, max(d_src.size, d_dst.size))
    staging_np[: d_src.size] = d_src_np
    Buffer.from_handle(staging.handle, d_src.size).copy_to(d_src, stream=stream)
    d_dst.fill(0xEE, stream=stream)
    stream.sync()
    offs = {"hs": 0, "hd": 0, "ds": 0, "dd": 0}
    srcs, dsts, plan = [], [], []
    for sz, kind in zip(sizes, kinds):
        sz = int(sz)
        src_arena, dst_arena = {"h2d": ("hs", "dd"), "d2h": ("ds", "hd"), "d2d": ("ds", "dd")}[kind]
        so, do = offs[src_arena], offs[dst_arena]
        offs[src_arena] += sz
        offs[dst_arena] += sz
        src_base = {"hs": h_src, "ds": d_src}[src_arena].handle
        dst_base = {"hd": h_dst, "dd": d_dst}[dst_arena].handle
        srcs.append(Buffer.from_handle(src_base + so, sz))
        dsts.append(Buffer.from_handle(dst_base + do, sz))
        plan.append((src_arena, so, dst_arena, do, sz))
    arenas = (h_src, h_dst, d_src, d_dst, staging)

    def check():
        stream.sync()
        got_dd = np.empty(d_dst.size, dtype=np.uint8)
        d_dst.copy_to(Buffer.from_handle(staging.handle, d_dst.size), stream=stream)
        stream.sync()
        got_dd[:] = staging_np[: d_dst.size]
        expect_hd = np.full(h_dst_np.size, 0xEE, dtype=np.uint8)
        expect_dd = np.full(d_dst.size, 0xEE, dtype=np.uint8)
        for src_arena, so, dst_arena, do, sz in plan:
            data = (h_src_np if src_arena == "hs" else d_src_np)[so : so + sz]
            (expect_hd if dst_arena == "hd" else expect_dd)[do : do + sz] = data
        np.testing.assert_array_equal(h_dst_np, expect_hd)
        np.testing.assert_array_equal(got_dd, expect_dd)

    def close():
        stream.sync()
        for buf in arenas:
            buf.close(stream)

    return srcs, dsts, check, close


@pytest.mark.gpu
def test_copy_batch_thousand_mixed_copies(device, stream):
    srcs, dsts, check, close = _mixed_batch(device, stream, 1000, seed=7)
    try:
        copy_batch(stream, srcs, dsts)
        check()
    finally:
        close()


@pytest.mark.gpu
def test_copy_batch_per_copy_options(device, stream):
    srcs, dsts, check, close = _mixed_batch(device, stream, 300, seed=11)
    cycle = [
        CopyOptions(),
        CopyOptions(src_access_order="any"),
        CopyOptions(src_access_order="any"),
        CopyOptions(overlap_mode="prefer_overlap_with_compute"),
        CopyOptions(src_location_hint=device, dst_location_hint=Host()),
    ]
    try:
        copy_batch(stream, srcs, dsts, options=[cycle[i % 5] for i in range(len(srcs))])
        check()
    finally:
        close()


@pytest.mark.gpu
def test_copy_batch_during_api_call_and_broadcast_options(device, stream):
    srcs, dsts, check, close = _mixed_batch(device, stream, 60, seed=13)
    try:
        copy_batch(stream, srcs, dsts, options=CopyOptions(src_access_order="during_api_call"))
        check()
    finally:
        close()


@pytest.mark.gpu
def test_copy_batch_per_thread_default_stream_and_empty_copies(device):
    pinned = LegacyPinnedMemoryResource()
    src, src_np = _pinned(pinned, 4096)
    out, out_np = _pinned(pinned, 4096)
    src_np[:] = np.arange(4096) % 251
    out_np[:] = 0
    dev_buf = device.allocate(4096, stream=PER_THREAD_DEFAULT_STREAM)
    empty_a = Buffer.from_handle(src.handle, 0)
    empty_b = Buffer.from_handle(out.handle, 0)
    copy_batch(PER_THREAD_DEFAULT_STREAM, [src, empty_a], [dev_buf, empty_b])
    copy_batch(PER_THREAD_DEFAULT_STREAM, [dev_buf], [out])
    # A batch of empty copies asks nothing of the driver.
    copy_batch(PER_THREAD_DEFAULT_STREAM, [empty_a], [empty_b])
    PER_THREAD_DEFAULT_STREAM.sync()
    np.testing.assert_array_equal(out_np, src_np)
    dev_buf.close(PER_THREAD_DEFAULT_STREAM)
    PER_THREAD_DEFAULT_STREAM.sync()
    src.close()
    out.close()


@pytest.mark.gpu
def test_copy_batch_bad_input_on_gpu(device, stream):
    a = device.allocate(1024, stream=stream)
    b = device.allocate(2048, stream=stream)
    with pytest.raises(ValueError, match=r"size mismatch at index 0 \(src=1024, dst=2048\)"):
        copy_batch(stream, [a], [b])
    with pytest.raises(TypeError, match="LEGACY_DEFAULT_STREAM"):
        copy_batch(LEGACY_DEFAULT_STREAM, [a], [a])
    closed = device.create_stream()
    closed.close()
    with pytest.raises(RuntimeError, match="closed"):
        copy_batch(closed, [a], [a])
    builder = device.create_graph_builder().begin_building()
    try:
        with pytest.raises(TypeError, match="does not support graph capture"):
            copy_batch(builder, [a], [Buffer.from_handle(b.handle, 1024)])
        with pytest.raises(TypeError, match="does not support graph capture"):
            copy_batch(builder.stream, [a], [Buffer.from_handle(b.handle, 1024)])
    finally:
        builder.end_building().close()
    a.close(stream)
    b.close(stream)
    stream.sync()


@pytest.mark.gpu
def test_copy_batch_reports_failed_copy_index():
    """A copy the driver refuses is named by index (in its own process: it may poison)."""
    proc, result = run_script("batch_failure.py", timeout=180)
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0 and result is not None, detail
    out = result["copy_batch"]
    assert not out["ok"], f"the batch with a bad copy did not raise: {out}"
    assert "CUDAError" in out["bases"], out
    assert out["message"].startswith(out["name"]), out
    assert f"copy {result['bad_index']} of {result['count']} failed" in out["message"], out
    assert f"dst=0x{result['bad_dst']:x}" in out["message"], out
    # The good copies of a refused batch are not made, and later batches work.
    assert result["after"]["ok"], result["after"]
