# SPDX-License-Identifier: Apache-2.0
"""Keeping what a graph uses alive, and running Python host callbacks.

Lifetimes
---------
A graph node refers to things CUDA does not own: kernels (their library),
packed kernel arguments, memory, events, Python callbacks.  They must stay
alive as long as any consumer of the node can run it: the graph definition,
its embedded copies, the executable graphs instantiated from it, and
launches still in flight after the executable was destroyed.

* Ownership is per node *version*: adding a node (or changing a node's
  parameters) bundles what it uses in one attachment, owned by a CUDA
  *user object*, and the node's ``CUgraph`` holds one reference to it.
  A Buffer operand is kept by a claim on its allocation and an event by a
  claim on its ``CUevent`` (see ``_memory._release`` and ``_event``), not by
  the Python wrapper: closing the wrapper leaves the memory or event alive
  until the last attachment using it goes.
* CUDA copies a graph's references when it embeds the graph as a child
  (``embed``), instantiates it (the executable keeps what its nodes use),
  and holds them for launches in flight; a whole-graph update replaces the
  executable's references by the source's.  So each consumer keeps exactly
  the versions it uses.
* :class:`GraphBox` maps each node to its current attachment, so that
  ``node.destroy()`` and parameter changes release the source graph's
  reference at once; destroying a child-graph or conditional node lets CUDA
  release the references of the graphs inside it.
* A user object's destructor runs on a driver thread where neither CUDA nor
  Python may be called.  It is a C function (``cc_user_object_release`` in
  the extension) that queues the object's token and wakes a Python thread
  that drains the queue (``_drain``: a pending call on CPython, a pipe and a
  daemon thread on PyPy), so what a graph kept alive goes without waiting
  for a later cuda_core call; cuda_core also drains at its own safe points
  (node and graph creation, instantiation, ``destroy()``, ``Graph.close``,
  ...).  That is where the claims drop, and memory may be freed, never on
  the driver thread.

Host callbacks
--------------
A Python callable becomes a host node (or a captured ``cuLaunchHostFunc``)
through the extension's ``extern "Python"`` trampoline ``cc_host_callback``
with a ``ffi.new_handle`` as user data; the handle is attached to the node
like any other owner.  An exception raised by a callback is reported
through :func:`sys.unraisablehook`, as ``cuda.core`` does; it never reaches
the driver.
"""

from __future__ import annotations

import ctypes
import itertools
import weakref
from collections.abc import Iterable
from typing import Any, Callable

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, warn_cuda
from cuda_core.graph._drain import _CLAIMS, _Attachment, _release_token, hold

# The graph modules drain at their safe points through this module; tests
# read the live tokens here.
from cuda_core.graph._drain import _LIVE as _LIVE
from cuda_core.graph._drain import drain as drain
from cuda_core.graph._drain import live_count as live_count

__all__: list[str] = []

# Tokens of the user objects (see ``_drain``: token -> what it keeps alive).
_TOKENS = itertools.count(1)
_RELEASE_FN = ffi.addressof(lib, "cc_user_object_release")


