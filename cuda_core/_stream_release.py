# SPDX-License-Identifier: Apache-2.0
"""The context a release ordered on a stream runs in.

A Buffer records the stream that orders its free; the free may run much
later (the garbage collector's, a graph drain's), on any thread.  A
default-stream token names no context, so it is recorded bound to the
context current at allocation (:func:`bind_for_release`), and
:func:`owning_context` tells the release which context to make current.
"""

from __future__ import annotations

from typing import Any

from cuda_core._context import _context_of, primary_handle
from cuda_core._cuda_ffi import lib
from cuda_core._stream import _BUILTIN, _MAX_DEFAULT_HANDLE, Stream, _adopt

__all__: list[str] = []

_cc_current_ctx = lib.cc_current_ctx

# Default-stream tokens bound to a context, by (token, CUcontext).
_BOUND_TOKENS: dict[tuple[int, Any], Stream] = {}


def bind_for_release(s: Stream) -> Stream:
    """Return what to record in ``s``'s place for a later release ordered on it.

    A default-stream token (legacy, per-thread, NULL) names no context: it
    acts in whichever context is current when used.  A release recorded on
    one (a Buffer's deallocation stream) gets the token bound to the calling
    thread's current context instead, so that the release, run later by the
    garbage collector or a graph drain on any thread, orders on the same
    stream of the same context.  Other streams, and tokens with no context
    current, are returned as they are.
    """
    if s._h > _MAX_DEFAULT_HANDLE or s._ctx is not None:
        return s
    c_ctx = _cc_current_ctx()
    if not c_ctx:
        return s
    key = (s._h, c_ctx)  # a pointer cdata hashes and compares by address
    bound = _BOUND_TOKENS.get(key)
    if bound is None:
        bound = _BOUND_TOKENS[key] = _adopt(s._handle, s._h, _context_of(c_ctx), _BUILTIN)
    return bound


def owning_context(s: Stream | None) -> Any:
    """Return the ``CUcontext`` that a release ordered on ``s`` must run in, or None.

    An owned or bound stream's context (see :func:`bind_for_release`), or
    that of the cuda_core Stream a borrowed one wraps, when it is a retained
    primary context (see :func:`~cuda_core._context.primary_handle`); None
    otherwise (an unbound default-stream token, a foreign stream, None).
    The driver is never asked: a foreign stream may be gone by the time its
    release runs, and its handle must not reach the driver then.
    """
    if s is None:
        return None
    return primary_handle(s._ctx)
