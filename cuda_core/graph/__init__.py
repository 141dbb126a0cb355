# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs: capture (:class:`GraphBuilder`), explicit construction
(:class:`GraphDefinition`, :class:`GraphNode`) and execution (:class:`Graph`).

The API of NVIDIA's ``cuda.core.graph``.
"""

from __future__ import annotations

from cuda_core.graph import _graph, _graph_builder, _graph_definition, _graph_node, _types
from cuda_core.graph._graph import *  # noqa: F403
from cuda_core.graph._graph_builder import *  # noqa: F403
from cuda_core.graph._graph_definition import *  # noqa: F403
from cuda_core.graph._graph_node import *  # noqa: F403
from cuda_core.graph._types import *  # noqa: F403

__all__ = (
    _graph_builder.__all__
    + _graph.__all__
    + _graph_node.__all__
    + _graph_definition.__all__
    + _types.__all__
)
