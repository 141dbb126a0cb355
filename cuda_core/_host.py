# SPDX-License-Identifier: Apache-2.0
"""The host (CPU) as a memory location: :class:`Host`, the counterpart of a Device.

A :class:`Host` names where managed memory should live or move to when it
is not a GPU: the host in general, one NUMA node, or the NUMA node of the
calling thread.  It needs no driver; the memory modules translate it into a
``CUmemLocation`` when they use it.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Host"]

_instances: dict[tuple[int | None, bool], Host] = {}  # (numa_id, is_numa_current) -> Host
_lock = threading.Lock()


class Host:
    """A host memory location: the host, one NUMA node, or the caller's NUMA node.

    ``Host()`` is the host with no NUMA preference, ``Host(numa_id=N)`` NUMA
    node ``N``, and ``Host.numa_current()`` (or
    ``Host(is_numa_current=True)``) the NUMA node of whichever thread uses
    it.  Pass a Host wherever a location is accepted beside a
    :class:`~cuda_core.Device`: :meth:`ManagedBuffer.prefetch
    <cuda_core.ManagedBuffer.prefetch>`,
    :attr:`ManagedBuffer.preferred_location
    <cuda_core.ManagedBuffer.preferred_location>`,
    :attr:`ManagedBuffer.accessed_by <cuda_core.ManagedBuffer.accessed_by>`,
    the batched managed-memory functions of :mod:`cuda_core.utils` and the
    location hints of :class:`~cuda_core.utils.CopyOptions`.  A NUMA-specific
    Host needs a CUDA 13 driver there (TypeError before).

    Like :class:`~cuda_core.Device`, equal arguments give the same object
    (``Host(numa_id=1) is Host(numa_id=1)``), and Host objects are
    immutable and picklable.

    Parameters
    ----------
    numa_id : int, optional
        A NUMA node (``>= 0``); None for no particular node.
    is_numa_current : bool, optional
        Keyword-only: the calling thread's NUMA node.  Excludes ``numa_id``.

    Raises
    ------
    ValueError
        If ``numa_id`` is not a non-negative int (bools are refused), or
        both ``numa_id`` and ``is_numa_current`` are given.
    """

    __slots__ = ("_numa_id", "_is_numa_current", "__weakref__")

    _numa_id: int | None
    _is_numa_current: bool

    def __new__(cls, numa_id: int | None = None, *, is_numa_current: bool = False) -> Host:
        if is_numa_current and numa_id is not None:
            raise ValueError("numa_id and is_numa_current are mutually exclusive")
        if numa_id is not None and (
            isinstance(numa_id, bool) or not isinstance(numa_id, int) or numa_id < 0
        ):
            raise ValueError(f"numa_id must be a non-negative int, got {numa_id!r}")
        key = (None if numa_id is None else int(numa_id), bool(is_numa_current))
        self = _instances.get(key)
        if self is None:
            with _lock:
                self = _instances.get(key)
                if self is None:
                    self = object.__new__(cls)
                    object.__setattr__(self, "_numa_id", key[0])
                    object.__setattr__(self, "_is_numa_current", key[1])
                    _instances[key] = self
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Host objects are immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Host):
            return NotImplemented
        return self._numa_id == other._numa_id and self._is_numa_current == other._is_numa_current

    def __hash__(self) -> int:
        return hash((Host, self._numa_id, self._is_numa_current))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if self._is_numa_current:
            return _numa_current, ()
        return Host, (self._numa_id,)

    def __repr__(self) -> str:
        if self._is_numa_current:
            return "Host.numa_current()"
        if self._numa_id is None:
            return "Host()"
        return f"Host(numa_id={self._numa_id})"

    @classmethod
    def numa_current(cls) -> Host:
        """Return the Host that stands for the calling thread's NUMA node."""
        return cls(is_numa_current=True)

    @property
    def numa_id(self) -> int | None:
        """int or None: The NUMA node, or None when no particular node is named."""
        return self._numa_id

    @property
    def is_numa_current(self) -> bool:
        """bool: Whether this Host means the calling thread's NUMA node."""
        return self._is_numa_current


def _numa_current() -> Host:
    """Unpickle ``Host.numa_current()``."""
    return Host.numa_current()
