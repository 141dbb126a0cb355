# SPDX-License-Identifier: Apache-2.0
"""Small shared helpers: option coercion, argument checks, handle conversion."""

from __future__ import annotations

import dataclasses
import operator
import sys

from cuda_core._cuda_ffi import ffi

__all__ = [
    "as_int_handle",
    "check_nonnegative_int",
    "check_or_create_options",
    "handle_finalizer",
    "index_or_none",
    "open_class",
    "require_open",
]

#: Whether ``close()`` retypes an object from its open class back to its plain
#: class (CPython only; see :func:`open_class`).
RETYPE_ON_CLOSE = sys.implementation.name != "pypy"


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


def open_class(cls, finalizer):
    """Return the *open* twin of ``cls``, made once per class and cached on it.

    Objects that own a CUDA resource (streams, events, buffers) are created as
    instances of a same-layout subclass of their public class that carries
    the garbage-collection finalizer ``finalizer`` as ``__del__``.  On CPython
    (:data:`RETYPE_ON_CLOSE`), ``close()`` assigns the plain class back, so a
    closed object is collected without a ``__del__`` call, which costs about
    as much as the rest of a create/close cycle's Python code.  PyPy keeps the
    class: it registers a finalizer at allocation, so nothing would be saved.
    The twin's ``_plain`` attribute is ``cls``: ``close()`` does
    ``self.__class__ = type(self)._plain`` (read through the type: CPython
    3.12 specializes a class-attribute read on a type, not on an instance).

    The twin has the same name, qualified name and module as ``cls``, so
    ``type(obj).__name__`` and ``isinstance(obj, cls)`` read as before.  It is
    an implementation detail: calling it allocates an empty object (cheaper
    than ``object.__new__``), which only its own module does, filling the
    object in at once.
    """
    if "_plain" in cls.__dict__:  # already an open twin
        return cls
    twin = cls.__dict__.get("_open_twin")
    if twin is None:
        namespace = {
            "__slots__": (),
            "__init__": object.__init__,
            "__del__": finalizer,
            "_plain": cls,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        twin = type(cls.__name__, (cls,), namespace)
        type.__setattr__(cls, "_open_twin", twin)
    return twin


def handle_finalizer(destroy):
    """Return a ``__del__`` for :func:`open_class` that destroys an unclosed handle.

    The finalizer marks the object closed and calls ``destroy(obj._handle)``
    once, only if the object is still open (``close()`` ran otherwise).  It is
    the safety net; ``close()`` (or ``with``) is the lifetime tool.
    """

    def finalizer(self):
        try:
            closed = self._closed
        except AttributeError:  # never filled in
            return
        if not closed:
            self._closed = True
            destroy(self._handle)

    return finalizer
