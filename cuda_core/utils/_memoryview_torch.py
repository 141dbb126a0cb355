# SPDX-License-Identifier: Apache-2.0
"""PyTorch tensors viewed from their metadata, without DLPack or the CAI.

While PyTorch 2.3 to 2.12 is imported, cuda.core reads a ``torch.Tensor``'s
pointer, shape, strides, dtype and device directly instead of going through
a protocol (PyTorch's CUDA Array Interface is v2, which views refuse, and
its DLPack export wants a stream even for CPU tensors).  This module does
the same in pure Python, so it runs wherever PyTorch does: it reads
``data_ptr()``, ``shape``, ``stride()``, ``dtype`` and ``device``, and for a
CUDA tensor makes the consumer stream wait for PyTorch's current stream on
that device.  PyTorch is never imported here; a tensor can only exist once
the user imported it.

Error codes in messages are PyTorch's own numbering (``c10::ScalarType``
for dtypes, ``c10::DeviceType`` for devices), as cuda.core reports them.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

import numpy

from cuda_core.utils._memoryview_layout import (  # type: ignore[attr-defined]  # optional ml_dtypes
    _bfloat16,
    _StridedLayout,
)
from cuda_core.utils._memoryview_protocols import _order_streams

if TYPE_CHECKING:
    from cuda_core.utils._memoryview import StridedMemoryView

__all__ = []

#: PyTorch versions whose tensors are read directly (as in cuda.core).
TORCH_VERSIONS = ((2, 3), (2, 12))

_SCALAR_TYPES = {
    "uint8": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "float16": 5,
    "float32": 6,
    "float64": 7,
    "complex32": 8,
    "complex64": 9,
    "complex128": 10,
    "bool": 11,
    "qint8": 12,
    "quint8": 13,
    "qint32": 14,
    "bfloat16": 15,
    "quint4x2": 16,
    "quint2x4": 17,
    "bits1x8": 18,
    "bits2x4": 19,
    "bits4x2": 20,
    "bits8": 21,
    "bits16": 22,
    "float8_e5m2": 23,
    "float8_e4m3fn": 24,
    "float8_e5m2fnuz": 25,
    "float8_e4m3fnuz": 26,
    "uint16": 27,
    "uint32": 28,
    "uint64": 29,
}
# Element sizes of the dtypes a view can hold (others fail at construction).
_ITEMSIZES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 8: 4, 9: 8, 10: 16, 11: 1, 15: 2}
# NumPy dtypes (complex32 has none; bfloat16 needs ml_dtypes).
_NUMPY_DTYPES: dict[int, numpy.dtype[Any]] = {
    0: numpy.dtype(numpy.uint8),
    1: numpy.dtype(numpy.int8),
    2: numpy.dtype(numpy.int16),
    3: numpy.dtype(numpy.int32),
    4: numpy.dtype(numpy.int64),
    5: numpy.dtype(numpy.float16),
    6: numpy.dtype(numpy.float32),
    7: numpy.dtype(numpy.float64),
    9: numpy.dtype(numpy.complex64),
    10: numpy.dtype(numpy.complex128),
    11: numpy.dtype(numpy.bool_),
}
if _bfloat16 is not None:  # pragma: no branch - depends on the environment
    _NUMPY_DTYPES[15] = numpy.dtype(_bfloat16)

_DEVICE_TYPES = {
    "cpu": 0,
    "cuda": 1,
    "mkldnn": 2,
    "opengl": 3,
    "opencl": 4,
    "ideep": 5,
    "hip": 6,
    "fpga": 7,
    "maia": 8,
    "xla": 9,
    "vulkan": 10,
    "metal": 11,
    "xpu": 12,
    "mps": 13,
    "meta": 14,
    "hpu": 15,
    "ve": 16,
    "lazy": 17,
    "ipu": 18,
    "mtia": 19,
}
_PRIVATE_USE_1 = 20  # any other name is a backend registered as PrivateUse1

_is_tensor_type: dict[type, bool] = {}  # type -> bool, decided once per type


def is_torch_tensor(obj: object) -> bool:
    """Whether ``obj`` is a PyTorch tensor that views read directly.

    True for objects of a type defined in a ``torch`` module with a
    ``data_ptr`` attribute, while a supported PyTorch version is imported.
    """
    cls = type(obj)
    hit = _is_tensor_type.get(cls)
    if hit is None:
        module = getattr(cls, "__module__", None) or ""
        hit = module.startswith("torch") and hasattr(cls, "data_ptr") and _torch_supported()
        _is_tensor_type[cls] = hit
    return hit


def view_torch_tensor(view: StridedMemoryView, tensor: Any, stream_ptr: int | None) -> None:
    """Fill ``view`` from a PyTorch tensor.

    A CPU tensor needs no stream.  For a CUDA tensor ``stream_ptr`` is the
    consumer stream: None is refused (BufferError), -1 skips ordering, and
    any other value is made to wait for PyTorch's current stream on the
    tensor's device.
    """
    device = tensor.device
    device_type = _DEVICE_TYPES.get(device.type, _PRIVATE_USE_1)
    if device_type == 0:
        device_id = -1
        accessible = False
    elif device_type == 1:
        device_id = int(device.index if device.index is not None else 0)
        accessible = True
        if stream_ptr is None:
            raise BufferError(
                "stream_ptr=None is ambiguous for CUDA tensors; pass stream_ptr=-1 to opt out "
                "of synchronization, or pass a valid stream pointer"
            )
        stream_ptr = int(stream_ptr)
        if stream_ptr != -1:
            torch = sys.modules["torch"]
            producer = int(torch.cuda.current_stream(device).cuda_stream)
            if producer != stream_ptr:
                _order_streams(producer, stream_ptr)
    else:
        raise BufferError(
            f"Unsupported device type from torch tensor (AOTI device type id: {device_type})"
        )
    code = _SCALAR_TYPES.get(str(tensor.dtype).rpartition(".")[2], -1)
    itemsize = _ITEMSIZES.get(code)
    if itemsize is None:
        raise TypeError(f"Unsupported AOTI dtype code: {code}")
    layout = _StridedLayout(tuple(tensor.shape), tuple(tensor.stride()), itemsize)
    view._ptr = int(tensor.data_ptr())
    view._device_id = device_id
    view._is_device_accessible = accessible
    view._readonly = False
    view._exporting_obj = tensor
    view._metadata = None
    view._layout_ = layout
    view._lazy_dtype = lambda: _numpy_dtype(code)


def _numpy_dtype(code: int) -> numpy.dtype[Any]:
    dtype = _NUMPY_DTYPES.get(code)
    if dtype is None:
        raise TypeError(f"Unsupported AOTI dtype code: {code}")
    return dtype


def _torch_supported() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    m = re.match(r"(\d+)\.(\d+)", str(getattr(torch, "__version__", "")))
    if m is None:
        return False
    version = (int(m.group(1)), int(m.group(2)))
    return TORCH_VERSIONS[0] <= version <= TORCH_VERSIONS[1]
