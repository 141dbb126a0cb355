# SPDX-License-Identifier: Apache-2.0
"""Stream capture underneath :class:`~cuda_core.graph.GraphBuilder`.

The kinds and states of builders, queries of a stream's capture, and the
safety-net finalizer that ends a capture left running by a builder that was
never closed.
"""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAWarning, check, in_forked_child, warn_cuda

if TYPE_CHECKING:
    from cuda_core._stream import Stream

__all__: list[str] = []

# Kinds of builders and their capture states.
_PRIMARY, _FORKED, _BODY = 0, 1, 2
_NOT_STARTED, _CAPTURING, _ENDED = 0, 1, 2

_MODES = {
    "global": lib.CU_STREAM_CAPTURE_MODE_GLOBAL,
    "thread_local": lib.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
    "relaxed": lib.CU_STREAM_CAPTURE_MODE_RELAXED,
}
_ACTIVE = lib.CU_STREAM_CAPTURE_STATUS_ACTIVE
_NONE = lib.CU_STREAM_CAPTURE_STATUS_NONE
_INVALIDATED = lib.CU_STREAM_CAPTURE_STATUS_INVALIDATED
_tls = threading.local()


def _capture_outs() -> tuple[Any, Any, Any, Any]:
    try:
        cached: tuple[Any, Any, Any, Any] = _tls.capture
        return cached
    except AttributeError:
        outs = _tls.capture = (
            ffi.new("CUstreamCaptureStatus *"),
            ffi.new("CUgraph *"),
            ffi.new("const CUgraphNode **"),
            ffi.new("size_t *"),
        )
        return outs


def _capture_info(c_stream: Any) -> tuple[int, Any, Any, int]:
    """Return ``(status, CUgraph, dependencies pointer, count)`` of a stream's capture.

    The dependencies pointer is valid until the next API call on the stream.
    """
    st, graph, deps, n = _capture_outs()
    check(lib.cuStreamGetCaptureInfo(c_stream, st, ffi.NULL, graph, deps, n))
    return st[0], graph[0], deps[0], n[0]


def _capture_status(c_stream: Any) -> int:
    st = _capture_outs()[0]
    check(lib.cuStreamIsCapturing(c_stream, st))
    status: int = st[0]
    return status


class _Cell:
    """What a builder's finalizer needs (never the builder itself)."""

    __slots__ = ("stream", "owns", "kind", "box", "capturing")

    def __init__(self, stream: Stream, owns: bool, kind: int, box: Any, capturing: bool) -> None:
        self.stream = stream
        self.owns = owns
        self.kind = kind
        self.box = box
        self.capturing = capturing


def _finalize_builder(cell: _Cell) -> None:
    """Finalizer: end a capture left running by a builder that was never closed.

    In a child created by ``fork()`` the capture and the stream belong to the
    parent: left alone.
    """
    if in_forked_child():
        return
    stream = cell.stream
    if cell.capturing and not stream.is_closed:
        out = ffi.new("CUgraph *")
        status = lib.cuStreamEndCapture(stream._handle, out)
        # An invalidated capture ends here too; its error was raised when
        # the capture broke, and there is no partial graph to destroy.
        warn_cuda(
            "cuStreamEndCapture (GraphBuilder finalizer)",
            status,
            done=("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",),
        )
        if cell.kind == _PRIMARY:
            if cell.box is not None:
                cell.box.closed = True
            if not status and out[0] != ffi.NULL:
                warn_cuda("cuGraphDestroy (GraphBuilder finalizer)", lib.cuGraphDestroy(out[0]))
    if cell.owns and not stream.is_closed:
        try:
            stream.close()
        except Exception as exc:  # noqa: BLE001 - a finalizer must not raise
            warnings.warn(
                f"closing the stream of a garbage-collected GraphBuilder failed: {exc}",
                CUDAWarning,
                stacklevel=2,
            )
