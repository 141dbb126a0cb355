# SPDX-License-Identifier: Apache-2.0
"""System-wide NVML queries: driver and NVML versions, GPU count, process names."""

from __future__ import annotations

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError
from cuda_core._errors import check as check_cuda
from cuda_core._loader import driver_version, load_driver
from cuda_core.system import _nvml
from cuda_core.system.exceptions import LibraryNotFoundError, NvmlError

__all__ = [
    "CUDA_BINDINGS_NVML_IS_COMPATIBLE",
    "get_driver_branch",
    "get_kernel_mode_driver_version",
    "get_num_devices",
    "get_nvml_version",
    "get_process_name",
    "get_user_mode_driver_version",
]

#: True: the NVML layer is part of cuda_core, so every NVML feature is there
#: (NVML itself is loaded at the first call, not at import).
CUDA_BINDINGS_NVML_IS_COMPATIBLE = True

_BRANCH_VERSION = _nvml.struct_version("nvmlSystemDriverBranchInfo_v1_t", 1)


def _is_wsl() -> bool:
    try:
        with open("/proc/sys/kernel/osrelease") as f:
            release = f.read().lower()
    except OSError:
        return False
    return "microsoft" in release or "wsl" in release


_ON_WSL = _is_wsl()


def get_user_mode_driver_version() -> tuple[int, int]:
    """Return the CUDA version of the user-mode driver as ``(major, minor)``.

    Falls back to the CUDA driver (``cuDriverGetVersion``) where NVML
    cannot be loaded.
    """
    try:
        _nvml.initialize()
    except LibraryNotFoundError as exc:
        try:
            v: int = driver_version()
        except CUDAError:
            raise exc from None
    else:
        v = _nvml.out_result("int", lib.nvmlSystemGetCudaDriverVersion)
    return (v // 1000, (v // 10) % 100)


def get_kernel_mode_driver_version() -> tuple[int, ...]:
    """Return the kernel-mode driver's version, e.g. ``(580, 65, 6)``."""
    _nvml.initialize()
    text = _nvml.string_result(lib.nvmlSystemGetDriverVersion, size=80)
    return tuple(int(part) for part in text.split("."))


def get_nvml_version() -> tuple[int, ...]:
    """Return NVML's version, e.g. ``(13, 580, 65, 6)``."""
    _nvml.initialize()
    text = _nvml.string_result(lib.nvmlSystemGetNVMLVersion, size=80)
    return tuple(int(part) for part in text.split("."))


def get_driver_branch() -> str:
    """Return the driver's branch name, e.g. ``"r582_49"``.

    The branch is not the version's major number: driver 580.159.04
    reports ``"r582_49"``.
    """
    _nvml.initialize()
    info = ffi.new("nvmlSystemDriverBranchInfo_t *")
    info.version = _BRANCH_VERSION
    _nvml.check(lib.nvmlSystemGetDriverBranch(info, ffi.sizeof(info.branch)))
    branch: str = ffi.string(info.branch).decode()
    return branch


def get_num_devices() -> int:
    """Return the number of GPUs in the system.

    NVML counts every GPU, whatever ``CUDA_VISIBLE_DEVICES`` says; where NVML
    cannot be loaded the CUDA driver counts (and does honour it).
    """
    n: int = lib.cc_nvml_device_count()
    if n > _nvml.READ_FAILED:
        return n
    # Not loaded or initialized yet (or a failure): initialize, then ask again.
    return _count_devices()


def _count_devices() -> int:
    try:
        _nvml.initialize()
    except LibraryNotFoundError as exc:
        try:
            return _cuda_device_count()
        except CUDAError:
            raise exc from None
    count: int = _nvml.out_result("unsigned int", lib.nvmlDeviceGetCount_v2)
    return count


def get_process_name(pid: int) -> str:
    """Return the name of process ``pid`` as NVML knows it.

    NVML learns process names while listing each GPU's processes, so those
    lists are read first (a device that fails is skipped).

    Raises
    ------
    NotFoundError
        If NVML knows no process ``pid``.
    """
    _nvml.initialize()
    saved = lib.cc_use_c_locale() if _ON_WSL else ffi.NULL
    try:
        _read_process_lists()
        return _nvml.string_result(lib.nvmlSystemGetProcessName, pid, size=1024)
    finally:
        if saved != ffi.NULL:
            lib.cc_restore_locale(saved)


def _read_process_lists() -> None:
    count = _nvml.out_result("unsigned int", lib.nvmlDeviceGetCount_v2)
    for i in range(count):
        try:
            h = _nvml.out_result("nvmlDevice_t", lib.nvmlDeviceGetHandleByIndex_v2, i)
            _nvml.two_call("nvmlProcessInfo_t", lib.nvmlDeviceGetComputeRunningProcesses_v3, h)
        except NvmlError:
            continue


def _cuda_device_count() -> int:
    load_driver()
    check_cuda(lib.cuInit(0))
    count = ffi.new("int *")
    check_cuda(lib.cuDeviceGetCount(count))
    n: int = count[0]
    return n
