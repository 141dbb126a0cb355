# SPDX-License-Identifier: Apache-2.0
"""Options for :class:`~cuda_core.Linker`: :class:`LinkerOptions`.

The options are checked when created and rendered for either backend: as
nvJitLink flags (:meth:`LinkerOptions.as_bytes`) or as ``CUjit_option``
keys and values for the driver's ``cuLinkCreate``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cuda_core._coerce import as_flag, as_list
from cuda_core._compile_common import (
    _check_arch,
    _check_int,
    _check_str,
    _check_str_or_seq,
    _device_arch,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._linker_backend import which_backend
from cuda_core._loader import install_hint
from cuda_core.typing import CompilerBackendType

if TYPE_CHECKING:
    from typing import Any

__all__ = ["LinkerOptions"]

#: Size of each driver-linker log buffer (info and error), as upstream.
_DRIVER_LOG_SIZE = 4 * 1024 * 1024


@dataclass
class LinkerOptions:
    """Options for :class:`~cuda_core.Linker`.

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
    kernels_used: str | tuple[str, ...] | list[str] | None = None
    variables_used: str | tuple[str, ...] | list[str] | None = None
    optimize_unused_variables: bool | None = None
    ptxas_options: str | tuple[str, ...] | list[str] | None = None
    split_compile: int | None = None
    split_compile_extended: int | None = None
    no_cache: bool | None = None
    numba_debug: bool | None = None

    def __post_init__(self) -> None:
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
            as_flag(getattr(self, field), f"LinkerOptions.{field}", none_ok=True, ints=False)
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

    def as_bytes(self, backend: str = "nvjitlink") -> list[bytes]:
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
        if which_backend(stacklevel=3) is not CompilerBackendType.NVJITLINK:
            raise RuntimeError(
                "nvJitLink backend is not available (nvJitLink 12.3 or newer could not be "
                f"loaded; install it: {install_hint('nvjitlink')})"
            )
        return self._nvjitlink_flags()

    def _nvjitlink_flags(self) -> list[bytes]:
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
        out.extend(f"-kernels-used={k}" for k in as_list(self.kernels_used))
        out.extend(f"-variables-used={v}" for v in as_list(self.variables_used))
        if self.optimize_unused_variables:
            out.append("-optimize-unused-variables")
        out.extend(f"-Xptxas={o}" for o in as_list(self.ptxas_options))
        if self.split_compile is not None:
            out.append(f"-split-compile={int(self.split_compile)}")
        if self.split_compile_extended is not None:
            out.append(f"-split-compile-extended={int(self.split_compile_extended)}")
        if self.no_cache:
            out.append("-no-cache")
        return [o.encode() for o in out]

    def _driver_options(self) -> tuple[list[int], list[Any], list[Any]]:
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


def _jit_target(arch: str) -> int:
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


def _as_void(value: int) -> Any:
    return ffi.cast("void *", int(value))
