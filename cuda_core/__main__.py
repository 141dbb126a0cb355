# SPDX-License-Identifier: Apache-2.0
"""``python -m cuda_core``: report the package, the libraries and the GPUs.

The report itself always exits 0; what could not be found is said in words.
``--check`` exits 1 when the driver, a GPU or NVRTC is not usable, for
scripts and CI; ``--version`` prints the version, ``--help`` the usage.
"""

from __future__ import annotations

import argparse
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
from cuda_core._version import UPSTREAM_VERSION, __version__
from cuda_core.system import Device as SystemDevice
from cuda_core.system import LibraryNotFoundError as NvmlLibraryNotFoundError
from cuda_core.system import NvmlError, get_kernel_mode_driver_version

if TYPE_CHECKING:
    from typing import Callable, Iterable, TypeVar

    _T = TypeVar("_T")


def _fmt_version(v: Iterable[object]) -> str:
    return ".".join(str(x) for x in v)


def _library_lines(missing: list[str] | None = None) -> list[str]:
    """The libraries section; the labels of those not found go into ``missing``."""
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
            if missing is not None:
                missing.append(label)
            first, *rest = str(exc).splitlines() or [""]
            lines.append(f"  {label:<10} not found: {first}")
            lines.extend(f"  {'':<10} {line}" for line in rest)
    return lines


def _gpu_lines(problems: list[str] | None = None) -> tuple[list[str], str | None]:
    """The driver section and the driver's CUDA version (None without a driver).

    What makes the GPUs unusable goes into ``problems``.
    """
    problems = [] if problems is None else problems
    try:
        load_driver()
    except CUDAError as exc:
        problems.append("no CUDA driver")
        return [f"  no CUDA driver found: {exc}"], None
    v = format_cuda_version(driver_version())
    head = f"  driver     CUDA {v}  {library_path('driver')}"
    status = lib.cuInit(0)
    if status:
        try:
            check(status)
        except CUDAError as exc:
            problems.append(f"no usable GPU ({str(exc).splitlines()[0]})")
            return [head, f"  no usable GPU: {exc}"], v
    count = ffi.new("int *")
    check(lib.cuDeviceGetCount(count))
    lines = [head, f"  GPUs       {count[0]}"]
    if not count[0]:
        problems.append("no GPU")
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
    return _report([])


def _report(problems: list[str]) -> str:
    """The report; what ``--check`` fails on goes into ``problems``."""
    impl = platform.python_implementation()
    out = [
        f"cuda_core {__version__} (the API of NVIDIA cuda.core {UPSTREAM_VERSION})",
        f"Python     {impl} {platform.python_version()} ({sys.executable})",
        "Libraries:",
    ]
    missing: list[str] = []
    out.extend(_library_lines(missing))
    if "NVRTC" in missing:
        problems.append("NVRTC not found")
    out.append("CUDA driver and GPUs:")
    gpu, _ = _gpu_lines(problems)
    out.extend(gpu)
    out.append("NVML:")
    out.extend(_nvml_lines())
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="python -m cuda_core",
        description=(
            "Report cuda_core's version, the CUDA libraries it finds (NVRTC, nvJitLink, "
            "libNVVM: where, which version, or what was searched and how to fix it), the "
            "CUDA driver, the GPUs, and what NVML says about them."
        ),
        epilog=(
            "Without --check the exit status is 0 whatever was found. Libraries: "
            'pip install "cuda-core-cffi[cu13]" (CUDA 13 driver) or "[cu12]" (CUDA 12).'
        ),
    )


def main(argv: list[str] | None = None) -> int:
    """Print the report; exit status 0 whatever was found, unless ``--check``."""
    parser = _parser()
    parser.add_argument(
        "--version",
        action="version",
        version=f"cuda_core {__version__} (the API of NVIDIA cuda.core {UPSTREAM_VERSION})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help=(
            "after the report, exit 1 unless the CUDA driver loads, at least one GPU is "
            "usable and NVRTC is found (for scripts and CI)"
        ),
    )
    args = parser.parse_args(argv)
    problems: list[str] = []
    print(_report(problems))
    if not args.check:
        return 0
    if problems:
        print(f"check failed: {'; '.join(problems)}")
        return 1
    print("check passed: CUDA driver, GPU and NVRTC usable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
