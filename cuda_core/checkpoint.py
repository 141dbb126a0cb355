# SPDX-License-Identifier: Apache-2.0
"""CUDA checkpointing of processes: :class:`Process` (driver for CUDA 12.8 or newer).

A CUDA process (often another one) is *locked* (its CUDA calls block),
*checkpointed* (its device memory is saved to host memory and its GPU
resources released), *restored* (back onto the GPUs, still locked), and
*unlocked* (running again).  These are the driver's
``cuCheckpointProcess*`` calls; a tool such as CRIU can save the process's
host state in between.

Drivers without these calls raise RuntimeError; calls in the wrong state
(checkpointing a process that is not locked, say) raise
:class:`~cuda_core.CUDAError` with the driver's status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, status_in
from cuda_core._loader import init_driver

__all__ = ["Process"]

_REQUIRED_DRIVER = 12080
_UNSUPPORTED = (
    "CUDA checkpointing is not supported by the installed NVIDIA driver. "
    "Upgrade to a driver version with CUDA checkpoint API support."
)
# A missing entry point also reads as CUDA_ERROR_NOT_SUPPORTED.
_UNSUPPORTED_STATUSES = (lib.CUDA_ERROR_NOT_FOUND, lib.CUDA_ERROR_NOT_SUPPORTED)
_STATES: dict[int, str] = {
    lib.CU_PROCESS_STATE_RUNNING: "running",
    lib.CU_PROCESS_STATE_LOCKED: "locked",
    lib.CU_PROCESS_STATE_CHECKPOINTED: "checkpointed",
    lib.CU_PROCESS_STATE_FAILED: "failed",
}
_checked: list[bool] = []  # non-empty once the driver is known to support checkpointing


class Process:
    """A CUDA process that can be locked, checkpointed, restored and unlocked.

    Parameters
    ----------
    pid : int
        The process id (``> 0``).  Nothing is checked until a method or
        property asks the driver.

    Raises
    ------
    TypeError
        If ``pid`` is not an int (bools are refused).
    ValueError
        If ``pid`` is not positive.
    """

    __slots__ = ("_pid",)

    def __init__(self, pid: int) -> None:
        if isinstance(pid, bool) or not isinstance(pid, int):
            raise TypeError("pid must be an int")
        if pid <= 0:
            raise ValueError("pid must be a positive int")
        self._pid = int(pid)

    def __repr__(self) -> str:
        return f"<checkpoint.Process pid={self._pid}>"

    def lock(self, timeout_ms: int = 0) -> None:
        """Lock the process: its further CUDA calls block until :meth:`unlock`.

        Parameters
        ----------
        timeout_ms : int, optional
            How long to try, in milliseconds; 0 (the default) waits without limit.

        Raises
        ------
        TypeError
            If ``timeout_ms`` is not an int.
        ValueError
            If ``timeout_ms`` is negative.
        RuntimeError
            If the driver does not support checkpointing.
        CUDAError
            If the driver cannot lock the process (e.g. it is not running,
            or ``CUDA_ERROR_TIMEOUT``).
        """
        _require_driver()
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise TypeError("timeout_ms must be an int")
        if timeout_ms < 0:
            raise ValueError("timeout_ms must be >= 0")
        args = ffi.new("CUcheckpointLockArgs *")
        args.timeoutMs = timeout_ms
        _call(lib.cuCheckpointProcessLock(self._pid, args), "cuCheckpointProcessLock")

    def checkpoint(self) -> None:
        """Save the locked process's device memory to host memory and release its GPUs.

        Raises
        ------
        RuntimeError
            If the driver does not support checkpointing.
        CUDAError
            If the process is not locked, or the checkpoint fails.
        """
        _require_driver()
        _call(
            lib.cuCheckpointProcessCheckpoint(self._pid, ffi.NULL), "cuCheckpointProcessCheckpoint"
        )

    def restore(self, gpu_mapping: Mapping[Any, Any] | None = None) -> None:
        """Restore the checkpointed process onto the GPUs; it stays locked.

        Parameters
        ----------
        gpu_mapping : mapping, optional
            From each checkpointed GPU's UUID to the UUID of the GPU to
            restore onto (UUID strings as :attr:`Device.uuid
            <cuda_core.Device.uuid>` gives them, or 16 bytes).  For
            migration, map every GPU the kernel driver sees
            (``CUDA_VISIBLE_DEVICES`` does not reduce that set).  None or an
            empty mapping restores onto the same GPUs.

        Raises
        ------
        TypeError
            If ``gpu_mapping`` is not a mapping, or holds something that is
            not a UUID.
        ValueError
            For a malformed UUID string.
        RuntimeError
            If the driver does not support checkpointing.
        CUDAError
            If the process is not checkpointed, or the restore fails.
        """
        _require_driver()
        pairs = _gpu_pairs(gpu_mapping)
        if pairs is None:
            args = ffi.NULL
        else:
            args = ffi.new("CUcheckpointRestoreArgs *")
            args.gpuPairs = pairs
            args.gpuPairsCount = len(pairs)
        _call(lib.cuCheckpointProcessRestore(self._pid, args), "cuCheckpointProcessRestore")

    def unlock(self) -> None:
        """Unlock the process: its CUDA calls proceed again.

        Raises
        ------
        RuntimeError
            If the driver does not support checkpointing.
        CUDAError
            If the process is not locked.
        """
        _require_driver()
        _call(lib.cuCheckpointProcessUnlock(self._pid, ffi.NULL), "cuCheckpointProcessUnlock")

    @property
    def pid(self) -> int:
        """int: The process id."""
        return self._pid

    @property
    def state(self) -> str:
        """str: ``"running"``, ``"locked"``, ``"checkpointed"`` or ``"failed"``.

        See :data:`cuda_core.typing.ProcessStateType`.
        """
        _require_driver()
        out = ffi.new("CUprocessState *")
        _call(lib.cuCheckpointProcessGetState(self._pid, out), "cuCheckpointProcessGetState")
        value = int(out[0])
        try:
            return _STATES[value]
        except KeyError:
            raise RuntimeError(f"Unknown CUDA checkpoint process state: {value}") from None

    @property
    def restore_thread_id(self) -> int:
        """int: The id of the process's thread that performs the restore."""
        _require_driver()
        out = ffi.new("int *")
        _call(
            lib.cuCheckpointProcessGetRestoreThreadId(self._pid, out),
            "cuCheckpointProcessGetRestoreThreadId",
        )
        return int(out[0])


