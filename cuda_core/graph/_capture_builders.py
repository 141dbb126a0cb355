# SPDX-License-Identifier: Apache-2.0
"""The methods of :class:`~cuda_core.graph.GraphBuilder` that add nodes to its capture.

Work submitted to a builder's stream (launches, copies, allocations) is
captured by the driver; these methods add nodes to the capture themselves.
:class:`~cuda_core.graph.GraphBuilder` inherits them from
:class:`_CaptureBuilders`: :meth:`create_condition` and the conditional
builders (``if_then``, ``if_else``, ``switch``, ``while_loop``), each
returning builders that capture into the bodies of the conditional node
(``cuStreamBeginCaptureToGraph``); :meth:`embed`, which adds a finished
builder's graph as a child graph node; and :meth:`callback`, a host
callback the graph keeps alive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._attachments import drain, prepare, release, resolve_host_callback
from cuda_core.graph._capture import _ACTIVE, _BODY, _ENDED, _FORKED, _NOT_STARTED, _capture_info
from cuda_core.graph._graph_condition import (
    GraphCondition,
    _condition_args,
    _conditional_params,
    _create_condition,
    _require_driver,
    _switch_count,
)

if TYPE_CHECKING:
    from cuda_core._stream import Stream
    from cuda_core.graph._attachments import GraphBox
    from cuda_core.graph._graph_builder import GraphBuilder

__all__: list[str] = []


class _CaptureBuilders:
    """The node-adding methods of :class:`~cuda_core.graph.GraphBuilder`.

    GraphBuilder is its only subclass; these methods use its slots and its
    ``_new()`` and ``_require_open()``.
    """

    __slots__ = ()

    # The slots and methods of GraphBuilder used here.
    _stream: Stream
    _closed: bool
    _state: int
    _kind: int
    _box: GraphBox  # None before capture begins and once closed
    _graph: Any  # CUgraph cdata

    if TYPE_CHECKING:

        def _require_open(self) -> None: ...

        # GraphBuilder._new (see there for its parameters).
        _new: ClassVar[Callable[..., GraphBuilder]]

    def create_condition(self, default_value: int | bool | None = None) -> GraphCondition:
        """Create a condition variable for conditional nodes in the graph being built.

        Parameters
        ----------
        default_value : int or bool, optional
            The value the condition takes at the start of each graph launch.
            None (default): no default is assigned (device code must set it).

        Returns
        -------
        GraphCondition

        Raises
        ------
        RuntimeError
            If the driver is older than 12.3, or the builder is not building
            (checked in that order).
        TypeError, ValueError
            If ``default_value`` is not an int in [0, 2**32).
        """
        self._require_open()
        _require_driver(12030, "conditional handles")
        status, c_graph = _capture_info(self._stream._handle)[:2]
        if status != _ACTIVE:
            raise RuntimeError("Cannot create a condition when graph is not being built")
        value, flags = _condition_args(default_value)
        return _create_condition(c_graph, self._ctx(), value, flags)

    def if_then(self, condition: GraphCondition) -> GraphBuilder:
        """Add an ``if`` node; return the builder of its body.

        The body runs when ``condition`` is non-zero at run time.  It starts
        after the work captured so far; work captured afterwards on this
        builder runs after the conditional node.  Call ``begin_building`` on
        the returned builder to capture the body.

        Parameters
        ----------
        condition : GraphCondition
            Read once each time the node runs.

        Returns
        -------
        GraphBuilder
            The builder of the body, not yet building.

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition.
        RuntimeError
            If not building, or the driver is older than 12.3.
        """
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_IF, 1, (12, 3), "conditional if"
        )[0]

    def if_else(self, condition: GraphCondition) -> tuple[GraphBuilder, ...]:
        """Add an ``if``/``else`` node; return the builders of both bodies.

        Parameters
        ----------
        condition : GraphCondition

        Returns
        -------
        tuple of (GraphBuilder, GraphBuilder)
            The body run when ``condition`` is non-zero, then the one run
            when it is zero.

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition.
        RuntimeError
            If not building, or the driver is older than 12.8.
        """
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_IF, 2, (12, 8), "conditional if-else"
        )

    def switch(self, condition: GraphCondition, count: int) -> tuple[GraphBuilder, ...]:
        """Add a ``switch`` node with ``count`` cases; return the builders of the cases.

        At run time the case whose index equals ``condition`` runs; none runs
        when it is out of range.

        Parameters
        ----------
        condition : GraphCondition
        count : int
            Number of cases (>= 1).

        Returns
        -------
        tuple of GraphBuilder

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition or ``count`` not an int.
        RuntimeError
            If not building, or the driver is older than 12.8.
        CUDAError
            If the driver refuses ``count`` (e.g. 0).
        """
        count = _switch_count(count)
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_SWITCH, count, (12, 8), "conditional switch"
        )

    def while_loop(self, condition: GraphCondition) -> GraphBuilder:
        """Add a ``while`` node; return the builder of its body.

        The body runs repeatedly while ``condition`` is non-zero (checked
        before each iteration).

        Parameters
        ----------
        condition : GraphCondition
            Read before every iteration; the body may change it to end
            the loop.

        Returns
        -------
        GraphBuilder
            The builder of the loop body, not yet building.

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition.
        RuntimeError
            If this builder is not building, or the driver is older than
            12.3 (the first with conditional nodes).
        """
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_WHILE, 1, (12, 3), "conditional while loop"
        )[0]

    def embed(self, child: GraphBuilder) -> None:
        """Add a finished builder's graph as a child graph node (a copy of it).

        Parameters
        ----------
        child : GraphBuilder
            A builder whose building has ended.

        Raises
        ------
        TypeError
            If ``child`` is not a GraphBuilder.
        ValueError
            If ``child`` has not finished building, or this builder is not
            building.
        """
        self._require_open()
        if not isinstance(child, _CaptureBuilders):
            raise TypeError(f"child must be a GraphBuilder, not {type(child).__name__}")
        if child._closed or child._state != _ENDED or child._kind == _FORKED:
            raise ValueError("Child graph has not finished building.")
        if child._box is None or child._box.closed:
            raise ValueError("the child builder's graph was destroyed")
        c_stream = self._stream._handle
        status, c_graph, deps, ndeps = _capture_info(c_stream)
        if status != _ACTIVE:
            raise ValueError("Parent graph is not being built.")
        out = ffi.new("CUgraphNode *")
        check(lib.cuGraphAddChildGraphNode(out, c_graph, deps, ndeps, child._graph))
        # CUDA copied the child's references with it; make its nodes known.
        embedded = ffi.new("CUgraph *")
        check(lib.cuGraphChildGraphNodeGetGraph(out[0], embedded))
        self._box.add_child(c_graph, out[0], embedded[0])
        self._box.copy_maps(embedded[0], child._box, child._graph)
        check(
            lib.cuStreamUpdateCaptureDependencies(
                c_stream, out, 1, lib.CU_STREAM_SET_CAPTURE_DEPENDENCIES
            )
        )

    def callback(self, fn: Callable[..., Any], *, user_data: int | bytes | None = None) -> None:
        """Capture a host callback: ``fn`` runs on the CPU when the graph reaches this point.

        ``fn`` is either a Python callable taking no arguments (it runs with
        the GIL held; bind state with a closure or ``functools.partial``), or
        a ctypes ``CFUNCTYPE(None, c_void_p)`` function pointer, which
        receives ``user_data``.  The graph keeps ``fn`` (and a copy of
        bytes-like ``user_data``) alive.

        .. warning::

            A callback must not call CUDA (no cuda_core API that touches the
            GPU): doing so may deadlock or fail.  An exception raised by a
            Python callback is reported through :func:`sys.unraisablehook`.

        Parameters
        ----------
        fn : callable or ctypes function pointer
        user_data : int or bytes-like, optional
            Only with a ctypes function pointer: an address (the caller keeps
            the memory alive) or bytes (copied).

        Raises
        ------
        RuntimeError
            If the builder is not building (checked first).
        TypeError
            If ``fn`` is neither a callable nor a ctypes ``CUhostFn``.
        ValueError
            If ``user_data`` is given with a Python callable.
        """
        self._require_open()
        c_stream = self._stream._handle
        status, c_graph = _capture_info(c_stream)[:2]
        if status != _ACTIVE:
            raise RuntimeError("Cannot add callback when graph is not being built")
        cb = resolve_host_callback(fn, user_data)
        # The graph being captured keeps the callback; the entry is recorded
        # on the host node the capture adds (found among the capture's
        # dependencies), or kept by the graph as a whole if none is found.
        drain()
        entry = prepare(c_graph, cb.owners)
        status = lib.cuLaunchHostFunc(c_stream, cb.c_fn, cb.c_data)
        if status:
            release(c_graph, entry)  # type: ignore[arg-type]  # fn is always an owner
            check(status)
        c_node = _captured_host_node(c_stream)
        if c_node is not None:
            self._box.commit(c_graph, c_node, entry)

    # ------------------------------------------------------------------

    # ------------------------------------------------------------------
    # Private helpers.
    # ------------------------------------------------------------------
    def _ctx(self) -> Any:
        ctx = self._stream.context
        if ctx is None:
            raise RuntimeError("no CUDA context is current; call Device.set_current() first")
        return ctx._handle

    def _conditional(
        self,
        condition: object,
        c_type: int,
        size: int,
        min_driver: tuple[int, int],
        what: str,
    ) -> tuple[GraphBuilder, ...]:
        """Add a conditional node to the capture; return builders of its bodies."""
        self._require_open()
        _require_driver(min_driver, what)
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                "condition must be a GraphCondition object (from GraphBuilder.create_condition()), "
                f"got {type(condition).__name__}"
            )
        c_stream = self._stream._handle
        status, c_graph, deps, ndeps = _capture_info(c_stream)
        if status != _ACTIVE:
            raise RuntimeError("Cannot add conditional node when not actively capturing")
        params = _conditional_params(condition, c_type, size, self._ctx())
        out = ffi.new("CUgraphNode *")
        check(lib.cuGraphAddNode(out, c_graph, deps, ndeps, params))
        check(
            lib.cuStreamUpdateCaptureDependencies(
                c_stream, out, 1, lib.CU_STREAM_SET_CAPTURE_DEPENDENCIES
            )
        )
        bodies = [params.conditional.phGraph_out[i] for i in range(size)]
        for body in bodies:
            self._box.add_child(c_graph, out[0], body)
        device = self._stream.device
        builders: list[GraphBuilder] = []
        for body in bodies:
            stream = device.create_stream()
            builders.append(
                type(self)._new(stream, True, _BODY, _NOT_STARTED, self._box, body, None)
            )
        return tuple(builders)


def _captured_host_node(c_stream: Any) -> Any:
    """Return the host node ``cuLaunchHostFunc`` just added to a capture, or None."""
    status, _, deps, n = _capture_info(c_stream)
    if status != _ACTIVE or n != 1:
        return None
    c_node = deps[0]
    kind = ffi.new("CUgraphNodeType *")
    if lib.cuGraphNodeGetType(c_node, kind) or kind[0] != lib.CU_GRAPH_NODE_TYPE_HOST:
        return None
    return c_node
