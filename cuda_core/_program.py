# SPDX-License-Identifier: Apache-2.0
"""Compiling device code: :class:`Program` and :class:`ProgramOptions`.

A :class:`Program` compiles CUDA C++ with NVRTC, NVVM IR with libNVVM, or
assembles PTX with the linker (nvJitLink or the driver), into an
:class:`~cuda_core.ObjectCode`.  NVRTC, nvJitLink and libNVVM run without a
GPU; only the driver linker and loading the result need one.
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
    NVRTCError,
    check_nvrtc,
    check_nvvm,
    nvrtc_log,
)
from cuda_core._linker import (
    Linker,
    LinkerOptions,
    _check_arch,
    _check_bool,
    _check_int,
    _check_str,
    _check_str_or_seq,
    _device_arch,
    _query_device_arch,
)
from cuda_core._module import ObjectCode
from cuda_core._utils import as_int_handle, check_or_create_options
from cuda_core.typing import CompilerBackendType, PCHStatusType

__all__ = ["Program", "ProgramOptions"]

_SUPPORTED_CODE_TYPES = ("c++", "ptx", "nvvm")
_SUPPORTED_TARGETS = {
    CompilerBackendType.NVRTC: ("ptx", "cubin", "ltoir"),
    CompilerBackendType.NVVM: ("ptx", "ltoir"),
    CompilerBackendType.NVJITLINK: ("cubin", "ptx"),
    CompilerBackendType.DRIVER: ("cubin", "ptx"),
}

_PTX_LOADABLE = []  # memo for _driver_ptx_state(): [state] once known


class _UnsupportedCodeTypeError(ValueError, RuntimeError):
    """Unknown ``code_type``: a ValueError, and a RuntimeError as in ``cuda.core``."""


class _UnsupportedOptionError(CUDAError, ValueError):
    """An option the chosen backend cannot take (a CUDAError as in ``cuda.core``)."""


class Program:
    """Compile device code into an :class:`~cuda_core.ObjectCode`.

    Parameters
    ----------
    code : str, bytes or bytearray
        The source.  CUDA C++ must be a ``str``; PTX a ``str`` (or bytes);
        NVVM IR a ``str`` (LLVM text) or bytes (text or bitcode).
    code_type : str
        ``"c++"`` (NVRTC), ``"ptx"`` (the linker) or ``"nvvm"`` (libNVVM);
        case-insensitive.
    options : ProgramOptions, dict or None
        Compilation options; see :class:`ProgramOptions`.

    Raises
    ------
    ValueError
        For an unknown ``code_type`` (also a RuntimeError, as in
        ``cuda.core``) or an option the backend cannot take.
    TypeError
        If ``code`` has the wrong type for ``code_type``.
    LibraryNotFoundError
        If the backend library cannot be found.

    Notes
    -----
    A lock serializes :meth:`compile` per program, so one program may be
    shared between threads.
    """

    def __init__(self, code, code_type, options=None):
        self._options = options = check_or_create_options(
            ProgramOptions, options, "Program options"
        )
        if not isinstance(code_type, str):
            raise TypeError(f"code_type must be a str, not {type(code_type).__name__}")
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
            if not isinstance(code, str):
                raise TypeError(
                    f"code must be a str for code_type='c++', not {type(code).__name__}"
                )
            if options.extra_sources is not None:
                raise ValueError(
                    "extra_sources is not supported by the NVRTC backend (C++ code_type)"
                )
            if options.use_libdevice:
                raise ValueError("use_libdevice is only supported by the NVVM backend")
            from cuda_core._loader import ensure_loaded

            ensure_loaded("nvrtc")
            self._backend = CompilerBackendType.NVRTC
            self._code_bytes = code.encode()
            self._new_nvrtc_program()
        elif code_type == "ptx":
            if isinstance(code, str):
                code_bytes = code.encode()
            elif isinstance(code, (bytes, bytearray)):
                code_bytes = bytes(code)
            else:
                raise TypeError(
                    f"code must be a str for code_type='ptx', not {type(code).__name__}"
                )
            if options.extra_sources is not None:
                raise ValueError("extra_sources is not supported by the PTX backend.")
            if options.use_libdevice:
                raise ValueError("use_libdevice is only supported by the NVVM backend")
            if options.numba_debug:
                warnings.warn(
                    "numba_debug is ignored for code_type='ptx': PTX goes to the linker, "
                    "which cannot honor it",
                    UserWarning,
                    stacklevel=2,
                )
            self._ptx = ObjectCode._init(code_bytes, "ptx", name=options.name)
            self._linker_options = _translate_to_linker_options(options)
            self._linker = Linker(self._ptx, options=self._linker_options)
            self._backend = self._linker.backend
        elif code_type == "nvvm":
            if isinstance(code, str):
                code_bytes = code.encode("utf-8")
            elif isinstance(code, (bytes, bytearray)):
                code_bytes = bytes(code)
            else:
                raise TypeError("NVVM IR code must be provided as str, bytes, or bytearray")
            from cuda_core._loader import ensure_loaded

            ensure_loaded("nvvm")
            self._backend = CompilerBackendType.NVVM
            self._new_nvvm_program(code_bytes)
        else:
            raise _UnsupportedCodeTypeError(
                f"Unsupported code_type={code_type!r} "
                f"(supported_code_types={_SUPPORTED_CODE_TYPES!r})"
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<Program backend='{self._backend}'>"

    # -- construction helpers ------------------------------------------------

    def _new_nvrtc_program(self):
        box = ffi.new("nvrtcProgram *")
        check_nvrtc(
            lib.nvrtcCreateProgram(
                box, self._code_bytes, self._options.name.encode(), 0, ffi.NULL, ffi.NULL
            )
        )
        self._box = box
        self._finalizer = weakref.finalize(self, _destroy_nvrtc, box)

    def _destroy_program(self):
        """Destroy the NVRTC / NVVM program (explicit path: failures raise)."""
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is None or finalizer.detach() is None:
            return
        if self._backend is CompilerBackendType.NVRTC:
            check_nvrtc(lib.nvrtcDestroyProgram(self._box))
        else:
            check_nvvm(lib.nvvmDestroyProgram(self._box))

    def _new_nvvm_program(self, code_bytes):
        box = ffi.new("nvvmProgram *")
        check_nvvm(lib.nvvmCreateProgram(box))
        self._box = box
        self._finalizer = weakref.finalize(self, _destroy_nvvm, box)
        self._add_nvvm_module(code_bytes, self._options.name)
        for name, source in self._options._extra_sources_bytes() or ():
            self._add_nvvm_module(source, name.decode())

    def _add_nvvm_module(self, data, name, *, lazy=False):
        buf = ffi.new("char[]", data)
        c_name = ffi.new("char[]", name.encode()) if name is not None else ffi.NULL
        self._keep.extend((buf, c_name))  # libNVVM may reference them until destroyed
        add = lib.nvvmLazyAddModuleToProgram if lazy else lib.nvvmAddModuleToProgram
        check_nvvm(add(self._box[0], buf, len(data), c_name), self._box[0])

    # -- methods -----------------------------------------------------------

    def compile(self, target_type, name_expressions=(), logs=None, *, cache=None):
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
            Receives the compiler log (also when compilation fails).
        cache : ProgramCacheResource, optional
            Look the result up in, and store it into, this cache (keyed by
            :func:`~cuda_core.utils.make_program_cache_key`).  A hit returns
            a fresh :class:`~cuda_core.ObjectCode` without compiling, and
            ``logs`` receives nothing.  Cannot be combined with
            ``name_expressions`` (the symbol mapping is not cached).

        Returns
        -------
        ObjectCode
            Named after :attr:`ProgramOptions.name`.

        Raises
        ------
        ValueError
            For a target the backend cannot produce, or ``cache`` together
            with ``name_expressions``.
        NVRTCError, NVVMError, NVJitLinkError, CUDAError
            If compilation fails; the message holds the full compiler log.
        RuntimeError
            After :meth:`close`.

        Warns
        -----
        RuntimeWarning
            When compiling C++ to PTX while a CUDA driver older than NVRTC is
            installed (that driver cannot load the PTX; compile to cubin), or
            when precompiled-header creation fails (the warning names why).
        """
        target_type = str(target_type).lower()
        supported = _SUPPORTED_TARGETS[self._backend]
        if target_type not in supported:
            raise ValueError(
                f'Unsupported target_type="{target_type}" for {self._backend} '
                f"(supported: {', '.join(repr(t) for t in supported)})"
            )
        if isinstance(name_expressions, (str, bytes)):
            raise TypeError(
                "name_expressions must be a sequence of str/bytes, not a single "
                f"{type(name_expressions).__name__}; wrap it in a tuple"
            )
        name_expressions = tuple(name_expressions or ())
        if cache is not None and name_expressions:
            raise ValueError(
                "cache= cannot be combined with name_expressions: the symbol mapping of "
                "name expressions is not stored in the cache, so get_kernel(name_expression) "
                "would fail on a cache hit. Compile without cache=, or build a key with "
                "make_program_cache_key() and look up mangled names yourself."
            )
        with self._lock:
            if self._closed:
                raise RuntimeError("Program has been closed; it cannot compile after close()")
            if cache is None:
                return self._compile(target_type, name_expressions, logs)
            from cuda_core.utils._program_cache import make_program_cache_key

            key = make_program_cache_key(
                code=self._source,
                code_type=self._code_type,
                options=self._options,
                target_type=target_type,
            )
            data = cache.get(key)
            if data is not None:
                return ObjectCode._init(data, target_type, name=self._options.name)
            result = self._compile(target_type, name_expressions, logs)
            cache[key] = result
            return result

    def _compile(self, target_type, name_expressions, logs):
        if self._backend is CompilerBackendType.NVRTC:
            return self._compile_nvrtc(target_type, name_expressions, logs)
        if self._backend is CompilerBackendType.NVVM:
            if name_expressions:
                raise ValueError("name_expressions are only supported by the NVRTC backend")
            return self._compile_nvvm(target_type, logs)
        if name_expressions:
            raise ValueError("name_expressions are only supported by the NVRTC backend")
        if self._linker_used:  # a linker links once; a second compile needs a new one
            self._linker.close()
            self._linker = Linker(self._ptx, options=self._linker_options)
        self._linker_used = True
        return self._linker.link(target_type)

    def _compile_nvrtc(self, target_type, name_expressions, logs):
        options = self._options
        flags = options.as_bytes("nvrtc", target_type)
        if target_type == "cubin" and options.arch.startswith("compute_"):
            raise ValueError(
                f"ProgramOptions.arch={options.arch!r} is a virtual architecture, which "
                "produces no cubin; use 'sm_<CC>' for cubin output"
            )
        if target_type == "ptx" and _driver_ptx_state() is False:
            warnings.warn(
                "The CUDA driver version is older than the backend version. The generated "
                "ptx will not be loadable by the current driver; compile to 'cubin' to "
                "load the code with this driver.",
                RuntimeWarning,
                stacklevel=4,
            )
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
        status = _pch_status(self._box[0])
        if status is None:  # heap exhausted: grow it to what NVRTC asked for, then retry
            required = ffi.new("size_t *")
            check_nvrtc(lib.nvrtcGetPCHHeapSizeRequired(self._box[0], required), self._box[0])
            check_nvrtc(lib.nvrtcSetPCHHeapSize(required[0]))
            self._destroy_program()
            self._new_nvrtc_program()
            result = self._nvrtc_compile_once(flags, target_type, name_expressions, logs)
            status = _pch_status(self._box[0])
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

    def _nvrtc_compile_once(self, flags, target_type, name_expressions, logs):
        prog = self._box[0]
        names = []
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
        if status:
            if logs is not None:
                try:
                    logs.write(nvrtc_log(prog))
                except NVRTCError:
                    pass
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
        mapping = {}
        lowered = ffi.new("const char **")
        for expr, c_expr in names:
            check_nvrtc(lib.nvrtcGetLoweredName(prog, c_expr, lowered), prog)
            mapping[expr] = ffi.string(lowered[0]) if lowered[0] != ffi.NULL else None
        if logs is not None:
            text = nvrtc_log(prog)
            if text:
                logs.write(text)
        return ObjectCode._init(data, target_type, name=self._options.name, symbol_mapping=mapping)

    def _compile_nvvm(self, target_type, logs):
        from cuda_core._loader import libdevice_path

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
                    'Fix: pip install "cuda-core-cffi[cu13]" or set CUDA_HOME.'
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
            check_nvvm(lib.nvvmGetProgramLogSize(prog, size), prog)
            if size[0] > 1:
                log = ffi.new("char[]", size[0])
                check_nvvm(lib.nvvmGetProgramLog(prog, log), prog)
                logs.write(ffi.string(log).decode("utf-8", "backslashreplace"))
        return ObjectCode._init(data, target_type, name=self._options.name)

    def close(self):
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
    def driver_can_load_nvrtc_ptx_output():
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
        return bool(_driver_ptx_state())

    # -- properties --------------------------------------------------------

    @property
    def is_closed(self):
        """bool: whether :meth:`close` has been called."""
        return self._closed

    @property
    def pch_status(self):
        """PCHStatusType or None: the precompiled-header outcome of the last compile.

        ``None`` when no PCH was requested (``create_pch``/``pch``), before
        the first compile, and for the PTX and NVVM backends.  When NVRTC's
        PCH heap is too small, :meth:`compile` grows it and recompiles, so
        ``CREATED`` is the usual outcome; ``FAILED`` comes with a warning.
        """
        return self._pch_status

    @property
    def backend(self):
        """CompilerBackendType: ``NVRTC``, ``NVVM``, ``nvJitLink`` or ``driver``."""
        return self._backend

    @property
    def handle(self):
        """int: the address of the ``nvrtcProgram`` / ``nvvmProgram`` / linker handle."""
        if self._closed:
            raise RuntimeError("Program has been closed; its handle is gone")
        if self._linker is not None:
            return self._linker.handle
        return as_int_handle(self._box[0])


