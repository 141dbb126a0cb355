# SPDX-License-Identifier: Apache-2.0
"""Texture objects: :class:`TextureObject` and :class:`TextureObjectOptions`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from cuda_core._coerce import check_or_create_options, index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._lifetime import open_class
from cuda_core.texture._base import BoundObject
from cuda_core.texture._handle import bound_close, bound_finalizer, creation_failed
from cuda_core.texture._resource import ResourceDescriptor
from cuda_core.typing import AddressModeType, FilterModeType, ReadModeType

if TYPE_CHECKING:
    from cuda_core.texture._handle import Claim

__all__ = ["TextureObject", "TextureObjectOptions"]

_E = TypeVar("_E", AddressModeType, FilterModeType, ReadModeType)

_tex_new = lib.cc_tex_object_new
_tex_release = lib.cc_tex_object_release
_status = lib.cc_status

_ADDRESS_MODES = {
    AddressModeType.WRAP: lib.CU_TR_ADDRESS_MODE_WRAP,
    AddressModeType.CLAMP: lib.CU_TR_ADDRESS_MODE_CLAMP,
    AddressModeType.MIRROR: lib.CU_TR_ADDRESS_MODE_MIRROR,
    AddressModeType.BORDER: lib.CU_TR_ADDRESS_MODE_BORDER,
}
_FILTER_MODES = {
    FilterModeType.POINT: lib.CU_TR_FILTER_MODE_POINT,
    FilterModeType.LINEAR: lib.CU_TR_FILTER_MODE_LINEAR,
}


@dataclass
class TextureObjectOptions:
    """How a :class:`TextureObject` samples (``CUDA_TEXTURE_DESC``).

    Enumerations accept their members or their string values.

    Attributes
    ----------
    address_mode : AddressModeType or tuple of AddressModeType
        Out-of-range coordinates, for every dimension or per dimension (1 to
        3 entries, the last repeated).  ``WRAP`` and ``MIRROR`` need
        ``normalized_coords``.  Default ``CLAMP``.
    filter_mode : FilterModeType
        ``POINT`` (default) or ``LINEAR`` (floating-point results only:
        float formats, or ``NORMALIZED_FLOAT`` reads).
    read_mode : ReadModeType
        Integer data as stored (``ELEMENT_TYPE``, default) or as floats in
        ``[0, 1]``/``[-1, 1]`` (``NORMALIZED_FLOAT``).
    normalized_coords : bool
        Coordinates in ``[0, 1)`` rather than ``[0, extent)``.  Default False.
    srgb : bool
        Convert sRGB to linear on read (8-bit formats).  Default False.
    disable_trilinear_optimization : bool
        Exact trilinear filtering between mip levels.  Default False.
    seamless_cubemap : bool
        Filter across cubemap faces.  Default False.
    max_anisotropy : int
        Maximum anisotropy ratio (0 or 1: none; the driver clamps to 1..16).
        Checked (>= 0) when the texture is created.
    mipmap_filter_mode : FilterModeType
        Filtering between mip levels.  Default ``POINT``.
    mipmap_level_bias, min_mipmap_level_clamp, max_mipmap_level_clamp : float
        Level-of-detail bias and clamps.  Default 0.0.
    border_color : tuple of 4 floats or None
        The ``BORDER`` value (None: zeros).  Its length is checked when the
        texture is created.

    Raises
    ------
    ValueError
        For an unknown filter or read mode.
    """

    address_mode: Any = AddressModeType.CLAMP
    filter_mode: Any = FilterModeType.POINT
    read_mode: Any = ReadModeType.ELEMENT_TYPE
    normalized_coords: bool = False
    srgb: bool = False
    disable_trilinear_optimization: bool = False
    seamless_cubemap: bool = False
    max_anisotropy: int = 0
    mipmap_filter_mode: Any = FilterModeType.POINT
    mipmap_level_bias: float = 0.0
    min_mipmap_level_clamp: float = 0.0
    max_mipmap_level_clamp: float = 0.0
    border_color: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        self.filter_mode = _normalize_enum("filter_mode", self.filter_mode, FilterModeType)
        self.read_mode = _normalize_enum("read_mode", self.read_mode, ReadModeType)
        self.mipmap_filter_mode = _normalize_enum(
            "mipmap_filter_mode", self.mipmap_filter_mode, FilterModeType
        )


class TextureObject(BoundObject):
    """A bindless texture: sampled reads of an array, mipmap or linear memory.

    Pass it to :func:`~cuda_core.launch` (or its :attr:`handle`) for a
    ``cudaTextureObject_t`` parameter.  Created by
    :meth:`Device.create_texture_object <cuda_core.Device.create_texture_object>`.
    It keeps the memory it reads alive: an array or mipmap is destroyed only
    after both its wrapper and every texture over it are closed.

    Raises
    ------
    RuntimeError
        If constructed directly instead of by ``Device.create_texture_object``.
    """

    _factory = "Device.create_texture_object"
    __slots__ = (
        "_handle",
        "_pending",
        "_claim",
        "_resource",
        "_options",
        "_buffer",
        "_device_id",
        "__weakref__",
    )
    _options: TextureObjectOptions
    _buffer: object

    @property
    def options(self) -> TextureObjectOptions:
        """TextureObjectOptions: How the texture samples."""
        return self._options


def _release_texture(value: int, c_claims: Any) -> int:
    # The safety net's release, reading _tex_release when it runs.
    result: int = _tex_release(value, c_claims)
    return result


#: The class of an open TextureObject: TextureObject with the safety net.
_OpenTexture = open_class(
    TextureObject,
    bound_finalizer("cuTexObjectDestroy", _release_texture),
    close=bound_close(TextureObject, _tex_release, "cuTexObjectDestroy"),
)


def _create_texture_object(self: Any, *, resource: object, options: Any = None) -> TextureObject:
    """``Device.create_texture_object`` itself, once the texture package is loaded.

    ``self`` is the Device (see ``_device_textures``, which puts this function
    in place of its placeholder, so that a call is one Python frame).  The
    object is made in the device's context, made current for the driver call
    if it is not (in the current context where the device has none).
    """
    if not self._has_inited:
        self._check_initialized()
    if not isinstance(resource, ResourceDescriptor):
        raise TypeError(f"resource must be a ResourceDescriptor, got {type(resource).__name__}")
    # The options object last seen, unchanged: every field holds the very
    # (immutable) object it held then, so its descriptor and the checks made
    # in building it hold as they were (_remember); a few identity tests
    # instead of a key of the values.
    o = options
    last_opts, values, tex = _last
    if not (
        o is last_opts
        and o.address_mode is values[0]
        and o.filter_mode is values[1]
        and o.read_mode is values[2]
        and o.normalized_coords is values[3]
        and o.srgb is values[4]
        and o.disable_trilinear_optimization is values[5]
        and o.seamless_cubemap is values[6]
        and o.max_anisotropy is values[7]
        and o.mipmap_filter_mode is values[8]
        and o.mipmap_level_bias is values[9]
        and o.min_mipmap_level_clamp is values[10]
        and o.max_mipmap_level_clamp is values[11]
        and o.border_color is values[12]
    ):
        options = check_or_create_options(TextureObjectOptions, options, "Texture object options")
        tex = _texture_desc(options)
    array = resource._array
    if array is not None:  # what _bind() does, inline for the common case
        if not array._handle:
            array._require_open()
        res = resource._c_res or resource._fill_array()
        claim: Claim = array._shared
        buf = None
    else:
        res, claim, buf = resource._bind()
    handle = _tex_new(self._c_ctx, res, tex, claim._c_claims)
    if not handle:
        creation_failed(claim, _status(), "cuTexObjectCreate")
    obj = _OpenTexture()
    obj._handle = handle
    obj._pending = [handle]
    obj._claim = claim
    obj._resource = resource
    obj._options = options
    obj._buffer = buf
    obj._device_id = self._device_id
    return obj


#: Texture descriptors already built and checked, by the options' values
#: (:func:`_descriptor_key`); the driver only reads them.  Cleared when full.
_DESCRIPTORS: dict[tuple[Any, ...], Any] = {}
_DESCRIPTORS_MAX = 64


def _option_values(opts: TextureObjectOptions) -> tuple[Any, ...]:
    """Every field of ``opts``, in declaration order.

    That is the order of the identity tests in :func:`_create_texture_object`
    and the tuple :func:`_remember` records.
    """
    return (
        opts.address_mode,
        opts.filter_mode,
        opts.read_mode,
        opts.normalized_coords,
        opts.srgb,
        opts.disable_trilinear_optimization,
        opts.seamless_cubemap,
        opts.max_anisotropy,
        opts.mipmap_filter_mode,
        opts.mipmap_level_bias,
        opts.min_mipmap_level_clamp,
        opts.max_mipmap_level_clamp,
        opts.border_color,
    )


def _descriptor_key(values: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The key of the descriptor of options ``values`` (:func:`_option_values`), or None.

    None where the values are not plain.  Sequences (per-dimension address
    modes, the border colour) enter as tuples of their items, so a list
    changed in place is a new key; the anisotropy's type enters too, as
    ``2`` and ``2.0`` are equal but only the int is accepted.  Values that
    are equal build the same descriptor.
    """
    modes = values[0]
    color = values[12]
    try:
        if not isinstance(modes, str):
            modes = tuple(modes)
        if color is not None:
            color = tuple(color)
    except TypeError:  # not a sequence: _build_texture_desc says so
        return None
    anisotropy = values[7]
    return (
        modes,
        values[1],
        values[2],
        values[3],
        values[4],
        values[5],
        values[6],
        anisotropy,
        type(anisotropy),
        values[8],
        values[9],
        values[10],
        values[11],
        color,
    )


