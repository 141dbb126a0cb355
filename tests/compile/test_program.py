# SPDX-License-Identifier: Apache-2.0
"""Program: real NVRTC / libNVVM / linker compilation (no GPU needed)."""

from __future__ import annotations

import io
import threading
import warnings

import pytest
from _helpers import _nvrtc_available, _nvvm_available, nvvm_ir

from cuda_core import (
    CUDAError,
    NVRTCError,
    NVVMError,
    ObjectCode,
    Program,
    ProgramOptions,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core.typing import CompilerBackendType, PCHStatusType

ELF_MAGIC = b"\x7fELF"
LTOIR_MAGIC = b"\xedCN\x7f"  # what NVRTC and libNVVM emit for LTO-IR

KERNEL = r"""
extern "C" __global__ void scale(float *a, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= s;
}
"""

TEMPLATES = r"""
template <typename T> __global__ void add(T *out, const T *a, const T *b) {
    out[threadIdx.x] = a[threadIdx.x] + b[threadIdx.x];
}
namespace ns { template <int N> __global__ void fill(int *p) { p[threadIdx.x] = N; } }
"""


pytestmark = pytest.mark.skipif(
    not _nvrtc_available(), reason='NVRTC not found (pip install "cuda-core-cffi[cu13]")'
)


needs_nvvm = pytest.mark.skipif(not _nvvm_available(), reason="libNVVM not found")


def _ptx_targets(ptx: bytes):
    text = ptx.rstrip(b"\0").decode()
    return [line for line in text.splitlines() if line.startswith((".version", ".target"))]


# -- NVRTC ----------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90", "sm_100"])
def test_compile_to_every_target(arch):
    with Program(KERNEL, "c++", ProgramOptions(arch=arch, name="k")) as prog:
        assert prog.backend == "NVRTC"
        assert prog.backend is CompilerBackendType.NVRTC
        ptx = prog.compile("ptx")
        cubin = prog.compile("cubin")
        lto = Program(KERNEL, "c++", ProgramOptions(arch=arch, link_time_optimization=True))
        ltoir = lto.compile("ltoir")
        lto.close()
    for obj, kind in ((ptx, "ptx"), (cubin, "cubin"), (ltoir, "ltoir")):
        assert isinstance(obj, ObjectCode)
        assert obj.code_type == kind
        assert isinstance(obj.code, bytes)
    assert ptx.name == cubin.name == "k"
    lines = _ptx_targets(ptx.code)
    assert lines[0].startswith(".version ")
    assert lines[1] == f".target {arch}"
    assert b".visible .entry scale(" in ptx.code
    assert cubin.code[:4] == ELF_MAGIC
    assert ltoir.code[:4] == LTOIR_MAGIC


def test_code_type_is_case_insensitive_and_accepts_enum():
    from cuda_core.typing import ObjectCodeFormatType, SourceCodeType

    with Program(KERNEL, "C++", ProgramOptions(arch="sm_90")) as prog:
        assert prog.compile(ObjectCodeFormatType.CUBIN).code[:4] == ELF_MAGIC
        assert prog.compile("CUBIN").code_type == "cubin"
    with Program(KERNEL, SourceCodeType.CXX, ProgramOptions(arch="sm_90")) as prog:
        assert prog.backend == "NVRTC"


def test_syntax_error_raises_with_full_log():
    src = 'extern "C" __global__ void bad(int *p) {\n    p[0] = undefined_thing;\n}\n'
    logs = io.StringIO()
    with Program(src, "c++", ProgramOptions(arch="sm_90", name="bad.cu")) as prog:
        with pytest.raises(NVRTCError) as info:
            prog.compile("cubin", logs=logs)
    message = str(info.value)
    assert message.startswith("NVRTC_ERROR_COMPILATION")
    assert "compilation log" in message
    assert "bad.cu(2): error" in message  # file name and line number
    assert "undefined_thing" in message
    assert info.value.log and "bad.cu(2)" in info.value.log
    assert logs.getvalue() == ""  # as in cuda.core, the log of a failure is in the error


def test_logs_receive_compiler_output():
    src = '#warning "hello from the log"\n' + KERNEL
    logs = io.StringIO()
    with Program(src, "c++", ProgramOptions(arch="sm_90")) as prog:
        prog.compile("ptx", logs=logs)
    assert "hello from the log" in logs.getvalue()


def test_name_expressions_give_mangled_symbols():
    names = ("add<float>", "add<int>", "ns::fill<7>", b"ns::fill<3>")
    with Program(TEMPLATES, "c++", ProgramOptions(arch="sm_90")) as prog:
        obj = prog.compile("cubin", name_expressions=names)
    mapping = obj.symbol_mapping
    assert set(mapping) == set(names)
    for expr in names:
        assert isinstance(mapping[expr], bytes)
        assert mapping[expr].startswith(b"_Z")
    assert b"addIf" in mapping["add<float>"]
    assert b"addIi" in mapping["add<int>"]
    assert b"fill" in mapping["ns::fill<7>"] and b"Li7E" in mapping["ns::fill<7>"]
    assert mapping["add<float>"] != mapping["add<int>"]
    mapping["x"] = b"y"  # a copy: the ObjectCode is unchanged
    assert "x" not in obj.symbol_mapping


def test_name_expressions_type_checked():
    with Program(TEMPLATES, "c++", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(TypeError, match="single str"):
            prog.compile("ptx", name_expressions="add<float>")
        with pytest.raises(TypeError, match="name expressions must be str or bytes"):
            prog.compile("ptx", name_expressions=[42])


def test_unknown_code_type_lists_valid_ones():
    expected = (
        r"^Unsupported code_type='fortran' \(supported_code_types=\('c\+\+', 'ptx', 'nvvm'\)\)$"
    )
    with pytest.raises(ValueError, match=expected):
        Program("goto 100", "FORTRAN")
    with pytest.raises(RuntimeError, match=expected):  # as cuda.core raises
        Program("goto 100", "fortran")


def test_code_must_be_str_for_cpp():
    with pytest.raises(TypeError, match="^Expected type str, but got bytes$"):
        Program(KERNEL.encode(), "c++", ProgramOptions(arch="sm_90"))
    with pytest.raises(RuntimeError, match="Unsupported code_type='3'"):
        Program(KERNEL, 3, ProgramOptions(arch="sm_90"))  # str()-ed, as in cuda.core


@pytest.mark.parametrize("target", ["invalid_target", "fatbin", "object"])
def test_invalid_target(target):
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(ValueError, match=f'Unsupported target_type="{target}" for NVRTC'):
            prog.compile(target)


def test_cubin_needs_a_real_arch():
    with Program(KERNEL, "c++", ProgramOptions(arch="compute_90")) as prog:
        assert b".target sm_90" in prog.compile("ptx").code
        with pytest.raises(ValueError, match="virtual architecture"):
            prog.compile("cubin")


def test_nvrtc_only_options_rejected_at_init():
    with pytest.raises(ValueError, match="extra_sources is not supported by the NVRTC backend"):
        Program(KERNEL, "c++", ProgramOptions(arch="sm_90", extra_sources=[("h", "x")]))
    # As in cuda.core, use_libdevice is ignored for C++.
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90", use_libdevice=True)) as prog:
        assert prog.compile("cubin").code[:4] == b"\x7fELF"


def test_close_is_idempotent_and_blocks_use():
    prog = Program(KERNEL, "c++", ProgramOptions(arch="sm_90"))
    assert isinstance(prog.handle, int) and prog.handle != 0
    assert not prog.is_closed
    assert repr(prog) == "<Program backend='NVRTC'>"
    prog.close()
    prog.close()
    assert prog.is_closed
    with pytest.raises(RuntimeError, match="Program has been closed"):
        prog.compile("ptx")
    with pytest.raises(RuntimeError, match="Program has been closed"):
        _ = prog.handle


def test_with_statement_closes():
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        pass
    assert prog.is_closed


def test_unclosed_program_is_finalized_without_warning():
    prog = Program(KERNEL, "c++", ProgramOptions(arch="sm_90"))
    prog.compile("ptx")
    finalizer = prog._finalizer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del prog
        finalizer()  # what garbage collection runs; a failure would warn
    assert not finalizer.alive


def test_compile_is_serialized_across_threads():
    prog = Program(TEMPLATES, "c++", ProgramOptions(arch="sm_90"))
    results, errors = [], []

    def work(expr):
        try:
            obj = prog.compile("cubin", name_expressions=(expr,))
            results.append((expr, obj))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(f"ns::fill<{i}>",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prog.close()
    assert not errors
    assert len(results) == 6
    for expr, obj in results:
        assert obj.code[:4] == ELF_MAGIC
        n = expr.split("<")[1].rstrip(">")
        assert f"Li{n}E".encode() in obj.symbol_mapping[expr]


def test_ptx_warning_when_driver_is_older(monkeypatch):
    import cuda_core._program_status as program_mod

    monkeypatch.setattr(program_mod, "_driver_ptx_state", lambda: False)
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        with pytest.warns(RuntimeWarning, match="driver version is older") as record:
            prog.compile("ptx")
        assert record[0].filename == __file__  # stacklevel points at the caller
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            prog.compile("cubin")  # cubin: no warning
    monkeypatch.setattr(program_mod, "_driver_ptx_state", lambda: None)
    assert Program.driver_can_load_nvrtc_ptx_output() is False
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            prog.compile("ptx")  # no driver: nothing to warn about


def test_driver_can_load_nvrtc_ptx_output_matches_environment():
    from conftest import gpu_status

    from cuda_core._loader import driver_version, nvrtc_version

    result = Program.driver_can_load_nvrtc_ptx_output()
    assert isinstance(result, bool)
    if not gpu_status()[0]:
        try:
            driver_version()
        except CUDAError:
            assert result is False  # no driver: nothing can load it
            return
    major, minor = nvrtc_version()
    assert result == (major * 1000 + minor * 10 <= driver_version())


# -- precompiled headers ------------------------------------------------------------


def _pch_source(tmp_path, functions=50):
    header = tmp_path / "big.cuh"
    header.write_text(
        "".join(f"__device__ int f{i}(int x) {{ return x + {i}; }}\n" for i in range(functions))
    )
    return '#include "big.cuh"\nextern "C" __global__ void k(int *a) { a[0] = f1(a[0]); }\n'


def test_pch_status_none_without_pch():
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        assert prog.pch_status is None
        prog.compile("ptx")
        assert prog.pch_status is None


def test_pch_created(tmp_path):
    src = _pch_source(tmp_path)
    pch = tmp_path / "x.pch"
    opts = ProgramOptions(arch="sm_90", include_path=str(tmp_path), create_pch=str(pch))
    with Program(src, "c++", opts) as prog:
        assert prog.pch_status is None  # not compiled yet
        prog.compile("cubin")
        assert prog.pch_status is PCHStatusType.CREATED
        assert prog.pch_status == "created"
    assert pch.exists()
    use = ProgramOptions(arch="sm_90", include_path=str(tmp_path), use_pch=str(pch))
    logs = io.StringIO()
    with Program(src, "c++", use) as prog:
        assert prog.compile("cubin", logs=logs).code[:4] == ELF_MAGIC
        assert prog.pch_status is None
    assert "using precompiled header" in logs.getvalue()


def test_pch_heap_exhausted_is_resized_and_retried(tmp_path):
    src = _pch_source(tmp_path, functions=2000)
    pch = tmp_path / "big.pch"
    size = ffi.new("size_t *")
    assert lib.nvrtcGetPCHHeapSize(size) == 0
    original = size[0]
    assert lib.nvrtcSetPCHHeapSize(1 << 20) == 0  # far too small for this header
    try:
        opts = ProgramOptions(arch="sm_90", include_path=str(tmp_path), create_pch=str(pch))
        created = []
        original_new = Program._new_nvrtc_program

        def spy(self):
            created.append(1)
            original_new(self)

        with Program(src, "c++", opts) as prog:
            prog._new_nvrtc_program = spy.__get__(prog)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                obj = prog.compile("cubin")
            assert prog.pch_status is PCHStatusType.CREATED
        assert created == [1]  # recompiled once, on a fresh program
        assert obj.code[:4] == ELF_MAGIC
        assert pch.exists()
        assert lib.nvrtcGetPCHHeapSize(size) == 0
        assert size[0] > 1 << 20
    finally:
        assert lib.nvrtcSetPCHHeapSize(original) == 0


def test_pch_failure_warns_with_reason(tmp_path, monkeypatch):
    import cuda_core._program_status as program_mod

    monkeypatch.setattr(
        program_mod,
        "_pch_status",
        lambda prog: (PCHStatusType.FAILED, "NVRTC_ERROR_PCH_CREATE: PCH creation failed"),
    )
    opts = ProgramOptions(arch="sm_90", create_pch=str(tmp_path / "x.pch"))
    with Program(KERNEL, "c++", opts) as prog:
        with pytest.warns(RuntimeWarning, match="NVRTC_ERROR_PCH_CREATE") as record:
            prog.compile("ptx")
        assert prog.pch_status is PCHStatusType.FAILED
    assert record[0].filename == __file__


def test_pch_status_reads_real_nvrtc_statuses():
    import cuda_core._program_status as program_mod

    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        prog.compile("ptx")
        status, reason = program_mod._pch_status(prog._box[0])
    assert status is PCHStatusType.NOT_ATTEMPTED and reason is None


# -- PTX through the linker ----------------------------------------------------------


def _ptx(arch="sm_90", src=KERNEL, **kw):
    with Program(src, "c++", ProgramOptions(arch=arch, **kw)) as prog:
        return prog.compile("ptx")


def test_ptx_program_to_cubin():
    ptx = _ptx().code.decode()
    with Program(ptx, "ptx", ProgramOptions(arch="sm_90", name="from_ptx")) as prog:
        assert prog.backend in ("nvJitLink", "driver")
        assert prog.backend is CompilerBackendType.NVJITLINK
        assert isinstance(prog.handle, int) and prog.handle != 0
        assert prog.pch_status is None
        cubin = prog.compile("cubin")
        again = prog.compile("cubin")  # a second compile works (fresh linker)
    assert cubin.code[:4] == ELF_MAGIC and cubin.code_type == "cubin"
    assert cubin.name == "from_ptx"
    assert again.code[:4] == ELF_MAGIC


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_register_count": 32},
        {"debug": True},
        {"lineinfo": True},
        {"ftz": True},
        {"prec_div": True},
        {"prec_sqrt": True},
        {"fma": True},
        {"time": True},
        {"split_compile": 2},
        {"ptxas_options": ["-v"]},
        {"no_cache": True},
    ],
    ids=lambda kw: next(iter(kw)),
)
def test_ptx_program_with_options(kwargs):
    ptx = _ptx().code.decode()
    with Program(ptx, "ptx", ProgramOptions(arch="sm_90", **kwargs)) as prog:
        assert prog.compile("cubin").code[:4] == ELF_MAGIC


def test_ptx_program_rejections_and_warnings():
    ptx = _ptx().code.decode()
    with pytest.raises(ValueError, match="extra_sources is not supported by the PTX backend"):
        Program(ptx, "ptx", ProgramOptions(arch="sm_90", extra_sources=[("m", b"data")]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # ignored silently, as in cuda.core
        prog = Program(ptx, "ptx", ProgramOptions(arch="sm_90", numba_debug=True))
    assert prog.compile("cubin").code[:4] == ELF_MAGIC
    prog.close()
    for bad in (42, ptx.encode()):
        with pytest.raises(TypeError, match="^Expected type str, but got"):
            Program(bad, "ptx", ProgramOptions(arch="sm_90"))
    with Program(ptx, "ptx", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(ValueError, match='Unsupported target_type="ltoir" for nvJitLink'):
            prog.compile("ltoir")


# -- NVVM ----------------------------------------------------------------------------


@needs_nvvm
def test_nvvm_to_ptx_and_ltoir():
    opts = ProgramOptions(arch="sm_90", name="nvvm_prog")
    with Program(nvvm_ir(), "nvvm", opts) as prog:
        assert prog.backend is CompilerBackendType.NVVM
        assert isinstance(prog.handle, int) and prog.handle != 0
        ptx = prog.compile("ptx")
        ltoir = prog.compile("ltoir")
    assert ptx.name == ltoir.name == "nvvm_prog"
    assert b".visible .entry simple(" in ptx.code
    assert ".target sm_90" in _ptx_targets(ptx.code)
    assert ltoir.code[:4] == LTOIR_MAGIC


@needs_nvvm
@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_nvvm_accepts_bytes(kind):
    with Program(kind(nvvm_ir().encode()), "nvvm", ProgramOptions(arch="sm_80")) as prog:
        assert b".target sm_80" in prog.compile("ptx").code


@needs_nvvm
def test_nvvm_extra_sources_and_libdevice():
    ir = nvvm_ir()
    v = ffi.new("int[4]")
    lib.nvvmIRVersion(v, v + 1, v + 2, v + 3)
    main = ir.replace(
        "  %r = fmul float %v, %factor\n",
        "  %m = fmul float %v, %factor\n  %h = call float @helper(float %m)\n"
        "  %r = call float @__nv_sqrtf(float %h)\n",
    ).replace(
        "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()",
        "declare float @helper(float)\ndeclare float @__nv_sqrtf(float)\n"
        "declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()",
    )
    helper = ir.split("declare")[0] + (
        "define float @helper(float %x) {\n  %y = fadd float %x, 1.0\n  ret float %y\n}\n"
        f"!nvvmir.version = !{{!0}}\n!0 = !{{i32 {v[0]}, i32 {v[1]}, i32 {v[2]}, i32 {v[3]}}}\n"
    )
    opts = ProgramOptions(arch="sm_90", extra_sources=[("helper", helper)], use_libdevice=True)
    logs = io.StringIO()
    with Program(main, "nvvm", opts) as prog:
        ptx = prog.compile("ptx", logs=logs).code
        ptx2 = prog.compile("ptx").code  # libdevice is added once
    assert b".visible .entry simple(" in ptx
    assert b"sqrt" in ptx  # __nv_sqrtf from libdevice was inlined
    assert b"call" not in ptx.split(b".entry simple(")[1]  # helper resolved and inlined
    assert ptx == ptx2


@needs_nvvm
def test_nvvm_invalid_ir_raises_with_log():
    with Program("this is not valid NVVM IR", "nvvm", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(NVVMError, match="NVVM program log") as info:
            prog.compile("ptx")
    assert info.value.log


@needs_nvvm
def test_nvvm_rejections():
    with pytest.raises(TypeError, match="NVVM IR code must be provided as str, bytes"):
        Program(42, "nvvm", ProgramOptions(arch="sm_90"))
    with Program(nvvm_ir(), "nvvm", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(ValueError, match='Unsupported target_type="cubin" for NVVM'):
            prog.compile("cubin")
        with pytest.raises(ValueError, match="name_expressions are only supported by the NVRTC"):
            prog.compile("ptx", name_expressions=("simple",))
    with Program(nvvm_ir(), "nvvm", ProgramOptions(arch="sm_90", lineinfo=True)) as prog:
        with pytest.raises(CUDAError, match="not supported by NVVM backend: lineinfo"):
            prog.compile("ptx")


@needs_nvvm
def test_nvvm_close():
    prog = Program(nvvm_ir(), "nvvm", ProgramOptions(arch="sm_90"))
    prog.close()
    prog.close()
    with pytest.raises(RuntimeError, match="Program has been closed"):
        prog.compile("ptx")