# --------------------------------------------------------------------------
# Graph hierarchies.
# --------------------------------------------------------------------------
class GraphBox:
    """The Python side of one graph hierarchy.

    Holds the root ``CUgraph`` (destroying it on :meth:`close`, or from a
    finalizer, when ``owned``) and, for every graph of the hierarchy (root,
    child and conditional-body graphs), which user object holds the current
    attachment of each node.

    Parameters
    ----------
    c_root : cdata ``CUgraph``
        The root graph.
    owned : bool
        Whether this box destroys the root graph.
    """

    __slots__ = ("root", "owned", "closed", "maps", "parents", "_finalizer", "__weakref__")

    root: Any  # CUgraph cdata
    owned: bool
    closed: bool
    maps: dict[int, dict[int, tuple[Any, _Attachment]]]
    parents: dict[int, tuple[int, int]]
    _finalizer: weakref.finalize[[Any], GraphBox] | None

    def __init__(self, c_root: Any, owned: bool) -> None:
        self.root = c_root
        self.owned = owned
        self.closed = False
        # graph handle -> {node handle: (CUuserObject, _Attachment) of its current version}
        self.maps = {}
        # child graph handle -> (parent graph handle, handle of the node owning it)
        self.parents = {}
        self._finalizer = weakref.finalize(self, _destroy_graph, c_root) if owned else None

    def adopt(self) -> None:
        """Take ownership of the root graph (after a capture ended)."""
        if not self.owned:
            self.owned = True
            self._finalizer = weakref.finalize(self, _destroy_graph, self.root)

    def close(self) -> None:
        """Destroy an owned root graph now (idempotent).

        Raises
        ------
        CUDAError
            If ``cuGraphDestroy`` fails.
        """
        if self.closed:
            return
        self.closed = True
        self.maps.clear()
        self.parents.clear()
        if self._finalizer is not None and self._finalizer.detach() is not None:
            check(lib.cuGraphDestroy(self.root))
        drain()

    # ------------------------------------------------------------------
    # Node attachments.
    # ------------------------------------------------------------------
    def commit(self, c_graph: Any, c_node: Any, entry: tuple[Any, _Attachment] | None) -> None:
        """Record ``entry`` (from :func:`prepare`) as the attachment of new node ``c_node``."""
        if entry is not None:
            self.maps.setdefault(as_int_handle(c_graph), {})[as_int_handle(c_node)] = entry

    def current(self, c_graph: Any, c_node: Any) -> tuple[object, ...]:
        """Return the owners of ``c_node``'s current attachment, claims renewed (or ``()``).

        For a parameter change that keeps some of what the node used: the
        new version holds its own claims.
        """
        entry = self.maps.get(as_int_handle(c_graph), {}).get(as_int_handle(c_node))
        if entry is None:
            return ()
        return tuple(o.clone() if isinstance(o, _CLAIMS) else o for o in entry[1].owners)

    def replace(self, c_graph: Any, c_node: Any, entry: tuple[Any, _Attachment] | None) -> None:
        """Make ``entry`` (or None) the attachment of ``c_node``; release the previous one."""
        nodes = self.maps.setdefault(as_int_handle(c_graph), {})
        key = as_int_handle(c_node)
        old = nodes.pop(key, None)
        if entry is not None:
            nodes[key] = entry
        if old is not None:
            release(c_graph, old)

    def detach(self, c_graph: Any, c_node: Any) -> None:
        """Forget destroyed node ``c_node``: release its attachment and its child graphs' maps."""
        graph_h = as_int_handle(c_graph)
        node_h = as_int_handle(c_node)
        old = self.maps.get(graph_h, {}).pop(node_h, None)
        self.forget_children(graph_h, node_h)
        if old is not None:
            release(c_graph, old)

    def forget_children(self, graph_h: int, node_h: int) -> None:
        """Drop the maps of the graphs inside node ``node_h`` (CUDA destroyed them).

        CUDA releases those graphs' references itself.
        """
        owners = [(graph_h, node_h)]
        while owners:
            owner = owners.pop()
            for child, parent in list(self.parents.items()):
                if parent != owner:
                    continue
                del self.parents[child]
                self.maps.pop(child, None)
                owners.extend(p for p in self.parents.values() if p[0] == child)

    def add_child(self, c_parent: Any, c_node: Any, c_child: Any) -> None:
        """Record that graph ``c_child`` belongs to node ``c_node`` of ``c_parent``."""
        self.parents[as_int_handle(c_child)] = (as_int_handle(c_parent), as_int_handle(c_node))

    def copy_maps(self, c_clone: Any, source: GraphBox, c_source: Any) -> None:
        """Map the attachments of ``c_source`` (of hierarchy ``source``) onto its clone ``c_clone``.

        CUDA copied the references when it cloned the graph (``embed``);
        this records which cloned node holds which, recursively through
        nested child graphs, so that destroying a node of the copy releases
        the copy's reference.
        """
        pending = [(c_clone, c_source)]
        while pending:
            clone, src = pending.pop()
            src_h = as_int_handle(src)
            for node_h, entry in source.maps.get(src_h, {}).items():
                self.commit(clone, _find_in_clone(node_h, clone), entry)
            for child_h, (parent_h, node_h) in list(source.parents.items()):
                if parent_h != src_h:
                    continue
                c_node = _find_in_clone(node_h, clone)
                out = ffi.new("CUgraph *")
                check(lib.cuGraphChildGraphNodeGetGraph(c_node, out))
                self.add_child(clone, c_node, out[0])
                pending.append((out[0], ffi.cast("CUgraph", child_h)))


