# SPDX-License-Identifier: Apache-2.0
"""Event nodes of a graph definition: :class:`EventRecordNode` and :class:`EventWaitNode`.

Added by :meth:`GraphNode.record <cuda_core.graph.GraphNode.record>` and
:meth:`GraphNode.wait <cuda_core.graph.GraphNode.wait>`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_params import _require_event
from cuda_core.graph._node_registry import _register

if TYPE_CHECKING:
    from cuda_core._event import Event

__all__ = ["EventRecordNode", "EventWaitNode"]


class _EventNode(GraphNode):
    """Base of the event nodes: the event they record or wait for."""

    __slots__ = ("_event", "_event_h")
    _extra = ("_event", "_event_h")
    _event: Event | None
    _event_h: int  # the CUevent the node records or waits for

    def _repr_fields(self) -> str:
        return f" event={self._event_h:#x}"

    def _load(self) -> None:
        out = ffi.new("CUevent *")
        get = (
            lib.cuGraphEventRecordNodeGetEvent
            if isinstance(self, EventRecordNode)
            else lib.cuGraphEventWaitNodeGetEvent
        )
        check(get(self._node, out))
        self._event_h = as_int_handle(out[0])

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
