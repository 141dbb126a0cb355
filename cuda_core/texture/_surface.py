# SPDX-License-Identifier: Apache-2.0
"""Surface objects: :class:`SurfaceObject`."""

from __future__ import annotations

from typing import Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.texture._base import BoundObject
from cuda_core.texture._handle import Lifetime
from cuda_core.texture._resource import ResourceDescriptor
from cuda_core.texture._texture import KERNEL_ARG_MARKER, _closed_argument

__all__ = ["SurfaceObject"]


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
    __slots__ = ("_handle", "_life", "_resource", "_device_id", "_buffer", "__weakref__")
    _buffer: object

    def close(self) -> None:
        """Destroy the surface object and drop its claim on the array (idempotent).

        Raises
        ------
        CUDAError
            If ``cuSurfObjectDestroy`` (or releasing the array) failed.
        """
        self._handle = 0
        self._resource = None
        self._life.close()

    @property
    def _karg(self) -> int:
        """The handle as a kernel argument; RuntimeError if closed."""
        return self._handle or _closed_argument(self)


setattr(SurfaceObject, KERNEL_ARG_MARKER, "u64")


def _create_surface_object(resource: object, device_id: int, c_ctx: Any = None) -> SurfaceObject:
    """Create a :class:`SurfaceObject` of device ``device_id``.

    In context ``c_ctx`` (made current for the driver call if it is not), or
    in the current context when ``c_ctx`` is None.
    """
    if not isinstance(resource, ResourceDescriptor):
        raise TypeError(f"resource must be a ResourceDescriptor, got {type(resource).__name__}")
    if resource.kind != "array":
        raise ValueError(
            f"SurfaceObject requires an array-backed ResourceDescriptor, got kind={resource.kind!r}"
        )
    source: Any = resource.source
    if not source.is_surface_load_store:
        raise ValueError(
            "OpaqueArray must be created with is_surface_load_store=True to be bound as a "
            "SurfaceObject"
        )
    res = ffi.new("CUDA_RESOURCE_DESC *")
    claim, _ = resource._fill(res)
    out = ffi.new("CUsurfObject *")
    status = lib.cc_surf_object_create(c_ctx, out, res)
    if status:
        claim.release()
        check(status, "cuSurfObjectCreate")
    self = object.__new__(SurfaceObject)
    self._handle = int(out[0])
    self._resource = resource
    self._buffer = None
    self._device_id = device_id
    self._life = Lifetime("cuSurfObjectDestroy", lib.cuSurfObjectDestroy, self._handle, claim)
    return self
