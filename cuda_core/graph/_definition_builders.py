# SPDX-License-Identifier: Apache-2.0
"""The builder methods of graph nodes (``launch``, ``memcpy``, ``record``, ...).

:class:`~cuda_core.graph.GraphNode` inherits them from :class:`_DefinitionBuilders`;
:class:`~cuda_core.graph.GraphDefinition` calls them on its entry node.
Each adds a node that depends on the node it is called on and returns the
new node, typed by kind.

The conditional builders (``if_then``, ``if_else``, ``while_loop``,
``switch``) come from :mod:`~cuda_core.graph._conditional_builders`; the node
classes are looked up in :mod:`~cuda_core.graph._node_registry`, where each
registers itself when its module is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from cuda_core._coerce import as_int_handle
from cuda_core._coerce import as_size as _as_size
from cuda_core._context import _current_device_id
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._loader import driver_at_least
from cuda_core.graph._attachments import GraphBox, drain, prepare, release, resolve_host_callback
from cuda_core.graph._conditional_builders import _ConditionalBuilders
from cuda_core.graph._node_params import (
    _as_address,
    _ctx,
    _device_id,
    _kernel_params,
    _memcpy_params,
    _memory_type,
    _memset_params,
    _node_out,
    _require_event,
)
from cuda_core.graph._node_registry import _CLASSES, _require_definition
from cuda_core.graph._types import GraphMemoryType

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core._event import Event
    from cuda_core._kernel import Kernel
    from cuda_core._launch_config import LaunchConfig
    from cuda_core._memory._buffer import Buffer
    from cuda_core.graph._child_graph_node import ChildGraphNode
    from cuda_core.graph._event_nodes import EventRecordNode, EventWaitNode
    from cuda_core.graph._graph_definition import GraphDefinition
    from cuda_core.graph._graph_node import EmptyNode
    from cuda_core.graph._host_callback_node import HostCallbackNode
    from cuda_core.graph._kernel_node import KernelNode
    from cuda_core.graph._memory_nodes import AllocNode, FreeNode, MemcpyNode, MemsetNode

    _C = TypeVar("_C", bound=type)

__all__: list[str] = []


class _DefinitionBuilders(_ConditionalBuilders):
    """The builder methods of :class:`~cuda_core.graph.GraphNode` (its only subclass).

    They use the node's ``_gdef``, ``_node`` and ``_dep`` slots and its
    ``_check_valid()``.
    """

    __slots__ = ()

    # The slots and method of GraphNode used here.
    _gdef: GraphDefinition
    _node: Any  # CUgraphNode cdata, None for the entry node
    _dep: Any
    _destroyed: bool

    if TYPE_CHECKING:

        def _check_valid(self) -> None: ...

    # ------------------------------------------------------------------
    # Builder methods: each adds a node that depends on this one.
    # ------------------------------------------------------------------
    def launch(
        self, config: LaunchConfig | dict[str, Any], kernel: Kernel, *args: Any
    ) -> KernelNode:
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
        params, owners, kernel = _kernel_params(config, kernel, args)  # type: ignore[assignment]  # the Kernel given
        c_node = self._add(
            owners, lambda out, g, deps, n: lib.cuGraphAddKernelNode(out, g, deps, n, params)
        )
        node: KernelNode = _CLASSES["KernelNode"]._make(self._gdef, c_node, kernel=kernel)
        return node

    def join(self, *nodes: _DefinitionBuilders) -> EmptyNode:
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
            if not isinstance(other, _DefinitionBuilders):
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
        node: EmptyNode = _CLASSES["EmptyNode"]._make(self._gdef, out[0])
        return node

    def allocate(
        self,
        size: int,
        *,
        device: Device | int | None = None,
        memory_type: GraphMemoryType | str = "device",
        peer_access: Iterable[Device | int] | None = None,
    ) -> AllocNode:
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
            For a negative size or an unknown memory type.
        CUDAError
            If the driver refuses the allocation (a size of 0, for one).

        Notes
        -----
        Graph allocations cannot be shared through IPC.
        """
        self._check_valid()
        size = _as_size(size, "size")  # 0 goes to the driver, which refuses it (as cuda.core)
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
        node: AllocNode = _CLASSES["AllocNode"]._make(self._gdef, c_node, meta=meta)
        return node

    def deallocate(self, dptr: int) -> FreeNode:
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
        node: FreeNode = _CLASSES["FreeNode"]._make(self._gdef, c_node)
        return node

    def memset(
        self,
        dst: Buffer | int,
        value: Any,
        width: int,
        height: int = 1,
        pitch: int = 0,
        *,
        dst_owner: object = None,
    ) -> MemsetNode:
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
        node: MemsetNode = _CLASSES["MemsetNode"]._make(self._gdef, c_node)
        return node

    def memcpy(
        self,
        dst: Buffer | int,
        src: Buffer | int,
        size: int,
        *,
        dst_owner: object = None,
        src_owner: object = None,
    ) -> MemcpyNode:
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
        node: MemcpyNode = _CLASSES["MemcpyNode"]._make(self._gdef, c_node)
        return node

    def embed(self, child: GraphDefinition) -> ChildGraphNode:
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
        node: ChildGraphNode = _CLASSES["ChildGraphNode"]._make(self._gdef, c_node)
        return node

    def record(self, event: Event) -> EventRecordNode:
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
        node: EventRecordNode = _CLASSES["EventRecordNode"]._make(self._gdef, c_node, event=event)
        return node

    def wait(self, event: Event) -> EventWaitNode:
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
        node: EventWaitNode = _CLASSES["EventWaitNode"]._make(self._gdef, c_node, event=event)
        return node

    def callback(
        self, fn: Callable[..., Any], *, user_data: int | bytes | None = None
    ) -> HostCallbackNode:
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
        node: HostCallbackNode = _CLASSES["HostCallbackNode"]._make(
            self._gdef, c_node, callback=cb.callable
        )
        return node

    # ------------------------------------------------------------------
    # Private helpers.

    def _add(self, owners: Iterable[object], add: Callable[[Any, Any, Any, int], int]) -> Any:
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

    def _deps(self) -> tuple[Any, int]:
        """Return ``(dependencies pointer, count)`` for a node depending on this one."""
        if self._node is None:
            return ffi.NULL, 0
        dep = self._dep
        if dep is None:
            dep = self._dep = ffi.new("CUgraphNode[1]", [self._node])
        return dep, 1


def _adopt_embedded(
    box: GraphBox, c_graph: Any, c_node: Any, source_box: GraphBox, c_source: Any
) -> None:
    """Record the graph embedded in child node ``c_node`` and map its attachments.

    CUDA cloned ``c_source`` (of hierarchy ``source_box``) into the node,
    with the references its nodes hold; this makes the copy's nodes known
    to ``box`` (see :meth:`GraphBox.copy_maps`).
    """
    out = ffi.new("CUgraph *")
    check(lib.cuGraphChildGraphNodeGetGraph(c_node, out))
    box.add_child(c_graph, c_node, out[0])
    box.copy_maps(out[0], source_box, c_source)