def _texture_desc(opts: TextureObjectOptions) -> Any:
    """Return a filled ``CUDA_TEXTURE_DESC *`` (the checks made at creation).

    Built once per combination of option values (translating the options
    costs more than the driver call on CPython) and shared: the driver
    copies it.  Records ``opts`` as the options last seen where its values
    allow (:func:`_remember`).
    """
    values = _option_values(opts)
    key = _descriptor_key(values)
    try:
        tex = _DESCRIPTORS.get(key) if key is not None else None
    except TypeError:  # an unhashable value: not cached
        key = tex = None
    if tex is None:
        tex = _build_texture_desc(opts)
        if key is not None:
            if len(_DESCRIPTORS) >= _DESCRIPTORS_MAX:
                _DESCRIPTORS.clear()
            _DESCRIPTORS[key] = tex
    if key is not None:
        _remember(opts, values, tex)
    return tex


#: The options object last given (or a stand-in), its field values (each
#: the very object read then) and its descriptor: see _create_texture_object.
_last: tuple[Any, tuple[Any, ...], Any] = (object(), (), None)

#: The types of values that cannot change in place (tuples of them too).
_IMMUTABLE = frozenset(
    {str, int, float, bool, type(None), AddressModeType, FilterModeType, ReadModeType}
)


def _remember(opts: TextureObjectOptions, values: tuple[Any, ...], tex: Any) -> None:
    """Record ``opts`` (fields ``values``) as the options last seen if they cannot change in place.

    Only then does an unchanged identity of each value mean unchanged values.
    """
    if type(opts) is not TextureObjectOptions:
        return
    for value in values:
        kind = type(value)
        if kind is tuple:
            if not all(type(item) in _IMMUTABLE for item in value):
                return
        elif kind not in _IMMUTABLE:
            return
    global _last
    _last = (opts, values, tex)


