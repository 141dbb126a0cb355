# SPDX-License-Identifier: Apache-2.0
"""Executable graphs: :class:`Graph` and its per-node views.

A :class:`Graph` wraps a ``CUgraphExec`` made by
:meth:`GraphBuilder.complete <cuda_core.graph.GraphBuilder.complete>` or
:meth:`GraphDefinition.instantiate
<cuda_core.graph.GraphDefinition.instantiate>`.  It is launched on a stream
(:meth:`Graph.launch`), can be uploaded ahead of time, updated from a graph
of the same topology (:meth:`Graph.update`), and ``graph[node]`` gives a
view of one of its nodes for changing that node's parameters (or enabling
and disabling it) without re-instantiating.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check, driver_error, status_in, warn_cuda
from cuda_core._lifetime import ClosedFlag
from cuda_core._stream import _as_stream
from cuda_core.graph._attachments import drain, release_temporary
from cuda_core.graph._attachments import retain_temporarily as _retain
from cuda_core.graph._drain import _Attachment, _ExecAttachments
from cuda_core.graph._executable_nodes import _VIEWS, ExecutableGraphNode
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._graph_options import GraphCompleteOptions

if TYPE_CHECKING:
    from cuda_core._stream import Stream
    from cuda_core.graph._graph_builder import GraphBuilder
    from cuda_core.graph._graph_definition import GraphDefinition

    _V = TypeVar("_V", bound="ExecutableGraphNode")

__all__ = ["Graph"]

# Instantiation results other than success, as cuda.core reports them (RuntimeError).
_INSTANTIATE_MESSAGES = {
    lib.CUDA_GRAPH_INSTANTIATE_ERROR: (
        "Instantiation failed for an unexpected reason which is described in the return "
        "value of the function."
    ),
    lib.CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE: (
        "Instantiation failed due to invalid structure, such as cycles."
    ),
    lib.CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED: (
        "Instantiation for device launch failed because the graph contained an unsupported "
        "operation."
    ),
    lib.CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED: (
        "Instantiation for device launch failed due to the nodes belonging to different contexts."
    ),
    lib.CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED: (
        "One or more conditional handles are not associated with conditional builders."
    ),
}

# The driver's description of each CUgraphExecUpdateResult (cuda.h).
_UPDATE_DESCRIPTIONS = {
    lib.CU_GRAPH_EXEC_UPDATE_ERROR: (
        "The update failed for an unexpected reason which is described in the return value "
        "of the function"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED: (
        "The update failed because the topology changed"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED: (
        "The update failed because a node type changed"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED: (
        "The update failed because the function of a kernel node changed (CUDA driver < 11.2)"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED: (
        "The update failed because the parameters changed in a way that is not supported"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED: (
        "The update failed because something about the node is not supported"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE: (
        "The update failed because the function of a kernel node changed in an unsupported way"
    ),
    lib.CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED: (
        "The update failed because the node attributes changed in a way that is not supported"
    ),
}


class Graph(ClosedFlag):
    """An executable graph (``CUgraphExec``).

    Made by :meth:`GraphBuilder.complete
    <cuda_core.graph.GraphBuilder.complete>` or :meth:`GraphDefinition.instantiate
    <cuda_core.graph.GraphDefinition.instantiate>`; it cannot be constructed
    directly.  The graph keeps alive what its nodes use until it is closed
    and its launches have finished.  Two Graph objects are equal when they
    wrap the same ``CUgraphExec``.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_exec", "_h", "_acc", "_closed", "_finalizer", "__weakref__")

    _exec: Any  # CUgraphExec cdata
    _h: int
    _acc: _ExecAttachments  # None once closed
    _closed: bool
    _finalizer: weakref.finalize[[Any], Graph]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "directly constructing a Graph instance is not supported; use "
            "GraphBuilder.complete() or GraphDefinition.instantiate()"
        )

    @classmethod
    def _from_exec(cls, c_exec: Any, acc: _ExecAttachments) -> Graph:
        self = object.__new__(cls)
        self._exec = c_exec
        self._h = as_int_handle(c_exec)
        self._acc = acc
        self._closed = False
        self._finalizer = weakref.finalize(self, _destroy_exec, c_exec)
        return self

    def __repr__(self) -> str:
        if self._closed:
            return "<Graph (closed)>"
        return f"<Graph handle={self._h:#x}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return self._h == other._h

    def __hash__(self) -> int:
        return hash((Graph, self._h))

    def __getitem__(self, node: GraphNode) -> ExecutableGraphNode:
        """Return a view of ``node`` in this executable graph.

        Parameters
        ----------
        node : GraphNode
            A node of the graph definition this graph was made from.

        Returns
        -------
        ExecutableGraphNode
            An :class:`ExecutableKernelNode`, :class:`ExecutableMemcpyNode`,
            :class:`ExecutableMemsetNode`, :class:`ExecutableHostCallbackNode`,
            :class:`ExecutableChildGraphNode`, :class:`ExecutableEventRecordNode`
            or :class:`ExecutableEventWaitNode` by node kind (the base class for
            other kinds).

        Raises
        ------
        TypeError
            If ``node`` is not a GraphNode (or is the entry node).
        """
        self._require_open()
        if not isinstance(node, GraphNode):
            raise TypeError(f"graph[...] takes a GraphNode, not {type(node).__name__}")
        if node._node is None:
            raise TypeError("the entry node of a GraphDefinition has no executable view")
        node._check_valid()
        for node_cls, view_cls in _VIEWS:
            if isinstance(node, node_cls):
                return view_cls._init(self, node)
        return ExecutableGraphNode._init(self, node)

    def close(self) -> None:
        """Destroy the executable graph (idempotent).

        Launches still in flight complete; what they use stays alive until
        then.

        Raises
        ------
        CUDAError
            If ``cuGraphExecDestroy`` fails.
        """
        if self._closed:
            return
        self._closed = True
        self._acc = None  # type: ignore[assignment]  # closed
        if self._finalizer.detach() is not None:
            status = lib.cuGraphExecDestroy(self._exec)
            drain()
            check(status, "cuGraphExecDestroy")

    def launch(self, stream: Stream | GraphBuilder) -> None:
        """Launch the graph on ``stream``.

        Parameters
        ----------
        stream : Stream, GraphBuilder or object with ``__cuda_stream__``
            (a GraphBuilder captures the launch as a child graph).

        Raises
        ------
        RuntimeError
            If the graph or the stream is closed.
        CUDAError
            If the launch fails.
        """
        if self._closed:
            self._require_open()
        stream = _as_stream(stream)
        check(lib.cuGraphLaunch(self._exec, stream._handle))

    def upload(self, stream: Stream | GraphBuilder) -> None:
        """Upload the graph to the device on ``stream`` ahead of its first launch.

        Parameters
        ----------
        stream : Stream, GraphBuilder or object with ``__cuda_stream__``
        """
        self._require_open()
        stream = _as_stream(stream)
        check(lib.cuGraphUpload(self._exec, stream._handle))

    def update(self, source: GraphBuilder | GraphDefinition) -> None:
        """Update every node of this graph from ``source``, which must have the same topology.

        Parameters
        ----------
        source : GraphBuilder or GraphDefinition
            A builder that has ended building, or a definition.

        Raises
        ------
        TypeError
            If ``source`` is neither.
        ValueError
            If a builder is closed (``"Source graph builder has been
            closed."``) or has not finished building (``"Graph has not
            finished building."``).
        CUDAError
            If the driver refuses the update: ``"Graph update failed:
            <description> (<CUgraphExecUpdateResult name>)"``; ``reason``
            holds the name.

        Notes
        -----
        The graph then keeps what ``source``'s nodes use, in place of what
        its old nodes used (launches in flight keep theirs until they end).
        """
        self._require_open()
        # GraphBuilder and GraphDefinition sit above this module (they make
        # Graphs): each checks itself and hands over its graph through
        # ``_update_source``.
        try:
            update_source: Callable[[Any], Any] = type(source)._update_source
        except AttributeError:
            raise TypeError(
                f"expected GraphBuilder or GraphDefinition, got {type(source).__name__}"
            ) from None
        c_graph = update_source(source)
        # The update replaces this graph's references by the source's: the
        # executable's own attachments (node-view updates) ride along.
        uo = _retain(c_graph, self._acc)
        info = ffi.new("CUgraphExecUpdateResultInfo *")
        status = lib.cuGraphExecUpdate(self._exec, c_graph, info)
        release_temporary(c_graph, uo)
        if status:
            raise _update_error(status, info.result)

    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("Graph is closed; it cannot be used after close()")

    def _keep(self, owners: Iterable[object]) -> None:
        """Keep ``owners`` alive as long as this executable graph (node-view updates)."""
        self._acc.atts.append(_Attachment(tuple(owners)))

    @property
    def handle(self) -> int:
        """int: The address of the underlying ``CUgraphExec`` (0 after :meth:`close`)."""
        return 0 if self._closed else self._h


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _instantiate(c_graph: Any, options: GraphCompleteOptions | dict[str, Any] | None) -> Graph:
    """Instantiate ``c_graph`` as a :class:`Graph`.

    ``options``: GraphCompleteOptions, a dict (a cuda_core extension), or
    None.  The executable inherits the references of the graph's nodes
    (see ``_attachments``).
    """
    if isinstance(options, dict):
        options = GraphCompleteOptions(**options)
    drain()
    params = ffi.new("CUDA_GRAPH_INSTANTIATE_PARAMS *")
    keep = options._to_params(params) if options else None
    # The executable's own attachments (node-view updates; append-only).
    acc = _ExecAttachments()
    uo = _retain(c_graph, acc)
    out = ffi.new("CUgraphExec *")
    status = lib.cuGraphInstantiateWithParams(out, c_graph, params)
    result = params.result_out
    try:
        release_temporary(c_graph, uo)
    except CUDAError:
        if not status and result == lib.CUDA_GRAPH_INSTANTIATE_SUCCESS:
            warn_cuda("cuGraphExecDestroy", lib.cuGraphExecDestroy(out[0]))
        raise
    del keep
    if status or result != lib.CUDA_GRAPH_INSTANTIATE_SUCCESS:
        if not status and out[0] != ffi.NULL:
            warn_cuda("cuGraphExecDestroy", lib.cuGraphExecDestroy(out[0]))
        raise _instantiate_error(status, result)
    return Graph._from_exec(out[0], acc)


