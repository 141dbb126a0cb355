# SPDX-License-Identifier: Apache-2.0
"""Mipmapped CUDA arrays: :class:`MipmappedArray` and :class:`MipmappedArrayOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cuda_core._coerce import as_int_handle, check_or_create_options, index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.texture._array import _array_from_shared, _descriptor
from cuda_core.texture._base import ArrayBase, check_array_options
from cuda_core.texture._handle import Lifetime, SharedHandle

if TYPE_CHECKING:
    from cuda_core.texture._array import OpaqueArray

__all__ = ["MipmappedArray", "MipmappedArrayOptions"]


@dataclass
class MipmappedArrayOptions:
    """Options for :meth:`Device.create_mipmapped_array <cuda_core.Device.create_mipmapped_array>`.

    Attributes
    ----------
    shape : tuple of int
        The base level's extents in elements: ``(width,)``, ``(width,
        height)`` or ``(width, height, depth)`` (layered: ``(width, layers)``
        or ``(width, height, layers)``).
    format : ArrayFormatType, str or numpy.dtype
        The element format (see :class:`~cuda_core.texture.OpaqueArrayOptions`).
    num_channels : int
        Channels per element: 1, 2 or 4.
    num_levels : int
        Levels to allocate, >= 1.  Each level halves every extent but the
        layer count (never below 1); the driver rejects more levels than
        ``1 + floor(log2(largest extent))``.
    is_surface_load_store : bool
        Allocate with ``CUDA_ARRAY3D_SURFACE_LDST``, so that each level (from
        :meth:`MipmappedArray.get_level`) can back a surface.  Default False.
    is_layered : bool
        Allocate a layered mipmapped array (an addition of cuda_core).
        Default False.
    """

    shape: tuple[int, ...]
    format: Any
    num_channels: int
    num_levels: int
    is_surface_load_store: bool = False
    is_layered: bool = False

    def __post_init__(self) -> None:
        check_array_options(self)
        levels = index_or_none(self.num_levels)
        if levels is None:
            raise TypeError(f"num_levels must be an int, got {type(self.num_levels).__name__}")
        if levels < 1:
            raise ValueError(f"num_levels must be >= 1, got {levels}")
        self.num_levels = levels


class MipmappedArray(ArrayBase):
    """A mipmapped CUDA array: a chain of levels, each half the size of the last.

    Sampled (with level selection and filtering between levels) through a
    :class:`~cuda_core.texture.TextureObject` over
    :meth:`ResourceDescriptor.from_mipmapped_array
    <cuda_core.texture.ResourceDescriptor.from_mipmapped_array>`; each level
    is an :class:`~cuda_core.texture.OpaqueArray` (:meth:`get_level`) for
    copies and surfaces.  Created by :meth:`Device.create_mipmapped_array
    <cuda_core.Device.create_mipmapped_array>`.

    The levels, and textures over the mipmap, keep its storage alive: it is
    destroyed when this wrapper is closed *and* none of them is in use.

    Raises
    ------
    RuntimeError
        If constructed directly instead of by ``Device.create_mipmapped_array``.
    """

    _factory = "Device.create_mipmapped_array"
    __slots__ = ("_num_levels",)
    _num_levels: int

    def __repr__(self) -> str:
        return (
            f"MipmappedArray(shape={self._shape}, format={self._format.name}, "
            f"num_channels={self._num_channels}, num_levels={self._num_levels})"
        )

    def close(self) -> None:
        """Drop this wrapper's claim on the mipmapped array (idempotent).

        Raises
        ------
        CUDAError
            If destroying the mipmapped array (``cuMipmappedArrayDestroy``)
            failed.
        """
        self._handle = 0
        self._life.close()

    def get_level(self, level: int) -> OpaqueArray:
        """Return mip level ``level`` as an :class:`~cuda_core.texture.OpaqueArray`.

        The level keeps this mipmapped array's storage alive until it is
        closed too; closing it destroys nothing of its own.

        Parameters
        ----------
        level : int
            In ``[0, num_levels)``.

        Raises
        ------
        ValueError
            For a level out of range.
        RuntimeError
            If this mipmapped array is closed.
        """
        lvl = index_or_none(level)
        if lvl is None:
            raise TypeError(f"level must be an int, got {type(level).__name__}")
        if lvl < 0:
            raise ValueError(f"level must be >= 0, got {lvl}")
        if lvl >= self._num_levels:
            raise ValueError(f"level ({lvl}) must be < num_levels ({self._num_levels})")
        self._require_open()
        out = ffi.new("CUarray *")
        c_mip = ffi.cast("CUmipmappedArray", self._handle)
        check(lib.cuMipmappedArrayGetLevel(out, c_mip, lvl), "cuMipmappedArrayGetLevel")
        handle = as_int_handle(out[0])
        shared = SharedHandle(handle, None, "mipmap level", parent=self._shared)
        return _array_from_shared(shared, self._device_id)

    @property
    def num_levels(self) -> int:
        """int: The number of mip levels."""
        return self._num_levels


def _create_mipmapped_array(options: Any, device_id: int) -> MipmappedArray:
    """Allocate a :class:`MipmappedArray` in the current context (device ``device_id``)."""
    opts: MipmappedArrayOptions = check_or_create_options(
        MipmappedArrayOptions, options, "Mipmapped array options"
    )
    desc = _descriptor(opts)
    out = ffi.new("CUmipmappedArray *")
    check(lib.cuMipmappedArrayCreate(out, desc, opts.num_levels), "cuMipmappedArrayCreate")
    self = object.__new__(MipmappedArray)
    handle = as_int_handle(out[0])
    self._shared = SharedHandle(handle, _destroy_mipmap, "mipmapped array")
    self._handle = self._shared.value
    self._shape = opts.shape
    self._format = opts.format
    self._num_channels = opts.num_channels
    self._num_levels = opts.num_levels
    self._surface_load_store = opts.is_surface_load_store
    self._layered = opts.is_layered
    self._device_id = device_id
    self._life = Lifetime("cuMipmappedArrayDestroy", shared=self._shared)
    return self


def _destroy_mipmap(value: int) -> int:
    status: int = lib.cuMipmappedArrayDestroy(ffi.cast("CUmipmappedArray", value))
    return status
