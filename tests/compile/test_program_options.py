# SPDX-License-Identifier: Apache-2.0
"""ProgramOptions: construction and translation to NVRTC / NVVM flags (no GPU needed)."""

from __future__ import annotations

import dataclasses
import pathlib

import pytest
from _helpers import _nvrtc_available, _nvvm_available

from cuda_core import CUDAError, Program, ProgramOptions
from cuda_core._loader import nvrtc_version
from cuda_core.typing import CompilerBackendType

KERNEL = 'extern "C" __global__ void k(float *a) { a[threadIdx.x] *= 2.0f; }'


needs_nvvm = pytest.mark.skipif(not _nvvm_available(), reason="libNVVM not found")


requires_nvrtc = pytest.mark.skipif(
    not _nvrtc_available(), reason='NVRTC not found (pip install "cuda-core-cffi[cu13]")'
)

# (options, the flags they add after -arch=sm_90), one row per field/shape.
NVRTC_CASES = [
    ({"relocatable_device_code": True}, ["--relocatable-device-code=true"]),
    ({"relocatable_device_code": False}, ["--relocatable-device-code=false"]),
    ({"extensible_whole_program": True}, ["--extensible-whole-program"]),
    ({"debug": True}, ["--device-debug"]),
    ({"debug": False}, []),
    ({"lineinfo": True}, ["--generate-line-info"]),
    ({"device_code_optimize": True}, ["--dopt=on"]),
    ({"ptxas_options": "-v"}, ["--ptxas-options=-v"]),
    ({"ptxas_options": ["-v", "-O2"]}, ["--ptxas-options=-v", "--ptxas-options=-O2"]),
    ({"max_register_count": 32}, ["--maxrregcount=32"]),
    ({"ftz": True}, ["--ftz=true"]),
    ({"prec_sqrt": False}, ["--prec-sqrt=false"]),
    ({"prec_div": False}, ["--prec-div=false"]),
    ({"fma": False}, ["--fmad=false"]),
    ({"use_fast_math": True}, ["--use_fast_math"]),
    ({"extra_device_vectorization": True}, ["--extra-device-vectorization"]),
    ({"link_time_optimization": True}, ["--dlink-time-opt"]),
    ({"gen_opt_lto": True}, ["--gen-opt-lto"]),
    ({"define_macro": "MY_MACRO"}, ["--define-macro=MY_MACRO"]),
    ({"define_macro": ("MY_MACRO", "99")}, ["--define-macro=MY_MACRO=99"]),
    (
        {"define_macro": ["A", ("B", "2")]},
        ["--define-macro=A", "--define-macro=B=2"],
    ),
    ({"undefine_macro": "M"}, ["--undefine-macro=M"]),
    ({"undefine_macro": ["M", "N"]}, ["--undefine-macro=M", "--undefine-macro=N"]),
    ({"include_path": "/usr/include/x"}, ["--include-path=/usr/include/x"]),
    (
        {"include_path": [pathlib.Path("/a"), "/b"]},
        ["--include-path=/a", "--include-path=/b"],
    ),
    ({"pre_include": "pre.h"}, ["--pre-include=pre.h"]),
    ({"no_source_include": True}, ["--no-source-include"]),
    ({"std": "c++17"}, ["--std=c++17"]),
    ({"builtin_move_forward": False}, ["--builtin-move-forward=false"]),
    ({"builtin_initializer_list": False}, ["--builtin-initializer-list=false"]),
    ({"disable_warnings": True}, ["--disable-warnings"]),
    ({"restrict": True}, ["--restrict"]),
    ({"device_as_default_execution_space": True}, ["--device-as-default-execution-space"]),
    ({"device_int128": True}, ["--device-int128"]),
    ({"optimization_info": "inline"}, ["--optimization-info=inline"]),
    ({"no_display_error_number": True}, ["--no-display-error-number"]),
    ({"diag_error": 1234}, ["--diag-error=1234"]),
    ({"diag_suppress": [177, 550]}, ["--diag-suppress=177", "--diag-suppress=550"]),
    ({"diag_warn": (1000,)}, ["--diag-warn=1000"]),
    ({"brief_diagnostics": True}, ["--brief-diagnostics=true"]),
    ({"time": "timing.csv"}, ["--time=timing.csv"]),
    ({"split_compile": 4}, ["--split-compile=4"]),
    ({"fdevice_syntax_only": True}, ["--fdevice-syntax-only"]),
    ({"minimal": True}, ["--minimal"]),
    ({"no_cache": True}, ["--no-cache"]),
    ({"fdevice_time_trace": "trace.json"}, ["--fdevice-time-trace=trace.json"]),
    ({"device_float128": True}, ["--device-float128"]),
    ({"frandom_seed": "12345"}, ["--frandom-seed=12345"]),
    ({"ofast_compile": "min"}, ["--Ofast-compile=min"]),
    ({"pch": True}, ["--pch"]),
    ({"create_pch": "x.pch"}, ["--create-pch=x.pch"]),
    ({"use_pch": "x.pch"}, ["--use-pch=x.pch"]),
    ({"pch_dir": "/tmp/pch"}, ["--pch-dir=/tmp/pch"]),
    ({"pch_verbose": True}, ["--pch-verbose=true"]),
    ({"pch_messages": False}, ["--pch-messages=false"]),
    ({"instantiate_templates_in_pch": True}, ["--instantiate-templates-in-pch=true"]),
    ({"numba_debug": True}, ["--numba-debug"]),
]

