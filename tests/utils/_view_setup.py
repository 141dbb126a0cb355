# SPDX-License-Identifier: Apache-2.0
"""Stand-in producers and interface builders shared by the StridedMemoryView conformance tests."""

from __future__ import annotations

from _helpers import HostMemoryResource  # noqa: F401 (re-exported)

from cuda_core._cuda_ffi import ffi
from cuda_core._memory import _dlpack


class Producer:
    """A DLPack producer with full control over what its tensor states.

    ``strides`` is given as is (None: a NULL pointer); ``versioned_ok=False``
    makes ``__dlpack__`` refuse ``max_version`` like an old producer.
    """

    def __init__(self, arr, strides, dtype=None, device=(1, 0), versioned_ok=True, readonly=False):
        self.arr = arr
        self.strides = strides
        self.dtype = dtype or (0, arr.itemsize * 8, 1)
        self.device = device
        self.versioned_ok = versioned_ok
        self.readonly = readonly
        self.calls = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        if max_version is not None and not self.versioned_ok:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        return _dlpack.capsule_from_tensor(
            self,
            self.arr.ctypes.data,
            self.device,
            self.dtype,
            self.arr.shape,
            self.strides,
            versioned=max_version is not None,
            readonly=self.readonly,
        )


class ArrayInterface:
    def __init__(self, interface, keep=None):
        self.__array_interface__ = interface
        self.keep = keep


class CudaArrayInterface:
    def __init__(self, interface):
        self.__cuda_array_interface__ = interface


def _ai(arr, **changes):
    """The array interface of ``arr`` with some keys changed (None: removed)."""
    d = dict(arr.__array_interface__)
    d["version"] = 3
    for key, value in changes.items():
        if value is _DROP:
            d.pop(key, None)
        else:
            d[key] = value
    return d


_DROP = object()


def _cai(**changes):
    d = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3, "strides": None}
    d.update(changes)
    return d


def _tensor_of(capsule):
    """Consume ``capsule``; return (its _Consumed, the capsule's DLPack version or None)."""
    consumed = _dlpack.take_capsule(capsule)
    version = None
    if consumed.versioned:
        managed = ffi.cast("DLManagedTensorVersioned *", consumed._gc)
        version = (int(managed.version.major), int(managed.version.minor))
    return consumed, version
