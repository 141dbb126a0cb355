# SPDX-License-Identifier: Apache-2.0
"""Program and ProgramOptions check what cuda.core checks, when it checks it."""

from __future__ import annotations

import warnings

import pytest
from _helpers import _nvrtc_available

from cuda_core import CUDAError, Program, ProgramOptions

KERNEL = 'extern "C" __global__ void k(int *a) { a[0] = 1; }'
UNION = "Union[str, tuple[str, str]]"


requires_nvrtc = pytest.mark.skipif(not _nvrtc_available(), reason="NVRTC not found")


# -- define_macro: accepted at construction, RuntimeError when flags are built -------


@pytest.mark.parametrize(
    "macro, flags",
    [
        ("X", ["--define-macro=X"]),
        ("X=1", ["--define-macro=X=1"]),
        (("X", "2"), ["--define-macro=X=2"]),
        (["A", ("B", "3")], ["--define-macro=A", "--define-macro=B=3"]),
        (("A", ("B", "3")), None),  # a top-level tuple is always one pair
    ],
)
def test_define_macro_forms(macro, flags):
    opts = ProgramOptions(arch="sm_90", define_macro=macro)
    if flags is None:
        with pytest.raises(RuntimeError, match=r"^Expected define_macro tuple\[str, str\], got"):
            opts.as_bytes("nvrtc")
        return
    assert [f.decode() for f in opts.as_bytes("nvrtc")] == ["-arch=sm_90", *flags]


@pytest.mark.parametrize(
    "macro, message",
    [
        (("ONLY",), "Expected define_macro tuple[str, str], got ('ONLY',)"),
        (("A", 1), "Expected define_macro tuple[str, str], got ('A', 1)"),
        (("A", "1", "2"), "Expected define_macro tuple[str, str], got ('A', '1', '2')"),
        (["A", 7], f"Expected define_macro {UNION}, got 7"),
        (["A", ("B",)], "Expected define_macro tuple[str, str], got ('B',)"),
        (42, f"Expected define_macro {UNION}, list[{UNION}], got 42"),
        ([], f"Expected define_macro {UNION}, list[{UNION}], got []"),
        ([1, 2], f"Expected define_macro {UNION}, list[{UNION}], got [1, 2]"),
        ({"A": "1"}, f"Expected define_macro {UNION}, list[{UNION}], got {{'A': '1'}}"),
    ],
)
def test_bad_define_macro_fails_only_when_flags_are_built(macro, message):
    opts = ProgramOptions(arch="sm_90", define_macro=macro)  # accepted, as upstream
    assert opts.define_macro == macro
    with pytest.raises(RuntimeError) as info:
        opts.as_bytes("nvrtc")
    assert str(info.value) == message


@requires_nvrtc
def test_bad_define_macro_fails_at_compile_not_at_program():
    opts = ProgramOptions(arch="sm_90", define_macro=42)
    with Program(KERNEL, "c++", opts) as prog:  # construction succeeds
        with pytest.raises(RuntimeError, match="Expected define_macro"):
            prog.compile("ptx")


def test_define_macro_with_nvvm_is_unsupported():
    with pytest.raises(CUDAError) as info:
        ProgramOptions(arch="sm_90", define_macro="X").as_bytes("nvvm")
    assert (
        str(info.value) == "The following options are not supported by NVVM backend: define_macro"
    )


# -- construction ----------------------------------------------------------------------


def test_name_is_encoded_at_construction():
    with pytest.raises(AttributeError):
        ProgramOptions(arch="sm_90", name=None)
    assert ProgramOptions(arch="sm_90", name="p").name == "p"


@pytest.mark.parametrize(
    "field, value, flag",
    [
        ("max_register_count", "lots", "--maxrregcount=lots"),
        ("max_register_count", 0, "--maxrregcount=0"),
        ("time", True, "--time=True"),
        ("ofast_compile", "warp", "--Ofast-compile=warp"),
        ("frandom_seed", 1.5, "--frandom-seed=1.5"),
        ("split_compile", -3, "--split-compile=-3"),
        ("std", 17, "--std=17"),
        ("diag_error", [True, 5], "--diag-error=True"),
        ("relocatable_device_code", "no", "--relocatable-device-code=true"),  # truthiness
    ],
)
def test_values_pass_through_to_the_flags(field, value, flag):
    opts = ProgramOptions(arch="sm_90", **{field: value})
    assert flag.encode() in opts.as_bytes("nvrtc")


def test_nvrtc_ignores_nvvm_only_fields():
    opts = ProgramOptions(arch="sm_90", use_libdevice=True, extra_sources=[("m", "x")])
    assert opts.as_bytes("nvrtc") == [b"-arch=sm_90"]


