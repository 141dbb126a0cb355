# SPDX-License-Identifier: Apache-2.0
"""CUDA contexts: the :class:`Context` wrapper and context-switching helpers.

A :class:`Context` is never constructed by user code; it comes from
:attr:`Device.context <cuda_core.Device.context>`, :attr:`Stream.context
<cuda_core.Stream.context>` or the return value of
:meth:`Device.set_current <cuda_core.Device.set_current>`.

The helpers at the bottom of the module let the other classes run a driver
call in a given context: they push the context only when it is not already
current on the calling thread, so the common case costs one extra query.

Primary contexts stay retained while resources in them live: every primary
context this process creates a resource in is retained once
(``cuDevicePrimaryCtxRetain``, see :func:`retain_primary`) and never
released, whoever made it current -- :meth:`Device.set_current
<cuda_core.Device.set_current>` or other code (a context wrapped by
:class:`Context` is checked once, :func:`_hold_if_primary`).  So code that
releases its own retain of a primary context between phases never
destroys memory, events or streams that cuda_core objects still own.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._device_resources import DeviceResources
from cuda_core._errors import CUDAError, check
from cuda_core._lifetime import require_open
from cuda_core._loader import init_driver

if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    from cuda_core._stream import Stream

    _T = TypeVar("_T")

__all__ = ["Context"]

_init_lock = threading.Lock()
# Retained primary contexts, process-wide: device ordinal -> CUcontext cdata.
_PRIMARY: dict[int, Any] = {}
# Contexts a Context object was made for (each checked once by _hold_if_primary).
_SEEN: set[int] = set()
# Contexts this process knows the device of (the retained primary contexts
# and every context a Context object was made for): handle int -> device id.
_KNOWN_DEVICES: dict[int, int] = {}
_tls = threading.local()
# Green contexts by handle int, so that a handle read back from the driver
# (set_current's previous context) gives the same Context object.
_GREEN_CONTEXTS: weakref.WeakValueDictionary[int, Context] = weakref.WeakValueDictionary()
_cc_push_ctx = lib.cc_push_ctx
_cc_pop_ctx = lib.cc_pop_ctx


class Context:
    """A CUDA context (the per-device state that streams, events and memory live in).

    Contexts cannot be created directly; obtain them from
    :attr:`Device.context <cuda_core.Device.context>`,
    :attr:`Stream.context <cuda_core.Stream.context>` or
    :meth:`Device.set_current <cuda_core.Device.set_current>`.  Two Context
    objects are equal when they wrap the same ``CUcontext``.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_handle", "_h", "_device_id", "_closed", "_green", "__weakref__")

    _handle: Any  # CUcontext cdata
    _h: int
    _device_id: int
    _closed: bool
    _green: Any  # the green context's owner (cuda_core._green_context), or None

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError(
            "Context objects cannot be instantiated directly. Please use Device or Stream "
            "APIs (Device.context, Stream.context, Device.set_current)."
        )

    @classmethod
    def _from_ctx(cls, c_ctx: Any, device_id: int) -> Context:
        """Wrap the ``CUcontext`` cdata ``c_ctx`` that belongs to ``device_id``."""
        self = object.__new__(cls)
        self._handle = c_ctx
        self._h = as_int_handle(c_ctx)
        self._device_id = int(device_id)
        self._closed = False
        self._green = None
        _KNOWN_DEVICES.setdefault(self._h, self._device_id)
        if self._h not in _SEEN:  # first sight of this context
            _SEEN.add(self._h)
            _hold_if_primary(c_ctx, self._device_id)
        return self

    @classmethod
    def _from_green(cls, c_ctx: Any, device_id: int, owner: Any) -> Context:
        """Wrap the ``CUcontext`` of a green context; ``owner`` holds the ``CUgreenCtx``."""
        self = cls._from_ctx(c_ctx, device_id)
        self._green = owner
        _GREEN_CONTEXTS[self._h] = self
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Context):
            return NotImplemented
        return self._h == other._h

    def __hash__(self) -> int:
        return hash((Context, self._h))

    def __repr__(self) -> str:
        state = " (closed)" if self._closed else ""
        green = " green" if self._green is not None else ""
        return f"<Context handle={self._h:#x} device={self._device_id}{green}{state}>"

    def close(self) -> None:
        """Release this wrapper; later use of it raises RuntimeError.

        A primary context is retained once per process by
        :class:`~cuda_core.Device` and is not destroyed here (other objects
        still use it).  A green context is destroyed once nothing uses it
        any more: at once when every stream made by :meth:`create_stream`
        is closed, otherwise when the last of them is garbage collected.
        Closing twice is a no-op.

        Raises
        ------
        RuntimeError
            If this is a green context that is current on the calling
            thread (make another context current first).
        """
        if self._closed:
            return
        green = self._green
        if green is not None and not green.destroyed:
            out = _bufs().ctx
            check(lib.cuCtxGetCurrent(out))
            if out[0] == self._handle:
                raise RuntimeError(
                    "Cannot close a CUDA context while it is current. Restore a previous "
                    "context before closing this context."
                )
        self._closed = True
        if green is not None:
            green.release()

    def create_stream(self, options: Any = None) -> Stream:
        """Create a stream bound to this green context.

        Parameters
        ----------
        options : StreamOptions or dict, optional
            Green-context streams must be non-blocking (the default).

        Returns
        -------
        Stream

        Raises
        ------
        RuntimeError
            For a primary context (use :meth:`Device.create_stream
            <cuda_core.Device.create_stream>`), or a closed one.
        ValueError
            If ``options`` asks for a blocking stream.
        """
        require_open(self._closed, "Context")
        if self._green is None:
            raise RuntimeError(
                "Context.create_stream() is only supported on green contexts. "
                "Use Device.create_stream() for primary contexts."
            )
        return _slots.create_green_stream(self, options)  # streams are a higher layer

    @property
    def handle(self) -> int:
        """int: The address of the underlying ``CUcontext``."""
        require_open(self._closed, "Context")
        return self._h

    @property
    def is_closed(self) -> bool:
        """bool: Whether :meth:`close` has been called."""
        return self._closed

    @property
    def is_green(self) -> bool:
        """bool: Whether this context was created from device resources (a green context)."""
        return self._green is not None

    @property
    def resources(self) -> DeviceResources:
        """DeviceResources: The resources provisioned for this context.

        A green context's are those it was created with (its SM partition);
        a primary context's are the whole device's.

        Raises
        ------
        RuntimeError
            If the context is closed.
        """
        require_open(self._closed, "Context")
        green = self._green
        c_green = None if green is None else green.c_green
        return DeviceResources._for_context(self._device_id, self._handle, c_green, self)


