# SPDX-License-Identifier: Apache-2.0
"""The builder methods of graph nodes (``launch``, ``memcpy``, ``if_then``, ...).

:class:`~cuda_core.graph.GraphNode` inherits them from :class:`_NodeBuilders`;
:class:`~cuda_core.graph.GraphDefinition` calls them on its entry node.
Each adds a node that depends on the node it is called on and returns the
new node, typed by kind.

The node classes (and :class:`~cuda_core.graph.GraphDefinition`, whose views
conditional nodes hold) are defined in modules above this one, since they
derive from :class:`~cuda_core.graph.GraphNode`; each registers itself here
with :func:`_register` when its module is imported.
"""

from __future__ import annotations

from cuda_core._context import _current_device_id
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._loader import driver_at_least
from cuda_core._utils import as_int_handle
from cuda_core.graph._attachments import drain, prepare, release, resolve_host_callback
from cuda_core.graph._graph_condition import (
    GraphCondition,
    _conditional_params,
    _switch_count,
)
from cuda_core.graph._node_params import (
    _as_address,
    _as_size,
    _ctx,
    _device_id,
    _kernel_params,
    _memcpy_params,
    _memory_type,
    _memset_params,
    _node_out,
    _require_event,
)
from cuda_core.graph._types import GraphConditionalType, GraphMemoryType

__all__ = []

# The registered classes, by name.
_CLASSES = {}
# CUgraphNodeType -> the node class for nodes of that type found in a graph.
_BY_TYPE = {}


