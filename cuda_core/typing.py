# SPDX-License-Identifier: Apache-2.0
"""Public enumerations used in cuda_core's API signatures.

Every enumeration here is a *string* enumeration: its members compare equal
to their string values (``CompilerBackendType.NVRTC == "NVRTC"``), format as
those values, and can be passed wherever the corresponding string is
accepted.  ``enum.StrEnum`` only exists from Python 3.11, so the members
derive from :class:`_StrEnum`, which behaves the same on Python 3.9 and PyPy.
"""

from __future__ import annotations

import enum
import typing

__all__ = [
    "CompilerBackendType",
    "DevicePointerType",
    "GraphConditionalType",
    "GraphMemoryType",
    "IsStreamType",
    "ManagedMemoryLocationType",
    "ObjectCodeFormatType",
    "PCHStatusType",
    "SourceCodeType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
]

# GraphConditionalType, GraphMemoryType (cuda_core.graph._types),
# ManagedMemoryLocationType and the VirtualMemory* enumerations (cuda_core._memory)
# are defined beside the classes that use them, in higher layers: each of
# those modules registers its enumerations here (``_register``) when it is
# imported, and ``import cuda_core`` imports them all.


class IsStreamType(typing.Protocol):
    """Any object that exposes a CUDA stream through ``__cuda_stream__``.

    ``__cuda_stream__()`` returns ``(0, address)``: protocol version 0 and
    the ``CUstream`` handle as an int.
    """

    def __cuda_stream__(self) -> tuple[int, int]: ...


#: A device pointer: an int address (or None for "no pointer").
DevicePointerType = typing.Optional[int]


def _register(*enums):
    """Publish enumerations defined in a higher layer under their names here."""
    for e in enums:
        globals()[e.__name__] = e


class _StrEnum(str, enum.Enum):
    """A ``str`` enumeration whose ``str()`` and ``format()`` are the value."""

    def __str__(self):
        return str(self.value)

    def __format__(self, spec):
        return format(str(self.value), spec)


class SourceCodeType(_StrEnum):
    """Source language accepted by :class:`~cuda_core.Program`.

    * ``CXX`` -- CUDA C++ source (compiled by NVRTC).
    * ``PTX`` -- PTX assembly text (assembled by the linker).
    * ``NVVM`` -- NVVM IR, as LLVM text or bitcode (compiled by libNVVM).
    """

    CXX = "c++"
    PTX = "ptx"
    NVVM = "nvvm"


class ObjectCodeFormatType(_StrEnum):
    """Format of an :class:`~cuda_core.ObjectCode` and of compile/link targets.

    * ``PTX`` -- PTX assembly text.
    * ``CUBIN`` -- device-native binary for one architecture.
    * ``LTOIR`` -- intermediate representation for link-time optimization.
    * ``FATBIN`` -- fat binary bundling several images.
    * ``OBJECT`` -- relocatable host object holding device code.
    * ``LIBRARY`` -- archive of such objects.
    """

    PTX = "ptx"
    CUBIN = "cubin"
    LTOIR = "ltoir"
    FATBIN = "fatbin"
    OBJECT = "object"
    LIBRARY = "library"


class CompilerBackendType(_StrEnum):
    """The library behind a :class:`~cuda_core.Program` or :class:`~cuda_core.Linker`.

    * ``NVRTC`` -- the runtime C++ compiler.
    * ``NVVM`` -- libNVVM, the NVVM IR compiler.
    * ``NVJITLINK`` -- the nvJitLink device linker.
    * ``DRIVER`` -- the CUDA driver's ``cuLink*`` JIT linker.
    """

    NVRTC = "NVRTC"
    NVVM = "NVVM"
    NVJITLINK = "nvJitLink"
    DRIVER = "driver"


class PCHStatusType(_StrEnum):
    """Outcome of precompiled-header creation in :meth:`~cuda_core.Program.compile`.

    * ``CREATED`` -- the precompiled header was written.
    * ``NOT_ATTEMPTED`` -- NVRTC decided not to create one.
    * ``FAILED`` -- creation was attempted and failed (a warning names why).
    """

    CREATED = "created"
    NOT_ATTEMPTED = "not_attempted"
    FAILED = "failed"
