# SPDX-License-Identifier: Apache-2.0
"""Lifetimes of resource owners: ``with``, the closed check, open twins, safety nets.

An object that owns a driver resource is *open* until ``close()``; these
helpers give it ``with`` support (:class:`Closeable`), the error of a use
after close (:func:`require_open`), the open/closed class twins behind the
hot paths (:func:`open_class`, :func:`open_handle_class`) and the
finalizer or PyPy guard that releases an object nobody closed
(:func:`handle_finalizer`, :data:`GUARD_HANDLES`, :func:`drop_guard`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import ffi
from cuda_core._errors import check

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any, Callable, TypeVar

    _T = TypeVar("_T")

    from typing_extensions import Self

__all__ = [
    "Closeable",
    "ClosedFlag",
    "GUARD_HANDLES",
    "drop_guard",
    "handle_finalizer",
    "open_class",
    "open_handle_class",
    "open_handle_methods",
    "require_open",
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


class ClosedFlag(Closeable):
    """:class:`Closeable` for an owner that records its state in ``_closed``.

    Adds the public :attr:`is_closed` of the classes that have one upstream.
    """

    __slots__ = ()

    _closed: bool

    @property
    def is_closed(self) -> bool:
        """bool: Whether :meth:`close` has been called."""
        return self._closed


def require_open(closed: bool, what: str) -> None:
    """Raise RuntimeError if ``closed``: ``what`` is used after close.

    The one closed check: ``require_open(self._closed, "Stream")``.  On a
    measured hot path, test first and call only on failure
    (``if s._closed: require_open(True, "Stream")``).
    """
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


def open_handle_class(
    cls: type[_T],
    finalizer: Callable[[Any], None],
    destroy: Callable[[Any], int],
    wait: Callable[[Any], int],
    *,
    variant: str = "",
) -> type[_T]:
    """Return the guarded open twin of the one-handle class ``cls`` (streams, events).

    :func:`open_class` with ``guarded`` and the hot-path ``close`` and
    ``sync`` of :func:`open_handle_methods` (``destroy(handle)``,
    ``wait(handle)``); ``variant`` names a further twin.
    """
    methods = open_handle_methods(cls, destroy, wait, guarded=True)
    return open_class(cls, finalizer, variant=variant, guarded=True, **methods)


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
