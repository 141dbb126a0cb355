# SPDX-License-Identifier: Apache-2.0
"""NVML's error layer and its one-time initialization.

Every NVML call in :mod:`cuda_core.system` goes through :func:`check`, which
turns a non-zero ``nvmlReturn_t`` into the matching
:mod:`~cuda_core.system.exceptions` class.  :func:`initialize` loads
``libnvidia-ml.so.1`` (through :func:`cuda_core._loader.load_nvml`) and calls
``nvmlInit_v2`` once per process, under a lock; ``nvmlShutdown`` runs at
interpreter exit.  Nothing here runs at import.

A process created by ``fork()`` after its parent initialized NVML does not
call NVML: every call there raises :class:`UninitializedError` saying so,
rather than risk a lock or a device file held by the parent.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Callable, ClassVar

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import LibraryNotFoundError as _CoreLibraryNotFoundError
from cuda_core._errors import shown_as
from cuda_core._ffi_types import ctype_of
from cuda_core._loader import load_nvml
from cuda_core.system.exceptions import (
    FunctionNotFoundError,
    LibraryNotFoundError,
    UninitializedError,
    _error_for,
)

__all__ = [
    "READ_FAILED",
    "check",
    "initialize",
    "is_initialized",
    "out_result",
    "raise_read_failure",
    "string_result",
    "struct_version",
    "two_call",
]

_UNINITIALIZED, _INITIALIZED, _FORKED = 0, 1, 2

_lock = threading.Lock()
_state = [_UNINITIALIZED, 0]  # [state, pid of the process that initialized]
_atexit_registered: list[bool] = []

_INSUFFICIENT_SIZE = 7  # NVML_ERROR_INSUFFICIENT_SIZE
_NOT_LOADED = lib.CC_LIB_NOT_LOADED
_MISSING = lib.CC_MISSING_SYMBOL

#: A hot read (``lib.cc_nvml_device_count`` and the like) failed when the value
#: it returns is not above this; the value is then ``READ_FAILED - status``.
READ_FAILED = lib.CC_NVML_FAILED


@shown_as(FunctionNotFoundError)
class _MissingFunctionError(FunctionNotFoundError, RuntimeError):
    """The installed NVML does not export a function cuda_core calls."""

    def __init__(self, function: str) -> None:
        super().__init__(13)
        self.function = function
        self.args = (f"function {function} is not found in the installed NVML",)


@shown_as(UninitializedError)
class _ForkedChildError(UninitializedError):
    """NVML is used in a child created by fork() after the parent initialized it."""

    def __init__(self, status: int = 1) -> None:
        super().__init__(status)
        self.args = (
            "NVML was initialized by this process's parent before fork(); NVML cannot "
            "be used in the child (start child processes with the 'spawn' method)",
        )


def check(status: int) -> None:
    """Raise the exception for a non-zero NVML ``status``."""
    if status == 0:
        return
    if _state[0] == _FORKED and status in (_MISSING, _NOT_LOADED):
        raise _ForkedChildError()
    if status == _MISSING:
        version = ffi.new("int *")
        name = lib.cc_take_missing(version)
        raise _MissingFunctionError(ffi.string(name).decode() if name else "an NVML function")
    if status == _NOT_LOADED:
        raise UninitializedError(1)
    raise _error_for(status)


def raise_read_failure(value: int) -> None:
    """Raise the exception for a hot read that returned ``value`` (``<= READ_FAILED``)."""
    check(READ_FAILED - value)


def is_initialized() -> bool:
    """Return True when NVML is initialized in this process."""
    return _state[0] == _INITIALIZED and _state[1] == os.getpid()


def initialize() -> None:
    """Load NVML and call ``nvmlInit_v2`` once per process (thread-safe).

    Raises
    ------
    LibraryNotFoundError
        ``libnvidia-ml.so.1`` could not be loaded; the message says what was
        searched.
    UninitializedError
        In a child created by ``fork()`` after the parent initialized NVML.
    NvmlError
        ``nvmlInit_v2`` failed (e.g. :class:`DriverNotLoadedError`).
    """
    if _state[0] == _INITIALIZED:
        return
    with _lock:
        if _state[0] == _INITIALIZED:
            return
        if _state[0] == _FORKED:
            raise _ForkedChildError()
        try:
            load_nvml()
        except _CoreLibraryNotFoundError as exc:
            raise LibraryNotFoundError(12, str(exc)) from None
        check(lib.nvmlInit_v2())
        _state[0] = _INITIALIZED
        _state[1] = os.getpid()
        if not _atexit_registered:
            _atexit_registered.append(True)
            atexit.register(_shutdown)


_out_types: dict[str, Any] = {}


def _out_type(ctype: str) -> Any:
    try:
        return _out_types[ctype]
    except KeyError:
        t = _out_types[ctype] = ctype_of(ctype + " *")
        return t


def string_result(fn: Callable[..., int], *args: Any, size: int) -> str:
    """Call ``fn(*args, buf, size)`` and return the NUL-terminated text, decoded."""
    buf = ffi.new("char[]", size)
    status = fn(*args, buf, size)
    if status:
        check(status)
    text: str = ffi.string(buf).decode()
    return text


def out_result(ctype: str, fn: Callable[..., int], *args: Any) -> Any:
    """Call ``fn(*args, out)`` with ``out = ffi.new(ctype + " *")``; return ``out[0]``."""
    out = ffi.new(_out_type(ctype))
    status = fn(*args, out)
    if status:
        check(status)
    return out[0]


def uint_result(fn: Callable[..., int], *args: Any) -> int:
    """:func:`out_result` for the common ``unsigned int`` out-parameter, typed as int."""
    value: int = out_result("unsigned int", fn, *args)
    return value


def two_call(ctype: str, fn: Callable[..., int], *args: Any) -> tuple[Any, int]:
    """Call a count-then-fill NVML function ``fn(*args, &count, array)``.

    The first call (count 0, NULL array) takes INSUFFICIENT_SIZE as the
    answer; if what is counted grows before the second call, both are
    repeated.  Returns ``(array, count)``, ``array`` a ``ctype[]`` owner.
    """
    count = ffi.new("unsigned int *")
    while True:
        count[0] = 0
        status = fn(*args, count, ffi.NULL)
        if status != _INSUFFICIENT_SIZE:
            check(status)
        n = count[0]
        array = ffi.new(ctype_of(ctype + "[]"), max(n, 1))
        if n == 0:
            return array, 0
        status = fn(*args, count, array)
        if status != _INSUFFICIENT_SIZE:
            check(status)
            return array, min(count[0], n)


def struct_version(ctype: str, version: int) -> int:
    """Return ``NVML_STRUCT_VERSION`` for the struct type ``ctype``."""
    size: int = ffi.sizeof(ctype_of(ctype))
    return size | (version << 24)


class CArrayView:
    """A read-only sequence over the first ``count`` entries of a cffi array.

    Subclasses set ``_item_name`` (for messages) and ``_item_type``, built
    as ``_item_type(array, entry)`` so that each item keeps the array alive.
    """

    __slots__ = ("_a", "_n")
    _item_name: ClassVar[str] = "item"
    _item_type: ClassVar[Any] = None

    def __init__(self, array: Any, count: int) -> None:
        self._a = array
        self._n = count

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: int) -> Any:
        if not isinstance(index, int):
            raise TypeError(f"{self._item_name} index must be an int, got {type(index).__name__}")
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError(f"{self._item_name} index out of range")
        return self._item_type(self._a, self._a[index])


def _shutdown() -> None:
    """Release this process's NVML initialization (at interpreter exit)."""
    if _state[0] == _INITIALIZED and _state[1] == os.getpid():
        _state[0] = _UNINITIALIZED
        lib.nvmlShutdown()  # a failure at exit has nobody to report to


def _after_fork_in_child() -> None:
    if _state[0] == _INITIALIZED:
        _state[0] = _FORKED
        lib.cc_nvml_forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
