# SPDX-License-Identifier: Apache-2.0
"""Child graph nodes of a graph definition: :class:`ChildGraphNode`.

Added by :meth:`GraphNode.embed <cuda_core.graph.GraphNode.embed>`, which
embeds a copy of another :class:`~cuda_core.graph.GraphDefinition`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_registry import _CLASSES, _register, _require_definition

if TYPE_CHECKING:
    from cuda_core.graph._graph_definition import GraphDefinition

__all__ = ["ChildGraphNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_GRAPH)
class ChildGraphNode(GraphNode):
    """A node running an embedded child graph."""

    __slots__ = ("_child",)
    _extra = ("_child",)
    _child: GraphDefinition

    def _repr_fields(self) -> str:
        return f" child={self._child._h:#x}"

    def _load(self) -> None:
        out = ffi.new("CUgraph *")
        check(lib.cuGraphChildGraphNodeGetGraph(self._node, out))
        gdef = self._gdef
        box = gdef._box
        if as_int_handle(out[0]) not in box.parents:
            box.add_child(gdef._graph, self._node, out[0])
        self._child = _CLASSES["GraphDefinition"]._view(out[0], box, self)

    @property
    def child_graph(self) -> GraphDefinition:
        """GraphDefinition: A view of the embedded graph (owned by this node)."""
        return self._child

    def update(self, child: GraphDefinition) -> None:
        """Replace the embedded graph by a copy of ``child`` (same topology needed).

        Affects future instantiations only.  A cuda_core extension.

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
        # CUDA destroyed the old copy (releasing its references) and cloned
        # ``child`` with its references.
        box = self._gdef._box
        box.forget_children(as_int_handle(self._gdef._graph), self._h)
        self._child = None  # type: ignore[assignment]  # until _load() below
        self._load()
        box.copy_maps(self._child._graph, gdef._box, gdef._graph)