@dataclass
class ProgramOptions:
    """Options for :class:`Program`.

    Every field except ``name`` defaults to ``None``, meaning "not passed to
    the compiler" (the compiler's own default applies).  Values are checked
    when the options are created; :meth:`as_bytes` renders them as compiler
    flags.

    Attributes
    ----------
    name : str
        Program name, used in diagnostics and passed to the resulting
        :class:`~cuda_core.ObjectCode`.  Default ``"default_program"``.
    arch : str, optional
        Target architecture: ``"sm_<CC>"`` (cubin, or PTX for that GPU) or
        ``"compute_<CC>"`` (PTX only).  Default: ``f"sm_{Device().arch}"``;
        where no GPU or driver is present it stays ``None`` and compiling
        (or :meth:`as_bytes`) raises a ValueError asking for ``arch=``.
    relocatable_device_code : bool, optional
        Generate relocatable device code (``--relocatable-device-code``).
    extensible_whole_program : bool, optional
        Extensible whole-program compilation.
    debug : bool, optional
        Generate debug information (``--device-debug``).
    lineinfo : bool, optional
        Generate line-number information (``--generate-line-info``).
    device_code_optimize : bool, optional
        Optimize device code (``--dopt=on``; NVVM ``-opt=3``/``-opt=0``).
    ptxas_options : str or sequence of str, optional
        Options passed to ptxas.
    max_register_count : int, optional
        Maximum registers per thread.
    ftz, prec_sqrt, prec_div, fma : bool, optional
        Single-precision flush-to-zero, IEEE square root, IEEE division and
        multiply-add contraction.
    use_fast_math : bool, optional
        Fast math (``--use_fast_math``).
    extra_device_vectorization : bool, optional
        More aggressive vectorization.
    link_time_optimization : bool, optional
        Emit code for link-time optimization (``--dlink-time-opt``).
    gen_opt_lto : bool, optional
        Run the optimizer before emitting LTO-IR.
    define_macro : str, (str, str) or a list of those, optional
        Macros to define: ``"X"`` defines ``X``, ``("X", "Y")`` defines
        ``X=Y``.
    undefine_macro : str or sequence of str, optional
        Macros to undefine.
    include_path : str, os.PathLike or a sequence of them, optional
        Header search directories.
    pre_include : str or sequence of str, optional
        Headers included before the source.
    no_source_include : bool, optional
        Do not search the source's directory for headers.
    std : str, optional
        Language dialect, e.g. ``"c++17"``.
    builtin_move_forward, builtin_initializer_list : bool, optional
        Provide built-in ``std::move``/``std::forward`` and
        ``std::initializer_list``.
    disable_warnings : bool, optional
        Inhibit all warnings.
    restrict : bool, optional
        Assume kernel pointer parameters are ``__restrict__``.
    device_as_default_execution_space : bool, optional
        Treat unannotated functions as ``__device__``.
    device_int128 : bool, optional
        Allow ``__int128`` in device code.
    optimization_info : str, optional
        Optimization report kind (e.g. ``"inline"``).
    no_display_error_number : bool, optional
        Omit diagnostic numbers.
    diag_error, diag_suppress, diag_warn : int or sequence of int, optional
        Diagnostics to turn into errors, suppress, or turn into warnings.
    brief_diagnostics : bool, optional
        Brief diagnostics (no source line).
    time : str or os.PathLike, optional
        Write a CSV table of compile-phase timings to this file (the PTX
        backend also accepts ``True``: timing to the linker's info log).
    split_compile : int, optional
        Threads for split compilation (0: all processors).
    fdevice_syntax_only : bool, optional
        Stop after syntax checking.
    minimal : bool, optional
        Omit some language features to compile faster.
    no_cache : bool, optional
        Disable compiler caching.
    fdevice_time_trace : str or os.PathLike, optional
        Write a time-trace JSON file (NVRTC only).
    device_float128 : bool, optional
        Allow ``__float128`` in device code (NVRTC only).
    frandom_seed : str or int, optional
        Seed for randomized optimizations (NVRTC only).
    ofast_compile : str, optional
        ``"0"``, ``"min"``, ``"mid"`` or ``"max"`` (NVRTC only).
    pch, create_pch, use_pch, pch_dir, pch_verbose, pch_messages, instantiate_templates_in_pch
        Precompiled headers (NVRTC 12.8+ only): use automatic PCH, create /
        use a given PCH file, PCH directory, verbosity, messages, template
        instantiation in the PCH.
    extra_sources : sequence of (str, str or bytes), optional
        Additional NVVM IR modules ``(name, source)`` (NVVM only).
    use_libdevice : bool, optional
        Link NVIDIA's libdevice math library (NVVM only).
    numba_debug : bool, optional
        Emit debug information in the layout Numba expects (NVRTC, NVVM).
    """

    name: str | None = "default_program"
    arch: str | None = None
    relocatable_device_code: bool | None = None
    extensible_whole_program: bool | None = None
    debug: bool | None = None
    lineinfo: bool | None = None
    device_code_optimize: bool | None = None
    ptxas_options: str | list[str] | tuple[str] | None = None
    max_register_count: int | None = None
    ftz: bool | None = None
    prec_sqrt: bool | None = None
    prec_div: bool | None = None
    fma: bool | None = None
    use_fast_math: bool | None = None
    extra_device_vectorization: bool | None = None
    link_time_optimization: bool | None = None
    gen_opt_lto: bool | None = None
    define_macro: str | tuple[str, str] | list[str | tuple[str, str]] | None = None
    undefine_macro: str | list[str] | tuple[str] | None = None
    include_path: str | list[str] | tuple[str] | None = None
    pre_include: str | list[str] | tuple[str] | None = None
    no_source_include: bool | None = None
    std: str | None = None
    builtin_move_forward: bool | None = None
    builtin_initializer_list: bool | None = None
    disable_warnings: bool | None = None
    restrict: bool | None = None
    device_as_default_execution_space: bool | None = None
    device_int128: bool | None = None
    optimization_info: str | None = None
    no_display_error_number: bool | None = None
    diag_error: int | list[int] | tuple[int] | None = None
    diag_suppress: int | list[int] | tuple[int] | None = None
    diag_warn: int | list[int] | tuple[int] | None = None
    brief_diagnostics: bool | None = None
    time: str | None = None
    split_compile: int | None = None
    fdevice_syntax_only: bool | None = None
    minimal: bool | None = None
    no_cache: bool | None = None
    fdevice_time_trace: str | None = None
    device_float128: bool | None = None
    frandom_seed: str | None = None
    ofast_compile: str | None = None
    pch: bool | None = None
    create_pch: str | None = None
    use_pch: str | None = None
    pch_dir: str | None = None
    pch_verbose: bool | None = None
    pch_messages: bool | None = None
    instantiate_templates_in_pch: bool | None = None
    extra_sources: list[tuple[str, str | bytes | bytearray]] | None = None
    use_libdevice: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self):
        if self.name is None:
            self.name = "default_program"
        _check_str("ProgramOptions", "name", self.name)
        self._name = self.name.encode()
        for field in _BOOL_FIELDS:
            _check_bool("ProgramOptions", field, getattr(self, field))
        for field in ("std", "optimization_info"):
            _check_str("ProgramOptions", field, getattr(self, field))
        for field in ("fdevice_time_trace", "create_pch", "use_pch", "pch_dir"):
            _check_str("ProgramOptions", field, getattr(self, field), path_ok=True)
        if self.time is not None and not isinstance(self.time, (str, os.PathLike, bool)):
            raise TypeError(
                "ProgramOptions.time must be a file path (str or os.PathLike), "
                f"not {type(self.time).__name__}"
            )
        _check_int("ProgramOptions", "max_register_count", self.max_register_count, low=1)
        _check_int("ProgramOptions", "split_compile", self.split_compile, low=0, allow_bool=True)
        for field in ("ptxas_options", "undefine_macro"):
            _check_str_or_seq("ProgramOptions", field, getattr(self, field))
        for field in ("include_path", "pre_include"):
            _check_str_or_seq("ProgramOptions", field, getattr(self, field), path_ok=True)
        for field in ("diag_error", "diag_suppress", "diag_warn"):
            _check_diag(field, getattr(self, field))
        _check_define_macro(self.define_macro)
        if self.frandom_seed is not None and (
            isinstance(self.frandom_seed, bool) or not isinstance(self.frandom_seed, (str, int))
        ):
            raise TypeError(
                "ProgramOptions.frandom_seed must be a str (or int), "
                f"not {type(self.frandom_seed).__name__}"
            )
        # The type first: ``in`` on an arbitrary object (an array) may not give a bool.
        # (A ValueError, as upstream raises for any invalid ofast_compile.)
        if self.ofast_compile is not None and not isinstance(self.ofast_compile, str):
            raise ValueError(
                f"ProgramOptions.ofast_compile must be a str (one of {_OFAST_VALUES}) or None, "
                f"not {type(self.ofast_compile).__name__}"
            )
        if self.ofast_compile is not None and self.ofast_compile not in _OFAST_VALUES:
            raise ValueError(
                f"ProgramOptions.ofast_compile={self.ofast_compile!r} is not valid; "
                f"expected one of {_OFAST_VALUES}"
            )
        _check_extra_sources(self.extra_sources)
        self._arch_error = None
        if self.arch is not None:
            _check_arch("ProgramOptions", self.arch)
        else:
            self.arch, self._arch_error = _query_device_arch()

    def __repr__(self):
        return f"ProgramOptions(name={self.name!r}, arch={self.arch!r})"

    def as_bytes(self, backend, target_type=None):
        """Render these options as compiler flags for ``backend``.

        Parameters
        ----------
        backend : str
            ``"nvrtc"`` or ``"nvvm"`` (case-insensitive).
        target_type : str, optional
            The compile target; with NVVM, ``"ltoir"`` adds ``-gen-lto``.

        Returns
        -------
        list of bytes
            E.g. ``[b"-arch=sm_90", b"--device-debug"]`` for NVRTC, or
            ``[b"-arch=compute_90", b"-g"]`` for NVVM (single-dash flags).

        Raises
        ------
        ValueError
            For an unknown backend, or when ``arch`` is unset and no GPU can be
            queried for it.
        CUDAError
            (also a ValueError) If an option is set that the backend does not
            support; the message names the options and the backend.
        """
        backend = str(backend).lower()
        if backend == "nvrtc":
            return self._nvrtc_flags(target_type)
        if backend == "nvvm":
            flags = self._nvvm_flags()
            if target_type is not None and str(target_type).lower() == "ltoir":
                if b"-gen-lto" not in flags:
                    flags.append(b"-gen-lto")
            return flags
        raise ValueError(f"Unknown backend '{backend}'. Must be one of: 'nvrtc', 'nvvm'")

    def _arch(self):
        if self.arch is not None:
            return self.arch
        if self._arch_error is not None:
            # Retry once: a driver may have become usable since construction.
            arch, _ = _query_device_arch()
            if arch is not None:
                self.arch = arch
                return arch
        return _device_arch("ProgramOptions")

    def _nvrtc_flags(self, target_type=None):
        unsupported = [f for f in ("extra_sources", "use_libdevice") if _is_set(self, f)]
        if unsupported:
            raise _UnsupportedOptionError(
                "The following options are not supported by NVRTC backend: "
                + ", ".join(unsupported)
            )
        if isinstance(self.time, bool):
            raise ValueError(
                "ProgramOptions.time must be a file path for the NVRTC backend "
                "(True is only meaningful for code_type='ptx')"
            )
        out = [f"-arch={self._arch()}"]
        for field, spelling, kind in _NVRTC_FLAGS:
            value = getattr(self, field)
            if value is None:
                continue
            if kind == "flag":
                if value:
                    out.append(spelling)
            elif kind == "bool":
                out.append(f"{spelling}={'true' if value else 'false'}")
            elif kind == "value":
                out.append(f"{spelling}={_fspath(value)}")
            elif kind == "int":
                out.append(f"{spelling}={int(value)}")
            elif kind == "list":
                out.extend(f"{spelling}={_fspath(v)}" for v in _as_list(value))
            else:  # "macro"
                out.extend(f"{spelling}={m}" for m in _macros(value))
        return [o.encode() for o in out]

    def _nvvm_flags(self):
        unsupported = [f for f in _NVVM_UNSUPPORTED if _is_set(self, f)]
        if unsupported:
            raise _UnsupportedOptionError(
                "The following options are not supported by NVVM backend: " + ", ".join(unsupported)
            )
        arch = self._arch()
        if arch.startswith("sm_"):
            arch = "compute_" + arch[3:]
        out = [f"-arch={arch}"]
        if self.debug:
            out.append("-g")
        if self.device_code_optimize is not None:
            out.append("-opt=3" if self.device_code_optimize else "-opt=0")
        for field, spelling in (
            ("ftz", "-ftz"),
            ("prec_sqrt", "-prec-sqrt"),
            ("prec_div", "-prec-div"),
            ("fma", "-fma"),
        ):
            value = getattr(self, field)
            if value is not None:
                out.append(f"{spelling}={1 if value else 0}")
        if self.numba_debug:
            out.append("-numba-debug")
        for flag in out:
            assert not flag.startswith("--"), f"libNVVM rejects double-dashed {flag}"
        return [o.encode() for o in out]

    def _extra_sources_bytes(self):
        """Return extra_sources as ``[(name_bytes, source_bytes), ...]`` or None."""
        if self.extra_sources is None:
            return None
        out = []
        for name, source in self.extra_sources:
            if isinstance(source, str):
                source = source.encode("utf-8")
            out.append((name.encode(), bytes(source)))
        return out


