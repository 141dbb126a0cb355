# SPDX-License-Identifier: Apache-2.0
"""Imports of IPC buffers: one mapping per (pool, exported pointer) in a process.

The driver maps an exported pool allocation once per import call, and the
two kinds of pool disagree about a second import of the same allocation: a
pinned (host) pool refuses it (``CUDA_ERROR_ALREADY_MAPPED``), a device
pool maps it again but unmaps it at the first free, so the second free of
the "other" mapping fails.  So, as ``cuda.core`` does, the imports of one
process are cached by the importing pool and the exported pointer (the
descriptor's bytes): a second :meth:`Buffer.from_ipc_descriptor
<cuda_core.Buffer.from_ipc_descriptor>` of the same descriptor into the same
pool returns a new Buffer over the same mapping.  The mapping is a shared
release (:class:`_ImportedRelease`, a ``_release._SharedRelease`` that
counts one claim per Buffer, plus any graph node's): the memory is freed
once, when the last claim goes, whichever Buffer is closed first.  The
entry leaves the cache at that moment, under the same lock as the count,
so a later import maps the allocation anew.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from cuda_core._memory._release import _claims_lock, _SharedRelease

if TYPE_CHECKING:
    from cuda_core._memory._buffer import Buffer

__all__: list[str] = []

#: (pool handle, 64 descriptor bytes) -> the shared release of the mapping.
_imports: dict[tuple[int, bytes], _ImportedRelease] = {}
#: Serializes imports, so two threads never map the same allocation twice.
_import_lock = threading.Lock()


class _ImportedRelease(_SharedRelease):
    """The release of one IPC mapping, shared by every Buffer imported over it."""

    __slots__ = ("key",)
    key: tuple[int, bytes]

    def _take(self) -> bool:
        """Drop one claim; with the last, the mapping leaves the cache (then is freed)."""
        with _claims_lock:
            self.claims -= 1
            if self.claims:
                return False
            if _imports.get(self.key) is self:
                del _imports[self.key]
            return True


def import_once(
    key: tuple[int, bytes],
    first: Callable[[], Buffer],
    again: Callable[[_SharedRelease], Buffer],
) -> Buffer:
    """Return a Buffer over the mapping of ``key``, importing it only if it is not mapped.

    ``first()`` imports and returns the first Buffer (its release becomes
    the shared one, cached under ``key``); ``again(shared)`` returns another
    Buffer over a mapping already cached, whose claim has been counted.
    """
    with _import_lock:
        with _claims_lock:
            shared = _imports.get(key)
            if shared is not None:
                shared.claims += 1
        if shared is not None:
            try:
                return again(shared)
            except BaseException:
                shared.drop()
                raise
        buf = first()
        if buf._release is None:  # nothing mapped (an empty allocation)
            return buf
        shared = _ImportedRelease(buf)
        shared.key = key
        with _claims_lock:
            buf._release = shared
            _imports[key] = shared
        return buf


def imported_count() -> int:
    """The number of mappings cached (for tests)."""
    return len(_imports)
