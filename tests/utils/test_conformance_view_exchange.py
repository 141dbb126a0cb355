# SPDX-License-Identifier: Apache-2.0
"""The DLPack C exchange API of StridedMemoryView, called as a C consumer would.

The struct is read and its function pointers are called through cffi on
both interpreters; ``PyObject *`` arguments come from the extension's
hand-over helpers (``_dlpack.object_address`` / ``object_from_address``).
On CPython it is also reached the standard way: the capsule opened with
``ctypes.pythonapi`` and the functions called through ``ctypes.PYFUNCTYPE``,
which raises the exception a failing function sets.
"""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

from cuda_core._cuda_ffi import ffi
from cuda_core._memory import _dlpack
from cuda_core.utils import StridedMemoryView

CPYTHON = sys.implementation.name == "cpython"


def _api():
    return ffi.cast("DLPackExchangeAPI *", _dlpack.exchange_api_address())


def _call(fn, *args):
    """Call an exchange function; return (status, the exception it set or None).

    cffi on CPython refuses a result returned with an exception set and
    raises SystemError from it; on PyPy the exception stays pending in the
    thread and is taken from there.  A failure of the C function shows as
    status -1 either way.
    """
    try:
        rc = fn(*args)
    except SystemError as e:
        return -1, e.__cause__
    return rc, _dlpack.take_python_error()


class PyObj:
    """A ``void *`` holding a new reference to ``obj``, released on exit."""

    def __init__(self, obj):
        self.address = _dlpack.object_address(obj)
        self.ptr = ffi.cast("void *", self.address)

    def __enter__(self):
        return self.ptr

    def __exit__(self, *exc):
        _dlpack.object_from_address(self.address)


class HostBuffer:
    """Host memory (a NumPy array) with the attributes a view reads from a Buffer."""

    memory_resource = None
    device_id = -1
    is_device_accessible = False

    def __init__(self, arr):
        self.arr = arr
        self.handle = arr.ctypes.data
        self.size = arr.nbytes


def _host_view(shape=(2, 3), dtype=np.float32, readonly=False):
    x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    v = StridedMemoryView.from_buffer(HostBuffer(x), shape, dtype=x.dtype, is_readonly=readonly)
    return x, v


def _collect():
    for _ in range(3):
        gc.collect()


def test_attributes_are_one_capsule_on_the_class():
    cap = StridedMemoryView.__dict__["__dlpack_c_exchange_api__"]
    assert StridedMemoryView.__dict__["__c_dlpack_exchange_api__"] is cap
    assert type(cap).__name__ == "PyCapsule"
    assert '"dlpack_exchange_api"' in repr(cap)
    _, v = _host_view()
    assert v.__dlpack_c_exchange_api__ is cap  # reachable from instances too


def test_struct_header_and_pointers():
    api = _api()
    assert (api.header.version.major, api.header.version.minor) == (1, 3)
    assert api.header.prev_api == ffi.NULL
    for name in (
        "managed_tensor_allocator",
        "managed_tensor_from_py_object_no_sync",
        "managed_tensor_to_py_object_no_sync",
        "dltensor_from_py_object_no_sync",
        "current_work_stream",
    ):
        assert getattr(api, name) != ffi.NULL, name
    assert _dlpack.exchange_api_address() == _dlpack.exchange_api_address()  # static


def test_allocator_always_fails():
    seen = []

    @ffi.callback("void(void *, const char *, const char *)")
    def set_error(ctx, kind, message):
        seen.append((ctx, ffi.string(kind).decode(), ffi.string(message).decode()))

    out = ffi.new("DLManagedTensorVersioned **", ffi.cast("DLManagedTensorVersioned *", 1))
    proto = ffi.new("DLTensor *")
    ctx = ffi.cast("void *", 1234)
    rc, exc = _call(_api().managed_tensor_allocator, proto, out, ctx, set_error)
    message = "managed_tensor_allocator is not supported by StridedMemoryView"
    assert rc == -1 and out[0] == ffi.NULL
    assert seen == [(ctx, "NotImplementedError", message)]
    assert isinstance(exc, NotImplementedError) and str(exc) == message


def test_managed_tensor_from_view():
    x, v = _host_view(readonly=True)
    ref = weakref.ref(v)
    out = ffi.new("DLManagedTensorVersioned **")
    with PyObj(v) as pv:
        rc, exc = _call(_api().managed_tensor_from_py_object_no_sync, pv, out)
    assert (rc, exc) == (0, None)
    m = out[0]
    assert (m.version.major, m.version.minor) == (1, 3)
    assert v.readonly and m.flags == _dlpack.DLPACK_FLAG_BITMASK_READ_ONLY
    t = m.dl_tensor
    assert int(ffi.cast("uintptr_t", t.data)) == x.ctypes.data and t.byte_offset == 0
    assert t.ndim == 2 and [t.shape[i] for i in range(2)] == [2, 3]
    assert [t.strides[i] for i in range(2)] == [3, 1]  # stated, though the view has none
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    del v
    _collect()
    assert ref() is not None  # the tensor keeps the view alive ...
    m.deleter(m)
    _collect()
    assert ref() is None  # ... until its deleter runs