# -- option tables -----------------------------------------------------------------

_BOOL_FIELDS = (
    "relocatable_device_code",
    "extensible_whole_program",
    "debug",
    "lineinfo",
    "device_code_optimize",
    "ftz",
    "prec_sqrt",
    "prec_div",
    "fma",
    "use_fast_math",
    "extra_device_vectorization",
    "link_time_optimization",
    "gen_opt_lto",
    "no_source_include",
    "builtin_move_forward",
    "builtin_initializer_list",
    "disable_warnings",
    "restrict",
    "device_as_default_execution_space",
    "device_int128",
    "no_display_error_number",
    "brief_diagnostics",
    "fdevice_syntax_only",
    "minimal",
    "no_cache",
    "device_float128",
    "pch",
    "pch_verbose",
    "pch_messages",
    "instantiate_templates_in_pch",
    "use_libdevice",
    "numba_debug",
)

_OFAST_VALUES = ("0", "min", "mid", "max")

# (field, NVRTC spelling, kind), in emission order.  Kinds: "flag" (emitted
# when true), "bool" (=true/=false), "value", "int", "list" (one flag per
# item), "macro" (define_macro).
_NVRTC_FLAGS = (
    ("relocatable_device_code", "--relocatable-device-code", "bool"),
    ("extensible_whole_program", "--extensible-whole-program", "flag"),
    ("debug", "--device-debug", "flag"),
    ("lineinfo", "--generate-line-info", "flag"),
    ("device_code_optimize", "--dopt=on", "flag"),
    ("ptxas_options", "--ptxas-options", "list"),
    ("max_register_count", "--maxrregcount", "int"),
    ("ftz", "--ftz", "bool"),
    ("prec_sqrt", "--prec-sqrt", "bool"),
    ("prec_div", "--prec-div", "bool"),
    ("fma", "--fmad", "bool"),
    ("use_fast_math", "--use_fast_math", "flag"),
    ("extra_device_vectorization", "--extra-device-vectorization", "flag"),
    ("link_time_optimization", "--dlink-time-opt", "flag"),
    ("gen_opt_lto", "--gen-opt-lto", "flag"),
    ("define_macro", "--define-macro", "macro"),
    ("undefine_macro", "--undefine-macro", "list"),
    ("include_path", "--include-path", "list"),
    ("pre_include", "--pre-include", "list"),
    ("no_source_include", "--no-source-include", "flag"),
    ("std", "--std", "value"),
    ("builtin_move_forward", "--builtin-move-forward", "bool"),
    ("builtin_initializer_list", "--builtin-initializer-list", "bool"),
    ("disable_warnings", "--disable-warnings", "flag"),
    ("restrict", "--restrict", "flag"),
    ("device_as_default_execution_space", "--device-as-default-execution-space", "flag"),
    ("device_int128", "--device-int128", "flag"),
    ("device_float128", "--device-float128", "flag"),
    ("optimization_info", "--optimization-info", "value"),
    ("no_display_error_number", "--no-display-error-number", "flag"),
    ("diag_error", "--diag-error", "list"),
    ("diag_suppress", "--diag-suppress", "list"),
    ("diag_warn", "--diag-warn", "list"),
    ("brief_diagnostics", "--brief-diagnostics", "bool"),
    ("time", "--time", "value"),
    ("split_compile", "--split-compile", "int"),
    ("fdevice_syntax_only", "--fdevice-syntax-only", "flag"),
    ("minimal", "--minimal", "flag"),
    ("no_cache", "--no-cache", "flag"),
    ("fdevice_time_trace", "--fdevice-time-trace", "value"),
    ("frandom_seed", "--frandom-seed", "value"),
    ("ofast_compile", "--Ofast-compile", "value"),
    ("pch", "--pch", "flag"),
    ("create_pch", "--create-pch", "value"),
    ("use_pch", "--use-pch", "value"),
    ("pch_dir", "--pch-dir", "value"),
    ("pch_verbose", "--pch-verbose", "bool"),
    ("pch_messages", "--pch-messages", "bool"),
    ("instantiate_templates_in_pch", "--instantiate-templates-in-pch", "bool"),
    ("numba_debug", "--numba-debug", "flag"),
)

