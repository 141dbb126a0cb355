# SPDX-License-Identifier: Apache-2.0
"""Conditional graph nodes' condition variables: :class:`GraphCondition`.

Also the checks and driver structs shared by the two ways of adding
conditional nodes (:class:`~cuda_core.graph.GraphBuilder` during capture and
:class:`~cuda_core.graph.GraphNode` in a definition): driver versions,
default values and switch counts.
"""

from __future__ import annotations

from typing import Any

from cuda_core._coerce import index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._loader import driver_version

__all__ = ["GraphCondition"]

_COND_ASSIGN_DEFAULT = 1  # CU_GRAPH_COND_ASSIGN_DEFAULT
_UINT_MAX = 0xFFFFFFFF


class GraphCondition:
    """A condition variable that controls conditional graph nodes.

    Made by :meth:`GraphBuilder.create_condition` or
    :meth:`GraphDefinition.create_condition
    <cuda_core.graph.GraphDefinition.create_condition>`, and passed to the
    conditional builders (``if_then``, ``if_else``, ``while_loop``,
    ``switch``).  Device code sets its value with
    ``cudaGraphSetConditional``; a GraphCondition can be passed directly as a
    kernel argument to :func:`~cuda_core.launch` (it is marshalled as its
    64-bit ``CUgraphConditionalHandle``).  Two conditions are equal when
    their handles are.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_handle", "__weakref__")

    _handle: int

    # Marks graph conditions for kernel-argument marshalling in launch():
    # they are passed as their 64-bit ``handle``.
    _cuda_core_graph_condition = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "GraphCondition objects cannot be instantiated directly; use "
            "GraphBuilder.create_condition() or GraphDefinition.create_condition()"
        )

    @classmethod
    def _from_handle(cls, handle: int) -> GraphCondition:
        self = object.__new__(cls)
        self._handle = int(handle)
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GraphCondition):
            return NotImplemented
        return self._handle == other._handle

    def __hash__(self) -> int:
        return hash((GraphCondition, self._handle))

    def __int__(self) -> int:
        return self._handle

    def __repr__(self) -> str:
        return f"<GraphCondition handle={self._handle:#x}>"

    @property
    def handle(self) -> int:
        """int: The ``CUgraphConditionalHandle`` value."""
        return self._handle


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _condition_value(value: object) -> int:
    tp = type(value)
    is_bool = isinstance(value, bool) or (
        tp.__module__ == "numpy" and tp.__name__ in ("bool", "bool_")
    )
    index = int(bool(value)) if is_bool else index_or_none(value)
    if index is None:
        raise TypeError(
            f"default_value must be an int (or bool) or None, not {type(value).__name__}"
        )
    value = index
    if not 0 <= value <= _UINT_MAX:
        raise ValueError(f"default_value must be in [0, 2**32), got {value}")
    return value


def _condition_args(default_value: object) -> tuple[int, int]:
    """Check that the driver has conditional handles; return ``(value, flags)`` for creating one."""
    _require_driver((12, 3), "conditional handles")
    if default_value is None:
        return 0, 0
    return _condition_value(default_value), _COND_ASSIGN_DEFAULT


def _create_condition(c_graph: Any, c_ctx: Any, value: int, flags: int) -> GraphCondition:
    """Create a conditional handle in ``c_graph`` (see :func:`_condition_args`)."""
    out = ffi.new("CUgraphConditionalHandle *")
    check(lib.cuGraphConditionalHandleCreate(out, c_graph, c_ctx, value, flags))
    return GraphCondition._from_handle(out[0])


def _switch_count(count: object) -> int:
    """Return ``count`` as an unsigned int (the number of cases of a switch node).

    As in ``cuda.core`` the driver judges the value (0 is refused there).
    """
    index = index_or_none(count)
    if index is None:
        raise TypeError(f"count must be an int, not {type(count).__name__}")
    if not 0 <= index <= _UINT_MAX:
        raise OverflowError(f"switch count must fit an unsigned int, got {index}")
    return index


def _conditional_params(condition: GraphCondition, c_type: int, size: int, c_ctx: Any) -> Any:
    """Return the ``CUgraphNodeParams`` of a conditional node with ``size`` bodies.

    After ``cuGraphAddNode``, ``params.conditional.phGraph_out`` holds the bodies.
    """
    params = ffi.new("CUgraphNodeParams *")
    params.type = lib.CU_GRAPH_NODE_TYPE_CONDITIONAL
    cond = params.conditional
    cond.handle = condition._handle
    cond.type = c_type
    cond.size = size
    cond.ctx = c_ctx
    return params


def _require_driver(version: int | tuple[int, int], what: str) -> None:
    """Raise RuntimeError ``"Driver version X.Y.Z does not support <what>"`` below ``version``.

    ``version`` is ``(major, minor)`` or a CUDA version int (``12030``); the
    message is worded as cuda.core words it.
    """
    if not isinstance(version, int):
        version = version[0] * 1000 + version[1] * 10
    have = driver_version()
    if have < version:
        raise RuntimeError(
            f"Driver version {have // 1000}.{have % 1000 // 10}.{have % 10} does not support {what}"
        )
