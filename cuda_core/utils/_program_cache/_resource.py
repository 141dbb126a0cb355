# SPDX-License-Identifier: Apache-2.0
"""The interface of a compiled-program cache: :class:`ProgramCacheResource`.

Also the key and value coercions every cache shares.
"""

from __future__ import annotations

import abc
import collections.abc
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Tuple, Union

from cuda_core._lifetime import Closeable
from cuda_core._module import ObjectCode

if TYPE_CHECKING:
    _Key = Union[bytes, bytearray, str]
    _Value = Union[bytes, bytearray, memoryview, ObjectCode]

__all__ = ["ProgramCacheResource"]


class ProgramCacheResource(abc.ABC, Closeable):
    """Interface of a compiled-program cache: ``bytes``/``str`` keys to bytes.

    A ``str`` key is the same entry as its UTF-8 encoding.  Values may be
    written as ``bytes``, ``bytearray``, ``memoryview`` or an
    :class:`~cuda_core.ObjectCode` (whose code is stored; a path-backed one is
    read at write time); they are read back as ``bytes``, unvalidated.
    Symbol mappings of name expressions are not stored.

    There is deliberately no ``__contains__``: between ``key in cache`` and
    ``cache[key]`` another process may evict or replace the entry.  Use
    :meth:`get`, which answers both questions at once.
    """

    @abc.abstractmethod
    def __getitem__(self, key: _Key) -> bytes:
        """Return the bytes stored under ``key``; raise KeyError if absent."""

    @abc.abstractmethod
    def __setitem__(self, key: _Key, value: _Value) -> None:
        """Store ``value`` (bytes-like or ObjectCode) under ``key``."""

    @abc.abstractmethod
    def __delitem__(self, key: _Key) -> None:
        """Remove ``key``; raise KeyError if absent."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """Return the number of entries."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    def get(self, key: _Key, default: Any = None) -> Any:
        """Return ``self[key]``, or ``default`` when the key is absent.

        Parameters
        ----------
        key : bytes or str
        default : object, optional

        Returns
        -------
        bytes or object
        """
        try:
            return self[key]
        except KeyError:
            return default

    def update(self, items: Mapping[_Key, _Value] | Iterable[Tuple[_Key, _Value]], /) -> None:
        """Store every ``(key, value)`` of a mapping or an iterable of pairs.

        Not transactional: a failure part-way leaves earlier writes in place.
        """
        if isinstance(items, collections.abc.Mapping):
            items = items.items()
        for key, value in items:
            self[key] = value

    def close(self) -> None:  # noqa: B027 - deliberately a no-op default
        """Release resources held by the cache (nothing by default)."""


# -- private helpers -------------------------------------------------------------


def _check_max_size(value: object) -> int | None:
    """The in-memory cache's bound: a positive int (not a bool) or None."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        raise ValueError("max_size_bytes must be positive or None (0 would evict every write)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"max_size_bytes must be a positive int or None (0 would evict every write), "
            f"got {value!r}"
        )
    return value


def _key_bytes(key: object) -> bytes:
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    raise TypeError(f"cache keys must be bytes or str, got {type(key).__name__}")


def _value_bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, ObjectCode):
        code = value.code
        if isinstance(code, str):
            try:
                return Path(code).read_bytes()
            except FileNotFoundError:
                raise FileNotFoundError(
                    f"cannot store path-backed ObjectCode in cache: {code} no longer exists"
                ) from None
        return bytes(code)
    raise TypeError(f"cache values must be bytes-like or ObjectCode, got {type(value).__name__}")