# Options libNVVM does not take (everything but arch, debug,
# device_code_optimize, ftz, prec_*, fma, numba_debug and the NVVM-only
# fields).  ``link_time_optimization`` and ``no_cache`` are accepted and have
# no NVVM flag (LTO output is chosen by the "ltoir" target).
_NVVM_UNSUPPORTED = (
    "relocatable_device_code",
    "extensible_whole_program",
    "lineinfo",
    "ptxas_options",
    "max_register_count",
    "use_fast_math",
    "extra_device_vectorization",
    "gen_opt_lto",
    "define_macro",
    "undefine_macro",
    "include_path",
    "pre_include",
    "no_source_include",
    "std",
    "builtin_move_forward",
    "builtin_initializer_list",
    "disable_warnings",
    "restrict",
    "device_as_default_execution_space",
    "device_int128",
    "optimization_info",
    "no_display_error_number",
    "diag_error",
    "diag_suppress",
    "diag_warn",
    "brief_diagnostics",
    "time",
    "split_compile",
    "fdevice_syntax_only",
    "minimal",
    "fdevice_time_trace",
    "device_float128",
    "frandom_seed",
    "ofast_compile",
    "pch",
    "create_pch",
    "use_pch",
    "pch_dir",
    "pch_verbose",
    "pch_messages",
    "instantiate_templates_in_pch",
)

