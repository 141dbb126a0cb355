# SPDX-License-Identifier: Apache-2.0
"""Nodes of an explicit graph definition: :class:`GraphNode` and its subclasses.

Nodes are made by the builder methods of
:class:`~cuda_core.graph.GraphDefinition` (entry nodes, with no
dependencies) and of other nodes (nodes that depend on that node).  Each
builder returns the node it added, typed by kind (:class:`KernelNode`,
:class:`MemcpyNode`, ...).  One Python object stands for one driver node:
:meth:`GraphDefinition.nodes <cuda_core.graph.GraphDefinition.nodes>`,
``pred`` and ``succ`` return the same objects the builders did.

Everything a node uses (kernels, packed arguments, buffers, events,
callbacks, child graphs) is kept alive by the graph definition and by every
executable graph instantiated from it (see ``_attachments``).  Raw integer
pointers are the caller's responsibility unless an owner is given
(``dst_owner``/``src_owner``).  Closing a :class:`~cuda_core.Buffer`
explicitly frees it even if a graph still uses it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import MutableSet

from cuda_core._context import _current_ctx
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check
from cuda_core._event import Event
from cuda_core._loader import driver_version
from cuda_core._utils import as_int_handle, index_or_none
from cuda_core.graph._attachments import resolve_host_callback
from cuda_core.graph._graph_builder import (
    GraphCondition,
    _conditional_params,
    _require_driver,
    _switch_count,
)
from cuda_core.graph._types import CUgraphNodeType, GraphConditionalType, GraphMemoryType

__all__ = [
    "AllocNode",
    "ChildGraphNode",
    "ConditionalNode",
    "EmptyNode",
    "EventRecordNode",
    "EventWaitNode",
    "FreeNode",
    "GraphNode",
    "HostCallbackNode",
    "IfElseNode",
    "IfNode",
    "KernelNode",
    "MemcpyNode",
    "MemsetNode",
    "SwitchNode",
    "WhileNode",
]

# (graph handle, node handle) -> the one GraphNode object for that node.
_registry = weakref.WeakValueDictionary()
_tls = threading.local()
_SIZE_MAX = (1 << 64) - 1
_UINT_MAX = 0xFFFFFFFF


class GraphNode:
    """A node of a :class:`~cuda_core.graph.GraphDefinition`.

    Nodes are created by the builder methods of a graph definition (entry
    nodes) or of another node (nodes depending on it); they cannot be
    constructed directly.  Every builder method below adds a node that runs
    after this one.  Two node objects are equal when they refer to the same
    driver node of the same graph.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_gdef", "_node", "_h", "_destroyed", "_dep", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "GraphNode objects cannot be created directly; use the builder methods of a "
            "GraphDefinition or of another GraphNode"
        )

    @classmethod
    def _make(cls, gdef, c_node):
        self = object.__new__(cls)
        self._gdef = gdef
        self._node = c_node
        self._h = 0 if c_node is None else as_int_handle(c_node)
        self._destroyed = False
        self._dep = None
        for name in cls._extra:
            setattr(self, name, None)
        if c_node is not None:
            _registry[(gdef._h, self._h)] = self
        return self

    _extra = ()

    def __repr__(self):
        if self._node is None:
            return "<GraphNode entry>" if self.is_valid else "<GraphNode entry (invalid)>"
        if not self.is_valid:
            return f"<{type(self).__name__} (destroyed)>"
        return f"<{type(self).__name__} handle={self._h:#x}>"

    def __eq__(self, other):
        if not isinstance(other, GraphNode):
            return NotImplemented
        return self._h == other._h and self._gdef._h == other._gdef._h

    def __hash__(self):
        return hash((self._gdef._h, self._h))

    # ------------------------------------------------------------------
    # Properties and structure.
    # ------------------------------------------------------------------
    @property
    def type(self):
        """CUgraphNodeType or None: The driver node type (None for the entry node)."""
        if self._node is None:
            return None
        self._check_valid()
        out = ffi.new("CUgraphNodeType *")
        check(lib.cuGraphNodeGetType(self._node, out))
        return CUgraphNodeType(out[0])

    @property
    def graph(self):
        """GraphDefinition: The graph definition this node belongs to."""
        return self._gdef

    @property
    def handle(self):
        """int or None: The ``CUgraphNode`` address (None for the entry node)."""
        return None if self._node is None else self._h

    @property
    def is_valid(self):
        """bool: Whether the node (and its graph) still exist (False after :meth:`destroy`)."""
        return not self._destroyed and self._gdef._is_valid()

    def destroy(self):
        """Remove this node and its edges from the graph.

        Afterwards :attr:`is_valid` is False and the node cannot be used.  A
        no-op on an already destroyed node and on the entry node.  What the
        node used stays alive until the graph definition (and the executable
        graphs made from it) are gone.
        """
        if self._node is None or self._destroyed:
            return
        self._check_valid()
        check(lib.cuGraphDestroyNode(self._node))
        self._destroyed = True
        _registry.pop((self._gdef._h, self._h), None)

    @property
    def pred(self):
        """AdjacencySetProxy: A mutable set-like view of the nodes this node depends on.

        Adding a node adds an edge from it to this node; discarding one
        removes the edge.  Assigning an iterable replaces all predecessors.
        """
        return AdjacencySetProxy(self, False)

    @pred.setter
    def pred(self, value):
        proxy = AdjacencySetProxy(self, False)
        value = list(value)
        proxy.clear()
        proxy.update(value)

    @property
    def succ(self):
        """AdjacencySetProxy: A mutable set-like view of the nodes that depend on this node."""
        return AdjacencySetProxy(self, True)

    @succ.setter
    def succ(self, value):
        proxy = AdjacencySetProxy(self, True)
        value = list(value)
        proxy.clear()
        proxy.update(value)

    # ------------------------------------------------------------------
    # Builder methods: each adds a node that depends on this one.
    # ------------------------------------------------------------------
    def launch(self, config, kernel, *args):
        """Add a kernel launch node.

        Clustered and cooperative configurations are not supported for
        graph kernel nodes.  The kernel and the arguments (e.g. Buffers) are
        kept alive by the graph.

        Parameters
        ----------
        config : LaunchConfig or dict
            Grid, block and dynamic shared memory.
        kernel : Kernel
            The kernel to launch.
        *args
            Kernel arguments, marshalled as :func:`~cuda_core.launch` does.

        Returns
        -------
        KernelNode

        Raises
        ------
        TypeError
            For a wrong config/kernel type or an unsupported argument type.
        NotImplementedError
            For a clustered or cooperative configuration.
        """
        self._check_valid()
        params, owners, kernel = _kernel_params(config, kernel, args)
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddKernelNode(out, self._gdef._graph, deps, n, params))
        self._gdef._box.keep(*owners)
        node = KernelNode._make(self._gdef, out[0])
        node._kernel = kernel
        return node

    def join(self, *nodes):
        """Add an empty node that depends on this node and on ``nodes``.

        Parameters
        ----------
        *nodes : GraphNode
            Other nodes of the same graph.

        Returns
        -------
        EmptyNode

        Raises
        ------
        TypeError
            If an argument is not a GraphNode.
        ValueError
            If a node belongs to another graph.
        """
        self._check_valid()
        handles = [] if self._node is None else [self._node]
        for i, other in enumerate(nodes):
            if not isinstance(other, GraphNode):
                raise TypeError(
                    f"join() argument {i} must be a GraphNode, not {type(other).__name__}"
                )
            other._check_valid()
            if other._gdef._h != self._gdef._h:
                raise ValueError(f"join() argument {i} belongs to a different graph")
            if other._node is not None and other._node not in handles:
                handles.append(other._node)
        deps = ffi.new("CUgraphNode[]", handles) if handles else ffi.NULL
        out = _node_out()
        check(lib.cuGraphAddEmptyNode(out, self._gdef._graph, deps, len(handles)))
        return EmptyNode._make(self._gdef, out[0])

    def allocate(self, size, *, device=None, memory_type="device", peer_access=None):
        """Add a memory allocation node.

        Parameters
        ----------
        size : int
            Number of bytes (> 0).
        device : Device or int, optional
            The device to allocate on (default: the current context's device).
        memory_type : GraphMemoryType or str, optional
            ``"device"`` (default), ``"host"`` (pinned host memory; not
            supported everywhere) or ``"managed"`` (CUDA 13).
        peer_access : list of Device or int, optional
            Other devices given read-write access.

        Returns
        -------
        AllocNode
            Its :attr:`~AllocNode.dptr` is the address the allocation will have.

        Raises
        ------
        TypeError
            For arguments of the wrong type.
        ValueError
            For a non-positive size or an unknown memory type.

        Notes
        -----
        Graph allocations cannot be shared through IPC.
        """
        self._check_valid()
        size = _as_size(size, "size")
        if size == 0:
            raise ValueError("size must be > 0 for a graph allocation")
        device_id = _current_device_id() if device is None else _device_id(device, "device")
        kind = _memory_type(memory_type)
        peers = (
            () if peer_access is None else tuple(_device_id(p, "peer_access") for p in peer_access)
        )
        params = ffi.new("CUDA_MEM_ALLOC_NODE_PARAMS *")
        props = params.poolProps
        props.handleTypes = lib.CU_MEM_HANDLE_TYPE_NONE
        if kind == GraphMemoryType.DEVICE:
            props.allocType = lib.CU_MEM_ALLOCATION_TYPE_PINNED
            props.location.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = device_id
        elif kind == GraphMemoryType.HOST:
            props.allocType = lib.CU_MEM_ALLOCATION_TYPE_PINNED
            props.location.type = lib.CU_MEM_LOCATION_TYPE_HOST
            props.location.id = 0
        else:
            if driver_version() < 13000:
                raise ValueError("memory_type='managed' requires a CUDA 13.0 or newer driver")
            props.allocType = lib.CU_MEM_ALLOCATION_TYPE_MANAGED
            props.location.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
            props.location.id = device_id
        descs = None
        if peers:
            descs = ffi.new("CUmemAccessDesc[]", len(peers))
            for i, peer in enumerate(peers):
                descs[i].location.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
                descs[i].location.id = peer
                descs[i].flags = lib.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            params.accessDescs = descs
            params.accessDescCount = len(peers)
        params.bytesize = size
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddMemAllocNode(out, self._gdef._graph, deps, n, params))
        node = AllocNode._make(self._gdef, out[0])
        node._meta = (as_int_handle(params.dptr), size, device_id, kind, peers)
        return node

    def deallocate(self, dptr):
        """Add a node that frees a graph allocation.

        Parameters
        ----------
        dptr : int
            The address to free (typically :attr:`AllocNode.dptr`).

        Returns
        -------
        FreeNode
        """
        self._check_valid()
        address = _as_address(dptr, "dptr")
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddMemFreeNode(out, self._gdef._graph, deps, n, address))
        return FreeNode._make(self._gdef, out[0])

    def memset(self, dst, value, width, height=1, pitch=0, *, dst_owner=None):
        """Add a memset node.

        Parameters
        ----------
        dst : Buffer or int
            Destination.  A Buffer is kept alive by the graph; a raw address
            is the caller's responsibility unless ``dst_owner`` is given.
        value : int or buffer-protocol object
            An int in [0, 256) fills bytes; an object of 1, 2 or 4 bytes
            (``numpy.uint16(7)``, ``numpy.float32(1.0)``) fills elements of
            that width with its bits.
        width : int
            Elements per row.
        height : int, optional
            Number of rows (default 1).
        pitch : int, optional
            Bytes between rows (needed when ``height`` > 1).
        dst_owner : object, optional
            Kept alive by the graph when ``dst`` is an address.

        Returns
        -------
        MemsetNode

        Raises
        ------
        TypeError, ValueError
            For bad arguments (the message names the parameter).
        """
        self._check_valid()
        params, owners = _memset_params(dst, value, width, height, pitch, dst_owner)
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddMemsetNode(out, self._gdef._graph, deps, n, params, _ctx()))
        self._gdef._box.keep(*owners)
        return MemsetNode._make(self._gdef, out[0])

    def memcpy(self, dst, src, size, *, dst_owner=None, src_owner=None):
        """Add a node copying ``size`` bytes from ``src`` to ``dst``.

        Device, pinned host and managed memory are recognized through the
        driver.

        Parameters
        ----------
        dst, src : Buffer or int
            Destination and source.  Buffers are kept alive by the graph;
            raw addresses are the caller's responsibility unless an owner is
            given.
        size : int
            Number of bytes.
        dst_owner, src_owner : object, optional
            Kept alive by the graph when ``dst``/``src`` is an address.

        Returns
        -------
        MemcpyNode

        Raises
        ------
        TypeError, ValueError
            For bad arguments (the message names the parameter).
        """
        self._check_valid()
        params, owners = _memcpy_params(dst, src, size, dst_owner, src_owner)
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddMemcpyNode(out, self._gdef._graph, deps, n, params, _ctx()))
        self._gdef._box.keep(*owners)
        return MemcpyNode._make(self._gdef, out[0])

    def embed(self, child):
        """Add a child graph node running a copy of ``child``.

        Parameters
        ----------
        child : GraphDefinition
            The graph to embed (it is cloned; later changes to it do not
            affect this node).  It must not contain allocation, free or
            conditional nodes.

        Returns
        -------
        ChildGraphNode
        """
        self._check_valid()
        gdef = _require_definition(child, "child")
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddChildGraphNode(out, self._gdef._graph, deps, n, gdef._graph))
        self._gdef._box.keep(gdef._box.snapshot())
        return ChildGraphNode._make(self._gdef, out[0])

    def record(self, event):
        """Add a node recording ``event``.

        Returns
        -------
        EventRecordNode
        """
        self._check_valid()
        _require_event(event)
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddEventRecordNode(out, self._gdef._graph, deps, n, event._handle))
        self._gdef._box.keep(event)
        node = EventRecordNode._make(self._gdef, out[0])
        node._event = event
        return node

    def wait(self, event):
        """Add a node waiting for ``event``.

        Returns
        -------
        EventWaitNode
        """
        self._check_valid()
        _require_event(event)
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddEventWaitNode(out, self._gdef._graph, deps, n, event._handle))
        self._gdef._box.keep(event)
        node = EventWaitNode._make(self._gdef, out[0])
        node._event = event
        return node

    def callback(self, fn, *, user_data=None):
        """Add a host node: ``fn`` runs on the CPU when the graph reaches it.

        ``fn`` is a Python callable taking no arguments (it runs with the GIL
        held), or a ctypes ``CFUNCTYPE(None, c_void_p)`` function pointer
        receiving ``user_data`` (an address, or bytes that are copied).  The
        graph keeps ``fn`` alive.

        .. warning::

            A callback must not call CUDA.  An exception raised by a Python
            callback is reported as a :class:`~cuda_core.CUDAWarning`.

        Returns
        -------
        HostCallbackNode

        Raises
        ------
        TypeError
            If ``fn`` is neither callable nor a ctypes ``CUhostFn``.
        ValueError
            If ``user_data`` is given with a Python callable.
        """
        self._check_valid()
        cb = resolve_host_callback(fn, user_data)
        params = ffi.new("CUDA_HOST_NODE_PARAMS *")
        params.fn = cb.c_fn
        params.userData = cb.c_data
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddHostNode(out, self._gdef._graph, deps, n, params))
        self._gdef._box.keep(*cb.owners)
        node = HostCallbackNode._make(self._gdef, out[0])
        node._callback = cb.callable
        return node

    def if_then(self, condition):
        """Add an ``if`` node; its body (:attr:`IfNode.then`) runs when ``condition`` != 0.

        Returns
        -------
        IfNode
        """
        return self._conditional(condition, GraphConditionalType.IF, 1, IfNode, 12030)

    def if_else(self, condition):
        """Add an ``if``/``else`` node (bodies :attr:`IfElseNode.then` and ``else_``).

        Returns
        -------
        IfElseNode
        """
        return self._conditional(condition, GraphConditionalType.IF, 2, IfElseNode, 12080)

    def while_loop(self, condition):
        """Add a ``while`` node; its body (:attr:`WhileNode.body`) repeats while ``condition`` != 0.

        Returns
        -------
        WhileNode
        """
        return self._conditional(condition, GraphConditionalType.WHILE, 1, WhileNode, 12030)

    def switch(self, condition, count):
        """Add a ``switch`` node with ``count`` bodies (:attr:`SwitchNode.branches`).

        The body whose index equals ``condition`` runs; none if it is out of
        range.

        Returns
        -------
        SwitchNode
        """
        count = _switch_count(count)
        return self._conditional(condition, GraphConditionalType.SWITCH, count, SwitchNode, 12080)

    # ------------------------------------------------------------------
    # Private helpers.
    # ------------------------------------------------------------------
    def _check_valid(self):
        if self._destroyed:
            raise RuntimeError("the graph node was destroyed; it cannot be used")
        self._gdef._check_valid()

    def _deps(self):
        """Return ``(dependencies pointer, count)`` for a node depending on this one."""
        if self._node is None:
            return ffi.NULL, 0
        dep = self._dep
        if dep is None:
            dep = self._dep = ffi.new("CUgraphNode[1]", [self._node])
        return dep, 1

    def _conditional(self, condition, kind, size, cls, min_driver):
        self._check_valid()
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                "condition must be a GraphCondition (from create_condition()), got "
                f"{type(condition).__name__}"
            )
        _require_driver(min_driver, "this conditional node")
        c_type = {
            GraphConditionalType.IF: lib.CU_GRAPH_COND_TYPE_IF,
            GraphConditionalType.WHILE: lib.CU_GRAPH_COND_TYPE_WHILE,
            GraphConditionalType.SWITCH: lib.CU_GRAPH_COND_TYPE_SWITCH,
        }[kind]
        params = _conditional_params(condition, c_type, size, _ctx())
        out = _node_out()
        deps, n = self._deps()
        check(lib.cuGraphAddNode(out, self._gdef._graph, deps, n, params))
        node = cls._make(self._gdef, out[0])
        from cuda_core.graph._graph_definition import GraphDefinition

        box = self._gdef._box
        node._condition = condition
        node._cond_type = kind
        node._branches = tuple(
            GraphDefinition._view(params.conditional.phGraph_out[i], box, node) for i in range(size)
        )
        return node