def test_nvvm_flag_order_and_gen_lto():
    opts = ProgramOptions(
        arch="sm_90",
        fma=True,
        prec_div=False,
        prec_sqrt=True,
        ftz=False,
        device_code_optimize=True,
        numba_debug=True,
        debug=True,
    )
    assert opts.as_bytes("nvvm") == [
        b"-arch=compute_90",
        b"-g",
        b"--numba-debug",
        b"-opt=3",
        b"-ftz=0",
        b"-prec-sqrt=1",
        b"-prec-div=0",
        b"-fma=1",
    ]
    assert opts.as_bytes("nvvm", "ltoir")[-1] == b"-gen-lto"
    assert b"-gen-lto" not in opts.as_bytes("nvvm", "LTOIR")  # exact match only


def test_nvvm_unsupported_list_in_field_order():
    opts = ProgramOptions(
        arch="sm_90",
        minimal=True,
        relocatable_device_code=False,  # not None: unsupported even when False
        builtin_move_forward=False,
        lineinfo=False,  # falsy: fine
        pch=True,  # ignored by NVVM
    )
    with pytest.raises(CUDAError) as info:
        opts.as_bytes("nvvm")
    assert str(info.value) == (
        "The following options are not supported by NVVM backend: relocatable_device_code, "
        "builtin_move_forward, minimal"
    )


def test_as_bytes_backend_must_be_a_string():
    with pytest.raises(AttributeError):
        ProgramOptions(arch="sm_90").as_bytes(5)
    with pytest.raises(ValueError, match="Unknown backend 'ptx'. Must be one of"):
        ProgramOptions(arch="sm_90").as_bytes("PTX")


# -- Program -----------------------------------------------------------------------------


@requires_nvrtc
@pytest.mark.parametrize("code", [KERNEL.encode(), bytearray(b"x"), 5])
def test_cpp_code_must_be_str(code):
    with pytest.raises(TypeError) as info:
        Program(code, "c++", ProgramOptions(arch="sm_90"))
    assert str(info.value).startswith(f"Expected type str, but got {type(code).__name__}: ")


@pytest.mark.parametrize("code", [b".version 8.0", 5])
def test_ptx_code_must_be_str(code):
    with pytest.raises(TypeError) as info:
        Program(code, "ptx", ProgramOptions(arch="sm_90"))
    assert str(info.value).startswith(f"Expected type str, but got {type(code).__name__}: ")


@requires_nvrtc
def test_use_libdevice_is_ignored_for_cpp():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Program(KERNEL, "c++", ProgramOptions(arch="sm_90", use_libdevice=True)) as prog:
            assert prog.compile("ptx").code


def test_unknown_code_type_checks_use_libdevice_first():
    with pytest.raises(ValueError) as info:
        Program(KERNEL, "fortran", ProgramOptions(arch="sm_90", use_libdevice=True))
    assert str(info.value) == "use_libdevice is only supported by the NVVM backend"
    with pytest.raises(RuntimeError) as info:
        Program(KERNEL, "Fortran", ProgramOptions(arch="sm_90"))
    assert str(info.value) == (
        "Unsupported code_type='fortran' (supported_code_types=('c++', 'ptx', 'nvvm'))"
    )
    with pytest.raises(RuntimeError, match="Unsupported code_type='7'"):
        Program(KERNEL, 7, ProgramOptions(arch="sm_90"))


@requires_nvrtc
def test_extra_sources_rejected_for_cpp():
    with pytest.raises(ValueError) as info:
        Program(KERNEL, "c++", ProgramOptions(arch="sm_90", extra_sources=[("m", "x")]))
    assert str(info.value) == "extra_sources is not supported by the NVRTC backend (C++ code_type)"


def test_extra_sources_rejected_for_ptx():
    with pytest.raises(ValueError) as info:
        Program(".version 8.0", "ptx", ProgramOptions(arch="sm_90", extra_sources=[("m", "x")]))
    assert str(info.value) == "extra_sources is not supported by the PTX backend."


@requires_nvrtc
def test_compile_failure_log_is_in_the_error_not_in_logs():
    import io

    from cuda_core import NVRTCError

    logs = io.StringIO()
    with Program("this is not C++", "c++", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(NVRTCError, match="compilation log"):
            prog.compile("ptx", logs=logs)
    assert logs.getvalue() == ""


@requires_nvrtc
def test_unsupported_target_message():
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(ValueError) as info:
            prog.compile("fatbin")
    assert str(info.value) == (
        "Unsupported target_type=\"fatbin\" for NVRTC (supported: 'ptx', 'cubin', 'ltoir')"
    )
