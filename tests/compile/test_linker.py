# SPDX-License-Identifier: Apache-2.0
"""Linker and LinkerOptions (nvJitLink runs without a GPU)."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
from _helpers import _nvrtc_available

from cuda_core import (
    Linker,
    LinkerOptions,
    NVJitLinkError,
    ObjectCode,
    Program,
    ProgramOptions,
)
from cuda_core._cuda_ffi import lib
from cuda_core.typing import CompilerBackendType

pytestmark = pytest.mark.skipif(
    not _nvrtc_available(), reason='NVRTC not found (pip install "cuda-core-cffi[cu13]")'
)

ELF_MAGIC = b"\x7fELF"

CALLER = r"""
extern __device__ float helper(float x);
extern "C" __global__ void apply(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = helper(a[i]);
}
"""
CALLEE = "__device__ float helper(float x) { return 2.0f * x + 1.0f; }\n"


def _compile(src, target, arch="sm_90", **kw):
    opts = ProgramOptions(arch=arch, relocatable_device_code=True, **kw)
    with Program(src, "c++", opts) as prog:
        return prog.compile(target)


needs_nvjitlink = pytest.mark.skipif(
    Linker.which_backend() is not CompilerBackendType.NVJITLINK,
    reason="nvJitLink >= 12.3 is not available",
)


# -- options --------------------------------------------------------------------------

NVJITLINK_CASES = [
    ({}, []),
    ({"max_register_count": 64}, ["-maxrregcount=64"]),
    ({"time": True}, ["-time"]),
    ({"time": False}, []),
    ({"verbose": True}, ["-verbose"]),
    ({"link_time_optimization": True}, ["-lto"]),
    ({"link_time_optimization": True, "ptx": True}, ["-lto", "-ptx"]),
    ({"optimization_level": 3}, ["-O3"]),
    ({"debug": True}, ["-g"]),
    ({"lineinfo": True}, ["-lineinfo"]),
    ({"ftz": True}, ["-ftz=true"]),
    ({"prec_div": False}, ["-prec-div=false"]),
    ({"prec_sqrt": True}, ["-prec-sqrt=true"]),
    ({"fma": False}, ["-fma=false"]),
    ({"kernels_used": "k1"}, ["-kernels-used=k1"]),
    ({"kernels_used": ("k1", "k2")}, ["-kernels-used=k1", "-kernels-used=k2"]),
    ({"variables_used": ["v"]}, ["-variables-used=v"]),
    ({"optimize_unused_variables": True}, ["-optimize-unused-variables"]),
    ({"ptxas_options": "-v"}, ["-Xptxas=-v"]),
    ({"ptxas_options": ["-v", "-O2"]}, ["-Xptxas=-v", "-Xptxas=-O2"]),
    ({"split_compile": 0}, ["-split-compile=0"]),
    ({"split_compile_extended": 2}, ["-split-compile-extended=2"]),
    ({"no_cache": True}, ["-no-cache"]),
    ({"no_cache": False}, []),
]


@needs_nvjitlink
@pytest.mark.parametrize(("kwargs", "flags"), NVJITLINK_CASES, ids=lambda x: str(x))
def test_nvjitlink_flags(kwargs, flags):
    out = LinkerOptions(arch="sm_90", **kwargs).as_bytes()
    assert [f.decode() for f in out] == ["-arch=sm_90", *flags]
    assert LinkerOptions(arch="sm_90", **kwargs).as_bytes("nvJitLink") == out


def test_nvjitlink_table_covers_every_field():
    covered = {k for kw, _ in NVJITLINK_CASES for k in kw}
    fields = {f.name for f in dataclasses.fields(LinkerOptions)}
    assert fields - covered == {"name", "arch", "numba_debug"}


def test_as_bytes_only_for_nvjitlink():
    with pytest.raises(ValueError, match="only supports 'nvjitlink' backend, got 'driver'"):
        LinkerOptions(arch="sm_90").as_bytes("driver")


INVALID = [
    ({"name": 1}, TypeError, r"LinkerOptions\.name must be a str"),
    ({"arch": "x86"}, ValueError, r"LinkerOptions\.arch='x86' is not a valid"),
    ({"time": "yes"}, TypeError, r"LinkerOptions\.time must be True, False or None"),
    ({"optimization_level": 7}, ValueError, r"optimization_level must be between 0 and 4"),
    ({"max_register_count": 0}, ValueError, r"LinkerOptions\.max_register_count must be >= 1"),
    ({"kernels_used": [1]}, TypeError, r"LinkerOptions\.kernels_used\[0\] must be a str"),
    ({"ptxas_options": 5}, TypeError, r"LinkerOptions\.ptxas_options must be a str"),
    ({"split_compile": -1}, ValueError, r"LinkerOptions\.split_compile must be >= 0"),
    ({"ptx": True}, ValueError, r"ptx=True requires link_time_optimization=True"),
]


@pytest.mark.parametrize(("kwargs", "exc", "match"), INVALID, ids=lambda x: str(x))
def test_invalid_linker_options(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LinkerOptions(**kwargs)


def test_linker_options_defaults():
    opts = LinkerOptions(name=None)
    assert opts.name == "<default linker>"
    assert LinkerOptions().name == "<default linker>"
    assert all(
        getattr(opts, f.name) is None for f in dataclasses.fields(LinkerOptions) if f.name != "name"
    )


@pytest.mark.parametrize(
    "field", ["time", "ptx", "ptxas_options", "split_compile", "split_compile_extended"]
)
def test_driver_backend_rejects_unsupported_options(field):
    value = {"ptxas_options": "-v", "split_compile": 1, "split_compile_extended": 1}.get(
        field, True
    )
    extra = {"link_time_optimization": True} if field == "ptx" else {}
    opts = LinkerOptions(arch="sm_90", **{field: value}, **extra)
    with pytest.raises(ValueError, match=f"{field} option is not supported by the driver API"):
        opts._driver_options()


@pytest.mark.parametrize(
    "field",
    [
        "ftz",
        "prec_div",
        "prec_sqrt",
        "fma",
        "kernels_used",
        "variables_used",
        "optimize_unused_variables",
    ],
)
def test_driver_backend_ignores_with_deprecation_warning(field):
    value = "k" if field in ("kernels_used", "variables_used") else True
    opts = LinkerOptions(arch="sm_90", **{field: value})
    with pytest.warns(DeprecationWarning, match=f"{field} option is deprecated"):
        keys, values, keep = opts._driver_options()
    assert len(keys) == len(values) == 5  # 4 log options + the target


def test_driver_options_translation():
    opts = LinkerOptions(
        arch="sm_90a",
        max_register_count=40,
        verbose=True,
        link_time_optimization=True,
        optimization_level=2,
        debug=True,
        lineinfo=True,
        no_cache=True,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        keys, values, keep = opts._driver_options()
    from cuda_core._cuda_ffi import ffi

    got = {k: int(ffi.cast("uintptr_t", v)) for k, v in zip(keys[4:], values[4:])}
    assert got == {
        lib.CU_JIT_TARGET: 0x10000 + 90,
        lib.CU_JIT_MAX_REGISTERS: 40,
        lib.CU_JIT_LOG_VERBOSE: 1,
        lib.CU_JIT_LTO: 1,
        lib.CU_JIT_OPTIMIZATION_LEVEL: 2,
        lib.CU_JIT_GENERATE_DEBUG_INFO: 1,
        lib.CU_JIT_GENERATE_LINE_INFO: 1,
        lib.CU_JIT_CACHE_MODE: lib.CU_JIT_CACHE_OPTION_NONE,
    }
    assert keys[:4] == [
        lib.CU_JIT_INFO_LOG_BUFFER,
        lib.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        lib.CU_JIT_ERROR_LOG_BUFFER,
        lib.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ]
    assert len(keep) == 2


def test_jit_target_values():
    from cuda_core._linker_options import _jit_target

    assert _jit_target("sm_75") == 75
    assert _jit_target("compute_90") == 90
    assert _jit_target("sm_90a") == 0x10000 + 90
    assert _jit_target("sm_100f") == 0x20000 + 100


# -- linking --------------------------------------------------------------------------


def test_which_backend_is_decided_once():
    first = Linker.which_backend()
    assert first in (CompilerBackendType.NVJITLINK, CompilerBackendType.DRIVER)
    assert Linker.which_backend() is first


def test_linker_needs_object_codes():
    with pytest.raises(ValueError, match="At least one ObjectCode object must be provided"):
        Linker()
    with pytest.raises(TypeError, match="input 0 is a bytes"):
        Linker(b"\x7fELF")


@needs_nvjitlink
def test_link_ptx_units_into_cubin():
    caller = _compile(CALLER, "ptx")
    callee = _compile(CALLEE, "ptx")
    opts = LinkerOptions(arch="sm_90", name="linked", verbose=True)
    with Linker(caller, callee, options=opts) as linker:
        assert linker.backend is CompilerBackendType.NVJITLINK
        assert linker.backend == "nvJitLink"
        assert isinstance(linker.handle, int) and linker.handle != 0
        obj = linker.link("cubin")
        assert linker.link("cubin").code == obj.code  # linking is done once
        info = linker.get_info_log()
        assert linker.get_error_log() == ""
    assert obj.code[:4] == ELF_MAGIC
    assert obj.name == "linked" and obj.code_type == "cubin"
    assert isinstance(info, str)
    assert linker.is_closed
    assert linker.get_info_log() == info  # logs survive close()
    with pytest.raises(RuntimeError, match="Linker is closed"):
        linker.link("cubin")


@needs_nvjitlink
def test_lto_link_of_two_ltoir_units():
    caller = _compile(CALLER, "ltoir", link_time_optimization=True)
    callee = _compile(CALLEE, "ltoir", link_time_optimization=True)
    assert caller.code_type == callee.code_type == "ltoir"
    opts = LinkerOptions(arch="sm_90", link_time_optimization=True)
    with Linker(caller, callee, options=opts) as linker:
        cubin = linker.link("cubin")
    assert cubin.code[:4] == ELF_MAGIC
    # LTO can also hand back the optimized PTX.
    opts = LinkerOptions(arch="sm_90", link_time_optimization=True, ptx=True)
    with Linker(caller, callee, options=opts) as linker:
        ptx = linker.link("ptx")
    assert ptx.code_type == "ptx"
    text = ptx.code.rstrip(b"\0").decode()
    assert ".target sm_90" in text and ".entry apply(" in text
    assert "helper" not in text.split(".entry apply(")[1]  # inlined across units


@needs_nvjitlink
def test_link_inputs_from_files(tmp_path):
    caller, callee = tmp_path / "caller.ptx", tmp_path / "callee.ptx"
    caller.write_bytes(_compile(CALLER, "ptx").code)
    callee.write_bytes(_compile(CALLEE, "ptx").code)
    inputs = (ObjectCode.from_ptx(str(caller)), ObjectCode.from_ptx(callee))
    with Linker(*inputs, options=LinkerOptions(arch="sm_90")) as linker:
        assert linker.link("cubin").code[:4] == ELF_MAGIC


@needs_nvjitlink
def test_link_cubin_and_ptx_inputs():
    caller = _compile(CALLER, "cubin")
    callee = _compile(CALLEE, "ptx")
    with Linker(caller, callee, options={"arch": "sm_90"}) as linker:
        assert linker.link("cubin").code[:4] == ELF_MAGIC


@needs_nvjitlink
def test_link_failure_carries_error_log():
    caller = _compile(CALLER, "ptx")  # helper is never defined
    linker = Linker(caller, options=LinkerOptions(arch="sm_90"))
    with pytest.raises(NVJitLinkError, match="Linker error log") as info:
        linker.link("cubin")
    assert "helper" in str(info.value)
    assert "helper" in linker.get_error_log()
    linker.close()
    linker.close()


@needs_nvjitlink
def test_bad_input_is_reported():
    with pytest.raises(NVJitLinkError):
        Linker(ObjectCode.from_cubin(b"not a cubin"), options=LinkerOptions(arch="sm_90"))


@needs_nvjitlink
def test_link_target_validation():
    with Linker(_compile(CALLEE, "ptx"), options=LinkerOptions(arch="sm_90")) as linker:
        with pytest.raises(ValueError, match="Unsupported target type: 'ltoir'"):
            linker.link("ltoir")


def test_numba_debug_warns():
    with pytest.warns(UserWarning, match="numba_debug is not supported by any linker"):
        Linker(_compile(CALLEE, "ptx"), options=LinkerOptions(arch="sm_90", numba_debug=True))


def test_linker_arch_without_gpu_fails_clearly(monkeypatch):
    import cuda_core._compile_common as common_mod

    monkeypatch.setattr(common_mod, "_query_device_arch", lambda: (None, "no CUDA driver"))
    with pytest.raises(ValueError, match=r"LinkerOptions\.arch is not set.*Pass arch="):
        LinkerOptions().as_bytes()


# -- GPU: the driver (cuLink*) backend --------------------------------------------------


@pytest.mark.gpu
def test_driver_linker_backend(device, monkeypatch):
    from _helpers import _check_loads

    import cuda_core._linker_backend as backend_mod
    from cuda_core import CUDAError

    monkeypatch.setattr(backend_mod, "_BACKEND", CompilerBackendType.DRIVER)
    assert Linker.which_backend() is CompilerBackendType.DRIVER
    arch = f"sm_{device.arch}"
    # The driver JIT-compiles PTX only from compilers no newer than itself.
    kind = "ptx" if Program.driver_can_load_nvrtc_ptx_output() else "cubin"
    caller = _compile(CALLER, kind, arch=arch)
    callee = _compile(CALLEE, kind, arch=arch)
    with Linker(caller, callee, options=LinkerOptions(arch=arch, verbose=True)) as linker:
        assert linker.backend == "driver"
        assert isinstance(linker.handle, int) and linker.handle != 0
        obj = linker.link("cubin")
        assert isinstance(linker.get_info_log(), str)
        assert linker.get_error_log() == ""
        with pytest.raises(ValueError, match="can only produce 'cubin'"):
            linker.link("ptx")
    assert obj.code[:4] == ELF_MAGIC
    _check_loads(obj, "apply")
    linker = Linker(caller, options=LinkerOptions(arch=arch))  # helper is missing
    with pytest.raises(CUDAError, match="Linker error log") as info:
        linker.link("cubin")
    assert info.value.log and "helper" in info.value.log
    linker.close()
    with pytest.raises(ValueError, match="LTO-IR inputs need nvJitLink"):
        Linker(ObjectCode.from_ltoir(b"x"), options=LinkerOptions(arch=arch))
    with pytest.raises(ValueError, match="ptxas_options option is not supported by the driver"):
        Linker(callee, options=LinkerOptions(arch=arch, ptxas_options="-v"))
