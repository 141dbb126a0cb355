# SPDX-License-Identifier: Apache-2.0
"""Read-only properties that fail as on ``cuda.core``'s (Cython) classes.

``AttributeError: attribute 'name' of 'Type' objects is not writable``, the
same text on CPython and PyPy (whose own texts for a property without a
setter differ from each other and from Cython's).  The package face and each
lazily imported subpackage call :func:`seal_read_only` at the end of their
import.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["seal_read_only"]


# No class docstring: each instance carries the docstring of the property
# it replaces.  Reading it is a plain property read.
class _ReadOnlyProperty(property):
    _attr_name: str

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(
            f"attribute '{self._attr_name}' of '{type(obj).__name__}' objects is not writable"
        )

    def __delete__(self, obj: Any) -> None:
        self.__set__(obj, None)


_SEALED: set[str] = set()


def seal_read_only() -> None:
    """Give every read-only property of cuda_core's imported classes cuda.core's error.

    Walks the ``cuda_core`` modules imported so far (each once) and replaces
    each ``property`` without setter and deleter defined by one of their
    classes with a :class:`_ReadOnlyProperty`.
    """
    for mod_name, module in list(sys.modules.items()):
        if module is None or mod_name in _SEALED:
            continue
        if mod_name != "cuda_core" and not mod_name.startswith("cuda_core."):
            continue
        _SEALED.add(mod_name)
        for cls in list(vars(module).values()):
            if isinstance(cls, type) and cls.__module__ == mod_name:
                _seal_class(cls)


def _seal_class(cls: type) -> None:
    for name, attr in list(vars(cls).items()):
        if type(attr) is property and attr.fset is None and attr.fdel is None:
            sealed = _ReadOnlyProperty(attr.fget, None, None, attr.__doc__)
            sealed._attr_name = name
            sealed.__doc__ = attr.__doc__
            type.__setattr__(cls, name, sealed)
