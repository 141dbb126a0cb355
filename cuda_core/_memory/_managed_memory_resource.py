# SPDX-License-Identifier: Apache-2.0
"""Managed (unified) memory: :class:`ManagedMemoryResource` and :class:`ManagedBuffer`.

Managed memory pools need a CUDA 13 driver.  A :class:`ManagedBuffer` adds
the driver's advice and prefetch operations to :class:`~cuda_core.Buffer`.
"""

from __future__ import annotations

import dataclasses

import cuda_core._slots as _slots
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._host import Host
from cuda_core._loader import driver_at_least, require_driver
from cuda_core._memory import _managed_memory_ops
from cuda_core._memory._buffer import Buffer, _as_stream
from cuda_core._memory._memory_pool import _MemPool
from cuda_core._memory._pinned_memory_resource import _host_numa_id_for_current_device
from cuda_core._utils import check_or_create_options, require_open
from cuda_core.typing import _register, _StrEnum

__all__ = [
    "ManagedBuffer",
    "ManagedMemoryLocationType",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
]


class ManagedMemoryLocationType(_StrEnum):
    """Kinds of preferred location of a managed memory pool (plain strings also work)."""

    DEVICE = "device"
    HOST = "host"
    HOST_NUMA = "host_numa"


_register(ManagedMemoryLocationType)


@dataclasses.dataclass
class ManagedMemoryResourceOptions:
    """Options of a :class:`ManagedMemoryResource` that creates its own pool.

    Attributes
    ----------
    preferred_location : int or None
        A device ordinal or host NUMA node, interpreted by
        ``preferred_location_type``.
    preferred_location_type : ManagedMemoryLocationType, str or None
        ``None`` (the default, legacy): ``preferred_location`` is a device
        ordinal, ``-1`` for the host, or ``None`` for no preference.
        ``"device"``: ``preferred_location`` must be an ordinal ``>= 0``.
        ``"host"``: ``preferred_location`` must be ``None``.
        ``"host_numa"``: a NUMA node ``>= 0``, or ``None`` for the current
        device's ``host_numa_id`` (needs a current context).
    """

    preferred_location: int | None = None
    preferred_location_type: ManagedMemoryLocationType | str | None = None

    def __post_init__(self):
        loc = self.preferred_location
        if loc is not None and (isinstance(loc, bool) or not isinstance(loc, int)):
            raise TypeError(
                "ManagedMemoryResourceOptions.preferred_location must be an int or None, not "
                f"{type(loc).__name__}"
            )
        kind = self.preferred_location_type
        if kind is None:
            if loc is not None and loc < -1:
                raise ValueError(
                    "ManagedMemoryResourceOptions.preferred_location must be a device ordinal, "
                    f"-1 (host) or None, got {loc}"
                )
            return
        try:
            kind = ManagedMemoryLocationType(kind)
        except ValueError:
            raise ValueError(
                "ManagedMemoryResourceOptions.preferred_location_type must be one of "
                f"'device', 'host', 'host_numa' or None, got {kind!r}"
            ) from None
        self.preferred_location_type = kind
        if kind is ManagedMemoryLocationType.DEVICE and (loc is None or loc < 0):
            raise ValueError(
                "preferred_location_type='device' needs preferred_location to be a device "
                f"ordinal >= 0, got {loc!r}"
            )
        if kind is ManagedMemoryLocationType.HOST and loc is not None:
            raise ValueError(
                f"preferred_location_type='host' needs preferred_location=None, got {loc!r}"
            )
        if kind is ManagedMemoryLocationType.HOST_NUMA and loc is not None and loc < 0:
            raise ValueError(
                f"preferred_location_type='host_numa' needs a NUMA node >= 0 or None, got {loc!r}"
            )


