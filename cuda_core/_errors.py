# SPDX-License-Identifier: Apache-2.0
"""The one error-translation layer: library status codes become exceptions.

Every call into the CUDA driver, NVRTC, nvJitLink or libNVVM goes through one
of the ``check*`` functions here; nothing else in the package compares status
codes.  Failures raise :class:`CUDAError` or one of its subclasses, carrying
the status name, its description and, for compilers and linkers, the log.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, NamedTuple

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._ffi_types import ctype_of

if TYPE_CHECKING:
    from typing import Any, Callable, Collection, NoReturn, TypeVar

    _E = TypeVar("_E", bound=type)

__all__ = [
    "CUDAError",
    "CUDAWarning",
    "LibraryNotFoundError",
    "NVJitLinkError",
    "NVRTCError",
    "NVVMError",
    "check",
    "check_allowing",
    "check_nvjitlink",
    "check_nvrtc",
    "check_nvvm",
    "destroy_or_warn",
    "driver_error",
    "driver_not_found_error",
    "in_forked_child",
    "read_log",
    "shown_as",
    "status_in",
    "warn_cuda",
]


class CUDAError(Exception):
    """A failure reported by the CUDA driver (or raised on its behalf).

    Attributes
    ----------
    code : int or None
        The numeric status, when the failure came from a library call.
    name : str or None
        The status name, e.g. ``"CUDA_ERROR_INVALID_VALUE"``.
    log : str or None
        The compiler or linker log, for the subclasses that have one.
    """

    def __init__(
        self,
        message: object,
        *,
        code: int | None = None,
        name: str | None = None,
        log: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.name = name
        self.log = log


class NVRTCError(CUDAError):
    """A failure reported by NVRTC; the message includes the compilation log."""


class NVVMError(CUDAError):
    """A failure reported by libNVVM; the message includes the program log."""


class NVJitLinkError(CUDAError):
    """A failure reported by nvJitLink; the message includes the error log."""


class LibraryNotFoundError(CUDAError):
    """A CUDA library (driver, NVRTC, nvJitLink, libNVVM) could not be loaded.

    The message lists every place that was searched and how to fix it.
    """


class CUDAWarning(RuntimeWarning):
    """A CUDA failure that cannot be raised (finalizers, callbacks, cleanup)."""


def shown_as(base: type[BaseException]) -> Callable[[_E], _E]:
    """Class decorator: name and print an exception class as ``base``.

    For the package's private exception classes that reach the user, most of
    them two types at once (``class _X(TypeError, ValueError)``: the type
    ``cuda.core`` raises and the one the package's conventions ask for, so
    that code written for either catches it).  A traceback then shows
    ``TypeError: ...`` instead of a private class name.  Pickling keeps the
    real class (see :func:`_rebuild_shown`).
    """

    def decorate(cls: _E) -> _E:
        if not issubclass(cls, base):
            raise TypeError(f"{cls.__qualname__} is not a subclass of {base.__qualname__}")
        where = (cls.__module__, cls.__qualname__)
        cls.__name__ = base.__name__
        cls.__qualname__ = base.__qualname__
        cls.__module__ = base.__module__

        def __reduce__(self: BaseException) -> tuple[Any, ...]:
            return (_rebuild_shown, (*where, self.args, self.__dict__ or None))

        cls.__reduce__ = __reduce__  # type: ignore[method-assign,assignment]  # per class
        return cls

    return decorate


def _rebuild_shown(
    module: str, qualname: str, args: tuple[Any, ...], state: dict[str, Any] | None
) -> BaseException:
    """Unpickle an instance of a :func:`shown_as` class (found by its real place)."""
    import importlib

    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    exc: BaseException = cls.__new__(cls, *args)
    exc.args = args
    if state:
        exc.__dict__.update(state)
    return exc


# Short descriptions used when the driver itself cannot describe a status
# (it is not loaded, or it does not know the code).
_DRIVER_DESCRIPTIONS = {
    0: "no error",
    1: "invalid argument",
    2: "out of memory",
    3: "initialization error",
    4: "driver shutting down",
    34: "CUDA driver is a stub library",
    35: "CUDA driver version is insufficient for CUDA runtime version",
    36: "API call requires a newer CUDA driver",
    46: "CUDA-capable device(s) is/are busy or unavailable",
    100: "no CUDA-capable device is detected",
    101: "invalid device ordinal",
    200: "device kernel image is invalid",
    201: "invalid device context",
    209: "no kernel image is available for execution on the device",
    218: "a PTX JIT compilation failed",
    222: "the provided PTX was compiled with an unsupported toolchain",
    300: "device kernel image is invalid",
    301: "file not found",
    400: "invalid resource handle",
    401: "the operation cannot be performed in the present state",
    500: "named symbol not found",
    600: "device not ready",
    700: "an illegal memory access was encountered",
    701: "too many resources requested for launch",
    702: "the launch timed out and was terminated",
    709: "context is destroyed",
    710: "device-side assert triggered",
    715: "an illegal instruction was encountered",
    716: "misaligned address",
    719: "unspecified launch failure",
    720: "too many blocks in cooperative launch",
    800: "operation not permitted",
    801: "operation not supported",
    900: "operation not permitted when stream is capturing",
    901: "operation failed due to a previous error during capture",
    909: "timeout occurred",
    910: "the graph update was not performed because it included changes which "
    "violated constraints specific to instantiated graph update",
    912: "invalid cluster size",
    999: "unknown error",
}

# NVRTC's own description of a status is its name; these say what it means.
_NVRTC_DESCRIPTIONS = {
    1: "out of memory",
    2: "the program could not be created",
    3: "invalid input",
    4: "invalid program",
    5: "invalid option",
    6: "compilation failed",
    7: "a builtin operation failed",
    8: "name expressions cannot be added after compilation",
    9: "lowered names are not available before compilation",
    10: "invalid name expression",
    11: "internal error",
    12: "the timing file could not be written",
    13: "no precompiled header creation was attempted",
    14: "the precompiled header heap is exhausted",
    15: "the precompiled header could not be created",
    16: "the compilation was cancelled",
    17: "the time trace file could not be written",
    18: "NVRTC is busy",
}

_NVJITLINK_DESCRIPTIONS = {
    0: "success",
    1: "unrecognized option",
    2: "missing -arch option",
    3: "invalid input",
    4: "PTX compilation failed",
    5: "NVVM compilation failed",
    6: "internal error",
    7: "thread pool error",
    8: "unrecognized input",
    9: "finalizer error",
    10: "null input",
    11: "incompatible options",
    12: "incorrect input type",
    13: "architecture mismatch",
    14: "the library is older than its input",
    15: "missing fatbin",
    16: "unrecognized -arch value",
    17: "unsupported -arch value",
    18: "requires -lto",
}


# [True] in a process created by fork() after its parent had loaded the CUDA
# driver: CUDA cannot be used there, and the objects inherited from the parent
# are not this process's to destroy.  The extension's fork handler (see
# cc_atfork_child in cffi_src/csrc/loader.c) is what makes it so: in such a
# child the driver's library state is CC_DRIVER_FORKED and every driver call returns
# CUDA_ERROR_NOT_INITIALIZED at once; this flag mirrors that state.
_FORKED_CHILD = [False]
_FORK_HINT = (
    "this process was created by fork() after its parent initialized CUDA, and CUDA "
    "cannot be used in such a child: start worker processes with the multiprocessing "
    "'spawn' or 'forkserver' method, or initialize CUDA only after forking"
)


def _driver_forked() -> bool:
    """Return whether the extension has marked the driver unusable after fork()."""
    return lib.cc_library_state(lib.CC_LIB_DRIVER) == lib.CC_DRIVER_FORKED  # type: ignore[no-any-return]


def _after_fork_in_child() -> None:
    # The extension's own fork handler has run by now (inside fork()).
    if _driver_forked():
        _FORKED_CHILD[0] = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def in_forked_child() -> bool:
    """Return whether this process was forked after its parent loaded the CUDA driver.

    In such a child every driver call fails with ``CUDA_ERROR_NOT_INITIALIZED``
    (whose message then explains fork()).  Finalizers use this to leave the
    parent's CUDA objects alone (they are not this process's to destroy, and
    the driver cannot be used here).
    """
    if not _FORKED_CHILD[0] and _driver_forked():  # forked without os.fork's hooks
        _FORKED_CHILD[0] = True
    return _FORKED_CHILD[0]


def _enum_name(ctype: str, status: int, fallback: str) -> str:
    name = ctype_of(ctype).elements.get(status)
    return name if name is not None else f"{fallback}({status})"


def _driver_name_and_text(status: int) -> tuple[str, str]:
    """Return the driver's name and description for ``status``."""
    name: str | None = None
    text: str | None = None
    if lib.cc_library_state(lib.CC_LIB_DRIVER) == 1:
        out = ffi.new("const char **")
        if lib.cuGetErrorName(status, out) == 0 and out[0] != ffi.NULL:
            name = ffi.string(out[0]).decode()
        if lib.cuGetErrorString(status, out) == 0 and out[0] != ffi.NULL:
            text = ffi.string(out[0]).decode()
    if name is None:
        name = _enum_name("CUresult", status, "CUDA_ERROR_UNKNOWN_CODE")
    if text is None:
        text = _DRIVER_DESCRIPTIONS.get(status, "unrecognized status code")
    return name, text


