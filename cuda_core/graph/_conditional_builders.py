# SPDX-License-Identifier: Apache-2.0
"""The conditional-node builders of graph nodes: ``if_then``, ``if_else``,
``while_loop`` and ``switch``.

:class:`~cuda_core.graph.GraphNode` inherits them through
:class:`~cuda_core.graph._definition_builders._DefinitionBuilders`.  Each adds a
conditional node depending on the node it is called on; the node's bodies
are new graph definitions, viewed through the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from cuda_core._cuda_ffi import lib
from cuda_core.graph._graph_condition import GraphCondition, _conditional_params, _switch_count
from cuda_core.graph._node_params import _ctx
from cuda_core.graph._node_registry import _CLASSES
from cuda_core.graph._types import GraphConditionalType

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cuda_core.graph._conditional_nodes import IfElseNode, IfNode, SwitchNode, WhileNode
    from cuda_core.graph._graph_definition import GraphDefinition

__all__: list[str] = []


class _ConditionalBuilders:
    """Conditional-node builders; they use the node's ``_gdef``, ``_add`` and ``_check_valid``."""

    __slots__ = ()

    _gdef: GraphDefinition

    if TYPE_CHECKING:

        def _check_valid(self) -> None: ...

        def _add(
            self, owners: Iterable[object], add: Callable[[Any, Any, Any, int], int]
        ) -> Any: ...

    def if_then(self, condition: GraphCondition) -> IfNode:
        """Add an ``if`` node; its body (:attr:`IfNode.then`) runs when ``condition`` != 0.

        Returns
        -------
        IfNode
        """
        node: IfNode = self._conditional(condition, GraphConditionalType.IF, 1, "IfNode", (12, 3))
        return node

    def if_else(self, condition: GraphCondition) -> IfElseNode:
        """Add an ``if``/``else`` node (bodies :attr:`IfElseNode.then` and ``else_``).

        Returns
        -------
        IfElseNode
        """
        node: IfElseNode = self._conditional(
            condition, GraphConditionalType.IF, 2, "IfElseNode", (12, 8)
        )
        return node

    def while_loop(self, condition: GraphCondition) -> WhileNode:
        """Add a ``while`` node; its body (:attr:`WhileNode.body`) repeats while ``condition`` != 0.

        Returns
        -------
        WhileNode
        """
        node: WhileNode = self._conditional(
            condition, GraphConditionalType.WHILE, 1, "WhileNode", (12, 3)
        )
        return node

    def switch(self, condition: GraphCondition, count: int) -> SwitchNode:
        """Add a ``switch`` node with ``count`` bodies (:attr:`SwitchNode.branches`).

        The body whose index equals ``condition`` runs; none if it is out of
        range.

        Returns
        -------
        SwitchNode
        """
        count = _switch_count(count)
        node: SwitchNode = self._conditional(
            condition, GraphConditionalType.SWITCH, count, "SwitchNode", (12, 8)
        )
        return node

    def _conditional(
        self,
        condition: object,
        kind: GraphConditionalType,
        size: int,
        name: str,
        min_driver: tuple[int, int],
    ) -> Any:
        self._check_valid()
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                "condition must be a GraphCondition (from create_condition()), got "
                f"{type(condition).__name__}"
            )
        # As in cuda.core, no driver version check here: an old driver refuses the node.
        c_type = {
            GraphConditionalType.IF: lib.CU_GRAPH_COND_TYPE_IF,
            GraphConditionalType.WHILE: lib.CU_GRAPH_COND_TYPE_WHILE,
            GraphConditionalType.SWITCH: lib.CU_GRAPH_COND_TYPE_SWITCH,
        }[kind]
        params = _conditional_params(condition, c_type, size, _ctx())
        c_graph = self._gdef._graph
        c_node = self._add((), lambda out, g, deps, n: lib.cuGraphAddNode(out, g, deps, n, params))
        node = _CLASSES[name]._make(self._gdef, c_node, condition=condition, cond_type=kind)
        box = self._gdef._box
        bodies = [params.conditional.phGraph_out[i] for i in range(size)]
        for body in bodies:
            box.add_child(c_graph, c_node, body)
        node._branches = tuple(
            _CLASSES["GraphDefinition"]._view(body, box, node) for body in bodies
        )
        return node