def test_managed_tensor_from_other_objects_fails():
    out = ffi.new("DLManagedTensorVersioned **")
    with PyObj(np.arange(3)) as p:
        rc, exc = _call(_api().managed_tensor_from_py_object_no_sync, p, out)
    assert rc == -1 and out[0] == ffi.NULL
    assert isinstance(exc, TypeError) and str(exc) == "py_object must be a StridedMemoryView"
    _, v = _host_view()
    with PyObj(v) as pv:
        rc, exc = _call(_api().managed_tensor_from_py_object_no_sync, pv, ffi.NULL)
    assert rc == -1 and isinstance(exc, RuntimeError) and str(exc) == "out cannot be NULL"


def test_managed_tensor_from_view_without_dtype_fails():
    x = np.zeros(6, dtype=np.float32)
    nodtype = StridedMemoryView.from_buffer(HostBuffer(x), (6,), itemsize=4)
    out = ffi.new("DLManagedTensorVersioned **")
    with PyObj(nodtype) as p:
        rc, exc = _call(_api().managed_tensor_from_py_object_no_sync, p, out)
    assert rc == -1 and out[0] == ffi.NULL
    assert isinstance(exc, BufferError) and "without dtype" in str(exc)


def test_managed_tensor_to_view():
    x, v = _host_view(shape=(4, 2), dtype=np.int16)
    out = ffi.new("DLManagedTensorVersioned **")
    with PyObj(v) as pv:
        assert _call(_api().managed_tensor_from_py_object_no_sync, pv, out) == (0, None)
    m = out[0]
    # a producer may state an offset and read-only data
    m.dl_tensor.byte_offset = 4
    m.flags = _dlpack.DLPACK_FLAG_BITMASK_READ_ONLY
    vref = weakref.ref(v)
    del v
    res = ffi.new("void **")
    rc, exc = _call(_api().managed_tensor_to_py_object_no_sync, m, res)
    assert (rc, exc) == (0, None)
    w = _dlpack.object_from_address(int(ffi.cast("uintptr_t", res[0])))
    assert type(w) is StridedMemoryView
    assert w.ptr == x.ctypes.data + 4  # byte_offset included
    assert w.readonly is True and w.device_id == -1 and not w.is_device_accessible
    assert w.shape == (4, 2) and w.strides == (2, 1) and w.dtype == np.int16
    assert type(w.exporting_obj).__name__ == "PyCapsule"
    assert "used_dltensor_versioned" in repr(w.exporting_obj)
    _collect()
    assert vref() is not None  # the tensor inside the new view still holds it
    del w
    _collect()
    assert vref() is None  # the new view released the tensor


def test_managed_tensor_to_view_errors():
    res = ffi.new("void **")
    rc, exc = _call(_api().managed_tensor_to_py_object_no_sync, ffi.NULL, res)
    assert rc == -1 and isinstance(exc, RuntimeError) and str(exc) == "tensor cannot be NULL"
    _, v = _host_view()
    out = ffi.new("DLManagedTensorVersioned **")
    with PyObj(v) as pv:
        _call(_api().managed_tensor_from_py_object_no_sync, pv, out)
    rc, exc = _call(_api().managed_tensor_to_py_object_no_sync, out[0], ffi.NULL)
    assert rc == -1 and str(exc) == "out_py_object cannot be NULL"
    # an unsupported device: the view is refused and the tensor released
    vref = weakref.ref(v)
    del v
    out[0].dl_tensor.device.device_type = 4
    rc, exc = _call(_api().managed_tensor_to_py_object_no_sync, out[0], res)
    assert rc == -1 and isinstance(exc, BufferError) and str(exc) == "device not supported"
    assert res[0] == ffi.NULL
    del exc
    _collect()
    assert vref() is None


def test_dltensor_from_view_borrows():
    x, v = _host_view(shape=(3, 4), dtype=np.float64)
    t = ffi.new("DLTensor *")
    with PyObj(v) as pv:
        assert _call(_api().dltensor_from_py_object_no_sync, pv, t) == (0, None)
        shape_ptr = t.shape
        t2 = ffi.new("DLTensor *")
        assert _call(_api().dltensor_from_py_object_no_sync, pv, t2) == (0, None)
    assert t2.shape == shape_ptr  # the view's own arrays, not new ones
    assert int(ffi.cast("uintptr_t", t.data)) == x.ctypes.data and t.byte_offset == 0
    assert t.ndim == 2 and [t.shape[i] for i in range(2)] == [3, 4]
    assert [t.strides[i] for i in range(2)] == [4, 1]
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 64, 1)
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    # 0-d and empty views
    _, s = _host_view(shape=(), dtype=np.float64)
    with PyObj(s) as ps:
        assert _call(_api().dltensor_from_py_object_no_sync, ps, t) == (0, None)
    assert t.ndim == 0 and t.shape == ffi.NULL and t.strides == ffi.NULL
    _, e = _host_view(shape=(0, 2), dtype=np.float64)
    with PyObj(e) as pe:
        assert _call(_api().dltensor_from_py_object_no_sync, pe, t) == (0, None)
    assert t.data == ffi.NULL


