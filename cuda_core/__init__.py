# SPDX-License-Identifier: Apache-2.0
"""cuda_core: the Pythonic CUDA API of NVIDIA's ``cuda.core`` on CFFI.

Runs on CPython and PyPy.  Importing this package needs no GPU and no CUDA
library; each library is found and loaded at its first use (see
``python -m cuda_core`` for a report of what was found).
"""

from __future__ import annotations

import sys as _sys

import cuda_core._slots as _slots
from cuda_core import typing

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
from cuda_core._graphics import GraphicsResource
from cuda_core._green_context import ContextOptions
from cuda_core._host import Host
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
from cuda_core._tensor_map import TensorMapDescriptor, TensorMapDescriptorOptions
from cuda_core._version import __version__

# The other subpackages are imported at their first use (``cuda_core.graph``,
# ``from cuda_core import utils``), not with the package: most programs need
# few of them, and importing them all would cost more than the rest of the
# package.  ``import cuda_core.system`` works as for any package.
_LAZY_SUBPACKAGES = ("checkpoint", "graph", "system", "texture", "utils")

# ``from cuda_core import *`` names what it named when every subpackage was
# imported with the package.
__all__ = sorted({name for name in globals() if not name.startswith("_")}.union(_LAZY_SUBPACKAGES))


def _import_subpackage(name):
    __import__(f"cuda_core.{name}")
    return _sys.modules[f"cuda_core.{name}"]


def __getattr__(name):
    if name in _LAZY_SUBPACKAGES:
        return _import_subpackage(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_slots.import_subpackage = _import_subpackage


def __dir__():
    return sorted(set(globals()).union(_LAZY_SUBPACKAGES))
