# SPDX-License-Identifier: Apache-2.0
"""Launch configuration: :class:`LaunchConfig`.

A :class:`LaunchConfig` is validated once, when it is created (and again when
one of its attributes is set), and turns itself into a prepared C structure
(``cc_launch_cfg``: grid in blocks, block, dynamic shared memory, and the
launch attributes it needs) the first time it is launched with.  Every later
launch with the same config reuses that structure: nothing about the
configuration is rebuilt per launch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle, index_or_none
from cuda_core._context import _current_device_id_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, shown_as

if TYPE_CHECKING:
    from typing import Any

__all__ = ["LaunchConfig"]

_ATTRS = (
    "grid",
    "cluster",
    "block",
    "shmem_size",
    "is_cooperative",
    "programmatic_stream_serialization",
)
_UINT_MAX = 0xFFFFFFFF


@shown_as(TypeError)
class _LaunchConfigTypeError(TypeError, ValueError):
    """A launch configuration field of the wrong type.

    It is also a ValueError, which is what NVIDIA's ``cuda.core`` raises for
    these mistakes, so code written for either catches it.
    """


class LaunchConfig:
    """Customizable launch options.

    When ``cluster`` is given, ``grid`` counts *clusters*, not blocks: the
    hierarchy is grid (clusters) -> cluster (blocks) -> block (threads), and
    the kernel is launched with ``grid[i] * cluster[i]`` blocks along each
    dimension plus the cluster-dimension launch attribute.

    Parameters
    ----------
    grid : int or tuple of int
        The number of blocks (or of clusters, with ``cluster``) along x, y, z:
        an int or a tuple of 1 to 3 positive ints (missing dimensions are 1).
        Required.
    cluster : int or tuple of int, optional
        Blocks per thread block cluster (compute capability 9.0 or newer).
    block : int or tuple of int
        Threads per block, like ``grid``.  Required.
    shmem_size : int, optional
        Dynamic shared memory per block, in bytes (default 0).
    is_cooperative : bool, optional
        Launch as a cooperative kernel (grid-wide synchronization).  The
        whole grid must be co-resident: :func:`~cuda_core.launch` raises
        ValueError when it exceeds the kernel's occupancy times the number of
        multiprocessors.
    programmatic_stream_serialization : bool, optional
        Allow programmatic dependent launch (PDL): this kernel may start
        before the previous kernel on the stream finishes, synchronizing
        through ``cudaGridDependencySynchronize``.

    Attributes
    ----------
    grid, cluster, block : tuple of int or None
        Stored as 3-tuples (``cluster`` is None when not set).
    shmem_size : int
    is_cooperative, programmatic_stream_serialization : bool

    Raises
    ------
    TypeError
        (also a ValueError) if ``grid``, ``block`` or ``cluster`` is not an int
        or a tuple of 1 to 3 ints, or ``shmem_size`` is not an int.
    ValueError
        If a dimension is not positive or does not fit in 32 bits, or
        ``shmem_size`` is negative.
    CUDAError
        If a device is current and does not support what is asked for:
        clusters need compute capability 9.0, cooperative launches need
        ``properties.cooperative_launch``.

    Notes
    -----
    The device-dependent checks (clusters, cooperative launches) run at
    construction only when a CUDA context is current on the calling thread,
    against that context's device; otherwise they are deferred.  They always
    run at launch, against the device of the launch stream.  So a
    configuration can be built on a machine without a GPU, and a
    configuration built for one device is still checked on another.
    """

    __slots__ = (
        "_grid",
        "_cluster",
        "_block",
        "_shmem_size",
        "_is_cooperative",
        "_pss",
        "_native",
        "_fast",
        "_retired",
        "_checked",
        "__weakref__",
    )

    _grid: tuple[int, int, int]
    _cluster: tuple[int, int, int] | None
    _block: tuple[int, int, int]
    _shmem_size: int
    _is_cooperative: bool
    _pss: bool
    _native: tuple[Any, int, bool] | None  # (cc_launch_cfg cdata, its address, special)
    _fast: int | None
    _retired: list[Any] | None
    _checked: set[int] | None

    def __init__(
        self,
        grid: int | tuple[int, ...] | None = None,
        cluster: int | tuple[int, ...] | None = None,
        block: int | tuple[int, ...] | None = None,
        shmem_size: int | None = None,
        is_cooperative: bool = False,
        programmatic_stream_serialization: bool = False,
    ) -> None:
        self._native = None
        self._fast = None
        self._retired = None
        self._checked = None
        self._grid = _cast_to_3_tuple("LaunchConfig.grid", grid)
        self._block = _cast_to_3_tuple("LaunchConfig.block", block)
        self._cluster = (
            None if cluster is None else _cast_to_3_tuple("LaunchConfig.cluster", cluster)
        )
        self._shmem_size = _shmem("LaunchConfig.shmem_size", shmem_size)
        self._is_cooperative = bool(is_cooperative)
        self._pss = bool(programmatic_stream_serialization)
        _native_dims(self._grid, self._cluster)  # the products must fit too
        if self._cluster is not None or self._is_cooperative:
            device_id = _current_device_id_or_none()
            if device_id is not None:
                _check_device_support(self, device_id)

    def __repr__(self) -> str:
        # cuda.core's five fields; the extension field only where it is set.
        names = _ATTRS if self._pss else _ATTRS[:-1]
        parts = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"LaunchConfig({parts})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LaunchConfig):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __reduce__(self) -> tuple[type[LaunchConfig], tuple[Any, ...]]:
        return LaunchConfig, tuple(getattr(self, name) for name in _ATTRS)

    def _identity(
        self,
    ) -> tuple[
        tuple[int, int, int], tuple[int, int, int] | None, tuple[int, int, int], int, bool, bool
    ]:
        return (
            self._grid,
            self._cluster,
            self._block,
            self._shmem_size,
            self._is_cooperative,
            self._pss,
        )

    def _prepare(self) -> tuple[Any, int, bool]:
        """Build (once) and return ``(cc_launch_cfg cdata, its address, special)``.

        ``special`` is True when launches need the cluster/cooperative checks.
        For other configurations the address is also stored in ``_fast``,
        which is what the launch fast path reads (None sends a launch through
        this method).
        """
        native = self._native
        if native is not None:
            return native
        grid_blocks = _native_dims(self._grid, self._cluster)
        cfg = ffi.new("cc_launch_cfg *")
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid_blocks
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = self._block
        cfg.sharedMemBytes = self._shmem_size
        n = 0
        if self._cluster is not None:
            attr = cfg.attrs[n]
            attr.id = lib.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            dim = attr.value.clusterDim
            dim.x, dim.y, dim.z = self._cluster
            n += 1
        if self._is_cooperative:
            attr = cfg.attrs[n]
            attr.id = lib.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
            attr.value.cooperative = 1
            n += 1
        if self._pss:
            attr = cfg.attrs[n]
            attr.id = lib.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            n += 1
        cfg.numAttrs = n
        special = self._cluster is not None or self._is_cooperative
        native = (cfg, as_int_handle(cfg), special)
        self._native = native
        self._fast = None if special else native[1]
        return native

    def _to_cu_launch_config(self, c_stream: Any) -> tuple[Any, Any]:
        """Return a ``CUlaunchConfig *`` for this config (for occupancy queries).

        The returned object keeps the prepared structure it points into alive.
        """
        cfg = self._prepare()[0]
        out = ffi.new("CUlaunchConfig *")
        out.gridDimX, out.gridDimY, out.gridDimZ = cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ
        out.blockDimX, out.blockDimY, out.blockDimZ = cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ
        out.sharedMemBytes = cfg.sharedMemBytes
        out.hStream = c_stream
        out.attrs = cfg.attrs
        out.numAttrs = cfg.numAttrs
        return out, cfg

    def _invalidate(self) -> None:
        """Forget the prepared structure after an attribute changed.

        The old structure is kept alive: a launch in another thread may have
        read its address just before.
        """
        if self._native is not None:
            if self._retired is None:
                self._retired = []
            self._retired.append(self._native[0])
        self._fast = None
        self._native = None
        self._checked = None

    @property
    def grid(self) -> tuple[int, int, int]:
        """tuple of int: Blocks (or clusters, when :attr:`cluster` is set) along x, y, z."""
        return self._grid

    @grid.setter
    def grid(self, value: int | tuple[int, ...]) -> None:
        value = _cast_to_3_tuple("LaunchConfig.grid", value)
        _native_dims(value, self._cluster)
        self._grid = value
        self._invalidate()

    @property
    def cluster(self) -> tuple[int, int, int] | None:
        """tuple of int or None: Blocks per thread block cluster along x, y, z."""
        return self._cluster

    @cluster.setter
    def cluster(self, value: int | tuple[int, ...] | None) -> None:
        value = None if value is None else _cast_to_3_tuple("LaunchConfig.cluster", value)
        _native_dims(self._grid, value)
        self._cluster = value
        self._invalidate()

    @property
    def block(self) -> tuple[int, int, int]:
        """tuple of int: Threads per block along x, y, z."""
        return self._block

    @block.setter
    def block(self, value: int | tuple[int, ...]) -> None:
        self._block = _cast_to_3_tuple("LaunchConfig.block", value)
        self._invalidate()

    @property
    def shmem_size(self) -> int:
        """int: Dynamic shared memory per block, in bytes."""
        return self._shmem_size

    @shmem_size.setter
    def shmem_size(self, value: int | None) -> None:
        self._shmem_size = _shmem("LaunchConfig.shmem_size", value)
        self._invalidate()

    @property
    def is_cooperative(self) -> bool:
        """bool: Whether launches are cooperative (grid-wide synchronization)."""
        return self._is_cooperative

    @is_cooperative.setter
    def is_cooperative(self, value: bool) -> None:
        self._is_cooperative = bool(value)
        self._invalidate()

    @property
    def programmatic_stream_serialization(self) -> bool:
        """bool: Whether programmatic dependent launch (PDL) is allowed."""
        return self._pss

    @programmatic_stream_serialization.setter
    def programmatic_stream_serialization(self, value: bool) -> None:
        self._pss = bool(value)
        self._invalidate()


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _coerce_config(config: Any) -> LaunchConfig:
    """Return ``config`` as a LaunchConfig (a dict becomes ``LaunchConfig(**config)``)."""
    if isinstance(config, LaunchConfig):
        return config
    if isinstance(config, dict):
        unknown = sorted(set(config) - set(_ATTRS))
        if unknown:
            raise TypeError(
                f"launch config: unknown option(s) {', '.join(map(str, unknown))}; "
                f"accepted: {', '.join(_ATTRS)}"
            )
        return LaunchConfig(**config)
    raise TypeError(f"config must be a LaunchConfig or a dict, not {type(config).__name__}")


def _cast_to_3_tuple(what: str, value: object) -> tuple[int, int, int]:
    """Return ``value`` (an int or a sequence of 1-3 ints) as a 3-tuple of positive ints."""
    index = index_or_none(value)
    dims: tuple[int | None, ...]
    if index is not None:
        dims = (index,)
    elif isinstance(value, (tuple, list)):
        if not 1 <= len(value) <= 3:
            raise _LaunchConfigTypeError(
                f"{what} must be an int, or a tuple with 1 to 3 ints (got a "
                f"{type(value).__name__} of length {len(value)})"
            )
        dims = tuple(index_or_none(v) for v in value)
        for v, d in zip(value, dims):
            if d is None:
                raise _LaunchConfigTypeError(
                    f"{what} must be an int, or a tuple with 1 to 3 ints (got an element "
                    f"{_short_repr(v)} of type {type(v).__name__})"
                )
    else:
        raise _LaunchConfigTypeError(
            f"{what} must be an int, or a tuple with 1 to 3 ints (got {_type_name(value)})"
        )
    for v in dims:
        if v < 1:  # type: ignore[operator]  # None elements raised above
            raise ValueError(f"{what} value must be >= 1 (got {v})")
        if v > _UINT_MAX:  # type: ignore[operator]  # None elements raised above
            raise ValueError(f"{what} value must fit in 32 bits (got {v})")
    return dims + (1,) * (3 - len(dims))  # type: ignore[return-value]  # ints, padded to 3


def _shmem(what: str, value: object) -> int:
    if value is None:
        return 0
    index = index_or_none(value)
    if index is None:
        raise _LaunchConfigTypeError(f"{what} must be an int or None (got {_type_name(value)})")
    value = index
    if value < 0:
        raise ValueError(f"{what} must be >= 0 (got {value})")
    if value > _UINT_MAX:
        raise ValueError(f"{what} must fit in 32 bits (got {value})")
    return value


def _type_name(value: object) -> str:
    """``type(value).__name__``, or ``"the class X"`` for a class passed as a value."""
    if isinstance(value, type):
        return f"the class {value.__name__}"
    return type(value).__name__


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _native_dims(
    grid: tuple[int, int, int], cluster: tuple[int, int, int] | None
) -> tuple[int, ...]:
    """Return the grid in blocks (``grid * cluster``), checking it fits in 32 bits."""
    if cluster is None:
        return grid
    dims = tuple(g * c for g, c in zip(grid, cluster))
    for v in dims:
        if v > _UINT_MAX:
            raise ValueError(
                f"LaunchConfig: grid {grid} times cluster {cluster} is {dims} blocks, "
                "which does not fit in 32 bits"
            )
    return dims


def _check_device_support(config: LaunchConfig, device_id: int) -> None:
    """Raise CUDAError if ``device_id`` cannot launch ``config`` (cached per device)."""
    checked = config._checked
    if checked is not None and device_id in checked:
        return
    dev = _slots.device_class()(device_id)
    if config._cluster is not None:
        cc = tuple(dev.compute_capability)
        if cc < (9, 0):
            raise CUDAError(
                "thread block clusters are not supported on devices with compute "
                f"capability < 9.0 (device {device_id} has {cc[0]}.{cc[1]})"
            )
    if config._is_cooperative and not dev.properties.cooperative_launch:
        raise CUDAError(f"cooperative kernels are not supported on device {device_id}")
    if config._checked is None:
        config._checked = set()
    config._checked.add(device_id)
