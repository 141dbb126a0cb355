# SPDX-License-Identifier: Apache-2.0
"""Device and DeviceProperties: construction, identity, attributes vs the driver."""

from __future__ import annotations

import gc
import pickle
import re
import subprocess
import sys
import threading

import pytest
from conftest import gpu_status

from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CUDAError,
    Device,
    LibraryNotFoundError,
    Stream,
    _device,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._device import ComputeCapability
from cuda_core._device_properties import (
    _ATTRIBUTES,
    _NAMES,
    _UNSUPPORTED,
    DeviceAttributeNotSupportedError,
    DeviceProperties,
)
from cuda_core._errors import check

HAVE_GPU = gpu_status()[0]


def _driver_loads():
    return lib.cc_load_library(lib.CC_LIB_DRIVER, ffi.NULL) == 0


def _raw_attr(attr_name, device_id=0):
    out = ffi.new("int *")
    check(lib.cuDeviceGetAttribute(out, getattr(lib, attr_name), device_id))
    return out[0]


def _run_in_thread(fn):
    result = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            result["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    assert not t.is_alive()
    if "error" in result:
        raise result["error"]
    return result.get("value")


# ---------------------------------------------------------------- CPU-side
@pytest.mark.skipif(_driver_loads(), reason="a CUDA driver is present on this machine")
def test_device_without_driver_raises_library_not_found():
    for make in (lambda: Device(), lambda: Device(0), Device.get_all_devices):
        with pytest.raises(LibraryNotFoundError, match="libcuda.so.1"):
            make()


@pytest.mark.parametrize("bad", ["0", 1.0, [0], object(), True, False])
def test_device_rejects_non_int(bad):
    with pytest.raises(TypeError, match="device_id must be an int"):
        Device(bad)


@pytest.mark.parametrize("bad", [-1, -100])
def test_device_rejects_negative(bad):
    with pytest.raises(ValueError, match=">= 0"):
        Device(bad)


def test_device_properties_cannot_be_constructed():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        DeviceProperties()


def test_compute_capability_is_a_named_tuple():
    cc = ComputeCapability(9, 0)
    assert cc == (9, 0) and cc.major == 9 and cc.minor == 0
    assert cc > ComputeCapability(8, 9)


def test_attribute_table_maps_to_driver_enum():
    assert len(_NAMES) == len(set(_NAMES)) >= 130
    enum = ffi.typeof("CUdevice_attribute").relements
    for name, kind, doc in _ATTRIBUTES:
        assert doc.endswith(".")
        assert kind in ("b", "i")
        assert f"CU_DEVICE_ATTRIBUTE_{name.upper()}" in enum, name
        prop = getattr(DeviceProperties, name)
        assert isinstance(prop, property)
        assert prop.__doc__.startswith("bool: " if kind == "b" else "int: ")
    # A few names whose spelling differs from the obvious one.
    for name in (
        "max_shared_memory_per_block",
        "max_registers_per_block",
        "virtual_memory_management_supported",
        "can_use_64_bit_stream_mem_ops",
        "can_use_stream_wait_value_nor",
        "only_partial_host_native_atomic_supported",
    ):
        assert name in _NAMES
    assert set(_NAMES) <= set(dir(DeviceProperties._init(0)))


def _fake_properties(monkeypatch, answers):
    """DeviceProperties whose driver query answers from ``answers`` (name -> value)."""
    calls = []

    def fake_query(self, name, c_attr):
        calls.append(name)
        return answers[name]

    monkeypatch.setattr(DeviceProperties, "_query", fake_query)
    return DeviceProperties._init(0), calls


def test_unsupported_attribute_is_an_attribute_error(monkeypatch):
    props, _ = _fake_properties(monkeypatch, {"numa_id": _UNSUPPORTED, "warp_size": 32})
    with pytest.raises(DeviceAttributeNotSupportedError, match="numa_id") as info:
        props.numa_id  # noqa: B018
    assert isinstance(info.value, AttributeError)
    assert info.value.attribute == "numa_id" and info.value.device_id == 0
    assert getattr(props, "numa_id", "fallback") == "fallback"
    assert not hasattr(props, "numa_id")
    assert props.warp_size == 32


def test_genuine_zero_and_bool_conversion(monkeypatch):
    props, _ = _fake_properties(
        monkeypatch, {"numa_id": 0, "ecc_enabled": 0, "cluster_launch": 1, "warp_size": 32}
    )
    assert props.numa_id == 0 and type(props.numa_id) is int
    assert props.ecc_enabled is False
    assert props.cluster_launch is True
    assert getattr(props, "numa_id", "fallback") == 0


def test_properties_are_cached_except_volatile_ones(monkeypatch):
    props, calls = _fake_properties(monkeypatch, {"warp_size": 32, "clock_rate": 1000})
    for _ in range(3):
        assert props.warp_size == 32
        assert props.clock_rate == 1000
    assert calls.count("warp_size") == 1
    assert calls.count("clock_rate") == 3
    assert repr(props) == "<DeviceProperties device=0>"


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_device_is_a_per_thread_singleton():
    dev = Device(0)
    assert Device(0) is dev
    assert Device(dev) is dev
    assert Device(device_id=0) is dev
    other = _run_in_thread(lambda: Device(0))
    assert other is not dev
    assert other == dev and hash(other) == hash(dev)


@pytest.mark.gpu
def test_device_none_means_current_or_zero(device):
    assert Device() is Device(0)
    # No current context: device 0, as the CUDA runtime does.
    assert _run_in_thread(lambda: Device().device_id) == 0


@pytest.mark.gpu
def test_device_none_is_the_calling_threads_object(device):
    # Device() finds the calling thread's object for the current context's
    # device, in each thread, however often it is asked.
    def in_thread():
        Device(0).set_current()
        mine = Device(0)
        return mine, [Device() is mine for _ in range(3)]

    theirs, same = _run_in_thread(in_thread)
    assert same == [True, True, True]
    assert theirs is not device
    assert [Device() is device for _ in range(3)] == [True, True, True]


def test_device_keys_of_an_ended_thread_are_dropped():
    # Device()'s table drops a thread's entries with the thread's locals.
    keys = _device._ThreadKeys([-5, -6])
    _device._BY_KEY[-5] = _device._BY_KEY[-6] = object()
    del keys
    gc.collect()
    assert -5 not in _device._BY_KEY and -6 not in _device._BY_KEY


def test_device_keys_left_at_exit_go_quietly():
    # The main thread's keys are dropped at interpreter exit, after CPython may
    # have cleared the module's globals: nothing may be reported then.
    code = (
        "import cuda_core._device as d\n"
        "k = d._ThreadKeys([1 << 20]); d._BY_KEY[1 << 20] = None; d._tls.device_keys = k\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "Exception ignored" not in done.stderr, done.stderr


@pytest.mark.gpu
def test_device_out_of_range():
    count = len(Device.get_all_devices())
    with pytest.raises(ValueError, match=re.escape(f"[0, {count})")):
        Device(count)
    with pytest.raises(ValueError, match="within"):
        Device(10**6)


@pytest.mark.gpu
def test_get_all_devices_matches_driver():
    out = ffi.new("int *")
    check(lib.cuDeviceGetCount(out))
    devices = Device.get_all_devices()
    assert isinstance(devices, tuple)
    assert [d.device_id for d in devices] == list(range(out[0]))
    assert all(d is Device(i) for i, d in enumerate(devices))


@pytest.mark.gpu
def test_identity_dunders(device):
    assert int(device) == 0 == device.device_id
    assert device == Device(0)
    assert (device == 0) is False
    assert device != "x"
    assert pickle.loads(pickle.dumps(device)) is device
    assert repr(device) == f"<Device 0 ({device.name})>"


@pytest.mark.gpu
def test_name_uuid_pci_bus_id(device):
    buf = ffi.new("char[]", 256)
    check(lib.cuDeviceGetName(buf, 256, 0))
    assert device.name == ffi.string(buf).decode() and device.name
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", device.uuid
    )
    assert re.fullmatch(
        r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]", device.pci_bus_id
    )
    bus = int(device.pci_bus_id.split(":")[1], 16)
    assert bus == device.properties.pci_bus_id