NVRTC_ONLY_NOT_IN_TABLE = {"name", "arch", "extra_sources", "use_libdevice"}


def _ids(cases):
    return [",".join(f"{k}={v!r}" for k, v in kw.items()) or "defaults" for kw, _ in cases]


@pytest.mark.parametrize(("kwargs", "flags"), NVRTC_CASES, ids=_ids(NVRTC_CASES))
def test_nvrtc_flags(kwargs, flags):
    opts = ProgramOptions(arch="sm_90", **kwargs)
    out = opts.as_bytes("nvrtc")
    assert all(isinstance(f, bytes) for f in out)
    assert [f.decode() for f in out] == ["-arch=sm_90", *flags]
    # The enum member works as the backend argument too.
    assert opts.as_bytes(CompilerBackendType.NVRTC) == out


def test_nvrtc_table_covers_every_field():
    covered = {k for kw, _ in NVRTC_CASES for k in kw}
    fields = {f.name for f in dataclasses.fields(ProgramOptions)}
    assert fields - covered == NVRTC_ONLY_NOT_IN_TABLE


def test_nvrtc_flags_combined_in_a_stable_order():
    opts = ProgramOptions(arch="sm_80", debug=True, lineinfo=True, ftz=True, std="c++17")
    assert opts.as_bytes("NVRTC") == [
        b"-arch=sm_80",
        b"--device-debug",
        b"--generate-line-info",
        b"--ftz=true",
        b"--std=c++17",
    ]


# NVRTC really accepts every flag we render: compile once per table row.
_NEEDS_FILES = {"time", "fdevice_time_trace", "create_pch", "use_pch", "pch_dir", "pre_include"}


@requires_nvrtc
@pytest.mark.parametrize(("kwargs", "flags"), NVRTC_CASES, ids=_ids(NVRTC_CASES))
def test_nvrtc_accepts_rendered_flags(kwargs, flags, tmp_path):
    kwargs = dict(kwargs)
    arch = "sm_90"
    field = next(iter(kwargs))
    if field in _NEEDS_FILES:
        header = tmp_path / "pre.h"
        header.write_text("#define PRE 1\n")
        value = {
            "time": tmp_path / "timing.csv",
            "fdevice_time_trace": tmp_path / "trace",
            "create_pch": tmp_path / "x.pch",
            "use_pch": tmp_path / "x.pch",
            "pch_dir": tmp_path,
            "pre_include": str(header),
        }[field]
        kwargs[field] = str(value)
        if field == "use_pch":  # make the header it uses first
            with Program(KERNEL, "c++", ProgramOptions(arch=arch, create_pch=str(value))) as p:
                p.compile("ptx")
    if field == "device_float128":
        arch = "sm_100"
    if field == "gen_opt_lto":
        kwargs["link_time_optimization"] = True
    if field == "numba_debug":  # NVRTC requires --device-debug with it
        if nvrtc_version() < (13, 2):
            pytest.skip("--numba-debug needs NVRTC 13.2 or newer")
        kwargs["debug"] = True
    target = "ltoir" if kwargs.get("link_time_optimization") else "ptx"
    with Program(KERNEL, "c++", ProgramOptions(arch=arch, **kwargs)) as prog:
        obj = prog.compile(target)
    assert obj.code_type == target
    assert len(obj.code) > 0


