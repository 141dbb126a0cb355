# SPDX-License-Identifier: Apache-2.0
"""cuda_core.texture without a GPU: enums, format tables, option checks,
descriptor translation, lifetimes (claims) and copy argument checks."""

from __future__ import annotations

import array
import gc
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import cuda_core
from cuda_core import Buffer, CUDAError, CUDAWarning
from cuda_core._cuda_ffi import lib
from cuda_core._stream import Stream
from cuda_core.texture import (
    MipmappedArray,
    MipmappedArrayOptions,
    OpaqueArray,
    OpaqueArrayOptions,
    ResourceDescriptor,
    SurfaceObject,
    TextureObject,
    TextureObjectOptions,
)
from cuda_core.texture._array import _new_array
from cuda_core.texture._formats import (
    CU_TO_FORMAT,
    FORMAT_TO_CU,
    copy_extent,
    descriptor_extent,
    normalize_format,
    shape_from_descriptor,
)
from cuda_core.texture._handle import Lifetime, SharedHandle
from cuda_core.texture._texture import _normalize_address_modes, _texture_desc
from cuda_core.typing import AddressModeType, ArrayFormatType, FilterModeType, ReadModeType

# Values of cuda.h (CUDA 12/13), written out as an independent oracle.
CU_FORMATS = {
    "uint8": 0x01,
    "uint16": 0x02,
    "uint32": 0x03,
    "int8": 0x08,
    "int16": 0x09,
    "int32": 0x0A,
    "float16": 0x10,
    "float32": 0x20,
}


# --------------------------------------------------------------------------
# Enumerations and tables.
# --------------------------------------------------------------------------
def test_enum_members_and_values():
    assert {m.name: m.value for m in AddressModeType} == {
        "WRAP": "wrap",
        "CLAMP": "clamp",
        "MIRROR": "mirror",
        "BORDER": "border",
    }
    assert {m.name: m.value for m in FilterModeType} == {"POINT": "point", "LINEAR": "linear"}
    assert {m.name: m.value for m in ReadModeType} == {
        "ELEMENT_TYPE": "element_type",
        "NORMALIZED_FLOAT": "normalized_float",
    }
    assert [m.value for m in ArrayFormatType] == list(CU_FORMATS)
    assert ArrayFormatType.FLOAT32 == "float32" and f"{AddressModeType.WRAP}" == "wrap"
    for name in ("AddressModeType", "ArrayFormatType", "FilterModeType", "ReadModeType"):
        assert name in cuda_core.typing.__all__


def test_format_table_matches_driver_values():
    for fmt in ArrayFormatType:
        assert FORMAT_TO_CU[fmt] == CU_FORMATS[fmt.value]
        assert CU_TO_FORMAT[CU_FORMATS[fmt.value]] is fmt
    # Each format is the NumPy dtype of its name, with that many bytes per channel.
    for fmt in ArrayFormatType:
        opts = OpaqueArrayOptions(shape=(4,), format=fmt, num_channels=2)
        arr = _fake_array(opts)
        assert arr.element_bytes == 2 * np.dtype(fmt.value).itemsize
        arr.close()


@pytest.mark.parametrize(
    "value, expected",
    [
        (ArrayFormatType.INT16, ArrayFormatType.INT16),
        ("uint8", ArrayFormatType.UINT8),
        (np.float32, ArrayFormatType.FLOAT32),
        (np.dtype("float16"), ArrayFormatType.FLOAT16),
        (np.dtype("i4"), ArrayFormatType.INT32),
        (np.uint16, ArrayFormatType.UINT16),
    ],
)
def test_normalize_format_accepts(value, expected):
    assert normalize_format(value) is expected


