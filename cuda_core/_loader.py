# SPDX-License-Identifier: Apache-2.0
"""Find and load the CUDA libraries at their first use.

Search order for NVRTC, nvJitLink and libNVVM, stopping at the first hit:

1. the environment override ``CUDA_CORE_NVRTC_PATH`` /
   ``CUDA_CORE_NVJITLINK_PATH`` / ``CUDA_CORE_NVVM_PATH`` (a file path; when
   set, nothing else is tried);
2. NVIDIA's ``nvidia-*`` wheels in this interpreter's site-packages
   (``pip install "cuda-core-cffi[cu13]"`` with a CUDA 13 driver,
   ``"cuda-core-cffi[cu12]"`` with a CUDA 12 driver: :data:`WHEELS`);
3. ``$CUDA_HOME`` and ``$CUDA_PATH``;
4. ``/usr/local/cuda``;
5. the system loader (``LD_LIBRARY_PATH``, ``ldconfig``).

The driver (``libcuda.so.1``) comes from the system loader only; it is
loaded by the extension itself on the first driver call.  NVML
(``libnvidia-ml.so.1``, part of the driver) comes from the override
``CUDA_CORE_NVML_PATH`` or else the system loader, never from a wheel or a
toolkit; :mod:`cuda_core.system` loads it at its first call.  ``import
cuda_core`` needs none of these libraries.
"""

from __future__ import annotations

import os
import site
import sys
import threading
from typing import TYPE_CHECKING

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import (
    CUDAError,
    LibraryNotFoundError,
    check,
    check_nvjitlink,
    check_nvrtc,
    check_nvvm,
    driver_error,
    driver_not_found_error,
)

if TYPE_CHECKING:
    from typing import Any, Callable

__all__ = [
    "driver_not_found_error",
    "driver_at_least",
    "device_count",
    "driver_version",
    "ensure_loaded",
    "format_cuda_version",
    "init_driver",
    "install_hint",
    "libdevice_path",
    "library_path",
    "load_driver",
    "load_nvml",
    "nvjitlink_version",
    "nvrtc_version",
    "nvvm_version",
    "require_driver",
    "WHEELS",
]

_LOCK = threading.Lock()
_INIT_LOCK = threading.Lock()  # cuInit, once per process
_DRIVER_INITIALIZED: list[bool] = []  # non-empty once cuInit succeeded
_DEVICE_COUNT: list[int] = []  # [count] once known
_DRIVER_VERSION: list[int] = []  # [version] once asked

# name -> (index in the extension, env var, wheel-relative candidates,
#          toolkit-relative candidates, system-loader names, CUDA 13 wheel;
#          install_hint() names the wheels of both CUDA versions)
_LIBS = {
    "nvrtc": (
        lib.CC_LIB_NVRTC,
        "CUDA_CORE_NVRTC_PATH",
        ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"),
        ("lib64/libnvrtc.so", "lib/libnvrtc.so", "targets/x86_64-linux/lib/libnvrtc.so"),
        ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"),
        "nvidia-cuda-nvrtc",
    ),
    "nvjitlink": (
        lib.CC_LIB_NVJITLINK,
        "CUDA_CORE_NVJITLINK_PATH",
        ("nvidia/cu13/lib/libnvJitLink.so.13", "nvidia/nvjitlink/lib/libnvJitLink.so.12"),
        (
            "lib64/libnvJitLink.so",
            "lib/libnvJitLink.so",
            "targets/x86_64-linux/lib/libnvJitLink.so",
        ),
        ("libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"),
        "nvidia-nvjitlink",
    ),
    "nvvm": (
        lib.CC_LIB_NVVM,
        "CUDA_CORE_NVVM_PATH",
        ("nvidia/cu13/lib/libnvvm.so.4", "nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so"),
        ("nvvm/lib64/libnvvm.so", "nvvm/lib64/libnvvm.so.4", "lib64/libnvvm.so"),
        ("libnvvm.so.4", "libnvvm.so"),
        "nvidia-nvvm",
    ),
}