def test_dltensor_from_other_objects_fails():
    t = ffi.new("DLTensor *")
    with PyObj("not a view") as p:
        rc, exc = _call(_api().dltensor_from_py_object_no_sync, p, t)
    assert rc == -1 and isinstance(exc, TypeError)
    assert str(exc) == "py_object must be a StridedMemoryView"
    _, v = _host_view()
    with PyObj(v) as pv:
        rc, exc = _call(_api().dltensor_from_py_object_no_sync, pv, ffi.NULL)
    assert rc == -1 and str(exc) == "out cannot be NULL"


def test_current_work_stream_is_null():
    out = ffi.new("void **", ffi.cast("void *", 99))
    assert _call(_api().current_work_stream, 2, 0, out) == (0, None)
    assert out[0] == ffi.NULL
    rc, exc = _call(_api().current_work_stream, 2, 0, ffi.NULL)
    assert rc == -1 and isinstance(exc, RuntimeError)
    assert str(exc) == "out_current_stream cannot be NULL"


@pytest.mark.skipif(not CPYTHON, reason="ctypes.pythonapi exists on CPython only")
def test_ctypes_consumer_on_cpython():
    import ctypes

    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    cap = StridedMemoryView.__dlpack_c_exchange_api__
    address = get_pointer(cap, b"dlpack_exchange_api")
    assert address == _dlpack.exchange_api_address()

    class Header(ctypes.Structure):
        _fields_ = [
            ("major", ctypes.c_uint32),
            ("minor", ctypes.c_uint32),
            ("prev", ctypes.c_void_p),
        ]

    from_py = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
    fill = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)
    stream = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)

    class API(ctypes.Structure):
        _fields_ = [
            ("header", Header),
            ("allocator", ctypes.c_void_p),
            ("from_py", from_py),
            ("to_py", ctypes.c_void_p),
            ("fill", fill),
            ("stream", stream),
        ]

    api = API.from_address(address)
    assert (api.header.major, api.header.minor, api.header.prev) == (1, 3, None)
    x, v = _host_view()
    out = ctypes.c_void_p()
    assert api.from_py(v, ctypes.addressof(out)) == 0
    m = ffi.cast("DLManagedTensorVersioned *", out.value)
    assert int(ffi.cast("uintptr_t", m.dl_tensor.data)) == x.ctypes.data
    m.deleter(m)
    with pytest.raises(TypeError, match="^py_object must be a StridedMemoryView$"):
        api.from_py(x, ctypes.addressof(out))
    t = ffi.new("DLTensor *")
    assert api.fill(v, int(ffi.cast("uintptr_t", t))) == 0
    assert t.ndim == 2
    with pytest.raises(RuntimeError, match="^out_current_stream cannot be NULL$"):
        api.stream(2, 0, None)


@pytest.mark.gpu
def test_device_view_through_the_exchange_api(device, stream):
    buf = device.allocate(96, stream=stream)
    stream.sync()
    v = StridedMemoryView.from_buffer(buf, (4, 6), dtype=np.float32)
    api = _api()
    out = ffi.new("DLManagedTensorVersioned **")
    with PyObj(v) as pv:
        assert _call(api.managed_tensor_from_py_object_no_sync, pv, out) == (0, None)
        t = ffi.new("DLTensor *")
        assert _call(api.dltensor_from_py_object_no_sync, pv, t) == (0, None)
    for tensor in (out[0].dl_tensor, t[0]):
        assert (tensor.device.device_type, tensor.device.device_id) == (2, device.device_id)
        assert int(ffi.cast("uintptr_t", tensor.data)) == buf.handle
        assert [tensor.strides[i] for i in range(2)] == [6, 1]
    res = ffi.new("void **")
    assert _call(api.managed_tensor_to_py_object_no_sync, out[0], res) == (0, None)
    w = _dlpack.object_from_address(int(ffi.cast("uintptr_t", res[0])))
    assert w.ptr == buf.handle and w.device_id == device.device_id and w.is_device_accessible
    assert w.shape == (4, 6) and w.dtype == np.float32
    cur = ffi.new("void **")
    assert _call(api.current_work_stream, 2, device.device_id, cur) == (0, None)
    assert cur[0] == ffi.NULL
    del w, v
    _collect()
    buf.close()