NVVM_CASES = [
    ({}, None, []),
    ({"debug": True}, None, ["-g"]),
    ({"debug": False}, None, []),
    ({"device_code_optimize": True}, None, ["-opt=3"]),
    ({"device_code_optimize": False}, None, ["-opt=0"]),
    ({"ftz": True}, None, ["-ftz=1"]),
    ({"prec_sqrt": False}, None, ["-prec-sqrt=0"]),
    ({"prec_div": True}, None, ["-prec-div=1"]),
    ({"fma": False}, None, ["-fma=0"]),
    ({"numba_debug": True, "debug": True}, None, ["-g", "--numba-debug"]),
    ({"numba_debug": True, "device_code_optimize": False}, None, ["--numba-debug", "-opt=0"]),
    ({"device_code_optimize": 1}, None, []),  # only True/False select -opt, as upstream
    ({}, "LTOIR", []),  # -gen-lto only for exactly "ltoir", as upstream
    ({}, "ltoir", ["-gen-lto"]),
    ({"link_time_optimization": True}, "ptx", []),
    ({"no_cache": True, "use_libdevice": True}, None, []),
]


@pytest.mark.parametrize(("kwargs", "target", "flags"), NVVM_CASES)
def test_nvvm_flags(kwargs, target, flags):
    out = ProgramOptions(arch="sm_90", **kwargs).as_bytes("nvvm", target)
    assert [f.decode() for f in out] == ["-arch=compute_90", *flags]


def test_nvvm_keeps_virtual_arch():
    assert ProgramOptions(arch="compute_80").as_bytes("nvvm")[0] == b"-arch=compute_80"
    assert ProgramOptions(arch="sm_90a").as_bytes("nvvm")[0] == b"-arch=compute_90a"


NVVM_UNSUPPORTED = [
    {k: v}
    for kw, _ in NVRTC_CASES
    for k, v in kw.items()
    if k
    not in {
        "debug",
        "device_code_optimize",
        "ftz",
        "prec_sqrt",
        "prec_div",
        "fma",
        "numba_debug",
        "link_time_optimization",
        "no_cache",
        # libNVVM ignores these, as cuda.core does:
        "fdevice_time_trace",
        "device_float128",
        "frandom_seed",
        "ofast_compile",
        "pch",
        "create_pch",
        "use_pch",
        "pch_dir",
        "pch_verbose",
        "pch_messages",
        "instantiate_templates_in_pch",
    }
    and v is not False
]


@pytest.mark.parametrize(
    "field, value",
    [
        ("fdevice_time_trace", "t.json"),
        ("device_float128", True),
        ("frandom_seed", "1"),
        ("ofast_compile", "max"),
        ("pch", True),
        ("create_pch", "x.pch"),
        ("use_pch", "x.pch"),
        ("pch_dir", "/d"),
        ("pch_verbose", True),
        ("pch_messages", True),
        ("instantiate_templates_in_pch", True),
    ],
)
def test_nvvm_ignores_nvrtc_only_fields_as_upstream(field, value):
    flags = ProgramOptions(arch="sm_90", **{field: value}).as_bytes("nvvm")
    assert flags == [b"-arch=compute_90"]


@pytest.mark.parametrize("kwargs", NVVM_UNSUPPORTED, ids=lambda kw: next(iter(kw)))
def test_nvvm_rejects_unsupported_option(kwargs):
    opts = ProgramOptions(arch="sm_80", **kwargs)
    name = next(iter(kwargs))
    with pytest.raises(CUDAError, match=rf"not supported by NVVM backend: {name}$"):
        opts.as_bytes("nvvm")
    with pytest.raises(ValueError, match=name):
        opts.as_bytes("nvvm")