# --------------------------------------------------------------------------
# Private helpers shared by Device, Stream and Event.
# --------------------------------------------------------------------------
class _Buffers:
    """One thread's reusable out-parameters (and an integer view of the stream one).

    Reusing them keeps ``ffi.new`` out of the hot paths; being per thread
    keeps concurrent calls (the GIL is released during them) apart.
    """

    __slots__ = (
        "ctx",
        "dev",
        "stream",
        "stream_int",
        "i32",
        "f32",
    )

    ctx: Any
    dev: Any
    stream: Any
    stream_int: Any
    i32: Any
    f32: Any

    def __init__(self) -> None:
        self.ctx = ffi.new("CUcontext *")
        self.dev = ffi.new("CUdevice *")
        self.stream = ffi.new("CUstream *")
        self.stream_int = ffi.cast("intptr_t *", self.stream)
        self.i32 = ffi.new("int *")
        self.f32 = ffi.new("float *")


def _bufs() -> _Buffers:
    """Return the calling thread's :class:`_Buffers` (hot paths inline this lookup)."""
    try:
        return _tls.b  # type: ignore[no-any-return]
    except AttributeError:
        buffers = _tls.b = _Buffers()
        return buffers


def _ctx_out() -> Any:
    """Return this thread's reusable ``CUcontext *`` out-parameter."""
    return _bufs().ctx


def _dev_out() -> Any:
    """Return this thread's reusable ``CUdevice *`` out-parameter."""
    return _bufs().dev


def _current_ctx() -> Any:
    """Return the calling thread's current ``CUcontext`` cdata (may be NULL)."""
    out = _bufs().ctx
    check(lib.cuCtxGetCurrent(out))
    return out[0]


def _push_if_needed(c_ctx: Any) -> bool:
    """Make ``c_ctx`` current if it is not; return True when it was pushed.

    ``c_ctx`` None means "whatever is current" and pushes nothing.  A True
    result must be paired with :func:`_pop`.
    """
    if c_ctx is None:
        return False
    b = _bufs()
    check(lib.cuCtxGetCurrent(b.ctx))
    if b.ctx[0] == c_ctx:
        return False
    check(lib.cuCtxPushCurrent(c_ctx))
    return True


def _pop() -> None:
    """Pop the context pushed by :func:`_push_if_needed`."""
    check(lib.cuCtxPopCurrent(_bufs().ctx))


def retain_primary(device_id: int) -> Any:
    """Retain the primary context of ``device_id`` once per process; return it.

    The retain is never released: resources made in a primary context keep
    it alive, and this process keeps every primary context it used.
    """
    c_ctx = _PRIMARY.get(device_id)
    if c_ctx is not None:
        return c_ctx
    with _init_lock:
        c_ctx = _PRIMARY.get(device_id)
        if c_ctx is None:
            out = ffi.new("CUcontext *")
            check(lib.cuDevicePrimaryCtxRetain(out, device_id))
            c_ctx = _PRIMARY[device_id] = out[0]
    return c_ctx


