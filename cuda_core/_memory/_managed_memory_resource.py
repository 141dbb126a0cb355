# SPDX-License-Identifier: Apache-2.0
"""Managed (unified) memory: :class:`ManagedMemoryResource` and :class:`ManagedBuffer`.

Managed memory pools need a CUDA 13 driver.  A :class:`ManagedBuffer` adds
the driver's advice and prefetch operations to :class:`~cuda_core.Buffer`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, MutableSet
from typing import TYPE_CHECKING, Any

from cuda_core._coerce import check_or_create_options
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._host import Host
from cuda_core._lifetime import require_open
from cuda_core._loader import device_count, driver_at_least, init_driver, require_driver
from cuda_core._memory import _managed_memory_ops
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._location import device_location, is_location, location_pair
from cuda_core._memory._memory_pool import _MemPool
from cuda_core._memory._memory_resource import _SharedMemory
from cuda_core._memory._pinned_memory_resource import _host_numa_id_for_current_device
from cuda_core._stream import _as_stream
from cuda_core.typing import ManagedMemoryLocationType, _refuse

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core._memory._memory_resource import MemoryResource
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import DevicePointerType

__all__ = [
    "ManagedBuffer",
    "ManagedMemoryLocationType",
    "ManagedMemoryResource",
    "ManagedMemoryResourceOptions",
]

_DEVICE_OR_HOST: frozenset[int] = frozenset(
    (lib.CU_MEM_LOCATION_TYPE_DEVICE, lib.CU_MEM_LOCATION_TYPE_HOST)
)
_NOT_NUMA_CURRENT = _DEVICE_OR_HOST | {lib.CU_MEM_LOCATION_TYPE_HOST_NUMA}

#: The location types each advice takes (cuda.core's rules).
_ADVICE_LOCATION_TYPES: dict[int, frozenset[int]] = {
    lib.CU_MEM_ADVISE_SET_READ_MOSTLY: _NOT_NUMA_CURRENT,
    lib.CU_MEM_ADVISE_UNSET_READ_MOSTLY: _NOT_NUMA_CURRENT,
    lib.CU_MEM_ADVISE_SET_PREFERRED_LOCATION: _NOT_NUMA_CURRENT
    | {lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT},
    lib.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: _NOT_NUMA_CURRENT,
    lib.CU_MEM_ADVISE_SET_ACCESSED_BY: _DEVICE_OR_HOST,
    lib.CU_MEM_ADVISE_UNSET_ACCESSED_BY: _DEVICE_OR_HOST,
}
#: Advice whose location the driver ignores (None is accepted for it).
_ADVICE_WITHOUT_LOCATION: frozenset[int] = frozenset(
    (
        lib.CU_MEM_ADVISE_SET_READ_MOSTLY,
        lib.CU_MEM_ADVISE_UNSET_READ_MOSTLY,
        lib.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION,
    )
)
_ADVICE_NAMES: dict[int, str] = {
    lib.CU_MEM_ADVISE_SET_READ_MOSTLY: "CU_MEM_ADVISE_SET_READ_MOSTLY",
    lib.CU_MEM_ADVISE_UNSET_READ_MOSTLY: "CU_MEM_ADVISE_UNSET_READ_MOSTLY",
    lib.CU_MEM_ADVISE_SET_PREFERRED_LOCATION: "CU_MEM_ADVISE_SET_PREFERRED_LOCATION",
    lib.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION: "CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION",
    lib.CU_MEM_ADVISE_SET_ACCESSED_BY: "CU_MEM_ADVISE_SET_ACCESSED_BY",
    lib.CU_MEM_ADVISE_UNSET_ACCESSED_BY: "CU_MEM_ADVISE_UNSET_ACCESSED_BY",
}
_LOCATION_TYPE_NAMES: dict[int, str] = {
    lib.CU_MEM_LOCATION_TYPE_DEVICE: "device",
    lib.CU_MEM_LOCATION_TYPE_HOST: "host",
    lib.CU_MEM_LOCATION_TYPE_HOST_NUMA: "host_numa",
    lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: "host_numa_current",
}


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

    def __post_init__(self) -> None:
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
        if not isinstance(kind, str):  # the enum would compare it with each value
            _refuse(ManagedMemoryLocationType, kind)
        kind = ManagedMemoryLocationType(kind)  # "'x' is not a valid ManagedMemoryLocationType..."
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
    ``cuMemAdvise``.  Locations are :class:`~cuda_core.Device` and
    :class:`~cuda_core.Host` objects; ``Host(numa_id=...)`` and
    ``Host.numa_current()`` need a CUDA 13 driver (TypeError before).
    """

    __slots__ = ()

    # cuda.core's ManagedBuffer.from_handle is a classmethod without Buffer's ``stream``.
    @classmethod
    def from_handle(  # type: ignore[override]
        cls,
        ptr: DevicePointerType,
        size: int,
        mr: MemoryResource | None = None,
        owner: object | None = None,
    ) -> ManagedBuffer:
        """Wrap an existing managed-memory pointer (see :meth:`Buffer.from_handle`)."""
        return cls._init(ptr, size, mr=mr, owner=owner)

    def prefetch(self, location: Device | Host, *, stream: Stream | GraphBuilder) -> None:
        """Migrate this range to ``location`` asynchronously on ``stream``.

        Parameters
        ----------
        location : Device or Host
            The destination.
        stream : Stream or GraphBuilder
            Keyword-only; the stream that orders the migration.

        Raises
        ------
        ValueError
            If the memory is not managed, or ``location`` is None.
        TypeError
            If ``location`` is neither a Device nor a Host.
        """
        require_open(self._closed, "ManagedBuffer")
        _require_managed(self, "prefetch")
        c_loc = _c_location(location_pair(location))
        s = _as_stream(stream)
        if self._size:
            check(
                lib.cuMemPrefetchAsync_v2(self._ptr, self._size, c_loc[0], 0, s._handle),
                "cuMemPrefetchAsync",
            )

    def discard(self, *, stream: Stream | GraphBuilder) -> None:
        """Discard this range's resident pages asynchronously on ``stream`` (CUDA 13+).

        The contents are dropped without migration; reading the range before
        writing or prefetching it again gives indeterminate values.  The
        pages end up resident on the stream's device (a plain discard loses
        later writes with driver 580).  See
        :func:`cuda_core.utils.discard_batch` (errors and notes included).
        """
        _managed_memory_ops.discard_one(self, stream)

    def discard_prefetch(self, location: Device | Host, *, stream: Stream | GraphBuilder) -> None:
        """Discard this range and prefetch it to ``location`` on ``stream`` (CUDA 13+).

        See :func:`cuda_core.utils.discard_prefetch_batch` (errors included).
        """
        _managed_memory_ops.discard_prefetch_one(self, location, stream)

    @property
    def read_mostly(self) -> bool:
        """bool: Whether read-mostly advice applies to this range (settable)."""
        return self._range_int(lib.CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY) != 0

    @read_mostly.setter
    def read_mostly(self, value: bool) -> None:
        advice = lib.CU_MEM_ADVISE_SET_READ_MOSTLY if value else lib.CU_MEM_ADVISE_UNSET_READ_MOSTLY
        self._advise(advice, None)

    @property
    def preferred_location(self) -> Device | Host | None:
        """Device, Host or None: The preferred location advice (settable; None unsets).

        With a CUDA 13 driver a host NUMA preference reads back as
        ``Host(numa_id=N)``; with an older one every host location reads back
        as ``Host()``.
        """
        return self._location_attribute(
            lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE,
            lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID,
            lib.CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION,
        )

    @preferred_location.setter
    def preferred_location(self, value: Device | Host | None) -> None:
        if value is None:
            self._advise(lib.CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, None)
        else:
            self._advise(lib.CU_MEM_ADVISE_SET_PREFERRED_LOCATION, value)

    @property
    def last_prefetch_location(self) -> Device | Host | None:
        """Device, Host or None: Where this range was last prefetched (read-only).

        None when the range was never prefetched as a whole, or its pages
        went to different places.  This is the location last asked for, not
        a sign that the migration has finished.  With a CUDA 13 driver a
        prefetch to a host NUMA node reads back as ``Host(numa_id=N)``; with
        an older one as ``Host()``.
        """
        return self._location_attribute(
            lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE,
            lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID,
            lib.CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
        )

    @property
    def accessed_by(self) -> AccessedBySet:
        """AccessedBySet: Live set of the locations with accessed-by advice (settable).

        Assigning an iterable of Devices and Hosts sets and unsets advice
        so that exactly those locations remain; every entry is checked
        before any advice changes.
        """
        return AccessedBySet(self)

    @accessed_by.setter
    def accessed_by(self, locations: Iterable[Device | Host]) -> None:
        target: set[Device | Host] = set()
        for loc in locations:
            if not is_location(loc):
                raise TypeError(
                    f"accessed_by entries must be Device or Host, got {type(loc).__name__}"
                )
            target.add(loc)
        for loc in target:  # NUMA hosts are refused before any advice changes
            _advice_pair(lib.CU_MEM_ADVISE_SET_ACCESSED_BY, loc)
        current = set(AccessedBySet(self))
        for loc in current - target:
            self._advise(lib.CU_MEM_ADVISE_UNSET_ACCESSED_BY, loc)
        for loc in target - current:
            self._advise(lib.CU_MEM_ADVISE_SET_ACCESSED_BY, loc)

    def _range_int(self, attribute: int) -> int:
        require_open(self._closed, "ManagedBuffer")
        out = ffi.new("int *")
        check(
            lib.cuMemRangeGetAttribute(out, 4, attribute, self._ptr, self._size),
            "cuMemRangeGetAttribute",
        )
        value: int = out[0]
        return value

    def _location_attribute(
        self, type_attr: int, id_attr: int, legacy_attr: int
    ) -> Device | Host | None:
        """Read a location attribute: ``(type, id)`` on CUDA 13, the legacy id before."""
        if driver_at_least(13, 0):  # type and id: host NUMA nodes round-trip
            return _typed_location_object(self._range_int(type_attr), self._range_int(id_attr))
        return _location_object(self._range_int(legacy_attr))

    def _advise(self, advice: int, location: Device | Host | None) -> None:
        """Apply ``advice`` for ``location`` (a Device, a Host, or None where ignored)."""
        require_open(self._closed, "ManagedBuffer")
        _require_managed(self, "advise")
        c_loc = _c_location(_advice_pair(advice, location))
        check(lib.cuMemAdvise_v2(self._ptr, self._size, advice, c_loc[0]), "cuMemAdvise")