def _find_in_clone(node_h: int, c_clone: Any) -> Any:
    out = ffi.new("CUgraphNode *")
    check(lib.cuGraphNodeFindInClone(out, ffi.cast("CUgraphNode", node_h), c_clone))
    return out[0]


def _destroy_graph(c_graph: Any) -> None:
    """Finalizer of an owned root graph (never raises; failures warn)."""
    warn_cuda("cuGraphDestroy (graph finalizer)", lib.cuGraphDestroy(c_graph))


# --------------------------------------------------------------------------
# CUDA user objects.
# --------------------------------------------------------------------------
def _new_user_object(obj: object) -> Any:
    """Create a user object (one reference, ours) keeping ``obj`` alive."""
    token = next(_TOKENS)
    hold(token, obj)
    out = ffi.new("CUuserObject *")
    status = lib.cuUserObjectCreate(
        out,
        ffi.cast("void *", token),
        _RELEASE_FN,
        1,
        lib.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC,
    )
    if status:
        _release_token(token)  # no user object: nothing keeps obj
        check(status, "cuUserObjectCreate")
    return out[0]


def prepare(c_graph: Any, owners: Iterable[object]) -> tuple[Any, _Attachment] | None:
    """Attach ``owners`` to ``c_graph`` before adding (or changing) the node that uses them.

    Returns the entry ``(CUuserObject, _Attachment)`` (to
    :meth:`GraphBox.commit` once the node exists, or to :func:`release` if
    adding it fails), or None when there is nothing to keep.
    """
    owners = tuple(o for o in owners if o is not None)
    if not owners:
        return None
    att = _Attachment(owners)
    return retain_temporarily(c_graph, att), att


def release(c_graph: Any, entry: tuple[Any, _Attachment]) -> None:
    """Drop ``c_graph``'s reference to an entry from :func:`prepare` (and drain)."""
    status = lib.cuGraphReleaseUserObject(c_graph, entry[0], 1)
    drain()
    check(status, "cuGraphReleaseUserObject")


def release_temporary(c_graph: Any, uo: Any) -> None:
    """Drop the reference :func:`retain_temporarily` put on ``c_graph``."""
    status = lib.cuGraphReleaseUserObject(c_graph, uo, 1)
    drain()
    check(status, "cuGraphReleaseUserObject")


def retain_temporarily(c_graph: Any, obj: object) -> Any:
    """Retain a new user object for ``obj`` on ``c_graph``; return it.

    Also used around instantiation and whole-graph update: the executable
    copies the reference, then :func:`release_temporary` drops the source's
    one.
    """
    uo = _new_user_object(obj)
    status = lib.cuGraphRetainUserObject(c_graph, uo, 1, lib.CU_GRAPH_USER_OBJECT_MOVE)
    if status:
        lib.cuUserObjectRelease(uo, 1)
        drain()
        check(status, "cuGraphRetainUserObject")
    return uo


# --------------------------------------------------------------------------
# Host callbacks.
# --------------------------------------------------------------------------
@ffi.def_extern()  # type: ignore[untyped-decorator]  # ffi is typed Any
def cc_host_callback(user_data: Any) -> None:
    """Run the Python callable behind ``user_data`` (a ``ffi.new_handle``).

    Called by the driver on its callback thread.  An exception is not caught
    here: cffi reports it through :func:`sys.unraisablehook` and returns to
    the driver normally.
    """
    ffi.from_handle(user_data)()


