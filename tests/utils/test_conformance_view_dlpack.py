# SPDX-License-Identifier: Apache-2.0
"""StridedMemoryView behaves as cuda.core's: DLPack import and export, and the view's face.

The face: repr, from_buffer and the argument decorator.
"""

from __future__ import annotations

import gc
import re
import sys
import weakref

import numpy as np
import pytest
from _view_setup import ArrayInterface, HostMemoryResource, Producer, _ai, _tensor_of

from cuda_core._cuda_ffi import ffi
from cuda_core._memory import _dlpack
from cuda_core.utils import StridedMemoryView, args_viewable_as_strided_memory


# ==========================================================================
# 3c. DLPack import and from_any_interface
# ==========================================================================
def test_dlpack_strides_kept_as_given():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert StridedMemoryView.from_dlpack(Producer(x, (4, 1)), -1).strides == (4, 1)
    assert StridedMemoryView.from_dlpack(Producer(x, None), -1).strides is None
    e = np.zeros((0, 4), dtype=np.int32)
    assert StridedMemoryView.from_dlpack(Producer(e, (4, 1)), -1).strides == (4, 1)


def test_dlpack_asks_for_version_1_3_then_retries():
    x = np.arange(4, dtype=np.int16)
    p = Producer(x, (1,))
    StridedMemoryView.from_dlpack(p, -1)
    assert p.calls == [{"stream": None, "max_version": (1, 3)}]
    old = Producer(x, (1,), versioned_ok=False)
    v = StridedMemoryView.from_dlpack(old, -1)
    assert [c["max_version"] for c in old.calls] == [(1, 3), None]
    assert v.readonly is False  # a legacy capsule is never read-only


def test_dlpack_readonly_flag():
    x = np.arange(4, dtype=np.int16)
    assert StridedMemoryView.from_dlpack(Producer(x, (1,), readonly=True), -1).readonly is True
    assert StridedMemoryView.from_dlpack(Producer(x, (1,)), -1).readonly is False


def test_dlpack_stream_passing():
    x = np.arange(4, dtype=np.int16)
    cpu = Producer(x, (1,))
    StridedMemoryView.from_dlpack(cpu, -1)
    assert cpu.calls[-1]["stream"] is None
    with pytest.raises(BufferError, match="^stream=None is ambiguous with view\\(\\)$"):
        StridedMemoryView.from_dlpack(cpu, None)
    pinned = Producer(x, (1,), device=(3, 0))
    StridedMemoryView.from_dlpack(pinned, None)  # pinned/managed: no stream needed
    assert pinned.calls[-1]["stream"] is None


def test_dlpack_device_not_supported():
    with pytest.raises(BufferError, match="^device not supported$"):
        StridedMemoryView.from_dlpack(Producer(np.zeros(2), (1,), device=(4, 0)), -1)


def test_dlpack_not_a_capsule():
    class Liar:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, max_version=None):
            return object()

    with pytest.raises(BufferError):
        StridedMemoryView.from_dlpack(Liar(), -1)


@pytest.mark.parametrize(
    "dtype, exc, message",
    [
        ((0, 12, 1), TypeError, r"^int12 is not supported\.$"),
        ((1, 24, 1), TypeError, r"^uint24 is not supported\.$"),
        ((2, 8, 1), TypeError, r"^float8 is not supported\.$"),
        ((5, 32, 1), TypeError, r"^complex32 is not supported\.$"),
        ((6, 16, 1), TypeError, r"^16-bit bool is not supported$"),
        ((7, 8, 1), TypeError, r"^Unsupported dtype\. dtype code: 7$"),
        ((2, 32, 4), NotImplementedError, r"^vector dtypes \(lanes=4\) is not supported$"),
    ],
)
def test_dlpack_dtype_decoded_lazily(dtype, exc, message):
    x = np.zeros(8, dtype=np.uint8)
    v = StridedMemoryView.from_dlpack(Producer(x, (1,), dtype=dtype), -1)
    assert v.ptr == x.ctypes.data  # made without complaint
    with pytest.raises(exc, match=message):
        _ = v.dtype
    with pytest.raises(exc, match=message):  # and again: nothing is cached
        _ = v.dtype


def test_dlpack_bits_not_multiple_of_8_raise_on_layout():
    x = np.zeros(8, dtype=np.uint8)
    v = StridedMemoryView.from_dlpack(Producer(x, (1,), dtype=(1, 4, 1)), -1)
    with pytest.raises(ValueError, match="^dl_tensor.dtype.bits must be a multiple of 8$"):
        _ = v.shape