@pytest.mark.parametrize(
    "value, match",
    [
        (np.float64, "no ArrayFormatType equivalent"),
        ("float64", "format must be an ArrayFormatType"),
        (0, "format must be an ArrayFormatType"),
        ("i4", "format must be an ArrayFormatType"),  # strings name members
        (object(), "format must be an ArrayFormatType"),
    ],
)
def test_normalize_format_rejects(value, match):
    with pytest.raises(ValueError, match=match):
        normalize_format(value)


# --------------------------------------------------------------------------
# Options.
# --------------------------------------------------------------------------
def test_opaque_array_options_validation():
    opts = OpaqueArrayOptions(shape=[8, np.int64(4)], format="float32", num_channels=4)
    assert opts.shape == (8, 4) and opts.format is ArrayFormatType.FLOAT32
    assert opts.is_surface_load_store is False and opts.is_layered is False
    with pytest.raises(ValueError, match="num_channels must be 1, 2, or 4"):
        OpaqueArrayOptions(shape=(8,), format="uint8", num_channels=3)
    with pytest.raises(ValueError, match="num_channels"):
        OpaqueArrayOptions(shape=(8,), format="uint8", num_channels=True)
    with pytest.raises(ValueError, match="shape rank must be 1, 2, or 3, got 4"):
        OpaqueArrayOptions(shape=(2, 2, 2, 2), format="uint8", num_channels=1)
    with pytest.raises(ValueError, match="shape rank"):
        OpaqueArrayOptions(shape=(), format="uint8", num_channels=1)
    with pytest.raises(TypeError, match="shape must be a tuple"):
        OpaqueArrayOptions(shape=8, format="uint8", num_channels=1)
    with pytest.raises(TypeError, match=r"shape\[0\] must be an int"):
        OpaqueArrayOptions(shape=(2.5,), format="uint8", num_channels=1)
    with pytest.raises(ValueError, match=r"shape\[1\] must be >= 1"):
        OpaqueArrayOptions(shape=(8, 0), format="uint8", num_channels=1)
    with pytest.raises(ValueError, match="format must be an ArrayFormatType"):
        OpaqueArrayOptions(shape=(8,), format=0, num_channels=1)
    # Layered: the last extent counts layers, so at least two extents.
    layered = OpaqueArrayOptions(shape=(16, 3), format="uint8", num_channels=1, is_layered=True)
    assert layered.is_layered
    with pytest.raises(ValueError, match="shape rank must be 2 or 3"):
        OpaqueArrayOptions(shape=(16,), format="uint8", num_channels=1, is_layered=True)


def test_mipmapped_array_options_validation():
    opts = MipmappedArrayOptions(shape=(64, 32), format=np.float32, num_channels=1, num_levels=4)
    assert opts.num_levels == 4 and opts.format is ArrayFormatType.FLOAT32
    with pytest.raises(ValueError, match="num_levels must be >= 1, got 0"):
        MipmappedArrayOptions(shape=(8, 8), format="uint8", num_channels=1, num_levels=0)
    with pytest.raises(TypeError, match="num_levels must be an int"):
        MipmappedArrayOptions(shape=(8, 8), format="uint8", num_channels=1, num_levels=2.0)
    with pytest.raises(ValueError, match="num_channels"):
        MipmappedArrayOptions(shape=(8, 8), format="uint8", num_channels=3, num_levels=2)
    with pytest.raises(ValueError, match=r"shape\[0\] must be >= 1"):
        MipmappedArrayOptions(shape=(0, 8), format="uint8", num_channels=1, num_levels=1)


def test_texture_object_options_defaults_and_strings():
    opts = TextureObjectOptions()
    assert opts.address_mode is AddressModeType.CLAMP
    assert opts.filter_mode is FilterModeType.POINT
    assert opts.read_mode is ReadModeType.ELEMENT_TYPE
    assert opts.mipmap_filter_mode is FilterModeType.POINT
    assert opts.border_color is None and opts.max_anisotropy == 0
    opts = TextureObjectOptions(
        filter_mode="linear", read_mode="normalized_float", mipmap_filter_mode="linear"
    )
    assert opts.filter_mode is FilterModeType.LINEAR
    assert opts.read_mode is ReadModeType.NORMALIZED_FLOAT
    assert opts.mipmap_filter_mode is FilterModeType.LINEAR