def _require_driver() -> None:
    """Raise RuntimeError unless the driver has the checkpoint API (checked once)."""
    if _checked:
        return
    init_driver()
    version = ffi.new("int *")
    check(lib.cuDriverGetVersion(version))
    if version[0] < _REQUIRED_DRIVER:
        raise RuntimeError(_UNSUPPORTED)
    _checked.append(True)


def _call(status: int, what: str) -> None:
    if status_in(status, _UNSUPPORTED_STATUSES):
        raise RuntimeError(_UNSUPPORTED)
    check(status, what)


def _gpu_pairs(gpu_mapping: object) -> Any:
    """Return a ``CUcheckpointGpuPair[]`` for ``gpu_mapping``, or None for no remapping."""
    if gpu_mapping is None:
        return None
    if not isinstance(gpu_mapping, Mapping):
        raise TypeError(
            "gpu_mapping must be a mapping from checkpointed GPU UUID to restore GPU UUID"
        )
    if not gpu_mapping:
        return None
    items = list(gpu_mapping.items())
    pairs = ffi.new("CUcheckpointGpuPair[]", len(items))
    for i, (old, new) in enumerate(items):
        ffi.memmove(ffi.addressof(pairs[i], "oldUuid"), _uuid_bytes(old), 16)
        ffi.memmove(ffi.addressof(pairs[i], "newUuid"), _uuid_bytes(new), 16)
    return pairs


def _uuid_bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        if len(value) != 16:
            raise ValueError(f"a GPU UUID as bytes must be 16 bytes long, got {len(value)}")
        return bytes(value)
    if isinstance(value, str):
        text = value.replace("-", "")
        if text.startswith("GPU") and len(text) == 35:  # nvidia-smi's "GPU-..." form
            text = text[3:]
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raw = b""
        if len(raw) != 16:
            raise ValueError(
                f"GPU UUID string must be 32 hex characters (with optional hyphens), got {value!r}"
            )
        return raw
    raise TypeError("GPU UUID values must be CUDA UUID objects or UUID strings")


# Read-only properties fail as on cuda.core's classes (see cuda_core._read_only).
from cuda_core._read_only import seal_read_only as _seal_read_only  # noqa: E402

_seal_read_only()
