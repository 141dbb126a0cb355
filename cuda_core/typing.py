# SPDX-License-Identifier: Apache-2.0
"""Public enumerations used in cuda_core's API signatures.

Every enumeration here is a *string* enumeration: its members compare equal
to their string values (``CompilerBackendType.NVRTC == "NVRTC"``), format as
those values, and can be passed wherever the corresponding string is
accepted.  On Python 3.11+ they are ``enum.StrEnum`` members, as in
``cuda.core``; before 3.11 (and on PyPy 3.9) :class:`_StrEnum` behaves the
same on a ``(str, Enum)`` base.
"""

from __future__ import annotations

import enum
import sys
import typing

import cuda_core._slots as _slots

if typing.TYPE_CHECKING:  # defined over the resource classes, a higher layer
    from cuda_core._green_context import DeviceResourcesType

__all__ = [
    "AddressModeType",
    "ArrayFormatType",
    "CompilerBackendType",
    "DevicePointerType",
    "DeviceResourcesType",
    "FilterModeType",
    "GraphConditionalType",
    "GraphMemoryType",
    "IsStreamType",
    "ManagedMemoryLocationType",
    "ObjectCodeFormatType",
    "PCHStatusType",
    "ProcessStateType",
    "ReadModeType",
    "SourceCodeType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
    "WorkqueueSharingScopeType",
]

# Every enumeration of the API is defined here, the graph and memory ones
# included, so that the modules that use them import them from this layer.
# DeviceResourcesType, an alias over the green-context resource classes (a
# higher layer), is read from its registration slot by ``__getattr__`` below.


class IsStreamType(typing.Protocol):
    """Any object that exposes a CUDA stream through ``__cuda_stream__``.

    ``__cuda_stream__()`` returns ``(0, address)``: protocol version 0 and
    the ``CUstream`` handle as an int.
    """

    def __cuda_stream__(self) -> tuple[int, int]: ...


#: A device pointer: an int address (or None for "no pointer").
DevicePointerType = typing.Optional[int]

#: The checkpoint state of a process (:attr:`cuda_core.checkpoint.Process.state`).
ProcessStateType = typing.Literal["running", "locked", "checkpointed", "failed"]


if not typing.TYPE_CHECKING:  # type checkers see the name imported above

    def __getattr__(name: str) -> typing.Any:
        if name == "DeviceResourcesType":
            value = _slots.device_resources_type()
            if value is not None:
                return value
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _refuse(cls: type[enum.Enum], value: object) -> typing.NoReturn:
    """Raise ``cuda.core``'s ValueError for a value that names no member of ``cls``."""
    choices = [repr(m.value) for m in cls]
    listed = choices[0] if len(choices) == 1 else f"{', '.join(choices[:-1])} or {choices[-1]}"
    raise ValueError(f"{value!r} is not a valid {cls.__name__}. Must be {listed}")


if sys.version_info >= (3, 11):  # enum.StrEnum: the standard base, as in ``cuda.core``

    class _StrEnum(enum.StrEnum):
        """A ``str`` enumeration whose ``str()`` and ``format()`` are the value.

        An unknown value raises ValueError ``"'x' is not a valid <Name>. Must
        be 'a', 'b' or 'c'"``.
        """

        @classmethod
        def _missing_(cls, value: object) -> typing.Any:
            _refuse(cls, value)

else:

    class _StrEnum(str, enum.Enum):
        """A ``str`` enumeration whose ``str()`` and ``format()`` are the value.

        An unknown value raises ValueError ``"'x' is not a valid <Name>. Must
        be 'a', 'b' or 'c'"``.
        """

        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return format(str(self.value), spec)

        @classmethod
        def _missing_(cls, value: object) -> typing.Any:
            _refuse(cls, value)


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


class ArrayFormatType(_StrEnum):
    """Element format of a CUDA array or a texture over linear memory.

    Each value is the name of the NumPy dtype of one channel, so
    ``numpy.dtype(ArrayFormatType.FLOAT32.value)`` is ``float32``.
    """

    UINT8 = "uint8"
    UINT16 = "uint16"
    UINT32 = "uint32"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    FLOAT16 = "float16"
    FLOAT32 = "float32"