@pytest.mark.parametrize("field", ["filter_mode", "read_mode", "mipmap_filter_mode"])
def test_texture_object_options_reject_bad_modes(field):
    enum_name = "ReadModeType" if field == "read_mode" else "FilterModeType"
    with pytest.raises(ValueError, match=f"{field} must be a {enum_name}"):
        TextureObjectOptions(**{field: 0})
    with pytest.raises(ValueError, match=f"{field} must be a {enum_name}"):
        TextureObjectOptions(**{field: "nearest"})


def test_address_mode_normalization():
    W, C, M, B = (AddressModeType.WRAP, AddressModeType.CLAMP, AddressModeType.MIRROR,
                  AddressModeType.BORDER)  # fmt: skip
    assert _normalize_address_modes(W) == (W, W, W)
    assert _normalize_address_modes("border") == (B, B, B)
    assert _normalize_address_modes((W,)) == (W, W, W)
    assert _normalize_address_modes((W, C)) == (W, C, C)
    assert _normalize_address_modes(["mirror", C, W]) == (M, C, W)
    with pytest.raises(TypeError, match="address_mode must be an AddressModeType"):
        _normalize_address_modes(42)
    with pytest.raises(ValueError, match="address_mode tuple must have 1-3 entries, got 0"):
        _normalize_address_modes(())
    with pytest.raises(ValueError, match="address_mode tuple must have 1-3"):
        _normalize_address_modes((W, W, W, W))
    with pytest.raises(ValueError, match=r"address_mode\[1\] must be an AddressModeType"):
        _normalize_address_modes((W, "bad", C))
    with pytest.raises(TypeError, match=r"address_mode\[0\]"):
        _normalize_address_modes((3,))
    with pytest.raises(ValueError, match="address_mode must be an AddressModeType"):
        _normalize_address_modes("repeat")


