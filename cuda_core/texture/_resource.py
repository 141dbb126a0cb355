# SPDX-License-Identifier: Apache-2.0
"""What backs a texture or surface: :class:`ResourceDescriptor`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from cuda_core._coerce import index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._release import claim_allocation
from cuda_core.texture._array import OpaqueArray
from cuda_core.texture._base import ElementFormat
from cuda_core.texture._formats import FORMAT_TO_CU, check_format_channels, element_bytes
from cuda_core.texture._mipmapped_array import MipmappedArray

if TYPE_CHECKING:
    from cuda_core.texture._handle import Claim
    from cuda_core.typing import ArrayFormatType

_T = TypeVar("_T", bound="ResourceDescriptor")

__all__ = ["ResourceDescriptor"]

_ARRAY = "array"
_MIPMAPPED = "mipmapped_array"
_LINEAR = "linear"
_PITCH2D = "pitch2d"


class ResourceDescriptor(ElementFormat):
    """The memory behind a :class:`~cuda_core.texture.TextureObject` or surface.

    Made by one of the ``from_*`` class methods:

    * :meth:`from_opaque_array` -- an :class:`~cuda_core.texture.OpaqueArray`
      (textures and surfaces);
    * :meth:`from_mipmapped_array` -- a
      :class:`~cuda_core.texture.MipmappedArray` (textures only);
    * :meth:`from_linear` -- a :class:`~cuda_core.Buffer` read as a typed 1-D
      array (``tex1Dfetch``; no filtering, addressing or normalized
      coordinates);
    * :meth:`from_pitch2d` -- a :class:`~cuda_core.Buffer` read as a 2-D
      image with a row pitch (filtering and 2-D addressing work).

    The descriptor keeps its source alive; a texture keeps its descriptor.

    Raises
    ------
    RuntimeError
        If constructed directly instead of by a ``from_*`` class method.
    """

    __slots__ = (
        "_kind",
        "_source",
        "_format",
        "_num_channels",
        "_size_bytes",
        "_width",
        "_height",
        "_pitch_bytes",
        "_array",
        "_c_res",
    )
    _kind: str
    _source: Any
    _format: Any
    _size_bytes: int | None
    _width: int | None
    _height: int | None
    _pitch_bytes: int | None
    _array: OpaqueArray | MipmappedArray | None  # the source of an array kind
    _c_res: Any  # CUDA_RESOURCE_DESC *, filled at the first bind (None until then)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "ResourceDescriptor cannot be instantiated directly. "
            "Use ResourceDescriptor.from_* factories."
        )

    def __repr__(self) -> str:
        if self._kind == _LINEAR:
            return (
                f"ResourceDescriptor(kind='linear', format={self._format.name}, "
                f"num_channels={self._num_channels}, size_bytes={self._size_bytes})"
            )
        if self._kind == _PITCH2D:
            return (
                f"ResourceDescriptor(kind='pitch2d', format={self._format.name}, "
                f"num_channels={self._num_channels}, width={self._width}, "
                f"height={self._height}, pitch_bytes={self._pitch_bytes})"
            )
        return f"ResourceDescriptor(kind={self._kind!r})"

    @classmethod
    def from_opaque_array(cls: type[_T], array: OpaqueArray) -> _T:
        """Describe an :class:`~cuda_core.texture.OpaqueArray` (textures and surfaces).

        Raises
        ------
        TypeError
            If ``array`` is not an OpaqueArray.
        """
        if not isinstance(array, OpaqueArray):
            raise TypeError(f"array must be an OpaqueArray, got {type(array).__name__}")
        return _new(cls, _ARRAY, array)

    @classmethod
    def from_mipmapped_array(cls: type[_T], mipmapped_array: MipmappedArray) -> _T:
        """Describe a :class:`~cuda_core.texture.MipmappedArray` (textures only).

        A surface needs one level: use :meth:`MipmappedArray.get_level
        <cuda_core.texture.MipmappedArray.get_level>` and
        :meth:`from_opaque_array`.

        Raises
        ------
        TypeError
            If ``mipmapped_array`` is not a MipmappedArray.
        """
        if not isinstance(mipmapped_array, MipmappedArray):
            raise TypeError(
                f"mipmapped_array must be a MipmappedArray, got {type(mipmapped_array).__name__}"
            )
        return _new(cls, _MIPMAPPED, mipmapped_array)

    @classmethod
    def from_linear(
        cls: type[_T],
        buffer: Buffer,
        *,
        format: Any,
        num_channels: int,
        size_bytes: int | None = None,
    ) -> _T:
        """Describe ``buffer`` as a typed 1-D array read with ``tex1Dfetch``.

        Parameters
        ----------
        buffer : Buffer
            Device-accessible memory whose address meets the device's
            ``texture_alignment``.  A texture built from this descriptor
            keeps the memory allocated until the texture is closed, even if
            the Buffer is closed first.
        format : ArrayFormatType, str or numpy.dtype
            The element format.
        num_channels : int
            Channels per element: 1, 2 or 4.
        size_bytes : int, optional
            Bytes to bind; default ``buffer.size``.  A whole number of
            elements, at least one, at most ``buffer.size``.

        Raises
        ------
        TypeError
            If ``buffer`` is not a Buffer.
        ValueError
            For a bad format, channel count or size.
        """
        if not isinstance(buffer, Buffer):
            raise TypeError(f"buffer must be a Buffer, got {type(buffer).__name__}")
        fmt = check_format_channels(format, num_channels)
        buf_size = buffer.size
        elem = element_bytes(fmt, num_channels)
        if size_bytes is None:
            size = buf_size
        else:
            size = _as_int("size_bytes", size_bytes)
            if size > buf_size:
                raise ValueError(f"size_bytes ({size}) exceeds buffer.size ({buf_size})")
        if size < elem:
            raise ValueError(f"size_bytes ({size}) must be at least one element ({elem} bytes)")
        if size % elem:
            raise ValueError(
                f"size_bytes ({size}) must be a multiple of element size "
                f"({elem} bytes for {fmt.name} x {num_channels})"
            )
        self = _new(cls, _LINEAR, buffer, fmt, num_channels)
        self._size_bytes = size
        return self

    @classmethod
    def from_pitch2d(
        cls: type[_T],
        buffer: Buffer,
        *,
        format: Any,
        num_channels: int,
        width: int,
        height: int,
        pitch_bytes: int,
    ) -> _T:
        """Describe ``buffer`` as a 2-D image of ``height`` rows ``pitch_bytes`` apart.

        Parameters
        ----------
        buffer : Buffer
            Device-accessible memory (see :meth:`from_linear` on lifetime).
        format : ArrayFormatType, str or numpy.dtype
            The element format.
        num_channels : int
            Channels per element: 1, 2 or 4.
        width, height : int
            The image size in elements and rows, each >= 1.
        pitch_bytes : int
            Bytes from one row to the next: at least ``width *
            element_bytes`` and a multiple of the device's
            ``texture_pitch_alignment`` (the driver checks the latter).

        Raises
        ------
        TypeError
            If ``buffer`` is not a Buffer.
        ValueError
            For a bad format, channel count, size or pitch, or an image larger
            than the buffer.
        """
        if not isinstance(buffer, Buffer):
            raise TypeError(f"buffer must be a Buffer, got {type(buffer).__name__}")
        fmt = check_format_channels(format, num_channels)
        w = _as_int("width", width)
        h = _as_int("height", height)
        p = _as_int("pitch_bytes", pitch_bytes)
        if w < 1:
            raise ValueError(f"width must be >= 1, got {w}")
        if h < 1:
            raise ValueError(f"height must be >= 1, got {h}")
        min_pitch = w * element_bytes(fmt, num_channels)
        if p < min_pitch:
            raise ValueError(f"pitch_bytes ({p}) must be >= width * element_bytes ({min_pitch})")
        if p * h > buffer.size:
            raise ValueError(f"pitch_bytes * height ({p * h}) exceeds buffer.size ({buffer.size})")
        self = _new(cls, _PITCH2D, buffer, fmt, num_channels)
        self._width = w
        self._height = h
        self._pitch_bytes = p
        return self

    def _bind(self) -> tuple[Any, Claim, Buffer | None]:
        """Return (``CUDA_RESOURCE_DESC *``, claim, Buffer or None) for a new object.

        For an array or a mipmapped array the claim is its SharedHandle,
        not yet retained: the extension takes the claim with the object it
        creates.  For a Buffer it is a claim on its allocation, already
        held.  Either way the claim is the caller's to release.  The
        descriptor is filled once and reused (the driver copies it).
        RuntimeError if the source is closed.
        """
        array = self._array
        if array is not None:
            if not array._handle:
                array._require_open()
            return self._c_res or self._fill_array(), array._shared, None
        buf = self._source
        if buf.is_closed:
            raise RuntimeError("the ResourceDescriptor's Buffer is closed")
        claim = _BufferClaim(claim_allocation(buf))
        res = self._c_res or self._fill_buffer()
        if self._kind == _LINEAR:
            res.res.linear.devPtr = buf.handle
        else:
            res.res.pitch2D.devPtr = buf.handle
        return res, claim, buf

    def _fill_array(self) -> Any:
        """Return a new ``CUDA_RESOURCE_DESC *`` of this array kind, kept in ``_c_res``."""
        res = ffi.new("CUDA_RESOURCE_DESC *")
        handle = self._source._shared.value
        if self._kind == _ARRAY:
            res.resType = lib.CU_RESOURCE_TYPE_ARRAY
            res.res.array.hArray = ffi.cast("CUarray", handle)
        else:
            res.resType = lib.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
            res.res.mipmap.hMipmappedArray = ffi.cast("CUmipmappedArray", handle)
        self._c_res = res
        return res

    def _fill_buffer(self) -> Any:
        """Return a new ``CUDA_RESOURCE_DESC *`` of this Buffer kind (but its address)."""
        res = ffi.new("CUDA_RESOURCE_DESC *")
        if self._kind == _LINEAR:
            res.resType = lib.CU_RESOURCE_TYPE_LINEAR
            lin = res.res.linear
            lin.format = FORMAT_TO_CU[self._format]
            lin.numChannels = self._num_channels
            lin.sizeInBytes = self._size_bytes
        else:
            res.resType = lib.CU_RESOURCE_TYPE_PITCH2D
            pitch = res.res.pitch2D
            pitch.format = FORMAT_TO_CU[self._format]
            pitch.numChannels = self._num_channels
            pitch.width = self._width
            pitch.height = self._height
            pitch.pitchInBytes = self._pitch_bytes
        self._c_res = res
        return res

    @property
    def kind(self) -> str:
        """str: ``"array"``, ``"mipmapped_array"``, ``"linear"`` or ``"pitch2d"``."""
        return self._kind

    @property
    def source(self) -> OpaqueArray | MipmappedArray | Buffer:
        """The OpaqueArray, MipmappedArray or Buffer described."""
        source: OpaqueArray | MipmappedArray | Buffer = self._source
        return source

    @property
    def size_bytes(self) -> int | None:
        """int or None: Bytes bound by a linear descriptor (None for other kinds)."""
        return self._size_bytes

    @property
    def width(self) -> int | None:
        """int or None: A pitch2d image's width in elements (None for other kinds)."""
        return self._width

    @property
    def height(self) -> int | None:
        """int or None: A pitch2d image's height in rows (None for other kinds)."""
        return self._height

    @property
    def pitch_bytes(self) -> int | None:
        """int or None: A pitch2d image's row pitch in bytes (None for other kinds)."""
        return self._pitch_bytes


