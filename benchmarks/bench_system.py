# SPDX-License-Identifier: Apache-2.0
"""Per-call overhead of NVML queries through ``cuda_core.system``.

Cases: ``Device.memory_info``, ``Device.temperature.get_sensor()`` and
``get_num_devices()``.  Each is timed through cuda_core and, where importable
in this interpreter, NVIDIA's ``cuda.core.system``, in the same process; the
same NVML call made from a C loop ("C floor", ``cc_bench_nvml_*_loop``, built
into the extension only with ``CUDA_CORE_BUILD_BENCH=1``; otherwise that row
is left out) shows the cost of NVML itself.  Without NVML or a GPU the script says so and exits 0.

Run: ``python benchmarks/bench_system.py``.  Without a GPU, the stand-in NVML
of the tests times cuda_core's own share of each call (the C floor is then
near zero): ``cc -O2 -shared -fPIC -o /tmp/libfake_nvml.so
tests/_scripts/fake_nvml.c`` and run with
``CUDA_CORE_NVML_PATH=/tmp/libfake_nvml.so``.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import c_floor_loops, interleaved, nvidia_core, report, sampler  # noqa: E402

BENCH = "system"


def _cases(system):
    """The cases for a cuda.core.system-like module (cuda_core's or NVIDIA's)."""
    dev = system.Device(index=0)
    temperature = dev.temperature
    return {
        "memory_info": lambda: dev.memory_info,
        "temperature.get_sensor()": temperature.get_sensor,
        "get_num_devices()": system.get_num_devices,
    }


def _cases_floor(system):
    """The same NVML calls from a C loop: no Python at all.

    Empty when the extension was built without those loops.
    """
    from cuda_core.system._nvml import check

    loops = c_floor_loops(
        f"bench_{BENCH}",
        "cc_bench_nvml_memory_loop",
        "cc_bench_nvml_temperature_loop",
        "cc_bench_nvml_count_loop",
    )
    if loops is None:
        return {}
    memory_loop, temperature_loop, count_loop = loops
    handle = system.Device(index=0)._h
    n = 1000
    return {
        "memory_info": (lambda: check(memory_loop(handle, n)), n),
        "temperature.get_sensor()": (lambda: check(temperature_loop(handle, n)), n),
        "get_num_devices()": (lambda: check(count_loop(n)), n),
    }


def main():
    from cuda_core import system

    try:
        count = system.get_num_devices()
        system.Device(index=0)
    except system.NvmlError as exc:
        print(f"bench_system: skipped (NVML not usable: {str(exc).splitlines()[0]})")
        return 0
    if count < 1:
        print("bench_system: skipped (no GPU)")
        return 0
    suites = {"cuda_core": _cases(system)}
    core = nvidia_core("system")
    if core is not None:
        try:
            suites["cuda.core"] = _cases(core.system)
        except Exception as exc:  # noqa: BLE001 - an older cuda.core without NVML support
            print(f"bench_system: cuda.core.system not usable here: {exc}")
    floors = _cases_floor(system)
    for case in suites["cuda_core"]:
        samplers = {label: sampler(cases[case]) for label, cases in suites.items()}
        if case in floors:
            fn, scale = floors[case]
            samplers["C floor"] = sampler(fn, scale=scale)
        report(BENCH, case, interleaved(samplers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
