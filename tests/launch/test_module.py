# SPDX-License-Identifier: Apache-2.0
"""ObjectCode: factories, properties, pickling; loading and get_kernel on a GPU."""

from __future__ import annotations

import pathlib
import pickle
import re
import warnings

import pytest
from _helpers import _check_loads, _nvrtc_available
from conftest import gpu_status

from cuda_core import (
    CUDAError,
    Linker,
    LinkerOptions,
    ObjectCode,
    Program,
    ProgramOptions,
)

KERNEL = r"""
extern "C" __global__ void scale(float *a, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= s;
}
template <typename T> __global__ void twice(T *a) { a[threadIdx.x] *= 2; }
"""

requires_nvrtc = pytest.mark.skipif(
    not _nvrtc_available(), reason='NVRTC not found (pip install "cuda-core-cffi[cu13]")'
)

FACTORIES = [
    (ObjectCode.from_cubin, "cubin"),
    (ObjectCode.from_ptx, "ptx"),
    (ObjectCode.from_ltoir, "ltoir"),
    (ObjectCode.from_fatbin, "fatbin"),
    (ObjectCode.from_object, "object"),
    (ObjectCode.from_library, "library"),
]


def _cubin(arch="sm_90", **kw):
    with Program(KERNEL, "c++", ProgramOptions(arch=arch)) as prog:
        return prog.compile("cubin", **kw)


@pytest.mark.parametrize(("factory", "kind"), FACTORIES, ids=[k for _, k in FACTORIES])
def test_factories(factory, kind, tmp_path):
    obj = factory(b"\x01\x02", name="n", symbol_mapping={"a": b"_Z1a"})
    assert obj.code == b"\x01\x02"
    assert obj.code_type == kind
    assert obj.name == "n"
    assert obj.symbol_mapping == {"a": b"_Z1a"}
    path = tmp_path / f"code.{kind}"
    path.write_bytes(b"\x01")
    assert factory(str(path)).code == str(path)
    assert factory(path).code == str(path)  # os.PathLike becomes its str path
    assert factory(bytearray(b"\x03")).code == bytearray(b"\x03")
    default = factory(b"x")
    assert default.name == "" and default.symbol_mapping == {}


def test_bad_arguments():
    with pytest.raises(TypeError, match="module must be bytes, bytearray"):
        ObjectCode.from_cubin(42)
    with pytest.raises(TypeError, match="name must be a str"):
        ObjectCode.from_cubin(b"x", name=3)
    with pytest.raises(TypeError, match="symbol_mapping must be a dict"):
        ObjectCode.from_cubin(b"x", symbol_mapping=[("a", "b")])
    with pytest.raises(ValueError, match="code_type='elf' is not supported"):
        ObjectCode._init(b"x", "elf")
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        ObjectCode()


def test_symbol_mapping_is_a_copy():
    mapping = {"k": b"_Z1kv"}
    obj = ObjectCode.from_cubin(b"x", symbol_mapping=mapping)
    mapping["other"] = b"y"
    obj.symbol_mapping["more"] = b"z"
    assert obj.symbol_mapping == {"k": b"_Z1kv"}


@requires_nvrtc
@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trip(protocol):
    obj = _cubin(name_expressions=("twice<float>",))
    copy = pickle.loads(pickle.dumps(obj, protocol=protocol))
    assert copy is not obj
    assert copy == obj and hash(copy) == hash(obj)
    assert copy.code == obj.code
    assert copy.code_type == "cubin"
    assert copy.name == obj.name
    assert copy.symbol_mapping == obj.symbol_mapping
    assert repr(copy).endswith(f"code_type={obj.code_type!r}>")