def test_nvvm_lists_every_unsupported_option():
    opts = ProgramOptions(arch="sm_80", lineinfo=True, std="c++17", restrict=True)
    with pytest.raises(CUDAError, match="NVVM backend: lineinfo, std, restrict"):
        opts.as_bytes("nvvm")


@pytest.mark.parametrize(
    "kwargs",
    [{"use_libdevice": True}, {"extra_sources": [("m", "x")]}],
    ids=["use_libdevice", "extra_sources"],
)
def test_nvrtc_flags_ignore_nvvm_only_options(kwargs):
    assert ProgramOptions(arch="sm_80", **kwargs).as_bytes("nvrtc") == [b"-arch=sm_80"]


def test_unknown_backend():
    with pytest.raises(ValueError, match="Unknown backend 'invalid'"):
        ProgramOptions(arch="sm_80").as_bytes("invalid")


def test_values_render_as_given():
    opts = ProgramOptions(
        arch="sm_80", time=True, max_register_count="32", ofast_compile="fast", debug="yes"
    )
    flags = opts.as_bytes("nvrtc")
    assert flags == [
        b"-arch=sm_80",
        b"--device-debug",  # any truthy value turns a flag on
        b"--maxrregcount=32",
        b"--time=True",
        b"--Ofast-compile=fast",
    ]
    # A value that is neither a str nor a sequence adds no list flag.
    assert ProgramOptions(arch="sm_80", include_path=5).as_bytes("nvrtc") == [b"-arch=sm_80"]


# Values cuda.core accepts at construction (NVRTC judges them at compile time).
ACCEPTED_AT_CONSTRUCTION = [
    {"arch": "gfx90a"},
    {"arch": 90},
    {"debug": "yes"},
    {"pch": 1},
    {"max_register_count": 0},
    {"max_register_count": "32"},
    {"split_compile": -1},
    {"define_macro": ("ONLY_NAME",)},
    {"define_macro": 42},
    {"define_macro": []},
    {"ptxas_options": ["-v", 2]},
    {"undefine_macro": 5},
    {"include_path": 5},
    {"diag_error": "1234"},
    {"diag_warn": [-1]},
    {"std": 17},
    {"time": 3},
    {"create_pch": 1},
    {"frandom_seed": 1.5},
    {"ofast_compile": "fast"},
]


@pytest.mark.parametrize("kwargs", ACCEPTED_AT_CONSTRUCTION, ids=lambda x: str(x))
def test_values_are_accepted_at_construction(kwargs):
    opts = ProgramOptions(**{"arch": "sm_80", **kwargs})
    for field, value in kwargs.items():
        assert getattr(opts, field) == value


INVALID_AT_CONSTRUCTION = [
    ({"name": None}, AttributeError, "encode"),
    ({"name": 5}, AttributeError, "encode"),
    ({"extra_sources": 42}, TypeError, r"extra_sources must be a sequence of 2-tuples"),
    ({"extra_sources": ["not_a_tuple"]}, TypeError, r"Each extra module must be a 2-tuple"),
    ({"extra_sources": [(42, b"src")]}, TypeError, r"Module name at index 0 must be a string"),
    ({"extra_sources": [("mod", 42)]}, TypeError, r"Module source at index 0 must be str"),
    ({"extra_sources": [("mod", b"")]}, ValueError, r"Module source for 'mod'.*cannot be empty"),
]


