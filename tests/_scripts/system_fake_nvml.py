# SPDX-License-Identifier: Apache-2.0
"""cuda_core.system over a stand-in NVML, without a GPU (run by test_system_fake.py).

Usage: ``system_fake_nvml.py LIBRARY``, where LIBRARY is ``fake_nvml.c``
built as a shared library.  The script points ``CUDA_CORE_NVML_PATH`` at it,
exercises the API, forks once, and prints ``RESULT {...}``: what each call
returned (or raised), for the test to judge.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import warnings

from hardening_util import emit, outcome

os.environ["CUDA_CORE_NVML_PATH"] = sys.argv[1]

from cuda_core import system  # noqa: E402
from cuda_core.system import _nvml  # noqa: E402


def value(fn):
    """outcome(fn) with the plain value (JSON-friendly) on success."""
    out = outcome(lambda: _plain(fn()))
    if out["ok"]:
        out["value"] = json.loads(json.dumps(_plain(fn())))
    return out


def _plain(x):
    if isinstance(x, (list, tuple)):
        return [_plain(i) for i in x]
    if isinstance(x, str):
        return str(x)
    return x


def _memory_snapshot(device):
    """Two reads from one thread (one reused struct) keep their own numbers."""
    first = device.memory_info
    other = system.Device(index=1).memory_info
    return [first.used, other.used, first.total == other.total]


def main():
    fake = ctypes.CDLL(sys.argv[1])
    r = {}
    r["initialized_at_import"] = _nvml.is_initialized()
    # The first NVML call of the process: the count reads NVML before any
    # initialize(), so this checks that its way back through initialize() works.
    r["count_first"] = value(system.get_num_devices)
    r["initialized_after_count"] = _nvml.is_initialized()
    r["kmd"] = value(system.get_kernel_mode_driver_version)
    r["nvml_version"] = value(system.get_nvml_version)
    r["umd"] = value(system.get_user_mode_driver_version)
    r["branch"] = value(system.get_driver_branch)
    r["count"] = value(system.get_num_devices)
    r["count_cm"] = value(system.Device.get_device_count)
    r["inits"] = ctypes.c_int.in_dll(fake, "fake_nvml_inits").value
    d0 = system.Device(index=0)
    d1 = system.Device(index=1)
    r["handle_is_int"] = isinstance(d0._handle, int) and d0._handle != d1._handle
    r["uuid"] = value(lambda: d0.uuid)
    r["uuid_without_prefix"] = value(lambda: d0.uuid_without_prefix)
    r["by_uuid_same_handle"] = system.Device(uuid=d1.uuid)._handle == d1._handle
    r["by_uuid_bytes"] = system.Device(uuid=d1.uuid.encode())._handle == d1._handle
    r["by_bad_uuid"] = outcome(lambda: system.Device(uuid="GPU-nope"))
    r["by_int_uuid"] = outcome(lambda: system.Device(uuid=5))
    r["bad_index"] = outcome(lambda: system.Device(index=7))
    r["negative_index"] = outcome(lambda: system.Device(index=-1))
    r["two_args"] = outcome(lambda: system.Device(index=0, uuid=d0.uuid))
    r["name"] = value(lambda: d1.name)
    r["index"] = value(lambda: d1.index)
    r["arch"] = [value(lambda: d0.arch.name), value(lambda: d1.arch.name)]
    r["brand"] = [value(lambda: d0.brand), value(lambda: d1.brand)]
    r["persistence"] = [value(lambda d=d: d.is_persistence_mode_enabled) for d in (d0, d1)]
    m = d1.memory_info
    r["memory"] = {"total": m.total, "used": m.used, "free": m.free, "reserved": m.reserved}
    r["temperature"] = [value(d.temperature.get_sensor) for d in (d0, d1)]
    r["temperature_same_object"] = d0.temperature is d0.temperature
    # The hot reads (count, memory, temperature) when NVML fails, and below 0 °C.
    fail = ctypes.c_int.in_dll(fake, "fake_nvml_fail_status")
    for status in (15, 999, 3):
        fail.value = status
        r[f"hot_fail_{status}"] = {
            "count": outcome(system.get_num_devices),
            "count_cm": outcome(system.Device.get_device_count),
            "memory": outcome(lambda: d0.memory_info),
            "temperature": outcome(d0.temperature.get_sensor),
        }
    fail.value = 0
    cold = ctypes.c_int.in_dll(fake, "fake_nvml_temperature")
    cold.value = -41
    r["temperature_cold"] = [value(d.temperature.get_sensor) for d in (d0, d1)]
    cold.value = 40
    r["memory_is_snapshot"] = _memory_snapshot(d0)
    r["pci_bus_id"] = [value(lambda d=d: d.pci_bus_id) for d in (d0, d1)]
    pci = d0.pci_info
    r["pci_ids"] = [pci.vendor_id, pci.device_id, pci.bus, pci.domain]
    r["pstate"] = [value(lambda d=d: d.performance_state) for d in (d0, d1)]
    r["pstates"] = value(lambda: d0.supported_pstates)
    r["reasons"] = value(lambda: [m.name for m in d0.current_clock_event_reasons])
    r["supported_reasons"] = outcome(lambda: d0.supported_clock_event_reasons)
    procs = d0.compute_running_processes
    r["processes"] = [[p.pid, p.used_gpu_memory] for p in procs]
    r["process_gi"] = outcome(lambda: procs[0].gpu_instance_id)
    r["no_processes"] = value(lambda: d1.compute_running_processes)
    r["process_name"] = value(lambda: system.get_process_name(1000))
    r["process_name_unknown"] = outcome(lambda: system.get_process_name(4242))
    r["num_fans"] = [outcome(lambda d=d: d.num_fans) for d in (d0, d1)]
    r["get_fan"] = [outcome(lambda d=d: d.get_fan(0)) for d in (d0, d1)]
    fv = d0.get_field_values(
        [
            system.typing.FieldId.DEV_NVLINK_LINK_COUNT,
            (82, 0),
            system.typing.FieldId.DEV_ECC_CURRENT,
        ]
    )
    r["fields_len"] = len(fv)
    r["fields"] = [value(lambda: fv[0].value), value(lambda: fv[1].value)]
    r["field_ids"] = [fv[0].field_id.name, fv[-1].field_id.name, fv[1].timestamp]
    r["field_error"] = outcome(lambda: fv[2].value)
    r["field_validate"] = outcome(fv.validate)
    r["field_empty"] = len(d0.get_field_values([]))
    r["field_bad_item"] = outcome(lambda: d0.get_field_values(["x"]))
    r["field_bad_tuple"] = outcome(lambda: d0.get_field_values([(1, 2, 3)]))
    r["nvlink_count"] = value(d0.get_nvlink_count)
    r["serial_missing"] = outcome(lambda: d0.serial)
    r["serial_is_runtime_error"] = False
    try:
        _ = d0.serial
    except RuntimeError as exc:
        r["serial_is_runtime_error"] = isinstance(exc, system.FunctionNotFoundError)
    r["clock_bad_type"] = outcome(lambda: d0.get_clock("warp"))
    r["affinity_bad_scope"] = outcome(lambda: d0.get_cpu_affinity("rack"))
    # Events: the stand-in supports only PSTATE, only on GPU 0, and times out.
    r["events_bad_type"] = outcome(lambda: d0.register_events(("pstate",)))
    r["events_bad_name"] = outcome(lambda: d0.register_events(["nope"]))
    r["events_unsupported"] = outcome(lambda: d1.register_events("clock"))
    with d0.register_events([system.typing.EventType.PSTATE]) as events:
        r["events_repr_open"] = "handle=" in repr(events)
        r["event_wait"] = outcome(lambda: events.wait(timeout_ms=50))
        r["event_timeout_is_builtin"] = False
        try:
            events.wait(timeout_ms=1)
        except Exception as exc:  # noqa: BLE001 - the class is what is reported
            r["event_timeout_is_builtin"] = isinstance(exc, TimeoutError)
    events.close()
    r["event_after_close"] = outcome(lambda: events.wait(timeout_ms=1))
    r["event_sets_freed"] = ctypes.c_int.in_dll(fake, "fake_nvml_event_sets_freed").value
    # Dropped open: the finalizer frees the set (one more free).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dropped = d0.register_events("pstate")
        del dropped
        import gc

        gc.collect()
    r["event_sets_freed_after_drop"] = ctypes.c_int.in_dll(fake, "fake_nvml_event_sets_freed").value
    r["drop_warnings"] = [str(w.message) for w in caught]
    # fork(): the child refuses NVML with a clear error, the parent goes on.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            child = {
                "count": outcome(system.get_num_devices),
                "count_cm": outcome(system.Device.get_device_count),
                "device": outcome(lambda: d0.name),
                "memory": outcome(lambda: d0.memory_info),
                "temperature": outcome(d0.temperature.get_sensor),
                "new_device": outcome(lambda: system.Device(index=0)),
            }
        except BaseException as exc:  # noqa: BLE001
            child = {"crash": repr(exc)}
        os.write(write, json.dumps(child).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    r["child"] = json.loads(b"".join(chunks) or b"null")
    r["child_exit"] = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    r["parent_after_fork"] = value(lambda: d0.name)
    r["inits_final"] = ctypes.c_int.in_dll(fake, "fake_nvml_inits").value
    emit(r)


if __name__ == "__main__":
    main()
