# SPDX-License-Identifier: Apache-2.0
"""CUDA devices: :class:`Device`, the entry point, and :class:`ComputeCapability`.

``Device(n)`` returns a per-thread singleton for ordinal ``n``; it does not
touch the GPU beyond ``cuInit`` (once per process).  :meth:`Device.set_current`
retains the device's primary context (once per process) and makes it current
on the calling thread; the factories (:meth:`~Device.create_stream`,
:meth:`~Device.create_event`, :meth:`~Device.allocate`, ...) need that first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import cuda_core._slots as _slots
from cuda_core._coerce import index_or_none
from cuda_core._context import (
    Context,
    _context_of,
    _current_ctx,
    _current_device_or_0,
    _pop,
    _push_if_needed,
    _tls,
    retain_primary,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._default_stream import default_stream
from cuda_core._device_properties import DeviceProperties
from cuda_core._device_resources import DeviceResources
from cuda_core._device_textures import TextureFactories
from cuda_core._errors import CUDAError, check
from cuda_core._event import Event, _new_event, _OpenEvent
from cuda_core._event import _adopt as _adopt_event
from cuda_core._green_context import create_green_context
from cuda_core._lifetime import GUARD_HANDLES as _GUARD_HANDLES
from cuda_core._lifetime import require_open
from cuda_core._loader import device_count
from cuda_core._memory import MemoryResource, _default_memory_resource
from cuda_core._stream import Stream, _create_stream, _new_default_stream

if TYPE_CHECKING:
    from cuda_core._event import EventOptions
    from cuda_core._green_context import ContextOptions
    from cuda_core._memory import Buffer
    from cuda_core._stream_options import StreamOptions
    from cuda_core.graph import GraphBuilder
    from cuda_core.system._device import Device as _SystemDevice
    from cuda_core.typing import IsStreamType

__all__ = ["ComputeCapability", "Device"]

#: ordinal -> DeviceProperties (process-wide, values are device facts)
_properties: dict[int, DeviceProperties] = {}
#: (ordinal, what) -> cached value (name, uuid, compute capability)
_facts: dict[tuple[int, str], Any] = {}
_DISABLE_TIMING = lib.CU_EVENT_DISABLE_TIMING
# Hot-path entry points bound once: a module global is cheaper than ``lib.X``.
_cc_current_device_key = lib.cc_current_device_key
_cc_event_new_untimed = lib.cc_event_new_untimed
_cuCtxSetCurrent = lib.cuCtxSetCurrent


class ComputeCapability(NamedTuple):
    """A device's compute capability, e.g. ``ComputeCapability(major=9, minor=0)``."""

    major: int
    minor: int