class ManagedBuffer(Buffer):
    """A managed-memory :class:`~cuda_core.Buffer` with advice and prefetch.

    Returned by :meth:`ManagedMemoryResource.allocate`; wrap an external
    managed pointer with :meth:`from_handle`.  Advice is read back from the
    driver each time (``cuMemRangeGetAttribute``) and applied with
    ``cuMemAdvise``.
    """

    __slots__ = ()

    @classmethod
    def from_handle(cls, ptr, size, mr=None, owner=None):
        """Wrap an existing managed-memory pointer (see :meth:`Buffer.from_handle`)."""
        return cls._init(ptr, size, mr=mr, owner=owner)

    def prefetch(self, location, *, stream):
        """Migrate this range to ``location`` asynchronously on ``stream``.

        Parameters
        ----------
        location : Device, Host or int
            The destination: a Device, a device ordinal, ``-1`` or a Host.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the migration.
        """
        require_open(self, self._closed, "ManagedBuffer")
        s = _as_stream(stream)
        loc = _as_location(location)
        if self._size:
            check(
                lib.cuMemPrefetchAsync_v2(self._ptr, self._size, loc[0], 0, s._handle),
                "cuMemPrefetchAsync",
            )

    def discard(self, *, stream):
        """Discard this range's resident pages asynchronously on ``stream`` (CUDA 13+).

        The contents are dropped without migration; reading the range before
        writing or prefetching it again gives indeterminate values.  See
        :func:`cuda_core.utils.discard_batch` (errors included).
        """
        _managed_memory_ops.discard_one(self, stream)

    def discard_prefetch(self, location, *, stream):
        """Discard this range and prefetch it to ``location`` on ``stream`` (CUDA 13+).

        See :func:`cuda_core.utils.discard_prefetch_batch` (errors included).
        """
        _managed_memory_ops.discard_prefetch_one(self, location, stream)

    @property
    def read_mostly(self):
        """bool: Whether read-mostly advice applies to this range (settable)."""
        return self._range_int(lib.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY) != 0

    @read_mostly.setter
    def read_mostly(self, value):
        advice = lib.CU_MEM_ADVISE_SET_READ_MOSTLY if value else lib.CU_MEM_ADVISE_UNSET_READ_MOSTLY
        self._advise(advice, _device_location(0))

    @property
    def preferred_location(self):
        """Device, Host or None: The preferred location advice (settable; None unsets).

        With a CUDA 13 driver a host NUMA preference reads back as
        ``Host(numa_id=N)``; with an older one every host location reads back
        as ``Host()``.
        """
        if driver_at_least(13, 0):  # type and id: host NUMA nodes round-trip
            kind = self._range_int(lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE)
            loc_id = self._range_int(lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID)
            return _typed_location_object(kind, loc_id)
        loc_id = self._range_int(lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION)
        return _location_object(loc_id)

    @preferred_location.setter
    def preferred_location(self, value):
        if value is None:
            self._advise(lib.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, _device_location(0))
        else:
            self._advise(lib.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, _as_location(value))

    @property
    def accessed_by(self):
        """AccessedBySet: Live set of the locations with accessed-by advice (settable)."""
        return AccessedBySet(self)

    @accessed_by.setter
    def accessed_by(self, locations):
        target = {}
        for loc in locations:  # every entry is checked before any advice changes
            c_loc = _accessed_by_location(loc)
            target[_location_key(c_loc)] = c_loc
        current = AccessedBySet(self)._ids()
        for key in current - set(target):
            self._advise(lib.CU_MEM_ADVISE_UNSET_ACCESSED_BY, _location_from_key(key))
        for key, c_loc in target.items():
            if key not in current:
                self._advise(lib.CU_MEM_ADVISE_SET_ACCESSED_BY, c_loc)

    def _range_int(self, attribute):
        require_open(self, self._closed, "ManagedBuffer")
        out = ffi.new("int *")
        check(
            lib.cuMemRangeGetAttribute(out, 4, attribute, self._ptr, self._size),
            "cuMemRangeGetAttribute",
        )
        return out[0]

    def _advise(self, advice, c_loc):
        require_open(self, self._closed, "ManagedBuffer")
        check(lib.cuMemAdvise_v2(self._ptr, self._size, advice, c_loc[0]), "cuMemAdvise")


