# SPDX-License-Identifier: Apache-2.0
"""Small shared helpers: option coercion, argument checks, handle conversion."""

from __future__ import annotations

import operator
import os
import sys
from typing import TYPE_CHECKING, overload

from cuda_core._cuda_ffi import ffi
from cuda_core._errors import check

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, Callable, Literal, TypeVar

    _T = TypeVar("_T")

    from typing_extensions import Self

__all__ = [
    "SIZE_MAX",
    "as_address",
    "as_int_handle",
    "as_list",
    "as_size",
    "check_nonnegative_int",
    "check_or_create_options",
    "driver_handle",
    "drop_guard",
    "GUARD_HANDLES",
    "handle_finalizer",
    "index_or_none",
    "open_class",
    "open_handle_methods",
    "require_open",
    "seal_read_only",
]


class Closeable:
    """Mixin for a resource owner: ``with obj:`` calls ``obj.close()`` on the way out."""

    __slots__ = ()

    if TYPE_CHECKING:

        def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


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
        return operator.index(value)  # type: ignore[arg-type]  # failure means "no int"
    except Exception:  # noqa: BLE001 - any failure means "not an integer"
        return None


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


def require_open(obj: object, closed: bool, what: str) -> None:
    """Raise RuntimeError if ``closed`` (use after close)."""
    if closed:
        raise RuntimeError(f"{what} is closed; it cannot be used after close()")


#: On PyPy the library's own one-handle objects (events, owned streams) keep
#: their safety net on a guard, ``ffi.gc(handle, release)`` stored in
#: ``_guard``, instead of a ``__del__`` on the open twin: PyPy handles each
#: collected object that has an app-level ``__del__`` through its finalizer
#: queue (about 0.2 µs each on a create/close cycle, even once ``close()``
#: has retyped it), while a guard that ``close()`` detaches costs a few ns.
#: CPython keeps the ``__del__``, which is cheaper there than a guard.
GUARD_HANDLES = sys.implementation.name == "pypy"
_gc = ffi.gc


def drop_guard(obj: Any) -> bool:
    """Detach ``obj._guard`` if set: the caller releases (or hands on) its handle.

    Returns whether there was a guard to detach.
    """
    guard = getattr(obj, "_guard", None)
    if guard is None:
        return False
    obj._guard = None
    _gc(guard, None)
    return True


def open_class(
    cls: type[_T],
    finalizer: Callable[[Any], None],
    *,
    variant: str = "",
    guarded: bool = False,
    **open_methods: Callable[..., Any],
) -> type[_T]:
    """Return the *open* twin of ``cls``, made once per class and cached on it.

    Objects that own a CUDA resource (streams, events, buffers) are created as
    instances of a same-layout subclass of their public class that carries
    the garbage-collection finalizer ``finalizer`` as ``__del__``.
    ``close()`` assigns the plain class back (``self.__class__ =
    type(self)._plain``; read through the type, which CPython 3.12
    specializes), so a closed object is collected without a ``__del__`` call:
    on CPython that call costs about as much as the rest of a create/close
    cycle's Python code, and PyPy, which registers the finalizer when the
    object is made, skips it too once the class has none.

    So an instance of the twin is open.  ``open_methods`` (name: function)
    are put on the twin in place of the methods of ``cls`` of the same
    names: hot-path versions that skip the closed check.  They take the
    generic method's name and docstring.  Only the library's own classes pass
    them; the twin of a user subclass keeps the subclass's methods.  A
    non-empty ``variant`` names a further twin of ``cls``, cached apart (so
    that the class of an object can also tell a kind apart, e.g. IPC events).
    ``guarded`` (the library's own one-handle classes) drops the ``__del__``
    where :data:`GUARD_HANDLES` holds: whoever creates an instance then sets
    its ``_guard``, and the ``close`` of :func:`open_handle_methods` with
    ``guarded`` detaches it.

    The twin has the same name, qualified name and module as ``cls``, so
    ``type(obj).__name__`` and ``isinstance(obj, cls)`` read as before.  It is
    an implementation detail: calling it allocates an empty object (cheaper
    than ``object.__new__``), which only its own module does, filling the
    object in at once.
    """
    if "_plain" in cls.__dict__:  # already an open twin
        return cls
    guarded = guarded and GUARD_HANDLES
    cache = "_open_twin" + variant + ("_guarded" if guarded else "")
    twin = cls.__dict__.get(cache)
    if twin is None:
        namespace = {
            "__slots__": (),
            "__init__": object.__init__,
            "_plain": cls,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": cls.__doc__,
        }
        for name, fn in open_methods.items():
            fn.__name__ = name
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
            fn.__doc__ = getattr(cls, name).__doc__
            namespace[name] = fn
        if not guarded:
            namespace["__del__"] = finalizer
        twin = type(cls.__name__, (cls,), namespace)
        type.__setattr__(cls, cache, twin)
    return twin