@requires_nvrtc
def test_pickle_path_backed(tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(_cubin().code)
    copy = pickle.loads(pickle.dumps(ObjectCode.from_cubin(path, name="p")))
    assert copy.code == str(path) and copy.name == "p"


def test_equality_and_hash_are_by_content():
    a = ObjectCode.from_cubin(b"abc", name="x")
    assert a == ObjectCode.from_cubin(bytearray(b"abc"), name="x")
    assert hash(a) == hash(ObjectCode.from_cubin(b"abc", name="x"))
    assert a != ObjectCode.from_cubin(b"abd", name="x")
    assert a != ObjectCode.from_ptx(b"abc", name="x")
    assert a != ObjectCode.from_cubin(b"abc", name="y")
    assert a != ObjectCode.from_cubin(b"abc", name="x", symbol_mapping={"k": b"k"})
    assert a != "abc"
    assert len({a, ObjectCode.from_cubin(b"abc", name="x")}) == 1


def test_repr_is_upstreams():
    # cuda.core loads the code to show its handle; a closed (or unloadable)
    # one shows 0x0 rather than the repr raising.
    obj = ObjectCode.from_ptx(b".version 8.0", name="r")
    assert re.fullmatch(r"<ObjectCode handle=0x[0-9a-f]+ code_type='ptx'>", repr(obj))
    obj.close()
    assert repr(obj) == "<ObjectCode handle=0x0 code_type='ptx'>"


@pytest.mark.parametrize("kind", ["ltoir", "object", "library"])
def test_link_only_code_has_no_kernels(kind):
    obj = ObjectCode._init(b"x", kind)
    with pytest.raises(RuntimeError, match=f'Unsupported code type "{kind}"'):
        obj.get_kernel("k")
    with pytest.raises(RuntimeError, match="cannot be loaded by the driver"):
        _ = obj.handle


def test_get_kernel_name_type():
    with pytest.raises(TypeError, match="kernel name must be a str or bytes"):
        ObjectCode.from_cubin(b"x").get_kernel(3)


@requires_nvrtc
@pytest.mark.skipif(gpu_status()[0], reason="checks the behaviour without a CUDA driver")
def test_loading_without_driver_raises_clearly():
    obj = _cubin()
    with pytest.raises(CUDAError, match="CUDA driver could not be loaded"):
        _ = obj.handle
    obj.close()  # nothing was loaded: closing is a no-op
    with pytest.raises(RuntimeError, match="ObjectCode is closed"):
        _ = obj.handle
    assert obj.code[:4] == b"\x7fELF"  # the code itself stays available


# -- GPU: loading and kernels ----------------------------------------------------------


@requires_nvrtc
@pytest.mark.gpu
def test_cubin_loads_and_finds_kernels(device):
    arch = f"sm_{device.arch}"
    obj = _cubin(arch, name_expressions=("twice<float>", "twice<int>"))
    _check_loads(obj, "scale")
    _check_loads(obj, "twice<float>")  # through symbol_mapping
    _check_loads(obj, obj.symbol_mapping["twice<int>"])  # mangled name directly
    with pytest.raises(CUDAError, match="CUDA_ERROR_NOT_FOUND"):
        obj.get_kernel("no_such_kernel")
    obj.close()
    obj.close()
    with pytest.raises(RuntimeError, match="ObjectCode is closed"):
        obj.get_kernel("scale")


@requires_nvrtc
@pytest.mark.gpu
def test_cubin_from_file_loads(device, tmp_path):
    path = tmp_path / "k.cubin"
    path.write_bytes(_cubin(f"sm_{device.arch}").code)
    obj = ObjectCode.from_cubin(pathlib.Path(path))
    _check_loads(obj, "scale")
    obj.close()


@requires_nvrtc
@pytest.mark.gpu
def test_ptx_linked_code_loads(device):
    arch = f"sm_{device.arch}"
    with Program(KERNEL, "c++", ProgramOptions(arch=arch)) as prog:
        ptx = prog.compile("ptx")
    with Program(ptx.code.decode(), "ptx", ProgramOptions(arch=arch)) as prog:
        _check_loads(prog.compile("cubin"), "scale")
    with Linker(ptx, options=LinkerOptions(arch=arch)) as linker:
        _check_loads(linker.link("cubin"), "scale")


@requires_nvrtc
@pytest.mark.gpu
def test_ltoir_linked_code_loads(device):
    arch = f"sm_{device.arch}"
    caller = (
        "extern __device__ float helper(float);\n"
        'extern "C" __global__ void apply(float *a) { a[threadIdx.x] = helper(a[threadIdx.x]); }\n'
    )
    callee = "__device__ float helper(float x) { return x + 1.0f; }\n"
    opts = ProgramOptions(arch=arch, relocatable_device_code=True, link_time_optimization=True)
    units = []
    for src in (caller, callee):
        with Program(src, "c++", opts) as prog:
            units.append(prog.compile("ltoir"))
    if Linker.which_backend() != "nvJitLink":
        pytest.skip("LTO-IR linking needs nvJitLink")
    with Linker(*units, options=LinkerOptions(arch=arch, link_time_optimization=True)) as linker:
        _check_loads(linker.link("cubin"), "apply")


@requires_nvrtc
@pytest.mark.gpu
def test_pickled_copy_loads_independently(device):
    obj = _cubin(f"sm_{device.arch}")
    copy = pickle.loads(pickle.dumps(obj))
    _check_loads(obj, "scale")
    _check_loads(copy, "scale")
    assert obj.handle != copy.handle  # two libraries, equal content
    assert obj == copy
    obj.close()
    copy.close()


@requires_nvrtc
@pytest.mark.gpu
def test_ptx_loads_when_the_driver_is_new_enough(device):
    with Program(KERNEL, "c++", ProgramOptions(arch=f"sm_{device.arch}")) as prog:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ptx = prog.compile("ptx")
    if not Program.driver_can_load_nvrtc_ptx_output():
        with pytest.raises(CUDAError, match="compile to 'cubin'"):
            _ = ptx.handle
        return
    _check_loads(ptx, "scale")
    ptx.close()