def _hold_if_primary(c_ctx: Any, device_id: int) -> None:
    """Retain ``device_id``'s primary context if ``c_ctx`` may be it (first sight of a context).

    A context made current by other code (another library, ``ctypes``) that
    turns out to be the device's active primary context is retained like
    :meth:`Device.set_current <cuda_core.Device.set_current>` retains it,
    so releasing the other code's retain cannot destroy what cuda_core
    objects made in it.  An inactive primary context is left inactive (the
    context then is some other one, which its creator owns).
    """
    if device_id < 0 or device_id in _PRIMARY:
        return
    flags = ffi.new("unsigned int *")
    active = ffi.new("int *")
    if lib.cuDevicePrimaryCtxGetState(device_id, flags, active) or not active[0]:
        return
    try:
        retain_primary(device_id)
    except CUDAError:
        pass  # a context that cannot be retained stays as it was


def primary_handle(ctx: Context | None) -> Any:
    """Return ``ctx``'s ``CUcontext`` if it is a retained primary context, else None.

    Only those are made current by the deferred releases: a retained
    primary context lives as long as the process, while another context (a
    green context, one that other code created) may be gone by the time a
    release runs, and making a destroyed context current is undefined.
    Releases in such a context run in whatever is current, as the driver
    allows.
    """
    if ctx is None or ctx._green is not None:
        return None
    c_ctx = _PRIMARY.get(ctx._device_id)
    return c_ctx if c_ctx is not None and c_ctx == ctx._handle else None


def call_in_context(c_ctx: Any, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """Return ``fn(*args, **kwargs)`` run with ``c_ctx`` current (pushed only if it is not).

    For releases of several driver calls, or through a memory resource's
    ``deallocate``: the owning context is made current whatever is current
    on the calling thread.  ``c_ctx`` None runs ``fn`` as is.

    Raises
    ------
    CUDAError
        If ``c_ctx`` cannot be made current (``fn`` is not called) or popped
        again.
    """
    if c_ctx is None:
        return fn(*args, **kwargs)
    pushed = _cc_push_ctx(c_ctx)
    if pushed < 0:
        check(lib.cc_status(), "making the owning context current")
    try:
        return fn(*args, **kwargs)
    finally:
        if pushed:
            check(_cc_pop_ctx(), "restoring the caller's context")


def _device_of_ctx(c_ctx: Any) -> int:
    """Return the device ordinal of context ``c_ctx`` (cached per handle)."""
    h = as_int_handle(c_ctx)
    dev = _KNOWN_DEVICES.get(h)
    if dev is not None:
        return dev
    pushed = _push_if_needed(c_ctx)
    try:
        out = _bufs().dev
        check(lib.cuCtxGetDevice(out))
        dev = int(out[0])
    finally:
        if pushed:
            _pop()
    _KNOWN_DEVICES[h] = dev
    return dev


def _context_of(c_ctx: Any) -> Context | None:
    """Return a :class:`Context` for the ``CUcontext`` cdata ``c_ctx`` (None for NULL)."""
    if c_ctx == ffi.NULL:
        return None
    green = _GREEN_CONTEXTS.get(as_int_handle(c_ctx))
    if green is not None:
        return green
    return Context._from_ctx(c_ctx, _device_of_ctx(c_ctx))


def _current_device_id() -> int:
    """Return the device ordinal of the calling thread's current context.

    Raises
    ------
    CUDAError
        If no context is current, or the driver fails.
    """
    c_ctx = _current_ctx()
    if c_ctx == ffi.NULL:
        raise CUDAError("no CUDA context is current; call Device.set_current() first")
    out = _bufs().dev
    check(lib.cuCtxGetDevice(out))
    return int(out[0])


def _current_device_id_or_none() -> int | None:
    """Return the device of the calling thread's current context, or None.

    None when no driver is loadable, the driver is not initialized, or no
    context is current (nothing is initialized here).
    """
    out = _bufs()
    if lib.cuCtxGetCurrent(out.ctx) or out.ctx[0] == ffi.NULL:
        return None
    if lib.cuCtxGetDevice(out.dev):
        return None
    return int(out.dev[0])


def _current_device_or_0() -> int:
    """Return ``Device()``'s ordinal: the current context's device, else 0.

    Device 0 where no context is current, as the CUDA runtime does; only
    the driver is asked (initialized here if it was not).
    """
    init_driver()
    if _current_ctx() == ffi.NULL:
        return 0
    out = _bufs().dev
    check(lib.cuCtxGetDevice(out))
    return int(out[0])


def _current_device_arch() -> str:
    """Return the compute capability digits (``"90"``) of ``Device()``'s device."""
    device_id = _current_device_or_0()
    out = _bufs().i32
    check(
        lib.cuDeviceGetAttribute(out, lib.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_id)
    )
    major = out[0]
    check(
        lib.cuDeviceGetAttribute(out, lib.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_id)
    )
    return f"{major}{out[0]}"
