# SPDX-License-Identifier: Apache-2.0
"""StridedMemoryView: DLPack / CUDA Array Interface / array interface / Buffer views."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest
from _helpers import HostMemoryResource

from cuda_core._memory import _dlpack
from cuda_core.utils import StridedMemoryView, args_viewable_as_strided_memory


def _collect():
    for _ in range(3):
        gc.collect()


class Exporter:
    """A DLPack producer built on cuda_core's capsule helper (tracks its deleter).

    ``strides``: "numpy" (the array's, in elements), None (a NULL pointer)
    or a tuple given as is.
    """

    def __init__(self, arr, dtype=None, versioned_ok=True, device=(1, 0), strides="numpy"):
        self.arr = arr
        self.dtype = dtype
        self.versioned_ok = versioned_ok
        self.device = device
        self.strides = strides
        self.max_versions = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        self.max_versions.append(max_version)
        if max_version is not None and not self.versioned_ok:
            raise TypeError("no max_version support")
        a = self.arr
        strides = self.strides
        if strides == "numpy":
            strides = [s // a.itemsize for s in a.strides]
        dtype = self.dtype or (0, a.itemsize * 8, 1)
        return _dlpack.capsule_from_tensor(
            self,
            a.ctypes.data,
            self.device,
            dtype,
            a.shape,
            strides,
            versioned=max_version is not None and max_version >= (1, 0),
        )


class FakeCAI:
    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def _numpy_gave(view, x):
    """Whether the view holds the strides NumPy exported (None: NumPy gave none)."""
    expected = tuple(s // x.itemsize for s in x.strides)
    return view.strides == expected or (view.strides is None and x.flags.c_contiguous)


@pytest.mark.parametrize(
    "dtype",
    [
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
        np.bool_,
    ],
)
def test_from_dlpack_numpy_dtypes(dtype):
    x = np.zeros((3, 5), dtype=dtype)
    v = StridedMemoryView.from_dlpack(x, stream_ptr=-1)
    assert v.dtype == np.dtype(dtype)
    assert v.shape == (3, 5)
    assert _numpy_gave(v, x)
    assert v.size == 15
    assert v.ptr == x.ctypes.data
    assert v.device_id == -1
    assert not v.is_device_accessible
    assert not v.readonly
    assert v.exporting_obj is x


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[:, ::2],
        lambda a: a.T,
        lambda a: a[1:, 1:],
        lambda a: a[::-1][::-1],
        lambda a: a[0],
    ],
)
def test_from_dlpack_strided_views(make):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    x = make(base)
    v = StridedMemoryView.from_dlpack(x, stream_ptr=-1)
    assert v.shape == x.shape
    assert v.ptr == x.ctypes.data  # byte_offset is folded into ptr
    assert _numpy_gave(v, x)


def test_from_dlpack_scalar_and_empty():
    v0 = StridedMemoryView.from_dlpack(np.array(3.0), stream_ptr=-1)
    assert v0.shape == () and v0.size == 1 and v0.strides in (None, ())
    ve = StridedMemoryView.from_dlpack(np.zeros((0, 4)), stream_ptr=-1)
    assert ve.shape == (0, 4) and ve.size == 0


@pytest.mark.skipif(
    sys.implementation.name == "pypy",
    reason="NumPy on PyPy exports only legacy DLPack capsules, which cannot be read-only",
)
def test_from_dlpack_readonly_numpy():
    x = np.arange(4)
    x.flags.writeable = False
    v = StridedMemoryView.from_dlpack(x, stream_ptr=-1)
    assert v.readonly


def test_from_dlpack_cpu_requires_stream_decision():
    with pytest.raises(BufferError, match="ambiguous"):
        StridedMemoryView.from_dlpack(np.arange(3))


def test_from_dlpack_legacy_producer_and_deleter():
    x = np.arange(6, dtype=np.int32)
    exp = Exporter(x, versioned_ok=False)
    ref = weakref.ref(exp)
    v = StridedMemoryView.from_dlpack(exp, stream_ptr=-1)
    assert v.shape == (6,) and v.dtype == np.int32 and v.ptr == x.ctypes.data
    del exp
    _collect()
    assert ref() is not None  # the view keeps the exporter alive
    del v
    _collect()
    assert ref() is None  # ... and its deleter released it


def test_from_dlpack_unsupported_dtypes():
    # The view is made; its dtype raises when read (as in cuda.core).
    x = np.zeros(4, dtype=np.uint16)
    v = StridedMemoryView.from_dlpack(Exporter(x, dtype=(2, 8, 2)), stream_ptr=-1)
    with pytest.raises(NotImplementedError, match="lanes"):
        _ = v.dtype
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        v = StridedMemoryView.from_dlpack(Exporter(x, dtype=(4, 16, 1)), stream_ptr=-1)
        with pytest.raises(NotImplementedError, match="ml_dtypes"):
            _ = v.dtype
    v = StridedMemoryView.from_dlpack(Exporter(x, dtype=(2, 24, 1)), stream_ptr=-1)
    with pytest.raises(TypeError, match="float24 is not supported"):
        _ = v.dtype


def test_from_dlpack_unsupported_device():
    with pytest.raises(BufferError, match="device not supported"):
        StridedMemoryView.from_dlpack(Exporter(np.zeros(2), device=(4, 0)), stream_ptr=-1)


@pytest.mark.gpu
def test_from_array_interface(device):
    x = np.arange(24, dtype=np.int16).reshape(2, 3, 4)[:, ::2, 1:]
    v = StridedMemoryView.from_array_interface(x)
    assert v.shape == x.shape
    assert v.strides == tuple(s // 2 for s in x.strides)
    assert v.dtype == np.int16
    assert v.ptr == x.ctypes.data
    # As in cuda.core: the current device, though the memory is the host's.
    assert v.device_id == device.device_id and not v.is_device_accessible
    y = np.arange(3)
    y.flags.writeable = False
    assert StridedMemoryView.from_array_interface(y).readonly


def test_from_any_interface():
    x = np.arange(5)
    assert StridedMemoryView.from_any_interface(x, stream_ptr=-1).exporting_obj is x

    class OnlyArrayInterface:
        def __init__(self, a):
            self.a = a
            self.__array_interface__ = a.__array_interface__

    # __array_interface__ alone is not enough (as in cuda.core).
    for obj in (OnlyArrayInterface(np.ones(3)), object()):
        with pytest.raises(BufferError, match="does not support any data exchange protocol"):
            StridedMemoryView.from_any_interface(obj)


def test_from_buffer_and_view():
    buf = HostMemoryResource().allocate(48)
    np.asarray(buf)[:] = np.arange(48, dtype=np.uint8)
    v = StridedMemoryView.from_buffer(buf, (3, 4), dtype=np.int32)
    assert v.exporting_obj is buf
    assert v.ptr == buf.handle and v.shape == (3, 4) and v.strides is None
    assert v.dtype == np.int32 and v.device_id == -1 and not v.is_device_accessible
    np.testing.assert_array_equal(
        np.from_dlpack(v), np.arange(48, dtype=np.uint8).view(np.int32).reshape(3, 4)
    )
    t = StridedMemoryView.from_buffer(buf, (4, 3), (1, 4), itemsize=4)
    assert t.strides == (1, 4) and t.dtype is None
    with pytest.raises(BufferError, match="dtype"):
        t.__dlpack__()
    w = v.view(dtype=np.float32)
    assert w.dtype == np.float32 and w.shape == (3, 4) and w.ptr == v.ptr
    assert v.view() is v

    class Layout:
        shape = (12,)
        strides = None
        itemsize = 4

    assert v.view(Layout()).shape == (12,)
    with pytest.raises(ValueError, match="itemsize"):
        v.view(dtype=np.float64)


def test_from_buffer_validation():
    buf = HostMemoryResource().allocate(16)
    with pytest.raises(ValueError, match="itemsize or dtype"):
        StridedMemoryView.from_buffer(buf, (4,))
    with pytest.raises(ValueError, match="does not match"):
        StridedMemoryView.from_buffer(buf, (4,), itemsize=2, dtype=np.int32)
    with pytest.raises(ValueError, match="too small"):
        StridedMemoryView.from_buffer(buf, (5,), dtype=np.int32)
    with pytest.raises(ValueError, match="same length"):
        StridedMemoryView.from_buffer(buf, (2, 2), (1,), dtype=np.int32)
    # The buffer is duck-typed, as in cuda.core.
    with pytest.raises(AttributeError):
        StridedMemoryView.from_buffer(bytearray(16), (4,), dtype=np.int32)
    ro = StridedMemoryView.from_buffer(buf, (4,), dtype=np.int32, is_readonly=True)
    assert ro.readonly


def test_dlpack_export_round_trip_through_numpy():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    v = StridedMemoryView.from_dlpack(x, stream_ptr=-1)
    assert v.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(v)
    assert y.ctypes.data == x.ctypes.data
    np.testing.assert_array_equal(y, x)
    vs = StridedMemoryView.from_dlpack(x[:, 1::2], stream_ptr=-1)
    np.testing.assert_array_equal(np.from_dlpack(vs), x[:, 1::2])
    with pytest.raises(BufferError, match="copy=True"):
        v.__dlpack__(copy=True)


def test_deprecated_constructor():
    x = np.arange(3)
    with pytest.warns(DeprecationWarning):
        v = StridedMemoryView(x, stream_ptr=-1)
    assert v.shape == (3,)
    with pytest.warns(DeprecationWarning):
        StridedMemoryView()


def test_cai_validation():
    base = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}
    with pytest.raises(BufferError, match="ambiguous"):
        StridedMemoryView.from_cuda_array_interface(FakeCAI(base))
    with pytest.raises(BufferError, match="v3"):
        StridedMemoryView.from_cuda_array_interface(FakeCAI({**base, "version": 2}), -1)
    with pytest.raises(BufferError, match="mask"):
        StridedMemoryView.from_cuda_array_interface(FakeCAI({**base, "mask": object()}), -1)


def test_args_viewable_as_strided_memory():
    seen = {}

    @args_viewable_as_strided_memory((1,))
    def f(a, b, c=None):
        seen["a"] = a
        view = b.view(-1)
        assert isinstance(view, StridedMemoryView)
        return view.shape

    x = np.zeros((2, 3))
    assert f("first", x) == (2, 3)
    assert seen["a"] == "first"
    assert f.__name__ == "f"
    with pytest.raises(BufferError):
        f(1, object())


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
@pytest.mark.gpu
def test_view_of_device_buffer_and_cai(device, stream):
    buf = device.allocate(64, stream=stream)
    v = StridedMemoryView.from_buffer(buf, (16,), dtype=np.float32)
    assert v.is_device_accessible and v.device_id == device.device_id
    assert v.__dlpack_device__() == (2, device.device_id)
    cai = {
        "shape": (4, 4),
        "typestr": "<f4",
        "data": (buf.handle, False),
        "version": 3,
        "strides": None,
        "stream": int(stream.handle),
    }
    other = device.create_stream()
    w = StridedMemoryView.from_cuda_array_interface(FakeCAI(cai), other.handle)
    assert w.ptr == buf.handle and w.shape == (4, 4) and w.device_id == device.device_id
    assert w.is_device_accessible and w.dtype == np.float32
    # the same stream (no ordering needed) and the opt-out
    StridedMemoryView.from_cuda_array_interface(FakeCAI(cai), int(stream.handle))
    StridedMemoryView.from_cuda_array_interface(FakeCAI(cai), -1)
    other.sync()
    other.close()


@pytest.mark.gpu
def test_view_of_device_buffer_through_dlpack(device, stream):
    buf = device.allocate(32, stream=stream)
    v = StridedMemoryView.from_dlpack(buf, stream_ptr=int(stream.handle))
    assert v.ptr == buf.handle and v.shape == (32,) and v.dtype == np.int8
    assert v.device_id == device.device_id and v.is_device_accessible


@pytest.mark.gpu
def test_cupy_views(device, stream):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed in this interpreter")
    a = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    v = StridedMemoryView.from_dlpack(a, stream_ptr=int(stream.handle))
    assert v.ptr == a.data.ptr and v.shape == (3, 4) and v.dtype == np.float32
    w = StridedMemoryView.from_cuda_array_interface(a[:, ::2], stream_ptr=int(stream.handle))
    assert w.strides == (4, 2)
    b = cp.from_dlpack(v)
    assert b.data.ptr == a.data.ptr
