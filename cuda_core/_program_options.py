# SPDX-License-Identifier: Apache-2.0
"""Options for :class:`~cuda_core.Program`: :class:`ProgramOptions`.

As in ``cuda.core``, the options take their values as given: only ``name``
(encoded) and ``extra_sources`` are checked when the options are created;
``define_macro`` is checked when the flags are built, and every other value
is rendered into a flag for the compiler to judge.  Rendering them as NVRTC
or libNVVM flags is in ``_program_flags.py``, and the subset a PTX program
hands to the linker is mapped onto :class:`~cuda_core.LinkerOptions` here.
"""

from __future__ import annotations

import collections.abc
import numbers
import warnings
from dataclasses import dataclass, fields

from cuda_core._compile_common import _device_arch, _query_device_arch
from cuda_core._linker_options import LinkerOptions
from cuda_core._program_flags import _NVRTC_FLAGS, nvrtc_flags, nvvm_flags

__all__ = ["ProgramOptions"]


@dataclass
class ProgramOptions:
    """Options for :class:`~cuda_core.Program`.

    Every field except ``name`` defaults to ``None``, meaning "not passed to
    the compiler" (the compiler's own default applies).  As in ``cuda.core``,
    values are not checked when the options are created (except ``name``,
    which must be a str -- ``None`` raises AttributeError -- and
    ``extra_sources``): :meth:`as_bytes` renders each as given
    (``--maxrregcount=<value>``, ``--time=<value>``; a truthy value turns a
    flag on), NVRTC rejects what it cannot parse at compile time, and a
    malformed ``define_macro`` raises RuntimeError when the flags are built.
    A value of an obviously wrong type is still taken as ``cuda.core``
    takes it, with a :class:`UserWarning` that names the field, the value
    and how it is read (``debug="no"`` turns debugging on;
    ``max_register_count=-1`` is passed on as ``--maxrregcount=-1``).

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
    time : str, optional
        Write a CSV table of compile-phase timings to this file
        (``--time=<value>``; the PTX backend only asks whether it is set).
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
    ptxas_options: str | list[str] | tuple[str, ...] | None = None
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
    undefine_macro: str | list[str] | tuple[str, ...] | None = None
    include_path: str | list[str] | tuple[str, ...] | None = None
    pre_include: str | list[str] | tuple[str, ...] | None = None
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
    diag_error: int | list[int] | tuple[int, ...] | None = None
    diag_suppress: int | list[int] | tuple[int, ...] | None = None
    diag_warn: int | list[int] | tuple[int, ...] | None = None
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

    def __post_init__(self) -> None:
        # As cuda.core: the name is encoded (None or a non-str raise
        # AttributeError), extra_sources is checked, the architecture comes
        # from the current device, and every other field is taken as given --
        # the flags render it and the compiler judges it.
        self._name = self.name.encode()  # type: ignore[union-attr]  # None raises, as upstream
        _check_extra_sources(self.extra_sources)
        _warn_odd_values(self)
        self._arch_error = None
        if self.arch is None:
            self.arch, self._arch_error = _query_device_arch()

    def __repr__(self) -> str:
        return f"ProgramOptions(name={self.name!r}, arch={self.arch!r})"

    def as_bytes(self, backend: str, target_type: str | None = None) -> list[bytes]:
        """Render these options as compiler flags for ``backend``.

        Parameters
        ----------
        backend : str
            ``"nvrtc"`` or ``"nvvm"`` (case-insensitive).
        target_type : str, optional
            The compile target; with NVVM, exactly ``"ltoir"`` adds
            ``-gen-lto``.  NVRTC's flags do not depend on it.

        Returns
        -------
        list of bytes
            E.g. ``[b"-arch=sm_90", b"--device-debug"]`` for NVRTC, or
            ``[b"-arch=compute_90", b"-g"]`` for NVVM.

        Raises
        ------
        ValueError
            For an unknown backend, or when ``arch`` is unset and no GPU can be
            queried for it.
        RuntimeError
            For NVRTC, if ``define_macro`` is malformed.
        CUDAError
            (also a ValueError) For NVVM, if an option is set that libNVVM does
            not support; the message names the options.
        """
        backend = backend.lower()
        if backend == "nvrtc":
            return nvrtc_flags(self)
        if backend == "nvvm":
            flags = nvvm_flags(self)
            if target_type == "ltoir" and b"-gen-lto" not in flags:
                flags.append(b"-gen-lto")
            return flags
        raise ValueError(f"Unknown backend '{backend}'. Must be one of: 'nvrtc', 'nvvm'")

    def _arch(self) -> str:
        if self.arch is not None:
            return self.arch
        if self._arch_error is not None:
            # Retry once: a driver may have become usable since construction.
            arch, _ = _query_device_arch()
            if arch is not None:
                self.arch = arch
                return arch
        return _device_arch("ProgramOptions")

    def _extra_sources_bytes(self) -> list[tuple[bytes, bytes]] | None:
        """Return extra_sources as ``[(name_bytes, source_bytes), ...]`` or None."""
        if self.extra_sources is None:
            return None
        out = []
        for name, source in self.extra_sources:
            if isinstance(source, str):
                source = source.encode("utf-8")
            out.append((name.encode(), bytes(source)))
        return out


# -- private helpers ---------------------------------------------------------------


def _translate_to_linker_options(options: ProgramOptions) -> LinkerOptions:
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


_BOOL_FIELDS = tuple(f.name for f in fields(ProgramOptions) if f.type == "bool | None")
_COUNT_FIELDS = ("max_register_count", "split_compile")
_DIAG_FIELDS = ("diag_error", "diag_suppress", "diag_warn")
_SPELLING = {field: spelling for field, spelling, _ in _NVRTC_FLAGS}
# Values no bool field means to get: their truth value is rarely what was meant.
_NOT_A_BOOL = (str, bytes, bytearray, float, list, tuple, dict, set)


def _warn_odd_values(options: ProgramOptions) -> None:
    """Warn about values of an obviously wrong type, which are kept as given.

    ``cuda.core`` takes them silently; so does this package, but says how
    each is read, so a typo such as ``debug="no"`` (debugging on) is seen.
    """
    for field in _BOOL_FIELDS:
        value = getattr(options, field)
        if isinstance(value, _NOT_A_BOOL):
            _warn(
                f"ProgramOptions.{field}={value!r} is not a bool; it is read by its truth "
                f"value, {bool(value)}, as cuda.core reads it. Pass True or False."
            )
    for field in _COUNT_FIELDS:
        value = getattr(options, field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            _warn(
                f"ProgramOptions.{field}={value!r} is not a non-negative int; it is passed "
                f"to the compiler as given ({_SPELLING[field]}={value}), as cuda.core does."
            )
    for field in _DIAG_FIELDS:
        value = getattr(options, field)
        if value is None or _is_int(value):
            continue
        items = list(value) if isinstance(value, collections.abc.Sequence) else []
        if not items or not all(_is_int(v) for v in items):
            rendered = " ".join(f"{_SPELLING[field]}={v}" for v in items) or "no flag"
            _warn(
                f"ProgramOptions.{field}={value!r} is not an int or a list/tuple of int; "
                f"it is rendered as given ({rendered}), as cuda.core does."
            )


def _is_int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _warn(message: str) -> None:
    # _warn <- _warn_odd_values <- __post_init__ <- the dataclass __init__ <- the caller
    warnings.warn(message, UserWarning, stacklevel=5)


def _check_extra_sources(value: object) -> None:
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
