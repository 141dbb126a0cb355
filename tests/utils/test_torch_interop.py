# SPDX-License-Identifier: Apache-2.0
"""Interoperability with PyTorch: streams both ways, memory both ways.

Skipped with a reason where PyTorch (with CUDA) is not installed, e.g. on PyPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core.utils import StridedMemoryView, _memoryview_torch

pytestmark = pytest.mark.gpu


@pytest.fixture
def torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed in this interpreter")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA support")
    return torch


def test_torch_stream_accepted_by_cuda_core(device, torch):
    ts = torch.cuda.Stream()
    if not hasattr(ts, "__cuda_stream__"):
        pytest.skip("this PyTorch version does not implement __cuda_stream__")
    ours = device.create_stream(ts)
    assert ours.handle == ts.cuda_stream
    with torch.cuda.stream(ts):
        x = torch.arange(1 << 20, device="cuda", dtype=torch.float32) * 2
    ours.record().sync()  # ordered after PyTorch's work on the same stream
    assert float(x[-1].item()) == float(2 * ((1 << 20) - 1))
    ours.close()


def test_cuda_core_stream_accepted_by_torch(device, stream, torch):
    ext = torch.cuda.ExternalStream(stream.handle)
    with torch.cuda.stream(ext):
        y = torch.full((1000,), 3, device="cuda", dtype=torch.int32)
        total = y.sum()
    stream.sync()
    assert int(total.item()) == 3000


def test_buffer_to_torch_zero_copy(device, stream, torch):
    n = 4096
    buf = device.allocate(n, stream=stream)
    buf.fill(7, stream=stream)
    stream.sync()
    t = torch.from_dlpack(buf)
    assert t.data_ptr() == buf.handle
    assert t.device.type == "cuda"
    np.testing.assert_array_equal(t.cpu().numpy().view(np.uint8), np.full(n, 7, np.uint8))
    buf.close()


def test_torch_tensor_viewed_without_copy(device, torch):
    t = torch.arange(1000, device="cuda", dtype=torch.float32).reshape(10, 100)
    torch.cuda.synchronize()
    view = StridedMemoryView.from_dlpack(t, stream_ptr=-1)
    assert view.ptr == t.data_ptr()
    assert view.shape == (10, 100)
    assert view.dtype == np.float32
    assert view.is_device_accessible and view.device_id == t.device.index
    # PyTorch exports CUDA Array Interface v2, which views refuse; like
    # cuda.core, PyTorch 2.3-2.12 tensors are read directly instead.
    if _memoryview_torch._torch_supported() or t.__cuda_array_interface__["version"] >= 3:
        cai = StridedMemoryView.from_cuda_array_interface(t, stream_ptr=-1)
        assert cai.ptr == t.data_ptr() and cai.shape == (10, 100)
    else:
        with pytest.raises(BufferError, match="v3"):
            StridedMemoryView.from_cuda_array_interface(t, stream_ptr=-1)