class AccessedBySet(MutableSet):  # type: ignore[type-arg]  # of Device | Host
    """Live view of the accessed-by advice of a :class:`ManagedBuffer`.

    Membership and iteration query the driver; :meth:`add` and
    :meth:`discard` apply advice.  Items are Devices and ``Host()``:
    accessed-by advice takes no NUMA-specific host.  A
    :class:`collections.abc.MutableSet`: comparisons, ``|``, ``&``, ``-``,
    ``isdisjoint``, ``pop``, ``clear``, ``|=`` and the rest behave as for a
    set (operators give plain sets).
    """

    __slots__ = ("_buf",)
    _buf: ManagedBuffer

    def __init__(self, buf: ManagedBuffer) -> None:
        self._buf = buf

    def _ids(self) -> set[int]:
        buf = self._buf
        require_open(buf._closed, "ManagedBuffer")
        n = device_count() + 1
        out = ffi.new("int[]", n)
        check(
            lib.cuMemRangeGetAttribute(
                out, 4 * n, lib.CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, buf._ptr, buf._size
            ),
            "cuMemRangeGetAttribute(ACCESSED_BY)",
        )
        return {v for v in out if v != -2}

    def __contains__(self, location: object) -> bool:
        if not is_location(location):
            return False
        return location in list(self)

    def __iter__(self) -> Iterator[Device | Host]:
        # The ids leave out -2, the only one that gives None.
        return iter([_location_object(i) for i in sorted(self._ids())])  # type: ignore[misc]

    def __len__(self) -> int:
        return len(self._ids())

    @classmethod
    def _from_iterable(cls, it: Iterable[Any]) -> set[Any]:
        return set(it)  # the result of an operator is a plain set

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a set

    def __repr__(self) -> str:
        return f"AccessedBySet({set(self)!r})"

    def add(self, location: Device | Host) -> None:
        """Apply accessed-by advice for ``location`` (a Device or ``Host()``).

        Raises
        ------
        TypeError
            If ``location`` is neither a Device nor a Host.
        ValueError
            For a NUMA-specific Host.
        """
        if not is_location(location):
            raise TypeError(f"expected Device or Host, got {type(location).__name__}")
        self._buf._advise(lib.CU_MEM_ADVISE_SET_ACCESSED_BY, location)

    def discard(self, location: Device | Host) -> None:
        """Remove accessed-by advice for ``location``.

        Anything that cannot be a member (not a Device or Host, or a
        NUMA-specific Host) is ignored, as a set's ``discard`` ignores
        missing items.
        """
        if not is_location(location):
            return
        if isinstance(location, Host) and (
            location.numa_id is not None or location.is_numa_current
        ):
            return
        self._buf._advise(lib.CU_MEM_ADVISE_UNSET_ACCESSED_BY, location)


