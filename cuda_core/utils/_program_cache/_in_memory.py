# SPDX-License-Identifier: Apache-2.0
"""A process-local program cache: :class:`InMemoryProgramCache`."""

from __future__ import annotations

import collections
import threading
from typing import TYPE_CHECKING

from cuda_core.utils._program_cache._resource import (
    ProgramCacheResource,
    _check_max_size,
    _key_bytes,
    _value_bytes,
)

if TYPE_CHECKING:
    from cuda_core.utils._program_cache._resource import _Key, _Value

__all__ = ["InMemoryProgramCache"]


class InMemoryProgramCache(ProgramCacheResource):
    """A process-local cache with least-recently-used eviction.

    Parameters
    ----------
    max_size_bytes : int, optional
        Bound on the total size of the stored values; the least recently
        read or written entries are evicted beyond it.  ``None``: unbounded.

    Notes
    -----
    Thread-safe: one lock serializes every operation.
    """

    def __init__(self, *, max_size_bytes: int | None = None) -> None:
        self._max_size_bytes = _check_max_size(max_size_bytes)
        self._entries: collections.OrderedDict[bytes, bytes] = (
            collections.OrderedDict()
        )  # key bytes -> value bytes, oldest first
        self._total = 0
        self._lock = threading.RLock()

    def __getitem__(self, key: _Key) -> bytes:
        k = _key_bytes(key)
        with self._lock:
            try:
                data = self._entries[k]
            except KeyError:
                raise KeyError(key) from None
            self._entries.move_to_end(k)
            return data

    def __setitem__(self, key: _Key, value: _Value) -> None:
        data = _value_bytes(value)
        k = _key_bytes(key)
        with self._lock:
            old = self._entries.pop(k, None)
            if old is not None:
                self._total -= len(old)
            self._entries[k] = data
            self._total += len(data)
            if self._max_size_bytes is not None:
                while self._entries and self._total > self._max_size_bytes:
                    _, evicted = self._entries.popitem(last=False)
                    self._total -= len(evicted)

    def __delitem__(self, key: _Key) -> None:
        k = _key_bytes(key)
        with self._lock:
            try:
                data = self._entries.pop(k)
            except KeyError:
                raise KeyError(key) from None
            self._total -= len(data)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"<InMemoryProgramCache entries={len(self)} bytes={self._total}>"

    def clear(self) -> None:
        """Remove every entry."""
        with self._lock:
            self._entries.clear()
            self._total = 0
