# SPDX-License-Identifier: Apache-2.0
"""Rendering :class:`~cuda_core.ProgramOptions` as compiler flags.

NVRTC takes double-dashed flags (``--device-debug``), libNVVM single-dashed
ones (``-g``) and only a handful of options; an option the chosen backend
cannot take raises.  :meth:`ProgramOptions.as_bytes
<cuda_core.ProgramOptions.as_bytes>` is the public face of this module.
"""

from __future__ import annotations

import os

from cuda_core._errors import CUDAError
from cuda_core._utils import as_list

__all__ = ["nvrtc_flags", "nvvm_flags"]

# -- option tables -----------------------------------------------------------------

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


def nvrtc_flags(options):
    """Return the NVRTC flags (``list`` of ``bytes``) for ``options``."""
    unsupported = [f for f in ("extra_sources", "use_libdevice") if _is_set(options, f)]
    if unsupported:
        raise _UnsupportedOptionError(
            "The following options are not supported by NVRTC backend: " + ", ".join(unsupported)
        )
    if isinstance(options.time, bool):
        raise ValueError(
            "ProgramOptions.time must be a file path for the NVRTC backend "
            "(True is only meaningful for code_type='ptx')"
        )
    out = [f"-arch={options._arch()}"]
    for field, spelling, kind in _NVRTC_FLAGS:
        value = getattr(options, field)
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
            out.extend(f"{spelling}={_fspath(v)}" for v in as_list(value, (str, int, os.PathLike)))
        else:  # "macro"
            out.extend(f"{spelling}={m}" for m in _macros(value))
    return [o.encode() for o in out]


def nvvm_flags(options):
    """Return the libNVVM flags (``list`` of ``bytes``) for ``options``, without ``-gen-lto``."""
    unsupported = [f for f in _NVVM_UNSUPPORTED if _is_set(options, f)]
    if unsupported:
        raise _UnsupportedOptionError(
            "The following options are not supported by NVVM backend: " + ", ".join(unsupported)
        )
    arch = options._arch()
    if arch.startswith("sm_"):
        arch = "compute_" + arch[3:]
    out = [f"-arch={arch}"]
    if options.debug:
        out.append("-g")
    if options.device_code_optimize is not None:
        out.append("-opt=3" if options.device_code_optimize else "-opt=0")
    for field, spelling in (
        ("ftz", "-ftz"),
        ("prec_sqrt", "-prec-sqrt"),
        ("prec_div", "-prec-div"),
        ("fma", "-fma"),
    ):
        value = getattr(options, field)
        if value is not None:
            out.append(f"{spelling}={1 if value else 0}")
    if options.numba_debug:
        out.append("-numba-debug")
    for flag in out:
        assert not flag.startswith("--"), f"libNVVM rejects double-dashed {flag}"
    return [o.encode() for o in out]


# -- private helpers ---------------------------------------------------------------


class _UnsupportedOptionError(CUDAError, ValueError):
    """An option the chosen backend cannot take (a CUDAError as in ``cuda.core``)."""


def _is_set(options, field):
    value = getattr(options, field)
    if field in _TRUTHY_FIELDS:
        return bool(value)
    return value is not None


def _fspath(value):
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def _macros(value):
    """Yield ``NAME`` / ``NAME=VALUE`` strings from a validated define_macro."""
    if isinstance(value, (str, tuple)):
        value = [value]
    for macro in value:
        yield macro if isinstance(macro, str) else f"{macro[0]}={macro[1]}"
