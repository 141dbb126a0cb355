# SPDX-License-Identifier: Apache-2.0
"""Linking device code: :class:`Linker` and :class:`LinkerOptions`.

The linker combines PTX, cubin, fatbin, LTO-IR, object and library inputs
into one cubin (or PTX, after link-time optimization).  It uses nvJitLink
when a usable one (12.3 or newer) is installed, and the CUDA driver's
``cuLink*`` JIT linker otherwise; the choice is made once per process and
reported by :meth:`Linker.which_backend`.  nvJitLink needs no GPU; the driver
linker needs a driver and a current context.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from dataclasses import dataclass

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import (
    CUDAError,
    CUDAWarning,
    LibraryNotFoundError,
    NVJitLinkError,
    check_nvjitlink,
    driver_error,
    warn_cuda,
)
from cuda_core._module import ObjectCode
from cuda_core._utils import as_int_handle, check_or_create_options
from cuda_core.typing import CompilerBackendType

__all__ = ["Linker", "LinkerOptions"]

#: Size of each driver-linker log buffer (info and error), as upstream.
_DRIVER_LOG_SIZE = 4 * 1024 * 1024

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

_BACKEND_LOCK = threading.Lock()
_BACKEND = None  # CompilerBackendType, decided once


class Linker:
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

    def __init__(self, *object_codes, options=None):
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

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._closed else f"handle={self.handle:#x}"
        return f"<Linker backend={str(self._backend)!r} {state}>"

    # -- construction ------------------------------------------------------

    def _init_nvjitlink(self, options):
        flags = options._nvjitlink_flags()
        keep = [ffi.new("char[]", f) for f in flags]
        c_flags = ffi.new("const char *[]", keep) if keep else ffi.NULL
        box = ffi.new("nvJitLinkHandle *")
        check_nvjitlink(lib.nvJitLinkCreate(box, len(keep), c_flags))
        self._box = box
        self._finalizer = weakref.finalize(self, _destroy_nvjitlink, box)

    def _init_driver(self, options, object_codes):
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

    def _add(self, code):
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

    def link(self, target_type):
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
            data = self._linked.get(target_type)
            if data is None:
                data = self._fetch_nvjitlink(target_type)
                self._linked[target_type] = data
        return ObjectCode._init(data, target_type, name=self._options.name)

    def _complete(self):
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

    def _fetch_nvjitlink(self, target_type):
        handle = self._box[0]
        size = ffi.new("size_t *")
        if target_type == "cubin":
            get_size, get = lib.nvJitLinkGetLinkedCubinSize, lib.nvJitLinkGetLinkedCubin
            check_nvjitlink(get_size(handle, size), handle)
            buf = ffi.new("char[]", size[0])
            check_nvjitlink(get(handle, buf), handle)
            return ffi.buffer(buf, size[0])[:]
        check_nvjitlink(lib.nvJitLinkGetLinkedPtxSize(handle, size), handle)
        buf = ffi.new("char[]", size[0])
        check_nvjitlink(lib.nvJitLinkGetLinkedPtx(handle, buf), handle)
        return ffi.buffer(buf, size[0])[:]

    def get_error_log(self):
        """Return the linker's error log.

        Returns
        -------
        str
            Empty when there were no errors.
        """
        if self._closed or self._error_log is not None:
            return self._error_log or ""
        if self._backend is CompilerBackendType.NVJITLINK:
            return _nvjitlink_log(
                self._box[0], lib.nvJitLinkGetErrorLogSize, lib.nvJitLinkGetErrorLog
            )
        return ffi.string(self._drv_error_log).decode("utf-8", "backslashreplace")

    def get_info_log(self):
        """Return the linker's information log.

        Returns
        -------
        str
            Empty when the linker reported nothing.
        """
        if self._closed or self._info_log is not None:
            return self._info_log or ""
        if self._backend is CompilerBackendType.NVJITLINK:
            return _nvjitlink_log(
                self._box[0], lib.nvJitLinkGetInfoLogSize, lib.nvJitLinkGetInfoLog
            )
        return ffi.string(self._drv_info_log).decode("utf-8", "backslashreplace")

    def close(self):
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

    def _close_quietly(self):
        try:
            self.close()
        except CUDAError:
            pass

    def _require_open(self):
        if self._closed:
            raise RuntimeError("Linker is closed; it cannot be used after close()")

    def _driver_failure(self, status, what):
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
    def which_backend(cls):
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
        global _BACKEND
        if _BACKEND is not None:
            return _BACKEND
        with _BACKEND_LOCK:
            if _BACKEND is None:
                _BACKEND, reason = _decide_backend()
                if reason:
                    warnings.warn(reason, RuntimeWarning, stacklevel=3)
        return _BACKEND

    @property
    def handle(self):
        """int: the address of the ``nvJitLinkHandle`` or ``CUlinkState``."""
        self._require_open()
        return as_int_handle(self._box[0])

    @property
    def backend(self):
        """CompilerBackendType: ``"nvJitLink"`` or ``"driver"``."""
        return self._backend

    @property
    def is_closed(self):
        """bool: whether :meth:`close` has been called."""
        return self._closed


@dataclass
class LinkerOptions:
    """Options for :class:`Linker`.

    Every field defaults to ``None``, meaning "not passed to the linker".  Not
    every option applies to both backends: with the driver linker, ``time``,
    ``ptx``, ``ptxas_options``, ``split_compile`` and
    ``split_compile_extended`` raise :class:`ValueError`, and ``ftz``,
    ``prec_div``, ``prec_sqrt``, ``fma``, ``kernels_used``,
    ``variables_used`` and ``optimize_unused_variables`` are ignored with a
    :class:`DeprecationWarning`.

    Attributes
    ----------
    name : str
        Name passed down to the linked :class:`~cuda_core.ObjectCode`.
        Default ``"<default linker>"``.
    arch : str, optional
        Target architecture, e.g. ``"sm_90"``.  Default: the architecture of
        ``Device()``; without a GPU it must be given.
    max_register_count : int, optional
        Maximum number of registers per thread.
    time : bool, optional
        Print timing information to the info log.
    verbose : bool, optional
        Print verbose messages to the info log.
    link_time_optimization : bool, optional
        Perform link-time optimization (needed for LTO-IR inputs).
    ptx : bool, optional
        Emit PTX instead of cubin; only with ``link_time_optimization``.
    optimization_level : int, optional
        Optimization level (nvJitLink accepts 0 and 3; the driver 0 to 4).
    debug : bool, optional
        Generate debug information.
    lineinfo : bool, optional
        Generate line information.
    ftz : bool, optional
        Flush single-precision denormals to zero.
    prec_div : bool, optional
        IEEE round-to-nearest single-precision division.
    prec_sqrt : bool, optional
        IEEE round-to-nearest single-precision square root.
    fma : bool, optional
        Contract multiplies and adds into fused multiply-adds.
    kernels_used : str or sequence of str, optional
        Kernels that are used; others may be removed.
    variables_used : str or sequence of str, optional
        Variables that are used; others may be removed.
    optimize_unused_variables : bool, optional
        Assume unreferenced device variables may be removed.
    ptxas_options : str or sequence of str, optional
        Options passed to ptxas.
    split_compile : int, optional
        Maximum threads for split compilation (0: all processors, 1: off).
    split_compile_extended : int, optional
        Split compilation in LTO mode, same convention.
    no_cache : bool, optional
        Do not cache intermediate results.
    numba_debug : bool, optional
        Accepted for compatibility; no linker honours it (a warning says so).
    """

    name: str | None = "<default linker>"
    arch: str | None = None
    max_register_count: int | None = None
    time: bool | None = None
    verbose: bool | None = None
    link_time_optimization: bool | None = None
    ptx: bool | None = None
    optimization_level: int | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    ftz: bool | None = None
    prec_div: bool | None = None
    prec_sqrt: bool | None = None
    fma: bool | None = None
    kernels_used: str | tuple[str] | list[str] | None = None
    variables_used: str | tuple[str] | list[str] | None = None
    optimize_unused_variables: bool | None = None
    ptxas_options: str | tuple[str] | list[str] | None = None
    split_compile: int | None = None
    split_compile_extended: int | None = None
    no_cache: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self):
        if self.name is None:
            self.name = "<default linker>"
        _check_str("LinkerOptions", "name", self.name)
        if self.arch is not None:
            _check_arch("LinkerOptions", self.arch)
        for field in (
            "time",
            "verbose",
            "link_time_optimization",
            "ptx",
            "debug",
            "lineinfo",
            "ftz",
            "prec_div",
            "prec_sqrt",
            "fma",
            "optimize_unused_variables",
            "no_cache",
            "numba_debug",
        ):
            _check_bool("LinkerOptions", field, getattr(self, field))
        _check_int("LinkerOptions", "max_register_count", self.max_register_count, low=1)
        _check_int("LinkerOptions", "optimization_level", self.optimization_level, 0, 4)
        for field in ("split_compile", "split_compile_extended"):
            _check_int("LinkerOptions", field, getattr(self, field), low=0, allow_bool=True)
        for field in ("kernels_used", "variables_used", "ptxas_options"):
            _check_str_or_seq("LinkerOptions", field, getattr(self, field))
        if self.ptx and not self.link_time_optimization:
            raise ValueError(
                "LinkerOptions.ptx=True requires link_time_optimization=True "
                "(PTX output is only produced by link-time optimization)"
            )

    def as_bytes(self, backend="nvjitlink"):
        """Render these options as nvJitLink flags.

        Parameters
        ----------
        backend : str
            Only ``"nvjitlink"`` is supported (the driver takes options as
            ``CUjit_option`` values, not strings).

        Returns
        -------
        list of bytes
            E.g. ``[b"-arch=sm_90", b"-lto"]``.

        Raises
        ------
        ValueError
            For another backend, or when ``arch`` is unset and no GPU can be
            queried for it.
        RuntimeError
            If nvJitLink is not available.
        """
        backend = str(backend).lower()
        if backend != "nvjitlink":
            raise ValueError(f"as_bytes() only supports 'nvjitlink' backend, got '{backend}'")
        if Linker.which_backend() is not CompilerBackendType.NVJITLINK:
            raise RuntimeError("nvJitLink backend is not available")
        return self._nvjitlink_flags()

    def _nvjitlink_flags(self):
        arch = self.arch if self.arch is not None else _device_arch("LinkerOptions")
        out = [f"-arch={arch}"]
        if self.max_register_count is not None:
            out.append(f"-maxrregcount={self.max_register_count}")
        if self.time:
            out.append("-time")
        if self.verbose:
            out.append("-verbose")
        if self.link_time_optimization:
            out.append("-lto")
        if self.ptx:
            out.append("-ptx")
        if self.optimization_level is not None:
            out.append(f"-O{self.optimization_level}")
        if self.debug:
            out.append("-g")
        if self.lineinfo:
            out.append("-lineinfo")
        for field, flag in (
            ("ftz", "ftz"),
            ("prec_div", "prec-div"),
            ("prec_sqrt", "prec-sqrt"),
            ("fma", "fma"),
        ):
            value = getattr(self, field)
            if value is not None:
                out.append(f"-{flag}={'true' if value else 'false'}")
        out.extend(f"-kernels-used={k}" for k in _as_list(self.kernels_used))
        out.extend(f"-variables-used={v}" for v in _as_list(self.variables_used))
        if self.optimize_unused_variables:
            out.append("-optimize-unused-variables")
        out.extend(f"-Xptxas={o}" for o in _as_list(self.ptxas_options))
        if self.split_compile is not None:
            out.append(f"-split-compile={int(self.split_compile)}")
        if self.split_compile_extended is not None:
            out.append(f"-split-compile-extended={int(self.split_compile_extended)}")
        if self.no_cache:
            out.append("-no-cache")
        return [o.encode() for o in out]

    def _driver_options(self):
        """Return ``(keys, values, keep)`` for ``cuLinkCreate``.

        ``keep[0]``/``keep[1]`` are the info and error log buffers.
        """
        for field in ("time", "ptx", "ptxas_options", "split_compile", "split_compile_extended"):
            if getattr(self, field) is not None:
                raise ValueError(f"{field} option is not supported by the driver API")
        for field in (
            "ftz",
            "prec_div",
            "prec_sqrt",
            "fma",
            "kernels_used",
            "variables_used",
            "optimize_unused_variables",
        ):
            if getattr(self, field) is not None:
                warnings.warn(
                    f"{field} option is deprecated in the driver API and is ignored",
                    DeprecationWarning,
                    stacklevel=4,
                )
        info = ffi.new("char[]", _DRIVER_LOG_SIZE)
        error = ffi.new("char[]", _DRIVER_LOG_SIZE)
        keys = [
            lib.CU_JIT_INFO_LOG_BUFFER,
            lib.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            lib.CU_JIT_ERROR_LOG_BUFFER,
            lib.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ]
        values = [info, _as_void(_DRIVER_LOG_SIZE), error, _as_void(_DRIVER_LOG_SIZE)]
        if self.arch is not None:
            keys.append(lib.CU_JIT_TARGET)
            values.append(_as_void(_jit_target(self.arch)))
        if self.max_register_count is not None:
            keys.append(lib.CU_JIT_MAX_REGISTERS)
            values.append(_as_void(self.max_register_count))
        if self.verbose:
            keys.append(lib.CU_JIT_LOG_VERBOSE)
            values.append(_as_void(1))
        if self.link_time_optimization:
            keys.append(lib.CU_JIT_LTO)
            values.append(_as_void(1))
        if self.optimization_level is not None:
            keys.append(lib.CU_JIT_OPTIMIZATION_LEVEL)
            values.append(_as_void(self.optimization_level))
        if self.debug:
            keys.append(lib.CU_JIT_GENERATE_DEBUG_INFO)
            values.append(_as_void(1))
        if self.lineinfo:
            keys.append(lib.CU_JIT_GENERATE_LINE_INFO)
            values.append(_as_void(1))
        if self.no_cache:
            keys.append(lib.CU_JIT_CACHE_MODE)
            values.append(_as_void(lib.CU_JIT_CACHE_OPTION_NONE))
        return keys, values, [info, error]


# -- private helpers -----------------------------------------------------------


def _decide_backend():
    """Return ``(backend, reason_for_fallback_or_None)``."""
    from cuda_core._loader import ensure_loaded, nvjitlink_version

    common = (
        "the CUDA driver's cuLink* API will be used for linking instead; it cannot "
        "link LTO-IR or emit PTX. Install nvJitLink 12.3 or newer "
        '(pip install "cuda-core-cffi[cu13]") for full support.'
    )
    try:
        ensure_loaded("nvjitlink")
    except LibraryNotFoundError as e:
        return CompilerBackendType.DRIVER, f"nvJitLink was not found ({e}); {common}"
    try:
        version = nvjitlink_version()
    except NVJitLinkError:
        return CompilerBackendType.DRIVER, f"the installed nvJitLink is older than 12.3; {common}"
    if tuple(version) < (12, 3):
        return (
            CompilerBackendType.DRIVER,
            f"the installed nvJitLink {version[0]}.{version[1]} is older than 12.3; {common}",
        )
    return CompilerBackendType.NVJITLINK, None


def _device_arch(owner):
    """Return ``"sm_XY"`` for ``Device()``, or raise a ValueError saying to pass arch=."""
    arch, reason = _query_device_arch()
    if arch is None:
        raise ValueError(
            f"{owner}.arch is not set and the GPU architecture could not be determined "
            f"({reason}). Pass arch= explicitly, e.g. {owner}(arch='sm_90')."
        )
    return arch


def _query_device_arch():
    """Return ``("sm_XY", None)`` from ``Device()``, or ``(None, reason)``."""
    try:
        from cuda_core._device import Device
    except ImportError as e:  # pragma: no cover - only while the package is partial
        return None, f"the device module is unavailable: {e}"
    try:
        return f"sm_{Device().arch}", None
    except CUDAError as e:
        return None, str(e).splitlines()[0]


def _jit_target(arch):
    """Map ``"sm_90"`` / ``"sm_90a"`` / ``"sm_100f"`` to a ``CUjit_target`` value."""
    digits = arch.split("_", 1)[1]
    suffix = ""
    if digits and digits[-1].isalpha():
        digits, suffix = digits[:-1], digits[-1]
    value = int(digits)
    if suffix == "a":
        value += 0x10000  # CU_COMPUTE_ACCELERATED_TARGET_BASE
    elif suffix == "f":
        value += 0x20000  # CU_COMPUTE_FAMILY_TARGET_BASE
    return value


def _as_void(value):
    return ffi.cast("void *", int(value))


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    return [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]


def _input_buffer(data, code_type):
    """Return a ``char[]`` copy of ``data``; PTX gets a terminating NUL."""
    data = bytes(data)
    if code_type == "ptx" and data.endswith(b"\0"):
        data = data[:-1]
    if code_type == "ptx":
        return ffi.new("char[]", data)  # length + 1, NUL-terminated
    buf = ffi.new("char[]", len(data))
    ffi.memmove(buf, data, len(data))
    return buf


def _nvjitlink_log(handle, get_size, get_log):
    size = ffi.new("size_t *")
    check_nvjitlink(get_size(handle, size))
    if size[0] <= 1:
        return ""
    buf = ffi.new("char[]", size[0])
    check_nvjitlink(get_log(handle, buf))
    return ffi.string(buf).decode("utf-8", "backslashreplace")


def _destroy_nvjitlink(box):
    status = lib.nvJitLinkDestroy(box)
    if status:
        warnings.warn(
            f"nvJitLinkDestroy (Linker finalizer) failed with status {status}",
            CUDAWarning,
            stacklevel=2,
        )


def _destroy_culink(box, keep):
    del keep  # buffers the driver wrote into, kept alive until here
    warn_cuda("cuLinkDestroy (Linker finalizer)", lib.cuLinkDestroy(box[0]))


# -- shared validation helpers (also used by ProgramOptions) --------------------


def _check_str(owner, field, value, *, path_ok=False):
    if value is None:
        return
    ok = isinstance(value, str) or (path_ok and isinstance(value, os.PathLike))
    if not ok:
        accepted = "a str or os.PathLike" if path_ok else "a str"
        raise TypeError(f"{owner}.{field} must be {accepted}, not {type(value).__name__}")


def _check_bool(owner, field, value):
    if value is not None and not isinstance(value, bool):
        raise TypeError(
            f"{owner}.{field} must be True, False or None, not {type(value).__name__} ({value!r})"
        )


def _check_int(owner, field, value, low=None, high=None, *, allow_bool=False):
    if value is None:
        return
    if (isinstance(value, bool) and not allow_bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{field} must be an int, not {type(value).__name__}")
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            raise ValueError(f"{owner}.{field} must be >= {low}, got {value}")
        raise ValueError(f"{owner}.{field} must be between {low} and {high}, got {value}")


def _check_str_or_seq(owner, field, value, *, path_ok=False):
    if value is None or isinstance(value, str) or (path_ok and isinstance(value, os.PathLike)):
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if not (isinstance(item, str) or (path_ok and isinstance(item, os.PathLike))):
                raise TypeError(f"{owner}.{field}[{i}] must be a str, not {type(item).__name__}")
        return
    raise TypeError(
        f"{owner}.{field} must be a str or a list/tuple of str, not {type(value).__name__}"
    )


def _check_arch(owner, arch):
    if not isinstance(arch, str):
        raise TypeError(f"{owner}.arch must be a str such as 'sm_90', not {type(arch).__name__}")
    prefix, _, rest = arch.partition("_")
    digits = rest[:-1] if rest[-1:].isalpha() else rest
    # str.isdigit/isalpha accept any Unicode digit or letter: only ASCII is an arch.
    if not arch.isascii() or prefix not in ("sm", "compute", "lto") or not digits.isdigit():
        raise ValueError(
            f"{owner}.arch={arch!r} is not a valid architecture; expected 'sm_<CC>' "
            f"(e.g. 'sm_90', 'sm_90a') or 'compute_<CC>'"
        )
