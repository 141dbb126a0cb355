# SPDX-License-Identifier: Apache-2.0
"""The MemoryResource interface: what allocates and frees :class:`~cuda_core.Buffer` memory."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cuda_core._memory._buffer import Buffer
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__ = ["MemoryResource"]


class MemoryResource(abc.ABC):
    """Interface of objects that allocate and free :class:`Buffer` memory.

    Subclasses implement :meth:`allocate`, :meth:`deallocate` and the
    ``is_device_accessible`` / ``is_host_accessible`` properties (and
    ``device_id``/``is_managed`` where the defaults do not fit).  Every buffer
    a resource returns inherits these properties; a Python subclass usually
    returns ``Buffer.from_handle(ptr, size, mr=self)``, which makes the buffer
    call :meth:`deallocate` when it is closed.
    """

    __slots__ = ("__weakref__",)

    @abc.abstractmethod
    def allocate(self, size: int, *, stream: Stream | GraphBuilder) -> Buffer:
        """Allocate a buffer of ``size`` bytes.

        Parameters
        ----------
        size : int
            Size in bytes.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the allocation (and, for
            stream-ordered resources, the buffer's deallocation).

        Returns
        -------
        Buffer
        """

    @abc.abstractmethod
    def deallocate(
        self, ptr: DevicePointerType, size: int, *, stream: Stream | GraphBuilder
    ) -> None:
        """Free memory that :meth:`allocate` returned.

        Parameters
        ----------
        ptr : int
            The address.
        size : int
            The size in bytes.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the deallocation.
        """

    @property
    @abc.abstractmethod
    def is_device_accessible(self) -> bool:
        """bool: Whether buffers from this resource are accessible from the GPU."""

    @property
    @abc.abstractmethod
    def is_host_accessible(self) -> bool:
        """bool: Whether buffers from this resource are accessible from the CPU."""

    @property
    def is_managed(self) -> bool:
        """bool: Whether buffers from this resource are managed memory (False)."""
        return False

    @property
    def device_id(self) -> int:
        """int: The device this resource allocates on, or -1 (the default)."""
        return -1


class _DeviceMemory:
    """Mixin of a resource whose buffers are device memory: GPU-accessible only."""

    __slots__ = ()

    @property
    def is_device_accessible(self) -> bool:
        """bool: True; devices can access the buffers."""
        return True

    @property
    def is_host_accessible(self) -> bool:
        """bool: False; buffers are not host-accessible."""
        return False


class _SharedMemory(_DeviceMemory):
    """Mixin of a resource whose buffers both the host and the GPU can access."""

    __slots__ = ()

    @property
    def is_host_accessible(self) -> bool:
        """bool: True; the host can access the buffers."""
        return True