class ManagedMemoryResource(_SharedMemory, _MemPool):
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
    _dev_id: int
    _preferred: tuple[ManagedMemoryLocationType, int | None] | None

    def __init__(
        self, options: ManagedMemoryResourceOptions | dict[str, Any] | None = None
    ) -> None:
        opts = check_or_create_options(
            ManagedMemoryResourceOptions, options, "ManagedMemoryResource options", keep_none=True
        )
        init_driver()
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
    def device_id(self) -> int:
        """int: The preferred device ordinal, or -1 when the preference is not a device."""
        return self._dev_id

    @property
    def preferred_location(self) -> tuple[ManagedMemoryLocationType, int | None] | None:
        """tuple or None: ``(type, id)`` of the pool's preferred location, or None.

        ``type`` is a :class:`ManagedMemoryLocationType`; ``id`` is the device
        ordinal, None (host) or the NUMA node.
        """
        return self._preferred

    @property
    def is_managed(self) -> bool:
        """bool: True; buffers are managed memory."""
        return True


def _pool_location(
    opts: ManagedMemoryResourceOptions | None,
) -> tuple[int, int, tuple[ManagedMemoryLocationType, int | None] | None]:
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
        # The options' __post_init__ made loc a device ordinal for this kind.
        return lib.CU_MEM_LOCATION_TYPE_DEVICE, loc, (kind, loc)  # type: ignore[return-value]
    if kind is ManagedMemoryLocationType.HOST:
        return lib.CU_MEM_LOCATION_TYPE_HOST, 0, (kind, None)
    if loc is None:
        loc = _host_numa_id_for_current_device()
    return lib.CU_MEM_LOCATION_TYPE_HOST_NUMA, loc, (kind, loc)


