# SPDX-License-Identifier: Apache-2.0
"""The base of the nodes of an explicit graph definition: :class:`GraphNode`, and its edges.

Nodes are made by the builder methods of
:class:`~cuda_core.graph.GraphDefinition` (entry nodes, with no
dependencies) and of other nodes (nodes that depend on that node; see
``_definition_builders``).  Each builder returns the node it added, typed by kind
(:class:`~cuda_core.graph.KernelNode`, :class:`~cuda_core.graph.MemcpyNode`,
...; defined in the ``_*_node(s)`` modules).  One Python object stands for
one driver node: :meth:`GraphDefinition.nodes
<cuda_core.graph.GraphDefinition.nodes>`, ``pred`` and ``succ`` (live
:class:`AdjacencySetProxy` views of the edges) return the same objects the
builders did.

Everything a node uses (kernels, packed arguments, memory, events,
callbacks, child graphs) is kept alive, per node, by the graph definition,
its embedded copies and every executable graph instantiated from it, until
each of them lets go (see ``_attachments``).  A :class:`~cuda_core.Buffer`
operand keeps its *allocation* alive, not the Buffer: closing the Buffer
afterwards frees the memory only once no graph uses it.  Raw integer
pointers are the caller's responsibility unless an owner is given
(``dst_owner``/``src_owner``).

A destroyed node (:meth:`GraphNode.destroy`) stays a usable object, as in
``cuda.core``: :attr:`~GraphNode.is_valid` is False, ``type`` and ``handle``
are None, its edges are empty and the properties of its kind keep the values
recorded when it was made.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator, MutableSet
from typing import TYPE_CHECKING, Any, TypeVar

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._attachments import drain, prepare, release
from cuda_core.graph._definition_builders import _DefinitionBuilders
from cuda_core.graph._node_params import _list_nodes
from cuda_core.graph._node_registry import _BY_TYPE, _register
from cuda_core.graph._types import CUgraphNodeType

if TYPE_CHECKING:
    from typing_extensions import Self

    from cuda_core.graph._graph_definition import GraphDefinition

    _N = TypeVar("_N", bound="GraphNode")
    _S = TypeVar("_S")

__all__ = ["EmptyNode", "GraphNode"]

# (graph handle, node handle) -> the one GraphNode object for that node.
_registry: weakref.WeakValueDictionary[tuple[int, int], GraphNode] = weakref.WeakValueDictionary()


class GraphNode(_DefinitionBuilders):
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

    _h: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "GraphNode objects cannot be created directly; use the builder methods of a "
            "GraphDefinition or of another GraphNode"
        )

    @classmethod
    def _make(cls: type[_N], gdef: GraphDefinition, c_node: Any, **cached: Any) -> _N:
        """The node object for ``c_node`` of ``gdef``; ``cached``: known properties.

        The properties of the node's kind are recorded now (``_load``), so
        they stay readable after the node is destroyed.
        """
        self = object.__new__(cls)
        self._gdef = gdef
        self._node = c_node
        self._h = 0 if c_node is None else as_int_handle(c_node)
        self._destroyed = False
        self._dep = None
        for name in cls._extra:
            setattr(self, name, None)
        for name, value in cached.items():
            setattr(self, "_" + name, value)
        if c_node is not None:
            _registry[(gdef._h, self._h)] = self
            self._load()
        return self

    _extra: tuple[str, ...] = ()

    def _load(self) -> None:
        """Record the properties of this node's kind from the driver (subclasses)."""

    def __repr__(self) -> str:
        if self._node is None:
            return "<GraphNode entry>" if self.is_valid else "<GraphNode destroyed>"
        if self._destroyed and type(self) is GraphNode:
            return "<GraphNode destroyed>"
        # As cuda.core: ``<Kind handle=0x... field=...>``; a destroyed node of a
        # kind shows handle 0x0 and the fields recorded when it was made.
        handle = 0 if self._destroyed else self._h
        return f"<{type(self).__name__} handle={handle:#x}{self._repr_fields()}>"

    def _repr_fields(self) -> str:
        """The `` name=value`` fields of this node's kind in ``repr`` (subclasses)."""
        return ""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GraphNode):
            return NotImplemented
        return self._h == other._h and self._gdef._h == other._gdef._h

    def __hash__(self) -> int:
        return hash((self._gdef._h, self._h))

    # ------------------------------------------------------------------
    # Properties and structure.
    # ------------------------------------------------------------------
    @property
    def type(self) -> CUgraphNodeType | None:
        """CUgraphNodeType or None: The driver node type (None for the entry node and
        for a destroyed node)."""
        if self._node is None or not self.is_valid:
            return None
        out = ffi.new("CUgraphNodeType *")
        check(lib.cuGraphNodeGetType(self._node, out))
        return CUgraphNodeType(out[0])

    @property
    def graph(self) -> GraphDefinition:
        """GraphDefinition: The graph definition this node belongs to."""
        return self._gdef

    @property
    def handle(self) -> int | None:
        """int or None: The ``CUgraphNode`` address (None for the entry node or a destroyed one)."""
        return None if self._node is None or self._destroyed else self._h

    @property
    def is_valid(self) -> bool:
        """bool: Whether the node (and its graph) still exist (False after :meth:`destroy`)."""
        return not self._destroyed and self._gdef._is_valid()

    def destroy(self) -> None:
        """Remove this node and its edges from the graph.

        Afterwards :attr:`is_valid` is False; the object stays usable as in
        ``cuda.core`` (see the module docstring), but nodes cannot be added
        after it: its builder methods raise RuntimeError, where ``cuda.core``
        adds the new node without dependencies (a deliberate difference).  A
        no-op on an already destroyed node and on the entry node.  The
        graph's hold on what the node used is released at once; executable
        graphs made from it, embedded copies and launches in
        flight keep theirs.  Destroying a child-graph or conditional node
        invalidates the graphs inside it and their nodes.

        Raises
        ------
        CUDAError
            ``CUDA_ERROR_NOT_SUPPORTED`` in a graph that holds memory
            allocation or free nodes: the driver deletes no node of such a
            graph.  The node stays valid.
        """
        if self._node is None or self._destroyed:
            return
        self._check_valid()
        gdef = self._gdef
        check(lib.cuGraphDestroyNode(self._node))
        self._destroyed = True
        _registry.pop((gdef._h, self._h), None)
        gdef._box.detach(gdef._graph, self._node)

    @property
    def pred(self) -> AdjacencySetProxy:
        """AdjacencySetProxy: A mutable set-like view of the nodes this node depends on.

        Adding a node adds an edge from it to this node; discarding one
        removes the edge.  Assigning an iterable replaces all predecessors.
        """
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value: Iterable[GraphNode]) -> None:
        proxy = AdjacencySetProxy(self, False)
        value = list(value)
        proxy.clear()
        proxy.update(value)

    @property
    def succ(self) -> AdjacencySetProxy:
        """AdjacencySetProxy: A mutable set-like view of the nodes that depend on this node."""
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value: Iterable[GraphNode]) -> None:
        proxy = AdjacencySetProxy(self, True)
        value = list(value)
        proxy.clear()
        proxy.update(value)

    # ------------------------------------------------------------------
    # Private helpers.
    # ------------------------------------------------------------------
    def _check_valid(self) -> None:
        if self._destroyed:
            raise RuntimeError("the graph node was destroyed; it cannot be used")
        self._gdef._check_valid()

    def _set_params(
        self,
        owners: Iterable[object],
        set_params: Callable[[], int],
        keep_current: bool = False,
    ) -> None:
        """Change this node's parameters (``set_params()`` calls the driver) and attach ``owners``.

        The new version's attachment replaces the old one, whose graph
        reference is released (executables keep theirs).  ``keep_current``:
        the change keeps some of the old parameters, so the new version keeps
        what the old one used as well.
        """
        self._check_valid()
        drain()
        gdef = self._gdef
        c_graph = gdef._graph
        if keep_current:
            owners = tuple(owners) + gdef._box.current(c_graph, self._node)
        entry = prepare(c_graph, owners) if owners else None
        status = set_params()
        if status:
            if entry is not None:
                release(c_graph, entry)
            check(status)
        gdef._box.replace(c_graph, self._node, entry)
        for name in type(self)._extra:
            setattr(self, name, None)
        self._load()


