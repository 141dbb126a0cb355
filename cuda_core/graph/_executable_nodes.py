# SPDX-License-Identifier: Apache-2.0
"""Views of an executable graph's nodes: ``graph[node]``.

A view changes one node of a :class:`~cuda_core.graph.Graph` (its kernel
arguments, copy or fill parameters, host callback, child graph or event)
without re-instantiating, and enables or disables it where the driver
allows; what the new parameters use is kept alive as long as the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._attachments import (
    resolve_host_callback,
)
from cuda_core.graph._child_graph_node import ChildGraphNode
from cuda_core.graph._event_nodes import EventRecordNode, EventWaitNode
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._host_callback_node import HostCallbackNode
from cuda_core.graph._kernel_node import KernelNode
from cuda_core.graph._memory_nodes import MemcpyNode, MemsetNode
from cuda_core.graph._node_params import (
    _ctx,
    _kernel_params,
    _memcpy_params,
    _memset_params,
    _require_event,
)
from cuda_core.graph._node_registry import _require_definition

if TYPE_CHECKING:
    from cuda_core._event import Event
    from cuda_core._kernel import Kernel
    from cuda_core._launch_config import LaunchConfig
    from cuda_core._memory._buffer import Buffer
    from cuda_core.graph._graph import Graph
    from cuda_core.graph._graph_definition import GraphDefinition

    _V = TypeVar("_V", bound="ExecutableGraphNode")

    #: A new memcpy or memset operand of an executable graph's node: a Buffer
    #: or an address, as for the graph definition, but of memory from the same
    #: context as the operand it replaces, and one-dimensional (the driver
    #: refuses the update otherwise: CUDA_ERROR_INVALID_VALUE).
    _Replacement = Buffer | int

__all__ = [
    "ExecutableChildGraphNode",
    "ExecutableEventRecordNode",
    "ExecutableEventWaitNode",
    "ExecutableGraphNode",
    "ExecutableHostCallbackNode",
    "ExecutableKernelNode",
    "ExecutableMemcpyNode",
    "ExecutableMemsetNode",
]


class ExecutableGraphNode:
    """A node as seen by one executable :class:`Graph` (from ``graph[node]``).

    Updates through a view change that executable graph only, take effect
    for its next launches, and keep what they use alive as long as it.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_graph", "_gnode")

    _graph: Graph
    _gnode: GraphNode

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("executable node views are obtained with graph[node]")

    @classmethod
    def _init(cls: type[_V], graph: Graph, node: GraphNode) -> _V:
        self = object.__new__(cls)
        self._graph = graph
        self._gnode = node
        return self

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._gnode!r} in {self._graph!r}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExecutableGraphNode):
            return NotImplemented
        return self._graph == other._graph and self._gnode == other._gnode

    def __hash__(self) -> int:
        return hash((self._graph, self._gnode))

    def _target(self) -> tuple[Any, Any]:
        """Return ``(CUgraphExec, CUgraphNode)`` after checking both are usable."""
        self._graph._require_open()
        self._gnode._check_valid()
        return self._graph._exec, self._gnode._node

    @property
    def node(self) -> GraphNode:
        """GraphNode: The definition node this view refers to."""
        return self._gnode

    @property
    def graph(self) -> Graph:
        """Graph: The executable graph."""
        return self._graph


class _Switchable(ExecutableGraphNode):
    __slots__ = ()

    @property
    def is_enabled(self) -> bool:
        """bool: Whether the node runs in launches of this graph."""
        c_exec, c_node = self._target()
        out = ffi.new("unsigned int *")
        check(lib.cuGraphNodeGetEnabled(c_exec, c_node, out))
        return bool(out[0])

    def enable(self) -> None:
        """Make the node run again in later launches."""
        c_exec, c_node = self._target()
        check(lib.cuGraphNodeSetEnabled(c_exec, c_node, 1))

    def disable(self) -> None:
        """Skip the node (as if it were empty) in later launches."""
        c_exec, c_node = self._target()
        check(lib.cuGraphNodeSetEnabled(c_exec, c_node, 0))


class ExecutableKernelNode(_Switchable):
    """A kernel node of an executable graph."""

    __slots__ = ()

    def update(
        self, *, config: LaunchConfig | dict[str, Any], kernel: Kernel, args: Iterable[Any]
    ) -> None:
        """Replace the node's launch completely: configuration, kernel and arguments.

        Parameters
        ----------
        config : LaunchConfig or dict
        kernel : Kernel
        args : sequence
            All kernel arguments (``()`` for none).
        """
        c_exec, c_node = self._target()
        if args is None:
            raise TypeError("args must be a sequence of kernel arguments (use () for none)")
        params, owners, _ = _kernel_params(config, kernel, args)
        check(lib.cuGraphExecKernelNodeSetParams(c_exec, c_node, params))
        self._graph._keep(owners)