def open_handle_methods(
    plain: type,
    destroy: Callable[[Any], int],
    wait: Callable[[Any], int],
    *,
    guarded: bool = False,
) -> dict[str, Any]:
    """Return ``close`` and ``sync`` for the open twin of a one-handle class.

    For :func:`open_class`.  The object holds its driver handle in
    ``_handle``.  ``close()`` marks it closed, gives it back the class
    ``plain`` and calls ``destroy(handle)``; ``sync()`` calls
    ``wait(handle)``.  Neither checks for a closed object: an instance of
    the open twin is open.  Failures raise through
    :func:`~cuda_core._errors.check`.  With ``guarded`` (and
    :data:`GUARD_HANDLES`), ``close()`` also detaches the object's guard.
    """

    def close(self: Any) -> None:
        self._closed = True
        self.__class__ = plain  # closed: no finalizer needed
        status = destroy(self._handle)
        if status:
            check(status)

    def close_guarded(self: Any) -> None:
        self._closed = True
        self.__class__ = plain
        _gc(self._guard, None)  # released here, not by the guard
        status = destroy(self._handle)
        if status:
            check(status)

    def sync(self: Any) -> None:
        status = wait(self._handle)
        if status:
            check(status)

    return {"close": close_guarded if guarded and GUARD_HANDLES else close, "sync": sync}


def handle_finalizer(destroy: Callable[[Any], object]) -> Callable[[Any], None]:
    """Return a ``__del__`` for :func:`open_class` that releases an unclosed object.

    The finalizer marks the object closed and calls ``destroy(obj)`` once,
    only if the object is still open (``close()`` ran otherwise); ``destroy``
    reads what it releases from the object (``obj._handle``, a shared
    claim).  It is the safety net; ``close()`` (or ``with``) is the lifetime
    tool.
    """

    def finalizer(self: Any) -> None:
        try:
            closed = self._closed
        except AttributeError:  # never filled in
            return
        if not closed:
            self._closed = True
            destroy(self)

    return finalizer


# A read-only property whose assignment fails as on a ``cuda.core`` (Cython)
# class: ``AttributeError: attribute 'name' of 'Type' objects is not
# writable``, the same on CPython and PyPy (whose own texts differ from each
# other).  Reading it is a plain property read.  (No class docstring: each
# instance carries the docstring of the property it replaces.)
class _ReadOnlyProperty(property):
    _attr_name: str

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(
            f"attribute '{self._attr_name}' of '{type(obj).__name__}' objects is not writable"
        )

    def __delete__(self, obj: Any) -> None:
        self.__set__(obj, None)


_SEALED: set[str] = set()


def seal_read_only() -> None:
    """Give every read-only property of cuda_core's imported classes cuda.core's error.

    Walks the ``cuda_core`` modules imported so far (each once) and replaces
    each ``property`` without setter and deleter defined by one of their
    classes with a :class:`_ReadOnlyProperty`.  The package face and each
    lazily imported subpackage call it at the end of their import.
    """
    for mod_name, module in list(sys.modules.items()):
        if module is None or mod_name in _SEALED:
            continue
        if mod_name != "cuda_core" and not mod_name.startswith("cuda_core."):
            continue
        _SEALED.add(mod_name)
        for cls in list(vars(module).values()):
            if isinstance(cls, type) and cls.__module__ == mod_name:
                _seal_class(cls)


def _seal_class(cls: type) -> None:
    for name, attr in list(vars(cls).items()):
        if type(attr) is property and attr.fset is None and attr.fdel is None:
            sealed = _ReadOnlyProperty(attr.fget, None, None, attr.__doc__)
            sealed._attr_name = name
            sealed.__doc__ = attr.__doc__
            type.__setattr__(cls, name, sealed)