def test_dlpack_bfloat16():
    x = np.zeros(4, dtype=np.uint16)
    v = StridedMemoryView.from_dlpack(Producer(x, (1,), dtype=(4, 16, 1)), -1)
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(NotImplementedError, match="ml_dtypes"):
            _ = v.dtype
    else:
        assert v.dtype == np.dtype(ml_dtypes.bfloat16)


def test_no_protocol_message_everywhere():
    message = "^the input object does not support any data exchange protocol$"
    with pytest.raises(BufferError, match=message):
        StridedMemoryView.from_any_interface(object(), -1)
    with pytest.raises(BufferError, match=message):
        StridedMemoryView(object(), -1)

    @args_viewable_as_strided_memory((0,))
    def f(a):
        return a

    with pytest.raises(BufferError, match=message):
        f(object())


def test_from_any_interface_never_uses_array_interface():
    x = np.arange(3, dtype=np.float32)
    with pytest.raises(BufferError, match="does not support any data exchange protocol"):
        StridedMemoryView.from_any_interface(ArrayInterface(_ai(x), x), -1)
    # a DLPack exporter is taken through DLPack
    p = Producer(x, (1,))
    assert StridedMemoryView.from_any_interface(p, -1).exporting_obj is p


def test_args_viewable_indices_not_validated():
    @args_viewable_as_strided_memory([1])  # any iterable, read at each call
    def f(a, b):
        return b.view(-1).shape

    assert f(None, np.zeros((2, 5))) == (2, 5)
    g = args_viewable_as_strided_memory(7)  # no check when decorating ...
    h = g(lambda *a: a)
    with pytest.raises(TypeError):  # ... only when called
        h(1)


# ==========================================================================
# 3d. DLPack export
# ==========================================================================
def test_export_dl_device_always_refused_first():
    v = StridedMemoryView.from_dlpack(np.arange(4.0), -1)
    message = "^Sorry, not supported: dl_device other than None$"
    with pytest.raises(BufferError, match=message):
        v.__dlpack__(dl_device=v.__dlpack_device__())
    with pytest.raises(BufferError, match=message):  # checked before copy
        v.__dlpack__(dl_device=(1, 0), copy=True)
    with pytest.raises(BufferError, match="^Sorry, not supported: copy=True$"):
        v.__dlpack__(copy=True)
    for copy in (False, None):
        _dlpack.take_capsule(v.__dlpack__(copy=copy)).release()


def test_export_max_version():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = StridedMemoryView.from_dlpack(Producer(x, (3, 1), readonly=True), -1)
    assert v.readonly
    consumed, version = _tensor_of(v.__dlpack__())
    assert not consumed.versioned and version is None and consumed.flags == 0
    consumed.release()
    for mv in ((1, 0), (1, 3), (2, 0)):
        consumed, version = _tensor_of(v.__dlpack__(max_version=mv))
        assert consumed.versioned and version == (1, 3)
        assert consumed.flags == _dlpack.DLPACK_FLAG_BITMASK_READ_ONLY
        consumed.release()
    consumed, _ = _tensor_of(v.__dlpack__(max_version=(0, 9)))
    assert not consumed.versioned
    consumed.release()
    w = StridedMemoryView.from_dlpack(Producer(x, (3, 1)), -1)
    consumed, _ = _tensor_of(w.__dlpack__(max_version=(1, 3)))
    assert consumed.flags == 0
    consumed.release()
    for bad, shown in (([1, 0], "[1, 0]"), ("ab", "ab"), ((1, 0, 0), "(1, 0, 0)")):
        message = "^" + re.escape(f"Expected max_version tuple[int, int], got {shown}") + "$"
        with pytest.raises(BufferError, match=message):
            v.__dlpack__(max_version=bad)


def test_export_tensor_fields():
    buf = HostMemoryResource().allocate(64)
    # strides None: explicit C-contiguous strides in the tensor
    v = StridedMemoryView.from_buffer(buf, (2, 3), dtype=np.int16)
    consumed, _ = _tensor_of(v.__dlpack__(max_version=(1, 0)))
    t = consumed.tensor
    assert t.ndim == 2 and t.strides != ffi.NULL
    assert [t.shape[i] for i in range(2)] == [2, 3]
    assert [t.strides[i] for i in range(2)] == [3, 1]
    assert t.byte_offset == 0 and int(ffi.cast("uintptr_t", t.data)) == buf.handle
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 16, 1)
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    consumed.release()
    # 0-d: NULL shape and strides
    s = StridedMemoryView.from_buffer(buf, (), dtype=np.float64)
    consumed, _ = _tensor_of(s.__dlpack__())
    assert consumed.tensor.ndim == 0
    assert consumed.tensor.shape == ffi.NULL and consumed.tensor.strides == ffi.NULL
    consumed.release()
    # empty: NULL data, zero strides
    e = StridedMemoryView.from_buffer(buf, (0, 3), dtype=np.int16)
    consumed, _ = _tensor_of(e.__dlpack__())
    assert consumed.tensor.data == ffi.NULL
    assert [consumed.tensor.strides[i] for i in range(2)] == [0, 0]
    consumed.release()
    # no dtype
    n = StridedMemoryView.from_buffer(buf, (4,), itemsize=4)
    with pytest.raises(
        BufferError, match="^Cannot export StridedMemoryView via DLPack without dtype"
    ):
        n.__dlpack__()


