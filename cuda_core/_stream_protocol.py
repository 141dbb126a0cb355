# SPDX-License-Identifier: Apache-2.0
"""Objects that stand for streams: the ``__cuda_stream__`` protocol and graph builders.

A foreign object is accepted wherever a :class:`~cuda_core.Stream` is when
it implements ``__cuda_stream__()``, returning ``(0, address)``; a
:class:`~cuda_core.graph.GraphBuilder` stands for the stream it captures.
This module reads what such objects publish, without knowing
:class:`~cuda_core.Stream` itself (``_as_stream`` in :mod:`cuda_core._stream`
turns them into streams).
"""

from __future__ import annotations

import warnings

from cuda_core._utils import index_or_none

__all__ = []


def _stream_address(obj):
    """Return the stream address an object publishes through ``__cuda_stream__``."""
    try:
        attr = obj.__cuda_stream__
    except AttributeError:
        raise TypeError(f"{type(obj).__name__} object does not implement __cuda_stream__") from None
    if callable(attr):
        info = attr()
    else:
        warnings.warn(
            "implementing __cuda_stream__ as an attribute is deprecated; it must be a method",
            DeprecationWarning,
            stacklevel=4,
        )
        info = attr
    try:
        length = len(info)
    except TypeError:
        raise ValueError(
            f"__cuda_stream__() must return a (version, address) pair, got {type(info).__name__}"
        ) from None
    if length != 2:
        raise ValueError(
            f"__cuda_stream__() must return a (version, address) pair, got {length} elements"
        )
    if info[0] != 0:
        raise ValueError(f"__cuda_stream__() protocol version must be 0, got {info[0]!r}")
    raw = info[1]
    address = index_or_none(raw)
    if address is None:
        raise ValueError(f"__cuda_stream__() address must be an int, got {type(raw).__name__}")
    if address < 0:
        raise ValueError(f"__cuda_stream__() address must be non-negative, got {address}")
    return address