# Fields whose "set" state is plain truthiness (a False flag emits nothing).
_TRUTHY_FIELDS = frozenset(f for f, _, kind in _NVRTC_FLAGS if kind == "flag") | {
    "use_libdevice",
    "numba_debug",
}


# -- private helpers ---------------------------------------------------------------


def _is_set(options, field):
    value = getattr(options, field)
    if field in _TRUTHY_FIELDS:
        return bool(value)
    return value is not None


def _fspath(value):
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _as_list(value):
    if isinstance(value, (str, int, os.PathLike)):
        return [value]
    return list(value)


def _macros(value):
    """Yield ``NAME`` / ``NAME=VALUE`` strings from a validated define_macro."""
    if isinstance(value, (str, tuple)):
        value = [value]
    for macro in value:
        yield macro if isinstance(macro, str) else f"{macro[0]}={macro[1]}"


def _check_define_macro(value):
    if value is None:
        return
    union = "a str, a (name, value) tuple of str, or a list of those"

    def check_one(macro, where):
        if isinstance(macro, str):
            return
        if isinstance(macro, tuple):
            if len(macro) != 2 or not all(isinstance(v, str) for v in macro):
                raise ValueError(
                    f"ProgramOptions.define_macro{where}: expected define_macro tuple[str, str] "
                    f"(name, value), got {macro!r}"
                )
            return
        raise TypeError(f"ProgramOptions.define_macro{where} must be {union}, got {macro!r}")

    if isinstance(value, (str, tuple)):
        check_one(value, "")
    elif isinstance(value, list):
        for i, macro in enumerate(value):
            check_one(macro, f"[{i}]")
    else:
        raise TypeError(f"ProgramOptions.define_macro must be {union}, got {value!r}")