#: The NVIDIA wheel that brings each library, by CUDA major version: what the
#: ``cu12`` and ``cu13`` extras install (CUDA 12's libNVVM ships with nvcc).
WHEELS = {
    "nvrtc": {12: "nvidia-cuda-nvrtc-cu12", 13: "nvidia-cuda-nvrtc"},
    "nvjitlink": {12: "nvidia-nvjitlink-cu12", 13: "nvidia-nvjitlink"},
    "nvvm": {12: "nvidia-cuda-nvcc-cu12", 13: "nvidia-nvvm"},
}

_LIBDEVICE = (
    "nvidia/cu13/nvvm/libdevice/libdevice.10.bc",
    "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
)


def _site_dirs() -> list[str]:
    dirs: list[str] = []
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # virtualenvs of old interpreters
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    dirs.extend(p for p in sys.path if p and p.endswith(("site-packages", "dist-packages")))
    seen: set[str] = set()
    out: list[str] = []
    for d in dirs:
        if d not in seen and os.path.isdir(d):
            seen.add(d)
            out.append(d)
    return out


def _toolkit_roots() -> list[tuple[str, str]]:
    roots = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = os.environ.get(var)
        if value:
            roots.append((f"${var}", value))
    roots.append(("default toolkit", "/usr/local/cuda"))
    return roots


def _try_load(index: int, path: str, attempts: list[str]) -> bool:
    if lib.cc_load_library(index, path.encode()) == 0:
        return True
    attempts.append(f"{path}: {ffi.string(lib.cc_library_error(index)).decode()}")
    return False


def ensure_loaded(name: str) -> None:
    """Load library ``name`` ("nvrtc", "nvjitlink" or "nvvm") if needed.

    Raises
    ------
    LibraryNotFoundError
        Listing every place searched and how to fix it.
    """
    index = _LIBS[name][0]
    if lib.cc_library_state(index) != 1:
        _load_locked(index, _LIBS[name][1], name, "the library file", _search_cuda_library, name)


def _search_cuda_library(index: int, attempts: list[str], name: str) -> None:
    """Try the wheels, then the toolkits, then the system loader; raise if none loads."""
    _, env, wheel, toolkit, system, _ = _LIBS[name]
    # (path, how a missing one is listed): the wheels first, then the toolkits.
    files = [(os.path.join(d, rel), "") for d in _site_dirs() for rel in wheel]
    files += [
        (os.path.join(root, rel), f" ({label})")
        for label, root in _toolkit_roots()
        for rel in toolkit
    ]
    for path, where in files:
        if not os.path.exists(path):
            attempts.append(f"{path}{where}: not present")
        elif _try_load(index, path, attempts):
            return
    for soname in system:
        if _try_load(index, soname, attempts):
            return
    searched = "\n  ".join(attempts)
    raise LibraryNotFoundError(
        f"{name} could not be found. Searched:\n  {searched}\n"
        f"Fix: {install_hint(name)}, set CUDA_HOME to a CUDA toolkit, "
        f"or set {env} to the library's path."
    )


def _load_locked(
    index: int,
    env: str,
    label: str,
    target: str,
    search: Callable[..., None],
    *args: Any,
) -> None:
    """Load library ``index`` under the lock: the override in ``env`` alone when set.

    Otherwise ``search(index, attempts, *args)`` tries its places and raises
    LibraryNotFoundError when none loads.  ``label`` and ``target`` name the
    library and what the override should point at in messages.
    """
    with _LOCK:
        if lib.cc_library_state(index) == 1:
            return
        attempts: list[str] = []
        override = os.environ.get(env)
        if not override:
            search(index, attempts, *args)
            return
        if not os.path.exists(override):
            raise LibraryNotFoundError(
                f"{label}: {env} is set to {override!r}, which does not exist. "
                f"Point {env} at {target} or unset it."
            )
        if not _try_load(index, override, attempts):
            raise LibraryNotFoundError(
                f"{label}: {env}={override!r} could not be loaded: {attempts[-1]}"
            )


