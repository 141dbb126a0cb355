# SPDX-License-Identifier: Apache-2.0
"""cuda_core.system without NVML: import, the loader's error, the status ->
exception mapping, pickling, the enumerations and argument checks.

Tests that depend on whether NVML is loaded run in a fresh interpreter, so
that they hold on a GPU machine (where an earlier test may have loaded NVML)
as well as on a CPU-only one.
"""

from __future__ import annotations

import enum
import json
import os
import pickle
import subprocess
import sys

import pytest
from _scripts.hardening_util import package_root

from cuda_core import system
from cuda_core.system import exceptions, typing
from cuda_core.system._enums import NVML_VALUES, bits_to_members, from_nvml, to_nvml

# Subprocesses import the cuda_core under test (the checkout or an installed wheel).
ROOT = package_root()

STATUS_CLASSES = {
    1: "UninitializedError",
    2: "InvalidArgumentError",
    3: "NotSupportedError",
    4: "NoPermissionError",
    5: "AlreadyInitializedError",
    6: "NotFoundError",
    7: "InsufficientSizeError",
    8: "InsufficientPowerError",
    9: "DriverNotLoadedError",
    10: "TimeoutError",
    11: "IrqIssueError",
    12: "LibraryNotFoundError",
    13: "FunctionNotFoundError",
    14: "CorruptedInforomError",
    15: "GpuIsLostError",
    16: "ResetRequiredError",
    17: "OperatingSystemError",
    18: "LibRmVersionMismatchError",
    19: "InUseError",
    20: "MemoryError",
    21: "NoDataError",
    22: "VgpuEccNotSupportedError",
    23: "InsufficientResourcesError",
    24: "FreqNotSupportedError",
    25: "ArgumentVersionMismatchError",
    26: "DeprecatedError",
    27: "NotReadyError",
    28: "GpuNotFoundError",
    29: "InvalidStateError",
    30: "ResetTypeNotSupportedError",
    999: "UnknownError",
}


def run_python(code, **env):
    """Run ``code`` in a fresh interpreter; return its decoded last stdout line."""
    full_env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# --- import and loading ------------------------------------------------------


def test_import_loads_no_nvml():
    out = run_python(
        "import json, cuda_core, cuda_core.system as s\n"
        "from cuda_core._cuda_ffi import lib\n"
        "from cuda_core.system import _nvml\n"
        "print(json.dumps([lib.cc_library_state(lib.CC_LIB_NVML), _nvml.is_initialized(),"
        " s.CUDA_BINDINGS_NVML_IS_COMPATIBLE]))"
    )
    assert json.loads(out.splitlines()[-1]) == [0, False, True]


def test_missing_override_raises_library_not_found(tmp_path):
    missing = str(tmp_path / "no-such-libnvidia-ml.so.1")
    out = run_python(
        "import json, cuda_core.system as s\n"
        "res = []\n"
        "for fn in (s.get_kernel_mode_driver_version, lambda: s.Device(index=0),"
        " s.get_driver_branch, lambda: s.register_events('bind')):\n"
        "    try:\n"
        "        fn(); res.append(None)\n"
        "    except s.NvmlError as e:\n"
        "        res.append([type(e).__name__, e.status, str(e),"
        " isinstance(e, s.exceptions.LibraryNotFoundError)])\n"
        "print(json.dumps(res))",
        CUDA_CORE_NVML_PATH=missing,
    )
    results = json.loads(out.splitlines()[-1])
    for res in results:
        assert res is not None
        name, status, message, is_lnf = res
        assert (name, status, is_lnf) == ("LibraryNotFoundError", 12, True)
        assert "CUDA_CORE_NVML_PATH" in message and missing in message


def test_unloadable_override_names_the_file(tmp_path):
    bogus = tmp_path / "libnvidia-ml.so.1"
    bogus.write_text("not a shared library")
    out = run_python(
        "import cuda_core.system as s\n"
        "try:\n"
        "    s.get_nvml_version()\n"
        "except s.LibraryNotFoundError as e:\n"
        "    print(str(e).replace(chr(10), ' '))",
        CUDA_CORE_NVML_PATH=str(bogus),
    )
    last = out.splitlines()[-1]
    assert str(bogus) in last and "could not be loaded" in last


def test_main_says_so_without_nvml(tmp_path):
    env = dict(os.environ, CUDA_CORE_NVML_PATH=str(tmp_path / "missing.so"))
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "cuda_core"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    section = lines[lines.index("NVML:") + 1 :]
    assert len(section) == 1 and section[0].strip().startswith("NVML not found"), section


# --- exceptions ---------------------------------------------------------------


