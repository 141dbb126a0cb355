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

from cuda_core._cuda_ffi import lib
from cuda_core.typing import GraphConditionalType, GraphMemoryType

__all__ = ["CUgraphNodeType", "ConditionalType", "GraphConditionalType", "GraphMemoryType"]


#: Alias of :class:`GraphConditionalType` (its name in ``cuda.core.graph``).
ConditionalType = GraphConditionalType


class CUgraphNodeType(enum.IntEnum):
    """Type of a graph node, with the values of the driver's ``CUgraphNodeType``."""

    CU_GRAPH_NODE_TYPE_KERNEL = lib.CU_GRAPH_NODE_TYPE_KERNEL
    CU_GRAPH_NODE_TYPE_MEMCPY = lib.CU_GRAPH_NODE_TYPE_MEMCPY
    CU_GRAPH_NODE_TYPE_MEMSET = lib.CU_GRAPH_NODE_TYPE_MEMSET
    CU_GRAPH_NODE_TYPE_HOST = lib.CU_GRAPH_NODE_TYPE_HOST
    CU_GRAPH_NODE_TYPE_GRAPH = lib.CU_GRAPH_NODE_TYPE_GRAPH
    CU_GRAPH_NODE_TYPE_EMPTY = lib.CU_GRAPH_NODE_TYPE_EMPTY
    CU_GRAPH_NODE_TYPE_WAIT_EVENT = lib.CU_GRAPH_NODE_TYPE_WAIT_EVENT
    CU_GRAPH_NODE_TYPE_EVENT_RECORD = lib.CU_GRAPH_NODE_TYPE_EVENT_RECORD
    CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL = lib.CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL
    CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT = lib.CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT
    CU_GRAPH_NODE_TYPE_MEM_ALLOC = lib.CU_GRAPH_NODE_TYPE_MEM_ALLOC
    CU_GRAPH_NODE_TYPE_MEM_FREE = lib.CU_GRAPH_NODE_TYPE_MEM_FREE
    CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = lib.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
    CU_GRAPH_NODE_TYPE_CONDITIONAL = lib.CU_GRAPH_NODE_TYPE_CONDITIONAL
