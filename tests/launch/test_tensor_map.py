# SPDX-License-Identifier: Apache-2.0
"""TMA tensor maps and texture/surface kernel arguments without a GPU:
enum values, dtype tables, option checks, layout translation, packing."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import numpy as np
import pytest

from cuda_core import Buffer, TensorMapDescriptor, TensorMapDescriptorOptions
from cuda_core._arg_plan import _packed_arguments
from cuda_core._arg_types import KERNEL_ARG_MARKER
from cuda_core._cuda_ffi import ffi
from cuda_core._kernel import Kernel, ParamInfo
from cuda_core._tensor_map import (
    TensorMapDataType,
    TensorMapIm2ColWideMode,
    TensorMapInterleave,
    TensorMapL2Promotion,
    TensorMapOOBFill,
    TensorMapSwizzle,
    _byte_layout,
    _driver_layout,
    _element_strides,
    _numpy_dtype_to_tma,
    _require_view_device,
)
from cuda_core.texture import ResourceDescriptor, SurfaceObject, TextureObject
from cuda_core.utils import StridedMemoryView


def test_enum_values_match_cuda_h():
    assert [int(m) for m in TensorMapDataType] == list(range(13))
    assert TensorMapDataType.FLOAT32 == 7 and TensorMapDataType.BFLOAT16 == 9
    assert [int(m) for m in TensorMapInterleave] == [0, 1, 2]
    assert [int(m) for m in TensorMapSwizzle] == [0, 1, 2, 3]
    assert [int(m) for m in TensorMapL2Promotion] == [0, 1, 2, 3]
    assert [int(m) for m in TensorMapOOBFill] == [0, 1]
    assert [int(m) for m in TensorMapIm2ColWideMode] == [0, 1]


@pytest.mark.parametrize(
    "dtype, expected",
    [
        (np.uint8, TensorMapDataType.UINT8),
        (np.uint16, TensorMapDataType.UINT16),
        (np.uint32, TensorMapDataType.UINT32),
        (np.int32, TensorMapDataType.INT32),
        (np.uint64, TensorMapDataType.UINT64),
        (np.int64, TensorMapDataType.INT64),
        (np.float16, TensorMapDataType.FLOAT16),
        (np.float32, TensorMapDataType.FLOAT32),
        (np.float64, TensorMapDataType.FLOAT64),
    ],
)
def test_dtype_table(dtype, expected):
    assert _numpy_dtype_to_tma()[np.dtype(dtype)] is expected


def test_dtype_table_has_no_int8_or_int16():
    assert np.dtype(np.int8) not in _numpy_dtype_to_tma()
    assert np.dtype(np.int16) not in _numpy_dtype_to_tma()


def test_options_validation():
    opts = TensorMapDescriptorOptions(box_dim=[32, np.int64(16)], data_type="float32")
    assert opts.box_dim == (32, 16) and opts.data_type == np.dtype(np.float32)
    assert opts.swizzle is TensorMapSwizzle.NONE and opts.element_strides is None
    assert TensorMapDescriptorOptions((8,), data_type=TensorMapDataType.UINT8).data_type == 0
    with pytest.raises(TypeError, match="box_dim must be a tuple of ints"):
        TensorMapDescriptorOptions(box_dim=8)
    with pytest.raises(TypeError, match=r"box_dim\[1\] must be an int"):
        TensorMapDescriptorOptions(box_dim=(8, 2.0))
    with pytest.raises(TypeError, match=r"element_strides\[0\] must be an int"):
        TensorMapDescriptorOptions(box_dim=(8,), element_strides=("1",))
    with pytest.raises(TypeError, match="data_type must be"):
        TensorMapDescriptorOptions(box_dim=(8,), data_type=42)
    for name in ("interleave", "swizzle", "l2_promotion", "oob_fill"):
        with pytest.raises(TypeError, match=f"{name} must be a TensorMap"):
            TensorMapDescriptorOptions(box_dim=(8,), **{name: 0})


def test_direct_construction_raises():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        TensorMapDescriptor()


def test_as_tensor_map_argument_checks():
    host = StridedMemoryView.from_dlpack(np.zeros((64, 64), dtype=np.float32), stream_ptr=-1)
    with pytest.raises(TypeError, match="Specify either options or the individual"):
        host.as_tensor_map(box_dim=(8, 8), options=TensorMapDescriptorOptions(box_dim=(8, 8)))
    with pytest.raises(TypeError, match="Specify either options or the individual"):
        host.as_tensor_map(options={"box_dim": (8, 8)}, swizzle=TensorMapSwizzle.SWIZZLE_32B)
    with pytest.raises(TypeError, match="box_dim is required unless options is provided"):
        host.as_tensor_map()
    with pytest.raises(TypeError, match="Tensor map descriptor options"):
        host.as_tensor_map(options=5)
    with pytest.raises(ValueError, match="must be device-accessible"):
        host.as_tensor_map(box_dim=(8, 8))
    with pytest.raises(ValueError, match="must be device-accessible"):
        host.as_tensor_map(options={"box_dim": (8, 8), "data_type": np.float32})


def fake_view(shape, strides=None, dtype=np.float32, ptr=0x10000, device=(2, 0), accessible=True):
    return SimpleNamespace(
        shape=shape,
        strides=strides,
        dtype=np.dtype(dtype) if dtype is not None else None,
        ptr=ptr,
        is_device_accessible=accessible,
        exporting_obj=None,
        __dlpack_device__=lambda: device,
    )


def test_misaligned_pointer_rejected():
    with pytest.raises(ValueError, match="16-byte aligned, got address 0x10008"):
        TensorMapDescriptor._from_tiled(fake_view((64,), ptr=0x10008), (16,))


def test_require_view_device():
    _require_view_device(fake_view((4,), device=(2, 1)), 1, "op")
    _require_view_device(fake_view((4,), device=(3, 0)), 1, "op")  # pinned host memory
    _require_view_device(fake_view((4,), device=(13, 0)), 1, "op")  # managed memory
    with pytest.raises(ValueError, match="op expects tensor on device 0, got 1"):
        _require_view_device(fake_view((4,), device=(2, 1)), 0, "op")


def test_byte_layout():
    # C-contiguous float32 (70, 100): rows of 400 bytes.
    assert _byte_layout(fake_view((70, 100)), 4) == ((70, 100), (400, 4))
    # A column slice keeps the row pitch of its parent.
    assert _byte_layout(fake_view((70, 32), strides=(100, 1)), 4) == ((70, 32), (400, 4))
    # uint8 bytes read as float32: the innermost extent counts floats.
    assert _byte_layout(fake_view((8, 64), dtype=np.uint8), 4) == ((8, 16), (64, 1))
    with pytest.raises(ValueError, match="innermost dimension must be contiguous"):
        _byte_layout(fake_view((8, 8), strides=(16, 2)), 4)
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        _byte_layout(fake_view((8, 3)), 4)  # rows of 12 bytes
    with pytest.raises(ValueError, match="whole number"):
        _byte_layout(fake_view((8, 6), dtype=np.uint8), 4)
    c_dims, c_strides = _driver_layout((2, 70, 100), (28000, 400, 4))
    assert list(c_dims[0:3]) == [100, 70, 2]  # innermost first
    assert list(c_strides[0:2]) == [400, 28000]


def test_element_strides():
    assert _element_strides(None, 3) == (1, 1, 1)
    assert _element_strides((2, 1), 2) == (2, 1)
    with pytest.raises(ValueError, match="element_strides must have 2 elements, got 1"):
        _element_strides((1,), 2)
    with pytest.raises(ValueError, match=r"element_strides\[0\] must be in \[1, 8\]"):
        _element_strides((9, 1), 2)


# --------------------------------------------------------------------------
# Launch packing (no GPU: a fake kernel and hand-made objects).
# --------------------------------------------------------------------------
def make_kernel(param_info=False):
    k = Kernel._from_library(ffi.cast("CUkernel", 0x1230), None)
    k._param_info = param_info
    return k


def offsets(plan):
    return [plan.layout.offsets[i] for i in range(plan.nargs)]


def fake_texture(handle, buffer=None):
    tex = object.__new__(TextureObject)
    tex._handle = handle
    tex._buffer = buffer
    return tex


def fake_tensor_map(payload):
    desc = object.__new__(TensorMapDescriptor)
    desc._karg = payload
    return desc


def test_kinds_are_declared():
    assert getattr(TextureObject, KERNEL_ARG_MARKER) == "u64"
    assert getattr(SurfaceObject, KERNEL_ARG_MARKER) == "u64"
    assert getattr(TensorMapDescriptor, KERNEL_ARG_MARKER) == (128, 64)


def test_pack_texture_surface_and_tensor_map():
    surf = object.__new__(SurfaceObject)
    surf._handle = 0xBEEF
    payload = bytes(range(128))
    args = (np.int32(7), fake_texture(0x55), surf, fake_tensor_map(payload), np.float32(2.5))
    plan, blob = _packed_arguments(make_kernel(), args)
    off = offsets(plan)
    assert blob[off[0] : off[0] + 4] == struct.pack("=i", 7)
    assert blob[off[1] : off[1] + 8] == struct.pack("=Q", 0x55)
    assert blob[off[2] : off[2] + 8] == struct.pack("=Q", 0xBEEF)
    assert blob[off[3] : off[3] + 128] == payload
    assert (off[3] - off[0]) % 64 == 0  # 64-byte aligned in the parameter buffer
    assert blob[off[4] : off[4] + 4] == struct.pack("=f", 2.5)


def test_tensor_map_uses_parameter_buffer_when_offsets_match():
    # int at 0, CUtensorMap at 64 (alignas 64), int after it at 192.
    info = [ParamInfo(0, 4), ParamInfo(64, 128), ParamInfo(192, 4)]
    args = (np.int32(1), fake_tensor_map(b"\x01" * 128), np.int32(2))
    plan, blob = _packed_arguments(make_kernel(info), args)
    off = offsets(plan)
    assert [o - off[0] for o in off] == [0, 64, 192]
    assert plan.layout.bufsize == 196
    with pytest.raises(TypeError, match="kernel argument 0 is a TensorMapDescriptor of 128"):
        _packed_arguments(make_kernel([ParamInfo(0, 8)]), (fake_tensor_map(b"\0" * 128),))


def test_closed_objects_raise_at_launch():
    host = np.zeros(64, dtype=np.uint8)
    buf = Buffer.from_handle(host.ctypes.data, host.nbytes)
    k = make_kernel()
    _packed_arguments(k, (fake_texture(0x77, buf),))
    buf.close()  # a texture keeps its memory (its own claim): still a valid argument
    _packed_arguments(k, (fake_texture(0x77, buf),))
    with pytest.raises(RuntimeError, match="TextureObject argument is closed"):
        _packed_arguments(k, (fake_texture(0),))
    surf = object.__new__(SurfaceObject)
    surf._handle = 0
    with pytest.raises(RuntimeError, match="SurfaceObject argument is closed"):
        _packed_arguments(k, (surf,))
    assert ResourceDescriptor  # the texture package is importable beside the launcher
