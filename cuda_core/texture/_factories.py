# SPDX-License-Identifier: Apache-2.0
"""The texture factories of :class:`~cuda_core.Device` (a base class it inherits).

``Device`` sits above this package, which never imports it: ``Device``
derives from :class:`TextureFactories`, whose ``__init_subclass__`` records
the class for the ``device`` properties of arrays, textures and surfaces.
"""

from __future__ import annotations

from cuda_core._context import _pop, _push_if_needed
from cuda_core.texture._array import _create_opaque_array
from cuda_core.texture._handle import DEVICE_TYPE
from cuda_core.texture._mipmapped_array import _create_mipmapped_array
from cuda_core.texture._surface import _create_surface_object
from cuda_core.texture._texture import _create_texture_object

__all__ = []


class TextureFactories:
    """``Device.create_opaque_array`` and friends."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not DEVICE_TYPE:
            DEVICE_TYPE.append(cls)

    def create_opaque_array(self, options):
        """Allocate an :class:`~cuda_core.texture.OpaqueArray` (a CUDA array) on this device.

        Parameters
        ----------
        options : OpaqueArrayOptions or dict
            Shape, format, channels and flags.

        Returns
        -------
        OpaqueArray

        Raises
        ------
        CUDAError
            If :meth:`set_current` has not been called on this thread, or the
            driver rejects the allocation (e.g. an extent above the device's
            limits).
        """
        return _in_context(self, _create_opaque_array, options)

    def create_mipmapped_array(self, options):
        """Allocate a :class:`~cuda_core.texture.MipmappedArray` on this device.

        Parameters
        ----------
        options : MipmappedArrayOptions or dict
            Base shape, format, channels, level count and flags.

        Returns
        -------
        MipmappedArray

        Raises
        ------
        CUDAError
            If the device is not initialized or the driver rejects the
            allocation (e.g. more levels than the largest extent allows).
        """
        return _in_context(self, _create_mipmapped_array, options)

    def create_texture_object(self, *, resource, options=None):
        """Create a :class:`~cuda_core.texture.TextureObject` reading ``resource``.

        Parameters
        ----------
        resource : ResourceDescriptor
            The array, mipmapped array or linear/pitched memory to read.
        options : TextureObjectOptions or dict, optional
            Sampling state (default: point filtering, clamped, element type,
            unnormalized coordinates).

        Returns
        -------
        TextureObject

        Raises
        ------
        TypeError
            If ``resource`` is not a ResourceDescriptor.
        ValueError
            For bad sampling options (address modes, anisotropy, border colour).
        RuntimeError
            If the resource's array or Buffer is closed.
        CUDAError
            If the device is not initialized or the driver rejects the
            combination (e.g. linear filtering of integers read as such).
        """
        return _in_context(self, _create_texture_object, resource, options)

    def create_surface_object(self, *, resource):
        """Create a :class:`~cuda_core.texture.SurfaceObject` over ``resource``.

        Parameters
        ----------
        resource : ResourceDescriptor
            An :class:`~cuda_core.texture.OpaqueArray` allocated with
            ``is_surface_load_store=True``.

        Returns
        -------
        SurfaceObject

        Raises
        ------
        TypeError
            If ``resource`` is not a ResourceDescriptor.
        ValueError
            If it does not describe an array allocated for load/store.
        RuntimeError
            If the array is closed.
        """
        return _in_context(self, _create_surface_object, resource)


def _in_context(device, factory, *args):
    """Run ``factory(*args, device_id)`` with ``device``'s context current."""
    device._check_initialized()
    pushed = _push_if_needed(device._c_ctx)
    try:
        return factory(*args, device._device_id)
    finally:
        if pushed:
            _pop()
