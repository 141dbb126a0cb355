# SPDX-License-Identifier: Apache-2.0
"""PyTorch tensors are read directly from their metadata, as cuda.core does.

The first tests use a stand-in ``torch`` module (a tensor type defined in a
module named ``torch``, backed by a NumPy array), so the bridge's rules run
everywhere, PyPy included; the stand-in's protocol methods fail loudly, to
show that they are bypassed.  The GPU tests use real PyTorch with CUDA
(CPython only; skipped where it is not importable).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from cuda_core import Buffer
from cuda_core.utils import StridedMemoryView, _memoryview_torch


class FakeDevice:
    def __init__(self, type, index=None):
        self.type = type
        self.index = index


class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


def _fake_torch(monkeypatch, version="2.5.1+cpu", current_stream=None):
    """Install a stand-in ``torch`` module; return its Tensor type."""
    torch = types.ModuleType("torch")
    torch.__version__ = version

    def no_current_stream(device):
        raise AssertionError("the current stream was asked for")

    torch.cuda = types.SimpleNamespace(current_stream=current_stream or no_current_stream)

    class Tensor:
        def __init__(self, arr, device=None, dtype=None):
            self._arr = arr
            self.device = device or FakeDevice("cpu")
            self.dtype = FakeDtype(dtype or arr.dtype.name)

        def data_ptr(self):
            return self._arr.ctypes.data

        @property
        def shape(self):
            return tuple(self._arr.shape)

        def stride(self):
            return tuple(s // self._arr.itemsize for s in self._arr.strides)

        def __dlpack__(self, *args, **kwargs):
            raise AssertionError("__dlpack__ was called")

        def __dlpack_device__(self):
            raise AssertionError("__dlpack_device__ was called")

        @property
        def __cuda_array_interface__(self):
            raise AssertionError("__cuda_array_interface__ was read")

        @property
        def __array_interface__(self):
            raise AssertionError("__array_interface__ was read")

    Tensor.__module__ = "torch"
    torch.Tensor = Tensor
    monkeypatch.setitem(sys.modules, "torch", torch)
    return Tensor


def test_cpu_tensor_needs_no_stream(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = Tensor(x)
    for make in (
        lambda: StridedMemoryView.from_dlpack(t),
        lambda: StridedMemoryView.from_cuda_array_interface(t),
        lambda: StridedMemoryView.from_array_interface(t),
        lambda: StridedMemoryView.from_any_interface(t),
    ):
        v = make()
        assert v.ptr == x.ctypes.data and v.exporting_obj is t
        assert v.shape == (3, 4) and v.strides == (4, 1)  # element strides, never None
        assert v.dtype == np.float32 and v.readonly is False
        assert v.device_id == -1 and not v.is_device_accessible


def test_strided_and_empty_tensors(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    x = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::3].T
    v = StridedMemoryView.from_dlpack(Tensor(x), -1)
    assert v.shape == (2, 4) and v.strides == (3, 6) and v.dtype == np.int64
    empty = Tensor(np.zeros((0, 5), dtype=np.int8))
    e = StridedMemoryView.from_dlpack(empty, -1)
    assert e.size == 0 and e.strides == empty.stride()


def test_cuda_tensor_stream_rules(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    t = Tensor(np.zeros(4, dtype=np.float32), device=FakeDevice("cuda", 1))
    with pytest.raises(
        BufferError,
        match=r"^stream_ptr=None is ambiguous for CUDA tensors; pass stream_ptr=-1 to opt out "
        r"of synchronization, or pass a valid stream pointer$",
    ):
        StridedMemoryView.from_dlpack(t)
    with pytest.raises(BufferError, match="ambiguous for CUDA tensors"):
        StridedMemoryView.from_array_interface(t)  # has no stream to give
    v = StridedMemoryView.from_cuda_array_interface(t, -1)  # -1: no ordering at all
    assert v.device_id == 1 and v.is_device_accessible


def test_cuda_tensor_orders_on_torchs_current_stream(monkeypatch):
    asked = []

    def current_stream(device):
        asked.append((device.type, device.index))
        return types.SimpleNamespace(cuda_stream=1234)

    Tensor = _fake_torch(monkeypatch, current_stream=current_stream)
    t = Tensor(np.zeros(4, dtype=np.float32), device=FakeDevice("cuda", 0))
    # The consumer is the producer: nothing to order, no driver call.
    v = StridedMemoryView.from_dlpack(t, 1234)
    assert asked == [("cuda", 0)] and v.device_id == 0


def test_other_devices_are_refused(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    for name, code in (("mps", 13), ("xpu", 12), ("meta", 14), ("npu", 20)):
        t = Tensor(np.zeros(2, dtype=np.float32), device=FakeDevice(name, 0))
        message = rf"^Unsupported device type from torch tensor \(AOTI device type id: {code}\)$"
        with pytest.raises(BufferError, match=message):
            StridedMemoryView.from_dlpack(t, -1)


def test_dtypes(monkeypatch):
    Tensor = _fake_torch(monkeypatch)
    raw = np.zeros(8, dtype=np.uint8)
    # complex32 has an itemsize but no NumPy dtype: raised on .dtype
    v = StridedMemoryView.from_dlpack(Tensor(raw.view(np.uint32), dtype="complex32"), -1)
    with pytest.raises(TypeError, match="^Unsupported AOTI dtype code: 8$"):
        _ = v.dtype
    b = StridedMemoryView.from_dlpack(Tensor(raw.view(np.uint16), dtype="bfloat16"), -1)
    assert b._layout.itemsize == 2
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(TypeError, match="^Unsupported AOTI dtype code: 15$"):
            _ = b.dtype
    else:
        assert b.dtype == np.dtype(ml_dtypes.bfloat16)
    # dtypes without an element size a view can hold fail at construction
    with pytest.raises(TypeError, match="^Unsupported AOTI dtype code: 24$"):
        StridedMemoryView.from_dlpack(Tensor(raw, dtype="float8_e4m3fn"), -1)
    with pytest.raises(TypeError, match="^Unsupported AOTI dtype code: 27$"):
        StridedMemoryView.from_dlpack(Tensor(raw.view(np.uint16), dtype="uint16"), -1)
    for name in ("bool", "uint8", "int16", "int32", "float16", "float64", "complex128"):
        arr = np.zeros(2, dtype=name)
        assert StridedMemoryView.from_dlpack(Tensor(arr), -1).dtype == np.dtype(name)


@pytest.mark.parametrize("version", ["2.2.0", "2.13.0", "1.13.1", "nightly"])
def test_unsupported_versions_use_the_protocols(monkeypatch, version):
    Tensor = _fake_torch(monkeypatch, version=version)
    t = Tensor(np.zeros(2, dtype=np.float32))
    with pytest.raises(AssertionError, match="__dlpack_device__ was called"):
        StridedMemoryView.from_dlpack(t, -1)


def test_only_torch_types_are_bridged(monkeypatch):
    _fake_torch(monkeypatch)

    class NotTorch:  # has data_ptr, but lives outside torch
        def data_ptr(self):
            raise AssertionError("read as a tensor")

        __cuda_array_interface__ = {
            "shape": (2,),
            "typestr": "<f4",
            "data": (0, False),
            "version": 2,
        }

    with pytest.raises(BufferError, match="v3 or above"):
        StridedMemoryView.from_cuda_array_interface(NotTorch(), -1)


# --------------------------------------------------------------------------
# Real PyTorch
# --------------------------------------------------------------------------
@pytest.fixture
def torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed in this interpreter")
    if not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA support")
    if not _memoryview_torch._torch_supported():
        pytest.skip(f"PyTorch {torch.__version__} is outside the versions read directly")
    return torch


@pytest.mark.gpu
def test_real_cpu_tensor(torch):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    v = StridedMemoryView.from_dlpack(t)  # no stream needed for a CPU tensor
    assert v.ptr == t.data_ptr() and v.shape == (3, 4) and v.strides == (4, 1)
    assert v.dtype == np.float32 and v.device_id == -1 and not v.is_device_accessible
    w = StridedMemoryView.from_array_interface(t.t())
    assert w.strides == (1, 4) and w.shape == (4, 3)
    np.testing.assert_array_equal(np.from_dlpack(v), t.numpy())


@pytest.mark.gpu
def test_real_cuda_tensor(device, torch):
    t = torch.arange(1000, device=f"cuda:{device.device_id}", dtype=torch.float32).reshape(10, 100)
    with pytest.raises(BufferError, match="ambiguous for CUDA tensors"):
        StridedMemoryView.from_dlpack(t)
    torch.cuda.synchronize()
    # PyTorch's CUDA Array Interface is v2: the bridge reads the tensor instead.
    v = StridedMemoryView.from_cuda_array_interface(t, -1)
    assert v.ptr == t.data_ptr() and v.shape == (10, 100) and v.strides == (100, 1)
    assert v.device_id == device.device_id and v.is_device_accessible
    assert v.dtype == np.float32 and v.exporting_obj is t


@pytest.mark.gpu
def test_real_cuda_tensor_orders_torch_stream_first(device, torch):
    """Work queued by PyTorch on its current stream precedes the consumer's."""
    ours = device.create_stream()
    side = torch.cuda.Stream(device=device.device_id)
    n = 1 << 24
    with torch.cuda.stream(side):
        t = torch.zeros(n, device=f"cuda:{device.device_id}", dtype=torch.float32)
        for _ in range(20):  # keep the producer stream busy for a while
            t.add_(1.0)
        v = StridedMemoryView.from_dlpack(t, int(ours.handle))
    host = np.empty(n, dtype=np.float32)
    dst = Buffer.from_handle(host.ctypes.data, host.nbytes)
    dst.copy_from(Buffer.from_handle(v.ptr, host.nbytes, owner=t), stream=ours)
    ours.sync()
    assert (host == 20.0).all()
    ours.close()


@pytest.mark.gpu
def test_real_view_exports_back_to_torch(device, torch):
    t = torch.arange(6, device=f"cuda:{device.device_id}", dtype=torch.int32).reshape(2, 3)
    torch.cuda.synchronize()
    v = StridedMemoryView.from_dlpack(t, -1)
    back = torch.from_dlpack(v)
    assert back.data_ptr() == t.data_ptr() and tuple(back.shape) == (2, 3)
    assert torch.equal(back.cpu(), t.cpu())