def test_texture_desc_translation():
    """Every sampling option reaches its CUDA_TEXTURE_DESC field (cuda.h values)."""
    opts = TextureObjectOptions(
        address_mode=("wrap", "mirror", "border"),
        filter_mode="linear",
        read_mode="normalized_float",
        normalized_coords=True,
        srgb=True,
        disable_trilinear_optimization=True,
        seamless_cubemap=True,
        max_anisotropy=8,
        mipmap_filter_mode="linear",
        mipmap_level_bias=0.5,
        min_mipmap_level_clamp=1.0,
        max_mipmap_level_clamp=3.0,
        border_color=(0.25, 0.5, 0.75, 1.0),
    )
    tex = _texture_desc(opts)
    assert [tex.addressMode[i] for i in range(3)] == [0, 2, 3]
    assert tex.filterMode == 1 and tex.mipmapFilterMode == 1
    # normalized coordinates 0x02 | sRGB 0x10 | no trilinear optimization 0x20 | seamless 0x40
    assert tex.flags == 0x02 | 0x10 | 0x20 | 0x40
    assert tex.maxAnisotropy == 8
    assert (tex.mipmapLevelBias, tex.minMipmapLevelClamp, tex.maxMipmapLevelClamp) == (
        0.5,
        1.0,
        3.0,
    )
    assert [tex.borderColor[i] for i in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert all(tex.reserved[i] == 0 for i in range(12))

    plain = _texture_desc(TextureObjectOptions())
    assert [plain.addressMode[i] for i in range(3)] == [1, 1, 1]
    assert plain.flags == 0x01  # element type: read as integer
    assert plain.filterMode == 0 and [plain.borderColor[i] for i in range(4)] == [0.0] * 4


def test_texture_desc_is_built_once_per_option_values():
    # equal options share one descriptor (the driver only reads it) ...
    first = _texture_desc(TextureObjectOptions(filter_mode="linear", border_color=[0.0] * 4))
    again = _texture_desc(TextureObjectOptions(filter_mode="linear", border_color=(0.0,) * 4))
    assert again is first
    # ... and a change, even in place, gets its own
    opts = TextureObjectOptions(filter_mode="linear", border_color=[0.0] * 4)
    opts.border_color[2] = 0.5
    changed = _texture_desc(opts)
    assert changed is not first and [changed.borderColor[i] for i in range(4)] == [0, 0, 0.5, 0]
    opts.filter_mode = "point"
    assert _texture_desc(opts).filterMode == 0 and changed.filterMode == 1
    # a value equal to an accepted one but of a refused type is still refused
    assert _texture_desc(TextureObjectOptions(max_anisotropy=2)).maxAnisotropy == 2
    with pytest.raises(TypeError, match="max_anisotropy must be an int"):
        _texture_desc(TextureObjectOptions(max_anisotropy=2.0))
    # an unhashable value is translated each time
    unhashable = TextureObjectOptions(max_anisotropy=np.array(4))
    assert _texture_desc(unhashable).maxAnisotropy == 4
    assert _texture_desc(unhashable).maxAnisotropy == 4


def test_texture_desc_checks_at_creation():
    with pytest.raises(ValueError, match="max_anisotropy must be >= 0"):
        _texture_desc(TextureObjectOptions(max_anisotropy=-1))
    with pytest.raises(ValueError, match="border_color must have 4 elements, got 2"):
        _texture_desc(TextureObjectOptions(border_color=(0.0, 0.0)))
    with pytest.raises(TypeError, match="address_mode"):
        _texture_desc(TextureObjectOptions(address_mode=42))


def test_extent_helpers():
    assert descriptor_extent((7,), False) == (7, 0, 0)
    assert descriptor_extent((7, 5), False) == (7, 5, 0)
    assert descriptor_extent((7, 5, 3), False) == (7, 5, 3)
    assert descriptor_extent((7, 4), True) == (7, 0, 4)  # 1-D layered: layers in Depth
    assert descriptor_extent((7, 5, 4), True) == (7, 5, 4)
    for shape, layered in [((7,), False), ((7, 5), False), ((7, 5, 3), False), ((7, 4), True)]:
        assert shape_from_descriptor(*descriptor_extent(shape, layered), layered) == shape
    assert copy_extent((7,), False, 8) == (56, 1, 1)
    assert copy_extent((7, 4), True, 2) == (14, 1, 4)
    assert copy_extent((7, 5, 3), False, 4) == (28, 5, 3)


# --------------------------------------------------------------------------
# Construction and descriptors.
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls, start",
    [
        (OpaqueArray, "OpaqueArray cannot be instantiated directly"),
        (MipmappedArray, "MipmappedArray cannot be instantiated directly"),
        (TextureObject, "TextureObject cannot be instantiated directly"),
        (SurfaceObject, "SurfaceObject cannot be instantiated directly"),
        (ResourceDescriptor, "ResourceDescriptor cannot be instantiated"),
    ],
)
def test_direct_construction_raises(cls, start):
    with pytest.raises(RuntimeError, match="^" + start):
        cls()


def test_resource_descriptor_type_checks():
    with pytest.raises(TypeError, match="array must be an OpaqueArray, got object"):
        ResourceDescriptor.from_opaque_array(object())
    with pytest.raises(TypeError, match="mipmapped_array must be a MipmappedArray"):
        ResourceDescriptor.from_mipmapped_array(object())
    with pytest.raises(TypeError, match="buffer must be a Buffer"):
        ResourceDescriptor.from_linear(object(), format="uint8", num_channels=1)
    with pytest.raises(TypeError, match="buffer must be a Buffer"):
        ResourceDescriptor.from_pitch2d(
            object(), format="uint8", num_channels=1, width=8, height=8, pitch_bytes=64
        )


