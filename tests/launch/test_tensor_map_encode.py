# SPDX-License-Identifier: Apache-2.0
"""The tiled encode of ``StridedMemoryView.as_tensor_map`` without a GPU: a
stand-in for the extension's two tensor-map calls records what they are
given.  Checked: the packed driver-order arrays, the layout kept on the view
and the boxes kept between calls, and that every check still runs, in order,
on each call."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from _helpers import FlagResource

import cuda_core._tensor_map as tm
import cuda_core._tensor_map_layout as tml
from cuda_core import Buffer, CUDAError
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._tensor_map import (
    TensorMapDataType,
    TensorMapDescriptor,
    TensorMapDescriptorOptions,
    TensorMapSwizzle,
)
from cuda_core.utils import StridedMemoryView

ADDRESS = 0x7F0000010000
CONTEXT = 0x5000


class StandIn:
    """The extension's tensor-map calls: a context on ``device``, maps of the call number."""

    def __init__(self):
        self.ctx, self.status, self.device, self.encode_status = CONTEXT, 0, 0, 0
        self.encodes, self.calls = [], []

    def cc_context_device(self, out):
        self.calls.append("context")
        out[0], out[1] = self.status, self.device
        return self.ctx

    def cc_tensor_map_encode_tiled(self, out, dtype, rank, address, layout, box, *enums):
        self.calls.append("encode")
        if self.encode_status:
            return self.encode_status
        self.encodes.append(
            SimpleNamespace(
                dtype=dtype,
                rank=rank,
                address=address,
                layout_array=layout,
                layout=list(layout[0 : 2 * rank - 1 if rank > 1 else 2]),
                box=list(box[0 : 2 * rank]),
                enums=enums,
            )
        )
        ffi.memmove(out, bytes([len(self.encodes)]) * 128, 128)
        return 0

    def cc_tensor_map_encode_tiled_here(self, out2, device, out, *encode_args):
        """As tensor_map.c's: 0 for any failure, else the context."""
        self.calls.append("here")
        ctx = self.cc_context_device(out2)
        if not ctx or out2[0] or (device >= 0 and out2[1] != device):
            return 0
        if self.cc_tensor_map_encode_tiled(out, *encode_args):
            return 0
        return ctx

    def cuTensorMapReplaceAddress(self, tensor_map, address):
        self.replaced = (bytes(ffi.buffer(tensor_map, 128)), int(ffi.cast("intptr_t", address)))
        ffi.memmove(tensor_map, b"\xee" * 128, 128)
        return 0


@pytest.fixture
def stand_in(monkeypatch):
    tml._BOX_ARRAYS.clear()  # no box kept from an earlier test
    fake = StandIn()
    for module in (tm, tml):  # both call the extension's tensor-map functions
        monkeypatch.setattr(module, "lib", fake)
    return fake


def device_view(shape=(70, 100), dtype=np.float32, address=ADDRESS, device_id=0):
    mr = FlagResource(device=True, host=False, managed=False, device_id=device_id)
    buf = Buffer.from_handle(address, 1 << 20, mr=mr)
    return StridedMemoryView.from_buffer(buf, shape, dtype=np.dtype(dtype))


def test_encode_gets_driver_order_arrays(stand_in):
    desc = device_view().as_tensor_map(box_dim=(16, 32), element_strides=(1, 2))
    (call,) = stand_in.encodes
    assert (call.dtype, call.rank, call.address) == (TensorMapDataType.FLOAT32, 2, ADDRESS)
    assert call.layout == [100, 70, 400]  # dims innermost first, then the row pitch
    assert call.box == [32, 16, 2, 1]  # box innermost first, then element strides
    assert call.enums == (0, 0, 0, 0)
    assert desc._karg == b"\x01" * 128
    assert desc._context == CONTEXT and desc._device_id == 0
    assert repr(desc) == "TensorMapDescriptor(tiled, rank=2, dtype=FLOAT32, swizzle=NONE)"


def test_rank_one_passes_a_stride_slot():
    packed = tml._packed_layout((64,), (4,))
    assert list(packed[0:2]) == [64, 0]


def test_layout_is_kept_on_the_view(stand_in):
    view = device_view()
    view.as_tensor_map(box_dim=(16, 32))
    kept = view._tma_layout
    assert kept[:3] == (TensorMapDataType.FLOAT32, 4, 2)
    TensorMapDescriptor._from_tiled(view, (8, 32), swizzle=TensorMapSwizzle.SWIZZLE_128B)
    assert view._tma_layout is kept
    assert stand_in.encodes[1].layout_array is stand_in.encodes[0].layout_array
    # Another data type: its own layout, not kept.
    view.as_tensor_map(box_dim=(16, 16), data_type=TensorMapDataType.UINT8)
    assert stand_in.encodes[2].layout == [400, 70, 400]
    assert view._tma_layout is kept


def test_kept_box_is_checked_against_each_rank(stand_in):
    device_view().as_tensor_map(box_dim=(16, 32))
    with pytest.raises(ValueError, match="box_dim must have 3 elements"):
        device_view((2, 70, 100)).as_tensor_map(box_dim=(16, 32))
    with pytest.raises(ValueError, match="swizzle span"):
        device_view().as_tensor_map(box_dim=(16, 32), swizzle=TensorMapSwizzle.SWIZZLE_32B)
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        device_view((70, 100), np.uint8).as_tensor_map(box_dim=(16, 32), data_type=np.uint8)


