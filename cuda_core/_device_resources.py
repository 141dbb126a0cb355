# SPDX-License-Identifier: Apache-2.0
"""Device resources for green contexts: SMs and workqueues.

:attr:`Device.resources <cuda_core.Device.resources>` (and
:attr:`Context.resources <cuda_core.Context.resources>`,
:attr:`Stream.resources <cuda_core.Stream.resources>`) return a
:class:`DeviceResources`, whose :attr:`~DeviceResources.sm` is the set of
streaming multiprocessors available there.  :meth:`SMResource.split` cuts it
into disjoint groups, and a group (with, optionally, a configured
:class:`WorkqueueResource`) becomes a green context through
:meth:`Device.create_context <cuda_core.Device.create_context>`.

Each resource object owns a copy of the driver's fixed-size
``CUdevResource`` struct; :attr:`SMResource.handle` is its address.  SM
splitting follows the driver's granularity rules (every group is a multiple
of :attr:`SMResource.coscheduled_alignment` SMs, at least
:attr:`SMResource.min_partition_size`): with a CUDA 13.1 driver through
``cuDevSmResourceSplit`` (per-group counts, co-scheduling, backfill), with
an older one through ``cuDevSmResourceSplitByCount`` (equal groups only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import cuda_core._slots as _slots
from cuda_core._coerce import as_flag
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._loader import driver_version
from cuda_core.typing import WorkqueueSharingScopeType

if TYPE_CHECKING:
    from cuda_core._device import Device

_SM = TypeVar("_SM", bound="SMResource")
_WQ = TypeVar("_WQ", bound="WorkqueueResource")
_DR = TypeVar("_DR", bound="DeviceResources")

__all__ = [
    "DeviceResources",
    "SMResource",
    "SMResourceOptions",
    "WorkqueueResource",
    "WorkqueueResourceOptions",
]


_GREEN_MIN_DRIVER = 12040
_STRUCTURED_SPLIT_MIN_DRIVER = 13010
_WORKQUEUE_MIN_DRIVER = 13010
_SM_OFFSET = ffi.offsetof("CUdevResource", "sm")
_SCOPE_TO_C = {
    WorkqueueSharingScopeType.DEVICE_CTX: lib.CU_WORKQUEUE_SCOPE_DEVICE_CTX,
    WorkqueueSharingScopeType.GREEN_CTX_BALANCED: lib.CU_WORKQUEUE_SCOPE_GREEN_CTX_BALANCED,
}
_SCOPE_FROM_C = {c: scope for scope, c in _SCOPE_TO_C.items()}


@dataclass
class SMResourceOptions:
    """Options for :meth:`SMResource.split`.

    Each field takes a scalar (one group) or a sequence (one entry per
    group).  ``count`` decides the number of groups: a scalar or None makes
    one group, a sequence ``len(count)`` groups; the other fields, when
    sequences, must have the same length.  Values are checked by
    :meth:`SMResource.split`.

    Attributes
    ----------
    count : int, sequence of int or None
        SMs per group; None lets the driver choose (discovery).
    coscheduled_sm_count : int, sequence or None
        SMs guaranteed to be co-scheduled together in each group (CUDA 13.1
        driver).
    preferred_coscheduled_sm_count : int, sequence or None
        Preferred co-scheduled SM count; the driver falls back to
        ``coscheduled_sm_count`` when it cannot (CUDA 13.1 driver).
    backfill : bool or sequence of bool
        Let the driver relax co-scheduling to fill a group with any SMs, so
        that counts that are not multiples of the alignment can be met
        (CUDA 13.1 driver).  Default False.
    """

    count: int | Sequence[int] | None = None
    coscheduled_sm_count: int | Sequence[int] | None = None
    preferred_coscheduled_sm_count: int | Sequence[int] | None = None
    backfill: bool | Sequence[bool] = False


@dataclass
class WorkqueueResourceOptions:
    """Options for :meth:`WorkqueueResource.configure`.

    Attributes
    ----------
    sharing_scope : WorkqueueSharingScopeType or str, optional
        ``"device_ctx"`` or ``"green_ctx_balanced"``; None leaves the scope
        as it is.
    concurrency_limit : int, optional
        The expected number of concurrent stream-ordered workloads
        (``>= 1``); None leaves it as it is.  The driver's own cap is
        ``CUDA_DEVICE_MAX_CONNECTIONS``; larger values are accepted but
        work submission may then overlap.

    Raises
    ------
    ValueError
        For an unknown ``sharing_scope`` or a ``concurrency_limit`` below 1.
    TypeError
        If ``concurrency_limit`` is not an int.
    """

    sharing_scope: WorkqueueSharingScopeType | str | None = None
    concurrency_limit: int | None = None

    def __post_init__(self) -> None:
        scope = self.sharing_scope
        if scope is not None:
            try:
                self.sharing_scope = WorkqueueSharingScopeType(scope)
            except ValueError:
                raise ValueError(
                    f"{scope!r} is not a valid WorkqueueSharingScopeType. Must be "
                    "'device_ctx' or 'green_ctx_balanced'"
                ) from None
        limit = self.concurrency_limit
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise TypeError(
                    f"concurrency_limit must be an int or None, got {type(limit).__name__}"
                )
            if limit < 1:
                raise ValueError(f"concurrency_limit must be >= 1, got {limit}")


class SMResource:
    """A set of streaming multiprocessors (SMs): a whole device's, a context's or a split group.

    Obtained from :attr:`DeviceResources.sm` or :meth:`split`; not
    constructible.  A group from a ``dry_run`` split only describes the
    split and cannot create a context.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_res", "_usable", "_min_partition", "_alignment", "__weakref__")
    _res: Any
    _usable: bool
    _min_partition: int
    _alignment: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "SMResource cannot be instantiated directly. "
            "Use dev.resources.sm or SMResource.split()."
        )

    @classmethod
    def _copy(
        cls: type[_SM], c_res: Any, usable: bool = True, parent: SMResource | None = None
    ) -> _SM:
        """Return an SMResource owning a copy of the ``CUdevResource`` at ``c_res``."""
        self = object.__new__(cls)
        self._res = ffi.new("CUdevResource *")
        ffi.memmove(self._res, c_res, ffi.sizeof("CUdevResource"))
        self._usable = usable
        sm = self._res.sm
        self._min_partition = sm.minSmPartitionSize
        self._alignment = sm.smCoscheduledAlignment
        if parent is not None:  # the driver may leave these 0 in split results
            self._min_partition = self._min_partition or parent._min_partition
            self._alignment = self._alignment or parent._alignment
        return self

    def __repr__(self) -> str:
        dry = " dry-run" if not self._usable else ""
        return f"<SMResource sm_count={self.sm_count}{dry}>"

    def split(
        self, options: SMResourceOptions, *, dry_run: bool = False
    ) -> tuple[list[SMResource], SMResource]:
        """Split these SMs into groups and a remainder.

        Parameters
        ----------
        options : SMResourceOptions
            How many groups and how large (see :class:`SMResourceOptions`).
        dry_run : bool, optional
            Keyword-only: only describe the split; the returned resources
            cannot create contexts.

        Returns
        -------
        tuple of (list of SMResource, SMResource)
            ``(groups, remainder)``: disjoint groups, and the SMs left over.
            Groups follow the driver's granularity: a count is rounded up to
            a multiple of :attr:`coscheduled_alignment` (at least
            :attr:`min_partition_size`), so a group may hold more SMs than
            asked for.

        Raises
        ------
        TypeError
            If ``options`` is not an SMResourceOptions, or a count is not an int.
        ValueError
            For an empty ``count`` sequence, a negative count, or sequences
            whose lengths do not match ``count``.
        NotImplementedError
            With a driver older than CUDA 12.4; with one older than 13.1 for
            per-group counts, co-scheduling counts or backfill.
        CUDAError
            If the driver cannot make the split (e.g. more SMs than there are:
            ``CUDA_ERROR_INVALID_VALUE`` or
            ``CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION``).
        """
        if not isinstance(options, SMResourceOptions):
            raise TypeError(f"options must be SMResourceOptions, got {type(options)}")
        n_groups = _group_count(options)
        _check_green_ctx_support()
        if driver_version() >= _STRUCTURED_SPLIT_MIN_DRIVER:
            return _split_structured(self, options, n_groups, dry_run)
        return _split_by_count(self, options, n_groups, dry_run)

    @property
    def handle(self) -> int:
        """int: The address of this object's ``CUdevResource`` struct."""
        return int(ffi.cast("uintptr_t", self._res))

    @property
    def sm_count(self) -> int:
        """int: The number of SMs in this resource."""
        count: int = self._res.sm.smCount
        return count

    @property
    def min_partition_size(self) -> int:
        """int: The fewest SMs a split group of this resource can have."""
        return self._min_partition

    @property
    def coscheduled_alignment(self) -> int:
        """int: The granularity of groups: SMs guaranteed to be co-scheduled together."""
        return self._alignment

    @property
    def flags(self) -> int:
        """int: The driver's flags of this resource (0 before CUDA 13.1)."""
        flags: int = self._res.sm.flags
        return flags


