# SPDX-License-Identifier: Apache-2.0
"""Pieces shared by the compiler and linker modules.

Field checks for the option dataclasses (:class:`~cuda_core.ProgramOptions`,
:class:`~cuda_core.LinkerOptions`), the default target architecture, and
the hints added to a first compile error (C++ given as PTX or NVVM IR, an
``arch`` that is not a str).
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import TYPE_CHECKING

from cuda_core._context import _current_device_arch
from cuda_core._errors import CUDAError, shown_as

if TYPE_CHECKING:
    from typing import Iterator

__all__: list[str] = []

# The targets each code type compiles to (C++: NVRTC; PTX: the linker; NVVM IR:
# libNVVM), also the valid combinations of a program cache key.
_SUPPORTED_TARGETS = {
    "c++": ("ptx", "cubin", "ltoir"),
    "ptx": ("cubin", "ptx"),
    "nvvm": ("ptx", "ltoir"),
}


# -- the default architecture ------------------------------------------------------


def _device_arch(owner: str) -> str:
    """Return ``"sm_XY"`` for ``Device()``, or raise a ValueError saying to pass arch=."""
    arch, reason = _query_device_arch()
    if arch is None:
        raise ValueError(
            f"{owner}.arch is not set and the GPU architecture could not be determined "
            f"({reason}). Pass arch= explicitly, e.g. {owner}(arch='sm_90')."
        )
    return arch


def _query_device_arch() -> tuple[str, None] | tuple[None, str]:
    """Return ``("sm_XY", None)`` for ``Device()``'s device, or ``(None, reason)``."""
    try:
        return f"sm_{_current_device_arch()}", None
    except CUDAError as e:
        return None, str(e).splitlines()[0]


# -- option field checks ---------------------------------------------------------


def _check_str(owner: str, field: str, value: object, *, path_ok: bool = False) -> None:
    if value is None:
        return
    ok = isinstance(value, str) or (path_ok and isinstance(value, os.PathLike))
    if not ok:
        accepted = "a str or os.PathLike" if path_ok else "a str"
        raise TypeError(f"{owner}.{field} must be {accepted}, not {type(value).__name__}")


def _check_int(
    owner: str,
    field: str,
    value: object,
    low: int | None = None,
    high: int | None = None,
    *,
    allow_bool: bool = False,
) -> None:
    if value is None:
        return
    if (isinstance(value, bool) and not allow_bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{field} must be an int, not {type(value).__name__}")
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            raise ValueError(f"{owner}.{field} must be >= {low}, got {value}")
        raise ValueError(f"{owner}.{field} must be between {low} and {high}, got {value}")


def _check_str_or_seq(owner: str, field: str, value: object, *, path_ok: bool = False) -> None:
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


def _check_arch(owner: str, arch: object) -> None:
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


# -- hints for a first mistake ------------------------------------------------------

_CPP_MARKERS = ("__global__", "__device__", "#include", 'extern "C"', "template", "namespace ")
_NOT_CPP = re.compile(
    r"^\s*(\.(version|target|entry|visible)\b|define\b|declare\b|target\s+(triple|datalayout)\b)",
    re.MULTILINE,
)
_CODE_TYPE_NAMES = {"ptx": "PTX", "nvvm": "NVVM IR"}


def looks_like_cpp(code: object) -> bool:
    """Whether ``code`` (given to a PTX or NVVM program) reads as CUDA C++ source.

    PTX directives, LLVM IR definitions and LLVM bitcode say it is not; a
    ``__global__``, ``#include`` or ``extern "C"`` says it is.
    """
    if isinstance(code, (bytes, bytearray)):
        if bytes(code[:4]) == b"BC\xc0\xde":  # LLVM bitcode
            return False
        code = bytes(code).decode("latin-1")
    if not isinstance(code, str) or _NOT_CPP.search(code):
        return False
    return any(marker in code for marker in _CPP_MARKERS)


@contextlib.contextmanager
def cpp_source_hint(code: object, code_type: str) -> Iterator[None]:
    """Add "pass code_type='c++'" to a compiler or linker error on C++ source.

    The exception keeps its type, status and message start; a line naming
    the fix is appended when ``code`` looks like C++ (:func:`looks_like_cpp`).
    """
    try:
        yield
    except CUDAError as exc:
        if exc.args and isinstance(exc.args[0], str) and looks_like_cpp(code):
            exc.args = (
                f"{exc.args[0]}\nThe code looks like CUDA C++, not "
                f"{_CODE_TYPE_NAMES.get(code_type, code_type)}: compile it with "
                "Program(code, code_type='c++').",
                *exc.args[1:],
            )
        raise


@shown_as(TypeError)
class _ArchTypeError(TypeError, AttributeError):
    """``arch`` of a wrong type: a TypeError, and the AttributeError ``cuda.core`` raises."""


def arch_str(owner: str, arch: object) -> str:
    """Return ``arch`` if it is a str; raise a TypeError saying what it must be.

    Called where ``cuda.core`` calls a string method on the value (its
    AttributeError), so the error comes at the same moment.
    """
    if not isinstance(arch, str):
        raise _ArchTypeError(
            f"{owner}.arch must be a str such as 'sm_90' (or 'compute_90'), "
            f"not {type(arch).__name__} ({arch!r})"
        )
    return arch