class AdjacencySetProxy(MutableSet):
    """A live, mutable set-like view of a node's predecessors or successors.

    Membership, iteration and length query the driver each time; ``add``
    and ``discard`` add or remove the corresponding edge.
    """

    __slots__ = ("_owner", "_succ")

    def __init__(self, node, succ):
        self._owner = node
        self._succ = succ

    @classmethod
    def _from_iterable(cls, it):
        return set(it)

    def __repr__(self):
        kind = "succ" if self._succ else "pred"
        return f"<AdjacencySetProxy {kind} of {self._owner!r}: {set(self)!r}>"

    def _handles(self):
        node = self._owner
        node._check_valid()
        if node._node is None:
            if not self._succ:
                return []
            return _list_nodes(lib.cuGraphGetRootNodes, node._gdef._graph)
        fn = lib.cuGraphNodeGetDependentNodes if self._succ else lib.cuGraphNodeGetDependencies
        return _list_nodes(fn, node._node)

    def __iter__(self):
        gdef = self._owner._gdef
        return iter([_wrap(gdef, h) for h in self._handles()])

    def __len__(self):
        return len(self._handles())

    def __contains__(self, other):
        if not isinstance(other, GraphNode) or other._gdef._h != self._owner._gdef._h:
            return False
        return other._h in {as_int_handle(h) for h in self._handles()}

    def _edge(self, other):
        node = self._owner
        if node._node is None:
            raise TypeError("the edges of the entry node cannot be changed")
        if not isinstance(other, GraphNode):
            raise TypeError(f"expected a GraphNode, got {type(other).__name__}")
        other._check_valid()
        if other._gdef._h != node._gdef._h:
            raise ValueError("the node belongs to a different graph")
        if other._node is None:
            raise ValueError("the entry node cannot be connected to")
        if other._h == node._h:
            raise ValueError("a node cannot depend on itself")
        a, b = (node._node, other._node) if self._succ else (other._node, node._node)
        return ffi.new("CUgraphNode[1]", [a]), ffi.new("CUgraphNode[1]", [b])

    def add(self, other):
        """Add an edge between the owner and ``other`` (no-op if present)."""
        frm, to = self._edge(other)
        if other in self:
            return
        check(lib.cuGraphAddDependencies(self._owner._gdef._graph, frm, to, 1))

    def discard(self, other):
        """Remove the edge between the owner and ``other`` (no-op if absent)."""
        if not isinstance(other, GraphNode) or other not in self:
            return
        frm, to = self._edge(other)
        check(lib.cuGraphRemoveDependencies(self._owner._gdef._graph, frm, to, 1))

    def update(self, *iterables):
        """Add edges to every node of ``iterables``."""
        for it in iterables:
            for other in it:
                self.add(other)