def _new(
    cls: type[_T],
    kind: str,
    source: OpaqueArray | MipmappedArray | Buffer,
    fmt: ArrayFormatType | None = None,
    num_channels: int | None = None,
) -> _T:
    self = object.__new__(cls)
    self._kind = kind
    self._source = source
    self._format = fmt
    self._num_channels = num_channels
    self._size_bytes = None
    self._width = None
    self._height = None
    self._pitch_bytes = None
    self._array = None if isinstance(source, Buffer) else source
    self._c_res = None
    return self


def _as_int(name: str, value: object) -> int:
    result = index_or_none(value)
    if result is None:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return result


class _BufferClaim:
    """A texture's claim on a Buffer's allocation, released like an array claim.

    Wraps what :func:`~cuda_core._memory._release.claim_allocation` returns
    (a claim to drop, or the owner of non-owned memory to keep referenced).
    """

    __slots__ = ("_claim",)
    what = "Buffer allocation"
    _c_claims = ffi.NULL  # not counted in C: the extension leaves _finish() to do

    def __init__(self, claim: object) -> None:
        self._claim = claim

    def release(self) -> int:
        """Give the claim up (once); return 0 (a failing free warns where it happens)."""
        claim, self._claim = self._claim, None
        drop = getattr(claim, "drop", None)
        if drop is not None:
            drop()
        return 0

    _finish = release