def test_resource_descriptor_linear_and_pitch2d():
    host = np.zeros(1024, dtype=np.uint8)
    buf = Buffer.from_handle(host.ctypes.data, host.nbytes)
    res = ResourceDescriptor.from_linear(buf, format=ArrayFormatType.FLOAT32, num_channels=1)
    assert (res.kind, res.source, res.format, res.num_channels) == (
        "linear",
        buf,
        ArrayFormatType.FLOAT32,
        1,
    )
    assert res.size_bytes == 1024 and res.width is None and "linear" in repr(res)
    assert ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1, size_bytes=512)
    with pytest.raises(ValueError, match="exceeds buffer.size"):
        ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1, size_bytes=2048)
    with pytest.raises(ValueError, match="at least one element"):
        ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1, size_bytes=0)
    with pytest.raises(ValueError, match="multiple of element size"):
        ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1, size_bytes=10)
    with pytest.raises(ValueError, match="num_channels"):
        ResourceDescriptor.from_linear(buf, format="uint8", num_channels=3)

    p2 = ResourceDescriptor.from_pitch2d(
        buf, format="uint8", num_channels=4, width=16, height=8, pitch_bytes=128
    )
    assert (p2.kind, p2.width, p2.height, p2.pitch_bytes) == ("pitch2d", 16, 8, 128)
    assert "pitch2d" in repr(p2) and p2.size_bytes is None
    with pytest.raises(ValueError, match="pitch_bytes"):
        ResourceDescriptor.from_pitch2d(
            buf, format="uint32", num_channels=1, width=16, height=8, pitch_bytes=32
        )
    with pytest.raises(ValueError, match="exceeds buffer.size"):
        ResourceDescriptor.from_pitch2d(
            buf, format="uint8", num_channels=4, width=64, height=128, pitch_bytes=512
        )
    for kw, name in [({"width": 0}, "width"), ({"height": 0}, "height")]:
        args = {"width": 8, "height": 8, **kw}
        with pytest.raises(ValueError, match=name):
            ResourceDescriptor.from_pitch2d(
                buf, format="uint8", num_channels=1, pitch_bytes=64, **args
            )

    # Both fill CUDA_RESOURCE_DESC with the right type and fields (once: the
    # same descriptor comes back).
    c_res, claim, got = res._bind()
    assert got is buf and res._bind()[0] is c_res
    assert claim.release() == 0 and claim.release() == 0  # once; then nothing
    assert c_res.resType == 2 and c_res.res.linear.devPtr == buf.handle
    assert (c_res.res.linear.format, c_res.res.linear.sizeInBytes) == (0x20, 1024)
    c_res, claim, _ = p2._bind()
    claim.release()
    pitch = c_res.res.pitch2D
    assert c_res.resType == 3 and (pitch.width, pitch.height, pitch.pitchInBytes) == (16, 8, 128)
    assert (pitch.format, pitch.numChannels, pitch.devPtr) == (0x01, 4, buf.handle)
    buf.close()
    with pytest.raises(RuntimeError, match="Buffer is closed"):
        res._bind()


# --------------------------------------------------------------------------
# Lifetimes: the array goes when its last user lets go.
# --------------------------------------------------------------------------
def _fake_array(opts, destroy=None, handle=0x1000):
    shared = SharedHandle(handle, destroy, "CUDA array")
    return _new_array(
        shared,
        opts.shape,
        opts.format,
        opts.num_channels,
        opts.is_surface_load_store,
        opts.is_layered,
        0,
    )


class Recorder:
    def __init__(self, status=0):
        self.calls = []
        self.status = status

    def __call__(self, value):
        self.calls.append(value)
        return self.status


