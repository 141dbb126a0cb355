# SPDX-License-Identifier: Apache-2.0
"""Argument coercion shared by every layer: options, sizes, addresses, ints, handles.

Each function turns what a caller passed into the value the driver call
needs, or raises the TypeError/ValueError that names the argument.
"""

from __future__ import annotations

import operator
import os
from typing import TYPE_CHECKING, overload

from cuda_core._cuda_ffi import ffi

if TYPE_CHECKING:
    from typing import Any, Literal, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "SIZE_MAX",
    "as_address",
    "as_flag",
    "as_int_handle",
    "as_list",
    "as_size",
    "check_nonnegative_int",
    "check_or_create_options",
    "driver_handle",
    "index_or_none",
]


@overload
def check_or_create_options(
    cls: type[_T], options: Any, desc: str, *, keep_none: Literal[False] = ...
) -> _T: ...
@overload
def check_or_create_options(
    cls: type[_T], options: Any, desc: str, *, keep_none: bool
) -> _T | None: ...
def check_or_create_options(
    cls: type[_T], options: Any, desc: str, *, keep_none: bool = False
) -> _T | None:
    """Coerce ``options`` into an instance of the options class ``cls``.

    As ``cuda.core`` does: ``None`` becomes ``cls()`` (or stays None with
    ``keep_none``), a dict becomes ``cls(**options)`` (an unknown key raises
    the TypeError of ``cls.__init__``), an instance passes through, and
    anything else raises TypeError ``"The <desc> must be provided as an
    object of type <cls> or as a dict with valid <desc>. The provided object
    is '<options>'."``.
    """
    if options is None:
        if keep_none:
            return None
        options = cls()
    elif isinstance(options, dict):
        options = cls(**options)
    if not isinstance(options, cls):
        raise TypeError(
            f"The {desc} must be provided as an object of type {cls.__name__} or as a dict "
            f"with valid {desc}. The provided object is '{options}'."
        )
    return options


@overload
def as_flag(
    value: object, what: str, *, none_ok: Literal[False] = ..., ints: bool = ...
) -> bool: ...
@overload
def as_flag(value: object, what: str, *, none_ok: bool, ints: bool = ...) -> bool | None: ...
def as_flag(value: object, what: str, *, none_ok: bool = False, ints: bool = True) -> bool | None:
    """Return ``value`` as a bool: the one check of a bool option field ``what``.

    True and False pass; with ``ints`` the ints 0 and 1 become False and True;
    with ``none_ok`` None passes.  Anything else raises TypeError ``"<what>
    must be a bool (True or False), got <value!r> of type <type>"`` (``"must
    be True, False or None"`` with ``none_ok``).
    """
    if isinstance(value, bool):
        return value
    if value is None and none_ok:
        return None
    if ints and type(value) is int and value in (0, 1):
        return bool(value)
    allowed = "True, False or None" if none_ok else "a bool (True or False)"
    raise TypeError(f"{what} must be {allowed}, got {value!r} of type {type(value).__name__}")


def index_or_none(value: object) -> int | None:
    """Return ``value`` as a Python int (``operator.index``), or None if it is no integer.

    Bools (Python's and NumPy's) are not integers here, and neither is a
    class or an object whose ``__index__`` fails (a NumPy array of more than
    one element): callers turn None into a TypeError that names their
    argument.
    """
    if isinstance(value, (bool, type)):
        return None
    tp = type(value)
    if tp.__module__ == "numpy" and tp.__name__ in ("bool", "bool_"):
        return None  # NumPy versions differ on whether numpy.bool_ is an index
    try:
        index = operator.index(value)  # type: ignore[arg-type]  # failure means "no int"
    except Exception:  # noqa: BLE001 - any failure means "not an integer"
        return None
    if index.__class__ is not int:  # PyPy returns an int subclass as it is; CPython a plain int
        index = int.__add__(index, 0)  # int's own addition, whatever the subclass defines
    return index


#: The largest ``size_t`` / ``CUdeviceptr`` value.
SIZE_MAX = (1 << 64) - 1


def as_size(value: Any, what: str = "size") -> int:
    """Return ``value`` as a ``size_t`` int, raising TypeError/ValueError naming ``what``."""
    if value.__class__ is not int or value < 0:
        value = check_nonnegative_int(value, what)
    if value > SIZE_MAX:
        raise ValueError(f"{what} {value} does not fit in size_t (2**64 - 1 at most)")
    return value  # type: ignore[no-any-return]  # an int by the checks above


def as_address(value: Any, what: str, accepted: str) -> int:
    """Return ``value`` as an address in ``[0, 2**64)``.

    A non-integer raises TypeError saying ``what`` must be ``accepted``
    (e.g. ``"an int address or a Buffer"``).
    """
    if value.__class__ is not int:
        index = index_or_none(value)
        if index is None:
            index = driver_handle(value, "CUdeviceptr")
        if index is None:
            raise TypeError(f"{what} must be {accepted}, not {type(value).__name__}")
        value = index
    if not 0 <= value <= SIZE_MAX:
        raise ValueError(f"{what} must be an address in [0, 2**64), got {value}")
    return value  # type: ignore[no-any-return]  # an int by the checks above


def driver_handle(value: object, *kinds: str) -> int | None:
    """Return the address a ``cuda.bindings`` driver handle object holds, or None.

    ``kinds`` names the accepted handle types (``"CUstream"``,
    ``"CUdeviceptr"``, ...).  ``cuda.bindings`` is never imported: an object
    is taken for one of its handles by its type's name, a ``getPtr`` method
    and ``int()`` (which gives the handle's value).
    """
    tp = type(value)
    if tp.__name__ not in kinds or not hasattr(value, "getPtr") or not hasattr(tp, "__int__"):
        return None
    address: int = int(value)  # type: ignore[call-overload]  # the handle type converts
    if not 0 <= address <= SIZE_MAX:
        raise ValueError(f"{tp.__name__} holds {address}, not an address in [0, 2**64)")
    return address


def as_list(value: Any, scalars: tuple[type, ...] = (str, os.PathLike)) -> list[Any]:
    """Return ``value`` as a list: None is empty, an instance of ``scalars`` one item."""
    if value is None:
        return []
    if isinstance(value, scalars):
        return [value]
    return list(value)


def check_nonnegative_int(value: object, what: str) -> int:
    """Return ``value`` as an int, raising TypeError/ValueError with ``what``."""
    index = index_or_none(value)
    if index is None:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = index
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return value


#: 2**64: added to an address read back as a negative ``intptr_t``.
_WORD_SPAN = 1 << 64


def as_int_handle(value: Any) -> int:
    """Return the address held by a cffi pointer/handle as a Python int.

    ``value`` may also be an int in ``[0, 2**64)`` that came from the driver
    (a ``CUdeviceptr`` output, say).  The address is read as ``intptr_t``:
    PyPy then keeps the int as a machine word, where an unsigned 64-bit read
    gives a big-integer object that is markedly slower wherever the address
    is used next (launch arguments, frees, arithmetic on it).  Addresses at
    or above ``2**63``, which no platform CUDA supports hands out, keep their
    value.
    """
    address = int(ffi.cast("intptr_t", value))
    return address if address >= 0 else address + _WORD_SPAN
