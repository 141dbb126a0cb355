# SPDX-License-Identifier: Apache-2.0
"""CUDA graphs: capture (:class:`GraphBuilder`), explicit construction
(:class:`GraphDefinition`, :class:`GraphNode`) and execution (:class:`Graph`).

The API of NVIDIA's ``cuda.core.graph``.
"""

from __future__ import annotations

from cuda_core.graph import (
    _capture,
    _capture_builders,
    _child_graph_node,
    _conditional_nodes,
    _definition_builders,
    _event_nodes,
    _executable_nodes,
    _graph,
    _graph_builder,
    _graph_condition,
    _graph_definition,
    _graph_node,
    _graph_options,
    _host_callback_node,
    _kernel_node,
    _memory_nodes,
    _node_params,
    _types,
)
from cuda_core.graph._capture import *  # noqa: F403
from cuda_core.graph._capture_builders import *  # noqa: F403
from cuda_core.graph._child_graph_node import *  # noqa: F403
from cuda_core.graph._conditional_nodes import *  # noqa: F403
from cuda_core.graph._definition_builders import *  # noqa: F403
from cuda_core.graph._event_nodes import *  # noqa: F403
from cuda_core.graph._executable_nodes import *  # noqa: F403
from cuda_core.graph._graph import *  # noqa: F403
from cuda_core.graph._graph_builder import *  # noqa: F403
from cuda_core.graph._graph_condition import *  # noqa: F403
from cuda_core.graph._graph_definition import *  # noqa: F403
from cuda_core.graph._graph_node import *  # noqa: F403
from cuda_core.graph._graph_options import *  # noqa: F403
from cuda_core.graph._host_callback_node import *  # noqa: F403
from cuda_core.graph._kernel_node import *  # noqa: F403
from cuda_core.graph._memory_nodes import *  # noqa: F403
from cuda_core.graph._node_params import *  # noqa: F403
from cuda_core.graph._types import *  # noqa: F403

__all__ = (
    _capture_builders.__all__
    + _capture.__all__
    + _child_graph_node.__all__
    + _conditional_nodes.__all__
    + _event_nodes.__all__
    + _executable_nodes.__all__
    + _graph.__all__
    + _graph_builder.__all__
    + _graph_condition.__all__
    + _graph_definition.__all__
    + _graph_node.__all__
    + _graph_options.__all__
    + _host_callback_node.__all__
    + _kernel_node.__all__
    + _memory_nodes.__all__
    + _definition_builders.__all__
    + _node_params.__all__
    + _types.__all__
)

# Read-only properties fail as on cuda.core's classes (see cuda_core._read_only).
from cuda_core._read_only import seal_read_only as _seal_read_only  # noqa: E402

_seal_read_only()