@pytest.mark.gpu
def test_compute_capability_and_arch(device):
    major = _raw_attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
    minor = _raw_attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
    cc = device.compute_capability
    assert isinstance(cc, ComputeCapability) and cc == (major, minor)
    assert device.arch == f"{major}{minor}"


@pytest.mark.gpu
def test_properties_match_raw_driver(device):
    props = device.properties
    assert props is device.properties
    for name in (
        "max_threads_per_block",
        "warp_size",
        "multiprocessor_count",
        "max_shared_memory_per_block_optin",
        "l2_cache_size",
        "max_grid_dim_x",
    ):
        value = getattr(props, name)
        assert type(value) is int
        assert value == _raw_attr(f"CU_DEVICE_ATTRIBUTE_{name.upper()}"), name
    for name in ("unified_addressing", "concurrent_managed_access", "memory_pools_supported"):
        value = getattr(props, name)
        assert type(value) is bool
        assert value == bool(_raw_attr(f"CU_DEVICE_ATTRIBUTE_{name.upper()}")), name
    assert props.warp_size == 32


@pytest.mark.gpu
def test_every_property_is_int_bool_or_unsupported(device):
    props = device.properties
    unsupported = []
    for name, kind, _ in _ATTRIBUTES:
        try:
            value = getattr(props, name)
        except DeviceAttributeNotSupportedError:
            unsupported.append(name)
            continue
        assert type(value) is (bool if kind == "b" else int), name
    # The long-standing basics are supported everywhere.
    assert "warp_size" not in unsupported and "cluster_launch" not in unsupported