# --------------------------------------------------------------------------
# Node subclasses.
# --------------------------------------------------------------------------
class EmptyNode(GraphNode):
    """An empty node (a synchronization point)."""

    __slots__ = ()


class KernelNode(GraphNode):
    """A kernel launch node.

    Properties ``grid``, ``block`` and ``shmem_size`` are read from the
    driver; ``kernel`` is the :class:`~cuda_core.Kernel` it launches and
    ``config`` a :class:`~cuda_core.LaunchConfig` rebuilt from the node.
    """

    __slots__ = ("_kernel",)
    _extra = ("_kernel",)

    def _params(self):
        self._check_valid()
        p = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
        check(lib.cuGraphKernelNodeGetParams(self._node, p))
        return p

    @property
    def grid(self):
        """tuple of int: Grid dimensions in blocks (x, y, z)."""
        p = self._params()
        return (p.gridDimX, p.gridDimY, p.gridDimZ)

    @property
    def block(self):
        """tuple of int: Block dimensions (x, y, z)."""
        p = self._params()
        return (p.blockDimX, p.blockDimY, p.blockDimZ)

    @property
    def shmem_size(self):
        """int: Dynamic shared memory per block, in bytes."""
        return self._params().sharedMemBytes

    @property
    def kernel(self):
        """Kernel or None: The launched kernel (None if the node launches a bare ``CUfunction``)."""
        if self._kernel is None:
            p = self._params()
            if p.kern != ffi.NULL:
                from cuda_core._kernel import Kernel

                self._kernel = Kernel.from_handle(as_int_handle(p.kern))
        return self._kernel

    @property
    def config(self):
        """LaunchConfig: ``grid``, ``block`` and ``shmem_size`` of this node.

        Cluster dimensions and cooperative launches are not kept by kernel
        nodes, so they are not part of it.
        """
        from cuda_core._launch_config import LaunchConfig

        p = self._params()
        return LaunchConfig(
            grid=(p.gridDimX, p.gridDimY, p.gridDimZ),
            block=(p.blockDimX, p.blockDimY, p.blockDimZ),
            shmem_size=p.sharedMemBytes,
        )

    def update(self, *, config=None, kernel=None, args=None):
        """Replace parameters of this node for future instantiations.

        Executable graphs already instantiated keep the old parameters (use
        ``graph[node].update(...)`` for those).  Omitted parameters keep
        their values; changing the kernel needs its arguments too
        (``args=()`` for a kernel without parameters).

        Parameters
        ----------
        config : LaunchConfig or dict, optional
        kernel : Kernel, optional
        args : sequence, optional
            The complete new argument list.

        Raises
        ------
        TypeError
            If ``kernel`` is given without ``args``, or for wrong types.
        """
        if kernel is not None and args is None:
            raise TypeError(
                "changing the kernel needs its arguments too: pass args= (args=() for a "
                "kernel without parameters)"
            )
        current = self._params()
        if kernel is None and args is not None:
            kernel = self.kernel
            if kernel is None:
                raise ValueError("the node's kernel is unknown; pass kernel= with args=")
        params, owners, used = _kernel_params(
            config if config is not None else self.config,
            kernel,
            args,
            current=current,
        )
        check(lib.cuGraphKernelNodeSetParams(self._node, params))
        self._gdef._box.keep(*owners)
        if used is not None:
            self._kernel = used


