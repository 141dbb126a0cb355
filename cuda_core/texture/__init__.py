# SPDX-License-Identifier: Apache-2.0
"""Textures, surfaces and CUDA arrays (``cuda.core.texture``).

CUDA arrays (:class:`OpaqueArray`, :class:`MipmappedArray`) are GPU memory
laid out by the driver for 2-D/3-D locality; kernels reach them through
bindless :class:`TextureObject` handles (sampled, filtered reads) and
:class:`SurfaceObject` handles (typed loads and stores).  A
:class:`TextureObject` can also read linear or pitched device memory
(:meth:`ResourceDescriptor.from_linear`, :meth:`ResourceDescriptor.from_pitch2d`).

Arrays, textures and surfaces are created by :class:`~cuda_core.Device`
(``create_opaque_array``, ``create_mipmapped_array``,
``create_texture_object``, ``create_surface_object``); the enumerations
(:class:`~cuda_core.typing.ArrayFormatType`,
:class:`~cuda_core.typing.AddressModeType`,
:class:`~cuda_core.typing.FilterModeType`,
:class:`~cuda_core.typing.ReadModeType`) live in :mod:`cuda_core.typing`.
"""

from cuda_core.texture._array import OpaqueArray, OpaqueArrayOptions
from cuda_core.texture._mipmapped_array import MipmappedArray, MipmappedArrayOptions
from cuda_core.texture._resource import ResourceDescriptor
from cuda_core.texture._surface import SurfaceObject
from cuda_core.texture._texture import TextureObject, TextureObjectOptions

__all__ = [
    "MipmappedArray",
    "MipmappedArrayOptions",
    "OpaqueArray",
    "OpaqueArrayOptions",
    "ResourceDescriptor",
    "SurfaceObject",
    "TextureObject",
    "TextureObjectOptions",
]

# Read-only properties fail as on cuda.core's classes (see cuda_core._read_only).
from cuda_core._read_only import seal_read_only as _seal_read_only  # noqa: E402

_seal_read_only()
