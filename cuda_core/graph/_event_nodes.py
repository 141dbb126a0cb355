# SPDX-License-Identifier: Apache-2.0
"""Event nodes of a graph definition: :class:`EventRecordNode` and :class:`EventWaitNode`.

Added by :meth:`GraphNode.record <cuda_core.graph.GraphNode.record>` and
:meth:`GraphNode.wait <cuda_core.graph.GraphNode.wait>`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import lib
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_params import _require_event
from cuda_core.graph._node_registry import _register

if TYPE_CHECKING:
    from cuda_core._event import Event

__all__ = ["EventRecordNode", "EventWaitNode"]


class _EventNode(GraphNode):
    """Base of the event nodes: the event they record or wait for."""

    __slots__ = ("_event",)
    _extra = ("_event",)
    _event: Event | None

    @property
    def event(self) -> Event | None:
        """Event or None: The event (None when the node was not made through cuda_core).

        The node keeps the ``CUevent`` alive, not this object's claim on it:
        closing the Event leaves the event usable by the graph.
        """
        return self._event


@_register(lib.CU_GRAPH_NODE_TYPE_EVENT_RECORD)
class EventRecordNode(_EventNode):
    """A node recording an event."""

    __slots__ = ()

    def update(self, event: Event) -> None:
        """Record ``event`` instead (future instantiations only; a cuda_core extension)."""
        self._check_valid()
        claim = _require_event(event)
        c_event = event._handle
        self._set_params((claim,), lambda: lib.cuGraphEventRecordNodeSetEvent(self._node, c_event))
        self._event = event


@_register(lib.CU_GRAPH_NODE_TYPE_WAIT_EVENT)
class EventWaitNode(_EventNode):
    """A node waiting for an event."""

    __slots__ = ()

    def update(self, event: Event) -> None:
        """Wait for ``event`` instead (future instantiations only; a cuda_core extension)."""
        self._check_valid()
        claim = _require_event(event)
        c_event = event._handle
        self._set_params((claim,), lambda: lib.cuGraphEventWaitNodeSetEvent(self._node, c_event))
        self._event = event