def _instantiate_error(status: int, result: int) -> Exception:
    """The exception for a failed instantiation, as cuda.core raises it.

    A failing status is an ordinary CUDAError; success with a result other
    than success is a RuntimeError naming the result.
    """
    if status:
        return driver_error(status)
    message = _INSTANTIATE_MESSAGES.get(result)
    if message is None:
        name = ffi.typeof("CUgraphInstantiateResult").elements.get(result, str(result))
        message = f"Graph instantiation failed with unexpected error code: {name}"
    return RuntimeError(message)


def _update_error(status: int, result: int) -> CUDAError:
    """The exception for a refused ``cuGraphExecUpdate``, as cuda.core words it."""
    err = driver_error(status)
    name = ffi.typeof("CUgraphExecUpdateResult").elements.get(result, f"result {result}")
    if not status_in(status, (lib.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,)):
        return err
    description = _UPDATE_DESCRIPTIONS.get(result, "The update failed")
    exc = CUDAError(f"Graph update failed: {description} ({name})", code=err.code, name=err.name)
    exc.reason = name  # type: ignore[attr-defined]  # only update errors carry it
    return exc


def _destroy_exec(c_exec: Any) -> None:
    """Finalizer of an executable graph that was never closed (failures warn)."""
    warn_cuda("cuGraphExecDestroy (Graph finalizer)", lib.cuGraphExecDestroy(c_exec))
