# SPDX-License-Identifier: Apache-2.0
"""``install_as_cuda_core()``: let code written for ``cuda.core`` import cuda_core.

After the call, ``import cuda.core`` and its public submodules give
cuda_core's own modules (the same objects), so a program or library written
for NVIDIA's ``cuda.core`` runs unchanged, on PyPy too.  An existing ``cuda``
namespace package (``cuda.bindings``, ``cuda.pathfinder``) stays usable.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import types

__all__ = ["install_as_cuda_core"]

#: The public submodules of ``cuda.core``, by their name under it.
_SUBMODULES = (
    "checkpoint",
    "graph",
    "system",
    "system.exceptions",
    "system.typing",
    "texture",
    "typing",
    "utils",
)


def install_as_cuda_core() -> None:
    """Make ``import cuda.core`` give cuda_core (the one-line drop-in).

    Call it once, before anything imports ``cuda.core``::

        import cuda_core

        cuda_core.install_as_cuda_core()

        from cuda.core import Device, launch  # cuda_core's objects

    ``cuda.core`` and its public submodules (``utils``, ``graph``,
    ``system``, ``system.typing``, ``system.exceptions``, ``texture``,
    ``checkpoint``, ``typing``) become cuda_core's modules:
    ``cuda.core.Device is cuda_core.Device``.  A ``cuda`` namespace package
    that is installed (``cuda.bindings``, ``cuda.pathfinder``) is kept and
    stays importable; without one, a ``cuda`` namespace package is made.
    Calling it again does nothing.

    Raises
    ------
    RuntimeError
        If NVIDIA's ``cuda.core`` (or a module under it) is already imported:
        the two cannot both be ``cuda.core``.
    """
    package = sys.modules["cuda_core"]
    current = sys.modules.get("cuda.core")
    if current is package:
        return  # installed already
    foreign = sorted(
        name
        for name, module in list(sys.modules.items())
        if (name == "cuda.core" or name.startswith("cuda.core."))
        and module is not None
        and not getattr(module, "__name__", "").startswith("cuda_core")
    )
    if foreign:
        where = getattr(sys.modules.get(foreign[0]), "__file__", None) or "?"
        raise RuntimeError(
            f"cuda_core.install_as_cuda_core(): NVIDIA's cuda.core is already imported "
            f"({foreign[0]} from {where}); call install_as_cuda_core() before anything "
            "imports cuda.core"
        )
    cuda = _cuda_namespace()
    modules = {"cuda.core": package}
    for name in _SUBMODULES:
        modules[f"cuda.core.{name}"] = importlib.import_module(f"cuda_core.{name}")
    sys.modules.update(modules)
    cuda.core = package  # type: ignore[attr-defined]  # ``import cuda.core; cuda.core.X``


def _cuda_namespace() -> types.ModuleType:
    """Return the ``cuda`` package: the installed namespace package, or a new one."""
    cuda = sys.modules.get("cuda")
    if cuda is not None:
        return cuda
    try:
        return importlib.import_module("cuda")
    except ImportError:
        pass
    # No ``cuda`` package on sys.path: an empty namespace package stands in.
    spec = importlib.machinery.ModuleSpec("cuda", None, is_package=True)
    spec.submodule_search_locations = []
    cuda = importlib.util.module_from_spec(spec)
    sys.modules["cuda"] = cuda
    return cuda
