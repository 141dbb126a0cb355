# SPDX-License-Identifier: Apache-2.0
"""Registration slots: how a lower layer hands back a higher layer's object.

A module never imports a higher layer, not even inside a function (see
``docs/architecture.md``).  Where a lower object must return a higher one
(``Stream.device`` returns a :class:`~cuda_core.Device`), the higher module
stores its class here when it is imported, and the lower module reads the
slot when it is called.  ``import cuda_core`` imports every layer but the
subpackages ``graph`` and ``utils``, which are imported at their first use:
their slots are None until then (no instance of their classes can exist
before), and :func:`graph_builder` has the package face import ``graph``
when it is needed.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from cuda_core._device import Device as _Device

__all__ = []

#: :class:`cuda_core.Device`; set by ``cuda_core._device``.
Device: type[_Device] = None  # type: ignore[assignment]  # None until then

#: :class:`cuda_core.graph.GraphBuilder`; set by ``cuda_core.graph._graph_builder``.
GraphBuilder = None

#: :class:`cuda_core.utils.StridedMemoryView`; set by ``cuda_core.utils._memoryview``.
StridedMemoryView = None

#: ``import_subpackage(name)`` imports ``cuda_core.<name>``; set by the
#: package face (``cuda_core/__init__.py``).
import_subpackage: Callable[[str], ModuleType] | None = None


def graph_builder() -> Any:
    """Return :class:`cuda_core.graph.GraphBuilder`, importing ``cuda_core.graph`` if needed.

    None only when that import is not possible (a partial import of cuda_core).
    """
    if GraphBuilder is None and import_subpackage is not None:
        import_subpackage("graph")
    return GraphBuilder
