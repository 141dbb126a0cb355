# SPDX-License-Identifier: Apache-2.0
"""Compiling device code: :class:`Program`.

A :class:`Program` compiles CUDA C++ with NVRTC, NVVM IR with libNVVM, or
assembles PTX with the linker (nvJitLink or the driver), into an
:class:`~cuda_core.ObjectCode`.  NVRTC, nvJitLink and libNVVM run without a
GPU; only the driver linker and loading the result need one.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import TYPE_CHECKING, Any

import cuda_core._program_status as _status
import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle, check_or_create_options
from cuda_core._compile_common import _SUPPORTED_TARGETS, arch_str, cpp_source_hint
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import (
    CUDAWarning,
    LibraryNotFoundError,
    check_nvrtc,
    check_nvvm,
    nvrtc_log,
    read_log,
    shown_as,
)
from cuda_core._lifetime import ClosedFlag
from cuda_core._linker import Linker
from cuda_core._loader import (
    ensure_loaded,
    install_hint,
    libdevice_path,
)
from cuda_core._module import ObjectCode
from cuda_core._program_options import ProgramOptions, _translate_to_linker_options
from cuda_core.typing import CompilerBackendType, PCHStatusType

if TYPE_CHECKING:
    from typing import Callable, Iterable, TextIO

    from cuda_core._linker_options import LinkerOptions
    from cuda_core.utils import ProgramCacheResource

__all__ = ["Program"]

_SUPPORTED_CODE_TYPES = tuple(_SUPPORTED_TARGETS)


class Program(ClosedFlag):
    """Compile device code into an :class:`~cuda_core.ObjectCode`.

    Parameters
    ----------
    code : str, bytes or bytearray
        The source.  CUDA C++ and PTX must be a ``str``; NVVM IR a ``str``
        (LLVM text) or bytes (text or bitcode).
    code_type : str
        ``"c++"`` (NVRTC), ``"ptx"`` (the linker) or ``"nvvm"`` (libNVVM);
        case-insensitive.
    options : ProgramOptions, dict or None
        Compilation options; see :class:`ProgramOptions`.  As in
        ``cuda.core``, ``use_libdevice`` is ignored for C++ and PTX, and
        ``numba_debug`` for PTX.

    Raises
    ------
    ValueError
        For an unknown ``code_type`` (also a RuntimeError, as in
        ``cuda.core``), or ``extra_sources`` with C++ or PTX.
    TypeError
        If ``code`` has the wrong type for ``code_type`` (``"Expected type
        str, but got <type>"`` for C++ and PTX).
    LibraryNotFoundError
        If the backend library cannot be found.

    Notes
    -----
    A lock serializes :meth:`compile` per program, so one program may be
    shared between threads.
    """

    _options: ProgramOptions
    _lock: threading.Lock
    _closed: bool
    _pch_status: PCHStatusType | None
    _box: Any  # nvrtcProgram * / nvvmProgram * cdata, or None
    _finalizer: weakref.finalize[..., Program] | None
    _linker: Linker | None
    _linker_used: bool
    _keep: list[Any]
    _libdevice_added: bool
    _nvrtc_compiled: bool
    _code_type: str
    _source: str | bytes | bytearray
    _backend: CompilerBackendType
    _code_bytes: bytes
    _ptx: ObjectCode
    _linker_options: LinkerOptions

    def __init__(
        self,
        code: str | bytes | bytearray,
        code_type: str,
        options: ProgramOptions | dict[str, Any] | None = None,
    ) -> None:
        self._options = options = check_or_create_options(
            ProgramOptions, options, "Program options"
        )
        code_type = str(code_type).lower()
        self._lock = threading.Lock()
        self._closed = False
        self._pch_status = None
        self._box = None
        self._finalizer = None
        self._linker = None
        self._linker_used = False
        self._keep = []
        self._libdevice_added = False
        self._nvrtc_compiled = False
        self._code_type = code_type
        self._source = code
        if code_type == "c++":
            _expect_str(code, code_type)
            if options.extra_sources is not None:
                raise ValueError(
                    "extra_sources is not supported by the NVRTC backend (C++ code_type)"
                )
            ensure_loaded("nvrtc")
            self._backend = CompilerBackendType.NVRTC
            self._code_bytes = code.encode()  # type: ignore[union-attr]  # a str (checked)
            self._new_nvrtc_program()
        elif code_type == "ptx":
            _expect_str(code, code_type)
            if options.extra_sources is not None:
                raise ValueError("extra_sources is not supported by the PTX backend.")
            self._ptx = ObjectCode._init(code.encode(), "ptx", name=options.name)  # type: ignore[union-attr]  # a str here: checked in __init__
            self._linker_options = _translate_to_linker_options(options)
            with cpp_source_hint(code, code_type):
                self._linker = Linker(self._ptx, options=self._linker_options)
            self._backend = self._linker.backend
        elif code_type == "nvvm":
            if isinstance(code, str):
                code_bytes = code.encode("utf-8")
            elif isinstance(code, (bytes, bytearray)):
                code_bytes = bytes(code)
            else:
                raise TypeError("NVVM IR code must be provided as str, bytes, or bytearray")
            ensure_loaded("nvvm")
            self._backend = CompilerBackendType.NVVM
            self._new_nvvm_program(code_bytes)
        else:
            if options.use_libdevice:
                raise ValueError("use_libdevice is only supported by the NVVM backend")
            raise _UnsupportedCodeTypeError(
                f"Unsupported code_type={code_type!r} "
                f"(supported_code_types={_SUPPORTED_CODE_TYPES!r})"
            )

    def __repr__(self) -> str:
        return f"<Program backend='{self._backend}'>"

    # -- construction helpers ------------------------------------------------

    def _new_nvrtc_program(self) -> None:
        box = ffi.new("nvrtcProgram *")
        check_nvrtc(
            lib.nvrtcCreateProgram(
                box,
                self._code_bytes,
                self._options.name.encode(),  # type: ignore[union-attr]  # a str once options exist
                0,
                ffi.NULL,
                ffi.NULL,
            )
        )
        self._box = box
        self._finalizer = weakref.finalize(
            self, _destroy_or_warn, lib.nvrtcDestroyProgram, "nvrtcDestroyProgram", box
        )

    def _destroy_program(self) -> None:
        """Destroy the NVRTC / NVVM program (explicit path: failures raise)."""
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is None or finalizer.detach() is None:
            return
        if self._backend is CompilerBackendType.NVRTC:
            check_nvrtc(lib.nvrtcDestroyProgram(self._box))
        else:
            check_nvvm(lib.nvvmDestroyProgram(self._box))

    def _new_nvvm_program(self, code_bytes: bytes) -> None:
        box = ffi.new("nvvmProgram *")
        check_nvvm(lib.nvvmCreateProgram(box))
        self._box = box
        self._finalizer = weakref.finalize(
            self, _destroy_or_warn, lib.nvvmDestroyProgram, "nvvmDestroyProgram", box
        )
        self._add_nvvm_module(code_bytes, self._options.name)
        for name, source in self._options._extra_sources_bytes() or ():
            self._add_nvvm_module(source, name.decode())

    def _add_nvvm_module(self, data: bytes, name: str | None, *, lazy: bool = False) -> None:
        buf = ffi.new("char[]", data)
        c_name = ffi.new("char[]", name.encode()) if name is not None else ffi.NULL
        self._keep.extend((buf, c_name))  # libNVVM may reference them until destroyed
        add = lib.nvvmLazyAddModuleToProgram if lazy else lib.nvvmAddModuleToProgram
        check_nvvm(add(self._box[0], buf, len(data), c_name), self._box[0])

    # -- methods -----------------------------------------------------------

    def compile(
        self,
        target_type: str,
        name_expressions: tuple[str, ...] | list[str] = (),
        logs: TextIO | None = None,
        *,
        cache: ProgramCacheResource | None = None,
    ) -> ObjectCode:
        """Compile the program to ``target_type``.

        Parameters
        ----------
        target_type : str
            NVRTC: ``"ptx"``, ``"cubin"`` or ``"ltoir"``; NVVM: ``"ptx"`` or
            ``"ltoir"``; PTX (linker): ``"cubin"`` or ``"ptx"``.
        name_expressions : sequence of str or bytes, optional
            NVRTC name expressions (e.g. ``"add<float>"``) whose mangled
            symbols go into :attr:`ObjectCode.symbol_mapping`.
        logs : object with a ``write(str)`` method, optional
            Receives the compiler log of a successful compilation (a failed
            one puts its log into the exception's message).
        cache : ProgramCacheResource, optional
            Look the result up in, and store it into, this cache (keyed by
            :func:`~cuda_core.utils.make_program_cache_key`, whose checks
            apply).  A hit returns a fresh :class:`~cuda_core.ObjectCode`
            without compiling, and ``logs`` receives nothing.  Cannot be
            combined with ``name_expressions`` (the symbol mapping is not
            cached).

        Returns
        -------
        ObjectCode
            Named after :attr:`ProgramOptions.name`.

        Raises
        ------
        TypeError
            If ``cache`` is not a :class:`~cuda_core.utils.ProgramCacheResource`.
        ValueError
            For a target the backend cannot produce, ``cache`` together with
            ``name_expressions``, or options the cache cannot key (see
            :func:`~cuda_core.utils.make_program_cache_key`).
        NVRTCError, NVVMError, NVJitLinkError, CUDAError
            If compilation fails; the message holds the full compiler log.
        RuntimeError
            After :meth:`close`.

        Warns
        -----
        RuntimeWarning
            When compiling C++ to PTX (also on a cache hit, as in
            ``cuda.core``) while a CUDA driver older than NVRTC is installed
            (that driver cannot load the PTX; compile to cubin), or
            when precompiled-header creation fails (the warning names why).
        """
        target_type = str(target_type).lower()
        if isinstance(name_expressions, (str, bytes)):
            raise TypeError(
                "name_expressions must be a sequence of str/bytes, not a single "
                f"{type(name_expressions).__name__}; wrap it in a tuple"
            )
        name_expressions = tuple(name_expressions or ())
        if cache is None:
            self._check_target(target_type)
            with self._lock:
                self._require_open()
                return self._compile(target_type, name_expressions, logs)
        cache_type, make_key = _slots.program_cache_support()
        if cache_type is None or not isinstance(cache, cache_type):
            raise TypeError(
                "cache must be an instance of cuda_core.utils.ProgramCacheResource; "
                f"got {type(cache).__name__}"
            )
        if name_expressions:
            raise ValueError(
                "Program.compile(cache=...) does not support name_expressions: the symbol "
                "mapping is not stored in the cache, so get_kernel(name_expression) would "
                "fail on a cache hit. Compile without cache=, or build a key with "
                "make_program_cache_key() and look up mangled names yourself."
            )
        code = self._source
        if self._code_type == "nvvm" and isinstance(code, str):
            code = code.encode("utf-8")
        # The key builder validates the target first (its ValueError wins).
        key = make_key(  # type: ignore[misc]  # registered together with cache_type
            code=code,
            code_type=self._code_type,
            options=self._options,
            target_type=target_type,
        )
        self._check_target(target_type)
        with self._lock:
            self._require_open()
            data = cache.get(key)  # type: ignore[arg-type]  # typed more narrowly than this call passes
            if data is not None:
                if self._backend is CompilerBackendType.NVRTC and target_type == "ptx":
                    _status._warn_if_ptx_unloadable(stacklevel=3)
                return ObjectCode._init(data, target_type, name=self._options.name)
            result = self._compile(target_type, name_expressions, logs)
            cache[key] = result  # type: ignore[index]  # typed more narrowly than this call passes
            return result

    def _check_target(self, target_type: str) -> None:
        supported = _SUPPORTED_TARGETS[self._code_type]
        if target_type not in supported:
            raise ValueError(
                f'Unsupported target_type="{target_type}" for {self._backend} '
                f"(supported: {', '.join(repr(t) for t in supported)})"
            )

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("Program has been closed; it cannot compile after close()")

    def _compile(
        self, target_type: str, name_expressions: tuple[str | bytes, ...], logs: TextIO | None
    ) -> ObjectCode:
        if self._backend is CompilerBackendType.NVRTC:
            return self._compile_nvrtc(target_type, name_expressions, logs)
        if self._backend is CompilerBackendType.NVVM:
            if name_expressions:
                raise ValueError("name_expressions are only supported by the NVRTC backend")
            with cpp_source_hint(self._source, "nvvm"):
                return self._compile_nvvm(target_type, logs)
        if name_expressions:
            raise ValueError("name_expressions are only supported by the NVRTC backend")
        if self._linker_used:  # a linker links once; a second compile needs a new one
            self._linker.close()  # type: ignore[union-attr]
            self._linker = Linker(self._ptx, options=self._linker_options)
        self._linker_used = True
        # Only the PTX backend gets here, and it always has a linker.
        with cpp_source_hint(self._source, "ptx"):
            return self._linker.link(target_type)  # type: ignore[union-attr]  # set for the PTX backend

    def _compile_nvrtc(
        self, target_type: str, name_expressions: tuple[str | bytes, ...], logs: TextIO | None
    ) -> ObjectCode:
        options = self._options
        flags = options.as_bytes("nvrtc", target_type)
        # arch is a str here: as_bytes() above raises without one.
        if target_type == "cubin" and arch_str("ProgramOptions", options.arch).startswith(
            "compute_"
        ):
            raise ValueError(
                f"ProgramOptions.arch={options.arch!r} is a virtual architecture, which "
                "produces no cubin; use 'sm_<CC>' for cubin output"
            )
        if target_type == "ptx":
            _status._warn_if_ptx_unloadable(stacklevel=5)
        if self._nvrtc_compiled:
            # NVRTC takes name expressions only before a program's first
            # compilation, so every later compile runs on a fresh program.
            self._destroy_program()
            self._new_nvrtc_program()
        self._nvrtc_compiled = True
        result = self._nvrtc_compile_once(flags, target_type, name_expressions, logs)
        if not (options.create_pch or options.pch):
            self._pch_status = None
            return result
        status = _status._pch_status(self._box[0])
        if status is None:  # heap exhausted: grow it to what NVRTC asked for, then retry
            required = ffi.new("size_t *")
            check_nvrtc(lib.nvrtcGetPCHHeapSizeRequired(self._box[0], required), self._box[0])
            check_nvrtc(lib.nvrtcSetPCHHeapSize(required[0]))
            self._destroy_program()
            self._new_nvrtc_program()
            result = self._nvrtc_compile_once(flags, target_type, name_expressions, logs)
            status = _status._pch_status(self._box[0])
            if status is None:
                status = (
                    PCHStatusType.FAILED,
                    f"the PCH heap was still exhausted after growing it to {required[0]} bytes",
                )
        self._pch_status, reason = status
        if self._pch_status is PCHStatusType.FAILED:
            warnings.warn(
                f"precompiled header creation failed: {reason}",
                RuntimeWarning,
                stacklevel=4,
            )
        return result

    def _nvrtc_compile_once(
        self,
        flags: list[bytes],
        target_type: str,
        name_expressions: Iterable[str | bytes],
        logs: TextIO | None,
    ) -> ObjectCode:
        prog = self._box[0]
        names: list[tuple[str | bytes, bytes]] = []
        for expr in name_expressions:
            if isinstance(expr, str):
                c_expr = expr.encode()
            elif isinstance(expr, bytes):
                c_expr = expr
            else:
                raise TypeError(f"name expressions must be str or bytes, not {type(expr).__name__}")
            check_nvrtc(lib.nvrtcAddNameExpression(prog, c_expr), prog)
            names.append((expr, c_expr))
        c_flags = [ffi.new("char[]", f) for f in flags]
        c_array = ffi.new("const char *[]", c_flags)
        status = lib.nvrtcCompileProgram(prog, len(c_flags), c_array)
        if status:  # the log goes into the NVRTCError's message, not to ``logs``
            check_nvrtc(status, prog)
        if target_type == "ptx":
            get_size, get = lib.nvrtcGetPTXSize, lib.nvrtcGetPTX
        elif target_type == "cubin":
            get_size, get = lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN
        else:
            get_size, get = lib.nvrtcGetLTOIRSize, lib.nvrtcGetLTOIR
        size = ffi.new("size_t *")
        check_nvrtc(get_size(prog, size), prog)
        buf = ffi.new("char[]", size[0])
        check_nvrtc(get(prog, buf), prog)
        data = ffi.buffer(buf, size[0])[:]
        mapping: dict[str | bytes, bytes | None] = {}
        lowered = ffi.new("const char **")
        for expr, c_expr in names:
            check_nvrtc(lib.nvrtcGetLoweredName(prog, c_expr, lowered), prog)
            mapping[expr] = ffi.string(lowered[0]) if lowered[0] != ffi.NULL else None
        if logs is not None:
            text = nvrtc_log(prog)
            if text:
                logs.write(text)
        return ObjectCode._init(
            data,
            target_type,
            name=self._options.name,
            symbol_mapping=mapping,  # type: ignore[arg-type]  # typed more narrowly than this call passes
        )

    def _compile_nvvm(self, target_type: str, logs: TextIO | None) -> ObjectCode:
        prog = self._box[0]
        flags = self._options.as_bytes("nvvm", target_type)
        c_flags = [ffi.new("char[]", f) for f in flags]
        c_array = ffi.new("const char *[]", c_flags)
        check_nvvm(lib.nvvmVerifyProgram(prog, len(c_flags), c_array), prog)
        if self._options.use_libdevice and not self._libdevice_added:
            path = libdevice_path()
            if path is None:
                raise LibraryNotFoundError(
                    "use_libdevice=True but libdevice.10.bc could not be found next to the "
                    "loaded libNVVM, in the nvidia wheels or in $CUDA_HOME/nvvm/libdevice. "
                    f"Fix: {install_hint('nvvm')} or set CUDA_HOME."
                )
            with open(path, "rb") as f:
                self._add_nvvm_module(f.read(), None, lazy=True)
            self._libdevice_added = True
        check_nvvm(lib.nvvmCompileProgram(prog, len(c_flags), c_array), prog)
        size = ffi.new("size_t *")
        check_nvvm(lib.nvvmGetCompiledResultSize(prog, size), prog)
        buf = ffi.new("char[]", size[0])
        check_nvvm(lib.nvvmGetCompiledResult(prog, buf), prog)
        data = ffi.buffer(buf, size[0])[:]
        if logs is not None:
            text, status = read_log(
                lib.nvvmGetProgramLogSize, lib.nvvmGetProgramLog, prog, "backslashreplace"
            )
            if status:
                check_nvvm(status, prog)
            if text:
                logs.write(text)
        return ObjectCode._init(data, target_type, name=self._options.name)

    def close(self) -> None:
        """Destroy the program (and its internal linker); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._linker is not None:
                self._linker.close()
            self._destroy_program()
            self._keep = []

    @staticmethod
    def driver_can_load_nvrtc_ptx_output() -> bool:
        """Return whether the installed CUDA driver can load PTX made by this NVRTC.

        A driver loads PTX of its own CUDA version or older, so this compares
        the driver's CUDA version with NVRTC's.  Cubin for the exact GPU
        architecture loads either way.

        Returns
        -------
        bool
            ``True`` if the driver is at least as new as NVRTC.  ``False`` if it
            is older, **or if there is no CUDA driver at all** (nothing can load
            the PTX then).  :meth:`compile` warns only in the first ``False``
            case: without a driver there is nothing to warn about until the
            code is loaded elsewhere.

        Raises
        ------
        LibraryNotFoundError
            If NVRTC itself cannot be found.
        """
        return bool(_status._driver_ptx_state())

    # -- properties --------------------------------------------------------

    @property
    def pch_status(self) -> PCHStatusType | None:
        """PCHStatusType or None: the precompiled-header outcome of the last compile.

        ``None`` when no PCH was requested (``create_pch``/``pch``), before
        the first compile, and for the PTX and NVVM backends.  When NVRTC's
        PCH heap is too small, :meth:`compile` grows it and recompiles, so
        ``CREATED`` is the usual outcome; ``FAILED`` comes with a warning.
        """
        return self._pch_status

    @property
    def backend(self) -> CompilerBackendType:
        """CompilerBackendType: ``NVRTC``, ``NVVM``, ``nvJitLink`` or ``driver``."""
        return self._backend

    @property
    def handle(self) -> int:
        """int: the address of the ``nvrtcProgram`` / ``nvvmProgram`` / linker handle."""
        if self._closed:
            raise RuntimeError("Program has been closed; its handle is gone")
        if self._linker is not None:
            return self._linker.handle
        return as_int_handle(self._box[0])


# -- private helpers ---------------------------------------------------------------


def _expect_str(code: object, code_type: str) -> None:
    if not isinstance(code, str):
        raise TypeError(
            f"Expected type str, but got {type(code).__name__}: Program's code parameter "
            f"takes the source text as a str for code_type={code_type!r}"
        )


@shown_as(ValueError)
class _UnsupportedCodeTypeError(ValueError, RuntimeError):
    """Unknown ``code_type``: a ValueError, and a RuntimeError as in ``cuda.core``."""


def _destroy_or_warn(destroy: Callable[[Any], int], what: str, box: Any) -> None:
    """Finalizer: destroy an unclosed NVRTC/NVVM program, warning on failure."""
    status = destroy(box)
    if status:
        warnings.warn(
            f"{what} (Program finalizer) failed with status {status}",
            CUDAWarning,
            stacklevel=2,
        )