def _check_diag(field, value):
    if value is None:
        return
    items = value if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int):
            raise TypeError(
                f"ProgramOptions.{field} must be an int or a list/tuple of int "
                f"(diagnostic numbers), got {value!r}"
            )
        if item < 0:
            raise ValueError(f"ProgramOptions.{field} must hold non-negative numbers, got {item}")


def _check_extra_sources(value):
    if value is None:
        return
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            "extra_sources must be a sequence of 2-tuples: ((name1, source1), (name2, source2), "
            f"...), not {type(value).__name__}"
        )
    for i, module in enumerate(value):
        if not isinstance(module, tuple) or len(module) != 2:
            raise TypeError(
                f"Each extra module must be a 2-tuple (name, source), got "
                f"{type(module).__name__} at index {i}"
            )
        name, source = module
        if not isinstance(name, str):
            raise TypeError(f"Module name at index {i} must be a string, got {type(name).__name__}")
        if not isinstance(source, (str, bytes, bytearray)):
            raise TypeError(
                f"Module source at index {i} must be str (textual LLVM IR), bytes (textual "
                f"LLVM IR or bitcode), or bytearray, got {type(source).__name__}"
            )
        if len(source) == 0:
            raise ValueError(f"Module source for '{name}' (index {i}) cannot be empty")


