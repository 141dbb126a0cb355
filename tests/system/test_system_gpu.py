# SPDX-License-Identifier: Apache-2.0
"""cuda_core.system on a real GPU, checked against nvidia-smi and cuda_core.

Marked ``gpu``; skipped where NVML cannot be loaded.  Where upstream's
behaviour on a GPU is not settled (fans on a data-centre board, MIG calls
with MIG off, an unknown field id, system events), the test accepts the
documented outcomes and prints the one seen (run with ``-rA`` or ``-s``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings

import pytest
from _scripts.hardening_util import package_root

from cuda_core import system
from cuda_core.system.typing import (
    ClockId,
    ClockType,
    DeviceArch,
    EventType,
    FieldId,
    TemperatureThresholds,
    ThermalTarget,
)

pytestmark = pytest.mark.gpu

SMI_FIELDS = (
    "count,name,uuid,pci.bus_id,memory.total,driver_version,persistence_mode,temperature.gpu"
)


@pytest.fixture(scope="module", autouse=True)
def nvml():
    try:
        system.get_kernel_mode_driver_version()
    except system.LibraryNotFoundError as exc:
        pytest.skip(f"NVML not available: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def smi_rows():
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi not found")
    out = subprocess.run(
        [smi, f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return [[c.strip() for c in line.split(",")] for line in out.strip().splitlines()]


@pytest.fixture
def nvml_device(device):
    """The NVML device of CUDA device 0 (which the ``device`` fixture made current)."""
    return device.to_system_device()


def record(what, value):
    print(f"[system observation] {what}: {value!r}")


def test_matches_nvidia_smi(smi_rows):
    assert system.get_num_devices() == len(smi_rows) == int(smi_rows[0][0])
    assert system.Device.get_device_count() == len(smi_rows)
    kmd = system.get_kernel_mode_driver_version()
    assert kmd == tuple(int(p) for p in smi_rows[0][5].split("."))
    assert kmd[0] >= 520
    for i, (_, name, uuid, bus_id, mem_mib, _, persistence, temp) in enumerate(smi_rows):
        dev = system.Device(index=i)
        assert dev.index == i
        assert dev.name == name
        assert dev.uuid == uuid and dev.uuid.startswith("GPU-")
        assert dev.uuid_without_prefix == uuid[4:]
        assert dev.pci_bus_id.upper() == bus_id.upper()
        total = dev.memory_info.total
        assert abs(total // 2**20 - int(mem_mib)) <= 1, (total, mem_mib)
        assert dev.is_persistence_mode_enabled == (persistence == "Enabled")
        assert abs(dev.temperature.get_sensor() - int(temp)) <= 3
        assert system.Device(uuid=uuid)._handle == dev._handle
        assert system.Device(pci_bus_id=bus_id)._handle == dev._handle
        assert system.Device(uuid=uuid.encode())._handle == dev._handle


def test_versions():
    umd = system.get_user_mode_driver_version()
    assert len(umd) == 2 and umd[0] >= 12
    from cuda_core._loader import driver_version

    v = driver_version()
    assert umd == (v // 1000, (v // 10) % 100)
    nvml_version = system.get_nvml_version()
    assert nvml_version[1:] == system.get_kernel_mode_driver_version()
    branch = system.get_driver_branch()
    assert isinstance(branch, str) and branch
    record("driver branch", branch)


def test_to_cuda_device_round_trip(device):
    from cuda_core import Device

    for cuda_dev in Device.get_all_devices():
        nvml_dev = cuda_dev.to_system_device()
        assert nvml_dev.uuid_without_prefix == cuda_dev.uuid
        back = nvml_dev.to_cuda_device()
        assert back.device_id == cuda_dev.device_id and back.uuid == cuda_dev.uuid
    nvml0 = system.Device(index=0)
    record("NVML index 0 is CUDA device", nvml0.to_cuda_device().device_id)
    try:
        system.Device(uuid=device.uuid)
        record("NVML accepts an un-prefixed UUID", True)
    except system.NvmlError as exc:
        record("NVML accepts an un-prefixed UUID", type(exc).__name__)


def test_matches_cuda_properties(device, nvml_device):
    cc = device.compute_capability
    assert nvml_device.cuda_compute_capability == (cc.major, cc.minor)
    assert nvml_device.pci_info.vendor_id == 0x10DE
    if cc.major == 9:
        assert nvml_device.arch == DeviceArch.HOPPER
    assert nvml_device.arch >= DeviceArch.AMPERE
    try:
        attrs = nvml_device.attributes
        assert attrs.multiprocessor_count == device.properties.multiprocessor_count
        record("attributes.memory_size_mb", attrs.memory_size_mb)
    except system.NotSupportedError:
        record("attributes", "NotSupportedError")


def test_process_appears_while_holding_a_context(device, nvml_device):
    stream = device.create_stream()
    buf = device.allocate(1 << 20, stream=stream)
    stream.sync()
    try:
        procs = nvml_device.compute_running_processes
        pids = [p.pid for p in procs]
        record("compute processes", pids)
        if os.getpid() not in pids:
            nspid = _nspid()
            if len(nspid) > 1 or (pids and not os.path.exists(f"/proc/{pids[0]}")):
                pytest.skip(f"PID namespace: NVML reports {pids}, this process is {nspid}")
        assert os.getpid() in pids
        mine = procs[pids.index(os.getpid())]
        assert mine.used_gpu_memory > 0
        with pytest.raises(system.NotSupportedError):
            _ = mine.gpu_instance_id  # not a MIG device
        name = system.get_process_name(os.getpid())
        record("process name", name)
        assert isinstance(name, str) and name
    finally:
        buf.close(stream)
        stream.sync()
        stream.close()


def _nspid():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return [os.getpid()]


def test_event_wait_times_out(nvml_device):
    supported = nvml_device.get_supported_event_types()
    record("supported event types", [e.name for e in supported])
    if not supported:
        with pytest.raises(system.NotSupportedError):
            nvml_device.register_events([EventType.XID_CRITICAL_ERROR])
        return
    quiet = (
        EventType.XID_CRITICAL_ERROR if EventType.XID_CRITICAL_ERROR in supported else supported[0]
    )
    with nvml_device.register_events([quiet]) as events:
        assert events.handle != 0
        with pytest.raises(system.TimeoutError):
            events.wait(timeout_ms=100)
    assert events.handle == 0
    events.close()  # idempotent


def test_system_events_wait():
    unavailable = (system.NotSupportedError, system.NoPermissionError)
    try:
        events = system.register_events(["bind", "unbind"])
    except (*unavailable, system.FunctionNotFoundError) as exc:
        record("system events", type(exc).__name__)
        return
    with events:
        assert events.handle != 0
        # NVML either reports the expiry (TimeoutError) or returns no events.
        try:
            got = events.wait(timeout_ms=50, buffer_size=4)
        except system.TimeoutError:
            record("system events wait", "TimeoutError")
        else:
            record("system events wait", f"{len(got)} event(s)")
            assert len(got) == 0 or got[0].event_type in ("bind", "unbind")
    assert events.handle == 0


def test_unsupported_features_behave_as_upstream(nvml_device):
    try:
        fans = nvml_device.num_fans
    except system.NotSupportedError:
        record("num_fans", "NotSupportedError")
        with pytest.raises(system.NotSupportedError):
            nvml_device.get_fan(0)
    else:
        record("num_fans", fans)
        if fans == 0:
            with pytest.raises(ValueError):
                nvml_device.get_fan(0)
        else:
            assert 0 <= nvml_device.get_fan(0).speed <= 100
    mig = nvml_device.mig
    assert mig.is_mig_device is False
    try:
        mode = mig.mode
    except system.NotSupportedError:
        record("mig.mode", "NotSupportedError")
        return
    record("mig.mode, pending, device_count", (mode, mig.pending_mode, mig.device_count))
    if not mode:
        with pytest.raises(system.NvmlError) as info:
            mig.get_device_by_index(0)
        record("mig.get_device_by_index(0) with MIG off", type(info.value).__name__)
        try:
            record("mig.get_all_devices() with MIG off", list(mig.get_all_devices()))
        except system.NvmlError as exc:
            record("mig.get_all_devices() with MIG off", type(exc).__name__)
        assert nvml_device.to_cuda_device().uuid == nvml_device.uuid_without_prefix
    else:
        children = list(mig.get_all_devices())
        for child in children:
            assert child.uuid.startswith("MIG-") and child.mig.is_mig_device
            with pytest.raises(RuntimeError, match="PCI attributes"):
                _ = child.pci_info


def test_bad_arguments(nvml_device):
    with pytest.raises(ValueError, match="either"):
        system.Device()
    with pytest.raises(ValueError, match="only one"):
        system.Device(index=0, pci_bus_id=nvml_device.pci_bus_id)
    with pytest.raises(system.InvalidArgumentError):
        system.Device(index=system.get_num_devices() + 5)
    with pytest.raises(OverflowError):
        system.Device(index=-1)
    with pytest.raises(system.NotFoundError):
        system.Device(uuid="GPU-00000000-0000-0000-0000-000000000000")
    with pytest.raises(TypeError):
        system.Device(uuid=1234)
    try:
        values = nvml_device.get_field_values([9999])
    except system.NvmlError as exc:  # NVML may refuse the whole request
        record("unknown field id: the call raised", type(exc).__name__)
    else:
        with pytest.raises(ValueError):
            _ = values[0].field_id
        with pytest.raises(system.NvmlError) as info:
            _ = values[0].value
        record("unknown field id: the entry raised", type(info.value).__name__)
    with pytest.raises(ValueError):
        nvml_device.get_clock("warp")
    if isinstance(_outcome(nvml_device.get_nvlink_count), int):
        with pytest.raises(ValueError):
            nvml_device.get_nvlink(10_000)


def test_property_sweep(nvml_device):
    d = nvml_device
    assert isinstance(d.serial, str) and d.serial
    assert d.brand != "" and isinstance(d.minor_number, int)
    m = d.memory_info
    assert m.total > 0 and 0 <= m.used <= m.total and m.free <= m.total
    assert abs(m.free + m.used + m.reserved - m.total) <= 2**20, (m.free, m.used, m.reserved)
    b = d.bar1_memory_info
    assert b.total > 0 and b.used <= b.total
    with pytest.raises(AttributeError):
        _ = b.reserved
    u = d.utilization
    assert 0 <= u.gpu <= 100 and 0 <= u.memory <= 100
    pstates = d.supported_pstates
    # In NVML's order, which need not be sorted (an H100 reports [2, 0]).
    assert pstates and len(set(pstates)) == len(pstates) and all(0 <= p <= 15 for p in pstates)
    assert d.performance_state is None or 0 <= d.performance_state <= 15
    sm = d.get_clock(ClockType.SM)
    assert 0 < sm.get_current_mhz() <= sm.get_max_mhz()
    record("SM boost max", _outcome(lambda: sm.get_current_mhz(ClockId.CUSTOMER_BOOST_MAX)))
    span = _outcome(lambda: d.get_clock("memory").get_min_max_clock_of_pstate_mhz(pstates[0]))
    record("memory clock range of the first pstate", span)
    if isinstance(span, tuple):
        assert 0 < span[0] <= span[1]
    with pytest.raises(ValueError):
        sm.get_min_max_clock_of_pstate_mhz(16)
    t = d.temperature
    assert 0 < t.get_sensor() < 120
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shutdown = _outcome(lambda: t.get_threshold(TemperatureThresholds.SHUTDOWN))
    record("shutdown threshold", shutdown)
    if isinstance(shutdown, int):
        assert shutdown > t.get_sensor()
    if d.arch >= DeviceArch.ADA:
        deprecations = [w for w in caught if issubclass(w.category, DeprecationWarning)]
        assert deprecations and deprecations[0].filename == __file__  # stacklevel: the caller
    record("temperature margin", _outcome(lambda: t.margin))
    settings = _outcome(lambda: t.get_thermal_settings(ThermalTarget.GPU))
    if not isinstance(settings, str):
        settings = [(s.controller.name, s.target.name, s.current_temp) for s in settings]
    record("thermal sensors", settings)
    record("cooler", _outcome(lambda: (d.cooler.signal_type, d.cooler.target)))
    record("clock event reasons", [r.name for r in d.current_clock_event_reasons])
    assert all(r.name for r in d.supported_clock_event_reasons)
    record("auto boost", _outcome(lambda: d.is_auto_boosted_clocks_enabled))
    record("addressing mode", _outcome(lambda: d.addressing_mode))
    record("c2c", _outcome(lambda: d.is_c2c_enabled))
    record("repair status", _outcome(lambda: d.repair_status.tpc_repair_pending))
    record("display", _outcome(lambda: (d.is_display_connected, d.is_display_active)))
    dyn = _outcome(lambda: d.dynamic_pstates_info)
    record("dynamic pstates", dyn if isinstance(dyn, str) else len(dyn))
    if not isinstance(dyn, str):
        assert len(dyn) == 8 and isinstance(dyn[0].is_present, bool)
        with pytest.raises(IndexError):
            dyn[8]
    cpus = d.get_cpu_affinity()
    assert cpus and all(0 <= c < (os.cpu_count() or 1) for c in cpus)
    record("memory affinity", _outcome(d.get_memory_affinity))
    record("numa node", _outcome(lambda: d.numa_node_id))
    pci = d.pci_info
    assert pci.bus_id.upper() == d.pci_bus_id.upper()
    width = _outcome(lambda: (pci.current_link_width, pci.max_link_width))
    record("PCIe link width (current, max)", width)
    record("inforom image", _outcome(lambda: d.inforom.image_version))
    links = _outcome(d.get_nvlink_count)
    record("nvlink count", links)
    if isinstance(links, int) and links:
        link = d.get_nvlink(0)
        record("nvlink 0", (link.version, link.state))
    record("ecc field", _outcome(lambda: d.get_field_values([FieldId.DEV_ECC_CURRENT])[0].value))


def test_main_reports_gpus(smi_rows):
    env = dict(os.environ)
    root = package_root()  # the cuda_core under test
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-m", "cuda_core"], capture_output=True, text=True, env=env, timeout=120
    ).stdout
    section = out[out.index("NVML:") :]
    version = ".".join(str(int(p)) for p in smi_rows[0][5].split("."))
    assert f"kernel-mode driver {version}" in section
    for row in smi_rows:
        assert row[1] in section


def _outcome(fn):
    try:
        return fn()
    except system.NvmlError as exc:
        return type(exc).__name__