class Device(TextureFactories):
    """A CUDA GPU, and the entry point to streams, events and memory on it.

    ``Device(device_id)`` returns the calling thread's singleton object for
    that ordinal, so ``Device(0) is Device(0)`` within a thread.  Creating it
    initializes the driver (``cuInit``, once per process) but no context; call
    :meth:`set_current` before using the factories.

    Parameters
    ----------
    device_id : int, Device or None
        The device ordinal.  A :class:`Device` is returned unchanged.  ``None``
        means the device of the calling thread's current context, or device 0
        when no context is current -- the same rule as the CUDA runtime.

    Raises
    ------
    TypeError
        If ``device_id`` is not an int, a Device or None.
    ValueError
        If the ordinal is negative or not below the number of devices.
    LibraryNotFoundError
        If the CUDA driver cannot be loaded.
    CUDAError
        If the driver fails to initialize.
    """

    __slots__ = (
        "_device_id",
        "_memory_resource",
        "_has_inited",
        "_primary_ctx",
        "_c_ctx",
        "_context",
        "__weakref__",
    )

    _device_id: int
    _memory_resource: MemoryResource | None
    _has_inited: bool
    _primary_ctx: Any  # CUcontext cdata, or None before set_current
    _c_ctx: Any  # the handle of _context, or None
    _context: Context  # None until set_current (_has_inited says)

    def __new__(cls, device_id: Device | int | None = None) -> Device:
        # Fast paths: the answer is in this thread's table (Device(): in
        # _BY_KEY, under the key the extension gives for this thread and the
        # current context's device).  Any miss or failure (no table, bad
        # ordinal, no current context: key -1) goes to the checked slow path,
        # which decides, raises or fills the tables.
        try:
            if device_id is None:
                return _BY_KEY[_cc_current_device_key()]
            if type(device_id) is int:
                return _tls.devices[device_id]  # type: ignore[no-any-return]
        except (AttributeError, KeyError):
            pass
        return _lookup_device(cls, device_id)

    def __int__(self) -> int:
        return self._device_id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Device):
            return NotImplemented
        return self._device_id == other._device_id

    def __hash__(self) -> int:
        return hash(self.uuid)

    def __reduce__(self) -> tuple[type[Device], tuple[int]]:
        return Device, (self._device_id,)

    def __repr__(self) -> str:
        return f"<Device {self._device_id} ({self.name})>"

    def _check_initialized(self) -> None:
        """Raise CUDAError unless :meth:`set_current` ran on this thread."""
        if not self._has_inited:
            raise CUDAError(
                f"Device {self._device_id} is not yet initialized, perhaps you forgot to "
                "call .set_current() first?"
            )

    _check_context_initialized = _check_initialized

    @classmethod
    def get_all_devices(cls) -> tuple[Device, ...]:
        """Return every device of the system.

        Returns
        -------
        tuple of Device
        """
        return tuple(cls(i) for i in range(device_count()))

    def set_current(self, ctx: Context | None = None) -> Context | None:
        """Make this device's context current on the calling thread.

        Without ``ctx``, the device's primary context is retained (once per
        process; it is never released while the process runs) and made
        current.  With ``ctx``, that context is made current instead.

        Parameters
        ----------
        ctx : Context, optional
            A context of this device.

        Returns
        -------
        Context or None
            With ``ctx``: the context that was current before (None if there
            was none).  Without: None.

        Raises
        ------
        TypeError
            If ``ctx`` is not a Context.
        RuntimeError
            If ``ctx`` belongs to another device or is closed.

        Examples
        --------
        >>> from cuda_core import Device
        >>> dev = Device(0)
        >>> dev.set_current()
        """
        if ctx is None:
            c_ctx = self._primary_ctx
            if c_ctx is None:
                c_ctx = self._primary_ctx = retain_primary(self._device_id)
            status = _cuCtxSetCurrent(c_ctx)
            if status:  # hot path: check() only on failure
                check(status)
            if self._c_ctx is not c_ctx:
                self._c_ctx = c_ctx
                self._context = Context._from_ctx(c_ctx, self._device_id)
                self._has_inited = True
            return None
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a Context or None, not {type(ctx).__name__}")
        require_open(ctx._closed, "Context")
        if ctx._device_id != self._device_id:
            raise RuntimeError(
                f"the provided context was created on the device with id={ctx._device_id}, "
                f"which is different from the target id={self._device_id}"
            )
        previous = _context_of(_current_ctx())
        check(lib.cuCtxSetCurrent(ctx._handle))
        self._c_ctx = ctx._handle
        self._context = ctx
        self._has_inited = True
        return previous

    def create_context(self, options: ContextOptions | None = None) -> Context:
        """Create a green context from device resources; it is not made current.

        Parameters
        ----------
        options : ContextOptions
            The resources of the context: SM groups from one
            :meth:`SMResource.split <cuda_core.SMResource.split>` of
            :attr:`resources`, optionally a configured workqueue resource.

        Returns
        -------
        Context
            A green context (:attr:`Context.is_green
            <cuda_core.Context.is_green>`); make streams on it with
            :meth:`Context.create_stream <cuda_core.Context.create_stream>`,
            or make it current with :meth:`set_current`.

        Raises
        ------
        ValueError
            Without resources, or with a dry-run SMResource.
        TypeError
            If ``options`` is not a ContextOptions (or dict), or a resource
            is neither an SMResource nor a WorkqueueResource.
        NotImplementedError
            With a driver older than CUDA 12.4.
        CUDAError
            If the driver rejects the resources (e.g. groups from different
            splits: ``CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION``).
        """
        return create_green_context(self._device_id, options)

    def create_stream(
        self, obj: IsStreamType | None = None, options: StreamOptions | dict[str, Any] | None = None
    ) -> Stream:
        """Create a new stream, or wrap a foreign one.

        Parameters
        ----------
        obj : object implementing ``__cuda_stream__``, optional
            A foreign stream to wrap (a reference to it is kept, so it stays
            alive as long as the returned Stream is open).
        options : StreamOptions or dict, optional
            Options for a new stream (not with ``obj``).

        Returns
        -------
        Stream

        Raises
        ------
        CUDAError
            If :meth:`set_current` has not been called on this thread.
        ValueError
            If both ``obj`` and ``options`` are given, or the priority is out
            of the device's range.
        TypeError
            If ``obj`` does not implement ``__cuda_stream__``.
        """
        if not self._has_inited:
            self._check_initialized()
        if obj is not None:
            if options is not None:
                raise ValueError("obj and options cannot be both specified")
            return Stream._wrap(obj)
        if options is None:  # the common case
            return _new_default_stream(self._context)
        return _create_stream(Stream, options, self._context)

    def create_event(self, options: EventOptions | dict[str, Any] | None = None) -> Event:
        """Create an event (not recorded on any stream yet).

        Parameters
        ----------
        options : EventOptions or dict, optional

        Returns
        -------
        Event

        Raises
        ------
        CUDAError
            If :meth:`set_current` has not been called on this thread.
        TypeError
            For IPC-enabled options: such events must come from
            :meth:`Stream.record <cuda_core.Stream.record>`.
        """
        if not self._has_inited:
            self._check_initialized()
        if options is None:  # the common case, inline (see _new_event)
            c_event = _cc_event_new_untimed(self._c_ctx)  # _c_ctx is _context's handle
            if c_event:
                if _GUARD_HANDLES:  # PyPy: its JIT inlines the one constructor
                    return _adopt_event(c_event, self._context, _DISABLE_TIMING)
                # CPython: _adopt_event's untimed event inline (the call was a tenth
                # of the event cycle); tests/device/test_adopt.py checks both agree.
                event = _OpenEvent()
                event._handle = c_event
                event._ctx = self._context
                event._flags = _DISABLE_TIMING
                event._closed = False
                event._share = None
                return event
        return _new_event(Event, options, self._context, False)

    def allocate(self, size: int, *, stream: Stream | GraphBuilder) -> Buffer:
        """Allocate ``size`` bytes from :attr:`memory_resource`, ordered on ``stream``.

        Parameters
        ----------
        size : int
            Number of bytes.
        stream : Stream or GraphBuilder
            The stream that orders the allocation (keyword-only, required;
            pass ``device.default_stream`` for the default stream).

        Returns
        -------
        Buffer
        """
        self._check_initialized()
        return self.memory_resource.allocate(size, stream=stream)

    def sync(self) -> None:
        """Block until all work on this device's context has completed.

        The GIL is released while waiting.
        """
        self._check_initialized()
        pushed = _push_if_needed(self._c_ctx)
        try:
            check(lib.cuCtxSynchronize())
        finally:
            if pushed:
                _pop()

    def create_graph_builder(self) -> GraphBuilder:
        """Create a :class:`~cuda_core.graph.GraphBuilder` on a new stream it owns.

        Returns
        -------
        GraphBuilder
        """
        self._check_initialized()
        return _slots.graph_builder()._init(stream=self.create_stream(), is_stream_owner=True)

    def can_access_peer(self, peer: Device | int) -> bool:
        """Return whether this device can access memory on ``peer``.

        Parameters
        ----------
        peer : Device or int

        Returns
        -------
        bool
        """
        peer = Device(peer)
        if peer._device_id == self._device_id:
            return True
        out = ffi.new("int *")
        check(lib.cuDeviceCanAccessPeer(out, self._device_id, peer._device_id))
        return bool(out[0])

    def to_system_device(self) -> _SystemDevice:
        """Return the :class:`cuda_core.system.Device` (NVML) of this GPU, matched by UUID."""
        from cuda_core.system._device import Device as SystemDevice

        return SystemDevice._from_cuda_uuid(self.uuid)

    @property
    def device_id(self) -> int:
        """int: The device ordinal."""
        return self._device_id

    @property
    def name(self) -> str:
        """str: The device name, e.g. ``"NVIDIA H100 80GB HBM3"``."""
        key = (self._device_id, "name")
        value: str | None = _facts.get(key)
        if value is None:
            buf = ffi.new("char[]", 256)
            check(lib.cuDeviceGetName(buf, 256, self._device_id))
            value = _facts[key] = ffi.string(buf).decode(errors="replace")
        return value

    @property
    def uuid(self) -> str:
        """str: The device UUID as 8-4-4-4-12 hex digits (cached)."""
        key = (self._device_id, "uuid")
        value: str | None = _facts.get(key)
        if value is None:
            c_uuid = ffi.new("CUuuid *")
            check(lib.cuDeviceGetUuid(c_uuid, self._device_id))
            h = bytes(ffi.buffer(c_uuid, 16)).hex()
            value = _facts[key] = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        return value

    @property
    def pci_bus_id(self) -> str:
        """str: The PCI bus id, ``"domain:bus:device.function"`` (e.g. ``"0000:1B:00.0"``)."""
        buf = ffi.new("char[]", 64)
        check(lib.cuDeviceGetPCIBusId(buf, 64, self._device_id))
        return ffi.string(buf).decode()  # type: ignore[no-any-return]  # a str

    @property
    def resources(self) -> DeviceResources:
        """DeviceResources: The device's resources (SMs, workqueues) for green contexts."""
        return DeviceResources._for_device(self._device_id)

    @property
    def properties(self) -> DeviceProperties:
        """DeviceProperties: The device attributes (created once, values cached)."""
        props = _properties.get(self._device_id)
        if props is None:
            props = _properties.setdefault(self._device_id, DeviceProperties._init(self._device_id))
        return props

    @property
    def compute_capability(self) -> ComputeCapability:
        """ComputeCapability: ``(major, minor)`` as a named tuple."""
        key = (self._device_id, "cc")
        value: ComputeCapability | None = _facts.get(key)
        if value is None:
            props = self.properties
            value = _facts[key] = ComputeCapability(
                props.compute_capability_major, props.compute_capability_minor
            )
        return value

    @property
    def arch(self) -> str:
        """str: The compute capability as digits, e.g. ``"90"`` for 9.0."""
        major, minor = self.compute_capability
        return f"{major}{minor}"

    @property
    def context(self) -> Context:
        """Context: The context :meth:`set_current` made current on this thread.

        Raises
        ------
        CUDAError
            If :meth:`set_current` has not been called on this thread.
        """
        self._check_initialized()
        return self._context

    @property
    def memory_resource(self) -> MemoryResource:
        """MemoryResource: Where :meth:`allocate` gets memory (settable).

        Defaults to the device's memory-pool resource, or a synchronous one on
        devices without memory pools, created at first use.
        """
        mr = self._memory_resource
        if mr is None:
            mr = self._memory_resource = _default_memory_resource(self)
        return mr

    @memory_resource.setter
    def memory_resource(self, mr: MemoryResource) -> None:
        if not isinstance(mr, MemoryResource):
            raise TypeError(f"memory_resource must be a MemoryResource, not {type(mr).__name__}")
        self._memory_resource = mr

    @property
    def default_stream(self) -> Stream:
        """Stream: The default stream (see :func:`cuda_core._default_stream.default_stream`).

        :data:`~cuda_core.PER_THREAD_DEFAULT_STREAM` when the environment
        variable ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`` is set to a
        non-zero integer, else :data:`~cuda_core.LEGACY_DEFAULT_STREAM`.
        """
        return default_stream()


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _thread_devices(cls: type[Device]) -> dict[int, Device]:
    """Return this thread's {ordinal: Device} table, creating it on first use."""
    try:
        return _tls.devices  # type: ignore[no-any-return]  # set below
    except AttributeError:
        pass
    devices: dict[int, Device] = {}
    for i in range(device_count()):
        dev = object.__new__(cls)
        dev._device_id = i
        dev._memory_resource = None
        dev._has_inited = False
        dev._primary_ctx = None
        dev._c_ctx = None
        dev._context = None  # type: ignore[assignment]  # until set_current
        devices[i] = dev
    _tls.devices = devices
    return devices