class _NodeBuilders:
    """The builder methods of :class:`~cuda_core.graph.GraphNode` (its only subclass).

    They use the node's ``_gdef``, ``_node`` and ``_dep`` slots and its
    ``_check_valid()``.
    """

    __slots__ = ()

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
        c_node = self._add(
            owners, lambda out, g, deps, n: lib.cuGraphAddKernelNode(out, g, deps, n, params)
        )
        return _CLASSES["KernelNode"]._make(self._gdef, c_node, kernel=kernel)

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
        CUDAError
            If the driver refuses a dependency (a node of another graph, a
            node given twice).

        Notes
        -----
        Destroyed nodes among ``nodes`` are skipped, as in ``cuda.core``.
        """
        self._check_valid()
        handles = [] if self._node is None else [self._node]
        for i, other in enumerate(nodes):
            if not isinstance(other, _NodeBuilders):
                raise TypeError(
                    f"join() argument {i} must be a GraphNode, not {type(other).__name__}"
                )
            # Destroyed nodes and entry nodes add no dependency; nodes of
            # other graphs and repeated nodes go to the driver, which judges.
            if other._node is not None and not other._destroyed:
                handles.append(other._node)
        deps = ffi.new("CUgraphNode[]", handles) if handles else ffi.NULL
        drain()
        out = _node_out()
        check(lib.cuGraphAddEmptyNode(out, self._gdef._graph, deps, len(handles)))
        return _CLASSES["EmptyNode"]._make(self._gdef, out[0])

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
            if not driver_at_least(13, 0):
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
        c_node = self._add(
            (), lambda out, g, deps, n: lib.cuGraphAddMemAllocNode(out, g, deps, n, params)
        )
        meta = (as_int_handle(params.dptr), size, device_id, kind, peers)
        return _CLASSES["AllocNode"]._make(self._gdef, c_node, meta=meta)

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
        c_node = self._add(
            (), lambda out, g, deps, n: lib.cuGraphAddMemFreeNode(out, g, deps, n, address)
        )
        return _CLASSES["FreeNode"]._make(self._gdef, c_node)

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
        c_ctx = _ctx()
        c_node = self._add(
            owners, lambda out, g, deps, n: lib.cuGraphAddMemsetNode(out, g, deps, n, params, c_ctx)
        )
        return _CLASSES["MemsetNode"]._make(self._gdef, c_node)

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
        c_ctx = _ctx()
        c_node = self._add(
            owners, lambda out, g, deps, n: lib.cuGraphAddMemcpyNode(out, g, deps, n, params, c_ctx)
        )
        return _CLASSES["MemcpyNode"]._make(self._gdef, c_node)

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
        c_graph = self._gdef._graph
        c_node = self._add(
            (), lambda out, g, deps, n: lib.cuGraphAddChildGraphNode(out, g, deps, n, gdef._graph)
        )
        try:
            _adopt_embedded(self._gdef._box, c_graph, c_node, gdef._box, gdef._graph)
        except BaseException:
            lib.cuGraphDestroyNode(c_node)
            raise
        return _CLASSES["ChildGraphNode"]._make(self._gdef, c_node)

    def record(self, event):
        """Add a node recording ``event``.

        Returns
        -------
        EventRecordNode
        """
        self._check_valid()
        claim = _require_event(event)
        c_event = event._handle
        c_node = self._add(
            (claim,),
            lambda out, g, deps, n: lib.cuGraphAddEventRecordNode(out, g, deps, n, c_event),
        )
        return _CLASSES["EventRecordNode"]._make(self._gdef, c_node, event=event)

    def wait(self, event):
        """Add a node waiting for ``event``.

        Returns
        -------
        EventWaitNode
        """
        self._check_valid()
        claim = _require_event(event)
        c_event = event._handle
        c_node = self._add(
            (claim,), lambda out, g, deps, n: lib.cuGraphAddEventWaitNode(out, g, deps, n, c_event)
        )
        return _CLASSES["EventWaitNode"]._make(self._gdef, c_node, event=event)

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
        c_node = self._add(
            cb.owners, lambda out, g, deps, n: lib.cuGraphAddHostNode(out, g, deps, n, params)
        )
        return _CLASSES["HostCallbackNode"]._make(self._gdef, c_node, callback=cb.callable)

    def if_then(self, condition):
        """Add an ``if`` node; its body (:attr:`IfNode.then`) runs when ``condition`` != 0.

        Returns
        -------
        IfNode
        """
        return self._conditional(condition, GraphConditionalType.IF, 1, "IfNode", (12, 3))

    def if_else(self, condition):
        """Add an ``if``/``else`` node (bodies :attr:`IfElseNode.then` and ``else_``).

        Returns
        -------
        IfElseNode
        """
        return self._conditional(condition, GraphConditionalType.IF, 2, "IfElseNode", (12, 8))

    def while_loop(self, condition):
        """Add a ``while`` node; its body (:attr:`WhileNode.body`) repeats while ``condition`` != 0.

        Returns
        -------
        WhileNode
        """
        return self._conditional(condition, GraphConditionalType.WHILE, 1, "WhileNode", (12, 3))

    def switch(self, condition, count):
        """Add a ``switch`` node with ``count`` bodies (:attr:`SwitchNode.branches`).

        The body whose index equals ``condition`` runs; none if it is out of
        range.

        Returns
        -------
        SwitchNode
        """
        count = _switch_count(count)
        return self._conditional(
            condition, GraphConditionalType.SWITCH, count, "SwitchNode", (12, 8)
        )

    # ------------------------------------------------------------------
    # Private helpers.

    def _add(self, owners, add):
        """Add a node depending on this one and attach ``owners`` to it; return the node.

        ``add(out, c_graph, deps, count)`` calls the driver.  The owners are
        attached to the graph first, so that the node never exists without
        them; if adding fails, the attachment is released again.
        """
        drain()
        gdef = self._gdef
        c_graph = gdef._graph
        uo = prepare(c_graph, owners) if owners else None
        out = _node_out()
        deps, n = self._deps()
        status = add(out, c_graph, deps, n)
        if status:
            if uo is not None:
                release(c_graph, uo)
            check(status)
        c_node = out[0]
        gdef._box.commit(c_graph, c_node, uo)
        return c_node

    def _deps(self):
        """Return ``(dependencies pointer, count)`` for a node depending on this one."""
        if self._node is None:
            return ffi.NULL, 0
        dep = self._dep
        if dep is None:
            dep = self._dep = ffi.new("CUgraphNode[1]", [self._node])
        return dep, 1

    def _conditional(self, condition, kind, size, name, min_driver):
        self._check_valid()
        if not isinstance(condition, GraphCondition):
            raise TypeError(
                "condition must be a GraphCondition (from create_condition()), got "
                f"{type(condition).__name__}"
            )
        # As in cuda.core, no driver version check here: an old driver refuses the node.
        c_type = {
            GraphConditionalType.IF: lib.CU_GRAPH_COND_TYPE_IF,
            GraphConditionalType.WHILE: lib.CU_GRAPH_COND_TYPE_WHILE,
            GraphConditionalType.SWITCH: lib.CU_GRAPH_COND_TYPE_SWITCH,
        }[kind]
        params = _conditional_params(condition, c_type, size, _ctx())
        c_graph = self._gdef._graph
        c_node = self._add((), lambda out, g, deps, n: lib.cuGraphAddNode(out, g, deps, n, params))
        node = _CLASSES[name]._make(self._gdef, c_node, condition=condition, cond_type=kind)
        box = self._gdef._box
        bodies = [params.conditional.phGraph_out[i] for i in range(size)]
        for body in bodies:
            box.add_child(c_graph, c_node, body)
        node._branches = tuple(
            _CLASSES["GraphDefinition"]._view(body, box, node) for body in bodies
        )
        return node


def _adopt_embedded(box, c_graph, c_node, source_box, c_source):
    """Record the graph embedded in child node ``c_node`` and map its attachments.

    CUDA cloned ``c_source`` (of hierarchy ``source_box``) into the node,
    with the references its nodes hold; this makes the copy's nodes known
    to ``box`` (see :meth:`GraphBox.copy_maps`).
    """
    out = ffi.new("CUgraph *")
    check(lib.cuGraphChildGraphNodeGetGraph(c_node, out))
    box.add_child(c_graph, c_node, out[0])
    box.copy_maps(out[0], source_box, c_source)


def _require_definition(value, what):
    """Return ``value`` if it is a valid GraphDefinition; raise TypeError otherwise."""
    if not isinstance(value, _CLASSES["GraphDefinition"]):
        raise TypeError(f"{what} must be a GraphDefinition, not {type(value).__name__}")
    value._check_valid()
    return value


def _register(c_type=None):
    """Class decorator: register a class by name (and as the class of node type ``c_type``)."""

    def register(cls):
        _CLASSES[cls.__name__] = cls
        if c_type is not None:
            _BY_TYPE[c_type] = cls
        return cls

    return register
