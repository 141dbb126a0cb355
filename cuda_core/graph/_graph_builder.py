# SPDX-License-Identifier: Apache-2.0
"""Building graphs by stream capture: :class:`GraphBuilder`.

A :class:`GraphBuilder` wraps a stream.  Between :meth:`~GraphBuilder.begin_building`
and :meth:`~GraphBuilder.end_building` the work submitted to it (kernel
launches, copies, fills, allocations from a
:class:`~cuda_core.GraphMemoryResource`, host callbacks) is recorded into a
graph instead of being run; :meth:`~GraphBuilder.complete` instantiates the
result as an executable :class:`~cuda_core.graph.Graph`.

There are three kinds of builders:

* *primary* builders, from :meth:`Device.create_graph_builder
  <cuda_core.Device.create_graph_builder>` or :meth:`Stream.create_graph_builder
  <cuda_core.Stream.create_graph_builder>`; they own the captured graph;
* *forked* builders, from :meth:`~GraphBuilder.split`; they capture into the
  same graph on a stream of their own, and must be joined back with
  :meth:`GraphBuilder.join` before building ends;
* *conditional-body* builders, from :meth:`~GraphBuilder.if_then`,
  :meth:`~GraphBuilder.if_else`, :meth:`~GraphBuilder.switch` and
  :meth:`~GraphBuilder.while_loop`; they capture into the body graphs of a
  conditional node (``cuStreamBeginCaptureToGraph``).

This module holds the builder's life: its states, capture, forks and
completion.  The methods that add nodes to the capture themselves
(conditional nodes, child graphs, host callbacks) are in ``_capture_builders``,
the stream-capture helpers in ``_capture``, the options in
``_graph_options``.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import cuda_core._slots as _slots
from cuda_core._coerce import index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._lifetime import Closeable
from cuda_core._stream import Stream
from cuda_core.graph._attachments import GraphBox, drain
from cuda_core.graph._capture import (
    _ACTIVE,
    _BODY,
    _CAPTURING,
    _ENDED,
    _FORKED,
    _INVALIDATED,
    _MODES,
    _NONE,
    _NOT_STARTED,
    _PRIMARY,
    _capture_info,
    _capture_status,
    _Cell,
    _finalize_builder,
)
from cuda_core.graph._capture_builders import _CaptureBuilders
from cuda_core.graph._graph import _instantiate
from cuda_core.graph._graph_definition import GraphDefinition
from cuda_core.graph._graph_options import _dot_print

if TYPE_CHECKING:
    import os

    from cuda_core.graph._graph import Graph
    from cuda_core.graph._graph_options import GraphCompleteOptions, GraphDebugPrintOptions

__all__ = ["GraphBuilder"]


class GraphBuilder(_CaptureBuilders, Closeable):
    """A graph under construction by stream capture.

    A graph groups CUDA kernels and other operations with their dependencies
    and runs them with far less launch overhead than issuing them one by one.
    Builders cannot be constructed directly: use :meth:`Device.create_graph_builder
    <cuda_core.Device.create_graph_builder>` (the builder owns a new stream)
    or :meth:`Stream.create_graph_builder
    <cuda_core.Stream.create_graph_builder>`.

    The builder implements ``__cuda_stream__``, so it can be passed as the
    ``stream`` of :func:`~cuda_core.launch`, ``Buffer.copy_to``,
    ``MemoryResource.allocate`` and friends while building: that work is
    captured.

    Notes
    -----
    Host callbacks added with :meth:`callback` are kept alive by the graph.
    Other captured work (kernels, buffers) follows the caller-owned lifetime
    of stream capture: keep what it uses alive while the graph is used (the
    explicit :class:`~cuda_core.graph.GraphDefinition` API retains them).

    Every method of a closed builder raises RuntimeError
    ``"Graph builder has been closed."`` (its :attr:`stream` is then None).

    Raises
    ------
    NotImplementedError
        On direct construction.
    """

    __slots__ = (
        "_stream",
        "_owns_stream",
        "_kind",
        "_state",
        "_box",
        "_graph",
        "_origin",
        "_forks",
        "_closed",
        "_cell",
        "_finalizer",
        "__weakref__",
    )

    _owns_stream: bool
    _origin: GraphBuilder | None
    _forks: list[Stream]
    _cell: _Cell
    _finalizer: weakref.finalize[[_Cell], GraphBuilder]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "directly creating a GraphBuilder object can be ambiguous. Please either call "
            "Device.create_graph_builder() or stream.create_graph_builder()"
        )

    @classmethod
    def _init(
        cls, stream: Stream, *, owns_stream: bool | None = None, is_stream_owner: bool | None = None
    ) -> GraphBuilder:
        """Create a primary builder capturing on ``stream``.

        ``owns_stream`` (alias ``is_stream_owner``): close the stream with
        the builder.
        """
        owns = bool(owns_stream if owns_stream is not None else is_stream_owner)
        return cls._new(stream, owns, _PRIMARY, _NOT_STARTED, None, None, None)

    @classmethod
    def _new(
        cls,
        stream: Stream,
        owns: bool,
        kind: int,
        state: int,
        box: GraphBox | None,
        c_graph: Any,
        origin: GraphBuilder | None,
    ) -> GraphBuilder:
        if not isinstance(stream, Stream):
            raise TypeError(f"stream must be a Stream, not {type(stream).__name__}")
        drain()
        self = object.__new__(cls)
        self._stream = stream
        self._owns_stream = owns
        self._kind = kind
        self._state = state
        self._box = box  # type: ignore[assignment]  # None until capture begins
        self._graph = c_graph
        self._origin = origin
        self._forks = []
        self._closed = False
        self._cell = _Cell(stream, owns, kind, box, state == _CAPTURING and kind != _FORKED)
        self._finalizer = weakref.finalize(self, _finalize_builder, self._cell)
        return self

    def __repr__(self) -> str:
        kind = ("primary", "forked", "conditional-body")[self._kind]
        state = ("not started", "building", "ended")[self._state]
        closed = " (closed)" if self._closed else ""
        return f"<GraphBuilder {kind} {state}{closed}>"

    def __cuda_stream__(self) -> tuple[int, int]:
        """Return ``(0, address)`` of the capturing stream (``__cuda_stream__`` protocol)."""
        self._require_open()
        return self._stream.__cuda_stream__()

    def close(self) -> None:
        """Destroy the graph builder (idempotent).

        A primary or conditional-body builder that is still building stops
        capturing (the partial graph is discarded); a stream created for the
        builder is destroyed.  Graphs already completed are not affected.

        Raises
        ------
        CUDAError
            If ending the capture or destroying the stream fails.  As in
            ``cuda.core``, a capture that an earlier error invalidated ends
            with ``CUDA_ERROR_STREAM_CAPTURE_INVALIDATED``; the builder is
            closed and its stream destroyed all the same.
        """
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        status = 0
        if self._state == _CAPTURING and self._kind != _FORKED:
            out = ffi.new("CUgraph *")
            status = lib.cuStreamEndCapture(self._stream._handle, out)
            if self._kind == _PRIMARY:
                self._box.closed = True  # the partial graph is discarded
                if not status and out[0] != ffi.NULL:
                    status = lib.cuGraphDestroy(out[0])
        self._state = _ENDED
        self._cell.capturing = False
        self._box = None  # type: ignore[assignment]  # closed
        self._graph = None
        error = None
        streams = self._forks + ([self._stream] if self._owns_stream else [])
        self._forks = []
        for s in streams:
            try:
                s.close()
            except Exception as exc:  # noqa: BLE001 - the first failure is raised below
                error = error or exc
        check(status, "GraphBuilder.close")
        if error is not None:
            raise error

    def begin_building(self, mode: str = "relaxed") -> GraphBuilder:
        """Begin capturing work submitted to this builder.

        Parameters
        ----------
        mode : str, optional
            How capture interacts with potentially unsafe API calls
            (``cuStreamCaptureMode``):

            - ``"global"``: prohibit them in every stream of the process;
            - ``"thread_local"``: prohibit them in streams of this thread;
            - ``"relaxed"`` (default): do not prohibit them.

        Returns
        -------
        GraphBuilder
            ``self``.

        Raises
        ------
        RuntimeError
            If the builder is closed, already building, or has finished
            (checked first, in that order).
        ValueError
            If ``mode`` is not one of the above (None included).
        """
        self._require_open()
        if self._state == _CAPTURING:
            raise RuntimeError("Graph builder is already building.")
        if self._state == _ENDED:
            raise RuntimeError("Cannot resume building after building has ended.")
        c_mode = _MODES.get(mode) if isinstance(mode, str) else None
        if c_mode is None:
            raise ValueError(f"Unsupported build mode: {mode}")
        c_stream = self._stream._handle
        if self._kind == _BODY:
            if self._box.closed:
                raise RuntimeError("the graph this conditional body belongs to was destroyed")
            check(
                lib.cuStreamBeginCaptureToGraph(
                    c_stream, self._graph, ffi.NULL, ffi.NULL, 0, c_mode
                )
            )
        else:
            check(lib.cuStreamBeginCapture(c_stream, c_mode))
            c_graph = _capture_info(c_stream)[1]
            self._graph = c_graph
            self._box = self._cell.box = GraphBox(c_graph, owned=False)
        self._state = _CAPTURING
        self._cell.capturing = True
        return self

    def end_building(self) -> GraphBuilder:
        """End capturing.

        Returns
        -------
        GraphBuilder
            ``self``, ready for :meth:`complete` (or, for a conditional
            body, done: its graph belongs to the conditional node).

        Raises
        ------
        RuntimeError
            If the builder is not building or is closed.
        CUDAError
            If the capture failed (e.g. it was invalidated by an illegal
            operation, or a forked builder was not joined), or for a forked
            builder (join it back instead): the driver refuses to end its
            capture, as in ``cuda.core``.
        """
        self._require_open()
        if self._state != _CAPTURING:
            raise RuntimeError("Graph builder is not building.")
        if self._kind == _FORKED:
            out = ffi.new("CUgraph *")
            status = lib.cuStreamEndCapture(self._stream._handle, out)
            check(status, "cuStreamEndCapture")
            self._state = _ENDED
            return self
        out = ffi.new("CUgraph *")
        status = lib.cuStreamEndCapture(self._stream._handle, out)
        self._state = _ENDED
        self._cell.capturing = False
        if status:
            if self._kind == _PRIMARY:
                self._box.closed = True  # the driver discarded the graph
            self._close_forks()
            check(status, "cuStreamEndCapture")
        if self._kind == _PRIMARY:
            self._graph = out[0]
            self._box.root = out[0]
            self._box.adopt()
        self._close_forks()
        return self

    def complete(self, options: GraphCompleteOptions | dict[str, Any] | None = None) -> Graph:
        """Instantiate the captured graph as an executable :class:`~cuda_core.graph.Graph`.

        Parameters
        ----------
        options : GraphCompleteOptions or dict, optional
            Instantiation options.

        Returns
        -------
        Graph

        Raises
        ------
        RuntimeError
            If building has not ended (see :meth:`end_building`).
        CUDAError
            If instantiation fails (the message names the driver's reason).
        """
        self._require_ended()
        return _instantiate(self._graph, options)

    def debug_dot_print(
        self, path: str | os.PathLike[str], options: GraphDebugPrintOptions | None = None
    ) -> None:
        """Write the captured graph as a GraphViz DOT file.

        Parameters
        ----------
        path : str
            The file to write (bytes and os.PathLike are accepted too, a
            cuda_core extension).
        options : GraphDebugPrintOptions, optional
            What to include (a dict is accepted too, a cuda_core extension).

        Raises
        ------
        RuntimeError
            If building has not ended.
        """
        self._require_ended()
        _dot_print(self._graph, path, options)

    def split(self, count: int) -> tuple[GraphBuilder, ...]:
        """Fork this builder into ``count`` builders capturing into the same graph.

        The new builders start after the work captured so far; each captures
        on a stream of its own.  Join them back with :meth:`join` before
        building ends.

        Parameters
        ----------
        count : int
            Number of builders (>= 2).

        Returns
        -------
        tuple of GraphBuilder
            ``self`` first, then ``count - 1`` forked builders.

        Raises
        ------
        TypeError
            If ``count`` is not an int.
        ValueError
            If ``count`` < 2 (checked first, even on a closed builder).
        RuntimeError
            If the builder is closed or not building.
        """
        index = index_or_none(count)
        if index is None:
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        count = index
        if count < 2:
            raise ValueError(f"Invalid split count: expecting >= 2, got {count}")
        self._require_open()
        if self._state != _CAPTURING:
            raise RuntimeError("Graph builder must be building before it can be split.")
        origin = self if self._kind != _FORKED else self._origin
        event = self._stream.record()
        result = [self]
        try:
            device = self._stream.device
            for _ in range(count - 1):
                stream = device.create_stream()
                try:
                    stream.wait(event)
                except BaseException:
                    stream.close()
                    raise
                result.append(
                    GraphBuilder._new(
                        stream, True, _FORKED, _CAPTURING, self._box, self._graph, origin
                    )
                )
        finally:
            event.close()
        return tuple(result)

    @staticmethod
    def join(*graph_builders: GraphBuilder) -> GraphBuilder:
        """Join builders (from :meth:`split`) back into one.

        The result is the first builder that is not a forked one (or the
        first builder); it continues after the work of all of them.  The
        other builders are closed.

        Parameters
        ----------
        *graph_builders : GraphBuilder
            At least two builders capturing into the same graph.

        Returns
        -------
        GraphBuilder

        Raises
        ------
        TypeError
            If an argument is not a GraphBuilder.
        ValueError
            If fewer than two builders are given.

        Notes
        -----
        As in ``cuda.core``, nothing else is checked here: builders that do
        not belong together make the capture fail in the driver.
        """
        if any(not isinstance(b, GraphBuilder) for b in graph_builders):
            raise TypeError("All arguments must be GraphBuilder instances")
        if len(graph_builders) < 2:
            raise ValueError("Must join with at least two graph builders")
        root = next((b for b in graph_builders if b._kind != _FORKED), graph_builders[0])
        root._require_open()
        # A forked builder always has an origin.
        target: GraphBuilder = root if root._kind != _FORKED else root._origin  # type: ignore[assignment]
        for b in graph_builders:
            if b is root or b._closed:
                continue
            root._stream.wait(b._stream)
            # The forked stream took part in the capture: destroy it only after
            # the capture has ended.
            b._closed = True
            b._state = _ENDED
            b._finalizer.detach()
            if b._owns_stream:
                target._forks.append(b._stream)
                b._owns_stream = False
        return root

    # ------------------------------------------------------------------
    # Private helpers.
    # ------------------------------------------------------------------
    def _require_open(self) -> None:
        if self._closed:
            raise RuntimeError("Graph builder has been closed.")

    def _require_ended(self) -> None:
        self._require_open()
        if self._state != _ENDED or self._kind == _FORKED:
            raise RuntimeError("Graph has not finished building.")
        if self._box is None or self._box.closed:
            raise RuntimeError("the graph of this builder was destroyed")

    def _update_source(self) -> Any:
        """Return the ``CUgraph`` for :meth:`Graph.update` (ValueError as cuda.core words it)."""
        if self._closed:
            raise ValueError("Source graph builder has been closed.")
        try:
            self._require_ended()
        except RuntimeError as exc:
            raise ValueError(str(exc)) from None
        return self._graph

    def _close_forks(self) -> None:
        forks, self._forks = self._forks, []
        for s in forks:
            s.close()

    # ------------------------------------------------------------------
    # Properties.
    # ------------------------------------------------------------------
    @property
    def stream(self) -> Stream:
        """Stream or None: The stream this builder captures on (None once closed)."""
        return None if self._closed else self._stream  # type: ignore[return-value]  # None once closed

    @property
    def is_building(self) -> bool:
        """bool: Whether the builder is currently capturing.

        Raises
        ------
        RuntimeError
            If the capture was invalidated by an illegal operation (it must
            be ended), or the builder is closed.
        """
        self._require_open()
        status = _capture_status(self._stream._handle)
        if status == _NONE:
            return False
        if status == _ACTIVE:
            return True
        if status == _INVALIDATED:
            raise RuntimeError(
                "Build process encountered an error and has been invalidated. "
                "Build process must now be ended."
            )
        raise NotImplementedError(f"Unsupported capture status type received: {status}")

    @property
    def is_join_required(self) -> bool:
        """bool: Whether this is a forked builder that must be joined before building ends."""
        return self._kind == _FORKED

    @property
    def graph_definition(self) -> GraphDefinition:
        """GraphDefinition: A view of the graph this builder produces.

        Nodes added through the view become part of the graph (they appear
        in later :meth:`complete` and :meth:`debug_dot_print` calls); the
        view stays valid after the builder is closed.

        Available for primary builders after :meth:`end_building`; for
        conditional-body builders before :meth:`begin_building` and after
        :meth:`end_building`; never for forked builders.

        Raises
        ------
        RuntimeError
            If the builder is forked, currently building, closed, or (for a
            primary builder) has not ended building.
        """
        self._require_open()
        if self._kind == _FORKED:
            raise RuntimeError(
                "graph_definition is unavailable on forked graph builders; access it through "
                "the primary builder instead."
            )
        if self._state == _CAPTURING:
            raise RuntimeError(
                "graph_definition is unavailable while capture is in progress; call "
                "end_building() first."
            )
        if self._kind == _PRIMARY and self._state != _ENDED:
            raise RuntimeError(
                "graph_definition is unavailable before begin_building() on a primary builder; "
                "no graph has been created yet."
            )
        if self._box is None or self._box.closed:
            raise RuntimeError("the graph of this builder was destroyed")
        return GraphDefinition._view(self._graph, self._box)


_slots.GraphBuilder = GraphBuilder