def _missing_symbol_message(status: int) -> str | None:
    version = ffi.new("int *")
    c_name = lib.cc_take_missing(version)
    if c_name == ffi.NULL:
        return None
    api = ffi.string(c_name).decode()
    if version[0]:
        major, minor = divmod(version[0] // 10, 100)
        return (
            f"{api} is not available in the installed CUDA driver "
            f"(it needs a driver for CUDA {major}.{minor} or newer)"
        )
    return f"{api} is not exported by the loaded library (it is too old for this API)"


def driver_error(status: int, context: str | None = None) -> CUDAError:
    """Build the exception for a failed driver status (does not raise it)."""
    if status == lib.CC_LIB_NOT_LOADED:
        return driver_not_found_error()
    name, text = _driver_name_and_text(status)
    missing = _missing_symbol_message(status) if status == lib.CUDA_ERROR_NOT_SUPPORTED else None
    message = f"{name}: {text}"
    if missing:
        message += f" ({missing})"
    if context:
        message += f" [{context}]"
    if status == lib.CUDA_ERROR_NOT_INITIALIZED and in_forked_child():  # after fork()
        message += f" ({_FORK_HINT})"
    return CUDAError(message, code=int(status), name=name)


def check(status: int, context: str | None = None) -> None:
    """Raise :class:`CUDAError` unless the driver ``status`` is success."""
    if status:
        raise driver_error(status, context)


def driver_not_found_error() -> LibraryNotFoundError:
    """Return the exception describing why the CUDA driver is unavailable."""
    reason = ffi.string(lib.cc_library_error(lib.CC_LIB_DRIVER)).decode()
    return LibraryNotFoundError(
        "the CUDA driver could not be loaded: "
        f"{reason or 'unknown reason'}. Searched: the system loader for libcuda.so.1 "
        "(the driver is never taken from a wheel or a toolkit). "
        "Fix: install the NVIDIA driver on a machine with an NVIDIA GPU, "
        "or add the directory holding libcuda.so.1 to LD_LIBRARY_PATH."
    )


def _library_not_loaded(which: str) -> CUDAError:
    _slots.ensure_loaded(which)  # raises LibraryNotFoundError with the search report
    return CUDAError(f"{which} was not loaded before use")


def read_log(
    get_size: Callable[..., int],
    get_log: Callable[..., int],
    handle: Any,
    decode_errors: str = "replace",
) -> tuple[str | None, int]:
    """Read a compiler or linker log: return ``(text, 0)``, or ``(None, status)``.

    ``get_size``/``get_log`` are the library's log size and log functions; an
    empty log is ``""``; bytes that are not UTF-8 are decoded with the codec
    error handler ``decode_errors``.
    """
    size = ffi.new("size_t *")
    status = get_size(handle, size)
    if status:
        return None, status
    if size[0] <= 1:
        return "", 0
    buf = ffi.new("char[]", size[0])
    status = get_log(handle, buf)
    if status:
        return None, status
    return ffi.string(buf).decode("utf-8", decode_errors), 0


def nvrtc_log(prog: Any) -> str | None:
    """Return the NVRTC program log of ``prog`` (checked)."""
    text, status = read_log(lib.nvrtcGetProgramLogSize, lib.nvrtcGetProgramLog, prog)
    if status:
        check_nvrtc(status)
    return text


def check_nvrtc(status: int, prog: Any = None) -> None:
    """Raise :class:`NVRTCError` unless the NVRTC ``status`` is success.

    With ``prog``, the full compilation log is appended to the message.
    """
    if status:
        _raise_compiler_error(_NVRTC, status, prog)


def check_nvjitlink(status: int, handle: Any = None) -> None:
    """Raise :class:`NVJitLinkError` unless the nvJitLink ``status`` is success.

    With ``handle``, the linker's error log is appended to the message.
    """
    if status:
        _raise_compiler_error(_NVJITLINK, status, handle)


def check_nvvm(status: int, prog: Any = None) -> None:
    """Raise :class:`NVVMError` unless the libNVVM ``status`` is success.

    With ``prog``, the NVVM program log is appended to the message.
    """
    if status:
        _raise_compiler_error(_NVVM, status, prog)


class _CompilerErrors(NamedTuple):
    """How one compiler library's failures read (for :func:`_raise_compiler_error`)."""

    library: str  # the name ensure_loaded takes
    error: type[CUDAError]
    status_type: str  # the C enum of its status codes
    unknown: str  # the name of a code the enum lacks
    describe: Callable[[int, str], str]  # (status, name) -> the text after "NAME: "
    log_size: str  # the library's log functions (looked up on lib when needed)
    log_read: str
    log_shown: str  # appended with the log: "{log}"
    log_unread: str  # appended when the log cannot be read: "{status}"


def _nvrtc_text(status: int, name: str) -> str:
    c_text = lib.nvrtcGetErrorString(status)
    text = ffi.string(c_text).decode() if c_text != ffi.NULL else ""
    if not text or text == name or text.startswith("NVRTC_"):  # the name, not a description
        text = _NVRTC_DESCRIPTIONS.get(status, "unrecognized status code")
    return text


def _nvvm_text(status: int, name: str) -> str:
    c_text = lib.nvvmGetErrorString(status)
    return ffi.string(c_text).decode() if c_text != ffi.NULL else "unknown NVVM error"


_NVRTC = _CompilerErrors(
    "nvrtc",
    NVRTCError,
    "nvrtcResult",
    "NVRTC_ERROR_UNKNOWN_CODE",
    _nvrtc_text,
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    ", compilation log:\n\n{log}",
    " (the compilation log could not be read: status {status})",
)
_NVJITLINK = _CompilerErrors(
    "nvjitlink",
    NVJitLinkError,
    "nvJitLinkResult",
    "NVJITLINK_ERROR_UNKNOWN_CODE",
    lambda status, name: _NVJITLINK_DESCRIPTIONS.get(status, "unrecognized status code"),
    "nvJitLinkGetErrorLogSize",
    "nvJitLinkGetErrorLog",
    "\nLinker error log: {log}",
    "\nLinker error log could not be read (status {status})",
)
_NVVM = _CompilerErrors(
    "nvvm",
    NVVMError,
    "nvvmResult",
    "NVVM_ERROR_UNKNOWN_CODE",
    _nvvm_text,
    "nvvmGetProgramLogSize",
    "nvvmGetProgramLog",
    "\nNVVM program log: {log}",
    "\nNVVM program log could not be read (status {status})",
)


def _raise_compiler_error(spec: _CompilerErrors, status: int, handle: Any) -> NoReturn:
    """Raise ``spec.error`` for the failed ``status``, with the log of ``handle`` if given."""
    if status == lib.CC_LIB_NOT_LOADED:
        raise _library_not_loaded(spec.library)
    if status == lib.CC_MISSING_SYMBOL:
        raise spec.error(_missing_symbol_message(status), code=int(status), name="MISSING_SYMBOL")
    name = _enum_name(spec.status_type, status, spec.unknown)
    described = spec.describe(status, name)
    # libNVVM's "error string" is the status name itself: say it once.
    message = name if described == name else f"{name}: {described}"
    log = None
    if handle is not None:
        text, log_status = read_log(
            getattr(lib, spec.log_size), getattr(lib, spec.log_read), handle
        )
        if log_status:
            message += spec.log_unread.format(status=log_status)
        else:
            log = text
            message += spec.log_shown.format(log=log)
    raise spec.error(message, code=int(status), name=name, log=log)


def destroy_or_warn(destroy: Callable[[Any], int], what: str) -> Callable[[Any], None]:
    """Return a finalizer body: ``destroy(handle)``, warning (:func:`warn_cuda`) on failure.

    In a child created by ``fork()`` the handle belongs to the parent: it is
    left alone.  ``what`` names the call in the warning, e.g.
    ``"cuStreamDestroy (Stream finalizer)"``.
    """

    def finalize(handle: Any) -> None:
        if in_forked_child():
            return
        status = destroy(handle)
        if status:
            warn_cuda(what, status)

    return finalize


def check_allowing(status: int, allowed: Collection[int], context: str | None = None) -> bool:
    """Return True on success, False for a status in ``allowed``; raise for any other.

    For calls where some failures are answers, not errors
    (``CUDA_ERROR_NOT_READY`` from ``cuEventQuery``): ``allowed`` is a tuple
    of the driver codes the caller expects.
    """
    if not status:
        return True
    if status in allowed:
        return False
    raise driver_error(status, context)


def status_in(status: int | CUDAError, codes: Collection[int]) -> bool:
    """Return whether ``status`` (a status code, or a :class:`CUDAError`) is one of ``codes``."""
    if isinstance(status, CUDAError):
        status = status.code  # type: ignore[assignment]  # None is in no codes
    return status in codes


def warn_cuda(what: str, status: int, stacklevel: int = 2, done: Collection[str] = ()) -> None:
    """Report a failure that cannot be raised (finalizers, callbacks).

    ``CUDA_ERROR_DEINITIALIZED`` (the driver shutting down at exit) is not
    reported: nothing can be done about it and the memory is gone anyway.
    Neither is anything in a child created by ``fork()`` after its parent
    loaded the driver (see :func:`in_forked_child`): the objects it inherited
    belong to the parent.  ``done`` names statuses (``"CUDA_ERROR_..."``)
    with which the call still did the caller's job, e.g.
    ``CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`` from ``cuStreamEndCapture``:
    the capture has ended, with nothing left to discard.
    """
    if status in (0, lib.CUDA_ERROR_DEINITIALIZED) or in_forked_child():
        return
    if done and any(status == getattr(lib, name) for name in done):
        return
    err = driver_error(status)
    warnings.warn(f"{what} failed: {err}", CUDAWarning, stacklevel=stacklevel + 1)
