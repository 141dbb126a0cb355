# SPDX-License-Identifier: Apache-2.0
"""NVML failures as exceptions: one class per ``nvmlReturn_t`` status.

Every class derives from :class:`NvmlError` (and nothing else, except
:class:`LibraryNotFoundError`, which is also ``cuda_core.LibraryNotFoundError``
so that one ``except`` catches a missing NVML and a missing CUDA library
alike), carries the status in ``.status`` and takes its message from ``nvmlErrorString``; when
NVML itself is not loaded the message comes from a short table of the
strings NVML returns.  The classes are plain Python, so this module imports
without NVML, and they pickle (the status is enough to rebuild one).
"""

from __future__ import annotations

from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import LibraryNotFoundError as _CudaLibraryNotFoundError

__all__ = [
    "AlreadyInitializedError",
    "ArgumentVersionMismatchError",
    "CorruptedInforomError",
    "DeprecatedError",
    "DriverNotLoadedError",
    "FreqNotSupportedError",
    "FunctionNotFoundError",
    "GpuIsLostError",
    "GpuNotFoundError",
    "InUseError",
    "InsufficientPowerError",
    "InsufficientResourcesError",
    "InsufficientSizeError",
    "InvalidArgumentError",
    "InvalidStateError",
    "IrqIssueError",
    "LibRmVersionMismatchError",
    "LibraryNotFoundError",
    "MemoryError",
    "NoDataError",
    "NoPermissionError",
    "NotFoundError",
    "NotReadyError",
    "NotSupportedError",
    "NvmlError",
    "OperatingSystemError",
    "ResetRequiredError",
    "ResetTypeNotSupportedError",
    "TimeoutError",
    "UninitializedError",
    "UnknownError",
    "VgpuEccNotSupportedError",
]

# The strings NVML returns for its common statuses, used while the library
# is not loaded; the rest fall back to the status name.
_FALLBACK_MESSAGES = {
    1: "Uninitialized",
    2: "Invalid Argument",
    3: "Not Supported",
    4: "Insufficient Permissions",
    5: "Already Initialized",
    6: "Not Found",
    7: "Insufficient Size",
    8: "Insufficient External Power",
    9: "Driver Not Loaded",
    10: "Timeout",
    11: "Interrupt Request Issue",
    12: "NVML Shared Library Not Found",
    13: "Function Not Found",
    14: "Corrupted infoROM",
    15: "GPU is lost",
    16: "GPU requires restart",
    999: "Unknown Error",
}


def _message(status: int) -> str:
    """Return NVML's description of ``status`` (a fallback without NVML)."""
    try:
        text = lib.nvmlErrorString(status)
    except (OverflowError, TypeError):
        text = ffi.NULL
    if text != ffi.NULL:
        decoded: str = ffi.string(text).decode(errors="replace")
        return decoded
    if status in _FALLBACK_MESSAGES:
        return _FALLBACK_MESSAGES[status]
    cls = _STATUS_CLASSES.get(status)
    if cls is not None:
        return f"NVML_ERROR_{_snake_upper(cls.__name__)}"
    return f"NVML error {status}"


def _snake_upper(name: str) -> str:
    core = name[: -len("Error")] if name.endswith("Error") else name
    out = []
    for i, ch in enumerate(core):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


class NvmlError(Exception):
    """An NVML call failed; ``status`` is its ``nvmlReturn_t`` code.

    Parameters
    ----------
    status : int
        The NVML status.  The message is NVML's own description of it.
    """

    def __init__(self, status: int) -> None:
        self.status = status
        super().__init__(_message(status))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status,))


class UninitializedError(NvmlError):
    """NVML was not initialized (status 1)."""


class InvalidArgumentError(NvmlError):
    """An argument was invalid (status 2)."""


class NotSupportedError(NvmlError):
    """The device does not support the operation (status 3)."""


class NoPermissionError(NvmlError):
    """The caller lacks the permission for the operation (status 4)."""


class AlreadyInitializedError(NvmlError):
    """NVML was already initialized (status 5; no longer returned by NVML)."""


class NotFoundError(NvmlError):
    """The object asked for does not exist (status 6)."""


class InsufficientSizeError(NvmlError):
    """A buffer was too small (status 7)."""


class InsufficientPowerError(NvmlError):
    """A device's external power cables are not attached properly (status 8)."""


