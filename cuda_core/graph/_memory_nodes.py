# SPDX-License-Identifier: Apache-2.0
"""Memory nodes of a graph definition: copies, fills, allocations and frees.

:class:`MemcpyNode`, :class:`MemsetNode`, :class:`AllocNode` and
:class:`FreeNode`, added by :meth:`GraphNode.memcpy
<cuda_core.graph.GraphNode.memcpy>`, :meth:`~cuda_core.graph.GraphNode.memset`,
:meth:`~cuda_core.graph.GraphNode.allocate` and
:meth:`~cuda_core.graph.GraphNode.deallocate`.
"""

from __future__ import annotations

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._utils import as_int_handle
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_builders import _register
from cuda_core.graph._node_params import _memcpy_params, _memset_params
from cuda_core.graph._types import GraphMemoryType

__all__ = ["AllocNode", "FreeNode", "MemcpyNode", "MemsetNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_MEMCPY)
class MemcpyNode(GraphNode):
    """A memcpy node (see :meth:`GraphNode.memcpy`)."""

    __slots__ = ()

    def _params(self):
        self._check_valid()
        p = ffi.new("CUDA_MEMCPY3D *")
        check(lib.cuGraphMemcpyNodeGetParams(self._node, p))
        return p

    @property
    def dst(self):
        """int: The destination address."""
        p = self._params()
        if p.dstMemoryType == lib.CU_MEMORYTYPE_HOST:
            return as_int_handle(p.dstHost)
        return int(p.dstDevice)

    @property
    def src(self):
        """int: The source address."""
        p = self._params()
        if p.srcMemoryType == lib.CU_MEMORYTYPE_HOST:
            return as_int_handle(p.srcHost)
        return int(p.srcDevice)

    @property
    def size(self):
        """int: Number of bytes copied."""
        return int(self._params().WidthInBytes)

    def update(self, *, dst=None, src=None, size=None, dst_owner=None, src_owner=None):
        """Replace parameters of this node for future instantiations.

        Omitted parameters keep their values.  See :meth:`GraphNode.memcpy`.
        """
        if dst is None:
            dst = self.dst
        if src is None:
            src = self.src
        if size is None:
            size = self.size
        params, owners = _memcpy_params(dst, src, size, dst_owner, src_owner)
        check(lib.cuGraphMemcpyNodeSetParams(self._node, params))
        self._gdef._box.keep(*owners)


@_register(lib.CU_GRAPH_NODE_TYPE_MEMSET)
class MemsetNode(GraphNode):
    """A memset node (see :meth:`GraphNode.memset`)."""

    __slots__ = ()

    def _params(self):
        self._check_valid()
        p = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
        check(lib.cuGraphMemsetNodeGetParams(self._node, p))
        return p

    @property
    def dptr(self):
        """int: The destination address."""
        return int(self._params().dst)

    @property
    def value(self):
        """int: The fill value (its bits)."""
        return int(self._params().value)

    @property
    def element_size(self):
        """int: Element size in bytes (1, 2 or 4)."""
        return int(self._params().elementSize)

    @property
    def width(self):
        """int: Elements per row."""
        return int(self._params().width)

    @property
    def height(self):
        """int: Number of rows."""
        return int(self._params().height)

    @property
    def pitch(self):
        """int: Bytes between rows."""
        return int(self._params().pitch)

    def update(self, *, dst=None, value=None, width=None, height=None, pitch=None, dst_owner=None):
        """Replace parameters of this node for future instantiations.

        Omitted parameters keep their values (``value`` keeps its element
        size).  See :meth:`GraphNode.memset` for their meaning.
        """
        cur = self._params()
        if value is None:
            value = int(cur.value).to_bytes(int(cur.elementSize), "little")
        params, owners = _memset_params(
            int(cur.dst) if dst is None else dst,
            value,
            int(cur.width) if width is None else width,
            int(cur.height) if height is None else height,
            int(cur.pitch) if pitch is None else pitch,
            dst_owner,
        )
        check(lib.cuGraphMemsetNodeSetParams(self._node, params))
        self._gdef._box.keep(*owners)


@_register(lib.CU_GRAPH_NODE_TYPE_MEM_ALLOC)
class AllocNode(GraphNode):
    """A memory allocation node (see :meth:`GraphNode.allocate`)."""

    __slots__ = ("_meta",)
    _extra = ("_meta",)

    def _info(self):
        """Return ``(dptr, bytesize, device_id, memory_type, peer_access)``."""
        self._check_valid()
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
        return self._meta

    @property
    def dptr(self):
        """int: The address of the allocation."""
        return self._info()[0]

    @property
    def bytesize(self):
        """int: The size of the allocation in bytes."""
        return self._info()[1]

    @property
    def device_id(self):
        """int: The device the memory is allocated on."""
        return self._info()[2]

    @property
    def memory_type(self):
        """GraphMemoryType: ``"device"``, ``"host"`` or ``"managed"``."""
        return self._info()[3]

    @property
    def peer_access(self):
        """tuple of int: Devices given read-write access."""
        return self._info()[4]


@_register(lib.CU_GRAPH_NODE_TYPE_MEM_FREE)
class FreeNode(GraphNode):
    """A node freeing a graph allocation."""

    __slots__ = ()

    @property
    def dptr(self):
        """int: The address freed."""
        self._check_valid()
        out = ffi.new("CUdeviceptr *")
        check(lib.cuGraphMemFreeNodeGetParams(self._node, out))
        return as_int_handle(out[0])
