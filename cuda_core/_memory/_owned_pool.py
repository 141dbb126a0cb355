# SPDX-License-Identifier: Apache-2.0
"""An owned memory pool's lifetime: destroyed after close and its last allocation.

A ``_MemPool`` that created or imported its ``CUmemoryPool`` holds an
:class:`_OwnedPool`; each allocation's ``_release._OwnedPoolRelease`` tells
it when the allocation is freed.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from cuda_core._context import call_in_context
from cuda_core._cuda_ffi import lib
from cuda_core._errors import CUDAError, CUDAWarning, check, warn_cuda

__all__: list[str] = []


class _OwnedPool:
    """An owned ``CUmemoryPool``, destroyed once closed and no allocation is outstanding.

    ``live`` holds one entry per outstanding allocation (a buffer allocated
    from or imported into the pool, not yet freed); ``token`` holds the pool
    handle until it is destroyed.  ``list.append``/``list.pop`` are atomic
    under the GIL, so concurrent allocations and frees keep the count exact,
    and popping the token lets exactly one caller destroy the pool.

    The pool is destroyed by whichever comes last: :meth:`close` (the
    resource was closed, or garbage collected -- see ``__del__``) or the
    :meth:`release` of the last outstanding allocation.  Every unfreed
    allocation's ``_OwnedPoolRelease`` refers to this object, so it outlives
    them; when the resource and its buffers are collected together, the
    finalizers may run in any order and the last one destroys the pool.
    """

    __slots__ = ("live", "token", "closing", "what", "ctx")

    def __init__(self, c_pool: Any, what: str, c_ctx: Any = None) -> None:
        self.live: list[None] = []
        self.token: list[Any] = [c_pool]
        self.closing = False
        self.what = what
        # The context made current when the garbage collector destroys the
        # pool (None: whatever is current): see __del__.
        self.ctx = c_ctx

    def acquire(self) -> None:
        """Count one more outstanding allocation."""
        self.live.append(None)

    def release(self, raise_errors: bool, stream: Any = None) -> None:
        """Count one allocation freed; destroy the pool if it was the last of a closed pool.

        ``stream`` ordered that free: before destroying the pool, it is
        synchronized, so the pool never goes away with work on its memory
        still queued (the driver has been seen to crash in a later
        synchronization otherwise).
        """
        live = self.live
        try:
            live.pop()
        except IndexError:
            pass
        if self.closing and not live:
            status = 0
            if stream is not None and not stream._closed:
                status = lib.cuStreamSynchronize(stream._handle)
            self._destroy(raise_errors)  # even if the synchronization failed
            if status:
                if raise_errors:
                    check(status, f"{self.what}: cuStreamSynchronize before cuMemPoolDestroy")
                warn_cuda(f"cuStreamSynchronize before destroying a {self.what} pool", status)

    def close(self) -> None:
        """Destroy the pool now, or after the last outstanding allocation is freed."""
        self.closing = True
        if not self.live:
            self._destroy(True)

    def _destroy(self, raise_errors: bool) -> None:
        try:
            c_pool = self.token.pop()
        except IndexError:
            return  # already destroyed
        status = lib.cuMemPoolDestroy(c_pool)
        if status:
            if raise_errors:
                check(status, f"{self.what}: cuMemPoolDestroy")
            warn_cuda(f"cuMemPoolDestroy of a {self.what} pool", status)

    def __del__(self) -> None:
        # The resource was garbage collected without close(), maybe on a
        # thread where another context (or none) is current: the pool's
        # context is made current around the destruction.
        if self.token and not sys.is_finalizing():  # at exit the driver reclaims everything
            self.closing = True
            if not self.live:
                try:
                    call_in_context(self.ctx, self._destroy, False)
                except CUDAError as exc:  # the context could not be made current
                    warnings.warn(
                        f"cuMemPoolDestroy of a {self.what} pool was skipped: {exc}",
                        CUDAWarning,
                        stacklevel=2,
                    )