def test_buffer_export_version_and_flags():
    buf = HostMemoryResource().allocate(10)
    consumed, version = _tensor_of(buf.__dlpack__(max_version=(1, 3)))
    t = consumed.tensor
    assert version == (1, 3) and consumed.flags == 0
    assert t.ndim == 1 and t.shape[0] == 10 and (t.dtype.code, t.dtype.bits) == (0, 8)
    consumed.release()
    with pytest.raises(BufferError, match="^Sorry, not supported: dl_device other than None$"):
        buf.__dlpack__(dl_device=(1, 0), copy=True)
    with pytest.raises(
        BufferError, match=r"^Expected max_version tuple\[int, int\], got \[1, 3\]$"
    ):
        buf.__dlpack__(max_version=[1, 3])


def test_export_round_trip_through_numpy():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    v = StridedMemoryView.from_dlpack(x, -1)
    np.testing.assert_array_equal(np.from_dlpack(v), x)


# ==========================================================================
# 9. The view's face: repr and from_buffer
# ==========================================================================
def test_repr_one_field_per_line():
    buf = HostMemoryResource().allocate(48)
    v = StridedMemoryView.from_buffer(buf, (3, 4), (4, 1), dtype=np.int32)
    lines = repr(v).split("\n")
    dtype_class = type(np.dtype(np.int32))  # numpy.dtypes.Int32DType on NumPy 2
    assert lines[0] == f"StridedMemoryView(ptr={buf.handle},"
    pad = " " * 18
    assert lines[1:] == [
        f"{pad}shape=(3, 4),",
        f"{pad}strides=(4, 1),",
        f"{pad}itemsize=4,",
        f"{pad}dtype={dtype_class.__module__}.{dtype_class.__name__},",
        f"{pad}device_id=-1,",
        f"{pad}is_device_accessible=False,",
        f"{pad}readonly=False,",
        f"{pad}exporting_obj=cuda_core._memory._buffer.Buffer)",
    ]


def test_from_buffer_shape_and_strides_must_be_tuples():
    buf = HostMemoryResource().allocate(48)
    with pytest.raises(
        TypeError, match=r"^Argument 'shape' has incorrect type \(expected tuple, got list\)$"
    ):
        StridedMemoryView.from_buffer(buf, [3, 4], dtype=np.int32)
    with pytest.raises(
        TypeError, match=r"^Argument 'strides' has incorrect type \(expected tuple, got list\)$"
    ):
        StridedMemoryView.from_buffer(buf, (3, 4), [4, 1], dtype=np.int32)
    v = StridedMemoryView.from_buffer(buf, (3, 4), (4, 1), dtype=np.int32)
    assert v.strides == (4, 1)  # C-contiguous, kept


def test_from_buffer_is_duck_typed():
    buf = HostMemoryResource().allocate(16)

    class Like:
        handle = buf.handle
        size = 16
        memory_resource = None
        device_id = -1
        is_device_accessible = False

    like = Like()
    v = StridedMemoryView.from_buffer(like, (4,), dtype=np.float32)
    assert v.ptr == buf.handle and v.exporting_obj is like and v.shape == (4,)


def test_from_buffer_negative_offsets_message():
    buf = HostMemoryResource().allocate(16)
    with pytest.raises(
        ValueError, match="^Allocation size for a layout that maps elements to negative"
    ):
        StridedMemoryView.from_buffer(buf, (4,), (-1,), dtype=np.float32)


def test_views_keep_exporter_alive_until_released():
    x = np.arange(6, dtype=np.int32)
    p = Producer(x, (1,))
    ref = weakref.ref(p)
    v = StridedMemoryView.from_dlpack(p, -1)
    del p
    gc.collect()
    assert ref() is not None
    del v
    for _ in range(3):
        gc.collect()
    assert ref() is None


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="checks CPython refcounts")
def test_export_holds_one_reference_to_the_view():
    v = StridedMemoryView.from_dlpack(np.arange(3.0), -1)
    before = sys.getrefcount(v)
    capsule = v.__dlpack__(max_version=(1, 0))
    assert sys.getrefcount(v) == before + 1
    del capsule
    assert sys.getrefcount(v) == before