class AccessedBySet:
    """Live view of the accessed-by advice of a :class:`ManagedBuffer`.

    Membership and iteration query the driver; :meth:`add` and
    :meth:`discard` apply advice.  Items are Devices and ``Host()`` (the
    driver reports every host location as the plain host).
    """

    __slots__ = ("_buf",)

    def __init__(self, buf):
        self._buf = buf

    def _ids(self):
        buf = self._buf
        require_open(buf, buf._closed, "ManagedBuffer")
        count = ffi.new("int *")
        check(lib.cuDeviceGetCount(count))
        n = count[0] + 1
        out = ffi.new("int[]", n)
        check(
            lib.cuMemRangeGetAttribute(
                out, 4 * n, lib.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, buf._ptr, buf._size
            ),
            "cuMemRangeGetAttribute(ACCESSED_BY)",
        )
        return {v for v in out if v != -2}

    def __contains__(self, location):
        try:
            key = _location_key(_as_location(location))
        except (TypeError, ValueError):
            return False
        return key in self._ids()

    def __iter__(self):
        return iter([_location_object(i) for i in sorted(self._ids())])

    def __len__(self):
        return len(self._ids())

    def __eq__(self, other):
        if isinstance(other, AccessedBySet):
            return self._ids() == other._ids()
        if isinstance(other, (set, frozenset)):
            return set(self) == other
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        return f"AccessedBySet({set(self)!r})"

    def add(self, location):
        """Apply accessed-by advice for ``location``.

        Raises
        ------
        ValueError
            For a NUMA-specific Host (``Host(numa_id=N)``,
            ``Host.numa_current()``): the driver takes accessed-by advice
            only for devices and the plain host.
        """
        self._buf._advise(lib.CU_MEM_ADVISE_SET_ACCESSED_BY, _accessed_by_location(location))

    def discard(self, location):
        """Remove accessed-by advice for ``location``.

        A NUMA-specific Host is never a member (the driver records host
        advice as plain host), so discarding one does nothing.
        """
        if isinstance(location, Host) and (
            location.numa_id is not None or location.is_numa_current
        ):
            return
        self._buf._advise(lib.CU_MEM_ADVISE_UNSET_ACCESSED_BY, _as_location(location))


class ManagedMemoryResource(_MemPool):
    """Managed (unified) memory from a stream-ordered memory pool.

    The memory migrates between host and devices on demand.  Needs a CUDA
    13 driver.  :meth:`allocate` returns :class:`ManagedBuffer` objects.

    Parameters
    ----------
    options : ManagedMemoryResourceOptions or dict, optional
        ``None`` (the default) uses the driver's current managed pool, which
        this resource does not own.  With options, a new pool is created
        (and owned) with the given preferred location.

    Notes
    -----
    Managed memory pools cannot be shared between processes.
    """

    _buffer_class = ManagedBuffer

    def __init__(self, options=None):
        opts = check_or_create_options(
            ManagedMemoryResourceOptions, options, "ManagedMemoryResource options", keep_none=True
        )
        check(lib.cuInit(0), "cuInit")
        require_driver(13, 0, "ManagedMemoryResource", RuntimeError)
        loc_type, loc_id, self._preferred = _pool_location(opts)
        dev_id = loc_id if loc_type == lib.CU_MEM_LOCATION_TYPE_DEVICE else -1
        if opts is None:
            self._init_current_pool(loc_type, loc_id, lib.CU_MEM_ALLOCATION_TYPE_MANAGED, dev_id)
        else:
            self._init_create_pool(
                loc_type, loc_id, lib.CU_MEM_ALLOCATION_TYPE_MANAGED, False, 0, dev_id
            )

    @property
    def device_id(self):
        """int: The preferred device ordinal, or -1 when the preference is not a device."""
        return self._dev_id

    @property
    def preferred_location(self):
        """tuple or None: ``(type, id)`` of the pool's preferred location, or None.

        ``type`` is a :class:`ManagedMemoryLocationType`; ``id`` is the device
        ordinal, None (host) or the NUMA node.
        """
        return self._preferred

    @property
    def is_device_accessible(self):
        """bool: True."""
        return True

    @property
    def is_host_accessible(self):
        """bool: True."""
        return True

    @property
    def is_managed(self):
        """bool: True; buffers are managed memory."""
        return True