def test_claims_outlive_the_array_wrapper():
    destroyed = Recorder()
    arr = _fake_array(OpaqueArrayOptions((8, 8), "float32", 1), destroyed, 0x1234)
    shared = arr._shared
    tex_claim = arr._claim()  # what a texture over the array holds
    surf_claim = arr._claim()
    assert shared.claims == 3
    arr.close()
    assert arr.handle == 0 and arr.is_closed and destroyed.calls == []
    arr.close()  # idempotent
    assert tex_claim.release() == 0 and destroyed.calls == []
    assert surf_claim.release() == 0
    assert destroyed.calls == [0x1234] and shared.claims == 0
    with pytest.raises(RuntimeError, match="OpaqueArray is closed"):
        arr._claim()
    with pytest.raises(RuntimeError, match="has been released"):
        shared.retain()


def test_level_claim_keeps_parent():
    destroyed = Recorder()
    parent = SharedHandle(0xAAA0, destroyed, "mipmapped array")
    level = SharedHandle(0xBBB0, None, "mipmap level", parent=parent)
    assert parent.claims == 2
    assert parent.release() == 0 and destroyed.calls == []  # the mipmap wrapper closed
    assert level.release() == 0
    assert destroyed.calls == [0xAAA0]


def test_lifetime_close_raises_and_gc_warns():
    class Owner:
        pass

    failing = Recorder(status=1)  # CUDA_ERROR_INVALID_VALUE
    life = Lifetime("cuTexObjectDestroy", failing, 77, SharedHandle(5, None, "CUDA array"))
    with pytest.raises(CUDAError, match="cuTexObjectDestroy"):
        life.close()
    assert failing.calls == [77] and not life.alive
    life.close()  # nothing left to release
    assert failing.calls == [77]

    owner = Owner()
    owner.life = Lifetime("cuSurfObjectDestroy", failing, 78)  # as a wrapper keeps it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del owner
        gc.collect()
    assert failing.calls == [77, 78]
    assert any(issubclass(w.category, CUDAWarning) for w in caught)


def test_garbage_collected_array_releases_its_claim():
    destroyed = Recorder()
    arr = _fake_array(OpaqueArrayOptions((4,), "uint8", 1), destroyed, 0x4321)
    claim = arr._claim()
    del arr
    gc.collect()
    assert destroyed.calls == []  # the texture's claim still holds it
    claim.release()
    assert destroyed.calls == [0x4321]


# --------------------------------------------------------------------------
# Copy argument checks (before anything reaches the driver).
# --------------------------------------------------------------------------
@pytest.fixture
def fake_array():
    arr = _fake_array(OpaqueArrayOptions((16,), ArrayFormatType.UINT32, 1))
    yield arr
    arr.close()


def test_array_properties(fake_array):
    assert fake_array.shape == (16,) and fake_array.num_channels == 1
    assert fake_array.element_bytes == 4 and fake_array.size_bytes == 64
    assert fake_array.format is ArrayFormatType.UINT32 and not fake_array.is_surface_load_store
    assert repr(fake_array) == "OpaqueArray(shape=(16,), format=UINT32, num_channels=1)"


def test_copy_checks(fake_array):
    stream = Stream._legacy_default()
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got "):
        fake_array.copy_from(array.array("I", [0] * 16), stream="not-a-stream")
    too_small = array.array("I", [0] * 8)
    with pytest.raises(ValueError, match="smaller than the array extent"):
        fake_array.copy_from(too_small, stream=stream)
    with pytest.raises(ValueError, match="smaller than the array extent"):
        fake_array.copy_to(too_small, stream=stream)
    with pytest.raises(TypeError, match="contiguous writable buffer-protocol"):
        fake_array.copy_to(bytes(64), stream=stream)
    with pytest.raises(TypeError, match="contiguous buffer-protocol object, got int"):
        fake_array.copy_from(5, stream=stream)
    strided = np.zeros(32, dtype=np.uint32)[::2]
    with pytest.raises(TypeError, match="contiguous"):
        fake_array.copy_from(strided, stream=stream)
    host = np.zeros(8, dtype=np.uint32)
    small = Buffer.from_handle(host.ctypes.data, host.nbytes)
    with pytest.raises(ValueError, match=r"Buffer size \(32 bytes\) is smaller"):
        fake_array.copy_from(small, stream=stream)
    small.close()
    with pytest.raises(RuntimeError, match="Buffer is closed"):
        fake_array.copy_from(small, stream=stream)
    fake_array.close()
    with pytest.raises(RuntimeError, match="OpaqueArray is closed"):
        fake_array.copy_from(array.array("I", [0] * 16), stream=stream)


