# SPDX-License-Identifier: Apache-2.0
"""Conditional nodes of a graph definition: ``if``, ``if``/``else``, ``while`` and ``switch``.

:class:`ConditionalNode` and its kinds :class:`IfNode`, :class:`IfElseNode`,
:class:`WhileNode` and :class:`SwitchNode`, added by
:meth:`GraphNode.if_then <cuda_core.graph.GraphNode.if_then>`,
:meth:`~cuda_core.graph.GraphNode.if_else`,
:meth:`~cuda_core.graph.GraphNode.while_loop` and
:meth:`~cuda_core.graph.GraphNode.switch`.  Each holds its condition and the
views of its body graphs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuda_core._cuda_ffi import lib
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_registry import _register

if TYPE_CHECKING:
    from cuda_core.graph._graph_condition import GraphCondition
    from cuda_core.graph._graph_definition import GraphDefinition
    from cuda_core.graph._types import GraphConditionalType

__all__ = ["ConditionalNode", "IfElseNode", "IfNode", "SwitchNode", "WhileNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_CONDITIONAL)
class ConditionalNode(GraphNode):
    """A conditional node (base of :class:`IfNode`, :class:`IfElseNode`,
    :class:`WhileNode` and :class:`SwitchNode`).

    A conditional node found in a graph that was not built through
    cuda_core (e.g. by :meth:`GraphDefinition.nodes`) is of this class, with
    ``condition`` and ``cond_type`` None and no ``branches``.
    """

    __slots__ = ("_condition", "_cond_type", "_branches")
    _extra = ("_condition", "_cond_type", "_branches")
    _condition: GraphCondition | None
    _cond_type: GraphConditionalType | None
    # None on a node not made through cuda_core (no branches then)
    _branches: tuple[GraphDefinition, ...]

    def _repr_fields(self) -> str:
        if self._condition is None:  # a node found in the graph: no condition known
            return ""
        return f" condition={self._condition.handle:#x}"

    @property
    def condition(self) -> GraphCondition | None:
        """GraphCondition or None: The condition controlling the node."""
        return self._condition

    @property
    def cond_type(self) -> GraphConditionalType | None:
        """GraphConditionalType or None: ``"if"``, ``"while"`` or ``"switch"``."""
        return self._cond_type

    @property
    def branches(self) -> tuple[GraphDefinition, ...]:
        """tuple of GraphDefinition: The body graphs (views owned by this node)."""
        return self._branches or ()


@_register()
class IfNode(ConditionalNode):
    """An ``if`` node."""

    __slots__ = ()

    @property
    def then(self) -> GraphDefinition:
        """GraphDefinition: The body run when the condition is non-zero."""
        return self._branches[0]


@_register()
class IfElseNode(ConditionalNode):
    """An ``if``/``else`` node."""

    __slots__ = ()

    @property
    def then(self) -> GraphDefinition:
        """GraphDefinition: The body run when the condition is non-zero."""
        return self._branches[0]

    @property
    def else_(self) -> GraphDefinition:
        """GraphDefinition: The body run when the condition is zero."""
        return self._branches[1]


@_register()
class WhileNode(ConditionalNode):
    """A ``while`` node."""

    __slots__ = ()

    @property
    def body(self) -> GraphDefinition:
        """GraphDefinition: The loop body."""
        return self._branches[0]


@_register()
class SwitchNode(ConditionalNode):
    """A ``switch`` node (one body per case in :attr:`branches`)."""

    __slots__ = ()