def test_changed_options_are_not_taken_for_a_kept_box(stand_in):
    device_view().as_tensor_map(box_dim=(16, 32))
    opts = TensorMapDescriptorOptions(box_dim=(16, 32))
    opts.box_dim = (16.0, 32.0)  # equal to the kept box's key, but floats
    with pytest.raises(TypeError):
        device_view().as_tensor_map(options=opts)
    opts.box_dim = [16, 32]  # a list: no key at all
    device_view().as_tensor_map(options=opts)
    assert stand_in.encodes[-1].box == [32, 16, 1, 1]


def test_context_is_checked_before_the_box(stand_in):
    stand_in.ctx = 0
    with pytest.raises(RuntimeError, match="requires an active CUDA context"):
        device_view().as_tensor_map(box_dim=(512, 32))
    stand_in.status = lib.CUDA_ERROR_INVALID_CONTEXT
    with pytest.raises(CUDAError) as info:
        device_view().as_tensor_map(box_dim=(16, 32))
    assert "cuCtxGetDevice" not in str(info.value)
    stand_in.ctx = CONTEXT
    with pytest.raises(CUDAError, match=r"\[cuCtxGetDevice\]"):
        device_view().as_tensor_map(box_dim=(16, 32))
    assert stand_in.encodes == []


def test_view_device_is_checked_on_each_call(stand_in):
    view = device_view()
    view.as_tensor_map(box_dim=(16, 32))
    view._buffer.close()
    with pytest.raises(BufferError, match="closed"):
        view.as_tensor_map(box_dim=(16, 32))
    with pytest.raises(ValueError, match="_from_tiled expects tensor on device 0, got 1"):
        device_view(device_id=1).as_tensor_map(box_dim=(16, 32))


def test_a_seen_box_on_a_kept_layout_is_one_call(stand_in):
    view = device_view()
    view.as_tensor_map(box_dim=(16, 32))
    assert stand_in.calls == ["context", "encode"]
    stand_in.calls.clear()
    desc = view.as_tensor_map(box_dim=(16, 32), swizzle=TensorMapSwizzle.SWIZZLE_128B)
    assert stand_in.calls == ["here", "context", "encode"]
    assert stand_in.encodes[1].layout_array is stand_in.encodes[0].layout_array
    assert stand_in.encodes[1].enums == (0, TensorMapSwizzle.SWIZZLE_128B, 0, 0)
    assert desc._karg == b"\x02" * 128
    assert (desc._context, desc._device_id) == (CONTEXT, 0)
    assert repr(desc) == "TensorMapDescriptor(tiled, rank=2, dtype=FLOAT32, swizzle=SWIZZLE_128B)"
    # A seen box that does not fit this call goes the long way, and fails there.
    with pytest.raises(ValueError, match="swizzle span"):
        view.as_tensor_map(box_dim=(16, 32), swizzle=TensorMapSwizzle.SWIZZLE_32B)
    device_view((64,)).as_tensor_map(box_dim=(32,))
    with pytest.raises(ValueError, match="box_dim must have 2 elements"):
        view.as_tensor_map(box_dim=(32,))


def test_one_call_failures_are_raised_in_order(stand_in):
    view = device_view()
    view.as_tensor_map(box_dim=(16, 32))
    stand_in.encode_status = lib.CUDA_ERROR_INVALID_VALUE
    with pytest.raises(CUDAError, match=r"\[cuTensorMapEncodeTiled\]"):
        view.as_tensor_map(box_dim=(16, 32))
    stand_in.encode_status = 0
    stand_in.ctx = 0
    view._buffer.close()
    with pytest.raises(RuntimeError, match="requires an active CUDA context"):
        view.as_tensor_map(box_dim=(16, 32))  # the context first, then the closed Buffer
    stand_in.ctx = CONTEXT
    with pytest.raises(BufferError, match="closed"):
        view.as_tensor_map(box_dim=(16, 32))
    stand_in.device = 1
    on_one = device_view(device_id=1)
    on_one.as_tensor_map(box_dim=(16, 32))
    stand_in.device = 0
    with pytest.raises(ValueError, match="_from_tiled expects tensor on device 0, got 1"):
        on_one.as_tensor_map(box_dim=(16, 32))


def test_dlpack_device_is_classified_once():
    view = device_view()
    assert view.__dlpack_device__() == (2, 0)
    assert view._dl_device == (2, 0)
    view._buffer.close()
    with pytest.raises(BufferError, match="closed"):
        view.__dlpack_device__()


def test_replace_address_starts_from_the_encoded_bytes(stand_in, monkeypatch):
    monkeypatch.setattr(tml, "_current_ctx", lambda: ffi.cast("CUcontext", CONTEXT))
    desc = device_view().as_tensor_map(box_dim=(16, 32))
    assert desc._map is None  # made on first use
    desc.replace_address(device_view(address=ADDRESS + 4096))
    assert stand_in.replaced == (b"\x01" * 128, ADDRESS + 4096)
    assert desc._karg == b"\xee" * 128
    assert int(ffi.cast("intptr_t", desc._map)) % 128 == 0