def test_exceptions_all_is_the_32_classes_in_order():
    assert exceptions.__all__ == sorted(exceptions.__all__)
    assert len(exceptions.__all__) == 32
    assert set(exceptions.__all__) == set(STATUS_CLASSES.values()) | {"NvmlError"}
    for name in exceptions.__all__:
        assert getattr(system, name) is getattr(exceptions, name)
        assert name in system.__all__


@pytest.mark.parametrize("status", sorted(STATUS_CLASSES))
def test_every_status_maps_to_its_class(status):
    with pytest.raises(exceptions.NvmlError) as info:
        system._nvml.check(status)
    exc = info.value
    assert type(exc).__name__ == STATUS_CLASSES[status]
    assert type(exc).__bases__ == (exceptions.NvmlError,)
    assert exc.status == status
    assert exc.args == (str(exc),) and str(exc)
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is type(exc) and clone.status == status and str(clone) == str(exc)


def test_success_and_unknown_statuses():
    assert system._nvml.check(0) is None
    with pytest.raises(exceptions.NvmlError) as info:
        system._nvml.check(12345)
    assert type(info.value) is exceptions.NvmlError and info.value.status == 12345


def test_builtin_names_are_not_builtins():
    assert not issubclass(system.TimeoutError, TimeoutError)
    assert not issubclass(system.MemoryError, MemoryError)
    assert system.TimeoutError(10).status == 10


def test_messages_match_nvml_strings():
    # NVML's own strings when it is loaded, the same text from the fallback table otherwise.
    assert str(exceptions.NotSupportedError(3)) == "Not Supported"
    assert str(exceptions.TimeoutError(10)) == "Timeout"
    assert str(exceptions.UnknownError(999)) == "Unknown Error"


def test_library_not_found_keeps_its_message_through_pickle():
    exc = exceptions.LibraryNotFoundError(12, "searched: the system loader")
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is exceptions.LibraryNotFoundError
    assert clone.status == 12 and str(clone) == "searched: the system loader"


# --- enumerations ---------------------------------------------------------------

EXPECTED_NVML = {
    "AddressingMode": {"HMM": 1, "ATS": 2},
    "AffinityScope": {"NODE": 0, "SOCKET": 1},
    "ClockId": {"CURRENT": 0, "CUSTOMER_BOOST_MAX": 3},
    "ClocksEventReasons": {
        "NONE": 0,
        "GPU_IDLE": 0x1,
        "APPLICATIONS_CLOCKS_SETTING": 0x2,
        "SW_POWER_CAP": 0x4,
        "HW_SLOWDOWN": 0x8,
        "SYNC_BOOST": 0x10,
        "SW_THERMAL_SLOWDOWN": 0x20,
        "HW_THERMAL_SLOWDOWN": 0x40,
        "HW_POWER_BRAKE_SLOWDOWN": 0x80,
        "DISPLAY_CLOCK_SETTING": 0x100,
    },
    "ClockType": {"GRAPHICS": 0, "SM": 1, "MEMORY": 2, "VIDEO": 3},
    "CoolerControl": {"TOGGLE": 1, "VARIABLE": 2},
    "CoolerTarget": {"NONE": 1, "GPU": 2, "MEMORY": 4, "POWER_SUPPLY": 8},
    "EventType": {
        "NONE": 0,
        "SINGLE_BIT_ECC_ERROR": 0x1,
        "DOUBLE_BIT_ECC_ERROR": 0x2,
        "PSTATE": 0x4,
        "XID_CRITICAL_ERROR": 0x8,
        "CLOCK": 0x10,
        "POWER_SOURCE_CHANGE": 0x80,
        "MIG_CONFIG_CHANGE": 0x100,
        "SINGLE_BIT_ECC_ERROR_STORM": 0x200,
        "DRAM_RETIREMENT_EVENT": 0x400,
        "DRAM_RETIREMENT_FAILURE": 0x800,
        "NON_FATAL_POISON_ERROR": 0x1000,
        "FATAL_POISON_ERROR": 0x2000,
        "GPU_UNAVAILABLE_ERROR": 0x4000,
        "GPU_RECOVERY_ACTION": 0x8000,
    },
    "FanControlPolicy": {"TEMPERATURE_CONTROLLED": 0, "MANUAL": 1},
    "GpuP2PCapsIndex": {
        "READ": 0,
        "WRITE": 1,
        "NVLINK": 2,
        "ATOMICS": 3,
        "PCI": 4,
        "PROP": 4,
        "UNKNOWN": 5,
    },
    "GpuP2PStatus": {
        "OK": 0,
        "CHIPSET_NOT_SUPPORTED": 1,
        "GPU_NOT_SUPPORTED": 2,
        "IOH_TOPOLOGY_NOT_SUPPORTED": 3,
        "DISABLED_BY_REGKEY": 4,
        "NOT_SUPPORTED": 5,
        "UNKNOWN": 6,
    },
    "GpuTopologyLevel": {
        "INTERNAL": 0,
        "SINGLE": 10,
        "MULTIPLE": 20,
        "HOSTBRIDGE": 30,
        "NODE": 40,
        "SYSTEM": 50,
    },
    "InforomObject": {"OEM": 0, "ECC": 1, "POWER": 2, "DEN": 3},
    "SystemEventType": {"UNBIND": 1, "BIND": 2},
    "TemperatureThresholds": {
        "SHUTDOWN": 0,
        "SLOWDOWN": 1,
        "MEM_MAX": 2,
        "GPU_MAX": 3,
        "ACOUSTIC_MIN": 4,
        "ACOUSTIC_CURR": 5,
        "ACOUSTIC_MAX": 6,
        "GPS_CURR": 7,
    },
    "ThermalController": {
        **{
            name: i
            for i, name in enumerate(
                "GPU_INTERNAL ADM1032 ADT7461 MAX6649 MAX1617 LM99 LM89 LM64 G781 ADT7473 "
                "SBMAX6649 VBIOSEVT OS NVSYSCON_CANOAS NVSYSCON_E551 MAX6649R ADT7473S".split(),
                1,
            )
        },
        "UNKNOWN": -1,
    },
    "ThermalTarget": {
        "NONE": 0,
        "GPU": 1,
        "MEMORY": 2,
        "POWER_SUPPLY": 4,
        "BOARD": 8,
        "VCD_BOARD": 9,
        "VCD_INLET": 10,
        "VCD_OUTLET": 11,
        "ALL": 15,
    },
}

