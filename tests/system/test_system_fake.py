# SPDX-License-Identifier: Apache-2.0
"""cuda_core.system over a stand-in NVML (tests/_scripts/fake_nvml.c), no GPU needed.

The stand-in answers with fixed values and rejects wrong struct versions and
buffer sizes, so these tests check cuda_core's side of each call: version
words, decoding, the two-call protocol, the argument rules, events, a
missing symbol, and fork().  The script runs in its own interpreter.
"""

from __future__ import annotations

import pytest
from _helpers import run_over_stand_in


@pytest.fixture(scope="module")
def fake_result(tmp_path_factory):
    return run_over_stand_in(
        "fake_nvml.c", "system_fake_nvml.py", tmp_path_factory.mktemp("fake_nvml")
    )


def ok(entry):
    assert entry["ok"], entry
    return entry["value"]


def raised(entry, name):
    assert not entry["ok"], entry
    assert entry["type"] == name or name in entry["bases"], entry
    return entry["message"]


def test_versions_and_counts(fake_result):
    r = fake_result
    assert r["initialized_at_import"] is False
    assert ok(r["count_first"]) == 2 and r["initialized_after_count"] is True
    assert ok(r["kmd"]) == [580, 65, 6]
    assert ok(r["nvml_version"]) == [13, 580, 65, 6]
    assert ok(r["umd"]) == [13, 0]
    assert ok(r["branch"]) == "r580_00"
    assert ok(r["count"]) == 2 and ok(r["count_cm"]) == 2
    assert r["inits"] == 1 and r["inits_final"] == 1  # nvmlInit_v2 once per process


def test_device_lookup(fake_result):
    r = fake_result
    assert r["handle_is_int"]
    assert ok(r["uuid"]) == "GPU-00000000-1111-2222-3333-444444444444"
    assert ok(r["uuid_without_prefix"]) == "00000000-1111-2222-3333-444444444444"
    assert r["by_uuid_same_handle"] and r["by_uuid_bytes"]
    raised(r["by_bad_uuid"], "NotFoundError")
    raised(r["by_int_uuid"], "TypeError")
    raised(r["bad_index"], "InvalidArgumentError")
    raised(r["negative_index"], "OverflowError")
    assert raised(r["two_args"], "ValueError").startswith("Handle requires only one of")


def test_properties_decode(fake_result):
    r = fake_result
    assert ok(r["name"]) == "Fake GPU 1 \u00b5"  # UTF-8 decoded
    assert ok(r["index"]) == 1
    assert [ok(a) for a in r["arch"]] == ["HOPPER", "UNKNOWN"]
    assert [ok(b) for b in r["brand"]] == ["Tesla", "Unknown"]
    assert [ok(p) for p in r["persistence"]] == [True, False]
    m = r["memory"]
    assert m == {
        "total": 80 << 30,
        "used": (1 << 30) + 1,
        "reserved": 512 << 20,
        "free": (80 << 30) - (512 << 20) - (1 << 30) - 1,
    }
    assert [ok(t) for t in r["temperature"]] == [40, 41]
    assert [ok(b) for b in r["pci_bus_id"]] == ["00000000:01:00.0", "00000000:02:00.0"]
    assert r["pci_ids"] == [0x10DE, 0x2330, 1, 0]
    assert [ok(p) for p in r["pstate"]] == [0, None]
    assert ok(r["pstates"]) == [0, 2, 8]
    assert ok(r["reasons"]) == ["GPU_IDLE", "SW_POWER_CAP"]
    raised(r["supported_reasons"], "ValueError")


def test_processes_two_call(fake_result):
    r = fake_result
    assert r["processes"] == [[1000, 1 << 20], [1001, 2 << 20]]
    raised(r["process_gi"], "NotSupportedError")  # not a MIG device
    assert ok(r["no_processes"]) == []
    assert ok(r["process_name"]) == "fake-process"
    raised(r["process_name_unknown"], "NotFoundError")


def test_fans(fake_result):
    r = fake_result
    raised(r["num_fans"][0], "NotSupportedError")
    raised(r["get_fan"][0], "NotSupportedError")
    raised(r["get_fan"][1], "ValueError")  # 0 fans: fan 0 is out of range


def test_field_values(fake_result):
    r = fake_result
    assert r["fields_len"] == 3
    assert [ok(f) for f in r["fields"]] == [18, 35.5]
    assert r["field_ids"] == ["DEV_NVLINK_LINK_COUNT", "DEV_ECC_CURRENT", 1700000000000000]
    raised(r["field_error"], "NotSupportedError")
    raised(r["field_validate"], "NotSupportedError")
    assert r["field_empty"] == 0
    raised(r["field_bad_item"], "ValueError")
    raised(r["field_bad_tuple"], "ValueError")
    assert ok(r["nvlink_count"]) == 18


def test_missing_symbol(fake_result):
    r = fake_result
    message = raised(r["serial_missing"], "FunctionNotFoundError")
    assert "nvmlDeviceGetSerial" in message
    assert "RuntimeError" in r["serial_missing"]["bases"] and r["serial_is_runtime_error"]


def test_argument_enums(fake_result):
    r = fake_result
    assert "ClockType" in raised(r["clock_bad_type"], "ValueError")
    assert "AffinityScope" in raised(r["affinity_bad_scope"], "ValueError")


def test_events(fake_result):
    r = fake_result
    raised(r["events_bad_type"], "TypeError")
    raised(r["events_bad_name"], "ValueError")
    raised(r["events_unsupported"], "NotSupportedError")
    assert r["events_repr_open"]
    assert raised(r["event_wait"], "TimeoutError") == "Timeout"
    assert "NvmlError" in r["event_wait"]["bases"]
    assert r["event_timeout_is_builtin"] is False
    raised(r["event_after_close"], "RuntimeError")
    # The failed registration's set and the closed one: both freed, once each.
    assert r["event_sets_freed"] == 2
    assert r["event_sets_freed_after_drop"] == 3 and r["drop_warnings"] == []


def test_fork_child_gets_a_clear_error(fake_result):
    r = fake_result
    child = r["child"]
    assert r["child_exit"] == 0 and child is not None and "crash" not in child, child
    for what in ("count", "count_cm", "device", "memory", "temperature", "new_device"):
        message = raised(child[what], "UninitializedError")
        assert "fork()" in message and "spawn" in message, (what, message)
    assert ok(r["parent_after_fork"]) == "Fake GPU 0 \u00b5"


def test_hot_reads_raise_nvml_errors(fake_result):
    r = fake_result
    expected = {15: "GpuIsLostError", 999: "UnknownError", 3: "NotSupportedError"}
    for status, name in expected.items():
        for what, entry in r[f"hot_fail_{status}"].items():
            raised(entry, name)
            assert entry["type"] == name, (status, what, entry)


def test_hot_reads_values(fake_result):
    r = fake_result
    assert [ok(t) for t in r["temperature_cold"]] == [-41, -40]
    assert r["temperature_same_object"] is True
    # used is 1 GiB + the device's index: each MemoryInfo kept its own read.
    assert r["memory_is_snapshot"] == [1 << 30, (1 << 30) + 1, True]