def test_copy_checks_views(fake_array):
    from cuda_core.utils import StridedMemoryView

    stream = Stream._legacy_default()
    # (from_array_interface would ask the driver for the current device)
    strided = StridedMemoryView.from_dlpack(np.zeros((16, 2), dtype=np.uint32)[:, 0], -1)
    with pytest.raises(ValueError, match="C-contiguous"):
        fake_array.copy_from(strided, stream=stream)
    small = StridedMemoryView.from_dlpack(np.zeros(15, dtype=np.uint32), -1)
    with pytest.raises(ValueError, match="view has 60 bytes, smaller"):
        fake_array.copy_from(small, stream=stream)
    host = np.zeros(16, dtype=np.uint32)
    like_buffer = SimpleNamespace(
        handle=host.ctypes.data,
        size=host.nbytes,
        memory_resource=None,
        device_id=-1,
        is_device_accessible=False,
    )
    readonly = StridedMemoryView.from_buffer(like_buffer, (16,), dtype=np.uint32, is_readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        fake_array.copy_to(readonly, stream=stream)


def test_surface_requires_array_resources():
    from cuda_core.texture._surface import _create_surface_object
    from cuda_core.texture._texture import _create_texture_object

    host = np.zeros(256, dtype=np.uint8)
    buf = Buffer.from_handle(host.ctypes.data, host.nbytes)
    linear = ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1)
    dev = SimpleNamespace(_has_inited=True, _device_id=0, _c_ctx=None)  # what they read of a Device
    with pytest.raises(ValueError, match="array-backed"):
        _create_surface_object(dev, resource=linear)
    arr = _fake_array(OpaqueArrayOptions((8, 8), "uint8", 4))
    with pytest.raises(ValueError, match="is_surface_load_store=True"):
        _create_surface_object(dev, resource=ResourceDescriptor.from_opaque_array(arr))
    with pytest.raises(TypeError, match="resource must be a ResourceDescriptor"):
        _create_surface_object(dev, resource=arr)
    with pytest.raises(TypeError, match="resource must be a ResourceDescriptor"):
        _create_texture_object(dev, resource=object())
    with pytest.raises(TypeError, match="TextureObjectOptions"):
        _create_texture_object(dev, resource=linear, options="nope")
    assert lib.CUDA_ARRAY3D_SURFACE_LDST == 2 and lib.CUDA_ARRAY3D_LAYERED == 1
    arr.close()
    buf.close()


def test_unchanged_options_are_recognised_field_by_field():
    # _create_texture_object recognises the options last seen by the identity
    # of each field against _remember's tuple (_option_values: declaration
    # order); the tests written out there must follow that order, one a field.
    import dataclasses
    import inspect
    import re

    from cuda_core.texture import _texture

    source = inspect.getsource(_texture._create_texture_object)
    tested = re.findall(r"o\.(\w+) is values\[(\d+)\]", source)
    names = [f.name for f in dataclasses.fields(TextureObjectOptions)]
    assert [(name, str(i)) for i, name in enumerate(names)] == tested
    opts = TextureObjectOptions(max_anisotropy=2)
    _texture_desc(opts)
    last, values, _ = _texture._last
    assert last is opts and all(getattr(opts, n) is v for n, v in zip(names, values))