class DriverNotLoadedError(NvmlError):
    """The NVIDIA kernel driver is not loaded (status 9)."""


class TimeoutError(NvmlError):  # noqa: A001 - NVML's name, as upstream
    """A wait ended without an event (status 10); not :class:`builtins.TimeoutError`."""


class IrqIssueError(NvmlError):
    """The kernel detected an interrupt problem with a GPU (status 11)."""


class LibraryNotFoundError(NvmlError, _CudaLibraryNotFoundError):
    """The NVML library (``libnvidia-ml.so.1``) could not be loaded (status 12).

    Raised by cuda_core with a message naming what was searched.  It is also
    a :class:`cuda_core.LibraryNotFoundError` (and so a
    :class:`cuda_core.CUDAError`, with ``code`` 12): ``except
    cuda_core.LibraryNotFoundError`` catches a missing NVML as well as a
    missing driver, NVRTC, nvJitLink or libNVVM.
    """

    def __init__(self, status: int = 12, message: str | None = None) -> None:
        super().__init__(status)  # NvmlError, then CUDAError with the message
        self.code = status
        self.name = "NVML_ERROR_LIBRARY_NOT_FOUND"
        if message is not None:
            self.args = (message,)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.status, self.args[0] if self.args else None))


class FunctionNotFoundError(NvmlError):
    """The installed NVML lacks the function (status 13)."""


class CorruptedInforomError(NvmlError):
    """The infoROM is corrupted (status 14)."""


class GpuIsLostError(NvmlError):
    """The GPU fell off the bus or became inaccessible (status 15)."""


class ResetRequiredError(NvmlError):
    """The GPU needs a reset (status 16)."""


class OperatingSystemError(NvmlError):
    """The operating system reported an error (status 17)."""


class LibRmVersionMismatchError(NvmlError):
    """NVML and the kernel driver versions do not match (status 18)."""


class InUseError(NvmlError):
    """The GPU is in use (status 19)."""


class MemoryError(NvmlError):  # noqa: A001 - NVML's name, as upstream
    """NVML ran out of memory (status 20); not :class:`builtins.MemoryError`."""


class NoDataError(NvmlError):
    """No data (status 21)."""


class VgpuEccNotSupportedError(NvmlError):
    """The vGPU operation is unavailable because ECC is enabled (status 22)."""


class InsufficientResourcesError(NvmlError):
    """A critical resource other than memory ran out (status 23)."""


class FreqNotSupportedError(NvmlError):
    """The frequency is not supported (status 24)."""


class ArgumentVersionMismatchError(NvmlError):
    """A structure's version word is invalid or unsupported (status 25)."""


class DeprecatedError(NvmlError):
    """The functionality is deprecated (status 26)."""


class NotReadyError(NvmlError):
    """The system is not ready (status 27)."""


class GpuNotFoundError(NvmlError):
    """No GPU was found (status 28)."""


class InvalidStateError(NvmlError):
    """The resource is not in the right state (status 29)."""


class ResetTypeNotSupportedError(NvmlError):
    """The reset type is not supported (status 30)."""


class UnknownError(NvmlError):
    """An internal driver error occurred (status 999)."""


_STATUS_CLASSES = {
    1: UninitializedError,
    2: InvalidArgumentError,
    3: NotSupportedError,
    4: NoPermissionError,
    5: AlreadyInitializedError,
    6: NotFoundError,
    7: InsufficientSizeError,
    8: InsufficientPowerError,
    9: DriverNotLoadedError,
    10: TimeoutError,
    11: IrqIssueError,
    12: LibraryNotFoundError,
    13: FunctionNotFoundError,
    14: CorruptedInforomError,
    15: GpuIsLostError,
    16: ResetRequiredError,
    17: OperatingSystemError,
    18: LibRmVersionMismatchError,
    19: InUseError,
    20: MemoryError,
    21: NoDataError,
    22: VgpuEccNotSupportedError,
    23: InsufficientResourcesError,
    24: FreqNotSupportedError,
    25: ArgumentVersionMismatchError,
    26: DeprecatedError,
    27: NotReadyError,
    28: GpuNotFoundError,
    29: InvalidStateError,
    30: ResetTypeNotSupportedError,
    999: UnknownError,
}


def _error_for(status: int) -> NvmlError:
    """Return the exception for a non-zero NVML ``status`` (not raised)."""
    return _STATUS_CLASSES.get(status, NvmlError)(status)