class WorkqueueResource:
    """The workqueue configuration of a device or context (CUDA 13.1 driver).

    Obtained from :attr:`DeviceResources.workqueue`; not constructible.
    :meth:`configure` changes this object's configuration, which takes
    effect in a context created with it (:class:`~cuda_core.ContextOptions`).

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_config", "_wq", "__weakref__")
    _config: Any
    _wq: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "WorkqueueResource cannot be instantiated directly. Use dev.resources.workqueue."
        )

    @classmethod
    def _copy(cls: type[_WQ], c_config: Any, c_wq: Any) -> _WQ:
        self = object.__new__(cls)
        self._config = ffi.new("CUdevResource *")
        self._wq = ffi.new("CUdevResource *")
        ffi.memmove(self._config, c_config, ffi.sizeof("CUdevResource"))
        ffi.memmove(self._wq, c_wq, ffi.sizeof("CUdevResource"))
        return self

    def __repr__(self) -> str:
        return (
            f"<WorkqueueResource sharing_scope={self.sharing_scope!s} "
            f"concurrency_limit={self.concurrency_limit}>"
        )

    def configure(self, options: WorkqueueResourceOptions) -> None:
        """Change this workqueue configuration in place.

        Parameters
        ----------
        options : WorkqueueResourceOptions
            The fields that are not None are applied.

        Raises
        ------
        NotImplementedError
            With a driver older than CUDA 13.1.
        TypeError
            If ``options`` is not a WorkqueueResourceOptions.
        """
        _check_green_ctx_support()
        _check_workqueue_support()
        if not isinstance(options, WorkqueueResourceOptions):
            raise TypeError(f"options must be WorkqueueResourceOptions, got {type(options)}")
        config = self._wq_config()
        if options.sharing_scope is not None:
            config[2] = _SCOPE_TO_C[WorkqueueSharingScopeType(options.sharing_scope)]
        if options.concurrency_limit is not None:
            config[1] = options.concurrency_limit

    def _wq_config(self) -> Any:
        """The ``wqConfig`` member as ``int[3]``: device, concurrency limit, sharing scope."""
        return ffi.cast("int *", ffi.cast("char *", self._config) + _SM_OFFSET)

    @property
    def handle(self) -> int:
        """int: The address of the configuration's ``CUdevResource`` struct."""
        return int(ffi.cast("uintptr_t", self._config))

    @property
    def sharing_scope(self) -> WorkqueueSharingScopeType:
        """WorkqueueSharingScopeType: How the workqueues are shared."""
        return _SCOPE_FROM_C[self._wq_config()[2]]

    @property
    def concurrency_limit(self) -> int:
        """int: The expected number of concurrent stream-ordered workloads."""
        limit: int = self._wq_config()[1] & 0xFFFFFFFF
        return limit

    @property
    def device(self) -> Device:
        """Device: The device these workqueues are on."""
        device: Device = _slots.device_class()(self._wq_config()[0])
        return device