class AddressModeType(_StrEnum):
    """What a texture fetch returns for coordinates outside the texture.

    * ``WRAP`` -- repeat the texture (normalized coordinates only).
    * ``CLAMP`` -- the nearest edge texel.
    * ``MIRROR`` -- repeat it mirrored (normalized coordinates only).
    * ``BORDER`` -- the border colour.
    """

    WRAP = "wrap"
    CLAMP = "clamp"
    MIRROR = "mirror"
    BORDER = "border"


class FilterModeType(_StrEnum):
    """How a texture fetch (or a mipmap level choice) combines texels.

    * ``POINT`` -- the nearest texel.
    * ``LINEAR`` -- linear interpolation of the neighbouring texels.
    """

    POINT = "point"
    LINEAR = "linear"


class ReadModeType(_StrEnum):
    """What a texture fetch of integer data returns.

    * ``ELEMENT_TYPE`` -- the stored integer values.
    * ``NORMALIZED_FLOAT`` -- floats in ``[0, 1]`` (unsigned) or ``[-1, 1]``
      (signed), the value divided by the type's maximum.
    """

    ELEMENT_TYPE = "element_type"
    NORMALIZED_FLOAT = "normalized_float"


class WorkqueueSharingScopeType(_StrEnum):
    """How a green context's workqueues are shared (:class:`~cuda_core.WorkqueueResourceOptions`).

    * ``DEVICE_CTX`` -- share the workqueues of all contexts of the device
      (the driver's default).
    * ``GREEN_CTX_BALANCED`` -- where possible, use workqueues that do not
      overlap those of other balanced green contexts.
    """

    DEVICE_CTX = "device_ctx"
    GREEN_CTX_BALANCED = "green_ctx_balanced"


class GraphConditionalType(_StrEnum):
    """Kind of a conditional graph node.

    * ``IF`` -- runs its body (or, with two branches, the first body) when
      the condition is non-zero, the second body otherwise.
    * ``WHILE`` -- runs its body repeatedly while the condition is non-zero.
    * ``SWITCH`` -- runs the body whose index equals the condition (none if
      it is out of range).
    """

    IF = "if"
    WHILE = "while"
    SWITCH = "switch"


class GraphMemoryType(_StrEnum):
    """Kind of memory an allocation node provides.

    * ``DEVICE`` -- device memory of the allocating device.
    * ``HOST`` -- pinned host memory (not supported on every system).
    * ``MANAGED`` -- managed (unified) memory (needs CUDA 13).
    """

    DEVICE = "device"
    HOST = "host"
    MANAGED = "managed"


class ManagedMemoryLocationType(_StrEnum):
    """Kinds of preferred location of a managed memory pool (plain strings also work)."""

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"


class VirtualMemoryAllocationType(_StrEnum):
    """Physical allocation kind (plain strings also work)."""

    PINNED = "pinned"
    MANAGED = "managed"


class VirtualMemoryLocationType(_StrEnum):
    """Where the physical memory lives (plain strings also work)."""

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"
    HOST_NUMA_CURRENT = "host_numa_current"


class VirtualMemoryHandleType(_StrEnum):
    """Exportable handle type of the physical memory (plain strings also work).

    The members are ``cuda.core``'s; the plain string ``"win32"`` is also
    accepted by :class:`VirtualMemoryResourceOptions` (``CU_MEM_HANDLE_TYPE_WIN32``).
    """

    POSIX_FD = "posix_fd"
    WIN32_KMT = "win32_kmt"
    FABRIC = "fabric"


class VirtualMemoryGranularityType(_StrEnum):
    """Which allocation granularity sizes are rounded to (plain strings also work)."""

    MINIMUM = "minimum"
    RECOMMENDED = "recommended"


class VirtualMemoryAccessType(_StrEnum):
    """Access granted to a device (plain strings also work; None means no access)."""

    READ_WRITE = "rw"
    READ = "r"