class AllocNode(GraphNode):
    """A memory allocation node (see :meth:`GraphNode.allocate`)."""

    __slots__ = ("_meta",)
    _extra = ("_meta",)

    def _info(self):
        """Return ``(dptr, bytesize, device_id, memory_type, peer_access)``."""
        self._check_valid()
        if self._meta is None:
            p = ffi.new("CUDA_MEM_ALLOC_NODE_PARAMS *")
            check(lib.cuGraphMemAllocNodeGetParams(self._node, p))
            props = p.poolProps
            if props.location.type == lib.CU_MEM_LOCATION_TYPE_HOST:
                kind = GraphMemoryType.HOST
            elif props.allocType == lib.CU_MEM_ALLOCATION_TYPE_MANAGED:
                kind = GraphMemoryType.MANAGED
            else:
                kind = GraphMemoryType.DEVICE
            peers = tuple(p.accessDescs[i].location.id for i in range(p.accessDescCount))
            address = as_int_handle(p.dptr)
            self._meta = (address, int(p.bytesize), int(props.location.id), kind, peers)
        return self._meta

    @property
    def dptr(self):
        """int: The address of the allocation."""
        return self._info()[0]

    @property
    def bytesize(self):
        """int: The size of the allocation in bytes."""
        return self._info()[1]

    @property
    def device_id(self):
        """int: The device the memory is allocated on."""
        return self._info()[2]

    @property
    def memory_type(self):
        """GraphMemoryType: ``"device"``, ``"host"`` or ``"managed"``."""
        return self._info()[3]

    @property
    def peer_access(self):
        """tuple of int: Devices given read-write access."""
        return self._info()[4]


