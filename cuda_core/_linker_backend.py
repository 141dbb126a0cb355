# SPDX-License-Identifier: Apache-2.0
"""Choosing the linker backend: nvJitLink or the CUDA driver's ``cuLink*``.

The choice is made once per process, at the first question, and reported by
:meth:`Linker.which_backend <cuda_core.Linker.which_backend>`.
"""

from __future__ import annotations

import threading
import warnings

from cuda_core._errors import LibraryNotFoundError, NVJitLinkError
from cuda_core._loader import ensure_loaded, install_hint, nvjitlink_version
from cuda_core.typing import CompilerBackendType

__all__ = ["which_backend"]

_BACKEND_LOCK = threading.Lock()
_BACKEND: CompilerBackendType | None = None  # decided once


def which_backend(stacklevel: int) -> CompilerBackendType:
    """Return the process's linking backend, deciding it at the first call.

    Falling back to the driver emits a :class:`RuntimeWarning` at
    ``stacklevel`` (counted from this function) saying why.
    """
    global _BACKEND
    if _BACKEND is not None:
        return _BACKEND
    with _BACKEND_LOCK:
        if _BACKEND is None:
            _BACKEND, reason = _decide_backend()
            if reason:
                warnings.warn(reason, RuntimeWarning, stacklevel=stacklevel)
    return _BACKEND


def _decide_backend() -> tuple[CompilerBackendType, str | None]:
    """Return ``(backend, reason_for_fallback_or_None)``."""

    def fallback(why: str) -> tuple[CompilerBackendType, str | None]:
        return CompilerBackendType.DRIVER, (
            f"{why}; the CUDA driver's cuLink* API will be used for linking instead; it "
            "cannot link LTO-IR or emit PTX. Install nvJitLink 12.3 or newer "
            f"({install_hint('nvjitlink')}) for full support."
        )

    try:
        ensure_loaded("nvjitlink")
    except LibraryNotFoundError as e:
        return fallback(f"nvJitLink was not found ({e})")
    try:
        version = nvjitlink_version()
    except NVJitLinkError:
        return fallback("the installed nvJitLink is older than 12.3")
    if tuple(version) < (12, 3):
        return fallback(f"the installed nvJitLink {version[0]}.{version[1]} is older than 12.3")
    return CompilerBackendType.NVJITLINK, None