def _driver_major() -> int | None:
    """The driver's CUDA major version, or None where no driver can be loaded."""
    try:
        return driver_version() // 1000
    except CUDAError:
        return None


def install_hint(name: str) -> str:
    """Return the pip command that installs library ``name`` for this machine.

    It names the extra for the driver's CUDA major version where a CUDA 12 or
    13 driver is present (NVRTC 13's PTX does not load on a CUDA 12 driver),
    both extras otherwise, and the NVIDIA wheel each one installs.
    """
    wheels = WHEELS[name]
    major = _driver_major()
    if major in wheels:
        return (
            f'pip install "cuda-core-cffi[cu{major}]" (the driver here is CUDA {major}; '
            f"the extra installs {wheels[major]})"
        )
    return (
        'pip install "cuda-core-cffi[cu13]" for a CUDA 13 driver or "cuda-core-cffi[cu12]" '
        f"for a CUDA 12 driver (they install {wheels[13]} and {wheels[12]})"
    )


def load_driver() -> None:
    """Load the CUDA driver (``libcuda.so.1``) from the system loader."""
    if lib.cc_load_library(lib.CC_LIB_DRIVER, ffi.NULL) != 0:
        if lib.cc_library_state(lib.CC_LIB_DRIVER) == lib.CC_DRIVER_FORKED:
            raise driver_error(lib.CUDA_ERROR_NOT_INITIALIZED)  # with the fork() hint
        raise driver_not_found_error()


_NVML_ENV = "CUDA_CORE_NVML_PATH"
_NVML_SONAME = "libnvidia-ml.so.1"


def load_nvml() -> None:
    """Load NVML (``libnvidia-ml.so.1``) if needed.

    The override ``CUDA_CORE_NVML_PATH`` (a file path) is tried alone when
    set; otherwise the system loader.  A failed search is not remembered:
    the next call searches again.

    Raises
    ------
    LibraryNotFoundError
        Naming what was searched and how to fix it.
    """
    if lib.cc_library_state(lib.CC_LIB_NVML) != 1:
        _load_locked(lib.CC_LIB_NVML, _NVML_ENV, "NVML", _NVML_SONAME, _search_nvml)


def _search_nvml(index: int, attempts: list[str]) -> None:
    if _try_load(index, _NVML_SONAME, attempts):
        return
    raise LibraryNotFoundError(
        f"NVML ({_NVML_SONAME}) could not be loaded. Searched: the system loader "
        f"({attempts[-1]}); NVML is part of the NVIDIA driver and is never taken "
        "from a wheel or a toolkit. Fix: install the NVIDIA driver, add the "
        f"directory holding {_NVML_SONAME} to LD_LIBRARY_PATH, or set {_NVML_ENV} "
        "to its path."
    )


def library_path(name: str) -> str | None:
    """Return the file the loaded library ``name`` came from, or None."""
    index = lib.CC_LIB_DRIVER if name == "driver" else _LIBS[name][0]
    buf = ffi.new("char[]", 4096)
    if lib.cc_library_path(index, buf, 4096) != 0:
        return None
    return ffi.string(buf).decode()  # type: ignore[no-any-return]  # a str


def driver_version() -> int:
    """Return the driver's CUDA version as an int (e.g. 13000), asked once per process."""
    if _DRIVER_VERSION:
        return _DRIVER_VERSION[0]
    out = ffi.new("int *")
    check(lib.cuDriverGetVersion(out))
    _DRIVER_VERSION[:] = [out[0]]
    return out[0]  # type: ignore[no-any-return]  # a C int


