# SPDX-License-Identifier: Apache-2.0
"""Options of graph instantiation and DOT output: :class:`GraphCompleteOptions`
and :class:`GraphDebugPrintOptions`.

Both are taken as an instance or a dict by ``complete()``/``instantiate()``
and ``debug_dot_print()`` of :class:`~cuda_core.graph.GraphBuilder` and
:class:`~cuda_core.graph.GraphDefinition`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from cuda_core._cuda_ffi import lib
from cuda_core._errors import check
from cuda_core._stream import Stream, _as_stream
from cuda_core._utils import check_or_create_options

__all__ = ["GraphCompleteOptions", "GraphDebugPrintOptions"]

# The driver flag of each GraphDebugPrintOptions field.
_DOT_FLAGS = {
    "verbose": lib.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE,
    "runtime_types": lib.CU_GRAPH_DEBUG_DOT_FLAGS_RUNTIME_TYPES,
    "kernel_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_PARAMS,
    "memcpy_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_MEMCPY_NODE_PARAMS,
    "memset_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_MEMSET_NODE_PARAMS,
    "host_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_HOST_NODE_PARAMS,
    "event_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_EVENT_NODE_PARAMS,
    "ext_semas_signal_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_SIGNAL_NODE_PARAMS,
    "ext_semas_wait_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_EXT_SEMAS_WAIT_NODE_PARAMS,
    "kernel_node_attributes": lib.CU_GRAPH_DEBUG_DOT_FLAGS_KERNEL_NODE_ATTRIBUTES,
    "handles": lib.CU_GRAPH_DEBUG_DOT_FLAGS_HANDLES,
    "mem_alloc_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_MEM_ALLOC_NODE_PARAMS,
    "mem_free_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_MEM_FREE_NODE_PARAMS,
    "batch_mem_op_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_BATCH_MEM_OP_NODE_PARAMS,
    "extra_topo_info": lib.CU_GRAPH_DEBUG_DOT_FLAGS_EXTRA_TOPO_INFO,
    "conditional_node_params": lib.CU_GRAPH_DEBUG_DOT_FLAGS_CONDITIONAL_NODE_PARAMS,
}


@dataclass
class GraphDebugPrintOptions:
    """Options for ``debug_dot_print()`` (which details the DOT file shows).

    Every field is a bool, False by default, and maps to one
    ``CU_GRAPH_DEBUG_DOT_FLAGS_*`` flag of ``cuGraphDebugDotPrint``.

    Attributes
    ----------
    verbose : bool
        Output all debug data, as if every flag were set.
    runtime_types : bool
        Use CUDA runtime structures for the output.
    kernel_node_params : bool
        Add kernel parameter values.
    memcpy_node_params : bool
        Add memcpy parameter values.
    memset_node_params : bool
        Add memset parameter values.
    host_node_params : bool
        Add host node parameter values.
    event_node_params : bool
        Add event parameter values.
    ext_semas_signal_node_params : bool
        Add external semaphore signal parameter values.
    ext_semas_wait_node_params : bool
        Add external semaphore wait parameter values.
    kernel_node_attributes : bool
        Add kernel node attributes.
    handles : bool
        Add node handles and every kernel function handle.
    mem_alloc_node_params : bool
        Add memory allocation parameter values.
    mem_free_node_params : bool
        Add memory free parameter values.
    batch_mem_op_node_params : bool
        Add batch memory operation parameter values.
    extra_topo_info : bool
        Add edge numbering information.
    conditional_node_params : bool
        Add conditional node parameter values.

    Raises
    ------
    TypeError
        If a field is not a bool.
    """

    verbose: bool = False
    runtime_types: bool = False
    kernel_node_params: bool = False
    memcpy_node_params: bool = False
    memset_node_params: bool = False
    host_node_params: bool = False
    event_node_params: bool = False
    ext_semas_signal_node_params: bool = False
    ext_semas_wait_node_params: bool = False
    kernel_node_attributes: bool = False
    handles: bool = False
    mem_alloc_node_params: bool = False
    mem_free_node_params: bool = False
    batch_mem_op_node_params: bool = False
    extra_topo_info: bool = False
    conditional_node_params: bool = False

    def __post_init__(self):
        for f in fields(self):
            _check_bool(self, f.name, "GraphDebugPrintOptions")

    def _to_flags(self):
        """Return the ``cuGraphDebugDotPrint`` flags bitmask for these options."""
        flags = 0
        for name, flag in _DOT_FLAGS.items():
            if getattr(self, name):
                flags |= flag
        return flags


@dataclass
class GraphCompleteOptions:
    """Options for instantiating a graph (``complete()``/``instantiate()``).

    Attributes
    ----------
    auto_free_on_launch : bool
        Free the graph's unfreed allocations before each relaunch (default
        False).
    upload_stream : Stream, optional
        Upload the graph on this stream as part of instantiation (default
        None: upload on first launch).
    device_launch : bool
        Make the graph launchable from the device (needs unified addressing;
        cannot be combined with ``auto_free_on_launch``). Default False.
    use_node_priority : bool
        Run nodes with their own priority attributes instead of the launch
        stream's priority (default False).

    Raises
    ------
    TypeError
        If a flag is not a bool, or ``upload_stream`` is not a stream.
    ValueError
        If both ``device_launch`` and ``auto_free_on_launch`` are set.
    """

    auto_free_on_launch: bool = False
    upload_stream: Stream | None = None
    device_launch: bool = False
    use_node_priority: bool = False

    def __post_init__(self):
        for name in ("auto_free_on_launch", "device_launch", "use_node_priority"):
            _check_bool(self, name, "GraphCompleteOptions")
        s = self.upload_stream
        # A GraphBuilder passes through its __cuda_stream__.
        if s is not None and not isinstance(s, Stream):
            if not hasattr(s, "__cuda_stream__"):
                raise TypeError(
                    "GraphCompleteOptions.upload_stream must be a Stream, an object implementing "
                    f"__cuda_stream__, or None, not {type(s).__name__}"
                )
        if self.device_launch and self.auto_free_on_launch:
            raise ValueError(
                "GraphCompleteOptions: device_launch cannot be combined with auto_free_on_launch"
            )

    def _to_params(self, params):
        """Fill a ``CUDA_GRAPH_INSTANTIATE_PARAMS`` cdata; return what must stay alive."""
        flags = 0
        keep = None
        if self.auto_free_on_launch:
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        if self.upload_stream is not None:
            keep = _as_stream(self.upload_stream, "GraphCompleteOptions.upload_stream")
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
            params.hUploadStream = keep._handle
        if self.device_launch:
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
        if self.use_node_priority:
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
        params.flags = flags
        return keep


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _check_bool(obj, name, cls_name):
    value = getattr(obj, name)
    if isinstance(value, bool):
        return
    if type(value) is int and value in (0, 1):
        setattr(obj, name, bool(value))
        return
    raise TypeError(
        f"{cls_name}.{name} must be a bool (True or False), got {value!r} of type "
        f"{type(value).__name__}"
    )


def _dot_print(c_graph, path, options):
    opts = check_or_create_options(GraphDebugPrintOptions, options, "debug print options")
    try:
        b_path = os.fsencode(path)
    except TypeError:
        raise TypeError(
            f"path must be a str, bytes or os.PathLike, not {type(path).__name__}"
        ) from None
    if not b_path or b"\0" in b_path:
        raise ValueError(f"invalid path for the DOT file: {path!r}")
    check(lib.cuGraphDebugDotPrint(c_graph, b_path, opts._to_flags()))
