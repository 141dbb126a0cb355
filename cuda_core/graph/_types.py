# SPDX-License-Identifier: Apache-2.0
"""Enumerations used by the graph API.

:class:`GraphConditionalType` and :class:`GraphMemoryType` are string
enumerations (members compare equal to their values, so ``"if"`` and
``"device"`` are accepted wherever a member is).  :class:`CUgraphNodeType`
mirrors the driver's ``CUgraphNodeType``; it is an ``IntEnum``, so it also
compares equal to the plain driver values.
"""

from __future__ import annotations

import enum

from cuda_core.typing import _register, _StrEnum

__all__ = ["CUgraphNodeType", "ConditionalType", "GraphConditionalType", "GraphMemoryType"]


class GraphConditionalType(_StrEnum):
    """Kind of a conditional graph node.

    * ``IF`` -- runs its body (or, with two branches, the first body) when
      the condition is non-zero, the second body otherwise.
    * ``WHILE`` -- runs its body repeatedly while the condition is non-zero.
    * ``SWITCH`` -- runs the body whose index equals the condition (none if
      it is out of range).
    """

    IF = "if"
    WHILE = "while"
    SWITCH = "switch"


#: Alias of :class:`GraphConditionalType` (its name in ``cuda.core.graph``).
ConditionalType = GraphConditionalType


class GraphMemoryType(_StrEnum):
    """Kind of memory an allocation node provides.

    * ``DEVICE`` -- device memory of the allocating device.
    * ``HOST`` -- pinned host memory (not supported on every system).
    * ``MANAGED`` -- managed (unified) memory (needs CUDA 13).
    """

    DEVICE = "device"
    HOST = "host"
    MANAGED = "managed"


class CUgraphNodeType(enum.IntEnum):
    """Type of a graph node, with the values of the driver's ``CUgraphNodeType``."""

    CU_GRAPH_NODE_TYPE_KERNEL = 0
    CU_GRAPH_NODE_TYPE_MEMCPY = 1
    CU_GRAPH_NODE_TYPE_MEMSET = 2
    CU_GRAPH_NODE_TYPE_HOST = 3
    CU_GRAPH_NODE_TYPE_GRAPH = 4
    CU_GRAPH_NODE_TYPE_EMPTY = 5
    CU_GRAPH_NODE_TYPE_WAIT_EVENT = 6
    CU_GRAPH_NODE_TYPE_EVENT_RECORD = 7
    CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL = 8
    CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT = 9
    CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10
    CU_GRAPH_NODE_TYPE_MEM_FREE = 11
    CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = 12
    CU_GRAPH_NODE_TYPE_CONDITIONAL = 13


_register(GraphConditionalType, GraphMemoryType)