@pytest.mark.gpu
def test_uninitialized_device_refuses_factories():
    def body():
        dev = Device(0)  # fresh thread: not initialized
        msg = "Device 0 is not yet initialized, perhaps you forgot to call .set_current() first?"
        for call in (
            dev.create_stream,
            dev.create_event,
            dev.sync,
            lambda: dev.allocate(16, stream=LEGACY_DEFAULT_STREAM),
            lambda: dev.context,
            dev.create_graph_builder,
        ):
            with pytest.raises(CUDAError, match=re.escape(msg)):
                call()
        return True

    assert _run_in_thread(body)


@pytest.mark.gpu
def test_sync_and_factories(device):
    device.sync()
    s = device.create_stream()
    assert isinstance(s, Stream) and s.device is device
    e = device.create_event()
    assert e.device is device
    s.record(e)
    device.sync()
    assert e.is_done
    e.close()
    s.close()


@pytest.mark.gpu
def test_sync_uses_the_device_context_even_if_another_is_current(device):
    check(lib.cuCtxSetCurrent(ffi.NULL))
    try:
        device.sync()  # pushes the device's context for the call
        out = ffi.new("CUcontext *")
        check(lib.cuCtxGetCurrent(out))
        assert out[0] == ffi.NULL  # and pops it again
        s = device.create_stream()
        assert s.context == device.context
        s.close()
    finally:
        device.set_current()


@pytest.mark.gpu
def test_default_stream_follows_environment(device, monkeypatch):
    monkeypatch.delenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", raising=False)
    assert device.default_stream is LEGACY_DEFAULT_STREAM
    monkeypatch.setenv("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "1")
    assert device.default_stream is PER_THREAD_DEFAULT_STREAM


@pytest.mark.gpu
def test_can_access_peer(device):
    assert device.can_access_peer(device) is True
    assert device.can_access_peer(0) is True
    for other in Device.get_all_devices()[1:]:
        out = ffi.new("int *")
        check(lib.cuDeviceCanAccessPeer(out, 0, other.device_id))
        assert device.can_access_peer(other) is bool(out[0])
    with pytest.raises(TypeError):
        device.can_access_peer("x")
    with pytest.raises(ValueError):
        device.can_access_peer(-1)


@pytest.mark.gpu
def test_memory_resource_setter_validates(device):
    memory = pytest.importorskip("cuda_core._memory")
    if not hasattr(memory, "MemoryResource"):
        pytest.skip("cuda_core._memory.MemoryResource is not available yet")
    with pytest.raises(TypeError, match="MemoryResource"):
        device.memory_resource = object()


@pytest.mark.gpu
def test_memory_resource_default_and_allocate(device, stream):
    memory = pytest.importorskip("cuda_core._memory")
    if not hasattr(memory, "_default_memory_resource"):
        pytest.skip("cuda_core._memory._default_memory_resource is not available yet")
    mr = device.memory_resource
    assert mr is device.memory_resource
    buf = device.allocate(1024, stream=stream)
    try:
        assert buf.size == 1024
    finally:
        buf.close(stream)
        stream.sync()


@pytest.mark.gpu
def test_create_graph_builder_owns_a_new_stream(device):
    from cuda_core import _slots
    from cuda_core._stream import _as_stream

    builder_type = _slots.GraphBuilder
    if builder_type is None:
        pytest.skip("cuda_core.graph is not available")
    builder = device.create_graph_builder()
    try:
        assert isinstance(builder, builder_type)
        assert isinstance(builder.stream, Stream)
        assert builder.stream.device is device
        assert _as_stream(builder) is builder.stream
    finally:
        builder.close()


def test_create_graph_builder_without_graph_module(monkeypatch):
    # A partial import of cuda_core, where cuda_core.graph cannot be loaded:
    # no registered builder and no way to import the subpackage.
    from types import SimpleNamespace

    from cuda_core import Device, _slots

    monkeypatch.setattr(_slots, "GraphBuilder", None)
    monkeypatch.setattr(_slots, "import_subpackage", None)
    initialized = SimpleNamespace(_check_initialized=lambda: None)  # stands for a current Device
    with pytest.raises(ImportError, match="GraphBuilder could not be imported"):
        Device.create_graph_builder(initialized)


@pytest.mark.gpu
def test_against_nvidia_cuda_core(device):
    """Same answers as NVIDIA's cuda.core where it is importable (CPython)."""
    core = pytest.importorskip("cuda.core")
    theirs = core.Device(0)
    assert theirs.uuid == device.uuid
    assert theirs.name == device.name
    assert tuple(theirs.compute_capability) == tuple(device.compute_capability)
    assert theirs.arch == device.arch
    assert theirs.pci_bus_id == device.pci_bus_id
    for name in _NAMES:
        ref = getattr(theirs.properties, name, None)
        if ref is None:
            continue
        ours = getattr(device.properties, name, None)
        if ours is None:
            assert ref == 0, name  # upstream maps "unsupported" to 0
        else:
            assert ours == ref, name
