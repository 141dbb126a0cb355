# SPDX-License-Identifier: Apache-2.0
"""The default streams: :data:`LEGACY_DEFAULT_STREAM`, :data:`PER_THREAD_DEFAULT_STREAM`.

Both are module singletons whose handles (``CU_STREAM_LEGACY``,
``CU_STREAM_PER_THREAD``) always refer to the calling thread's current
context; :func:`default_stream` picks one as the environment says.
"""

from __future__ import annotations

import os

from cuda_core._stream import Stream

__all__ = ["LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "default_stream"]

_ENV_PER_THREAD = "CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM"

LEGACY_DEFAULT_STREAM = Stream._legacy_default()
PER_THREAD_DEFAULT_STREAM = Stream._per_thread_default()


def default_stream() -> Stream:
    """Return the default stream chosen by the environment.

    :data:`PER_THREAD_DEFAULT_STREAM` when the environment variable
    ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`` holds a non-zero integer
    (read like C's ``strtol``: ``"1"``, ``" 2x"``), otherwise
    :data:`LEGACY_DEFAULT_STREAM`.

    Returns
    -------
    Stream
    """
    value = os.environ.get(_ENV_PER_THREAD)
    if value and _leading_int(value):
        return PER_THREAD_DEFAULT_STREAM
    return LEGACY_DEFAULT_STREAM


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _leading_int(text: str) -> int:
    """Return the integer at the start of ``text`` (0 if none), as C's strtol does."""
    text = text.lstrip()
    end = 0
    if text[:1] in ("+", "-"):
        end = 1
    start = end
    while end < len(text) and text[end].isdigit() and text[end].isascii():
        end += 1
    if end == start:
        return 0
    return int(text[:end])
