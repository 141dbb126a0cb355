# SPDX-License-Identifier: Apache-2.0
"""Memory allocated inside graphs: :class:`GraphMemoryResource`.

Allocations made from a :class:`GraphMemoryResource` on a stream that is
capturing a graph become allocation nodes of that graph
(``cuMemAllocAsync`` during capture); freeing such a buffer on the capturing
stream adds a free node.  The memory comes from the device's graph memory
pool, whose usage :attr:`GraphMemoryResource.attributes` reports.
"""

from __future__ import annotations

import operator
import threading
from typing import TYPE_CHECKING, Any

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, shown_as
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._memory_resource import MemoryResource, _DeviceMemory
from cuda_core._stream import Stream, _as_stream

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__ = ["GraphMemoryResource"]

#: device ordinal -> GraphMemoryResource (process-wide singletons)
_instances: dict[int, GraphMemoryResource] = {}
_lock = threading.Lock()
_SIZE_MAX = (1 << 64) - 1
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1


@shown_as(AttributeError)
class _HighWatermarkError(AttributeError, ValueError):
    """A high watermark set to a value other than 0.

    An AttributeError (as NVIDIA's ``cuda.core`` raises) and a ValueError.
    """


class GraphMemoryResourceAttributes:
    """Usage of a device's graph memory pool (``cuDeviceGetGraphMemAttribute``).

    Obtained from :attr:`GraphMemoryResource.attributes`.  The high
    watermarks can be reset by setting them to 0.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_device_id",)
    _device_id: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "GraphMemoryResourceAttributes cannot be instantiated directly; use "
            "GraphMemoryResource.attributes"
        )

    @classmethod
    def _init(cls, device_id: int) -> GraphMemoryResourceAttributes:
        self = object.__new__(cls)
        self._device_id = device_id
        return self

    def __repr__(self) -> str:
        names = ("reserved_mem_current", "reserved_mem_high", "used_mem_current", "used_mem_high")
        values = ", ".join(f"{name}={getattr(self, name)}" for name in names)
        return f"GraphMemoryResourceAttributes({values})"

    def _get(self, attr: int) -> int:
        value = ffi.new("cuuint64_t *")
        check(lib.cuDeviceGetGraphMemAttribute(self._device_id, attr, value))
        return int(value[0])

    def _reset(self, attr: int, name: str, value: object) -> None:
        try:
            zero = value == 0
        except Exception:  # noqa: BLE001 - anything not comparable is not zero
            zero = False
        if not zero:
            raise _HighWatermarkError(f"Attribute {name!r} may only be set to zero (got {value}).")
        zero = ffi.new("cuuint64_t *", 0)
        check(lib.cuDeviceSetGraphMemAttribute(self._device_id, attr, zero))

    @property
    def reserved_mem_current(self) -> int:
        """int: Bytes of backing memory currently reserved for graph allocations."""
        return self._get(lib.CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)

    @property
    def reserved_mem_high(self) -> int:
        """int: High watermark of reserved backing memory; set it to 0 to reset it."""
        return self._get(lib.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)

    @reserved_mem_high.setter
    def reserved_mem_high(self, value: int) -> None:
        self._reset(lib.CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, "reserved_mem_high", value)

    @property
    def used_mem_current(self) -> int:
        """int: Bytes of graph memory currently in use."""
        return self._get(lib.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)

    @property
    def used_mem_high(self) -> int:
        """int: High watermark of graph memory in use; set it to 0 to reset it."""
        return self._get(lib.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)

    @used_mem_high.setter
    def used_mem_high(self, value: int) -> None:
        self._reset(lib.CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, "used_mem_high", value)


class GraphMemoryResource(_DeviceMemory, MemoryResource):
    """The memory resource for allocations inside graphs (one per device).

    Allocate from it with a :class:`~cuda_core.graph.GraphBuilder` (or its
    stream) while building: the allocation becomes part of the graph.
    Allocating on a stream that is not capturing raises RuntimeError;
    conversely, a :class:`~cuda_core.DeviceMemoryResource` refuses to
    allocate on a capturing stream.

    Parameters
    ----------
    device_id : Device or int
        The device.  ``GraphMemoryResource(d)`` returns the same object for
        the same device.  As in ``cuda.core``, the ordinal is taken as a C
        ``int`` and not checked further (a bad one fails at use).

    Raises
    ------
    TypeError
        If ``device_id`` is neither a Device nor an integer.
    OverflowError
        If it does not fit a C ``int``.
    """

    __slots__ = ("_device_id",)
    _device_id: int

    def __new__(cls, device_id: Device | int) -> GraphMemoryResource:
        dev: Any = getattr(device_id, "device_id", device_id)  # checked below
        try:
            dev = int(dev) if isinstance(dev, bool) else operator.index(dev)
        except TypeError:
            raise TypeError(
                f"device_id must be a Device or an int, not {type(device_id).__name__}"
            ) from None
        if not _INT_MIN <= dev <= _INT_MAX:
            raise OverflowError(f"device_id {dev} does not fit a C int")
        with _lock:
            self = _instances.get(dev)
            if self is None:
                self = object.__new__(cls)
                self._device_id = dev
                _instances[dev] = self
        return self

    def __init__(self, device_id: Device | int) -> None:
        pass

    def __repr__(self) -> str:
        return f"<GraphMemoryResource device={self._device_id}>"

    def __reduce__(self) -> tuple[type[GraphMemoryResource], tuple[int]]:
        return GraphMemoryResource, (self._device_id,)

    def allocate(self, size: int, *, stream: Stream | GraphBuilder) -> Buffer:
        """Allocate ``size`` bytes inside the graph being captured on ``stream``.

        Parameters
        ----------
        size : int
            Bytes to allocate when the graph runs.
        stream : GraphBuilder or Stream
            A builder that is building (or its capturing stream).

        Returns
        -------
        Buffer
            Closing it on the capturing stream adds a free node to the graph.

        Raises
        ------
        TypeError
            For a bad ``size``, or a ``stream`` that is neither a Stream nor
            a GraphBuilder (None included), as ``cuda.core`` words it.
        ValueError
            For a negative or too large ``size``.
        RuntimeError
            If ``stream`` is not actively capturing a graph.
        CUDAError
            If the driver refuses the allocation (a size of 0 included).
        """
        if isinstance(size, bool) or not hasattr(size, "__index__"):
            raise TypeError(f"size must be an int, not {type(size).__name__}")
        size = size.__index__()
        if not 0 <= size <= _SIZE_MAX:
            raise ValueError(f"size must be in [0, 2**64), got {size}")
        s = _graph_stream(stream)
        _require_capturing(s)
        out = ffi.new("CUdeviceptr *")
        check(lib.cuMemAllocAsync(out, size, s._handle), f"GraphMemoryResource.allocate({size})")
        return Buffer._from_pool(as_int_handle(out[0]), size, self, s)

    def deallocate(
        self, ptr: DevicePointerType, size: int, *, stream: Stream | GraphBuilder
    ) -> None:
        """Free ``ptr`` on ``stream`` (a free node when it is capturing).

        The parameters are :meth:`MemoryResource.deallocate`'s: ``ptr`` is
        the address of a graph allocation from :meth:`allocate`, ``size`` is
        not used, and ``stream`` (keyword-only) is a GraphBuilder or Stream.

        Raises
        ------
        CUDAError
            If the driver fails (cuda_core raises where ``cuda.core`` only
            prints the failure).
        """
        s = _graph_stream(stream)
        try:
            address = int(ptr)  # type: ignore[arg-type]  # None: the TypeError below
        except (TypeError, ValueError):
            raise TypeError(f"ptr must be an int address, not {type(ptr).__name__}") from None
        check(lib.cuMemFreeAsync(address, s._handle), "GraphMemoryResource.deallocate")

    def close(self) -> None:
        """Do nothing (provided for compatibility: the resource is a per-device singleton)."""

    def trim(self) -> None:
        """Return unused graph memory cached on the device to the OS (``cuDeviceGraphMemTrim``)."""
        check(lib.cuDeviceGraphMemTrim(self._device_id))

    @property
    def attributes(self) -> GraphMemoryResourceAttributes:
        """GraphMemoryResourceAttributes: Usage of the device's graph memory pool."""
        return GraphMemoryResourceAttributes._init(self._device_id)

    @property
    def device_id(self) -> int:
        """int: The device ordinal."""
        return self._device_id


def _graph_stream(stream: Stream | GraphBuilder | None) -> Stream:
    """Return the open Stream of ``stream`` (a Stream or GraphBuilder), as cuda.core accepts it."""
    if stream is None:
        raise TypeError(
            "stream is required and must not be None; pass device.default_stream explicitly "
            "to use the default stream."
        )
    if not isinstance(stream, Stream) and not hasattr(stream, "is_join_required"):
        raise TypeError(f"Stream or GraphBuilder expected, got {type(stream).__name__}")
    return _as_stream(stream)


def _require_capturing(s: Stream) -> None:
    status = ffi.new("CUstreamCaptureStatus *")
    check(lib.cuStreamIsCapturing(s._handle, status))
    if status[0] != lib.CU_STREAM_CAPTURE_STATUS_ACTIVE:
        raise RuntimeError(
            "GraphMemoryResource cannot perform memory operations on a non-capturing stream."
        )