@pytest.mark.parametrize(("kwargs", "exc", "match"), INVALID_AT_CONSTRUCTION, ids=lambda x: str(x))
def test_invalid_values_are_rejected_at_construction(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ProgramOptions(**{"arch": "sm_80", **kwargs})


def test_repr_is_short():
    assert repr(ProgramOptions(name="k", arch="sm_80")) == "ProgramOptions(name='k', arch='sm_80')"


def test_paths_render_as_upstream(tmp_path):
    opts = ProgramOptions(arch="sm_80", include_path=[tmp_path], pch_dir=tmp_path)
    flags = opts.as_bytes("nvrtc")
    assert f"--include-path={tmp_path}".encode() in flags  # a list of paths
    assert f"--pch-dir={tmp_path}".encode() in flags
    # A bare path is neither a str nor a sequence: no --include-path, as upstream.
    assert ProgramOptions(arch="sm_80", include_path=tmp_path).as_bytes("nvrtc") == [b"-arch=sm_80"]


@requires_nvrtc
def test_arch_without_gpu_fails_clearly_when_needed(monkeypatch):
    import cuda_core._compile_common as common_mod
    import cuda_core._program_options as options_mod

    def no_device():
        return None, "the CUDA driver could not be loaded"

    monkeypatch.setattr(options_mod, "_query_device_arch", no_device)
    monkeypatch.setattr(common_mod, "_query_device_arch", no_device)
    opts = ProgramOptions(debug=True)  # construction succeeds
    assert opts.arch is None
    for backend in ("nvrtc", "nvvm"):
        with pytest.raises(ValueError, match=r"arch is not set.*driver.*Pass arch="):
            opts.as_bytes(backend)
    prog = Program(KERNEL, "c++", opts)
    with pytest.raises(ValueError, match=r"Pass arch= explicitly"):
        prog.compile("cubin")
    prog.close()


def test_arch_defaults_to_device_when_present(monkeypatch):
    import cuda_core._program_options as options_mod

    monkeypatch.setattr(options_mod, "_query_device_arch", lambda: ("sm_86", None))
    assert ProgramOptions().arch == "sm_86"
    assert ProgramOptions().as_bytes("nvrtc")[0] == b"-arch=sm_86"


def test_real_default_arch_matches_environment():
    from conftest import gpu_status

    available, _ = gpu_status()
    opts = ProgramOptions()
    if available:
        from cuda_core import Device

        assert opts.arch == f"sm_{Device().arch}"
    else:
        assert opts.arch is None


@requires_nvrtc
def test_program_accepts_options_instance_dict_and_none(monkeypatch):
    import cuda_core._program_options as options_mod

    monkeypatch.setattr(options_mod, "_query_device_arch", lambda: ("sm_80", None))
    for options in (ProgramOptions(arch="sm_80", name="p"), {"arch": "sm_80", "name": "p"}):
        with Program(KERNEL, "c++", options) as prog:
            assert prog.compile("ptx").name == "p"
    with Program(KERNEL, "c++", None) as prog:
        assert prog.compile("ptx").name == "default_program"
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        Program(KERNEL, "c++", {"arch": "sm_80", "bogus": 1})
    with pytest.raises(TypeError) as info:
        Program(KERNEL, "c++", 42)
    assert str(info.value) == (
        "The Program options must be provided as an object of type ProgramOptions or as a "
        "dict with valid Program options. The provided object is '42'."
    )


@needs_nvvm
@pytest.mark.parametrize(("kwargs", "target", "flags"), NVVM_CASES)
def test_nvvm_accepts_rendered_flags(kwargs, target, flags):
    if target == "LTOIR":
        pytest.skip("Program.compile lowercases the target")
    from _helpers import nvvm_ir

    target = target or "ptx"
    if kwargs.get("numba_debug") and not _nvvm_accepts(b"--numba-debug"):
        pytest.skip("this libNVVM does not recognize --numba-debug")
    with Program(nvvm_ir(), "nvvm", ProgramOptions(arch="sm_90", **kwargs)) as prog:
        obj = prog.compile(target)
    assert obj.code_type == target and len(obj.code) > 0


def _nvvm_accepts(flag):
    """Whether the loaded libNVVM accepts ``flag`` (asked while verifying a module)."""
    from _helpers import nvvm_ir

    from cuda_core._cuda_ffi import ffi, lib

    ir = nvvm_ir().encode()
    box = ffi.new("nvvmProgram *")
    assert lib.nvvmCreateProgram(box) == 0
    try:
        assert lib.nvvmAddModuleToProgram(box[0], ir, len(ir), b"probe") == 0
        opts = [ffi.new("char[]", b"-arch=compute_90"), ffi.new("char[]", flag)]
        status = lib.nvvmVerifyProgram(box[0], 2, ffi.new("const char *[]", opts))
    finally:
        lib.nvvmDestroyProgram(box)
    return status != lib.NVVM_ERROR_INVALID_OPTION