class FreeNode(GraphNode):
    """A node freeing a graph allocation."""

    __slots__ = ()

    @property
    def dptr(self):
        """int: The address freed."""
        self._check_valid()
        out = ffi.new("CUdeviceptr *")
        check(lib.cuGraphMemFreeNodeGetParams(self._node, out))
        return as_int_handle(out[0])


class MemsetNode(GraphNode):
    """A memset node (see :meth:`GraphNode.memset`)."""

    __slots__ = ()

    def _params(self):
        self._check_valid()
        p = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
        check(lib.cuGraphMemsetNodeGetParams(self._node, p))
        return p

    @property
    def dptr(self):
        """int: The destination address."""
        return int(self._params().dst)

    @property
    def value(self):
        """int: The fill value (its bits)."""
        return int(self._params().value)

    @property
    def element_size(self):
        """int: Element size in bytes (1, 2 or 4)."""
        return int(self._params().elementSize)

    @property
    def width(self):
        """int: Elements per row."""
        return int(self._params().width)

    @property
    def height(self):
        """int: Number of rows."""
        return int(self._params().height)

    @property
    def pitch(self):
        """int: Bytes between rows."""
        return int(self._params().pitch)

    def update(self, *, dst=None, value=None, width=None, height=None, pitch=None, dst_owner=None):
        """Replace parameters of this node for future instantiations.

        Omitted parameters keep their values (``value`` keeps its element
        size).  See :meth:`GraphNode.memset` for their meaning.
        """
        cur = self._params()
        if value is None:
            value = int(cur.value).to_bytes(int(cur.elementSize), "little")
        params, owners = _memset_params(
            int(cur.dst) if dst is None else dst,
            value,
            int(cur.width) if width is None else width,
            int(cur.height) if height is None else height,
            int(cur.pitch) if pitch is None else pitch,
            dst_owner,
        )
        check(lib.cuGraphMemsetNodeSetParams(self._node, params))
        self._gdef._box.keep(*owners)