def _build_texture_desc(opts: TextureObjectOptions) -> Any:
    """Translate and check ``opts`` into a new ``CUDA_TEXTURE_DESC *``."""
    tex = ffi.new("CUDA_TEXTURE_DESC *")
    for i, mode in enumerate(_normalize_address_modes(opts.address_mode)):
        tex.addressMode[i] = _ADDRESS_MODES[mode]
    tex.filterMode = _FILTER_MODES[opts.filter_mode]
    flags = 0
    if opts.read_mode == ReadModeType.ELEMENT_TYPE:
        flags |= lib.CU_TRSF_READ_AS_INTEGER
    if opts.normalized_coords:
        flags |= lib.CU_TRSF_NORMALIZED_COORDINATES
    if opts.srgb:
        flags |= lib.CU_TRSF_SRGB
    if opts.disable_trilinear_optimization:
        flags |= lib.CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION
    if opts.seamless_cubemap:
        flags |= lib.CU_TRSF_SEAMLESS_CUBEMAP
    tex.flags = flags
    anisotropy = index_or_none(opts.max_anisotropy)
    if anisotropy is None:
        raise TypeError(f"max_anisotropy must be an int, got {type(opts.max_anisotropy).__name__}")
    if anisotropy < 0:
        raise ValueError("max_anisotropy must be >= 0")
    tex.maxAnisotropy = anisotropy
    tex.mipmapFilterMode = _FILTER_MODES[opts.mipmap_filter_mode]
    tex.mipmapLevelBias = float(opts.mipmap_level_bias)
    tex.minMipmapLevelClamp = float(opts.min_mipmap_level_clamp)
    tex.maxMipmapLevelClamp = float(opts.max_mipmap_level_clamp)
    if opts.border_color is not None:
        color = tuple(opts.border_color)
        if len(color) != 4:
            raise ValueError(f"border_color must have 4 elements, got {len(color)}")
        for i, value in enumerate(color):
            tex.borderColor[i] = float(value)
    return tex


def _normalize_enum(name: str, value: Any, enum_type: type[_E]) -> _E:
    """Return ``value`` as a member of the string enumeration ``enum_type``."""
    if isinstance(value, enum_type):
        return value
    try:
        return enum_type(value)
    except ValueError:
        valid = ", ".join(repr(m.value) for m in enum_type)
        kind = enum_type.__name__
        article = "an" if kind[0] in "AEIOU" else "a"
        raise ValueError(
            f"{name} must be {article} {kind} or one of {{{valid}}}, got {value!r}"
        ) from None


def _normalize_address_modes(address_mode: Any) -> tuple[AddressModeType, ...]:
    """Return three AddressModeType members from one mode or a tuple of 1 to 3."""
    if isinstance(address_mode, str):
        mode = _normalize_enum("address_mode", address_mode, AddressModeType)
        return (mode, mode, mode)
    try:
        modes = tuple(address_mode)
    except TypeError:
        raise TypeError(
            "address_mode must be an AddressModeType or a tuple of AddressModeType, got "
            f"{type(address_mode).__name__}"
        ) from None
    if not 1 <= len(modes) <= 3:
        raise ValueError(f"address_mode tuple must have 1-3 entries, got {len(modes)}")
    out = []
    for i, mode in enumerate(modes):
        if not isinstance(mode, str):
            raise TypeError(
                f"address_mode[{i}] must be an AddressModeType, got {type(mode).__name__}"
            )
        out.append(_normalize_enum(f"address_mode[{i}]", mode, AddressModeType))
    out += [out[-1]] * (3 - len(out))
    return tuple(out)
