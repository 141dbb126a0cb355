# SPDX-License-Identifier: Apache-2.0
"""Objects that stand for streams: the ``__cuda_stream__`` protocol and graph builders.

A foreign object is accepted wherever a :class:`~cuda_core.Stream` is when
it implements ``__cuda_stream__()``, returning ``(0, address)``; a
:class:`~cuda_core.graph.GraphBuilder` stands for the stream it captures.
This module reads what such objects publish, and the addresses that
:meth:`Stream.from_handle <cuda_core.Stream.from_handle>` takes, without
knowing :class:`~cuda_core.Stream` itself (``_as_stream`` in
:mod:`cuda_core._stream` turns them into streams).
"""

from __future__ import annotations

import warnings
from typing import Any

from cuda_core._coerce import driver_handle, index_or_none

__all__ = []


def _stream_address(obj: Any) -> int:
    """Return the stream address an object publishes through ``__cuda_stream__``.

    The checks and their messages are ``cuda.core``'s: a result that is not
    a 2-element sequence, or whose first element (the protocol version) is
    not 0, raises RuntimeError; ``__cuda_stream__`` as an attribute instead
    of a method is deprecated.  The address must be a non-negative int
    (TypeError, OverflowError otherwise).
    """
    try:
        attr = obj.__cuda_stream__
    except AttributeError:
        raise TypeError(f"{type(obj).__name__} object does not implement __cuda_stream__") from None
    if callable(attr):
        info = attr()
    else:
        warnings.warn(
            "Implementing __cuda_stream__ as an attribute is deprecated; it must be "
            "implemented as a method",
            DeprecationWarning,
            stacklevel=4,
        )
        info = attr
    try:
        length = len(info)
    except TypeError as e:
        raise RuntimeError(
            f"obj.__cuda_stream__ must return a sequence with 2 elements, got {type(info)}"
        ) from e
    if length != 2:
        raise RuntimeError(
            f"obj.__cuda_stream__ must return a sequence with 2 elements, got {length} elements"
        )
    if info[0] != 0:
        raise RuntimeError(
            "The first element of the sequence returned by obj.__cuda_stream__ must be 0, "
            f"got {info[0]!r}"
        )
    raw = info[1]
    address = index_or_none(raw)
    if address is None:
        raise TypeError(
            f"the stream address returned by obj.__cuda_stream__ must be an int, "
            f"got {type(raw).__name__}"
        )
    if address < 0:
        raise OverflowError(
            f"the stream address returned by obj.__cuda_stream__ must be non-negative, "
            f"got {address}"
        )
    return address


def _handle_address(handle: Any) -> int:
    """Return the stream address :meth:`Stream.from_handle` was given.

    An int (or an integer object with ``__index__``) or a ``cuda.bindings``
    ``CUstream``; anything else raises TypeError, a negative address
    ValueError.
    """
    address = index_or_none(handle)
    if address is None:
        address = driver_handle(handle, "CUstream")  # a cuda.bindings CUstream
    if address is None:
        raise TypeError(f"handle must be an int (a stream address), not {type(handle).__name__}")
    if address < 0:
        raise ValueError(f"handle must be a non-negative stream address, got {address}")
    return address
