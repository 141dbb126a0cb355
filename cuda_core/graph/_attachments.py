# SPDX-License-Identifier: Apache-2.0
"""Keeping what a graph uses alive, and running Python host callbacks.

Lifetimes
---------
A graph node refers to things CUDA does not own: kernels (their library),
buffers, events, packed kernel arguments, Python callbacks.  They must stay
alive as long as any consumer of the node can run it: the graph definition,
the executable graphs instantiated from it, and launches still in flight
after the executable was destroyed.

* Each graph hierarchy (a root ``CUgraph`` with its child and conditional
  body graphs) has one :class:`GraphBox`, which keeps every object its nodes
  were given in an append-only list for as long as the definition lives.
* Instantiation (and whole-graph update) hands a snapshot of that list to
  the executable graph through a CUDA *user object*: it is retained on the
  source graph, the instantiation copies the reference into the
  ``CUgraphExec``, and the source's reference is dropped again.  CUDA then
  releases it only after the executable is destroyed *and* its in-flight
  launches have finished.
* A user object's destructor runs on a driver thread where neither CUDA nor
  Python may be called.  It is a C function (``cc_user_object_release`` in
  the extension) that only queues the object's token; :func:`drain` drops the
  queued objects from Python at the next safe point (instantiation, graph
  creation, ``Graph.close``, ...).  Objects whose last reference goes there
  may free CUDA memory, which is why that never happens on the driver thread.

Host callbacks
--------------
A Python callable becomes a host node (or a captured ``cuLaunchHostFunc``)
through the extension's ``extern "Python"`` trampoline ``cc_host_callback``
with a ``ffi.new_handle`` as user data; the handle is kept with the graph
like any other attached object.  An exception raised by a callback is
reported as a :class:`~cuda_core.CUDAWarning`; it never reaches the driver.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import warnings
import weakref

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAWarning, check, warn_cuda

__all__ = []

# token -> object kept alive by a CUDA user object (see module docstring).
_LIVE = {}
_TOKENS = itertools.count(1)
_RELEASE_FN = ffi.addressof(lib, "cc_user_object_release")
_DRAIN_BATCH = 256
_tls = threading.local()


# --------------------------------------------------------------------------
# Graph hierarchies.
# --------------------------------------------------------------------------
class GraphBox:
    """The Python side of one graph hierarchy.

    Holds the root ``CUgraph`` (destroying it on :meth:`close`, or from a
    finalizer, when ``owned``) and the objects its nodes use.

    Parameters
    ----------
    c_root : cdata ``CUgraph``
        The root graph.
    owned : bool
        Whether this box destroys the root graph.
    """

    __slots__ = ("root", "owned", "owners", "closed", "_finalizer", "__weakref__")

    def __init__(self, c_root, owned):
        self.root = c_root
        self.owned = owned
        self.owners = []
        self.closed = False
        self._finalizer = weakref.finalize(self, _destroy_graph, c_root) if owned else None

    def keep(self, *objs):
        """Keep ``objs`` alive as long as this hierarchy (and its executables)."""
        self.owners.extend(objs)

    def adopt(self):
        """Take ownership of the root graph (after a capture ended)."""
        if not self.owned:
            self.owned = True
            self._finalizer = weakref.finalize(self, _destroy_graph, self.root)

    def snapshot(self):
        """Return a tuple of everything kept so far."""
        return tuple(self.owners)

    def close(self):
        """Destroy an owned root graph now (idempotent).

        Raises
        ------
        CUDAError
            If ``cuGraphDestroy`` fails.
        """
        if self.closed:
            return
        self.closed = True
        if self._finalizer is not None and self._finalizer.detach() is not None:
            check(lib.cuGraphDestroy(self.root))
        drain()


def _destroy_graph(c_graph):
    """Finalizer of an owned root graph (never raises; failures warn)."""
    warn_cuda("cuGraphDestroy (graph finalizer)", lib.cuGraphDestroy(c_graph))


# --------------------------------------------------------------------------
# CUDA user objects.
# --------------------------------------------------------------------------
def drain():
    """Drop the objects whose user objects CUDA has released."""
    if not lib.cc_released_pending():
        return
    try:
        buf = _tls.drain_buf
    except AttributeError:
        buf = _tls.drain_buf = ffi.new("unsigned long long[]", _DRAIN_BATCH)
    while True:
        n = lib.cc_take_released(buf, _DRAIN_BATCH)
        if not n:
            return
        for i in range(n):
            _LIVE.pop(int(buf[i]), None)


def live_count():
    """Return the number of objects currently kept alive by user objects (tests)."""
    drain()
    return len(_LIVE)


def _new_user_object(obj):
    """Create a user object (one reference, ours) keeping ``obj`` alive."""
    token = next(_TOKENS)
    _LIVE[token] = obj
    out = ffi.new("CUuserObject *")
    status = lib.cuUserObjectCreate(
        out,
        ffi.cast("void *", token),
        _RELEASE_FN,
        1,
        lib.CU_USER_OBJECT_NO_DESTRUCTOR_SYNC,
    )
    if status:
        _LIVE.pop(token, None)
        check(status, "cuUserObjectCreate")
    return out[0]


def retain_temporarily(c_graph, obj):
    """Retain a new user object for ``obj`` on ``c_graph``; return it.

    Used around instantiation and whole-graph update: the executable copies
    the reference, then :func:`release_temporary` drops the source's one.
    """
    uo = _new_user_object(obj)
    status = lib.cuGraphRetainUserObject(c_graph, uo, 1, lib.CU_GRAPH_USER_OBJECT_MOVE)
    if status:
        lib.cuUserObjectRelease(uo, 1)
        drain()
        check(status, "cuGraphRetainUserObject")
    return uo


def release_temporary(c_graph, uo):
    """Drop the reference :func:`retain_temporarily` put on ``c_graph``."""
    status = lib.cuGraphReleaseUserObject(c_graph, uo, 1)
    drain()
    check(status, "cuGraphReleaseUserObject")


# --------------------------------------------------------------------------
# Host callbacks.
# --------------------------------------------------------------------------
@ffi.def_extern()
def cc_host_callback(user_data):
    """Run the Python callable behind ``user_data`` (a ``ffi.new_handle``).

    Called by the driver on its callback thread; exceptions become
    :class:`~cuda_core.CUDAWarning` and never propagate into the driver.
    """
    fn = None
    try:
        fn = ffi.from_handle(user_data)
        fn()
    except BaseException as exc:  # noqa: BLE001 - must never reach the driver
        _report_callback_error(fn, exc)


def _report_callback_error(fn, exc):
    try:
        warnings.warn(
            f"graph host callback {fn!r} raised {type(exc).__name__}: {exc}",
            CUDAWarning,
            stacklevel=2,
        )
    except BaseException:  # noqa: BLE001 - e.g. warnings turned into errors
        pass


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

    def __init__(self, c_fn, c_data, owners, fn):
        self.c_fn = c_fn
        self.c_data = c_data
        self.owners = owners
        self.callable = fn


def resolve_host_callback(fn, user_data):
    """Turn ``fn`` (and ``user_data``) into a :class:`HostCallback`.

    ``fn`` is a Python callable taking no arguments (``user_data`` must be
    None), or a ctypes function pointer of type
    ``ctypes.CFUNCTYPE(None, ctypes.c_void_p)``, which receives ``user_data``:
    an int (passed as a raw pointer; the caller keeps the memory alive), a
    bytes-like object (copied, the copy lives with the graph) or None.

    Raises
    ------
    TypeError
        If ``fn`` is not callable, a ctypes function pointer has another
        prototype, or ``user_data`` is of an unsupported type.
    ValueError
        If ``user_data`` is given with a Python callable, or an int
        ``user_data`` is not a valid address.
    """
    if isinstance(fn, ctypes._CFuncPtr):
        _check_ctypes_prototype(fn)
        address = ctypes.cast(fn, ctypes.c_void_p).value
        if not address:
            raise ValueError("the ctypes function pointer is NULL")
        c_fn = ffi.cast("CUhostFn", address)
        owners = (fn,)
        if user_data is None:
            c_data = ffi.NULL
        elif isinstance(user_data, int) and not isinstance(user_data, bool):
            if not 0 <= user_data < 1 << 64:
                raise ValueError(f"user_data must be an address in [0, 2**64), got {user_data}")
            c_data = ffi.cast("void *", user_data)
        else:
            try:
                raw = memoryview(user_data).tobytes()
            except TypeError:
                raise TypeError(
                    "user_data must be an int (an address), a bytes-like object or None, "
                    f"not {type(user_data).__name__}"
                ) from None
            copy = ffi.new("char[]", raw or b"\0")
            c_data = copy
            owners = (fn, copy)
        return HostCallback(c_fn, c_data, owners, None)
    if not callable(fn):
        raise TypeError(
            "fn must be a Python callable or a ctypes CFUNCTYPE(None, c_void_p) function "
            f"pointer, not {type(fn).__name__}"
        )
    if user_data is not None:
        raise ValueError(
            "user_data is only accepted with a ctypes function pointer; bind state to a "
            "Python callable with a closure or functools.partial"
        )
    handle = ffi.new_handle(fn)
    return HostCallback(lib.cc_host_callback, handle, (fn, handle), fn)


def _check_ctypes_prototype(fn):
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
