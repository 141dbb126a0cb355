# SPDX-License-Identifier: Apache-2.0
"""Reducers for multiprocessing's pickler, registered without importing multiprocessing.

The IPC classes tell multiprocessing's pickler how to send them to another
process (``multiprocessing.reduction.register``).  Importing multiprocessing
costs more than the rest of the memory layer, and an object can only reach
that pickler once multiprocessing is imported.  So :func:`register` applies
a registration at once where ``multiprocessing.reduction`` is imported, and
otherwise right after that module runs (a ``sys.meta_path`` entry, removed
when done, watches for it).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

__all__ = ["register"]

_MODULE = "multiprocessing.reduction"
_pending: list[tuple[type, Callable[..., Any]]] = []  # (class, reducer) pairs waiting for _MODULE
_lock = threading.Lock()


def register(cls: type, reducer: Callable[..., Any]) -> None:
    """Call ``multiprocessing.reduction.register(cls, reducer)`` now or once it is imported."""
    with _lock:
        module = sys.modules.get(_MODULE)
        if module is None or not hasattr(module, "register"):
            if not _pending:
                sys.meta_path.insert(0, _watcher)
            _pending.append((cls, reducer))
            return
    module.register(cls, reducer)


def _apply_pending(module: Any) -> None:
    with _lock:
        if _watcher in sys.meta_path:
            sys.meta_path.remove(_watcher)
        pending = list(_pending)
        del _pending[:]
    for cls, reducer in pending:
        module.register(cls, reducer)


class _Watcher:
    """``sys.meta_path`` entry: runs :func:`_apply_pending` after ``multiprocessing.reduction``.

    It finds nothing itself: for that one module it asks the finders after
    it for the spec and has the spec's loader apply the pending
    registrations once the module has run.
    """

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != _MODULE:
            return None
        spec: Any = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        exec_module = getattr(getattr(spec, "loader", None), "exec_module", None)
        if exec_module is None:  # pragma: no cover - not a loader of the standard kind
            return spec

        def exec_then_register(module: Any) -> None:
            exec_module(module)
            _apply_pending(module)

        spec.loader.exec_module = exec_then_register
        return spec


_watcher = _Watcher()
