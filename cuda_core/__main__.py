# SPDX-License-Identifier: Apache-2.0
"""``python -m cuda_core``: report the package, the libraries and the GPUs.

The report itself always exits 0; what could not be found is said in words.
"""

from __future__ import annotations

import platform
import sys
from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check
from cuda_core._loader import (
    driver_version,
    ensure_loaded,
    format_cuda_version,
    library_path,
    load_driver,
    nvjitlink_version,
    nvrtc_version,
    nvvm_version,
)
from cuda_core._version import __version__
from cuda_core.system import Device as SystemDevice
from cuda_core.system import LibraryNotFoundError as NvmlLibraryNotFoundError
from cuda_core.system import NvmlError, get_kernel_mode_driver_version

if TYPE_CHECKING:
    from typing import Callable, Iterable, TypeVar

    _T = TypeVar("_T")


def _fmt_version(v: Iterable[object]) -> str:
    return ".".join(str(x) for x in v)


def _library_lines() -> list[str]:
    lines: list[str] = []
    probes = (
        ("NVRTC", "nvrtc", nvrtc_version),
        ("nvJitLink", "nvjitlink", nvjitlink_version),
        ("libNVVM", "nvvm", nvvm_version),
    )
    for label, name, version in probes:
        try:
            ensure_loaded(name)
            lines.append(f"  {label:<10} {_fmt_version(version())}  {library_path(name)}")
        except CUDAError as exc:
            # All of it: the later lines say what was searched and how to fix it.
            first, *rest = str(exc).splitlines() or [""]
            lines.append(f"  {label:<10} not found: {first}")
            lines.extend(f"  {'':<10} {line}" for line in rest)
    return lines


def _gpu_lines() -> tuple[list[str], str | None]:
    try:
        load_driver()
    except CUDAError as exc:
        return [f"  no CUDA driver found: {exc}"], None
    v = format_cuda_version(driver_version())
    head = f"  driver     CUDA {v}  {library_path('driver')}"
    status = lib.cuInit(0)
    if status:
        try:
            check(status)
        except CUDAError as exc:
            return [head, f"  no usable GPU: {exc}"], v
    count = ffi.new("int *")
    check(lib.cuDeviceGetCount(count))
    lines = [head, f"  GPUs       {count[0]}"]
    name = ffi.new("char[256]")
    attr = ffi.new("int *")
    total = ffi.new("size_t *")
    for i in range(count[0]):
        check(lib.cuDeviceGetName(name, 256, i))
        check(lib.cuDeviceGetAttribute(attr, lib.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, i))
        major = attr[0]
        check(lib.cuDeviceGetAttribute(attr, lib.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, i))
        minor = attr[0]
        check(lib.cuDeviceTotalMem(total, i))
        lines.append(
            f"  [{i}] {ffi.string(name).decode()}  compute capability {major}.{minor}  "
            f"{total[0] / 2**30:.1f} GiB"
        )
    return lines, v


def _nvml_field(fn: Callable[[], _T]) -> _T | str:
    try:
        return fn()
    except NvmlError:
        return "n/a"


def _gpu_row(dev: SystemDevice) -> list[str]:
    def memory() -> str:
        m = dev.memory_info
        return f"{m.used / 2**20:.0f} / {m.total / 2**20:.0f} MiB"

    def utilization() -> str:
        return f"{dev.utilization.gpu}%"

    def persistence() -> str:
        return "on" if dev.is_persistence_mode_enabled else "off"

    return [
        str(_nvml_field(lambda: dev.index)),
        _nvml_field(lambda: dev.name),
        _nvml_field(memory),
        _nvml_field(lambda: f"{dev.temperature.get_sensor()} C"),
        _nvml_field(utilization),
        _nvml_field(persistence),
    ]


def _nvml_lines() -> list[str]:
    """The NVML section: driver version and one table row per GPU."""
    try:
        version = get_kernel_mode_driver_version()
    except NvmlLibraryNotFoundError:
        return ["  NVML not found (libnvidia-ml.so.1 comes with the NVIDIA driver)"]
    except NvmlError as exc:
        return [f"  NVML not usable: {str(exc).splitlines()[0]}"]
    lines = [f"  kernel-mode driver {_fmt_version(version)}"]
    try:
        rows = [_gpu_row(dev) for dev in SystemDevice.get_all_devices()]
    except NvmlError as exc:
        return lines + [f"  GPUs could not be listed: {exc}"]
    header = ["#", "name", "memory used / total", "temperature", "utilization", "persistence"]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return lines


def report() -> str:
    """Return the diagnosis report as a string."""
    impl = platform.python_implementation()
    out = [
        f"cuda_core {__version__}",
        f"Python     {impl} {platform.python_version()} ({sys.executable})",
        "Libraries:",
    ]
    out.extend(_library_lines())
    out.append("CUDA driver and GPUs:")
    gpu, _ = _gpu_lines()
    out.extend(gpu)
    out.append("NVML:")
    out.extend(_nvml_lines())
    return "\n".join(out)


def main() -> int:
    """Print the report; exit status 0 whatever was (not) found."""
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
