# SPDX-License-Identifier: Apache-2.0
"""Compile errors a new user meets first say what is wrong and how to fix it."""

from __future__ import annotations

import pytest
from _helpers import needs_library

from cuda_core import (
    LinkerOptions,
    NVJitLinkError,
    NVVMError,
    Program,
    ProgramOptions,
)
from cuda_core import _linker_options as linker_options_module
from cuda_core._compile_common import looks_like_cpp

CPP = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n'
HINT = "compile it with Program(code, code_type='c++')."
OPTIONS = ProgramOptions(arch="sm_90")


@needs_library("nvjitlink")
def test_cpp_given_as_ptx_names_the_code_type():
    with pytest.raises(NVJitLinkError) as info:
        Program(CPP, "ptx", OPTIONS).compile("cubin")
    message = str(info.value)
    assert message.startswith("NVJITLINK_ERROR_")  # the linker's error, as before
    assert message.endswith(f"The code looks like CUDA C++, not PTX: {HINT}")
    assert info.value.log  # the linker log is kept


@needs_library("nvvm")
def test_cpp_given_as_nvvm_names_the_code_type():
    with pytest.raises(NVVMError) as info:
        Program(CPP, "nvvm", OPTIONS).compile("ptx")
    message = str(info.value)
    assert message.startswith("NVVM_ERROR_INVALID_IR")
    assert message.endswith(f"The code looks like CUDA C++, not NVVM IR: {HINT}")


@needs_library("nvvm")
def test_nvvm_error_carries_the_log_and_says_the_status_once():
    with pytest.raises(NVVMError) as info:
        Program("this is not IR", "nvvm", OPTIONS).compile("ptx")
    exc = info.value
    first, *rest = str(exc).splitlines()
    assert first == "NVVM_ERROR_INVALID_IR"  # not "NVVM_ERROR_INVALID_IR: NVVM_ERROR_INVALID_IR"
    assert exc.name == "NVVM_ERROR_INVALID_IR"
    assert exc.log and rest[0] == f"NVVM program log: {exc.log.splitlines()[0]}"
    assert "looks like CUDA C++" not in str(exc)  # nothing C++ about it


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (CPP, True),
        ("#include <cuda_fp16.h>\n__device__ int f();", True),
        ("template <int N> __global__ void k() {}", True),
        (CPP.encode(), True),
        (".version 8.0\n.target sm_90\n.visible .entry k() { ret; }  // __global__", False),
        ('target triple = "nvptx64-nvidia-cuda"\ndefine void @k() { ret void }', False),
        (b"BC\xc0\xde" + b"__global__", False),  # LLVM bitcode
        ("this is not IR", False),
        (123, False),
    ],
)
def test_what_looks_like_cpp(code, expected):
    assert looks_like_cpp(code) is expected


@needs_library("nvrtc")
def test_arch_of_a_wrong_type_is_a_type_error_at_compile():
    options = ProgramOptions(arch=90)  # accepted, as in cuda.core
    program = Program(CPP, "c++", options)
    with pytest.raises(TypeError) as info:
        program.compile("cubin")  # where cuda.core raises AttributeError
    assert str(info.value) == (
        "ProgramOptions.arch must be a str such as 'sm_90' (or 'compute_90'), not int (90)"
    )
    assert isinstance(info.value, AttributeError)  # what cuda.core raises
    assert type(info.value).__name__ == "TypeError"


def test_arch_of_a_wrong_type_for_nvvm_flags():
    options = ProgramOptions(arch=90)
    assert options.as_bytes("nvrtc")[0] == b"-arch=90"  # rendered as given, as upstream
    with pytest.raises(TypeError, match="^ProgramOptions.arch must be a str such as 'sm_90'"):
        options.as_bytes("nvvm")


@pytest.mark.parametrize("code_type", ["c++", "ptx"])
def test_program_code_of_a_wrong_type_names_the_parameter(code_type):
    with pytest.raises(TypeError) as info:
        Program(123, code_type, OPTIONS)
    assert str(info.value) == (
        "Expected type str, but got int: Program's code parameter takes the source text "
        f"as a str for code_type={code_type!r}"
    )


def test_nvjitlink_backend_missing_says_how_to_install(monkeypatch):
    from cuda_core.typing import CompilerBackendType

    monkeypatch.setattr(
        linker_options_module, "which_backend", lambda stacklevel: CompilerBackendType.DRIVER
    )
    with pytest.raises(RuntimeError) as info:
        LinkerOptions(arch="sm_90").as_bytes("nvjitlink")
    message = str(info.value)
    assert message.startswith("nvJitLink backend is not available")
    assert 'pip install "cuda-core-cffi[cu' in message
