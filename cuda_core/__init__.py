# SPDX-License-Identifier: Apache-2.0
"""cuda_core: the Pythonic CUDA API of NVIDIA's ``cuda.core`` on CFFI.

Runs on CPython and PyPy.  Importing this package needs no GPU and no CUDA
library; each library is found and loaded at its first use (see
``python -m cuda_core`` for a report of what was found).
"""

from __future__ import annotations

import sys as _sys
import types as _types
import typing as _typing


def _extension_missing() -> ModuleNotFoundError:
    """The error for a checkout whose C extension is not built for this interpreter."""
    import glob
    import os
    import platform

    here = os.path.dirname(os.path.abspath(__file__))
    others = sorted(os.path.basename(p) for p in glob.glob(os.path.join(here, "_cuda_ffi*.so")))
    built = f" (only builds for other interpreters: {', '.join(others)})" if others else ""
    return ModuleNotFoundError(
        "cuda_core's C extension, cuda_core._cuda_ffi, is not built for this interpreter "
        f"({platform.python_implementation()} {platform.python_version()}) in {here}{built}. "
        'Build it from the checkout with `pip install -e .` (or `pip install -e ".[cu13]"`) '
        "or `python setup.py build_ext --inplace`, which need a C compiler, the Python "
        "headers, cffi and setuptools; or install a built wheel.",
        name="cuda_core._cuda_ffi",
    )


try:
    __import__("cuda_core._cuda_ffi")
except ModuleNotFoundError as exc:
    if exc.name != "cuda_core._cuda_ffi":
        raise
    raise _extension_missing() from None
del _extension_missing

import cuda_core._ffi_types as _ffi_types  # noqa: E402

_ffi_types.parse_all()  # before any thread can use the library: see the module

import cuda_core._slots as _slots  # noqa: E402
from cuda_core import typing  # noqa: E402

# --- public classes (one import line per module; keep sorted) ---
from cuda_core._context import Context
from cuda_core._default_stream import LEGACY_DEFAULT_STREAM, PER_THREAD_DEFAULT_STREAM
from cuda_core._device import Device
from cuda_core._device_resources import (
    DeviceResources,
    SMResource,
    SMResourceOptions,
    WorkqueueResource,
    WorkqueueResourceOptions,
)
from cuda_core._errors import (
    CUDAError,
    CUDAWarning,
    LibraryNotFoundError,
    NVJitLinkError,
    NVRTCError,
    NVVMError,
)
from cuda_core._event import Event, EventOptions
from cuda_core._green_context import ContextOptions
from cuda_core._host import Host
from cuda_core._install import install_as_cuda_core
from cuda_core._kernel import Kernel
from cuda_core._launch_config import LaunchConfig
from cuda_core._launcher import launch
from cuda_core._linker import Linker
from cuda_core._linker_options import LinkerOptions
from cuda_core._memory import (
    Buffer,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    GraphMemoryResource,
    LegacyPinnedMemoryResource,
    ManagedBuffer,
    ManagedMemoryResource,
    ManagedMemoryResourceOptions,
    MemoryResource,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
    VirtualMemoryResource,
    VirtualMemoryResourceOptions,
)
from cuda_core._module import ObjectCode
from cuda_core._program import Program
from cuda_core._program_options import ProgramOptions
from cuda_core._stream import Stream
from cuda_core._stream_options import StreamOptions
from cuda_core._version import __version__

if _typing.TYPE_CHECKING:  # imported at their first use (see __getattr__)
    from cuda_core._graphics import GraphicsResource
    from cuda_core._tensor_map import TensorMapDescriptor, TensorMapDescriptorOptions

# The other subpackages are imported at their first use (``cuda_core.graph``,
# ``from cuda_core import utils``), not with the package: most programs need
# few of them, and importing them all would cost more than the rest of the
# package.  ``import cuda_core.system`` works as for any package.
_LAZY_SUBPACKAGES = ("checkpoint", "graph", "system", "texture", "utils")

# Classes few programs use, in modules imported at the first use of a name.
_LAZY_NAMES = {
    "GraphicsResource": "_graphics",
    "TensorMapDescriptor": "_tensor_map",
    "TensorMapDescriptorOptions": "_tensor_map",
}

# The public names (what `from cuda_core import *` and type checkers export):
# every public name imported above, and only those (tests/test_typing.py).
__all__ = [
    "Buffer",
    "checkpoint",
    "Context",
    "ContextOptions",
    "CUDAError",
    "CUDAWarning",
    "Device",
    "DeviceMemoryResource",
    "DeviceMemoryResourceOptions",
    "DeviceResources",
    "Event",
    "EventOptions",
    "graph",
    "GraphicsResource",
    "GraphMemoryResource",
    "Host",
    "install_as_cuda_core",
    "Kernel",
    "launch",
    "LaunchConfig",
    "LEGACY_DEFAULT_STREAM",
    "LegacyPinnedMemoryResource",
    "LibraryNotFoundError",
    "Linker",
    "LinkerOptions",
    "ManagedBuffer",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
    "MemoryResource",
    "NVJitLinkError",
    "NVRTCError",
    "NVVMError",
    "ObjectCode",
    "PER_THREAD_DEFAULT_STREAM",
    "PinnedMemoryResource",
    "PinnedMemoryResourceOptions",
    "Program",
    "ProgramOptions",
    "SMResource",
    "SMResourceOptions",
    "Stream",
    "StreamOptions",
    "system",
    "TensorMapDescriptor",
    "TensorMapDescriptorOptions",
    "texture",
    "typing",
    "utils",
    "VirtualMemoryResource",
    "VirtualMemoryResourceOptions",
    "WorkqueueResource",
    "WorkqueueResourceOptions",
]


def _import_subpackage(name: str) -> _types.ModuleType:
    __import__(f"cuda_core.{name}")
    return _sys.modules[f"cuda_core.{name}"]


if not _typing.TYPE_CHECKING:  # type checkers see the imports above

    def __getattr__(name: str) -> _typing.Any:
        if name in _LAZY_SUBPACKAGES:
            return _import_subpackage(name)
        module = _LAZY_NAMES.get(name)
        if module is not None:
            value = getattr(_import_subpackage(module), name)
            globals()[name] = value
            _seal_read_only()
            return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_slots.import_subpackage = _import_subpackage

# Read-only properties fail as on cuda.core's classes (each subpackage does
# the same at the end of its import).
from cuda_core._read_only import seal_read_only as _seal_read_only  # noqa: E402

_seal_read_only()


def __dir__() -> list[str]:
    return sorted(set(globals()).union(_LAZY_SUBPACKAGES, _LAZY_NAMES))
