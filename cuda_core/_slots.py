# SPDX-License-Identifier: Apache-2.0
"""Registration slots: the one way a lower layer reaches a higher one.

A module never imports a higher layer, not even inside a function (see
``docs/architecture.md``).  Where a lower object must hand back or call into
a higher one (``Stream.device`` returns a :class:`~cuda_core.Device`, an
error about an unloaded NVRTC asks the loader why), the higher module stores
what is needed in a slot of this module when it is imported, and the lower
module reads it, when it is called, through the slot's accessor function.

Each slot is a typed module attribute that starts as None; a higher module
fills it with one assignment (``_slots.Device = Device``).  Lower modules
never read a slot directly: they call its accessor, which says what None
means for that slot (an error, "not yet", or "import it now").  This module
imports nothing from the package, so every layer may import it, the lowest
(``_errors``) included.  ``tests/package/test_slots.py`` checks the table in
``docs/architecture.md`` against the slots below, and
``tests/package/test_layers.py`` refuses any other registry.

``import cuda_core`` imports every layer but the subpackages ``graph``,
``utils``, ``system``, ``texture`` and ``checkpoint``, which load at their
first use.  The slots that ``graph`` and ``utils`` fill are None until then,
when no instance of their classes can exist yet; :func:`graph_builder`
imports ``graph`` (through :data:`import_subpackage`) where a lower layer
must create a builder unprompted.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from cuda_core._context import Context
    from cuda_core._device import Device as _Device
    from cuda_core._stream import Stream
    from cuda_core.graph._graph_builder import GraphBuilder as _GraphBuilder
    from cuda_core.system._device import Device as _NvmlDevice
    from cuda_core.utils._memoryview import StridedMemoryView as _StridedMemoryView
    from cuda_core.utils._program_cache import ProgramCacheResource

__all__ = [
    "create_green_stream",
    "device_class",
    "device_resources_type",
    "ensure_loaded",
    "graph_builder",
    "graph_builder_if_loaded",
    "nvml_device_class",
    "program_cache_support",
    "strided_memory_view",
    "strided_memory_view_if_loaded",
    "subpackage",
]

# -- the slots (filled by higher modules when they are imported) ----------------------

#: :class:`cuda_core.Device`; filled by ``cuda_core._device``.
Device: type[_Device] | None = None

#: :class:`cuda_core.graph.GraphBuilder`; filled by ``cuda_core.graph._graph_builder``.
GraphBuilder: type[_GraphBuilder] | None = None

#: :class:`cuda_core.utils.StridedMemoryView`; filled by ``cuda_core.utils._memoryview``.
StridedMemoryView: type[_StridedMemoryView] | None = None

#: :class:`cuda_core.system.Device` (an NVML device); filled by ``cuda_core.system._device``.
NvmlDevice: type[_NvmlDevice] | None = None

#: ``import_subpackage(name)`` imports and returns ``cuda_core.<name>``; filled by
#: the package face (``cuda_core/__init__.py``).
import_subpackage: Callable[[str], ModuleType] | None = None

#: ``library_loader(name)`` loads ``"nvrtc"``, ``"nvjitlink"`` or ``"nvvm"`` or raises
#: ``LibraryNotFoundError`` with the search report; filled by ``cuda_core._loader``.
library_loader: Callable[[str], None] | None = None

#: ``green_stream_factory(ctx, options)`` creates a stream of a green Context;
#: filled by ``cuda_core._green_context``.
green_stream_factory: Callable[[Context, Any], Stream] | None = None

#: ``(ProgramCacheResource, make_program_cache_key)``; filled by
#: ``cuda_core.utils._program_cache``.
program_cache: tuple[type[ProgramCacheResource], Callable[..., object]] | None = None

#: ``cuda_core.typing.DeviceResourcesType``, the alias over the resource
#: classes; filled by ``cuda_core._device_resources``.
DeviceResourcesType: object = None


# -- the accessors (what lower modules call) ----------------------------------------


def device_class() -> type[_Device]:
    """Return :class:`cuda_core.Device` (set whenever ``cuda_core`` is imported)."""
    cls = Device
    if cls is None:  # only in a partial import of cuda_core
        raise ImportError("cuda_core.Device is not available: cuda_core._device is not imported")
    return cls


def graph_builder() -> type[_GraphBuilder]:
    """Return :class:`cuda_core.graph.GraphBuilder`, importing ``cuda_core.graph`` if needed.

    Raises ImportError where that import is not possible (a partial import of
    cuda_core).
    """
    if GraphBuilder is None:
        subpackage("graph")
    cls = GraphBuilder
    if cls is None:
        raise ImportError(
            "graph support is not available: cuda_core.graph.GraphBuilder could not be imported"
        )
    return cls


def graph_builder_if_loaded() -> type[_GraphBuilder] | None:
    """Return :class:`cuda_core.graph.GraphBuilder`, or None before ``cuda_core.graph`` is imported.

    For type tests: no builder can exist before that import.
    """
    return GraphBuilder


def strided_memory_view() -> type[_StridedMemoryView]:
    """Return :class:`cuda_core.utils.StridedMemoryView`, importing ``utils`` if needed."""
    if StridedMemoryView is None:
        subpackage("utils")
    cls = StridedMemoryView
    if cls is None:
        raise ImportError(
            "cuda_core.utils.StridedMemoryView could not be imported (a partial import)"
        )
    return cls


def strided_memory_view_if_loaded() -> type[_StridedMemoryView] | None:
    """Return :class:`cuda_core.utils.StridedMemoryView`, or None before ``utils`` is imported.

    For type tests: no view can exist before that import.
    """
    return StridedMemoryView


def nvml_device_class() -> type[_NvmlDevice]:
    """Return :class:`cuda_core.system.Device` (set once ``cuda_core.system`` is imported)."""
    cls = NvmlDevice
    if cls is None:  # only its own package's modules ask, after importing it
        raise ImportError(
            "cuda_core.system.Device is not available: cuda_core.system is not imported"
        )
    return cls


def subpackage(name: str) -> ModuleType | None:
    """Import and return ``cuda_core.<name>``; None in a partial import of cuda_core."""
    importer = import_subpackage
    return None if importer is None else importer(name)


def ensure_loaded(name: str) -> None:
    """Load the compiler library ``name``, raising ``LibraryNotFoundError`` if it is missing.

    Does nothing before ``cuda_core._loader`` is imported.
    """
    loader = library_loader
    if loader is not None:
        loader(name)


def create_green_stream(ctx: Context, options: Any) -> Stream:
    """Create a stream of the green Context ``ctx`` (see ``cuda_core._green_context``)."""
    factory = green_stream_factory
    if factory is None:  # a green Context is made by that module, so it is imported
        raise ImportError("green context streams need cuda_core._green_context")
    return factory(ctx, options)


def program_cache_support() -> tuple[
    type[ProgramCacheResource] | None, Callable[..., object] | None
]:
    """Return ``(ProgramCacheResource, make_program_cache_key)``, or ``(None, None)``.

    No cache object can exist before ``cuda_core.utils`` is imported, so
    ``(None, None)`` means that an object passed as a cache is not one.
    """
    support = program_cache
    return (None, None) if support is None else support


def device_resources_type() -> object:
    """Return ``cuda_core.typing.DeviceResourcesType`` (None in a partial import)."""
    return DeviceResourcesType