class AdjacencySetProxy(MutableSet[GraphNode]):
    """A live, mutable set-like view of a node's predecessors or successors.

    Membership, iteration and length query the driver each time; ``add``,
    ``discard``, ``update``, ``clear``, ``|=`` and ``-=`` add or remove the
    corresponding edges, each in one driver call.  The views of the entry
    node and of a destroyed node are empty.  The driver judges the edges:
    one to a node of another graph, to the node itself or to a destroyed
    node raises :class:`~cuda_core.CUDAError`, as in ``cuda.core``.
    """

    __slots__ = ("_owner", "_succ")

    _owner: GraphNode
    _succ: bool

    def __init__(self, node: GraphNode, succ: bool) -> None:
        self._owner = node
        self._succ = succ

    @classmethod
    def _from_iterable(cls, it: Iterable[_S]) -> set[_S]:
        return set(it)

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(n) for n in self) + "}"

    def _handles(self) -> list[Any]:
        node = self._owner
        if node._node is None or node._destroyed or not node._gdef._is_valid():
            return []
        fn = lib.cuGraphNodeGetDependentNodes if self._succ else lib.cuGraphNodeGetDependencies
        return _list_nodes(fn, node._node)

    def __iter__(self) -> Iterator[GraphNode]:
        gdef = self._owner._gdef
        return iter([_wrap(gdef, h) for h in self._handles()])

    def __len__(self) -> int:
        return len(self._handles())

    def __contains__(self, other: object) -> bool:
        if not isinstance(other, GraphNode) or other._node is None or other._destroyed:
            return False
        if other._gdef._h != self._owner._gdef._h:
            return False
        return other._h in {as_int_handle(h) for h in self._handles()}

    def _edges(self, others: Iterable[GraphNode]) -> tuple[Any, Any, int]:
        """Return ``(from array, to array, count)`` for edges between the owner and ``others``."""
        node = self._owner
        mine = _c_node(node)
        theirs = [_c_node(o) for o in others]
        if self._succ:
            frm, to = [mine] * len(theirs), theirs
        else:
            frm, to = theirs, [mine] * len(theirs)
        return ffi.new("CUgraphNode[]", frm), ffi.new("CUgraphNode[]", to), len(theirs)

    def _add_edges(self, others: Iterable[GraphNode]) -> None:
        frm, to, n = self._edges(others)
        check(lib.cuGraphAddDependencies(self._owner._gdef._graph, frm, to, n))

    def _remove_edges(self, others: Iterable[GraphNode]) -> None:
        frm, to, n = self._edges(others)
        check(lib.cuGraphRemoveDependencies(self._owner._gdef._graph, frm, to, n))

    def add(self, other: GraphNode) -> None:
        """Add an edge between the owner and ``other`` (no-op if present)."""
        if not isinstance(other, GraphNode):
            raise TypeError(f"expected GraphNode, got {type(other).__name__}")
        if other in self:
            return
        self._add_edges([other])

    def discard(self, other: object) -> None:
        """Remove the edge between the owner and ``other`` (no-op if absent or not a node)."""
        if not isinstance(other, GraphNode) or other not in self:
            return
        self._remove_edges([other])

    def update(self, *others: GraphNode | Iterable[GraphNode]) -> None:
        """Add edges to every node given, in one driver call.

        Each argument is a GraphNode or an iterable of GraphNodes; nodes
        already present are skipped.
        """
        nodes = []
        for other in others:
            if isinstance(other, GraphNode):
                nodes.append(other)
                continue
            for n in other:
                if not isinstance(n, GraphNode):
                    raise TypeError(f"expected GraphNode, got {type(n).__name__}")
                nodes.append(n)
        new = [n for n in nodes if n not in self]
        if new:
            self._add_edges(new)

    def clear(self) -> None:
        """Remove every edge of this view in one driver call."""
        members = list(self)
        if members:
            self._remove_edges(members)

    def __ior__(  # type: ignore[misc, override]  # takes any iterable
        self, it: Iterable[GraphNode]
    ) -> Self:
        self.update(it)
        return self

    def __isub__(self, it: Iterable[object]) -> Self:  # type: ignore[misc]  # takes any iterable
        if it is self:
            self.clear()
        else:
            gone = [n for n in it if isinstance(n, GraphNode) and n in self]
            if gone:
                self._remove_edges(gone)
        return self


@_register(lib.CU_GRAPH_NODE_TYPE_EMPTY)
class EmptyNode(GraphNode):
    """An empty node (a synchronization point)."""

    __slots__ = ()


def _c_node(node: GraphNode) -> Any:
    """The ``CUgraphNode`` of ``node`` for an edge: NULL for the entry node and a
    destroyed node (the driver refuses it)."""
    if node._node is None or node._destroyed:
        return ffi.NULL
    return node._node


def _wrap(gdef: GraphDefinition, c_node: Any) -> GraphNode:
    """Return the node object for ``c_node`` of graph ``gdef`` (one per driver node)."""
    h = as_int_handle(c_node)
    node = _registry.get((gdef._h, h))
    if node is not None and node.is_valid:
        return node
    out = ffi.new("CUgraphNodeType *")
    check(lib.cuGraphNodeGetType(c_node, out))
    node_cls: type[GraphNode] = _BY_TYPE.get(out[0], GraphNode)
    return node_cls._make(gdef, c_node)