class ExecutableMemcpyNode(_Switchable):
    """A memcpy node of an executable graph."""

    __slots__ = ()

    def update(
        self,
        *,
        dst: _Replacement,
        src: _Replacement,
        size: int,
        dst_owner: object = None,
        src_owner: object = None,
    ) -> None:
        """Replace the copy completely (see :meth:`cuda_core.graph.GraphNode.memcpy`).

        The new operands must be memory of the same context as the old, and
        one-dimensional: the driver refuses the update otherwise.
        """
        c_exec, c_node = self._target()
        params, owners = _memcpy_params(dst, src, size, dst_owner, src_owner)
        check(lib.cuGraphExecMemcpyNodeSetParams(c_exec, c_node, params, _ctx()))
        self._graph._keep(owners)


class ExecutableMemsetNode(_Switchable):
    """A memset node of an executable graph."""

    __slots__ = ()

    def update(
        self,
        *,
        dst: _Replacement,
        value: Any,
        width: int,
        height: int = 1,
        pitch: int = 0,
        dst_owner: object = None,
    ) -> None:
        """Replace the fill completely (see :meth:`cuda_core.graph.GraphNode.memset`).

        The new destination must be memory of the same context as the old, and
        one-dimensional: the driver refuses the update otherwise.
        """
        c_exec, c_node = self._target()
        params, owners = _memset_params(dst, value, width, height, pitch, dst_owner)
        check(lib.cuGraphExecMemsetNodeSetParams(c_exec, c_node, params, _ctx()))
        self._graph._keep(owners)


class ExecutableHostCallbackNode(ExecutableGraphNode):
    """A host callback node of an executable graph."""

    __slots__ = ()

    def update(self, fn: Callable[..., Any], *, user_data: int | bytes | None = None) -> None:
        """Run ``fn`` instead (see :meth:`cuda_core.graph.GraphNode.callback`)."""
        c_exec, c_node = self._target()
        cb = resolve_host_callback(fn, user_data)
        params = ffi.new("CUDA_HOST_NODE_PARAMS *")
        params.fn = cb.c_fn
        params.userData = cb.c_data
        check(lib.cuGraphExecHostNodeSetParams(c_exec, c_node, params))
        self._graph._keep(cb.owners)


class ExecutableChildGraphNode(ExecutableGraphNode):
    """A child graph node of an executable graph."""

    __slots__ = ()

    def update(self, child: GraphDefinition) -> None:
        """Run a copy of ``child`` instead (it must have the same topology).

        Parameters
        ----------
        child : GraphDefinition
        """
        c_exec, c_node = self._target()
        gdef = _require_definition(child, "child")
        # CUDA takes over the references of ``child``'s nodes.
        check(lib.cuGraphExecChildGraphNodeSetParams(c_exec, c_node, gdef._graph))


class ExecutableEventRecordNode(ExecutableGraphNode):
    """An event record node of an executable graph."""

    __slots__ = ()

    def update(self, event: Event) -> None:
        """Record ``event`` instead."""
        c_exec, c_node = self._target()
        claim = _require_event(event)
        check(lib.cuGraphExecEventRecordNodeSetEvent(c_exec, c_node, event._handle))
        self._graph._keep((claim,))


class ExecutableEventWaitNode(ExecutableGraphNode):
    """An event wait node of an executable graph."""

    __slots__ = ()

    def update(self, event: Event) -> None:
        """Wait for ``event`` instead."""
        c_exec, c_node = self._target()
        claim = _require_event(event)
        check(lib.cuGraphExecEventWaitNodeSetEvent(c_exec, c_node, event._handle))
        self._graph._keep((claim,))


_VIEWS = (
    (KernelNode, ExecutableKernelNode),
    (MemcpyNode, ExecutableMemcpyNode),
    (MemsetNode, ExecutableMemsetNode),
    (HostCallbackNode, ExecutableHostCallbackNode),
    (ChildGraphNode, ExecutableChildGraphNode),
    (EventRecordNode, ExecutableEventRecordNode),
    (EventWaitNode, ExecutableEventWaitNode),
)
