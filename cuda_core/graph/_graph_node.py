# SPDX-License-Identifier: Apache-2.0
"""The base of the nodes of an explicit graph definition: :class:`GraphNode`, and its edges.

Nodes are made by the builder methods of
:class:`~cuda_core.graph.GraphDefinition` (entry nodes, with no
dependencies) and of other nodes (nodes that depend on that node; see
``_node_builders``).  Each builder returns the node it added, typed by kind
(:class:`~cuda_core.graph.KernelNode`, :class:`~cuda_core.graph.MemcpyNode`,
...; defined in the ``_*_node(s)`` modules).  One Python object stands for
one driver node: :meth:`GraphDefinition.nodes
<cuda_core.graph.GraphDefinition.nodes>`, ``pred`` and ``succ`` (live
:class:`AdjacencySetProxy` views of the edges) return the same objects the
builders did.

Everything a node uses (kernels, packed arguments, buffers, events,
callbacks, child graphs) is kept alive by the graph definition and by every
executable graph instantiated from it (see ``_attachments``).  Raw integer
pointers are the caller's responsibility unless an owner is given
(``dst_owner``/``src_owner``).  Closing a :class:`~cuda_core.Buffer`
explicitly frees it even if a graph still uses it.
"""

from __future__ import annotations

import weakref
from collections.abc import MutableSet

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._utils import as_int_handle
from cuda_core.graph._node_builders import _BY_TYPE, _NodeBuilders, _register
from cuda_core.graph._node_params import _list_nodes
from cuda_core.graph._types import CUgraphNodeType

__all__ = ["EmptyNode", "GraphNode"]

# (graph handle, node handle) -> the one GraphNode object for that node.
_registry = weakref.WeakValueDictionary()


