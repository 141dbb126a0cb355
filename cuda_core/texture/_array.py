# SPDX-License-Identifier: Apache-2.0
"""CUDA arrays: :class:`OpaqueArray` and :class:`OpaqueArrayOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, TypeVar

from cuda_core._coerce import as_int_handle, check_or_create_options
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core.texture._base import ArrayBase, check_array_options
from cuda_core.texture._copy import copy_array
from cuda_core.texture._formats import (
    CU_TO_FORMAT,
    FORMAT_TO_CU,
    copy_extent,
    descriptor_extent,
    element_bytes,
    shape_from_descriptor,
)
from cuda_core.texture._handle import Lifetime, SharedHandle
from cuda_core.typing import ArrayFormatType

__all__ = ["OpaqueArray", "OpaqueArrayOptions"]

_T = TypeVar("_T")


@dataclass
class OpaqueArrayOptions:
    """Options for :meth:`Device.create_opaque_array <cuda_core.Device.create_opaque_array>`.

    Attributes
    ----------
    shape : tuple of int
        ``(width,)``, ``(width, height)`` or ``(width, height, depth)`` in
        elements; for a layered array ``(width, layers)`` or ``(width,
        height, layers)``.
    format : ArrayFormatType, str or numpy.dtype
        The element format: an :class:`~cuda_core.typing.ArrayFormatType`,
        its value (``"float32"``) or a NumPy dtype of one of the eight formats.
    num_channels : int
        Channels per element: 1, 2 or 4.
    is_surface_load_store : bool
        Allocate with ``CUDA_ARRAY3D_SURFACE_LDST``, so that the array can
        back a :class:`~cuda_core.texture.SurfaceObject`.  Default False.
    is_layered : bool
        Allocate a layered array (``CUDA_ARRAY3D_LAYERED``): the last extent
        of ``shape`` is the number of layers, each a 1-D or 2-D array, read
        with ``tex1DLayered``/``tex2DLayered`` (and the surface equivalents).
        Default False.  An addition of cuda_core: NVIDIA's ``cuda.core``
        has no layered arrays.

    Raises
    ------
    ValueError
        For an unknown format, a channel count other than 1, 2 or 4, a rank
        outside 1..3 (2..3 when layered) or an extent below 1.
    TypeError
        For a shape that is not a sequence of ints.
    """

    shape: tuple[int, ...]
    format: Any
    num_channels: int
    is_surface_load_store: bool = False
    is_layered: bool = False

    def __post_init__(self) -> None:
        check_array_options(self)


class OpaqueArray(ArrayBase):
    """A CUDA array: GPU memory laid out by the driver for texture and surface access.

    Kernels reach it only through a :class:`~cuda_core.texture.TextureObject`
    or :class:`~cuda_core.texture.SurfaceObject`; there is no device pointer,
    so data moves in and out by copies (:meth:`copy_from`, :meth:`copy_to`).
    Created by :meth:`Device.create_opaque_array
    <cuda_core.Device.create_opaque_array>` (or
    :meth:`MipmappedArray.get_level <cuda_core.texture.MipmappedArray.get_level>`).

    :meth:`close` drops this wrapper's claim on the array; the array itself
    is destroyed once no texture or surface object uses it either.

    Raises
    ------
    RuntimeError
        If constructed directly instead of by ``Device.create_opaque_array``.
    """

    _factory = "Device.create_opaque_array"
    __slots__ = ()

    def __repr__(self) -> str:
        return (
            f"OpaqueArray(shape={self._shape}, format={self._format.name}, "
            f"num_channels={self._num_channels})"
        )

    @classmethod
    def _from_handle(
        cls, handle: Any, owning: bool, *, device_id: int | None = None
    ) -> OpaqueArray:
        """Wrap an existing ``CUarray`` (int); shape and format come from the driver.

        With ``owning`` the array is destroyed when the last user lets go;
        otherwise it is never destroyed here.
        """
        handle = as_int_handle(handle)
        shared = SharedHandle(handle, _destroy_array if owning else None, "CUDA array")
        if device_id is None:
            device_id = _current_device_id()
        return _array_from_shared(shared, device_id)

    def close(self) -> None:
        """Drop this wrapper's claim on the array (idempotent).

        The array is destroyed (``cuArrayDestroy``) when no texture or
        surface object uses it either; arrays of a mipmap level and borrowed
        arrays are never destroyed here.

        Raises
        ------
        CUDAError
            If destroying the array failed.
        """
        self._handle = 0
        self._life.close()

    def copy_from(self, src: Any, *, stream: Any) -> None:
        """Copy a whole array's worth of data from ``src`` into this array.

        Parameters
        ----------
        src : Buffer, StridedMemoryView or buffer-protocol object
            At least :attr:`size_bytes` of C-contiguous data, rows packed
            (``width * element_bytes`` bytes per row).
        stream : Stream or GraphBuilder
            Where the copy is ordered (a graph builder captures it).

        Raises
        ------
        RuntimeError
            If this array (or a source Buffer) is closed.
        TypeError
            For an unsupported ``src`` or ``stream``.
        ValueError
            If ``src`` is smaller than the array.
        """
        copy_array(self._c_array(), self._extent_bytes(), src, stream, True)

    def copy_to(self, dst: _T, *, stream: Any) -> _T:
        """Copy this whole array into ``dst``; return ``dst``.

        Parameters
        ----------
        dst : Buffer, StridedMemoryView or writable buffer-protocol object
            At least :attr:`size_bytes` of writable C-contiguous space.
        stream : Stream or GraphBuilder
            Where the copy is ordered.  Synchronize it before reading a host
            destination that is pinned (a pageable one is written when this
            returns).

        Returns
        -------
        The ``dst`` object, as :meth:`Buffer.copy_to <cuda_core.Buffer.copy_to>`.

        Raises
        ------
        RuntimeError, TypeError, ValueError
            As :meth:`copy_from`.
        """
        copy_array(self._c_array(), self._extent_bytes(), dst, stream, False)
        return dst

    def _c_array(self) -> Any:
        self._require_open()
        return ffi.cast("CUarray", self._handle)

    def _extent_bytes(self) -> tuple[int, int, int]:
        """(width in bytes, height, depth) of a whole-array 3-D copy."""
        return copy_extent(self._shape, self._layered, self.element_bytes)

    @property
    def element_bytes(self) -> int:
        """int: Bytes per element (channel bytes times channels)."""
        return element_bytes(self._format, self._num_channels)

    @property
    def size_bytes(self) -> int:
        """int: Bytes of array storage (``prod(shape) * element_bytes``)."""
        return prod(self._shape) * self.element_bytes


def _create_opaque_array(options: Any, device_id: int) -> OpaqueArray:
    """Allocate an :class:`OpaqueArray` in the current context (device ``device_id``)."""
    opts: OpaqueArrayOptions = check_or_create_options(
        OpaqueArrayOptions, options, "Opaque array options"
    )
    desc = _descriptor(opts)
    out = ffi.new("CUarray *")
    check(lib.cuArray3DCreate(out, desc), "cuArray3DCreate")
    handle = as_int_handle(out[0])
    shared = SharedHandle(handle, _destroy_array, "CUDA array")
    return _new_array(
        shared,
        opts.shape,
        opts.format,
        opts.num_channels,
        opts.is_surface_load_store,
        opts.is_layered,
        device_id,
    )


def _descriptor(opts: Any) -> Any:
    """Return a filled ``CUDA_ARRAY3D_DESCRIPTOR *`` for array or mipmapped-array options."""
    flags = lib.CUDA_ARRAY3D_SURFACE_LDST if opts.is_surface_load_store else 0
    if opts.is_layered:
        flags |= lib.CUDA_ARRAY3D_LAYERED
    desc = ffi.new("CUDA_ARRAY3D_DESCRIPTOR *")
    desc.Width, desc.Height, desc.Depth = descriptor_extent(opts.shape, opts.is_layered)
    desc.Format = FORMAT_TO_CU[opts.format]
    desc.NumChannels = opts.num_channels
    desc.Flags = flags
    return desc


def _new_array(
    shared: SharedHandle,
    shape: tuple[int, ...],
    format: ArrayFormatType,
    num_channels: int,
    surface: bool,
    layered: bool,
    device_id: int,
) -> OpaqueArray:
    self = object.__new__(OpaqueArray)
    self._handle = shared.value
    self._shared = shared
    self._shape = shape
    self._format = format
    self._num_channels = num_channels
    self._surface_load_store = surface
    self._layered = layered
    self._device_id = device_id
    self._life = Lifetime("cuArrayDestroy", shared=shared)
    return self


def _array_from_shared(shared: SharedHandle, device_id: int) -> OpaqueArray:
    """Wrap ``shared`` (its creator's claim) as an OpaqueArray described by the driver."""
    desc = ffi.new("CUDA_ARRAY3D_DESCRIPTOR *")
    status = lib.cuArray3DGetDescriptor(desc, ffi.cast("CUarray", shared.value))
    if status:
        shared.release()
        check(status, "cuArray3DGetDescriptor")
    layered = bool(desc.Flags & lib.CUDA_ARRAY3D_LAYERED)
    shape = shape_from_descriptor(desc.Width, desc.Height, desc.Depth, layered)
    fmt = CU_TO_FORMAT.get(int(desc.Format))
    if fmt is None:
        shared.release()
        raise ValueError(f"CUDA array format {int(desc.Format):#x} has no ArrayFormatType")
    surface = bool(desc.Flags & lib.CUDA_ARRAY3D_SURFACE_LDST)
    return _new_array(shared, shape, fmt, desc.NumChannels, surface, layered, device_id)


def _destroy_array(value: int) -> int:
    status: int = lib.cuArrayDestroy(ffi.cast("CUarray", value))
    return status


def _current_device_id() -> int:
    out = ffi.new("CUdevice *")
    check(lib.cuCtxGetDevice(out), "cuCtxGetDevice")
    return int(out[0])
