# SPDX-License-Identifier: Apache-2.0
"""Child graph nodes of a graph definition: :class:`ChildGraphNode`.

Added by :meth:`GraphNode.embed <cuda_core.graph.GraphNode.embed>`, which
embeds a copy of another :class:`~cuda_core.graph.GraphDefinition`.
"""

from __future__ import annotations

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_builders import _CLASSES, _register, _require_definition

__all__ = ["ChildGraphNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_GRAPH)
class ChildGraphNode(GraphNode):
    """A node running an embedded child graph."""

    __slots__ = ()

    @property
    def child_graph(self):
        """GraphDefinition: A view of the embedded graph (owned by this node)."""
        self._check_valid()
        out = ffi.new("CUgraph *")
        check(lib.cuGraphChildGraphNodeGetGraph(self._node, out))
        return _CLASSES["GraphDefinition"]._view(out[0], self._gdef._box, self)

    def update(self, child):
        """Replace the embedded graph by a copy of ``child`` (same topology needed).

        Affects future instantiations only.

        Parameters
        ----------
        child : GraphDefinition
        """
        self._check_valid()
        gdef = _require_definition(child, "child")
        params = ffi.new("CUgraphNodeParams *")
        params.type = lib.CU_GRAPH_NODE_TYPE_GRAPH
        params.graph.graph = gdef._graph
        params.graph.ownership = lib.CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE
        check(lib.cuGraphNodeSetParams(self._node, params))
        self._gdef._box.keep(gdef._box.snapshot())