UNUSUAL_VALUES = {
    ("GpuP2PStatus", "CHIPSET_NOT_SUPPORTED"): "chipset not supported",
    ("GpuP2PStatus", "GPU_NOT_SUPPORTED"): "GPU not supported",
    ("GpuP2PStatus", "IOH_TOPOLOGY_NOT_SUPPORTED"): "IOH topology not supported",
    ("GpuP2PStatus", "DISABLED_BY_REGKEY"): "disabled by regkey",
    ("GpuP2PStatus", "NOT_SUPPORTED"): "not supported",
}


def test_typing_all():
    assert len(typing.__all__) == 19
    assert set(typing.__all__) == set(EXPECTED_NVML) | {"DeviceArch", "FieldId"}


@pytest.mark.parametrize("name", sorted(EXPECTED_NVML))
def test_string_enum_members_values_and_nvml_numbers(name):
    cls = getattr(typing, name)
    expected = EXPECTED_NVML[name]
    assert [m.name for m in cls] == list(expected)
    for member in cls:
        value = UNUSUAL_VALUES.get((name, member.name), member.name.lower())
        assert member.value == value and member == value and hash(member) == hash(value)
        assert str(member) == value and f"{member}" == value
        assert to_nvml(cls, member) == expected[member.name]
        assert to_nvml(cls, value) == expected[member.name]
    assert NVML_VALUES[cls] == {cls[n]: v for n, v in expected.items()}
    with pytest.raises(ValueError, match="not a valid"):
        to_nvml(cls, "no such member")
    first = next(iter(expected.values()))
    with pytest.raises(ValueError):
        to_nvml(cls, first)  # NVML's integers are not accepted


def test_decoding_helpers():
    C = typing.ClocksEventReasons
    assert bits_to_members(C, 0) == []
    assert bits_to_members(C, 0x1 | 0x20 | 0x100) == [
        C.GPU_IDLE,
        C.SW_THERMAL_SLOWDOWN,
        C.DISPLAY_CLOCK_SETTING,
    ]
    with pytest.raises(ValueError):
        bits_to_members(C, 0x200)
    T = typing.CoolerTarget
    assert bits_to_members(T, 0xE) == [T.GPU, T.MEMORY, T.POWER_SUPPLY]
    assert from_nvml(typing.GpuP2PCapsIndex, 4) is typing.GpuP2PCapsIndex.PCI
    assert (
        from_nvml(typing.ThermalTarget, -1, typing.ThermalTarget.NONE) is typing.ThermalTarget.NONE
    )
    with pytest.raises(KeyError):
        from_nvml(typing.GpuTopologyLevel, 35)


