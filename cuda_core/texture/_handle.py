# SPDX-License-Identifier: Apache-2.0
"""Lifetimes of arrays, textures and surfaces.

A CUDA array is released when its last user lets go.  An
:class:`~cuda_core.texture.OpaqueArray` (or a
:class:`~cuda_core.texture.MipmappedArray`) and every texture or surface
object built over it each hold one *claim* on the same
:class:`SharedHandle`; closing the array drops the array's claim only, and
the driver object is destroyed when the last claim is dropped.  A mipmap
level holds a claim on its parent mipmapped array and owns nothing itself.

Each wrapper keeps a :class:`Lifetime`: what it releases on ``close()`` (its
own driver handle, if any, and its claim).  ``close()`` raises a failure;
the garbage-collection safety net (the Lifetime's ``__del__``) reports it as
a :class:`~cuda_core.CUDAWarning`.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Protocol

import cuda_core._slots as _slots
from cuda_core._errors import check, warn_cuda

if TYPE_CHECKING:
    from cuda_core._device import Device

#: ``destroy(value) -> status``: releases one driver handle.
Destroy = Callable[[int], int]


class Claim(Protocol):
    """What a wrapper's claim offers: :class:`SharedHandle` or a Buffer's claim."""

    @property
    def what(self) -> str: ...

    def release(self) -> int: ...


__all__ = []

_finalizing = sys.is_finalizing


def device_of(device_id: int) -> Device:
    """Return the :class:`~cuda_core.Device` of ordinal ``device_id``."""
    return _slots.device_class()(device_id)


class SharedHandle:
    """A driver handle with a count of the claims on it.

    Created with one claim (its creator's).

    Parameters
    ----------
    value : int
        The handle.
    destroy : callable or None
        ``destroy(value) -> status``, called once when the last claim is
        dropped; None for a handle something else owns (a mipmap level).
    what : str
        The driver object, for messages (``"CUDA array"``).
    parent : SharedHandle, optional
        A handle this one depends on: one claim on it is held until this
        handle is released.
    """

    __slots__ = ("value", "what", "_destroy", "_parent", "_claims", "_lock")

    def __init__(
        self,
        value: int,
        destroy: Destroy | None,
        what: str,
        parent: SharedHandle | None = None,
    ) -> None:
        self.value = value
        self.what = what
        self._destroy = destroy
        self._parent = parent.retain() if parent is not None else None
        self._claims = 1
        self._lock = threading.Lock()

    def retain(self) -> SharedHandle:
        """Add a claim and return ``self``; RuntimeError if already released."""
        with self._lock:
            if self._claims <= 0:
                raise RuntimeError(f"the {self.what} has been released")
            self._claims += 1
        return self

    def release(self) -> int:
        """Drop one claim; at the last one destroy the handle.

        Returns the first failing status (0 if none), after releasing the
        parent's claim whatever the status.
        """
        with self._lock:
            self._claims -= 1
            if self._claims:
                return 0
        status = self._destroy(self.value) if self._destroy is not None else 0
        parent, self._parent = self._parent, None
        if parent is not None:
            parent_status = parent.release()
            status = status or parent_status
        return status

    @property
    def claims(self) -> int:
        """int: The number of claims still held (0 once released)."""
        return self._claims


class Lifetime:
    """What one wrapper releases: its own handle (optional) and its claim.

    The wrapper keeps its Lifetime (``self._life``) and nothing else refers
    to it, so the Lifetime is collected with its wrapper: if that happens
    before :meth:`close`, its ``__del__`` is the safety net that releases
    (and warns of a failure).  This costs a fraction of a
    ``weakref.finalize`` per object.  Nothing is released at interpreter
    exit (the driver frees everything then).

    Parameters
    ----------
    what : str
        Named in errors and warnings (``"cuTexObjectDestroy"``).
    destroy, value : callable, int, optional
        ``destroy(value) -> status`` destroys the wrapper's own handle.
    shared : SharedHandle, optional
        The claim the wrapper holds.
    """

    __slots__ = ("_pending",)

    def __init__(
        self,
        what: str,
        destroy: Destroy | None = None,
        value: int | None = None,
        shared: Claim | None = None,
    ) -> None:
        # One entry until released: list.pop() hands it to exactly one caller,
        # even when two threads close the wrapper at once.
        self._pending = [(what, destroy, value, shared)]

    @property
    def alive(self) -> bool:
        """bool: Whether nothing has been released yet."""
        return bool(self._pending)

    def close(self) -> None:
        """Release (once; later calls do nothing); raise CUDAError on failure."""
        try:
            what, destroy, value, shared = self._pending.pop()
        except IndexError:
            return
        _release(what, destroy, value, shared, True)

    def __del__(self) -> None:
        try:
            pending = self._pending
        except AttributeError:  # __init__ did not finish
            return
        if pending and not _finalizing():
            what, destroy, value, shared = pending.pop()
            _release(what, destroy, value, shared, False)


def _release(
    what: str,
    destroy: Destroy | None,
    value: Any,
    shared: Claim | None,
    raising: bool,
) -> None:
    status = destroy(value) if destroy is not None else 0
    shared_status = shared.release() if shared is not None else 0
    failed = status or shared_status
    if not failed:
        return
    context = what if status or shared is None else f"releasing the {shared.what}"
    if raising:
        check(failed, context)
    else:
        warn_cuda(f"{context} during garbage collection", failed)
