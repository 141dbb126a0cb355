# SPDX-License-Identifier: Apache-2.0
"""Building graphs by stream capture: :class:`GraphBuilder` and its options.

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
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from dataclasses import dataclass, fields

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAWarning, check, in_forked_child, warn_cuda
from cuda_core._loader import driver_version
from cuda_core._stream import Stream, _as_stream
from cuda_core._utils import as_int_handle, check_or_create_options, index_or_none
from cuda_core.graph._attachments import GraphBox, drain, resolve_host_callback

__all__ = ["GraphBuilder", "GraphCompleteOptions", "GraphCondition", "GraphDebugPrintOptions"]

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
_COND_ASSIGN_DEFAULT = 1  # CU_GRAPH_COND_ASSIGN_DEFAULT
_UINT_MAX = 0xFFFFFFFF
_tls = threading.local()

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
        if s is not None and not isinstance(s, (Stream, GraphBuilder)):
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

    # Marks graph conditions for kernel-argument marshalling in launch():
    # they are passed as their 64-bit ``handle``.
    _cuda_core_graph_condition = True

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "GraphCondition objects cannot be instantiated directly; use "
            "GraphBuilder.create_condition() or GraphDefinition.create_condition()"
        )

    @classmethod
    def _from_handle(cls, handle):
        self = object.__new__(cls)
        self._handle = int(handle)
        return self

    def __eq__(self, other):
        if not isinstance(other, GraphCondition):
            return NotImplemented
        return self._handle == other._handle

    def __hash__(self):
        return hash((GraphCondition, self._handle))

    def __int__(self):
        return self._handle

    def __repr__(self):
        return f"<GraphCondition handle={self._handle:#x}>"

    @property
    def handle(self):
        """int: The ``CUgraphConditionalHandle`` value."""
        return self._handle


class GraphBuilder:
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

    Raises
    ------
    RuntimeError
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

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "directly creating a GraphBuilder object can be ambiguous; please call "
            "Device.create_graph_builder() or Stream.create_graph_builder()"
        )

    @classmethod
    def _init(cls, stream, *, owns_stream=None, is_stream_owner=None):
        """Create a primary builder capturing on ``stream``.

        ``owns_stream`` (alias ``is_stream_owner``): close the stream with
        the builder.
        """
        owns = bool(owns_stream if owns_stream is not None else is_stream_owner)
        return cls._new(stream, owns, _PRIMARY, _NOT_STARTED, None, None, None)

    @classmethod
    def _new(cls, stream, owns, kind, state, box, c_graph, origin):
        if not isinstance(stream, Stream):
            raise TypeError(f"stream must be a Stream, not {type(stream).__name__}")
        drain()
        self = object.__new__(cls)
        self._stream = stream
        self._owns_stream = owns
        self._kind = kind
        self._state = state
        self._box = box
        self._graph = c_graph
        self._origin = origin
        self._forks = []
        self._closed = False
        self._cell = _Cell(stream, owns, kind, box, state == _CAPTURING and kind != _FORKED)
        self._finalizer = weakref.finalize(self, _finalize_builder, self._cell)
        return self

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __repr__(self):
        kind = ("primary", "forked", "conditional-body")[self._kind]
        state = ("not started", "building", "ended")[self._state]
        closed = " (closed)" if self._closed else ""
        return f"<GraphBuilder {kind} {state}{closed}>"

    def __cuda_stream__(self):
        """Return ``(0, address)`` of the capturing stream (``__cuda_stream__`` protocol)."""
        return self.stream.__cuda_stream__()

    def close(self):
        """Destroy the graph builder (idempotent).

        A primary or conditional-body builder that is still building stops
        capturing (the partial graph is discarded); a stream created for the
        builder is destroyed.  Graphs already completed are not affected.

        Raises
        ------
        CUDAError
            If ending the capture or destroying the stream fails.
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
        self._box = None
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

    def begin_building(self, mode="relaxed"):
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
        ValueError
            If ``mode`` is not one of the above.
        RuntimeError
            If the builder is already building, has finished, or is closed.
        """
        self._require_open()
        if mode is None:
            mode = "relaxed"
        c_mode = _MODES.get(mode) if isinstance(mode, str) else None
        if c_mode is None:
            raise ValueError(
                f"Unsupported build mode: {mode!r}; expected 'global', 'thread_local' or 'relaxed'"
            )
        if self._state == _CAPTURING:
            raise RuntimeError("Graph builder is already building.")
        if self._state == _ENDED:
            raise RuntimeError("Cannot resume building after building has ended.")
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

    def end_building(self):
        """End capturing.

        Returns
        -------
        GraphBuilder
            ``self``.

        Raises
        ------
        RuntimeError
            If the builder is not building, is a forked builder (join it
            instead), or is closed.
        CUDAError
            If the capture failed (e.g. it was invalidated by an illegal
            operation, or a forked builder was not joined).
        """
        self._require_open()
        if self._kind == _FORKED:
            raise RuntimeError(
                "a forked GraphBuilder (from split()) cannot end building: join it back "
                "with GraphBuilder.join() and end the builder it was joined into"
            )
        if self._state != _CAPTURING:
            raise RuntimeError("Graph builder is not building.")
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

    def complete(self, options=None):
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
        from cuda_core.graph._graph import _instantiate

        return _instantiate(self._graph, self._box, options)

    def debug_dot_print(self, path, options=None):
        """Write the captured graph as a GraphViz DOT file.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        options : GraphDebugPrintOptions or dict, optional
            What to include.

        Raises
        ------
        RuntimeError
            If building has not ended.
        """
        self._require_ended()
        _dot_print(self._graph, path, options)

    def split(self, count):
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
            If ``count`` < 2.
        RuntimeError
            If the builder is not building.
        """
        self._require_open()
        index = index_or_none(count)
        if index is None:
            raise TypeError(f"count must be an int, not {type(count).__name__}")
        count = index
        if count < 2:
            raise ValueError(f"Invalid split count: expecting >= 2, got {count}")
        if self._state != _CAPTURING:
            raise RuntimeError("Cannot split a graph builder that is not building.")
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
    def join(*graph_builders):
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
            If fewer than two builders are given, one is given twice, or they
            capture into different graphs.
        RuntimeError
            If a builder is not building.
        """
        if any(not isinstance(b, GraphBuilder) for b in graph_builders):
            raise TypeError("All arguments must be GraphBuilder instances")
        if len(graph_builders) < 2:
            raise ValueError("Must join with at least two graph builders")
        if len({id(b) for b in graph_builders}) != len(graph_builders):
            raise ValueError("a GraphBuilder was given more than once to join()")
        graphs = set()
        for i, b in enumerate(graph_builders):
            b._require_open()
            if b._state != _CAPTURING:
                raise RuntimeError(f"graph builder {i} passed to join() is not building")
            status, c_graph = _capture_info(b._stream._handle)[:2]
            if status != _ACTIVE:
                raise RuntimeError(f"graph builder {i} passed to join() is not actively capturing")
            graphs.add(as_int_handle(c_graph))
        if len(graphs) != 1:
            raise ValueError(
                "cannot join graph builders that capture into different graphs (only builders "
                "split from one builder can be joined)"
            )
        root = next((b for b in graph_builders if b._kind != _FORKED), graph_builders[0])
        target = root if root._kind != _FORKED else root._origin
        for b in graph_builders:
            if b is root:
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

    def create_condition(self, default_value=None):
        """Create a condition variable for conditional nodes in the graph being built.

        Parameters
        ----------
        default_value : int or bool, optional
            The value the condition takes at the start of each graph launch.
            None (default): no default is assigned (device code must set it).

        Returns
        -------
        GraphCondition

        Raises
        ------
        RuntimeError
            If the builder is not building, or the driver is older than 12.3.
        TypeError, ValueError
            If ``default_value`` is not an int in [0, 2**32).
        """
        self._require_open()
        value, flags = _condition_args(default_value)
        status, c_graph = _capture_info(self._stream._handle)[:2]
        if status != _ACTIVE:
            raise RuntimeError("Cannot create a condition when graph is not being built")
        return _create_condition(c_graph, self._ctx(), value, flags)

    def if_then(self, condition):
        """Add an ``if`` node; return the builder of its body.

        The body runs when ``condition`` is non-zero at run time.  It starts
        after the work captured so far; work captured afterwards on this
        builder runs after the conditional node.  Call ``begin_building`` on
        the returned builder to capture the body.

        Parameters
        ----------
        condition : GraphCondition

        Returns
        -------
        GraphBuilder

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition.
        RuntimeError
            If not building, or the driver is older than 12.3.
        """
        return self._conditional(condition, lib.CU_GRAPH_COND_TYPE_IF, 1, 12030, "conditional if")[
            0
        ]

    def if_else(self, condition):
        """Add an ``if``/``else`` node; return the builders of both bodies.

        Parameters
        ----------
        condition : GraphCondition

        Returns
        -------
        tuple of (GraphBuilder, GraphBuilder)
            The body run when ``condition`` is non-zero, then the one run
            when it is zero.

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition.
        RuntimeError
            If not building, or the driver is older than 12.8.
        """
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_IF, 2, 12080, "conditional if-else"
        )

    def switch(self, condition, count):
        """Add a ``switch`` node with ``count`` cases; return the builders of the cases.

        At run time the case whose index equals ``condition`` runs; none runs
        when it is out of range.

        Parameters
        ----------
        condition : GraphCondition
        count : int
            Number of cases (>= 1).

        Returns
        -------
        tuple of GraphBuilder

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition or ``count`` not an int.
        ValueError
            If ``count`` < 1.
        RuntimeError
            If not building, or the driver is older than 12.8.
        """
        count = _switch_count(count)
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_SWITCH, count, 12080, "conditional switch"
        )

    def while_loop(self, condition):
        """Add a ``while`` node; return the builder of its body.

        The body runs repeatedly while ``condition`` is non-zero (checked
        before each iteration).

        Parameters
        ----------
        condition : GraphCondition

        Returns
        -------
        GraphBuilder

        Raises
        ------
        TypeError
            If ``condition`` is not a GraphCondition.
        RuntimeError
            If not building, or the driver is older than 12.3.
        """
        return self._conditional(
            condition, lib.CU_GRAPH_COND_TYPE_WHILE, 1, 12030, "conditional while loop"
        )[0]

    def embed(self, child):
        """Add a finished builder's graph as a child graph node (a copy of it).

        Parameters
        ----------
        child : GraphBuilder
            A builder whose building has ended.

        Raises
        ------
        TypeError
            If ``child`` is not a GraphBuilder.
        ValueError
            If ``child`` has not finished building, or this builder is not
            building.
        """
        self._require_open()
        if not isinstance(child, GraphBuilder):
            raise TypeError(f"child must be a GraphBuilder, not {type(child).__name__}")
        if child._closed or child._state != _ENDED or child._kind == _FORKED:
            raise ValueError("Child graph has not finished building.")
        if child._box is None or child._box.closed:
            raise ValueError("the child builder's graph was destroyed")
        c_stream = self._stream._handle
        status, c_graph, deps, ndeps = _capture_info(c_stream)
        if status != _ACTIVE:
            raise ValueError("Parent graph is not being built.")
        out = ffi.new("CUgraphNode *")
        check(lib.cuGraphAddChildGraphNode(out, c_graph, deps, ndeps, child._graph))
        check(
            lib.cuStreamUpdateCaptureDependencies(
                c_stream, out, 1, lib.CU_STREAM_SET_CAPTURE_DEPENDENCIES
            )
        )
        self._box.keep(child._box.snapshot())

    def callback(self, fn, *, user_data=None):
        """Capture a host callback: ``fn`` runs on the CPU when the graph reaches this point.

        ``fn`` is either a Python callable taking no arguments (it runs with
        the GIL held; bind state with a closure or ``functools.partial``), or
        a ctypes ``CFUNCTYPE(None, c_void_p)`` function pointer, which
        receives ``user_data``.  The graph keeps ``fn`` (and a copy of
        bytes-like ``user_data``) alive.

        .. warning::

            A callback must not call CUDA (no cuda_core API that touches the
            GPU): doing so may deadlock or fail.  An exception raised by a
            Python callback is reported as a :class:`~cuda_core.CUDAWarning`.

        Parameters
        ----------
        fn : callable or ctypes function pointer
        user_data : int or bytes-like, optional
            Only with a ctypes function pointer: an address (the caller keeps
            the memory alive) or bytes (copied).

        Raises
        ------
        TypeError
            If ``fn`` is neither a callable nor a ctypes ``CUhostFn``.
        ValueError
            If ``user_data`` is given with a Python callable.
        RuntimeError
            If the builder is not building.
        """
        self._require_open()
        cb = resolve_host_callback(fn, user_data)
        c_stream = self._stream._handle
        if _capture_info(c_stream)[0] != _ACTIVE:
            raise RuntimeError("Cannot add callback when graph is not being built")
        self._box.keep(*cb.owners)
        check(lib.cuLaunchHostFunc(c_stream, cb.c_fn, cb.c_data))

    # ------------------------------------------------------------------
    # Private helpers.
    # ------------------------------------------------------------------
    def _require_open(self):
        if self._closed:
            raise RuntimeError("GraphBuilder is closed; it cannot be used after close() or join()")

    def _require_ended(self):
        self._require_open()
        if self._state != _ENDED or self._kind == _FORKED:
            raise RuntimeError("Graph has not finished building.")
        if self._box is None or self._box.closed:
            raise RuntimeError("the graph of this builder was destroyed")

    def _ctx(self):
        ctx = self._stream.context
        if ctx is None:
            raise RuntimeError("no CUDA context is current; call Device.set_current() first")
        return ctx._handle

    def _close_forks(self):
        forks, self._forks = self._forks, []
        for s in forks:
            s.close()

    def _conditional(self, condition, c_type, size, min_driver, what):
        """Add a conditional node to the capture; return builders of its bodies."""
        self._require_open()
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                "condition must be a GraphCondition object (from GraphBuilder.create_condition()), "
                f"got {type(condition).__name__}"
            )
        _require_driver(min_driver, what)
        c_stream = self._stream._handle
        status, c_graph, deps, ndeps = _capture_info(c_stream)
        if status != _ACTIVE:
            raise RuntimeError("Cannot add conditional node when not actively capturing")
        params = _conditional_params(condition, c_type, size, self._ctx())
        out = ffi.new("CUgraphNode *")
        check(lib.cuGraphAddNode(out, c_graph, deps, ndeps, params))
        check(
            lib.cuStreamUpdateCaptureDependencies(
                c_stream, out, 1, lib.CU_STREAM_SET_CAPTURE_DEPENDENCIES
            )
        )
        bodies = [params.conditional.phGraph_out[i] for i in range(size)]
        device = self._stream.device
        builders = []
        for body in bodies:
            stream = device.create_stream()
            builders.append(
                GraphBuilder._new(stream, True, _BODY, _NOT_STARTED, self._box, body, None)
            )
        return tuple(builders)

    # ------------------------------------------------------------------
    # Properties.
    # ------------------------------------------------------------------
    @property
    def stream(self):
        """Stream: The stream this builder captures on.

        Raises
        ------
        RuntimeError
            If the builder is closed.
        """
        self._require_open()
        return self._stream

    @property
    def is_building(self):
        """bool: Whether the builder is currently capturing.

        Raises
        ------
        RuntimeError
            If the capture was invalidated by an illegal operation (it must
            be ended), or the builder is closed.
        """
        self._require_open()
        if self._state != _CAPTURING:
            return False
        status = _capture_status(self._stream._handle)
        if status == _ACTIVE:
            return True
        if status == _INVALIDATED:
            raise RuntimeError(
                "Build process encountered an error and has been invalidated. "
                "Build process must now be ended."
            )
        return False

    @property
    def is_join_required(self):
        """bool: Whether this is a forked builder that must be joined before building ends."""
        return self._kind == _FORKED

    @property
    def graph_definition(self):
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
                "a forked GraphBuilder has no graph of its own; use the builder it was split from"
            )
        if self._state == _CAPTURING:
            raise RuntimeError("graph_definition is not available while the builder is building")
        if self._kind == _PRIMARY and self._state != _ENDED:
            raise RuntimeError("graph_definition is available only after end_building()")
        if self._box is None or self._box.closed:
            raise RuntimeError("the graph of this builder was destroyed")
        from cuda_core.graph._graph_definition import GraphDefinition

        return GraphDefinition._view(self._graph, self._box)


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


def _condition_value(value):
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


def _condition_args(default_value):
    """Check that the driver has conditional handles; return ``(value, flags)`` for creating one."""
    _require_driver(12030, "conditional handles")
    if default_value is None:
        return 0, 0
    return _condition_value(default_value), _COND_ASSIGN_DEFAULT


def _create_condition(c_graph, c_ctx, value, flags):
    """Create a conditional handle in ``c_graph`` (see :func:`_condition_args`)."""
    out = ffi.new("CUgraphConditionalHandle *")
    check(lib.cuGraphConditionalHandleCreate(out, c_graph, c_ctx, value, flags))
    return GraphCondition._from_handle(out[0])


def _switch_count(count):
    """Return ``count`` as an int >= 1 (the number of cases of a switch node)."""
    index = index_or_none(count)
    if index is None:
        raise TypeError(f"count must be an int, not {type(count).__name__}")
    if index < 1:
        raise ValueError(f"switch count must be >= 1, got {index}")
    return index


def _conditional_params(condition, c_type, size, c_ctx):
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


def _require_driver(version, what):
    have = driver_version()
    if have < version:
        raise RuntimeError(
            f"Driver version {have // 1000}.{have % 1000 // 10} does not support {what} "
            f"(needs {version // 1000}.{version % 1000 // 10} or newer)"
        )


def _capture_outs():
    try:
        return _tls.capture
    except AttributeError:
        outs = _tls.capture = (
            ffi.new("CUstreamCaptureStatus *"),
            ffi.new("CUgraph *"),
            ffi.new("const CUgraphNode **"),
            ffi.new("size_t *"),
        )
        return outs


def _capture_info(c_stream):
    """Return ``(status, CUgraph, dependencies pointer, count)`` of a stream's capture.

    The dependencies pointer is valid until the next API call on the stream.
    """
    st, graph, deps, n = _capture_outs()
    check(lib.cuStreamGetCaptureInfo(c_stream, st, ffi.NULL, graph, deps, n))
    return st[0], graph[0], deps[0], n[0]


def _capture_status(c_stream):
    st = _capture_outs()[0]
    check(lib.cuStreamIsCapturing(c_stream, st))
    return st[0]


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


class _Cell:
    """What a builder's finalizer needs (never the builder itself)."""

    __slots__ = ("stream", "owns", "kind", "box", "capturing")

    def __init__(self, stream, owns, kind, box, capturing):
        self.stream = stream
        self.owns = owns
        self.kind = kind
        self.box = box
        self.capturing = capturing


def _finalize_builder(cell):
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
        warn_cuda("cuStreamEndCapture (GraphBuilder finalizer)", status)
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
