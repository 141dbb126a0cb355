# SPDX-License-Identifier: Apache-2.0
"""Small shared helpers: option coercion, argument checks, handle conversion."""

from __future__ import annotations

import dataclasses
import operator

from cuda_core._cuda_ffi import ffi

__all__ = [
    "as_int_handle",
    "check_nonnegative_int",
    "check_or_create_options",
    "index_or_none",
    "require_open",
]


def check_or_create_options(cls, options, desc, *, keep_none=False):
    """Coerce ``options`` into an instance of dataclass ``cls``.

    ``None`` becomes ``cls()`` (or stays None with ``keep_none``), a dict
    becomes ``cls(**options)``, an instance passes through; anything else
    raises TypeError naming ``desc``.
    """
    if options is None:
        return None if keep_none else cls()
    if isinstance(options, cls):
        return options
    if isinstance(options, dict):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise TypeError(
                f"{desc}: unknown option(s) {', '.join(unknown)}; "
                f"accepted: {', '.join(sorted(names))}"
            )
        return cls(**options)
    raise TypeError(
        f"{desc} must be a {cls.__name__}, a dict or None, not {type(options).__name__}"
    )


def index_or_none(value):
    """Return ``value`` as a Python int (``operator.index``), or None if it is no integer.

    Bools (Python's and NumPy's) are not integers here, and neither is an
    object whose ``__index__`` fails (the class ``int`` itself, a NumPy array
    of more than one element): callers turn None into a TypeError that names
    their argument.
    """
    if isinstance(value, bool):
        return None
    tp = type(value)
    if tp.__module__ == "numpy" and tp.__name__ in ("bool", "bool_"):
        return None  # NumPy versions differ on whether numpy.bool_ is an index
    try:
        return operator.index(value)
    except Exception:  # noqa: BLE001 - any failure means "not an integer"
        return None


def check_nonnegative_int(value, what):
    """Return ``value`` as an int, raising TypeError/ValueError with ``what``."""
    index = index_or_none(value)
    if index is None:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = index
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return value


def as_int_handle(cdata):
    """Return the address held by a cffi pointer/handle as a Python int."""
    return int(ffi.cast("uintptr_t", cdata))


def require_open(obj, closed, what):
    """Raise RuntimeError if ``closed`` (use after close)."""
    if closed:
        raise RuntimeError(f"{what} is closed; it cannot be used after close()")
