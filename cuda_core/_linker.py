# SPDX-License-Identifier: Apache-2.0
"""Linking device code: :class:`Linker`.

The linker combines PTX, cubin, fatbin, LTO-IR, object and library inputs
into one cubin (or PTX, after link-time optimization).  It uses nvJitLink
when a usable one (12.3 or newer) is installed, and the CUDA driver's
``cuLink*`` JIT linker otherwise; the choice is made once per process and
reported by :meth:`Linker.which_backend`.  nvJitLink needs no GPU; the driver
linker needs a driver and a current context.  :class:`LinkerOptions` lives
in ``_linker_options.py``.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from typing import Any, Callable

from cuda_core._coerce import as_int_handle, check_or_create_options
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import (
    CUDAError,
    CUDAWarning,
    check_nvjitlink,
    driver_error,
    read_log,
    warn_cuda,
)
from cuda_core._lifetime import ClosedFlag
from cuda_core._linker_backend import which_backend
from cuda_core._linker_options import LinkerOptions
from cuda_core._module import ObjectCode
from cuda_core.typing import CompilerBackendType

__all__ = ["Linker"]

_NVJITLINK_INPUT_TYPES = {
    "ptx": lib.NVJITLINK_INPUT_PTX,
    "cubin": lib.NVJITLINK_INPUT_CUBIN,
    "fatbin": lib.NVJITLINK_INPUT_FATBIN,
    "ltoir": lib.NVJITLINK_INPUT_LTOIR,
    "object": lib.NVJITLINK_INPUT_OBJECT,
    "library": lib.NVJITLINK_INPUT_LIBRARY,
}
_DRIVER_INPUT_TYPES = {
    "ptx": lib.CU_JIT_INPUT_PTX,
    "cubin": lib.CU_JIT_INPUT_CUBIN,
    "fatbin": lib.CU_JIT_INPUT_FATBINARY,
    "object": lib.CU_JIT_INPUT_OBJECT,
    "library": lib.CU_JIT_INPUT_LIBRARY,
}


class Linker(ClosedFlag):
    """Link one or more :class:`~cuda_core.ObjectCode` into a cubin or PTX.

    Parameters
    ----------
    *object_codes : ObjectCode
        The inputs (at least one): ``ptx``, ``cubin``, ``fatbin``, ``ltoir``
        (nvJitLink only), ``object`` or ``library`` code, in memory or as a
        file path.
    options : LinkerOptions, dict or None
        Linker options; see :class:`LinkerOptions`.

    Raises
    ------
    ValueError
        With no inputs, or an input or option the chosen backend cannot take.
    TypeError
        If an input is not an :class:`~cuda_core.ObjectCode`.
    NVJitLinkError, CUDAError
        If the backend rejects an input; the linker's error log is appended.
    """

    _options: LinkerOptions
    _backend: CompilerBackendType
    _lock: threading.Lock
    _keep: list[Any]  # input buffers referenced by the backend
    _linked: dict[str, bytes] | None
    _info_log: str | None
    _error_log: str | None
    _drv_info_log: Any
    _drv_error_log: Any
    _box: Any  # nvJitLinkHandle * or CUlinkState *
    _finalizer: weakref.finalize[..., Any] | None

    def __init__(
        self, *object_codes: ObjectCode, options: LinkerOptions | dict[str, Any] | None = None
    ) -> None:
        if len(object_codes) == 0:
            raise ValueError("At least one ObjectCode object must be provided")
        for i, code in enumerate(object_codes):
            if not isinstance(code, ObjectCode):
                raise TypeError(
                    f"Linker inputs must be ObjectCode objects; input {i} is a "
                    f"{type(code).__name__}"
                )
        self._options = options = check_or_create_options(LinkerOptions, options, "Linker options")
        self._backend = backend = Linker.which_backend()
        self._lock = threading.Lock()
        self._keep = []  # input buffers referenced by the backend
        self._closed = False
        self._linked = None  # {target_type: bytes} after link()
        self._info_log = self._error_log = None
        if options.numba_debug:
            warnings.warn(
                "LinkerOptions.numba_debug is not supported by any linker backend and is ignored",
                UserWarning,
                stacklevel=2,
            )
        if backend is CompilerBackendType.NVJITLINK:
            self._init_nvjitlink(options)
        else:
            self._init_driver(options, object_codes)
        try:
            for code in object_codes:
                self._add(code)
        except BaseException:
            self._close_quietly()
            raise

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"handle={self.handle:#x}"
        return f"<Linker backend={str(self._backend)!r} {state}>"

    # -- construction ------------------------------------------------------

    def _init_nvjitlink(self, options: LinkerOptions) -> None:
        flags = options._nvjitlink_flags()
        keep = [ffi.new("char[]", f) for f in flags]
        c_flags = ffi.new("const char *[]", keep) if keep else ffi.NULL
        box = ffi.new("nvJitLinkHandle *")
        check_nvjitlink(lib.nvJitLinkCreate(box, len(keep), c_flags))
        self._box = box
        self._finalizer = weakref.finalize(self, _destroy_nvjitlink, box)

    def _init_driver(self, options: LinkerOptions, object_codes: tuple[ObjectCode, ...]) -> None:
        if any(code.code_type == "ltoir" for code in object_codes):
            raise ValueError(
                "LTO-IR inputs need nvJitLink, but the driver linker is in use "
                "(nvJitLink >= 12.3 was not found); install nvidia-nvjitlink"
            )
        keys, values, keep = options._driver_options()
        self._drv_info_log, self._drv_error_log = keep[0], keep[1]
        self._keep.extend(keep)
        n = len(keys)
        c_keys = ffi.new("CUjit_option[]", keys)
        c_values = ffi.new("void *[]", values)
        self._keep.extend((c_keys, c_values))
        box = ffi.new("CUlinkState *")
        status = lib.cuLinkCreate(n, c_keys, c_values, box)
        if status:
            raise self._driver_failure(status, "cuLinkCreate")
        self._box = box
        self._finalizer = weakref.finalize(self, _destroy_culink, box, self._keep)

    def _add(self, code: ObjectCode) -> None:
        data = code.code
        name = (code.name or f"<{code.code_type} input>").encode()
        if self._backend is CompilerBackendType.NVJITLINK:
            kind = _NVJITLINK_INPUT_TYPES[code.code_type]
            handle = self._box[0]
            if isinstance(data, str):
                check_nvjitlink(lib.nvJitLinkAddFile(handle, kind, os.fsencode(data)), handle)
            else:
                buf = _input_buffer(data, code.code_type)
                self._keep.append(buf)
                check_nvjitlink(lib.nvJitLinkAddData(handle, kind, buf, len(buf), name), handle)
            return
        kind = _DRIVER_INPUT_TYPES.get(code.code_type)
        if kind is None:
            raise ValueError(
                f"the driver linker cannot take {code.code_type!r} inputs "
                f"(accepted: {sorted(_DRIVER_INPUT_TYPES)})"
            )
        state = self._box[0]
        if isinstance(data, str):
            status = lib.cuLinkAddFile(state, kind, os.fsencode(data), 0, ffi.NULL, ffi.NULL)
        else:
            buf = _input_buffer(data, code.code_type)
            self._keep.append(buf)
            status = lib.cuLinkAddData(state, kind, buf, len(buf), name, 0, ffi.NULL, ffi.NULL)
        if status:
            raise self._driver_failure(status, f"cuLinkAddData ({code.code_type})")

    # -- methods -----------------------------------------------------------

    def link(self, target_type: str) -> ObjectCode:
        """Link the inputs into one :class:`~cuda_core.ObjectCode`.

        Parameters
        ----------
        target_type : str
            ``"cubin"`` or ``"ptx"`` (PTX output needs nvJitLink with
            ``link_time_optimization=True`` and ``ptx=True``).

        Returns
        -------
        ObjectCode
            Named after :attr:`LinkerOptions.name`.

        Raises
        ------
        ValueError
            For any other target, or PTX output from the driver linker.
        NVJitLinkError, CUDAError
            If linking fails; the linker's error log is in the message.
        """
        target_type = str(target_type).lower()
        if target_type not in ("cubin", "ptx"):
            raise ValueError(
                f"Unsupported target type: {target_type!r} (supported: 'cubin', 'ptx')"
            )
        if self._backend is CompilerBackendType.DRIVER and target_type == "ptx":
            raise ValueError("the driver linker (cuLink*) can only produce 'cubin' output")
        with self._lock:
            self._require_open()
            if self._linked is None:
                self._complete()
            data = self._linked.get(target_type)  # type: ignore[union-attr]  # set by _complete() above
            if data is None:
                data = self._fetch_nvjitlink(target_type)
                self._linked[target_type] = data  # type: ignore[index]  # set by _complete() above
        return ObjectCode._init(data, target_type, name=self._options.name)

    def _complete(self) -> None:
        if self._backend is CompilerBackendType.NVJITLINK:
            handle = self._box[0]
            check_nvjitlink(lib.nvJitLinkComplete(handle), handle)
            self._linked = {}
        else:
            out = ffi.new("void **")
            size = ffi.new("size_t *")
            status = lib.cuLinkComplete(self._box[0], out, size)
            if status:
                raise self._driver_failure(status, "cuLinkComplete")
            self._linked = {"cubin": ffi.buffer(out[0], size[0])[:]}
        self._info_log = self.get_info_log()
        self._error_log = self.get_error_log()

    def _fetch_nvjitlink(self, target_type: str) -> bytes:
        handle = self._box[0]
        size = ffi.new("size_t *")
        if target_type == "cubin":
            get_size, get = lib.nvJitLinkGetLinkedCubinSize, lib.nvJitLinkGetLinkedCubin
            check_nvjitlink(get_size(handle, size), handle)
            buf = ffi.new("char[]", size[0])
            check_nvjitlink(get(handle, buf), handle)
            return ffi.buffer(buf, size[0])[:]  # type: ignore[no-any-return]  # cffi
        check_nvjitlink(lib.nvJitLinkGetLinkedPtxSize(handle, size), handle)
        buf = ffi.new("char[]", size[0])
        check_nvjitlink(lib.nvJitLinkGetLinkedPtx(handle, buf), handle)
        return ffi.buffer(buf, size[0])[:]  # type: ignore[no-any-return]  # cffi

    def get_error_log(self) -> str:
        """Return the linker's error log.

        Returns
        -------
        str
            Empty when there were no errors.
        """
        if self._closed or self._error_log is not None:
            return self._error_log or ""
        if self._backend is CompilerBackendType.NVJITLINK:
            return self._nvjitlink_log(lib.nvJitLinkGetErrorLogSize, lib.nvJitLinkGetErrorLog)
        return ffi.string(self._drv_error_log).decode("utf-8", "backslashreplace")  # type: ignore[no-any-return]  # cffi

    def get_info_log(self) -> str:
        """Return the linker's information log.

        Returns
        -------
        str
            Empty when the linker reported nothing.
        """
        if self._closed or self._info_log is not None:
            return self._info_log or ""
        if self._backend is CompilerBackendType.NVJITLINK:
            return self._nvjitlink_log(lib.nvJitLinkGetInfoLogSize, lib.nvJitLinkGetInfoLog)
        return ffi.string(self._drv_info_log).decode("utf-8", "backslashreplace")  # type: ignore[no-any-return]  # cffi

    def close(self) -> None:
        """Destroy the linker (``nvJitLinkDestroy`` / ``cuLinkDestroy``); idempotent.

        The logs stay readable after closing.
        """
        with self._lock:
            if self._closed:
                return
            if self._info_log is None:
                try:  # keep the logs readable after close()
                    self._info_log = self.get_info_log()
                    self._error_log = self.get_error_log()
                except CUDAError:
                    self._info_log = self._error_log = ""
            self._closed = True
            finalizer, self._finalizer = self._finalizer, None
        if finalizer is None or finalizer.detach() is None:
            return
        if self._backend is CompilerBackendType.NVJITLINK:
            check_nvjitlink(lib.nvJitLinkDestroy(self._box))
        else:
            status = lib.cuLinkDestroy(self._box[0])
            if status:
                raise driver_error(status, "cuLinkDestroy")
        self._keep = []

    def _close_quietly(self) -> None:
        try:
            self.close()
        except CUDAError:
            pass

    def _nvjitlink_log(self, get_size: Callable[..., int], get_log: Callable[..., int]) -> str:
        """Read one of nvJitLink's logs (raising :class:`NVJitLinkError` on failure)."""
        text, status = read_log(get_size, get_log, self._box[0], "backslashreplace")
        if status:
            check_nvjitlink(status)
        return text or ""

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("Linker is closed; it cannot be used after close()")

    def _driver_failure(self, status: int, what: str) -> CUDAError:
        """Build the exception for a failed cuLink* call, error log appended."""
        err = driver_error(status, what)
        log = ffi.string(self._drv_error_log).decode("utf-8", "backslashreplace")
        if log:
            return CUDAError(
                f"{err}\nLinker error log: {log}", code=err.code, name=err.name, log=log
            )
        return err

    # -- class methods and properties ----------------------------------------

    @classmethod
    def which_backend(cls) -> CompilerBackendType:
        """Return the linking backend this process uses.

        nvJitLink when a version 12.3 or newer can be loaded, otherwise the
        driver's ``cuLink*`` API (which cannot link LTO-IR or emit PTX).  The
        decision is made once; falling back emits a :class:`RuntimeWarning`
        saying why.

        Returns
        -------
        CompilerBackendType
            ``CompilerBackendType.NVJITLINK`` or ``CompilerBackendType.DRIVER``.
        """
        return which_backend(stacklevel=4)

    @property
    def handle(self) -> int:
        """int: the address of the ``nvJitLinkHandle`` or ``CUlinkState``."""
        self._require_open()
        return as_int_handle(self._box[0])

    @property
    def backend(self) -> CompilerBackendType:
        """CompilerBackendType: ``"nvJitLink"`` or ``"driver"``."""
        return self._backend


# -- private helpers -----------------------------------------------------------


def _input_buffer(data: bytes | bytearray | memoryview, code_type: str) -> Any:
    """Return a ``char[]`` copy of ``data``; PTX gets a terminating NUL."""
    data = bytes(data)
    if code_type == "ptx" and data.endswith(b"\0"):
        data = data[:-1]
    if code_type == "ptx":
        return ffi.new("char[]", data)  # length + 1, NUL-terminated
    buf = ffi.new("char[]", len(data))
    ffi.memmove(buf, data, len(data))
    return buf


def _destroy_nvjitlink(box: Any) -> None:
    status = lib.nvJitLinkDestroy(box)
    if status:
        warnings.warn(
            f"nvJitLinkDestroy (Linker finalizer) failed with status {status}",
            CUDAWarning,
            stacklevel=2,
        )


def _destroy_culink(box: Any, keep: list[Any]) -> None:
    del keep  # buffers the driver wrote into, kept alive until here
    warn_cuda("cuLinkDestroy (Linker finalizer)", lib.cuLinkDestroy(box[0]))
