# SPDX-License-Identifier: Apache-2.0
"""Memory nodes of a graph definition: copies, fills, allocations and frees.

:class:`MemcpyNode`, :class:`MemsetNode`, :class:`AllocNode` and
:class:`FreeNode`, added by :meth:`GraphNode.memcpy
<cuda_core.graph.GraphNode.memcpy>`, :meth:`~cuda_core.graph.GraphNode.memset`,
:meth:`~cuda_core.graph.GraphNode.allocate` and
:meth:`~cuda_core.graph.GraphNode.deallocate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_params import _memcpy_params, _memset_params
from cuda_core.graph._node_registry import _register
from cuda_core.graph._types import GraphMemoryType

if TYPE_CHECKING:
    from cuda_core._memory._buffer import Buffer

__all__ = ["AllocNode", "FreeNode", "MemcpyNode", "MemsetNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_MEMCPY)
class MemcpyNode(GraphNode):
    """A memcpy node (see :meth:`GraphNode.memcpy`).

    Its properties are recorded when the node is made.
    """

    __slots__ = ("_copy",)
    _extra = ("_copy",)
    # (dst, src, size, dst is host memory, src is host memory)
    _copy: tuple[int, int, int, bool, bool]

    def _repr_fields(self) -> str:
        dst, src, size, dst_host, src_host = self._copy
        dk = "H" if dst_host else "D"
        sk = "H" if src_host else "D"
        return f" dst={dst:#x}({dk}) src={src:#x}({sk}) size={size}"

    def _load(self) -> None:
        p = ffi.new("CUDA_MEMCPY3D *")
        check(lib.cuGraphMemcpyNodeGetParams(self._node, p))
        if p.dstMemoryType == lib.CU_MEMORYTYPE_HOST:
            dst = as_int_handle(p.dstHost)
        else:
            dst = int(p.dstDevice)
        if p.srcMemoryType == lib.CU_MEMORYTYPE_HOST:
            src = as_int_handle(p.srcHost)
        else:
            src = int(p.srcDevice)
        self._copy = (
            dst,
            src,
            int(p.WidthInBytes),
            p.dstMemoryType == lib.CU_MEMORYTYPE_HOST,
            p.srcMemoryType == lib.CU_MEMORYTYPE_HOST,
        )

    @property
    def dst(self) -> int:
        """int: The destination address."""
        return self._copy[0]

    @property
    def src(self) -> int:
        """int: The source address."""
        return self._copy[1]

    @property
    def size(self) -> int:
        """int: Number of bytes copied."""
        return self._copy[2]

    def update(
        self,
        *,
        dst: Buffer | int | None = None,
        src: Buffer | int | None = None,
        size: int | None = None,
        dst_owner: object = None,
        src_owner: object = None,
    ) -> None:
        """Replace parameters of this node for future instantiations (a cuda_core extension).

        Omitted parameters keep their values (and what keeps them alive).
        See :meth:`GraphNode.memcpy`.
        """
        self._check_valid()
        partial = dst is None or src is None
        params, owners = _memcpy_params(
            self.dst if dst is None else dst,
            self.src if src is None else src,
            self.size if size is None else size,
            dst_owner,
            src_owner,
        )
        self._set_params(
            owners,
            lambda: lib.cuGraphMemcpyNodeSetParams(self._node, params),
            keep_current=partial,
        )


@_register(lib.CU_GRAPH_NODE_TYPE_MEMSET)
class MemsetNode(GraphNode):
    """A memset node (see :meth:`GraphNode.memset`).

    Its properties are recorded when the node is made.
    """

    __slots__ = ("_fill",)
    _extra = ("_fill",)
    _fill: tuple[int, int, int, int, int, int]

    def _repr_fields(self) -> str:
        return f" dptr={self._fill[0]:#x} value={self._fill[1]}"

    def _load(self) -> None:
        p = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
        check(lib.cuGraphMemsetNodeGetParams(self._node, p))
        self._fill = (
            int(p.dst),
            int(p.value),
            int(p.elementSize),
            int(p.width),
            int(p.height),
            int(p.pitch),
        )

    @property
    def dptr(self) -> int:
        """int: The destination address."""
        return self._fill[0]

    @property
    def value(self) -> int:
        """int: The fill value (its bits)."""
        return self._fill[1]

    @property
    def element_size(self) -> int:
        """int: Element size in bytes (1, 2 or 4)."""
        return self._fill[2]

    @property
    def width(self) -> int:
        """int: Elements per row."""
        return self._fill[3]

    @property
    def height(self) -> int:
        """int: Number of rows."""
        return self._fill[4]

    @property
    def pitch(self) -> int:
        """int: Bytes between rows."""
        return self._fill[5]

    def update(
        self,
        *,
        dst: Buffer | int | None = None,
        value: Any = None,
        width: int | None = None,
        height: int | None = None,
        pitch: int | None = None,
        dst_owner: object = None,
    ) -> None:
        """Replace parameters of this node for future instantiations (a cuda_core extension).

        Omitted parameters keep their values (``value`` keeps its element
        size; an omitted ``dst`` keeps what keeps it alive).  See
        :meth:`GraphNode.memset` for their meaning.
        """
        self._check_valid()
        cur_dst, cur_value, cur_elem, cur_width, cur_height, cur_pitch = self._fill
        if value is None:
            value = cur_value.to_bytes(cur_elem, "little")
        params, owners = _memset_params(
            cur_dst if dst is None else dst,
            value,
            cur_width if width is None else width,
            cur_height if height is None else height,
            cur_pitch if pitch is None else pitch,
            dst_owner,
        )
        self._set_params(
            owners,
            lambda: lib.cuGraphMemsetNodeSetParams(self._node, params),
            keep_current=dst is None,
        )


@_register(lib.CU_GRAPH_NODE_TYPE_MEM_ALLOC)
class AllocNode(GraphNode):
    """A memory allocation node (see :meth:`GraphNode.allocate`)."""

    __slots__ = ("_meta",)
    _extra = ("_meta",)
    # (dptr, bytesize, device_id, memory_type, peer_access); None before _load()
    _meta: tuple[int, int, int, GraphMemoryType, tuple[int, ...]]

    def _load(self) -> None:
        if self._meta is None:
            p = ffi.new("CUDA_MEM_ALLOC_NODE_PARAMS *")
            check(lib.cuGraphMemAllocNodeGetParams(self._node, p))
            props = p.poolProps
            if props.location.type == lib.CU_MEM_LOCATION_TYPE_HOST:
                kind = GraphMemoryType.HOST
            elif props.allocType == lib.CU_MEM_ALLOCATION_TYPE_MANAGED:
                kind = GraphMemoryType.MANAGED
            else:
                kind = GraphMemoryType.DEVICE
            peers = tuple(p.accessDescs[i].location.id for i in range(p.accessDescCount))
            address = as_int_handle(p.dptr)
            self._meta = (address, int(p.bytesize), int(props.location.id), kind, peers)

    def _repr_fields(self) -> str:
        return f" dptr={self._meta[0]:#x} size={self._meta[1]}"

    def _info(self) -> tuple[int, int, int, GraphMemoryType, tuple[int, ...]]:
        """Return ``(dptr, bytesize, device_id, memory_type, peer_access)``."""
        return self._meta

    @property
    def dptr(self) -> int:
        """int: The address of the allocation."""
        return self._info()[0]

    @property
    def bytesize(self) -> int:
        """int: The size of the allocation in bytes."""
        return self._info()[1]

    @property
    def device_id(self) -> int:
        """int: The device the memory is allocated on."""
        return self._info()[2]

    @property
    def memory_type(self) -> GraphMemoryType:
        """GraphMemoryType: ``"device"``, ``"host"`` or ``"managed"``."""
        return self._info()[3]

    @property
    def peer_access(self) -> tuple[int, ...]:
        """tuple of int: Devices given read-write access."""
        return self._info()[4]


@_register(lib.CU_GRAPH_NODE_TYPE_MEM_FREE)
class FreeNode(GraphNode):
    """A node freeing a graph allocation."""

    __slots__ = ("_dptr",)
    _extra = ("_dptr",)
    _dptr: int

    def _repr_fields(self) -> str:
        return f" dptr={self._dptr:#x}"

    def _load(self) -> None:
        out = ffi.new("CUdeviceptr *")
        check(lib.cuGraphMemFreeNodeGetParams(self._node, out))
        self._dptr = as_int_handle(out[0])

    @property
    def dptr(self) -> int:
        """int: The address freed."""
        return self._dptr