class MemcpyNode(GraphNode):
    """A memcpy node (see :meth:`GraphNode.memcpy`)."""

    __slots__ = ()

    def _params(self):
        self._check_valid()
        p = ffi.new("CUDA_MEMCPY3D *")
        check(lib.cuGraphMemcpyNodeGetParams(self._node, p))
        return p

    @property
    def dst(self):
        """int: The destination address."""
        p = self._params()
        if p.dstMemoryType == lib.CU_MEMORYTYPE_HOST:
            return as_int_handle(p.dstHost)
        return int(p.dstDevice)

    @property
    def src(self):
        """int: The source address."""
        p = self._params()
        if p.srcMemoryType == lib.CU_MEMORYTYPE_HOST:
            return as_int_handle(p.srcHost)
        return int(p.srcDevice)

    @property
    def size(self):
        """int: Number of bytes copied."""
        return int(self._params().WidthInBytes)

    def update(self, *, dst=None, src=None, size=None, dst_owner=None, src_owner=None):
        """Replace parameters of this node for future instantiations.

        Omitted parameters keep their values.  See :meth:`GraphNode.memcpy`.
        """
        if dst is None:
            dst = self.dst
        if src is None:
            src = self.src
        if size is None:
            size = self.size
        params, owners = _memcpy_params(dst, src, size, dst_owner, src_owner)
        check(lib.cuGraphMemcpyNodeSetParams(self._node, params))
        self._gdef._box.keep(*owners)


class ChildGraphNode(GraphNode):
    """A node running an embedded child graph."""

    __slots__ = ()

    @property
    def child_graph(self):
        """GraphDefinition: A view of the embedded graph (owned by this node)."""
        self._check_valid()
        out = ffi.new("CUgraph *")
        check(lib.cuGraphChildGraphNodeGetGraph(self._node, out))
        from cuda_core.graph._graph_definition import GraphDefinition

        return GraphDefinition._view(out[0], self._gdef._box, self)

    def update(self, child):
        """Replace the embedded graph by a copy of ``child`` (same topology needed).

        Affects future instantiations only.

        Parameters
        ----------
        child : GraphDefinition
        """
        self._check_valid()
        gdef = _require_definition(child, "child")
        params = ffi.new("CUgraphNodeParams *")
        params.type = lib.CU_GRAPH_NODE_TYPE_GRAPH
        params.graph.graph = gdef._graph
        params.graph.ownership = lib.CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE
        check(lib.cuGraphNodeSetParams(self._node, params))
        self._gdef._box.keep(gdef._box.snapshot())


class _EventNode(GraphNode):
    __slots__ = ("_event",)
    _extra = ("_event",)

    @property
    def event(self):
        """Event or None: The event (None when the node was not made through cuda_core)."""
        return self._event


class EventRecordNode(_EventNode):
    """A node recording an event."""

    __slots__ = ()

    def update(self, event):
        """Record ``event`` instead (future instantiations only)."""
        self._check_valid()
        _require_event(event)
        check(lib.cuGraphEventRecordNodeSetEvent(self._node, event._handle))
        self._gdef._box.keep(event)
        self._event = event


class EventWaitNode(_EventNode):
    """A node waiting for an event."""

    __slots__ = ()

    def update(self, event):
        """Wait for ``event`` instead (future instantiations only)."""
        self._check_valid()
        _require_event(event)
        check(lib.cuGraphEventWaitNodeSetEvent(self._node, event._handle))
        self._gdef._box.keep(event)
        self._event = event


class HostCallbackNode(GraphNode):
    """A host callback node.

    As in ``cuda.core``, :attr:`callback` here is the property holding the
    node's callable, which hides the :meth:`GraphNode.callback` builder:
    add a callback after this node with ``node.join().callback(fn)``.
    """

    __slots__ = ("_callback",)
    _extra = ("_callback",)

    @property
    def callback(self):
        """callable or None: The Python callable (None for a ctypes function pointer)."""
        return self._callback

    def update(self, fn, *, user_data=None):
        """Run ``fn`` instead (future instantiations only); see :meth:`GraphNode.callback`."""
        self._check_valid()
        cb = resolve_host_callback(fn, user_data)
        params = ffi.new("CUDA_HOST_NODE_PARAMS *")
        params.fn = cb.c_fn
        params.userData = cb.c_data
        check(lib.cuGraphHostNodeSetParams(self._node, params))
        self._gdef._box.keep(*cb.owners)
        self._callback = cb.callable


class ConditionalNode(GraphNode):
    """A conditional node (base of :class:`IfNode`, :class:`IfElseNode`,
    :class:`WhileNode` and :class:`SwitchNode`).

    A conditional node found in a graph that was not built through
    cuda_core (e.g. by :meth:`GraphDefinition.nodes`) is of this class, with
    ``condition`` and ``cond_type`` None and no ``branches``.
    """

    __slots__ = ("_condition", "_cond_type", "_branches")
    _extra = ("_condition", "_cond_type", "_branches")

    @property
    def condition(self):
        """GraphCondition or None: The condition controlling the node."""
        return self._condition

    @property
    def cond_type(self):
        """GraphConditionalType or None: ``"if"``, ``"while"`` or ``"switch"``."""
        return self._cond_type

    @property
    def branches(self):
        """tuple of GraphDefinition: The body graphs (views owned by this node)."""
        return self._branches or ()


class IfNode(ConditionalNode):
    """An ``if`` node."""

    __slots__ = ()

    @property
    def then(self):
        """GraphDefinition: The body run when the condition is non-zero."""
        return self._branches[0]


class IfElseNode(ConditionalNode):
    """An ``if``/``else`` node."""

    __slots__ = ()

    @property
    def then(self):
        """GraphDefinition: The body run when the condition is non-zero."""
        return self._branches[0]

    @property
    def else_(self):
        """GraphDefinition: The body run when the condition is zero."""
        return self._branches[1]


class WhileNode(ConditionalNode):
    """A ``while`` node."""

    __slots__ = ()

    @property
    def body(self):
        """GraphDefinition: The loop body."""
        return self._branches[0]