class GraphNode(_NodeBuilders):
    """A node of a :class:`~cuda_core.graph.GraphDefinition`.

    Nodes are created by the builder methods of a graph definition (entry
    nodes) or of another node (nodes depending on it); they cannot be
    constructed directly.  Every builder method below adds a node that runs
    after this one.  Two node objects are equal when they refer to the same
    driver node of the same graph.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_gdef", "_node", "_h", "_destroyed", "_dep", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "GraphNode objects cannot be created directly; use the builder methods of a "
            "GraphDefinition or of another GraphNode"
        )

    @classmethod
    def _make(cls, gdef, c_node):
        self = object.__new__(cls)
        self._gdef = gdef
        self._node = c_node
        self._h = 0 if c_node is None else as_int_handle(c_node)
        self._destroyed = False
        self._dep = None
        for name in cls._extra:
            setattr(self, name, None)
        if c_node is not None:
            _registry[(gdef._h, self._h)] = self
        return self

    _extra = ()

    def __repr__(self):
        if self._node is None:
            return "<GraphNode entry>" if self.is_valid else "<GraphNode entry (invalid)>"
        if not self.is_valid:
            return f"<{type(self).__name__} (destroyed)>"
        return f"<{type(self).__name__} handle={self._h:#x}>"

    def __eq__(self, other):
        if not isinstance(other, GraphNode):
            return NotImplemented
        return self._h == other._h and self._gdef._h == other._gdef._h

    def __hash__(self):
        return hash((self._gdef._h, self._h))

    # ------------------------------------------------------------------
    # Properties and structure.
    # ------------------------------------------------------------------
    @property
    def type(self):
        """CUgraphNodeType or None: The driver node type (None for the entry node)."""
        if self._node is None:
            return None
        self._check_valid()
        out = ffi.new("CUgraphNodeType *")
        check(lib.cuGraphNodeGetType(self._node, out))
        return CUgraphNodeType(out[0])

    @property
    def graph(self):
        """GraphDefinition: The graph definition this node belongs to."""
        return self._gdef

    @property
    def handle(self):
        """int or None: The ``CUgraphNode`` address (None for the entry node)."""
        return None if self._node is None else self._h

    @property
    def is_valid(self):
        """bool: Whether the node (and its graph) still exist (False after :meth:`destroy`)."""
        return not self._destroyed and self._gdef._is_valid()

    def destroy(self):
        """Remove this node and its edges from the graph.

        Afterwards :attr:`is_valid` is False and the node cannot be used.  A
        no-op on an already destroyed node and on the entry node.  What the
        node used stays alive until the graph definition (and the executable
        graphs made from it) are gone.
        """
        if self._node is None or self._destroyed:
            return
        self._check_valid()
        check(lib.cuGraphDestroyNode(self._node))
        self._destroyed = True
        _registry.pop((self._gdef._h, self._h), None)

    @property
    def pred(self):
        """AdjacencySetProxy: A mutable set-like view of the nodes this node depends on.

        Adding a node adds an edge from it to this node; discarding one
        removes the edge.  Assigning an iterable replaces all predecessors.
        """
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value):
        proxy = AdjacencySetProxy(self, False)
        value = list(value)
        proxy.clear()
        proxy.update(value)

    @property
    def succ(self):
        """AdjacencySetProxy: A mutable set-like view of the nodes that depend on this node."""
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value):
        proxy = AdjacencySetProxy(self, True)
        value = list(value)
        proxy.clear()
        proxy.update(value)

    # ------------------------------------------------------------------
    # Private helpers.
    # ------------------------------------------------------------------
    def _check_valid(self):
        if self._destroyed:
            raise RuntimeError("the graph node was destroyed; it cannot be used")
        self._gdef._check_valid()


class AdjacencySetProxy(MutableSet):
    """A live, mutable set-like view of a node's predecessors or successors.

    Membership, iteration and length query the driver each time; ``add``
    and ``discard`` add or remove the corresponding edge.
    """

    __slots__ = ("_owner", "_succ")

    def __init__(self, node, succ):
        self._owner = node
        self._succ = succ

    @classmethod
    def _from_iterable(cls, it):
        return set(it)

    def __repr__(self):
        kind = "succ" if self._succ else "pred"
        return f"<AdjacencySetProxy {kind} of {self._owner!r}: {set(self)!r}>"

    def _handles(self):
        node = self._owner
        node._check_valid()
        if node._node is None:
            if not self._succ:
                return []
            return _list_nodes(lib.cuGraphGetRootNodes, node._gdef._graph)
        fn = lib.cuGraphNodeGetDependentNodes if self._succ else lib.cuGraphNodeGetDependencies
        return _list_nodes(fn, node._node)

    def __iter__(self):
        gdef = self._owner._gdef
        return iter([_wrap(gdef, h) for h in self._handles()])

    def __len__(self):
        return len(self._handles())

    def __contains__(self, other):
        if not isinstance(other, GraphNode) or other._gdef._h != self._owner._gdef._h:
            return False
        return other._h in {as_int_handle(h) for h in self._handles()}

    def _edge(self, other):
        node = self._owner
        if node._node is None:
            raise TypeError("the edges of the entry node cannot be changed")
        if not isinstance(other, GraphNode):
            raise TypeError(f"expected a GraphNode, got {type(other).__name__}")
        other._check_valid()
        if other._gdef._h != node._gdef._h:
            raise ValueError("the node belongs to a different graph")
        if other._node is None:
            raise ValueError("the entry node cannot be connected to")
        if other._h == node._h:
            raise ValueError("a node cannot depend on itself")
        a, b = (node._node, other._node) if self._succ else (other._node, node._node)
        return ffi.new("CUgraphNode[1]", [a]), ffi.new("CUgraphNode[1]", [b])

    def add(self, other):
        """Add an edge between the owner and ``other`` (no-op if present)."""
        frm, to = self._edge(other)
        if other in self:
            return
        check(lib.cuGraphAddDependencies(self._owner._gdef._graph, frm, to, 1))

    def discard(self, other):
        """Remove the edge between the owner and ``other`` (no-op if absent)."""
        if not isinstance(other, GraphNode) or other not in self:
            return
        frm, to = self._edge(other)
        check(lib.cuGraphRemoveDependencies(self._owner._gdef._graph, frm, to, 1))

    def update(self, *iterables):
        """Add edges to every node of ``iterables``."""
        for it in iterables:
            for other in it:
                self.add(other)


@_register(lib.CU_GRAPH_NODE_TYPE_EMPTY)
class EmptyNode(GraphNode):
    """An empty node (a synchronization point)."""

    __slots__ = ()


def _wrap(gdef, c_node):
    """Return the node object for ``c_node`` of graph ``gdef`` (one per driver node)."""
    h = as_int_handle(c_node)
    node = _registry.get((gdef._h, h))
    if node is not None and node.is_valid:
        return node
    out = ffi.new("CUgraphNodeType *")
    check(lib.cuGraphNodeGetType(c_node, out))
    return _BY_TYPE.get(out[0], GraphNode)._make(gdef, c_node)
