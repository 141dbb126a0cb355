# SPDX-License-Identifier: Apache-2.0
"""Lifetimes of arrays, textures and surfaces.

A CUDA array is released when its last user lets go.  An
:class:`~cuda_core.texture.OpaqueArray` (or a
:class:`~cuda_core.texture.MipmappedArray`) and every texture or surface
object built over it each hold one *claim* on the same
:class:`SharedHandle`; closing the array drops the array's claim only, and
the driver object is destroyed when the last claim is dropped.  A mipmap
level holds a claim on its parent mipmapped array and owns nothing itself.

The count of claims lives in C (an ``int`` changed atomically by
``cc_claim_retain``/``cc_claim_drop``), so taking and dropping a claim
needs no lock, and a texture or surface object takes its claim in the same
call into the extension that creates it, and drops it in the one that
destroys it (``cffi_src/csrc/texture.c``).

An array or a mipmapped array keeps a :class:`Lifetime`: what it releases
on ``close()`` (its claim).  A texture or surface object is an instance of
its class's open twin (:func:`~cuda_core._lifetime.open_class`) until it is
closed; it keeps its handle in a one-item list, ``_pending`` (whoever pops
it releases the handle and the claim, ``_claim``), and
:func:`finish_release` completes a release that failed or was the last
claim.  ``close()`` raises a failure; the garbage-collection safety net (a
Lifetime's or an open twin's ``__del__``) reports it as a
:class:`~cuda_core.CUDAWarning`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Protocol

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, warn_cuda

if TYPE_CHECKING:
    from cuda_core._device import Device

#: ``destroy(value) -> status``: releases one driver handle.
Destroy = Callable[[int], int]


class Claim(Protocol):
    """What a wrapper's claim offers: :class:`SharedHandle` or a Buffer's claim.

    ``_c_claims`` is the C claim count that the extension drops with the
    object (``ffi.NULL`` where there is none); ``_finish()`` does what is
    left to do after the extension said so (:func:`finish_release`).
    """

    @property
    def what(self) -> str: ...

    @property
    def _c_claims(self) -> Any: ...

    def release(self) -> int: ...

    def _finish(self) -> int: ...


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

    __slots__ = ("value", "what", "_destroy", "_parent", "_c_claims")

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
        self._c_claims = ffi.new("int *", 1)

    def retain(self) -> SharedHandle:
        """Add a claim and return ``self``; RuntimeError if already released."""
        if not _retain(self._c_claims):
            raise_released(self)
        return self

    def release(self) -> int:
        """Drop one claim; at the last one destroy the handle.

        Returns the first failing status (0 if none), after releasing the
        parent's claim whatever the status.
        """
        if _drop(self._c_claims):
            return 0
        return self._finish()

    def _finish(self) -> int:
        """Destroy the handle, the last claim having been dropped; release the parent."""
        status = self._destroy(self.value) if self._destroy is not None else 0
        parent, self._parent = self._parent, None
        if parent is not None:
            parent_status = parent.release()
            status = status or parent_status
        return status

    @property
    def claims(self) -> int:
        """int: The number of claims still held (0 once released)."""
        claims: int = self._c_claims[0]
        return claims


_retain = lib.cc_claim_retain
_drop = lib.cc_claim_drop


def raise_released(claim: Claim) -> NoReturn:
    """Raise the RuntimeError of a claim taken on a released handle."""
    raise RuntimeError(f"the {claim.what} has been released")


def creation_failed(claim: Claim, status: int, what: str) -> None:
    """Raise what failed after a ``cc_*_object_new`` gave no handle.

    ``status`` is the extension's (``cc_status()``): the claim was refused
    (its handle released: RuntimeError), or ``what`` failed (the claim taken
    with the object is dropped, then CUDAError).  A status of 0 returns.
    """
    if status:
        if status == lib.CC_CLAIM_RELEASED:
            raise_released(claim)
        claim.release()
        check(status, what)


def finish_release(what: str, result: int, claim: Claim, raising: bool) -> None:
    """Complete an object's release after ``cc_*_object_release`` returned ``result``.

    ``result`` is ``2 * status + last`` (non-zero): ``status`` is the
    destruction's, and ``last`` says that ``claim._finish()`` is left to do
    (the claim was the last, or is not counted in C).  A failure raises
    CUDAError (``raising``) or warns, as :class:`Lifetime` does.
    """
    status, last = divmod(result, 2)
    shared_status = claim._finish() if last else 0
    _report(what, status, shared_status, claim, raising)


def bound_close(
    plain: type, release: Callable[[int, Any], int], what: str
) -> Callable[[Any], None]:
    """Return ``close()`` of the open twin of texture or surface class ``plain``.

    For :func:`~cuda_core._lifetime.open_class`.  It clears the object's
    handle, resource and buffer and gives it back the class ``plain``
    (closed: no finalizer), then releases: whoever pops ``_pending`` (one
    caller, even two closing at once) drops ``_claim`` and calls
    ``release(handle, c_claims)`` (``cc_tex_object_release`` or
    ``cc_surf_object_release``); a failure of ``what`` raises CUDAError.
    """

    def close(self: Any) -> None:
        self._handle = 0
        self._resource = None
        self._buffer = None
        self.__class__ = plain  # closed: the open twin's finalizer is not needed
        try:
            value = self._pending.pop()
        except IndexError:
            return
        claim = self._claim
        self._claim = None  # closed: no claim kept (the popper alone gets here)
        result = release(value, claim._c_claims)
        if result:
            finish_release(what, result, claim, True)

    return close


def bound_finalizer(what: str, release: Callable[[int, Any], int]) -> Callable[[Any], None]:
    """Return the ``__del__`` of an open texture or surface object's class.

    The safety net: it releases an object collected unclosed (its
    ``_pending`` handle and its ``_claim``) with ``release(handle, c_claims)``
    (``cc_tex_object_release`` or ``cc_surf_object_release``) and warns of a
    failure; nothing at interpreter exit.
    """

    def finalizer(self: Any) -> None:
        try:
            pending = self._pending
        except AttributeError:  # never filled in
            return
        if pending and not _finalizing():
            value = pending.pop()
            claim = self._claim
            result = release(value, claim._c_claims)
            if result:
                finish_release(what, result, claim, False)

    return finalizer


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
    _report(what, status, shared_status, shared, raising)


def _report(
    what: str, status: int, shared_status: int, shared: Claim | None, raising: bool
) -> None:
    failed = status or shared_status
    if not failed:
        return
    context = what if status or shared is None else f"releasing the {shared.what}"
    if raising:
        check(failed, context)
    else:
        warn_cuda(f"{context} during garbage collection", failed)
