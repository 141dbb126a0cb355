# SPDX-License-Identifier: Apache-2.0
"""Rendering :class:`~cuda_core.ProgramOptions` as compiler flags.

NVRTC takes double-dashed flags (``--device-debug``), libNVVM mostly
single-dashed ones (``-g``) and only a handful of options; an option libNVVM
cannot take raises.  The flags, their order and the way each value is
rendered are ``cuda.core``'s, so that both produce the same flags (and the
same program cache keys) for the same options.  :meth:`ProgramOptions.as_bytes
<cuda_core.ProgramOptions.as_bytes>` is the public face of this module.
"""

from __future__ import annotations

import collections.abc
from typing import TYPE_CHECKING

from cuda_core._compile_common import arch_str
from cuda_core._errors import CUDAError, shown_as

if TYPE_CHECKING:
    from cuda_core._program_options import ProgramOptions

__all__ = ["nvrtc_flags", "nvvm_flags"]

# -- option tables -----------------------------------------------------------------

# (field, NVRTC spelling, kind), in emission order.  Kinds: "flag" (emitted
# when truthy), "bool" (=true/=false by truthiness, when not None), "value"
# (=<value> as formatted by ``str.format``, when not None), "list" (a str
# gives one flag, a sequence one per item, anything else nothing), "diag"
# (like "list", with an int instead of a str), "macro" (define_macro).
_NVRTC_FLAGS = (
    ("relocatable_device_code", "--relocatable-device-code", "bool"),
    ("extensible_whole_program", "--extensible-whole-program", "flag"),
    ("debug", "--device-debug", "flag"),
    ("lineinfo", "--generate-line-info", "flag"),
    ("device_code_optimize", "--dopt=on", "flag"),
    ("ptxas_options", "--ptxas-options", "list"),
    ("max_register_count", "--maxrregcount", "value"),
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
    ("diag_error", "--diag-error", "diag"),
    ("diag_suppress", "--diag-suppress", "diag"),
    ("diag_warn", "--diag-warn", "diag"),
    ("brief_diagnostics", "--brief-diagnostics", "bool"),
    ("time", "--time", "value"),
    ("split_compile", "--split-compile", "value"),
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

# Options libNVVM does not take, with how "set" is judged: "value" (not
# None) or "flag" (truthy).  The PCH fields, fdevice_time_trace,
# device_float128, frandom_seed and ofast_compile are not listed: libNVVM
# ignores them, as ``cuda.core`` does.
_NVVM_UNSUPPORTED = (
    ("relocatable_device_code", "value"),
    ("extensible_whole_program", "flag"),
    ("lineinfo", "flag"),
    ("ptxas_options", "value"),
    ("max_register_count", "value"),
    ("use_fast_math", "flag"),
    ("extra_device_vectorization", "flag"),
    ("gen_opt_lto", "flag"),
    ("define_macro", "value"),
    ("undefine_macro", "value"),
    ("include_path", "value"),
    ("pre_include", "value"),
    ("no_source_include", "flag"),
    ("std", "value"),
    ("builtin_move_forward", "value"),
    ("builtin_initializer_list", "value"),
    ("disable_warnings", "flag"),
    ("restrict", "flag"),
    ("device_as_default_execution_space", "flag"),
    ("device_int128", "flag"),
    ("optimization_info", "value"),
    ("no_display_error_number", "flag"),
    ("diag_error", "value"),
    ("diag_suppress", "value"),
    ("diag_warn", "value"),
    ("brief_diagnostics", "value"),
    ("time", "value"),
    ("split_compile", "value"),
    ("fdevice_syntax_only", "flag"),
    ("minimal", "flag"),
)

_MACRO_UNION = "Union[str, tuple[str, str]]"


def nvrtc_flags(options: ProgramOptions) -> list[bytes]:
    """Return the NVRTC flags (``list`` of ``bytes``) for ``options``.

    Values are rendered as given (``f"--maxrregcount={value}"``); NVRTC
    rejects what it cannot parse when compiling.  ``extra_sources`` and
    ``use_libdevice`` are NVVM-only and ignored here.

    Raises
    ------
    RuntimeError
        For a ``define_macro`` that is not a str, a ``(name, value)`` tuple
        of str, or a list of those (``cuda.core``'s messages).
    """
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
            out.append(f"{spelling}={value}")
        elif kind in ("list", "diag"):
            single = int if kind == "diag" else str
            if isinstance(value, single):
                out.append(f"{spelling}={value}")
            elif isinstance(value, collections.abc.Sequence):
                out.extend(f"{spelling}={v}" for v in value)
        else:  # "macro"
            _define_macro_flags(out, value)
    return [o.encode() for o in out]


def nvvm_flags(options: ProgramOptions) -> list[bytes]:
    """Return the libNVVM flags (``list`` of ``bytes``) for ``options``, without ``-gen-lto``.

    Order: ``-arch`` (``sm_XY`` becomes ``compute_XY``), ``-g``,
    ``--numba-debug``, ``-opt``, ``-ftz``, ``-prec-sqrt``, ``-prec-div``,
    ``-fma``.
    """
    arch = arch_str("ProgramOptions", options._arch())
    if arch.startswith("sm_"):
        arch = "compute_" + arch[3:]
    out = [f"-arch={arch}"]
    if options.debug:
        out.append("-g")
    if options.numba_debug:
        out.append("--numba-debug")
    if options.device_code_optimize is False:
        out.append("-opt=0")
    elif options.device_code_optimize is True:
        out.append("-opt=3")
    for field, spelling in (
        ("ftz", "-ftz"),
        ("prec_sqrt", "-prec-sqrt"),
        ("prec_div", "-prec-div"),
        ("fma", "-fma"),
    ):
        value = getattr(options, field)
        if value is not None:
            out.append(f"{spelling}={1 if value else 0}")
    unsupported = [
        field
        for field, kind in _NVVM_UNSUPPORTED
        if (getattr(options, field) if kind == "flag" else getattr(options, field) is not None)
    ]
    if unsupported:
        raise _UnsupportedOptionError(
            "The following options are not supported by NVVM backend: " + ", ".join(unsupported)
        )
    return [o.encode() for o in out]


# -- private helpers ---------------------------------------------------------------


@shown_as(CUDAError)
class _UnsupportedOptionError(CUDAError, ValueError):
    """An option the chosen backend cannot take (a CUDAError as in ``cuda.core``)."""


def _one_macro(out: list[str], macro: object) -> bool:
    """Append the flag of a str or ``(name, value)`` macro; return False for anything else."""
    if isinstance(macro, str):
        out.append(f"--define-macro={macro}")
        return True
    if isinstance(macro, tuple):
        if len(macro) != 2 or not all(isinstance(v, str) for v in macro):
            raise RuntimeError(f"Expected define_macro tuple[str, str], got {macro}")
        out.append(f"--define-macro={macro[0]}={macro[1]}")
        return True
    return False


def _define_macro_flags(out: list[str], value: object) -> None:
    """Append the ``--define-macro`` flags of ``value`` (checked only here, as upstream)."""
    if _one_macro(out, value):
        return
    seq = collections.abc.Sequence
    if isinstance(value, seq) and any(isinstance(m, seq) for m in value):
        for macro in value:
            if not _one_macro(out, macro):
                raise RuntimeError(f"Expected define_macro {_MACRO_UNION}, got {macro}")
        return
    raise RuntimeError(f"Expected define_macro {_MACRO_UNION}, list[{_MACRO_UNION}], got {value}")
