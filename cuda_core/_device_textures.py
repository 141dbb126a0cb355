# SPDX-License-Identifier: Apache-2.0
"""The texture factories of :class:`~cuda_core.Device` (a base class it inherits).

They import :mod:`cuda_core.texture` at their first call, so that importing
cuda_core does not.  The texture package reaches ``Device`` (for the
``device`` properties of arrays, textures and surfaces) through
``cuda_core._slots.Device``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

from cuda_core._context import _pop, _push_if_needed

if TYPE_CHECKING:
    from cuda_core.texture import (
        MipmappedArray,
        OpaqueArray,
        ResourceDescriptor,
        SurfaceObject,
        TextureObject,
    )

__all__ = []

_R = TypeVar("_R")


class TextureFactories:
    """``Device.create_opaque_array`` and friends."""

    __slots__ = ()

    def create_opaque_array(self, options: Any) -> OpaqueArray:
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
        from cuda_core.texture._array import _create_opaque_array

        return _in_context(self, _create_opaque_array, options)

    def create_mipmapped_array(self, options: Any) -> MipmappedArray:
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
        from cuda_core.texture._mipmapped_array import _create_mipmapped_array

        return _in_context(self, _create_mipmapped_array, options)

    def create_texture_object(
        self, *, resource: ResourceDescriptor, options: Any = None
    ) -> TextureObject:
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
        return _load_factories().create_texture_object(self, resource=resource, options=options)

    def create_surface_object(self, *, resource: ResourceDescriptor) -> SurfaceObject:
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
        return _load_factories().create_surface_object(self, resource=resource)


def _load_factories() -> type[TextureFactories]:
    """Put the texture package's object factories in place of the two placeholders.

    ``create_texture_object`` and ``create_surface_object`` above run only
    until the first call (the texture package loads then, not with
    cuda_core): each is replaced by the function of the same signature in
    ``texture/_texture.py`` / ``texture/_surface.py``, so that creating
    these objects -- a hot path -- is one Python frame.  The replacements
    keep the placeholders' names, docstrings and annotations.
    """
    from cuda_core.texture import _surface, _texture

    for name, impl in (
        ("create_texture_object", _texture._create_texture_object),
        ("create_surface_object", _surface._create_surface_object),
    ):
        placeholder = TextureFactories.__dict__[name]
        if placeholder is not impl:
            impl.__name__ = placeholder.__name__
            impl.__qualname__ = placeholder.__qualname__
            impl.__doc__ = placeholder.__doc__
            impl.__annotations__ = dict(placeholder.__annotations__)
            setattr(TextureFactories, name, impl)
    return TextureFactories


def _in_context(device: Any, factory: Callable[..., _R], *args: Any) -> _R:
    """Run ``factory(*args, device_id)`` with ``device``'s context current."""
    device._check_initialized()
    pushed = _push_if_needed(device._c_ctx)
    try:
        return factory(*args, device._device_id)
    finally:
        if pushed:
            _pop()