class SwitchNode(ConditionalNode):
    """A ``switch`` node (one body per case in :attr:`branches`)."""

    __slots__ = ()


_BY_TYPE = {
    lib.CU_GRAPH_NODE_TYPE_KERNEL: KernelNode,
    lib.CU_GRAPH_NODE_TYPE_MEMCPY: MemcpyNode,
    lib.CU_GRAPH_NODE_TYPE_MEMSET: MemsetNode,
    lib.CU_GRAPH_NODE_TYPE_HOST: HostCallbackNode,
    lib.CU_GRAPH_NODE_TYPE_GRAPH: ChildGraphNode,
    lib.CU_GRAPH_NODE_TYPE_EMPTY: EmptyNode,
    lib.CU_GRAPH_NODE_TYPE_WAIT_EVENT: EventWaitNode,
    lib.CU_GRAPH_NODE_TYPE_EVENT_RECORD: EventRecordNode,
    lib.CU_GRAPH_NODE_TYPE_MEM_ALLOC: AllocNode,
    lib.CU_GRAPH_NODE_TYPE_MEM_FREE: FreeNode,
    lib.CU_GRAPH_NODE_TYPE_CONDITIONAL: ConditionalNode,
}


# --------------------------------------------------------------------------
# Helpers shared with the graph definition and executable graphs.
# --------------------------------------------------------------------------
def _wrap(gdef, c_node):
    """Return the node object for ``c_node`` of graph ``gdef`` (one per driver node)."""
    h = as_int_handle(c_node)
    node = _registry.get((gdef._h, h))
    if node is not None and node.is_valid:
        return node
    out = ffi.new("CUgraphNodeType *")
    check(lib.cuGraphNodeGetType(c_node, out))
    return _BY_TYPE.get(out[0], GraphNode)._make(gdef, c_node)


def _list_nodes(fn, handle):
    """Call a ``(handle, CUgraphNode *, size_t *)`` driver query; return the nodes."""
    n = ffi.new("size_t *")
    check(fn(handle, ffi.NULL, n))
    if not n[0]:
        return []
    arr = ffi.new("CUgraphNode[]", n[0])
    check(fn(handle, arr, n))
    return [arr[i] for i in range(n[0])]


def _node_out():
    try:
        return _tls.node_out
    except AttributeError:
        out = _tls.node_out = ffi.new("CUgraphNode *")
        return out


def _ctx():
    c_ctx = _current_ctx()
    if c_ctx == ffi.NULL:
        raise CUDAError("no CUDA context is current; call Device.set_current() first")
    return c_ctx


def _current_device_id():
    _ctx()
    out = ffi.new("CUdevice *")
    check(lib.cuCtxGetDevice(out))
    return int(out[0])


def _device_id(value, what):
    device_id = getattr(value, "device_id", value)
    index = index_or_none(device_id)
    if index is None:
        raise TypeError(f"{what} must be a Device or an int, not {type(value).__name__}")
    device_id = index
    if device_id < 0:
        raise ValueError(f"{what} must be a non-negative device ordinal, got {device_id}")
    return device_id


def _memory_type(value):
    if value is None:
        return GraphMemoryType.DEVICE
    try:
        return GraphMemoryType(value)
    except ValueError:
        raise ValueError(
            f"memory_type must be one of 'device', 'host', 'managed', got {value!r}"
        ) from None


def _as_size(value, what):
    index = index_or_none(value)
    if index is None:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    value = index
    if not 0 <= value <= _SIZE_MAX:
        raise ValueError(f"{what} must be in [0, 2**64), got {value}")
    return value


def _as_address(value, what):
    index = index_or_none(value)
    if index is None:
        raise TypeError(f"{what} must be an int address or a Buffer, not {type(value).__name__}")
    value = index
    if not 0 <= value <= _SIZE_MAX:
        raise ValueError(f"{what} must be an address in [0, 2**64), got {value}")
    return value


def _operand(value, owner, what):
    """Return ``(address, Buffer or None, owners)`` of a memcpy/memset operand."""
    from cuda_core._memory._buffer import Buffer

    if isinstance(value, Buffer):
        if owner is not None:
            raise ValueError(f"{what}_owner cannot be used when {what} is a Buffer")
        if value.is_closed:
            raise RuntimeError(f"{what} Buffer is closed")
        return value.handle, value, (value,)
    address = _as_address(value, what)
    return address, None, (() if owner is None else (owner,))


def _memory_kind(address):
    """Return the ``CUmemorytype`` to use in a copy for ``address``."""
    mtype = ffi.new("unsigned int *")
    attr = ffi.new("CUpointer_attribute[1]", [lib.CU_POINTER_ATTRIBUTE_MEMORY_TYPE])
    data = ffi.new("void *[1]", [mtype])
    check(lib.cuPointerGetAttributes(1, attr, data, address))
    # Addresses unknown to the driver (e.g. graph allocations not mapped yet)
    # are taken as device addresses.
    if mtype[0] == lib.CU_MEMORYTYPE_HOST:
        return lib.CU_MEMORYTYPE_HOST
    return lib.CU_MEMORYTYPE_DEVICE


