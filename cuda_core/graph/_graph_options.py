# SPDX-License-Identifier: Apache-2.0
"""Options of graph instantiation and DOT output: :class:`GraphCompleteOptions`
and :class:`GraphDebugPrintOptions`.

As in ``cuda.core``, both are plain dataclasses: construction accepts any
values, and each field is read by its truth value when the options are used
(``complete()``/``instantiate()``, ``debug_dot_print()``).  cuda_core also
takes them as a dict there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._stream import Stream

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
    ``CU_GRAPH_DEBUG_DOT_FLAGS_*`` flag of ``cuGraphDebugDotPrint``.  Values
    are not checked: a field sets its flag when it is true.

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

    def _to_flags(self) -> int:
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
        None: upload on first launch).  Used when true; it must then have a
        ``handle`` (a :class:`~cuda_core.Stream`): anything else raises
        AttributeError at instantiation, as in ``cuda.core``.
    device_launch : bool
        Make the graph launchable from the device (needs unified addressing;
        cannot be combined with ``auto_free_on_launch``). Default False.
    use_node_priority : bool
        Run nodes with their own priority attributes instead of the launch
        stream's priority (default False).

    Notes
    -----
    Nothing is checked at construction; each flag counts by its truth value
    at instantiation, where the driver refuses combinations it does not
    support (``device_launch`` with ``auto_free_on_launch``:
    :class:`~cuda_core.CUDAError` ``CUDA_ERROR_INVALID_VALUE``).
    """

    auto_free_on_launch: bool = False
    upload_stream: Stream | None = None
    device_launch: bool = False
    use_node_priority: bool = False

    def _to_params(self, params: Any) -> Stream | None:
        """Fill a ``CUDA_GRAPH_INSTANTIATE_PARAMS`` cdata; return what must stay alive."""
        flags = 0
        keep = None
        if self.auto_free_on_launch:
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        if self.upload_stream:
            keep = self.upload_stream
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
            params.hUploadStream = ffi.cast("CUstream", keep.handle)
        if self.device_launch:
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
        if self.use_node_priority:
            flags |= lib.CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY
        params.flags = flags
        return keep


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _dot_print(
    c_graph: Any,
    path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
    options: GraphDebugPrintOptions | dict[str, bool] | None,
) -> None:
    """Write ``c_graph`` as DOT to ``path``.

    ``options``: GraphDebugPrintOptions, a dict (a cuda_core extension), or
    something false (no flags).  ``path``: str, or (a cuda_core extension)
    bytes or os.PathLike.
    """
    if isinstance(options, dict):
        options = GraphDebugPrintOptions(**options)
    flags = options._to_flags() if options else 0
    try:
        b_path = os.fsencode(path)
    except TypeError:
        raise TypeError(
            f"path must be a str, bytes or os.PathLike, not {type(path).__name__}"
        ) from None
    if not b_path or b"\0" in b_path:
        raise ValueError(f"invalid path for the DOT file: {path!r}")
    check(lib.cuGraphDebugDotPrint(c_graph, b_path, flags))
