# SPDX-License-Identifier: Apache-2.0
"""Surface objects: :class:`SurfaceObject`."""

from __future__ import annotations

from typing import Any

from cuda_core._cuda_ffi import lib
from cuda_core._lifetime import open_class
from cuda_core.texture._base import BoundObject
from cuda_core.texture._handle import bound_close, bound_finalizer, creation_failed
from cuda_core.texture._resource import ResourceDescriptor

__all__ = ["SurfaceObject"]

_surf_new = lib.cc_surf_object_new
_surf_release = lib.cc_surf_object_release
_status = lib.cc_status


class SurfaceObject(BoundObject):
    """A bindless surface: typed loads and stores to a CUDA array from kernels.

    No sampling: kernels address it with integer coordinates (the x
    coordinate in *bytes*, e.g. ``surf2Dwrite(v, s, x * sizeof(v), y)``).
    Pass it to :func:`~cuda_core.launch` (or its :attr:`handle`) for a
    ``cudaSurfaceObject_t`` parameter.  Created by
    :meth:`Device.create_surface_object <cuda_core.Device.create_surface_object>`
    over an array allocated with ``is_surface_load_store=True``, which it
    keeps alive until it is closed.

    Raises
    ------
    RuntimeError
        If constructed directly instead of by ``Device.create_surface_object``.
    """

    _factory = "Device.create_surface_object"
    __slots__ = (
        "_handle",
        "_pending",
        "_claim",
        "_resource",
        "_device_id",
        "_buffer",
        "__weakref__",
    )
    _buffer: object


def _release_surface(value: int, c_claims: Any) -> int:
    # The safety net's release, reading _surf_release when it runs.
    result: int = _surf_release(value, c_claims)
    return result


#: The class of an open SurfaceObject: SurfaceObject with the safety net.
_OpenSurface = open_class(
    SurfaceObject,
    bound_finalizer("cuSurfObjectDestroy", _release_surface),
    close=bound_close(SurfaceObject, _surf_release, "cuSurfObjectDestroy"),
)


def _create_surface_object(self: Any, *, resource: object) -> SurfaceObject:
    """``Device.create_surface_object`` itself, once the texture package is loaded.

    The surface twin of :func:`~cuda_core.texture._texture._create_texture_object`
    (``self`` is the Device; the same context rule): the resource must be an
    array allocated with ``is_surface_load_store=True``.
    """
    if not self._has_inited:
        self._check_initialized()
    if not isinstance(resource, ResourceDescriptor):
        raise TypeError(f"resource must be a ResourceDescriptor, got {type(resource).__name__}")
    array: Any = resource._array
    if array is None or resource._kind != "array":
        raise ValueError(
            "SurfaceObject requires an array-backed ResourceDescriptor, got "
            f"kind={resource._kind!r}"
        )
    if not array._surface_load_store:
        raise ValueError(
            "OpaqueArray must be created with is_surface_load_store=True to be bound as a "
            "SurfaceObject"
        )
    if not array._handle:
        array._require_open()
    claim = array._shared  # taken with the object
    handle = _surf_new(self._c_ctx, resource._c_res or resource._fill_array(), claim._c_claims)
    if not handle:
        creation_failed(claim, _status(), "cuSurfObjectCreate")
    surf = _OpenSurface()
    surf._handle = handle
    surf._pending = [handle]
    surf._claim = claim
    surf._resource = resource
    surf._buffer = None
    surf._device_id = self._device_id
    return surf