def init_driver() -> None:
    """Run ``cuInit`` once per process (the first call raises if the driver is missing)."""
    if _DRIVER_INITIALIZED:
        return
    with _INIT_LOCK:
        if not _DRIVER_INITIALIZED:
            check(lib.cuInit(0), "cuInit")
            _DRIVER_INITIALIZED.append(True)


def device_count() -> int:
    """Return the number of CUDA devices the driver sees (initializing it; asked once)."""
    if _DEVICE_COUNT:
        return _DEVICE_COUNT[0]
    init_driver()
    out = ffi.new("int *")
    check(lib.cuDeviceGetCount(out))
    n: int = out[0]
    if not _DEVICE_COUNT:
        _DEVICE_COUNT.append(n)
    return _DEVICE_COUNT[0]


def format_cuda_version(version: int) -> str:
    """Return a CUDA version int (``12030``) as ``"12.3"``."""
    return f"{version // 1000}.{version % 1000 // 10}"


def driver_at_least(major: int, minor: int) -> bool:
    """Return whether the driver supports CUDA ``major.minor``."""
    return driver_version() >= major * 1000 + minor * 10


def require_driver(
    major: int, minor: int, what: str, error: Callable[[str], Exception] = CUDAError
) -> None:
    """Raise ``error`` unless the driver supports CUDA ``major.minor``, naming ``what``.

    The message reads "Driver version 12.2 does not support <what> (needs
    CUDA 12.3 or newer)".
    """
    have = driver_version()
    if have < major * 1000 + minor * 10:
        raise error(
            f"Driver version {format_cuda_version(have)} does not support {what} "
            f"(needs CUDA {major}.{minor} or newer)"
        )


# {library: (major, minor)}: read once per process (a library, once loaded, stays).
_versions: dict[str, tuple[int, int]] = {}


def nvrtc_version() -> tuple[int, int]:
    """Return NVRTC's ``(major, minor)``, loading it if needed."""
    return _versions.get("nvrtc") or _read_version("nvrtc")


def nvjitlink_version() -> tuple[int, int]:
    """Return nvJitLink's ``(major, minor)``, loading it if needed."""
    return _versions.get("nvjitlink") or _read_version("nvjitlink")


def nvvm_version() -> tuple[int, int]:
    """Return libNVVM's ``(major, minor)``, loading it if needed."""
    return _versions.get("nvvm") or _read_version("nvvm")


def _read_version(name: str) -> tuple[int, int]:
    """Ask library ``name`` its ``(major, minor)`` and remember it."""
    ensure_loaded(name)
    if name == "nvjitlink":
        v = ffi.new("unsigned int[2]")
        check_nvjitlink(lib.nvJitLinkVersion(v, v + 1))
    else:
        v = ffi.new("int[2]")
        if name == "nvrtc":
            check_nvrtc(lib.nvrtcVersion(v, v + 1))
        else:
            check_nvvm(lib.nvvmVersion(v, v + 1))
    version = _versions[name] = (v[0], v[1])
    return version


def libdevice_path() -> str | None:
    """Return the path of ``libdevice.10.bc`` next to the NVVM in use, or None."""
    nvvm = library_path("nvvm")
    candidates = []
    if nvvm:
        # <root>/nvvm/lib64/libnvvm.so or <site>/nvidia/cu13/lib/libnvvm.so.4
        here = os.path.dirname(nvvm)
        candidates.append(os.path.join(here, "..", "libdevice", "libdevice.10.bc"))
        candidates.append(os.path.join(here, "..", "nvvm", "libdevice", "libdevice.10.bc"))
    for d in _site_dirs():
        candidates.extend(os.path.join(d, rel) for rel in _LIBDEVICE)
    for _, root in _toolkit_roots():
        candidates.append(os.path.join(root, "nvvm", "libdevice", "libdevice.10.bc"))
    for c in candidates:
        if os.path.exists(c):
            return os.path.normpath(c)
    return None


_slots.library_loader = ensure_loaded