def _memcpy_params(dst, src, size, dst_owner, src_owner):
    """Return ``(CUDA_MEMCPY3D *, owners)`` for a 1-D copy."""
    c_dst, dst_buf, dst_keep = _operand(dst, dst_owner, "dst")
    c_src, src_buf, src_keep = _operand(src, src_owner, "src")
    size = _as_size(size, "size")
    if size == 0:
        raise ValueError("size must be > 0 for a memcpy node")
    for buf, what in ((dst_buf, "dst"), (src_buf, "src")):
        if buf is not None and size > buf.size:
            raise ValueError(f"size {size} exceeds the {what} Buffer's size ({buf.size} bytes)")
    p = ffi.new("CUDA_MEMCPY3D *")
    kind = _memory_kind(c_src)
    p.srcMemoryType = kind
    if kind == lib.CU_MEMORYTYPE_HOST:
        p.srcHost = ffi.cast("void *", c_src)
    else:
        p.srcDevice = c_src
    kind = _memory_kind(c_dst)
    p.dstMemoryType = kind
    if kind == lib.CU_MEMORYTYPE_HOST:
        p.dstHost = ffi.cast("void *", c_dst)
    else:
        p.dstDevice = c_dst
    p.WidthInBytes = size
    p.Height = 1
    p.Depth = 1
    return p, dst_keep + src_keep


def _fill_value(value):
    """Return ``(bits, element size)`` of a memset value."""
    if isinstance(value, bool):
        raise TypeError("value must be an int in [0, 256) or a 1, 2 or 4 byte buffer, not bool")
    if isinstance(value, int):
        if not 0 <= value < 256:
            raise ValueError(f"an int fill value must be in [0, 256), got {value}")
        return value, 1
    try:
        raw = memoryview(value).tobytes()
    except TypeError:
        raise TypeError(
            "value must be an int in [0, 256) or an object supporting the buffer protocol "
            f"(1, 2 or 4 bytes), not {type(value).__name__}"
        ) from None
    if len(raw) not in (1, 2, 4):
        raise ValueError(f"a fill value must be 1, 2 or 4 bytes long, got {len(raw)} bytes")
    return int.from_bytes(raw, "little"), len(raw)


def _memset_params(dst, value, width, height, pitch, dst_owner):
    """Return ``(CUDA_MEMSET_NODE_PARAMS *, owners)``."""
    c_dst, buf, keep = _operand(dst, dst_owner, "dst")
    bits, elem = _fill_value(value)
    width = _as_size(width, "width")
    height = _as_size(height, "height")
    pitch = _as_size(pitch, "pitch")
    if width == 0 or height == 0:
        raise ValueError(f"width and height must be >= 1, got width={width}, height={height}")
    row = width * elem
    if height > 1 and pitch < row:
        raise ValueError(f"pitch ({pitch}) must be >= width * element size ({row}) when height > 1")
    if buf is not None:
        needed = (height - 1) * pitch + row
        if needed > buf.size:
            raise ValueError(
                f"the memset covers {needed} bytes, more than the dst Buffer's {buf.size}"
            )
    if c_dst % elem:
        raise ValueError(f"dst {c_dst:#x} is not aligned to the element size ({elem})")
    p = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
    p.dst = c_dst
    p.pitch = pitch if height > 1 else 0
    p.value = bits
    p.elementSize = elem
    p.width = width
    p.height = height
    return p, keep


def _kernel_params(config, kernel, args, *, current=None):
    """Return ``(CUDA_KERNEL_NODE_PARAMS *, owners, kernel)`` for a kernel node.

    With ``current`` (the node's present parameters), ``kernel`` and
    ``args`` may be None: the present kernel and argument values are kept.
    """
    from cuda_core._kernel import Kernel
    from cuda_core._launch_config import _coerce_config

    config = _coerce_config(config)
    if config.cluster is not None or config.is_cooperative:
        raise NotImplementedError("clustered or cooperative graph kernel nodes are not supported")
    p = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    owners = []
    if kernel is not None:
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel, not {type(kernel).__name__}")
        kernel._require_open()
        p.kern = kernel._handle
        p.func = ffi.NULL
        p.ctx = ffi.NULL
        owners.append(kernel)
    else:
        p.func = current.func
        p.kern = current.kern
        p.ctx = current.ctx
    if args is not None:
        args = tuple(args)
        c_params, storage = _pack_args(kernel, args)
        p.kernelParams = c_params
        p.extra = ffi.NULL
        owners.extend((args, storage, c_params))
    else:
        # Keep the node's arguments as the driver holds them: an array of
        # pointers, or one parameter buffer (a node captured from launch()).
        p.kernelParams = current.kernelParams
        p.extra = current.extra
    grid = config.grid
    block = config.block
    p.gridDimX, p.gridDimY, p.gridDimZ = grid
    p.blockDimX, p.blockDimY, p.blockDimZ = block
    p.sharedMemBytes = config.shmem_size
    return p, owners, kernel


def _pack_args(kernel, args):
    """Pack ``args`` as :func:`~cuda_core.launch` does; return ``(void **, storage)``.

    Uses the launcher's cached argument plan for this kernel and argument
    types; the packed values are copied into storage owned by the caller.
    """
    from cuda_core import _arg_plan

    if _arg_plan._IS_PYPY:
        st = _arg_plan._thread_state(0)
        plan, st = _arg_plan._slow_fill(kernel, st, 0, 0, args)
        blob = ffi.buffer(st.buf, plan.size)[:]
    else:
        plan, blob = _arg_plan._slow_pack(kernel, 0, 0, args)
    n = plan.nargs
    storage = ffi.new("char[]", bytes(blob) or b"\0")
    c_params = ffi.new("void *[]", max(n, 1))
    offsets = plan.layout.offsets
    for i in range(n):
        c_params[i] = storage + offsets[i]
    return c_params, storage


def _require_definition(value, what):
    from cuda_core.graph._graph_definition import GraphDefinition

    if not isinstance(value, GraphDefinition):
        raise TypeError(f"{what} must be a GraphDefinition, not {type(value).__name__}")
    value._check_valid()
    return value


def _require_event(event):
    if not isinstance(event, Event):
        raise TypeError(f"event must be an Event, not {type(event).__name__}")
    if event.is_closed:
        raise RuntimeError("Event is closed; it cannot be used after close()")