def _require_managed(buf: Buffer, what: str) -> None:
    if not buf.is_managed:
        raise ValueError(f"{what} requires a managed-memory allocation")


def _advice_pair(advice: int, location: Device | Host | None) -> tuple[int, int]:
    """The ``(type, id)`` of ``location`` for ``advice``, checked against what it takes."""
    pair = location_pair(location, allow_none=advice in _ADVICE_WITHOUT_LOCATION)
    if pair is None:
        # The driver ignores the location of this advice but still checks it.
        return (lib.CU_MEM_LOCATION_TYPE_HOST, 0)
    if pair[0] not in _ADVICE_LOCATION_TYPES[advice]:
        raise ValueError(
            f"advise {_ADVICE_NAMES[advice]} does not support "
            f"location_type='{_LOCATION_TYPE_NAMES[pair[0]]}'"
        )
    return pair


def _c_location(pair: tuple[int, int]) -> Any:
    """A ``CUmemLocation *`` for a ``(type, id)`` pair."""
    c_loc = ffi.new("CUmemLocation *")
    c_loc.type, c_loc.id = pair
    return c_loc


def _location_object(loc_id: int) -> Device | Host | None:
    """Device for an ordinal, -1 for any host location, None for -2 (unset)."""
    if loc_id == -2:
        return None
    if loc_id == -1:
        return Host()
    return device_location(loc_id)


def _typed_location_object(kind: int, loc_id: int) -> Device | Host | None:
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
