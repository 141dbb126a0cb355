# SPDX-License-Identifier: Apache-2.0
"""A memory pool's attributes (``_MemPool.attributes``), read live from the driver."""

from __future__ import annotations

import weakref
from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._ffi_types import ctype_of

__all__: list[str] = []


class _MemPoolAttributes:
    """Attributes of a memory pool (read live from the driver).

    The object keeps its pool alive, as in ``cuda.core``: an owned pool
    closed (or collected) while its attributes object lives is destroyed
    when that object goes, so ``mr.attributes`` read before ``mr.close()``
    stays readable.
    """

    __slots__ = ("_pool", "_state", "__weakref__")
    _pool: Any  # the CUmemoryPool cdata
    _state: Any  # the pool's _OwnedPool (None: a pool the resource does not own)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "_MemPoolAttributes cannot be instantiated directly. Please use MemoryResource APIs."
        )

    @classmethod
    def _init(cls, mr: Any) -> _MemPoolAttributes:
        self = object.__new__(cls)
        self._pool = mr._pool
        state = self._state = mr._state
        if state is not None:
            # Counted as an outstanding user of the pool until collected.
            state.acquire()
            weakref.finalize(self, state.release, False)
        return self

    def __repr__(self) -> str:
        # cuda.core's layout: the fields in alphabetical order.
        names = (
            "release_threshold",
            "reserved_mem_current",
            "reserved_mem_high",
            "reuse_allow_internal_dependencies",
            "reuse_allow_opportunistic",
            "reuse_follow_event_dependencies",
            "used_mem_current",
            "used_mem_high",
        )
        body = ", ".join(f"{n}={getattr(self, n)}" for n in names)
        return f"{type(self).__name__}({body})"

    def _get(self, attr: int, ctype: str) -> Any:
        value = ffi.new(ctype_of(ctype))
        check(lib.cuMemPoolGetAttribute(self._pool, attr, value), "cuMemPoolGetAttribute")
        return value[0]

    def _set(self, attr: int, ctype: str, value: int) -> None:
        c_value = ffi.new(ctype_of(ctype), value)
        check(lib.cuMemPoolSetAttribute(self._pool, attr, c_value), "cuMemPoolSetAttribute")

    @property
    def reuse_follow_event_dependencies(self) -> bool:
        """bool: Allow reuse of memory freed on another stream after an event dependency."""
        return bool(self._get(lib.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, "int *"))

    @property
    def reuse_allow_opportunistic(self) -> bool:
        """bool: Allow reuse of completed frees without a dependency."""
        return bool(self._get(lib.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, "int *"))

    @property
    def reuse_allow_internal_dependencies(self) -> bool:
        """bool: Allow the driver to insert dependencies to reuse memory."""
        return bool(self._get(lib.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, "int *"))

    @property
    def release_threshold(self) -> int:
        """int: Reserved memory (bytes) the pool keeps before releasing to the OS."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, "cuuint64_t *"))

    @property
    def reserved_mem_current(self) -> int:
        """int: Backing memory currently reserved by the pool, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, "cuuint64_t *"))

    @property
    def reserved_mem_high(self) -> int:
        """int: High watermark of reserved memory, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, "cuuint64_t *"))

    @property
    def used_mem_current(self) -> int:
        """int: Memory currently allocated from the pool, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, "cuuint64_t *"))

    @property
    def used_mem_high(self) -> int:
        """int: High watermark of allocated memory, in bytes."""
        return int(self._get(lib.CU_MEMPOOL_ATTR_USED_MEM_HIGH, "cuuint64_t *"))
