# SPDX-License-Identifier: Apache-2.0
"""Explicit graph construction: :class:`GraphDefinition`.

A :class:`GraphDefinition` wraps a ``CUgraph``.  Nodes are added with its
builder methods (entry nodes, without dependencies) and with those of the
nodes themselves (:class:`~cuda_core.graph.GraphNode`), then
:meth:`~GraphDefinition.instantiate` makes an executable
:class:`~cuda_core.graph.Graph`.

``GraphDefinition()`` owns its graph.  Other definitions are *views*: of a
captured graph (:attr:`GraphBuilder.graph_definition
<cuda_core.graph.GraphBuilder.graph_definition>`), of a child graph
(:attr:`ChildGraphNode.child_graph
<cuda_core.graph.ChildGraphNode.child_graph>`) or of a conditional body
(:attr:`IfNode.then <cuda_core.graph.IfNode.then>`, ...).  All definitions
of one hierarchy share its state and keep it alive; mutations anywhere in a
hierarchy must be synchronized by the caller.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._lifetime import Closeable
from cuda_core._loader import init_driver
from cuda_core.graph._attachments import GraphBox, drain
from cuda_core.graph._graph import _instantiate
from cuda_core.graph._graph_condition import _condition_args, _create_condition
from cuda_core.graph._graph_node import GraphNode, _wrap
from cuda_core.graph._graph_options import GraphDebugPrintOptions, _dot_print
from cuda_core.graph._node_params import _ctx, _list_nodes
from cuda_core.graph._node_registry import _register

if TYPE_CHECKING:
    import os
    from typing import Concatenate, ParamSpec

    from cuda_core.graph._graph import Graph
    from cuda_core.graph._graph_condition import GraphCondition
    from cuda_core.graph._graph_node import EmptyNode
    from cuda_core.graph._graph_options import GraphCompleteOptions

__all__ = ["GraphDefinition"]

_R = TypeVar("_R")
if TYPE_CHECKING:
    _P = ParamSpec("_P")


def _entry_builder(
    builder: Callable[Concatenate[GraphNode, _P], _R], doc: str
) -> Callable[Concatenate[GraphDefinition, _P], _R]:
    """Return the :class:`GraphDefinition` method calling ``builder`` on the entry node.

    The method adds the node ``builder`` adds, without dependencies.  It has
    the builder's signature and annotations (for :func:`inspect.signature`
    and the API reference), so they are written once, and its own docstring
    ``doc``.  It calls a copy of the builder that bears its own name, so that
    an argument error names ``GraphDefinition.<method>()``.
    """
    name = builder.__name__
    qualname = f"GraphDefinition.{name}"
    build = types.FunctionType(
        builder.__code__, builder.__globals__, name, builder.__defaults__, builder.__closure__
    )
    build.__kwdefaults__ = builder.__kwdefaults__
    build.__qualname__ = qualname

    def method(self: GraphDefinition, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return build(self._entry, *args, **kwargs)  # type: ignore[no-any-return]

    method.__name__ = name
    method.__qualname__ = qualname
    method.__doc__ = doc
    method.__annotations__ = dict(builder.__annotations__)
    method.__signature__ = inspect.signature(builder)  # type: ignore[attr-defined]
    return method


# Registered for the nodes, which make views of definitions (conditional
# bodies, child graphs) but sit below this module.
@_register()
class GraphDefinition(Closeable):
    """A graph built explicitly, node by node.

    ``GraphDefinition()`` creates an empty graph.  Its builder methods add
    entry nodes (with no dependencies); each returns the node, whose own
    builder methods add nodes depending on it.  :meth:`instantiate` makes an
    executable :class:`~cuda_core.graph.Graph`.  Two definitions are equal
    when they wrap the same ``CUgraph``.

    Everything the nodes use (kernels, arguments, buffers, events, callbacks)
    is kept alive by the definition and by every executable graph made from
    it, including launches still running after the Graph was closed.

    Notes
    -----
    Definitions viewing the same hierarchy (root, child and conditional-body
    graphs) share state; mutations anywhere in it must be synchronized
    externally.

    Raises
    ------
    CUDAError
        If the graph cannot be created.
    """

    __slots__ = (
        "_graph",
        "_h",
        "_box",
        "_parent",
        "_entry_node",
        "_owner",
        "_closed",
        "__weakref__",
    )

    _graph: Any  # CUgraph cdata
    _h: int
    _box: GraphBox
    _parent: GraphNode | None
    _entry_node: GraphNode | None
    _owner: bool
    _closed: bool

    def __init__(self) -> None:
        drain()
        init_driver()
        out = ffi.new("CUgraph *")
        check(lib.cuGraphCreate(out, 0))
        self._setup(out[0], GraphBox(out[0], owned=True), None)
        self._owner = True

    @classmethod
    def _view(cls, c_graph: Any, box: GraphBox, parent: GraphNode | None = None) -> GraphDefinition:
        """A definition viewing ``c_graph`` of hierarchy ``box`` (hosted by node ``parent``)."""
        self = object.__new__(cls)
        self._setup(c_graph, box, parent)
        return self

    def _setup(self, c_graph: Any, box: GraphBox, parent: GraphNode | None) -> None:
        self._graph = c_graph
        self._h = as_int_handle(c_graph)
        self._box = box
        self._parent = parent
        self._entry_node = None
        self._owner = False
        self._closed = False

    def __repr__(self) -> str:
        if self._is_valid():
            return f"<GraphDefinition handle={self._h:#x}>"
        parent = self._parent
        gone = parent is not None and not self._closed and not self._box.closed
        return f"<GraphDefinition handle={0 if gone else self._h:#x} (invalid)>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GraphDefinition):
            return NotImplemented
        return self._h == other._h

    def __hash__(self) -> int:
        return hash((GraphDefinition, self._h))

    def close(self) -> None:
        """Release this definition (idempotent).

        For a definition made by ``GraphDefinition()`` this destroys the
        graph now: every view and node of it becomes invalid (executable
        graphs made from it are not affected).  For a view it only
        invalidates this object.

        Raises
        ------
        CUDAError
            If destroying the graph fails.
        """
        if self._closed:
            return
        self._closed = True
        if self._owner:
            self._box.close()

    # ------------------------------------------------------------------
    # Validity.
    # ------------------------------------------------------------------
    def _is_valid(self) -> bool:
        if self._closed or self._box.closed:
            return False
        parent = self._parent
        return parent is None or parent.is_valid

    def _check_valid(self) -> None:
        if self._closed or self._box.closed:
            raise RuntimeError(
                "the GraphDefinition is no longer valid (it, or the definition owning its "
                "graph, was closed)"
            )
        parent = self._parent
        if parent is not None and not parent.is_valid:
            # The node holding this graph was destroyed, and the graph with
            # it: the driver is given no graph, as in cuda.core.
            check(lib.CUDA_ERROR_INVALID_VALUE)

    def _update_source(self) -> Any:
        """Return the ``CUgraph`` for :meth:`Graph.update`."""
        self._check_valid()
        return self._graph

    @property
    def is_valid(self) -> bool:
        """bool: Whether this definition (and the graph it views) can still be used."""
        return self._is_valid()

    @property
    def _entry(self) -> GraphNode:
        """GraphNode: The virtual entry node (builders on it add nodes without dependencies)."""
        node = self._entry_node
        if node is None:
            node = self._entry_node = GraphNode._make(self, None)
        return node

    @property
    def handle(self) -> int:
        """int: The address of the underlying ``CUgraph``.

        0 for a view of a graph that is gone with the node holding it (a
        child graph or conditional body whose node was destroyed), as in
        ``cuda.core``.

        Raises
        ------
        RuntimeError
            If this definition, or the one owning its graph, was closed.
        """
        if self._closed or self._box.closed:
            self._check_valid()  # raises
        parent = self._parent
        if parent is not None and not parent.is_valid:
            return 0
        return self._h

    # ------------------------------------------------------------------
    # Entry-node builders.
    # ------------------------------------------------------------------
    allocate = _entry_builder(
        GraphNode.allocate,
        """Add an allocation node without dependencies (see :meth:`GraphNode.allocate`).

        Returns
        -------
        AllocNode
        """,
    )

    deallocate = _entry_builder(
        GraphNode.deallocate,
        """Add a free node without dependencies (see :meth:`GraphNode.deallocate`).

        Returns
        -------
        FreeNode
        """,
    )

    memset = _entry_builder(
        GraphNode.memset,
        """Add a memset node without dependencies (see :meth:`GraphNode.memset`).

        Returns
        -------
        MemsetNode
        """,
    )

    memcpy = _entry_builder(
        GraphNode.memcpy,
        """Add a memcpy node without dependencies (see :meth:`GraphNode.memcpy`).

        Returns
        -------
        MemcpyNode
        """,
    )

    launch = _entry_builder(
        GraphNode.launch,
        """Add a kernel node without dependencies (see :meth:`GraphNode.launch`).

        Returns
        -------
        KernelNode
        """,
    )

    def empty(self) -> EmptyNode:
        """Add an empty node without dependencies.

        Returns
        -------
        EmptyNode
        """
        return self._entry.join()

    def join(self, *nodes: GraphNode) -> EmptyNode:
        """Add an empty node depending on all ``nodes``.

        Returns
        -------
        EmptyNode
        """
        return self._entry.join(*nodes)

    embed = _entry_builder(
        GraphNode.embed,
        """Add a child graph node without dependencies (see :meth:`GraphNode.embed`).

        Returns
        -------
        ChildGraphNode
        """,
    )

    record = _entry_builder(
        GraphNode.record,
        """Add an event record node without dependencies.

        Returns
        -------
        EventRecordNode
        """,
    )

    wait = _entry_builder(
        GraphNode.wait,
        """Add an event wait node without dependencies.

        Returns
        -------
        EventWaitNode
        """,
    )

    callback = _entry_builder(
        GraphNode.callback,
        """Add a host callback node without dependencies (see :meth:`GraphNode.callback`).

        Returns
        -------
        HostCallbackNode
        """,
    )

    def create_condition(self, default_value: int | None = None) -> GraphCondition:
        """Create a condition variable for conditional nodes of this graph.

        Parameters
        ----------
        default_value : int or bool, optional
            The value at the start of each launch (None: not assigned; device
            code must set it with ``cudaGraphSetConditional``).

        Returns
        -------
        GraphCondition
            Owned by this graph; pass it to its conditional nodes.

        Raises
        ------
        RuntimeError
            If the driver is older than 12.3.
        TypeError, ValueError
            If ``default_value`` is not an int in [0, 2**32).
        """
        self._check_valid()
        value, flags = _condition_args(default_value)
        return _create_condition(self._graph, _ctx(), value, flags)

    if_then = _entry_builder(
        GraphNode.if_then,
        """Add an ``if`` node without dependencies (see :meth:`GraphNode.if_then`).

        Returns
        -------
        IfNode
        """,
    )

    if_else = _entry_builder(
        GraphNode.if_else,
        """Add an ``if``/``else`` node without dependencies.

        Returns
        -------
        IfElseNode
        """,
    )

    while_loop = _entry_builder(
        GraphNode.while_loop,
        """Add a ``while`` node without dependencies.

        Returns
        -------
        WhileNode
        """,
    )

    switch = _entry_builder(
        GraphNode.switch,
        """Add a ``switch`` node without dependencies.

        Returns
        -------
        SwitchNode
        """,
    )

    # ------------------------------------------------------------------
    # Whole-graph operations.
    # ------------------------------------------------------------------
    def instantiate(self, options: GraphCompleteOptions | dict[str, Any] | None = None) -> Graph:
        """Instantiate this graph as an executable :class:`~cuda_core.graph.Graph`.

        Parameters
        ----------
        options : GraphCompleteOptions, optional
            (or a dict, a cuda_core extension).

        Returns
        -------
        Graph

        Raises
        ------
        CUDAError
            If the driver fails the instantiation.
        RuntimeError
            If the driver reports an instantiation result other than success
            (the message names it, as ``cuda.core`` words it).
        """
        self._check_valid()
        return _instantiate(self._graph, options)

    def debug_dot_print(
        self,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        options: GraphDebugPrintOptions | dict[str, bool] | None = None,
    ) -> None:
        """Write this graph as a GraphViz DOT file.

        Parameters
        ----------
        path : str
            (bytes and os.PathLike are accepted too, a cuda_core extension.)
        options : GraphDebugPrintOptions, optional
            (or a dict, a cuda_core extension).

        Raises
        ------
        TypeError
            If ``options`` is something else.
        """
        self._check_valid()
        if options is not None and not isinstance(options, (GraphDebugPrintOptions, dict)):
            raise TypeError("options must be a GraphDebugPrintOptions instance")
        _dot_print(self._graph, path, options)

    def nodes(self) -> set[GraphNode]:
        """Return every node of this graph.

        Returns
        -------
        set of GraphNode
        """
        self._check_valid()
        return {_wrap(self, h) for h in _list_nodes(lib.cuGraphGetNodes, self._graph)}

    def edges(self) -> set[tuple[GraphNode, GraphNode]]:
        """Return every dependency edge of this graph.

        Returns
        -------
        set of tuple
            ``(from_node, to_node)`` pairs.
        """
        self._check_valid()
        n = ffi.new("size_t *")
        check(lib.cuGraphGetEdges(self._graph, ffi.NULL, ffi.NULL, n))
        if not n[0]:
            return set()
        frm = ffi.new("CUgraphNode[]", n[0])
        to = ffi.new("CUgraphNode[]", n[0])
        check(lib.cuGraphGetEdges(self._graph, frm, to, n))
        return {(_wrap(self, frm[i]), _wrap(self, to[i])) for i in range(n[0])}