def _lookup_device(cls: type[Device], device_id: object) -> Device:
    """The slow path of ``Device(device_id)``: validation, cuInit, table creation."""
    if isinstance(device_id, Device):
        return device_id
    if device_id is None:
        device_id = _current_device_or_0()
        current = True
    else:
        value = index_or_none(device_id)
        if value is None:
            raise TypeError(
                f"device_id must be an int, a Device or None, not {type(device_id).__name__}"
            )
        device_id = value
        if device_id < 0:
            raise ValueError(f"device_id must be >= 0, got {device_id}")
        current = False
    devices = _thread_devices(cls)
    try:
        dev = devices[device_id]
    except KeyError:
        raise ValueError(f"device_id must be within [0, {len(devices)}), got {device_id}") from None
    if current:
        _remember_current(dev)
    return dev


#: Device()'s table: ``cc_current_device_key()`` (this thread's number and the
#: current context's device ordinal) -> this thread's Device of that ordinal.
#: One process-wide dictionary lookup is cheaper than a thread-local's
#: (about a fifth of the call on CPython); the thread's ``_tls.device_keys``
#: removes its entries when the thread ends.
_BY_KEY: dict[int, Device] = {}


class _ThreadKeys(list[int]):
    """A thread's keys in :data:`_BY_KEY`, removed when the thread's locals go."""

    __slots__ = ()

    def __del__(self, _by_key: dict[int, Device] = _BY_KEY) -> None:
        # The table is bound here: at interpreter exit CPython may have set
        # this module's globals to None before the main thread's locals go.
        for key in self:
            _by_key.pop(key, None)


def _remember_current(dev: Device) -> None:
    """Record ``dev`` under this thread's key for the current context (if one is current)."""
    key = _cc_current_device_key()
    if key < 0 or (key & 0xFFFFF) != dev._device_id:
        return  # no current context (Device() gave device 0), or it changed meanwhile
    try:
        keys = _tls.device_keys
    except AttributeError:
        keys = _tls.device_keys = _ThreadKeys()
    keys.append(key)
    _BY_KEY[key] = dev


# Stream.device, WorkqueueResource.device, TensorMapDescriptor.device,
# system.Device.to_cuda_device(), the texture objects' device, ...
_slots.Device = Device
