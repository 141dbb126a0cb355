# SPDX-License-Identifier: Apache-2.0
"""cuda.bindings objects where cuda.core accepts them, and reprs of the launch layer.

cuda_core never imports ``cuda.bindings``: its handle objects are known by
their type's name, ``getPtr()`` and ``int()``.  The CPU tests use stand-ins
of that shape; the GPU tests use the real ``cuda.bindings`` where installed.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import gpu_status

from cuda_core import Buffer, Kernel, LaunchConfig, ObjectCode, Stream
from cuda_core import _kernel_occupancy as occupancy_module
from cuda_core._arg_types import _classify
from cuda_core._cuda_ffi import ffi
from cuda_core._kernel_occupancy import KernelOccupancy
from cuda_core._stream import _as_stream


def _handle_type(name):
    """A stand-in of a ``cuda.bindings.driver`` handle class called ``name``."""

    class Handle:
        def __init__(self, init_value=0, _ptr=0):
            self._slot = ffi.new("uintptr_t *", init_value)
            self._ptr = _ptr or int(ffi.cast("uintptr_t", self._slot))

        def getPtr(self):  # noqa: N802 - cuda.bindings' name
            return self._ptr

        def __int__(self):
            return int(self._slot[0])

    Handle.__name__ = Handle.__qualname__ = name
    return Handle


CUstream = _handle_type("CUstream")
CUevent = _handle_type("CUevent")
CUdeviceptr = _handle_type("CUdeviceptr")
CUkernel = _handle_type("CUkernel")
CUfunction = _handle_type("CUfunction")
CUgraphConditionalHandle = _handle_type("CUgraphConditionalHandle")
CUoccupancyB2DSize = _handle_type("CUoccupancyB2DSize")


class _IntOnly:
    """Converts with int() but is no handle object: never taken for one."""

    def __int__(self):
        return 0x1234


# ---------------------------------------------------------------- streams
def test_stream_from_a_cuda_bindings_stream():
    s = Stream.from_handle(CUstream(0x1234))
    assert s.handle == 0x1234 and isinstance(s.handle, int)
    if not gpu_status()[0]:  # the repr asks a driver for the made-up handle's context
        assert re.fullmatch(r"<Stream handle=0x1234 context=0x[0-9a-f]+>", repr(s))
    wrapped = _as_stream(CUstream(0x5678))
    assert isinstance(wrapped, Stream) and wrapped.handle == 0x5678


@pytest.mark.parametrize("bad", [CUevent(0x1234), _IntOnly(), object(), 1.5, "0x1234", None])
def test_other_objects_are_refused(bad):
    with pytest.raises(TypeError):
        Stream.from_handle(bad)
    with pytest.raises(TypeError):
        _as_stream(bad)


def test_stream_repr():
    assert Stream.from_handle(0).handle == 0
    s = Stream.from_handle(0xABCDEF)
    assert re.fullmatch(r"<Stream handle=0xabcdef context=0x[0-9a-f]+>", repr(s))
    s.close()
    assert repr(s).startswith("<Stream handle=0x0 context=0x")


# ---------------------------------------------------------------- device pointers
def test_buffer_from_a_cuda_bindings_device_pointer():
    buf = Buffer.from_handle(CUdeviceptr(0x7F0000), 64)
    assert buf.handle == 0x7F0000 and isinstance(buf.handle, int)
    for bad in (CUstream(0x7F0000), _IntOnly(), object()):
        with pytest.raises(TypeError):
            Buffer.from_handle(bad, 64)


# ---------------------------------------------------------------- kernels
@pytest.mark.parametrize("kind", [CUkernel, CUfunction])
def test_kernel_from_a_cuda_bindings_handle(kind):
    kernel = Kernel.from_handle(kind(0x4000))
    assert kernel.handle == 0x4000 and isinstance(kernel.handle, int)


@pytest.mark.parametrize("bad", [CUstream(0x4000), _IntOnly(), 1.0])
def test_kernel_from_other_objects(bad):
    with pytest.raises(TypeError, match="handle must be an integer"):
        Kernel.from_handle(bad)


def test_conditional_handle_as_a_kernel_argument():
    slot = _classify(CUgraphConditionalHandle(0x77), 0, None)
    assert [code for code, *_ in slot.items] == ["Q"]
    assert "int(" in slot.items[0][1]


# ---------------------------------------------------------------- occupancy
class _LibProxy:
    """The extension's ``lib``, with cuOccupancyMaxPotentialBlockSize played in Python.

    The stand-in calls the callback it is given for a few block sizes, as the
    driver does, and suggests the largest block whose shared memory fits.
    """

    def __init__(self, real):
        self._real = real
        self.calls = []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def cuOccupancyMaxPotentialBlockSize(self, min_grid, block, func, b2d, shmem, limit):  # noqa: N802
        best = 0
        for size in (32, 64, 128, 256, 512, 1024):
            if limit and size > limit:
                break
            need = b2d(size) if b2d != ffi.NULL else shmem
            self.calls.append((size, int(need)))
            if need <= 48 * 1024:
                best = size
        min_grid[0] = 7
        block[0] = best
        return 0


class _KernelStandIn:
    def _function(self):
        return ffi.cast("CUfunction", 0x1000)


@pytest.fixture
def fake_lib(monkeypatch):
    proxy = _LibProxy(occupancy_module.lib)
    monkeypatch.setattr(occupancy_module, "lib", proxy)
    return proxy


def test_occupancy_calls_a_cuda_bindings_function_pointer(fake_lib):
    seen = []

    @ffi.callback("size_t(int)")
    def b2d(block_size):
        seen.append(block_size)
        return block_size * 64  # 64 bytes of shared memory per thread

    address = int(ffi.cast("uintptr_t", b2d))
    fn = CUoccupancyB2DSize(_ptr=address)  # as cuda.core's users build one
    occ = KernelOccupancy._init(_KernelStandIn())
    result = occ.max_potential_block_size(fn, 1024)
    assert seen == [32, 64, 128, 256, 512, 1024]
    assert tuple(result) == (7, 512)  # 512 * 64 = 32 KiB fits, 1024 * 64 does not
    assert result.min_grid_size == 7 and result.max_block_size == 512


def test_occupancy_with_a_constant(fake_lib):
    occ = KernelOccupancy._init(_KernelStandIn())
    assert tuple(occ.max_potential_block_size(0, 256)) == (7, 256)
    assert fake_lib.calls[-1] == (256, 0)
    with pytest.raises(TypeError, match="dynamic_shared_memory_needed"):
        occ.max_potential_block_size(object(), 256)


# ---------------------------------------------------------------- reprs
def test_launch_config_repr():
    config = LaunchConfig(grid=(2, 3), cluster=None, block=64, shmem_size=16)
    pattern = (
        r"LaunchConfig\(grid=\(\d+, \d+, \d+\), cluster=.+, block=\(\d+, \d+, \d+\), "
        r"shmem_size=\d+, is_cooperative=(?:True|False)\)"
    )
    assert re.fullmatch(pattern, repr(config)), repr(config)
    assert repr(config) == (
        "LaunchConfig(grid=(2, 3, 1), cluster=None, block=(64, 1, 1), shmem_size=16, "
        "is_cooperative=False)"
    )


@pytest.mark.parametrize(
    "factory, code_type",
    [
        (ObjectCode.from_cubin, "cubin"),
        (ObjectCode.from_ptx, "ptx"),
        (ObjectCode.from_fatbin, "fatbin"),
        (ObjectCode.from_ltoir, "ltoir"),
        (ObjectCode.from_object, "object"),
        (ObjectCode.from_library, "library"),
    ],
)
def test_object_code_repr(factory, code_type):
    obj = factory(b"\0" * 16)
    text = repr(obj)
    assert re.fullmatch(rf"<ObjectCode handle=0x[0-9a-f]+ code_type='{code_type}'>", text), text
    obj.close()
    assert repr(obj) == f"<ObjectCode handle=0x0 code_type='{code_type}'>"


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_real_cuda_bindings_handles(device):
    driver = pytest.importorskip("cuda.bindings.driver")
    with device.create_stream() as s:
        theirs = driver.CUstream(s.handle)
        mine = Stream.from_handle(theirs)
        assert mine.handle == s.handle
        assert _as_stream(theirs).handle == s.handle
        assert re.fullmatch(r"<Stream handle=0x[0-9a-f]+ context=0x[0-9a-f]+>", repr(s))
        event = s.record()
        assert re.fullmatch(r"<Event handle=0x[0-9a-f]+>", repr(event))
        s.sync()
    buf = device.memory_resource.allocate(64, stream=device.default_stream)
    try:
        view = Buffer.from_handle(driver.CUdeviceptr(buf.handle), 64)
        assert view.handle == buf.handle
    finally:
        buf.close()
        device.sync()


_KERNEL = r"""
extern "C" __global__ void uses_shared(float *x) {
    extern __shared__ float tile[];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
"""


@pytest.mark.gpu
def test_occupancy_with_numba_cfunc_and_cuda_bindings(device):
    driver = pytest.importorskip("cuda.bindings.driver")
    numba = pytest.importorskip("numba")
    from cuda_core import Program, ProgramOptions

    calls = []

    @numba.cfunc("uint64(int32)")
    def per_block(block_size):
        return block_size * 64

    kernel = (
        Program(_KERNEL, "c++", ProgramOptions(arch=f"sm_{device.arch}"))
        .compile("cubin")
        .get_kernel("uses_shared")
    )
    fn = driver.CUoccupancyB2DSize(_ptr=per_block.address)
    result = kernel.occupancy.max_potential_block_size(fn, 1024)
    limit = device.properties.max_shared_memory_per_block
    assert result.max_block_size > 0 and result.min_grid_size > 0
    assert result.max_block_size * 64 <= limit
    constant = kernel.occupancy.max_potential_block_size(0, 1024)
    assert constant.max_block_size >= result.max_block_size
    # The Python-callable form gives the same answer.
    same = kernel.occupancy.max_potential_block_size(lambda n: calls.append(n) or n * 64, 1024)
    assert tuple(same) == tuple(result) and calls
    np.testing.assert_array_less(0, [result.min_grid_size])
