# SPDX-License-Identifier: Apache-2.0
"""StridedMemoryView behaves as cuda.core's: the array interface and the CUDA Array Interface.

Views of host memory made through the array interfaces ask the driver for
the current device (as cuda.core does), so their success paths are GPU
tests; every check that comes before that question runs everywhere.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _view_setup import _DROP, ArrayInterface, CudaArrayInterface, _ai, _cai

from cuda_core import Buffer, CUDAError
from cuda_core.utils import StridedMemoryView


# ==========================================================================
# 3a. from_array_interface
# ==========================================================================
def test_array_interface_must_be_a_dict():
    with pytest.raises(TypeError, match="^Expected dict, got mappingproxy$"):
        StridedMemoryView.from_array_interface(
            ArrayInterface(type("M", (), {}).__dict__)  # a read-only mapping, not a dict
        )


def test_array_interface_version_and_mask():
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(BufferError, match="^only NumPy Array Interface v3 or above is supported$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, version=2)))
    with pytest.raises(KeyError, match="version"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, version=_DROP)))
    with pytest.raises(BufferError, match="^mask is not supported$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, mask=object())))


def test_array_interface_layout_is_checked_before_data():
    x = np.arange(3, dtype=np.float32)
    # data=None would fail to unpack; the layout's error comes first.
    with pytest.raises(TypeError, match="^Expected tuple, got list$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, shape=[3], data=None)))
    with pytest.raises(ValueError, match="^strides must be divisible by itemsize$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, strides=(6,), data=None)))
    with pytest.raises(TypeError, match="typestr"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, typestr=b"<f4", data=None)))
    # ... and the typestr is read before the shape is checked.
    with pytest.raises(TypeError, match="typestr"):
        StridedMemoryView.from_array_interface(
            ArrayInterface(_ai(x, typestr=5, shape=[3], data=None))
        )


def test_array_interface_shape_rules():
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(ValueError, match="^Extents must be non-negative$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, shape=(-1,))))
    with pytest.raises(ValueError, match="^Unsupported number of dimensions: 65"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, shape=(1,) * 65)))


def test_array_interface_strides_rules():
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(
        ValueError,
        match=r"^Strides, if provided, must have the same length as shape\. Shape has 1 "
        r"dimensions, but strides has 2 elements\.$",
    ):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, strides=(4, 4))))
    with pytest.raises(TypeError, match="^Expected tuple, got list$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, strides=[4])))
    with pytest.raises(ValueError, match="^strides must be divisible by itemsize$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, strides=(2,))))


def test_array_interface_typestr_rules():
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(TypeError, match="expected str, got bytes"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, typestr=b"<f4")))
    with pytest.raises(ValueError, match="^itemsize must be positive$"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, typestr="|V0")))


def test_array_interface_data_is_unpacked():
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(TypeError, match="cannot unpack non-iterable NoneType object"):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, data=None)))
    with pytest.raises(ValueError):
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, data=(1, 2, 3))))


def test_array_interface_needs_a_current_context():
    """Without a current context the device question fails with CUDAError, as in cuda.core."""
    x = np.arange(3, dtype=np.float32)
    seen = []

    def run():  # a fresh thread has no current context
        try:
            StridedMemoryView.from_array_interface(x)
        except BaseException as e:  # noqa: BLE001 - reported to the main thread
            seen.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert len(seen) == 1 and isinstance(seen[0], CUDAError), seen


@pytest.mark.gpu
def test_array_interface_views(device):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # C-contiguous byte strides are kept (divided by the itemsize), never None.
    v = StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, strides=(16, 4)), x))
    assert v.strides == (4, 1) and v.shape == (3, 4) and v.dtype == np.float32
    assert v.ptr == x.ctypes.data and not v.readonly
    assert v.device_id == device.device_id and not v.is_device_accessible
    # no strides: None
    assert (
        StridedMemoryView.from_array_interface(ArrayInterface(_ai(x, strides=None))).strides is None
    )
    # data as a 2-list, readonly by truthiness, and "offset" ignored
    w = StridedMemoryView.from_array_interface(
        ArrayInterface(_ai(x, data=[x.ctypes.data, 1], offset=8), x)
    )
    assert w.ptr == x.ctypes.data and w.readonly is True
    assert (
        StridedMemoryView.from_array_interface(
            ArrayInterface(_ai(x, data=(x.ctypes.data, 0)))
        ).readonly
        is False
    )
    # zero-size and 0-d: no special casing
    z = np.zeros((0, 3), dtype=np.float32)
    vz = StridedMemoryView.from_array_interface(ArrayInterface(_ai(z, strides=(12, 4))))
    assert vz.size == 0 and vz.strides == (3, 1)
    s = np.array(2.5, dtype=np.float64)
    vs = StridedMemoryView.from_array_interface(s)
    assert vs.shape == () and vs.size == 1 and vs.ptr == s.ctypes.data


# ==========================================================================
# 3b. CUDA Array Interface
# ==========================================================================
def test_cai_must_be_a_dict():
    with pytest.raises(TypeError, match="^Expected dict, got list$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface([]), -1)


def test_cai_version_mask_and_stream_none():
    with pytest.raises(BufferError, match="^only CUDA Array Interface v3 or above is supported$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai(version=2)), -1)
    with pytest.raises(BufferError, match="^mask is not supported$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai(mask=[1])), -1)
    with pytest.raises(BufferError, match="^stream=None is ambiguous with view\\(\\)$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai()), None)


def test_cai_layout_checked_eagerly():
    with pytest.raises(TypeError, match="^Expected tuple, got list$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai(shape=[4])), -1)
    with pytest.raises(ValueError, match="^strides must be divisible by itemsize$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai(strides=(6,))), -1)
    with pytest.raises(ValueError, match="^Extents must be non-negative$"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai(shape=(-2,))), -1)
    with pytest.raises(TypeError, match="cannot unpack non-iterable NoneType object"):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(_cai(data=None)), -1)


@pytest.mark.gpu
def test_cai_strides_kept_and_zero_negative_strides(device, stream):
    buf = device.allocate(64, stream=stream)
    stream.sync()
    base = _cai(shape=(4, 4), data=(buf.handle, False))
    v = StridedMemoryView.from_cuda_array_interface(
        CudaArrayInterface({**base, "strides": (16, 4)}), -1
    )
    assert v.strides == (4, 1)  # C-contiguous, kept
    z = StridedMemoryView.from_cuda_array_interface(
        CudaArrayInterface({**base, "strides": (0, 4)}), -1
    )
    assert z.strides == (0, 1)
    n = StridedMemoryView.from_cuda_array_interface(
        CudaArrayInterface({**base, "data": (buf.handle + 48, 1), "strides": (-16, 4)}), -1
    )
    assert n.strides == (-4, 1) and n.ptr == buf.handle + 48 and n.readonly is True
    assert n.device_id == device.device_id and n.is_device_accessible
    buf.close()


@pytest.mark.gpu
def test_cai_producer_stream_must_be_positive(device, stream):
    buf = device.allocate(16, stream=stream)
    stream.sync()
    cai = _cai(data=(buf.handle, False), stream=0)
    with pytest.raises(AssertionError):
        StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(cai), int(stream.handle))
    # -1 skips the producer stream entirely
    StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(cai), -1)
    buf.close()


@pytest.mark.gpu
def test_cai_orders_producer_before_consumer(device):
    """The consumer stream waits for work queued on the producer stream."""
    producer = device.create_stream()
    consumer = device.create_stream()
    n = 1 << 22
    src = device.allocate(n, stream=producer)
    dst = device.allocate(n, stream=consumer)
    src.fill(7, stream=producer)
    cai = _cai(shape=(n,), typestr="|u1", data=(src.handle, False), stream=int(producer.handle))
    StridedMemoryView.from_cuda_array_interface(CudaArrayInterface(cai), int(consumer.handle))
    dst.copy_from(src, stream=consumer)
    consumer.sync()
    host = np.empty(n, dtype=np.uint8)
    hb = Buffer.from_handle(host.ctypes.data, n)
    hb.copy_from(dst, stream=consumer)
    consumer.sync()
    assert (host == 7).all()
    src.close(consumer)
    dst.close(consumer)
    producer.close()
    consumer.close()