class HostCallback:
    """A host function resolved for the driver.

    Attributes
    ----------
    c_fn : cdata ``CUhostFn``
    c_data : cdata ``void *``
    owners : tuple
        What must stay alive while the driver may call ``c_fn``.
    callable : callable or None
        The Python callable (None for a ctypes function pointer).
    """

    __slots__ = ("c_fn", "c_data", "owners", "callable")

    c_fn: Any
    c_data: Any
    owners: tuple[object, ...]
    callable: Callable[[], object] | None

    def __init__(
        self,
        c_fn: Any,
        c_data: Any,
        owners: tuple[object, ...],
        fn: Callable[[], object] | None,
    ) -> None:
        self.c_fn = c_fn
        self.c_data = c_data
        self.owners = owners
        self.callable = fn


def resolve_host_callback(fn: object, user_data: object) -> HostCallback:
    """Turn ``fn`` (and ``user_data``) into a :class:`HostCallback`.

    ``fn`` is a Python callable taking no arguments (``user_data`` must be
    None), or a ctypes function pointer of type
    ``ctypes.CFUNCTYPE(None, ctypes.c_void_p)``, which receives ``user_data``:
    an int (passed as a raw pointer; the caller keeps the memory alive), a
    bytes-like object (copied, the copy lives with the node; empty bytes give
    NULL) or None.

    Raises
    ------
    TypeError
        If ``fn`` is not callable, a ctypes function pointer has another
        prototype, or ``user_data`` is of an unsupported type.
    ValueError
        If ``user_data`` is given with a Python callable, or an int
        ``user_data`` is not a valid address.
    """
    if isinstance(fn, ctypes._CFuncPtr):  # type: ignore[attr-defined]  # private base class
        _check_ctypes_prototype(fn)
        address = ctypes.cast(fn, ctypes.c_void_p).value
        if not address:
            raise ValueError("the ctypes function pointer is NULL")
        c_fn = ffi.cast("CUhostFn", address)
        owners: tuple[object, ...] = (fn,)
        if user_data is None:
            c_data = ffi.NULL
        elif isinstance(user_data, int) and not isinstance(user_data, bool):
            if not 0 <= user_data < 1 << 64:
                raise ValueError(f"user_data must be an address in [0, 2**64), got {user_data}")
            c_data = ffi.cast("void *", user_data)
        else:
            try:
                raw = memoryview(user_data).tobytes()  # type: ignore[arg-type]  # checked here
            except TypeError:
                raise TypeError(
                    "user_data must be an int (an address), a bytes-like object or None, "
                    f"not {type(user_data).__name__}"
                ) from None
            if raw:
                copy = ffi.new("char[]", raw)
                c_data = copy
                owners = (fn, copy)
            else:  # no bytes: no copy, NULL user data (as cuda.core does)
                c_data = ffi.NULL
        return HostCallback(c_fn, c_data, owners, None)
    if not callable(fn):
        raise TypeError(f"callback must be callable, got {type(fn).__name__}")
    if user_data is not None:
        raise ValueError("user_data is only supported with ctypes function pointers")
    handle = ffi.new_handle(fn)
    return HostCallback(lib.cc_host_callback, handle, (fn, handle), fn)


def _check_ctypes_prototype(fn: object) -> None:
    """Raise TypeError unless ``fn`` is declared ``void (*)(void *)``."""
    restype = getattr(fn, "restype", None)
    argtypes = tuple(getattr(fn, "argtypes", None) or ())
    if restype is not None or argtypes != (ctypes.c_void_p,):
        names = ", ".join(getattr(t, "__name__", repr(t)) for t in argtypes)
        rname = "None" if restype is None else getattr(restype, "__name__", repr(restype))
        raise TypeError(
            "a ctypes host callback must be declared ctypes.CFUNCTYPE(None, ctypes.c_void_p) "
            f"(the driver's CUhostFn); got restype {rname} and argtypes ({names})"
        )
