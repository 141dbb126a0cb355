# SPDX-License-Identifier: Apache-2.0
"""Host callback nodes of a graph definition: :class:`HostCallbackNode`.

Added by :meth:`GraphNode.callback <cuda_core.graph.GraphNode.callback>`; the
callable is resolved and kept alive as ``_attachments`` describes.
"""

from __future__ import annotations

from typing import Any, Callable

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.graph._attachments import resolve_host_callback
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_registry import _register

__all__ = ["HostCallbackNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_HOST)
class HostCallbackNode(GraphNode):
    """A host callback node.

    As in ``cuda.core``, :attr:`callback` here is the property holding the
    node's callable, which hides the :meth:`GraphNode.callback` builder:
    add a callback after this node with ``node.join().callback(fn)``.
    """

    __slots__ = ("_callback",)
    _extra = ("_callback",)
    _callback: Callable[[], object] | None

    def _repr_fields(self) -> str:
        if self._callback is not None:
            return f" callback={getattr(self._callback, '__name__', '?')}"
        fn = 0
        if not self._destroyed:
            params = ffi.new("CUDA_HOST_NODE_PARAMS *")
            if lib.cuGraphHostNodeGetParams(self._node, params) == 0:
                fn = as_int_handle(params.fn)
        return f" cfunc={fn:#x}"

    @property
    def callback(self) -> Callable[[], object] | None:  # type: ignore[override]  # as in cuda.core
        """callable or None: The Python callable (None for a ctypes function pointer)."""
        return self._callback

    def update(self, fn: Callable[..., Any], *, user_data: int | bytes | None = None) -> None:
        """Run ``fn`` instead (future instantiations only; a cuda_core extension).

        See :meth:`GraphNode.callback`.
        """
        self._check_valid()
        cb = resolve_host_callback(fn, user_data)
        params = ffi.new("CUDA_HOST_NODE_PARAMS *")
        params.fn = cb.c_fn
        params.userData = cb.c_data
        self._set_params(cb.owners, lambda: lib.cuGraphHostNodeSetParams(self._node, params))
        self._callback = cb.callable
