# SPDX-License-Identifier: Apache-2.0
"""The registry of graph node classes, filled as their modules are imported.

The node classes (and :class:`~cuda_core.graph.GraphDefinition`) derive from
:class:`~cuda_core.graph.GraphNode` or hold its views, so they live in
modules above the builders that make them: each registers itself here with
:func:`_register`, and the builders look classes up by name in
``_CLASSES`` (and nodes found in a graph by their ``CUgraphNodeType`` in
``_BY_TYPE``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from cuda_core.graph._graph_definition import GraphDefinition

    _C = TypeVar("_C", bound=type)

__all__: list[str] = []

# The registered classes, by name.
_CLASSES: dict[str, Any] = {}
# CUgraphNodeType -> the node class for nodes of that type found in a graph.
_BY_TYPE: dict[int, Any] = {}


def _require_definition(value: object, what: str) -> GraphDefinition:
    """Return ``value`` if it is a valid GraphDefinition; raise TypeError otherwise."""
    if not isinstance(value, _CLASSES["GraphDefinition"]):
        raise TypeError(f"{what} must be a GraphDefinition, not {type(value).__name__}")
    gdef: GraphDefinition = value
    gdef._check_valid()
    return gdef


def _register(c_type: int | None = None) -> Callable[[_C], _C]:
    """Class decorator: register a class by name (and as the class of node type ``c_type``)."""

    def register(cls: _C) -> _C:
        _CLASSES[cls.__name__] = cls
        if c_type is not None:
            _BY_TYPE[c_type] = cls
        return cls

    return register