def test_device_arch():
    A = typing.DeviceArch
    assert issubclass(A, enum.IntEnum)
    assert {m.name: m.value for m in A} == {
        "KEPLER": 2,
        "MAXWELL": 3,
        "PASCAL": 4,
        "VOLTA": 5,
        "TURING": 6,
        "AMPERE": 7,
        "ADA": 8,
        "HOPPER": 9,
        "BLACKWELL": 10,
        "UNKNOWN": 0xFFFFFFFF,
    }
    assert A.HOPPER >= A.ADA > A.AMPERE


def test_field_ids():
    F = typing.FieldId
    assert issubclass(F, enum.IntEnum)
    assert [m.value for m in F] == list(range(1, 290))  # aliases hidden, MAX last
    assert F.DEV_ECC_CURRENT == 1 and F.DEV_NVLINK_LINK_COUNT == 91
    assert F.DEV_TEMPERATURE_SHUTDOWN_TLIMIT == 193 and F.DEV_TEMPERATURE_GPU_MAX_TLIMIT == 196
    assert F.PWR_SMOOTHING_ADMIN_OVERRIDE_PRIMARY_FLOOR_ACT_OFFSET == 288 and F.MAX == 289
    assert F.DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP == 74 == F.DEV_PERF_POLICY_POWER
    assert F.DEV_CLOCKS_EVENT_REASON_SYNC_BOOST == 76
    assert F(91) is F.DEV_NVLINK_LINK_COUNT
    with pytest.raises(ValueError):
        F(5000)


# --- the package face and argument checks ------------------------------------


def test_package_names():
    expected = {
        "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
        "get_kernel_mode_driver_version",
        "get_num_devices",
        "get_process_name",
        "get_user_mode_driver_version",
        "get_nvml_version",
        "Device",
        "get_p2p_status",
        "get_topology_common_ancestor",
        "NvlinkInfo",
        "register_events",
    }
    assert set(system.__all__) == expected | set(exceptions.__all__)
    for name in system.__all__:
        assert hasattr(system, name), name
    assert callable(system.get_driver_branch) and "get_driver_branch" not in system.__all__
    assert system.CUDA_BINDINGS_NVML_IS_COMPATIBLE is True
    import cuda_core

    assert cuda_core.system is system
    assert callable(cuda_core.Device.to_system_device)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "Handle requires either a device `index`, `uuid`, or `pci_bus_id`."),
        ({"index": 0, "uuid": "GPU-x"}, "Handle requires only one of"),
        ({"uuid": "GPU-x", "pci_bus_id": "0:1:0.0"}, "Handle requires only one of"),
    ],
)
def test_device_argument_count_checked_before_nvml(kwargs, message):
    # No NVML is needed to reject these (the check comes before loading it).
    with pytest.raises(ValueError, match=message.replace("`", ".")):
        system.Device(**kwargs)
    with pytest.raises(TypeError):
        system.Device(0)  # keyword-only


def test_nvlink_max_links_is_deprecated():
    with pytest.warns(DeprecationWarning):
        assert system.NvlinkInfo.max_links == 18


def test_helper_classes_report_upstreams_module():
    from cuda_core.system import _device_info, _device_sensors

    for mod in (_device_info, _device_sensors):
        for name in mod.__all__:
            assert getattr(mod, name).__module__ == "cuda_core.system._device"
    assert system.Device.__module__ == "cuda_core.system._device"


def test_memory_info_snapshots_read_their_own_struct_fields():
    """MemoryInfo copies nvmlMemory_v2_t's four numbers; BAR1MemoryInfo the
    three of nvmlBAR1Memory_t (whose fields are named bar1Total/Free/Used)."""
    from cuda_core._cuda_ffi import ffi
    from cuda_core.system._device_info import BAR1MemoryInfo, MemoryInfo

    bar1 = ffi.new("nvmlBAR1Memory_t *")
    bar1.bar1Total, bar1.bar1Free, bar1.bar1Used = 256 << 20, 200 << 20, 56 << 20
    info = BAR1MemoryInfo(bar1)
    bar1.bar1Total = 0  # a snapshot: later changes to the struct do not show
    assert (info.total, info.free, info.used) == (256 << 20, 200 << 20, 56 << 20)
    with pytest.raises(AttributeError, match="reserved"):
        _ = info.reserved
    mem = ffi.new("nvmlMemory_v2_t *")
    mem.total, mem.reserved, mem.free, mem.used = 80 << 30, 1 << 30, 70 << 30, 9 << 30
    snap = MemoryInfo(mem)
    assert (snap.total, snap.reserved, snap.free, snap.used) == (
        80 << 30,
        1 << 30,
        70 << 30,
        9 << 30,
    )
