# SPDX-License-Identifier: Apache-2.0
"""What the texture package's wrappers share.

:class:`DriverObject` is the face of every wrapper the device creates
(arrays, mipmaps, textures, surfaces): no direct construction, ``with``,
``is_closed`` and ``device``.  :class:`ArrayBase` adds what an array and a
mipmapped array both describe; :class:`BoundObject` what a texture and a
surface both hold (the :class:`~cuda_core.texture.ResourceDescriptor` they
read).  :func:`check_array_options` validates the fields their options share.
"""

from __future__ import annotations

from cuda_core._utils import Closeable
from cuda_core.texture._formats import check_format_channels, check_shape
from cuda_core.texture._handle import device_of

__all__ = []


class DriverObject(Closeable):
    """A wrapper created by a :class:`~cuda_core.Device` factory.

    Subclasses name the factory in ``_factory`` and keep their handle in
    ``_handle`` (0 once closed) and their device ordinal in ``_device_id``.
    """

    __slots__ = ()
    _factory = ""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            f"{type(self).__name__} cannot be instantiated directly. Use {self._factory}()."
        )

    @property
    def handle(self):
        """int: The driver handle (``CUarray``, ``CUtexObject``, ...; 0 once closed)."""
        return self._handle

    @property
    def is_closed(self):
        """bool: Whether :meth:`close` has been called."""
        return not self._handle

    @property
    def device(self):
        """Device: The device this object was created on."""
        return device_of(self._device_id)

    def _require_open(self):
        if not self._handle:
            raise RuntimeError(f"{type(self).__name__} is closed; it cannot be used after close()")


class ElementFormat:
    """The ``format`` and ``num_channels`` of an array or a ResourceDescriptor."""

    __slots__ = ()

    @property
    def format(self):
        """ArrayFormatType or None: The element format (None on a descriptor of an array)."""
        return self._format

    @property
    def num_channels(self):
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

    def _claim(self):
        """Return the SharedHandle with one more claim (for textures, surfaces)."""
        self._require_open()
        return self._shared.retain()

    @property
    def shape(self):
        """tuple of int: The extents in elements (of the base level for a mipmap; layers last)."""
        return self._shape

    @property
    def is_surface_load_store(self):
        """bool: Whether the storage can back a :class:`~cuda_core.texture.SurfaceObject`."""
        return self._surface_load_store

    @property
    def is_layered(self):
        """bool: Whether the storage is layered (the last extent counts layers)."""
        return self._layered


class BoundObject(DriverObject):
    """A texture or surface object: a handle over a ResourceDescriptor."""

    __slots__ = ()

    def __repr__(self):
        return f"{type(self).__name__}(handle=0x{self._handle:x})"

    @property
    def resource(self):
        """ResourceDescriptor: The memory this object reads (None once closed)."""
        return self._resource


def check_array_options(opts):
    """Validate and normalize the fields array and mipmapped-array options share."""
    opts.format = check_format_channels(opts.format, opts.num_channels)
    opts.is_surface_load_store = bool(opts.is_surface_load_store)
    opts.is_layered = bool(opts.is_layered)
    opts.shape = check_shape(opts.shape, low=2 if opts.is_layered else 1)
