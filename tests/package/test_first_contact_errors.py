# SPDX-License-Identifier: Apache-2.0
"""First-contact errors outside the compilers: one LibraryNotFoundError to catch,
and a ``stream_ptr=None`` error that says what to pass."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import cuda_core
from cuda_core import system
from cuda_core.system import _nvml
from cuda_core.utils import StridedMemoryView

STREAM_NONE = (
    "stream=None is ambiguous with view(): pass stream_ptr=-1 for no stream synchronization, "
    "or stream_ptr=<the address of the stream that will use the data>"
)


def test_one_except_catches_a_missing_nvml_and_a_missing_cuda_library():
    assert issubclass(system.LibraryNotFoundError, cuda_core.LibraryNotFoundError)
    assert issubclass(system.LibraryNotFoundError, system.NvmlError)  # as upstream
    caught = []
    for exc in (
        cuda_core.LibraryNotFoundError("libnvrtc.so.13 could not be found"),
        system.LibraryNotFoundError(12, "libnvidia-ml.so.1 could not be found"),
    ):
        try:
            raise exc
        except cuda_core.LibraryNotFoundError as e:
            caught.append(str(e))
    assert caught == ["libnvrtc.so.13 could not be found", "libnvidia-ml.so.1 could not be found"]


def test_nvml_library_not_found_keeps_its_nvml_face():
    exc = system.LibraryNotFoundError(12, "not here")
    assert exc.status == 12 and exc.code == 12
    assert exc.name == "NVML_ERROR_LIBRARY_NOT_FOUND"
    assert exc.args == ("not here",)
    clone = pickle.loads(pickle.dumps(exc))
    assert type(clone) is system.LibraryNotFoundError and str(clone) == "not here"
    with pytest.raises(cuda_core.CUDAError):  # also a CUDAError, like the other one
        _nvml.check(12)


class _CudaArray:
    def __init__(self):
        self.__cuda_array_interface__ = {
            "shape": (4,),
            "typestr": "<f4",
            "data": (0x1000, False),
            "version": 3,
            "strides": None,
        }


class _HostDLPack:
    def __init__(self):
        self._a = np.arange(4, dtype=np.float32)

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: StridedMemoryView.from_cuda_array_interface(_CudaArray(), None),
        lambda: StridedMemoryView.from_dlpack(_HostDLPack(), None),
    ],
    ids=["cuda_array_interface", "dlpack"],
)
def test_stream_none_names_stream_ptr_and_minus_one(make):
    with pytest.raises(BufferError) as info:
        make()
    assert str(info.value) == STREAM_NONE
