# SPDX-License-Identifier: Apache-2.0
"""What the texture package's wrappers share.

:class:`DriverObject` is the face of every wrapper the device creates
(arrays, mipmaps, textures, surfaces): no direct construction, ``with``,
``is_closed`` and ``device``.  :class:`ArrayBase` adds what an array and a
mipmapped array both describe; :class:`BoundObject` what a texture and a
surface both hold (the :class:`~cuda_core.texture.ResourceDescriptor` they
read) and how ``launch`` passes them (their 64-bit ``_karg``).
:func:`check_array_options` validates the fields their options share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from cuda_core._lifetime import Closeable
from cuda_core.texture._formats import check_format_channels, check_shape
from cuda_core.texture._handle import device_of

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core.texture._handle import Claim, Lifetime, SharedHandle
    from cuda_core.texture._resource import ResourceDescriptor
    from cuda_core.typing import ArrayFormatType

__all__ = []


class DriverObject(Closeable):
    """A wrapper created by a :class:`~cuda_core.Device` factory.

    Subclasses name the factory in ``_factory`` and keep their handle in
    ``_handle`` (0 once closed) and their device ordinal in ``_device_id``.
    """

    __slots__ = ()
    _factory = ""
    _handle: int
    _device_id: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            f"{type(self).__name__} cannot be instantiated directly. Use {self._factory}()."
        )

    @property
    def handle(self) -> int:
        """int: The driver handle (``CUarray``, ``CUtexObject``, ...; 0 once closed)."""
        return self._handle

    @property
    def is_closed(self) -> bool:
        """bool: Whether :meth:`close` has been called."""
        return not self._handle

    @property
    def device(self) -> Device:
        """Device: The device this object was created on."""
        return device_of(self._device_id)

    def _require_open(self) -> None:
        if not self._handle:
            raise RuntimeError(f"{type(self).__name__} is closed; it cannot be used after close()")


class ElementFormat:
    """The ``format`` and ``num_channels`` of an array or a ResourceDescriptor."""

    __slots__ = ()
    _format: ArrayFormatType | None
    _num_channels: int | None

    @property
    def format(self) -> ArrayFormatType | None:
        """ArrayFormatType or None: The element format (None on a descriptor of an array)."""
        return self._format

    @property
    def num_channels(self) -> int | None:
        """int or None: Channels per element, 1, 2 or 4 (None on a descriptor of an array)."""
        return self._num_channels


class ArrayBase(ElementFormat, DriverObject):
    """The element layout an :class:`OpaqueArray` and a :class:`MipmappedArray` share."""

    __slots__ = (
        "_handle",
        "_shared",
        "_life",
        "_shape",
        "_format",
        "_num_channels",
        "_surface_load_store",
        "_layered",
        "_device_id",
        "__weakref__",
    )
    _format: ArrayFormatType
    _num_channels: int
    _shared: SharedHandle
    _life: Lifetime
    _shape: tuple[int, ...]
    _surface_load_store: bool
    _layered: bool

    def _claim(self) -> SharedHandle:
        """Return the SharedHandle with one more claim (for textures, surfaces)."""
        self._require_open()
        return self._shared.retain()

    @property
    def shape(self) -> tuple[int, ...]:
        """tuple of int: The extents in elements (of the base level for a mipmap; layers last)."""
        return self._shape

    @property
    def is_surface_load_store(self) -> bool:
        """bool: Whether the storage can back a :class:`~cuda_core.texture.SurfaceObject`."""
        return self._surface_load_store

    @property
    def is_layered(self) -> bool:
        """bool: Whether the storage is layered (the last extent counts layers)."""
        return self._layered


class BoundObject(DriverObject):
    """A texture or surface object: a handle over a ResourceDescriptor.

    Made as an instance of its class's open twin
    (:func:`~cuda_core._lifetime.open_class`), whose ``close()``
    (:func:`~cuda_core.texture._handle.bound_close`) releases ``_pending``
    (``[handle]``, emptied by the release, which then drops the claim
    ``_claim``) and whose ``__del__`` is the safety net
    (:func:`~cuda_core.texture._handle.bound_finalizer`).
    """

    __slots__ = ()
    _resource: ResourceDescriptor | None
    _pending: list[int]
    _claim: Claim | None  # None once closed

    def __repr__(self) -> str:
        return f"{type(self).__name__}(handle=0x{self._handle:x})"

    def close(self) -> None:
        """Destroy the object and drop its claim on its memory (idempotent).

        Raises
        ------
        CUDAError
            If ``cuTexObjectDestroy`` or ``cuSurfObjectDestroy`` (or releasing
            the array) failed.
        """
        # An open object is an instance of the open twin, whose close()
        # (bound_close) does the work; a closed one has nothing to release.

    @property
    def resource(self) -> ResourceDescriptor | None:
        """ResourceDescriptor: The memory this object reads (None once closed)."""
        return self._resource

    @property
    def _karg(self) -> int:
        """The handle as a kernel argument; RuntimeError if closed."""
        return self._handle or _closed_argument(self)


#: Class attribute that ``launch`` reads: textures and surfaces are passed
#: as their 64-bit ``_karg`` (see ``cuda_core._launcher``).  The name of
#: ``cuda_core._arg_types.KERNEL_ARG_MARKER``, written out: this package may
#: not import the launch layer (tests/launch/test_tensor_map.py checks both).
KERNEL_ARG_MARKER = "_cuda_core_kernel_arg"
setattr(BoundObject, KERNEL_ARG_MARKER, "u64")


def check_array_options(opts: Any) -> None:
    """Validate and normalize the fields array and mipmapped-array options share."""
    opts.format = check_format_channels(opts.format, opts.num_channels)
    opts.is_surface_load_store = bool(opts.is_surface_load_store)
    opts.is_layered = bool(opts.is_layered)
    opts.shape = check_shape(opts.shape, low=2 if opts.is_layered else 1)


def _closed_argument(obj: BoundObject) -> NoReturn:
    name = type(obj).__name__
    if obj._handle:
        raise RuntimeError(f"{name} argument: its Buffer is closed")
    raise RuntimeError(f"{name} argument is closed; it cannot be used after close()")