def _pool_location(opts):
    """Return ``(CUmemLocationType, id, preferred_location tuple or None)``."""
    loc = None if opts is None else opts.preferred_location
    kind = None if opts is None else opts.preferred_location_type
    if kind is None:
        if loc is None:
            return lib.CU_MEM_LOCATION_TYPE_NONE, 0, None
        if loc == -1:
            return lib.CU_MEM_LOCATION_TYPE_HOST, 0, (ManagedMemoryLocationType.HOST, None)
        return lib.CU_MEM_LOCATION_TYPE_DEVICE, loc, (ManagedMemoryLocationType.DEVICE, loc)
    kind = ManagedMemoryLocationType(kind)
    if kind is ManagedMemoryLocationType.DEVICE:
        return lib.CU_MEM_LOCATION_TYPE_DEVICE, loc, (kind, loc)
    if kind is ManagedMemoryLocationType.HOST:
        return lib.CU_MEM_LOCATION_TYPE_HOST, 0, (kind, None)
    if loc is None:
        loc = _host_numa_id_for_current_device()
    return lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, loc, (kind, loc)


def _device_location(dev_id):
    c_loc = ffi.new("CUmemLocation *")
    c_loc.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
    c_loc.id = dev_id
    return c_loc


def _accessed_by_location(location):
    """``_as_location`` for accessed-by advice, which refuses host NUMA locations."""
    c_loc = _as_location(location)
    if c_loc.type == lib.CU_MEM_LOCATION_TYPE_HOST_NUMA:
        kind = "host_numa"
    elif c_loc.type == lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        kind = "host_numa_current"
    else:
        return c_loc
    raise ValueError(f"advise 'set_accessed_by' does not support location_type='{kind}'")


def _as_location(location):
    """Convert a Device, Host, device ordinal or -1 (host) to a ``CUmemLocation *``."""
    c_loc = ffi.new("CUmemLocation *")
    if isinstance(location, bool):
        raise TypeError("a location must be a Device, a Host or an int, not bool")
    if isinstance(location, int):
        if location >= 0:
            c_loc.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
            c_loc.id = location
        elif location == -1:
            c_loc.type = lib.CU_MEM_LOCATION_TYPE_HOST
            c_loc.id = 0
        else:
            raise ValueError(
                f"a location int must be a device ordinal or -1 (host), got {location}"
            )
        return c_loc
    dev_id = getattr(location, "device_id", None)
    if isinstance(dev_id, int):
        c_loc.type = lib.CU_MEM_LOCATION_TYPE_DEVICE
        c_loc.id = dev_id
        return c_loc
    if isinstance(location, Host):
        if location.is_numa_current:
            c_loc.type = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT
            c_loc.id = 0
        elif location.numa_id is not None:
            c_loc.type = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA
            c_loc.id = location.numa_id
        else:
            c_loc.type = lib.CU_MEM_LOCATION_TYPE_HOST
            c_loc.id = 0
        return c_loc
    raise TypeError(f"a location must be a Device, a Host or an int, not {type(location).__name__}")


def _location_key(c_loc):
    """The driver's read-back id of a location: ordinal, or -1 for any host location."""
    if c_loc.type == lib.CU_MEM_LOCATION_TYPE_DEVICE:
        return c_loc.id
    return -1


def _location_from_key(key):
    return _as_location(key)


def _location_object(loc_id):
    """Device for an ordinal, -1 for any host location, None for -2 (unset)."""
    if loc_id == -2:
        return None
    if loc_id == -1:
        return Host()
    return _slots.Device(loc_id)


def _typed_location_object(kind, loc_id):
    """Device, Host or None for a ``(CUmemLocationType, id)`` the driver reported."""
    if kind == lib.CU_MEM_LOCATION_TYPE_DEVICE:
        return _location_object(loc_id)
    if kind == lib.CU_MEM_LOCATION_TYPE_HOST:
        return Host()
    if kind == lib.CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return Host(numa_id=loc_id)
    if kind == lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return Host.numa_current()
    return None