def _translate_to_linker_options(options):
    """Map the ProgramOptions a PTX program uses onto LinkerOptions."""
    return LinkerOptions(
        name=options.name,
        arch=options.arch,
        max_register_count=options.max_register_count,
        time=None if options.time is None else bool(options.time),
        link_time_optimization=options.link_time_optimization,
        debug=options.debug,
        lineinfo=options.lineinfo,
        ftz=options.ftz,
        prec_div=options.prec_div,
        prec_sqrt=options.prec_sqrt,
        fma=options.fma,
        split_compile=options.split_compile,
        ptxas_options=options.ptxas_options,
        no_cache=options.no_cache,
    )


def _pch_status(prog):
    """Return ``(PCHStatusType, reason)``, or None when the PCH heap was exhausted.

    ``nvrtcGetPCHCreateStatus`` answers with a status code, so (like
    ``cuEventQuery``) its codes are interpreted here instead of raised.
    """
    status = lib.nvrtcGetPCHCreateStatus(prog)
    if status == lib.NVRTC_SUCCESS:
        return PCHStatusType.CREATED, None
    if status == lib.NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED:
        return None
    if status == lib.NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED:
        return PCHStatusType.NOT_ATTEMPTED, None
    if status == lib.CC_MISSING_SYMBOL:
        raise RuntimeError(
            "PCH was requested but the loaded NVRTC does not support the PCH APIs; "
            "update to CUDA 12.8 or newer"
        )
    name = ffi.typeof("nvrtcResult").elements.get(status, f"status {status}")
    c_text = lib.nvrtcGetErrorString(status)
    text = ffi.string(c_text).decode() if c_text != ffi.NULL else "unknown NVRTC error"
    return PCHStatusType.FAILED, f"{name}: {text}"


def _driver_ptx_state():
    """Return True/False (driver can/cannot load NVRTC's PTX) or None (no driver)."""
    if _PTX_LOADABLE:
        return _PTX_LOADABLE[0]
    from cuda_core._loader import driver_version, nvrtc_version

    major, minor = nvrtc_version()
    try:
        driver = driver_version()
    except CUDAError:  # includes LibraryNotFoundError: no driver
        state = None
    else:
        state = major * 1000 + minor * 10 <= driver
    _PTX_LOADABLE.append(state)
    return state


def _destroy_nvrtc(box):
    status = lib.nvrtcDestroyProgram(box)
    if status:
        warnings.warn(
            f"nvrtcDestroyProgram (Program finalizer) failed with status {status}",
            CUDAWarning,
            stacklevel=2,
        )


def _destroy_nvvm(box):
    status = lib.nvvmDestroyProgram(box)
    if status:
        warnings.warn(
            f"nvvmDestroyProgram (Program finalizer) failed with status {status}",
            CUDAWarning,
            stacklevel=2,
        )