class DeviceResources:
    """The resources of a device, or those provisioned for a context.

    From :attr:`Device.resources <cuda_core.Device.resources>` the whole
    device's; from :attr:`Context.resources <cuda_core.Context.resources>`
    or :attr:`Stream.resources <cuda_core.Stream.resources>` the context's
    (a green context's partition).  Each property queries the driver anew.
    Not constructible.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_device_id", "_c_ctx", "_c_green", "_keep")
    _device_id: int
    _c_ctx: Any
    _c_green: Any
    _keep: object

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("DeviceResources cannot be instantiated directly. Use dev.resources.")

    @classmethod
    def _for_device(cls: type[_DR], device_id: int) -> _DR:
        return cls._new(device_id, None, None, None)

    @classmethod
    def _for_context(cls: type[_DR], device_id: int, c_ctx: Any, c_green: Any, keep: object) -> _DR:
        """Resources of context ``c_ctx`` (green context ``c_green`` if not None).

        ``keep`` is kept alive (the object that owns the handles).
        """
        return cls._new(device_id, c_ctx, c_green, keep)

    @classmethod
    def _new(cls: type[_DR], device_id: int, c_ctx: Any, c_green: Any, keep: object) -> _DR:
        self = object.__new__(cls)
        self._device_id = device_id
        self._c_ctx = c_ctx
        self._c_green = c_green
        self._keep = keep
        return self

    def __repr__(self) -> str:
        where = "device" if self._c_ctx is None else "context"
        return f"<DeviceResources {where} of device {self._device_id}>"

    def _query(self, out: Any, kind: int) -> None:
        if self._c_green is not None:
            check(
                lib.cuGreenCtxGetDevResource(self._c_green, out, kind), "cuGreenCtxGetDevResource"
            )
        elif self._c_ctx is not None:
            check(lib.cuCtxGetDevResource(self._c_ctx, out, kind), "cuCtxGetDevResource")
        else:
            check(lib.cuDeviceGetDevResource(self._device_id, out, kind), "cuDeviceGetDevResource")

    @property
    def sm(self) -> SMResource:
        """SMResource: The SMs available here.

        Raises
        ------
        NotImplementedError
            With a driver older than CUDA 12.4.
        """
        _check_green_ctx_support()
        out = ffi.new("CUdevResource *")
        self._query(out, lib.CU_DEV_RESOURCE_TYPE_SM)
        return SMResource._copy(out)

    @property
    def workqueue(self) -> WorkqueueResource:
        """WorkqueueResource: The workqueue configuration here.

        Raises
        ------
        NotImplementedError
            With a driver older than CUDA 13.1.
        """
        _check_green_ctx_support()
        _check_workqueue_support()
        config = ffi.new("CUdevResource *")
        wq = ffi.new("CUdevResource *")
        self._query(config, lib.CU_DEV_RESOURCE_TYPE_WORKQUEUE_CONFIG)
        self._query(wq, lib.CU_DEV_RESOURCE_TYPE_WORKQUEUE)
        return WorkqueueResource._copy(config, wq)


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _version_text(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}"


def _check_green_ctx_support() -> None:
    version = driver_version()
    if version < _GREEN_MIN_DRIVER:
        raise NotImplementedError(
            "Green context support requires CUDA driver 12.4 or newer. "
            f"Using driver version {_version_text(version)}"
        )


def _check_workqueue_support() -> None:
    version = driver_version()
    if version < _WORKQUEUE_MIN_DRIVER:
        raise NotImplementedError(
            "WorkqueueResource requires CUDA driver 13.1 or newer. "
            f"Using driver version {_version_text(version)}"
        )


def _is_sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


_PER_GROUP_FIELDS = ("coscheduled_sm_count", "preferred_coscheduled_sm_count", "backfill")


def _group_count(options: SMResourceOptions) -> int:
    """Return the number of groups ``options`` asks for, checking the field shapes."""
    count: Any = options.count
    if count is None or (isinstance(count, int) and not isinstance(count, bool)):
        n_groups = 1
        scalar = True
    elif _is_sequence(count):
        n_groups = len(count)
        if n_groups == 0:
            raise ValueError("count sequence must not be empty")
        scalar = False
    else:
        raise TypeError(f"count must be int, Sequence, or None, got {type(count)}")
    for name in _PER_GROUP_FIELDS:
        value = getattr(options, name)
        if not _is_sequence(value):
            continue
        if scalar:
            raise ValueError(
                f"{name} is a Sequence but count is scalar; count must be a Sequence to "
                "specify multiple groups"
            )
        if len(value) != n_groups:
            raise ValueError(
                f"{name} has length {len(value)}, expected {n_groups} (must match count)"
            )
    return n_groups


def _per_group(value: Any, n_groups: int) -> list[Any]:
    return list(value) if _is_sequence(value) else [value] * n_groups


def _as_uint(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value)}")
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return value


def _count(value: object) -> int:
    return 0 if value is None else _as_uint(value, "count")


def _split_by_count(
    sm: SMResource, options: SMResourceOptions, n_groups: int, dry_run: bool
) -> tuple[list[SMResource], SMResource]:
    """Split with ``cuDevSmResourceSplitByCount`` (drivers before CUDA 13.1)."""
    if options.coscheduled_sm_count is not None:
        raise NotImplementedError(
            "SMResourceOptions.coscheduled_sm_count requires the CUDA 13.1 structured SM split API"
        )
    if options.preferred_coscheduled_sm_count is not None:
        raise NotImplementedError(
            "SMResourceOptions.preferred_coscheduled_sm_count requires the CUDA 13.1 "
            "structured SM split API"
        )
    if any(_per_group(options.backfill, n_groups)):
        raise NotImplementedError(
            "SMResourceOptions.backfill requires the CUDA 13.1 structured SM split API"
        )
    counts = _per_group(options.count, n_groups)
    if any(c != counts[0] for c in counts[1:]):
        raise NotImplementedError(
            "CUDA 12 SM splitting only supports homogeneous count values; use CUDA 13.1 or "
            "newer for per-group counts"
        )
    min_count = _count(counts[0])
    result = ffi.new("CUdevResource[]", n_groups)
    remaining = ffi.new("CUdevResource *")
    nb = ffi.new("unsigned int *", n_groups)
    check(
        lib.cuDevSmResourceSplitByCount(result, nb, sm._res, remaining, 0, min_count),
        "cuDevSmResourceSplitByCount",
    )
    usable = not dry_run
    groups = [SMResource._copy(result + i, usable, sm) for i in range(nb[0])]
    return groups, SMResource._copy(remaining, usable, sm)


def _split_structured(
    sm: SMResource, options: SMResourceOptions, n_groups: int, dry_run: bool
) -> tuple[list[SMResource], SMResource]:
    """Split with ``cuDevSmResourceSplit`` (CUDA 13.1 drivers)."""
    counts = _per_group(options.count, n_groups)
    cosched = _per_group(options.coscheduled_sm_count, n_groups)
    preferred = _per_group(options.preferred_coscheduled_sm_count, n_groups)
    backfill = _per_group(options.backfill, n_groups)
    params = ffi.new("CU_DEV_SM_RESOURCE_GROUP_PARAMS[]", n_groups)
    for i in range(n_groups):
        params[i].smCount = _count(counts[i])
        if cosched[i] is not None:
            params[i].coscheduledSmCount = _as_uint(cosched[i], "coscheduled_sm_count")
        if preferred[i] is not None:
            params[i].preferredCoscheduledSmCount = _as_uint(
                preferred[i], "preferred_coscheduled_sm_count"
            )
        flag = as_flag(backfill[i], "backfill", ints=False)
        params[i].flags = lib.CU_DEV_SM_RESOURCE_GROUP_BACKFILL if flag else 0
    result = ffi.NULL if dry_run else ffi.new("CUdevResource[]", n_groups)
    remaining = ffi.new("CUdevResource *")
    check(
        lib.cuDevSmResourceSplit(result, n_groups, sm._res, remaining, 0, params),
        "cuDevSmResourceSplit",
    )
    if not dry_run:
        groups = [SMResource._copy(result + i, True, sm) for i in range(n_groups)]
        return groups, SMResource._copy(remaining, True, sm)
    groups = []
    for i in range(n_groups):  # describe each group from the filled-in parameters
        synth = ffi.new("CUdevResource *")
        synth.type = lib.CU_DEV_RESOURCE_TYPE_SM
        synth.sm.smCount = params[i].smCount
        groups.append(SMResource._copy(synth, False, sm))
    return groups, SMResource._copy(remaining, False, sm)
