# SPDX-License-Identifier: Apache-2.0
"""What :class:`~cuda_core.Program` asks beside compiling.

Whether the driver can load the PTX that this NVRTC writes (asked once per
process; a PTX compile warns when it cannot), and how a precompiled-header
request fared (``nvrtcGetPCHCreateStatus`` answers with a status code, read
here as an answer rather than raised).
"""

from __future__ import annotations

import warnings
from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, status_in
from cuda_core._loader import driver_at_least, nvrtc_version
from cuda_core.typing import PCHStatusType

__all__: list[str] = []

_PTX_LOADABLE: list[bool | None] = []  # memo for _driver_ptx_state(): [state] once known


def _warn_if_ptx_unloadable(stacklevel: int) -> None:
    if _driver_ptx_state() is False:
        warnings.warn(
            "The CUDA driver version is older than the backend version. The generated "
            "ptx will not be loadable by the current driver. Compile to 'cubin' to "
            "load the code with this driver.",
            RuntimeWarning,
            stacklevel=stacklevel,
        )


def _driver_ptx_state() -> bool | None:
    """Return True/False (driver can/cannot load NVRTC's PTX) or None (no driver)."""
    if _PTX_LOADABLE:
        return _PTX_LOADABLE[0]
    major, minor = nvrtc_version()
    try:
        state: bool | None = driver_at_least(major, minor)
    except CUDAError:  # includes LibraryNotFoundError: no driver
        state = None
    _PTX_LOADABLE.append(state)
    return state


def _pch_status(prog: Any) -> tuple[PCHStatusType, str | None] | None:
    """Return ``(PCHStatusType, reason)``, or None when the PCH heap was exhausted.

    ``nvrtcGetPCHCreateStatus`` answers with a status code, so (like
    ``cuEventQuery``) its codes are interpreted here instead of raised.
    """
    status = lib.nvrtcGetPCHCreateStatus(prog)
    if not status:
        return PCHStatusType.CREATED, None
    if status_in(status, (lib.NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED,)):
        return None
    if status_in(status, (lib.NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED,)):
        return PCHStatusType.NOT_ATTEMPTED, None
    if status_in(status, (lib.CC_MISSING_SYMBOL,)):
        raise RuntimeError(
            "PCH was requested but the loaded NVRTC does not support the PCH APIs; "
            "update to CUDA 12.8 or newer"
        )
    name = ffi.typeof("nvrtcResult").elements.get(status, f"status {status}")
    c_text = lib.nvrtcGetErrorString(status)
    text = ffi.string(c_text).decode() if c_text != ffi.NULL else "unknown NVRTC error"
    return PCHStatusType.FAILED, f"{name}: {text}"
