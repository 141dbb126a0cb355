# SPDX-License-Identifier: Apache-2.0
"""Foundation: import, loader, error translation, report, library versions."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import gpu_status

import cuda_core
from cuda_core import _loader
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import (
    CUDAError,
    LibraryNotFoundError,
    NVJitLinkError,
    NVRTCError,
    NVVMError,
    check,
    check_nvjitlink,
    check_nvrtc,
    check_nvvm,
    driver_error,
)

HAVE_GPU = gpu_status()[0]


def _run(code, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_import_needs_no_driver():
    # A fresh interpreter imports the package without touching any library.
    r = _run(
        "import cuda_core; from cuda_core._cuda_ffi import lib; "
        "print([lib.cc_library_state(i) for i in range(4)])"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[0, 0, 0, 0]"


def test_version_single_source():
    from cuda_core._version import __version__

    assert cuda_core.__version__ == __version__
    assert __version__.count(".") == 2


def test_exception_hierarchy():
    for cls in (NVRTCError, NVVMError, NVJitLinkError, LibraryNotFoundError):
        assert issubclass(cls, CUDAError)
    assert issubclass(cuda_core.CUDAWarning, RuntimeWarning)


def test_report_runs_and_exits_zero():
    r = subprocess.run(
        [sys.executable, "-m", "cuda_core"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert f"cuda_core {cuda_core.__version__}" in r.stdout
    assert "NVRTC" in r.stdout and "nvJitLink" in r.stdout
    if HAVE_GPU:
        assert "compute capability" in r.stdout
    else:
        assert "no CUDA driver found" in r.stdout or "no usable GPU" in r.stdout


@pytest.mark.parametrize(
    "status, name",
    [
        (1, "CUDA_ERROR_INVALID_VALUE"),
        (2, "CUDA_ERROR_OUT_OF_MEMORY"),
        (100, "CUDA_ERROR_NO_DEVICE"),
        (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
        (999, "CUDA_ERROR_UNKNOWN"),
    ],
)
def test_driver_error_translation(status, name):
    with pytest.raises(CUDAError) as info:
        check(status)
    assert info.value.code == status
    assert info.value.name == name
    assert str(info.value).startswith(f"{name}: ")
    assert len(str(info.value)) > len(name) + 4  # has a description


def test_driver_error_unknown_code():
    err = driver_error(123456)
    assert "123456" in err.name
    check(0)  # success does not raise


@pytest.mark.parametrize(
    "status, name",
    [
        (3, "NVRTC_ERROR_INVALID_INPUT"),
        (5, "NVRTC_ERROR_INVALID_OPTION"),
        (6, "NVRTC_ERROR_COMPILATION"),
    ],
)
def test_nvrtc_error_translation(status, name):
    _loader.ensure_loaded("nvrtc")
    with pytest.raises(NVRTCError) as info:
        check_nvrtc(status)
    assert info.value.name == name
    message = str(info.value)
    assert message.startswith(f"{name}: ")
    assert message.count("NVRTC_") == 1, message  # the name once, then what it means
    assert len(message) > len(name) + 5  # a description follows the name


@pytest.mark.parametrize(
    "status, name",
    [(1, "NVJITLINK_ERROR_UNRECOGNIZED_OPTION"), (2, "NVJITLINK_ERROR_MISSING_ARCH")],
)
def test_nvjitlink_error_translation(status, name):
    with pytest.raises(NVJitLinkError) as info:
        check_nvjitlink(status)
    assert info.value.name == name


def test_nvvm_error_translation():
    _loader.ensure_loaded("nvvm")
    with pytest.raises(NVVMError) as info:
        check_nvvm(lib.NVVM_ERROR_INVALID_IR)
    assert info.value.name == "NVVM_ERROR_INVALID_IR"


def test_nvrtc_compile_error_carries_log():
    _loader.ensure_loaded("nvrtc")
    prog = ffi.new("nvrtcProgram *")
    src = b'extern "C" __global__ void k() { this is not c++; }\n'
    check_nvrtc(lib.nvrtcCreateProgram(prog, src, b"bad.cu", 0, ffi.NULL, ffi.NULL))
    try:
        opts = [ffi.new("char[]", b"-arch=sm_80")]
        status = lib.nvrtcCompileProgram(prog[0], 1, ffi.new("const char *[]", opts))
        with pytest.raises(NVRTCError) as info:
            check_nvrtc(status, prog[0])
        assert info.value.name == "NVRTC_ERROR_COMPILATION"
        assert "bad.cu(1)" in str(info.value)
        assert info.value.log and "error" in info.value.log
    finally:
        check_nvrtc(lib.nvrtcDestroyProgram(prog))


def test_nvjitlink_error_carries_log():
    _loader.ensure_loaded("nvjitlink")
    handle = ffi.new("nvJitLinkHandle *")
    arch = ffi.new("char[]", b"-arch=sm_80")
    opts = ffi.new("const char *[]", [arch])
    check_nvjitlink(lib.nvJitLinkCreate(handle, 1, opts))
    try:
        junk = b"this is not a valid ptx module"
        status = lib.nvJitLinkAddData(handle[0], lib.NVJITLINK_INPUT_PTX, junk, len(junk), b"junk")
        if status == 0:
            status = lib.nvJitLinkComplete(handle[0])
        with pytest.raises(NVJitLinkError) as info:
            check_nvjitlink(status, handle[0])
        assert "Linker error log:" in str(info.value)
    finally:
        check_nvjitlink(lib.nvJitLinkDestroy(handle))


def test_libraries_load_from_wheels_with_versions():
    major, minor = _loader.nvrtc_version()
    assert major >= 12 and minor >= 0
    jmajor, _ = _loader.nvjitlink_version()
    assert jmajor >= 12
    for name in ("nvrtc", "nvjitlink"):
        path = _loader.library_path(name)
        assert path and os.path.exists(path)
    archs = ffi.new("int *")
    check_nvrtc(lib.nvrtcGetNumSupportedArchs(archs))
    assert archs[0] > 0


def test_nvvm_version_and_libdevice():
    try:
        major, _ = _loader.nvvm_version()
    except LibraryNotFoundError as exc:
        pytest.skip(f"libNVVM not installed: {exc}")
    assert major >= 1
    path = _loader.libdevice_path()
    assert path is None or path.endswith("libdevice.10.bc")


def test_loader_override_missing_file():
    # A fresh process so the library is not already loaded.
    r = _run(
        "from cuda_core import _loader\n"
        "try:\n"
        "    _loader.ensure_loaded('nvrtc')\n"
        "except Exception as e:\n"
        "    print(type(e).__name__); print(e)\n",
        env={"CUDA_CORE_NVRTC_PATH": "/nonexistent/libnvrtc.so.99"},
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "LibraryNotFoundError"
    assert "CUDA_CORE_NVRTC_PATH" in r.stdout and "/nonexistent/libnvrtc.so.99" in r.stdout


def test_loader_override_not_a_library(tmp_path):
    bogus = tmp_path / "libnvJitLink.so.13"
    bogus.write_bytes(b"not an ELF file")
    r = _run(
        "from cuda_core import _loader\n"
        "try:\n"
        "    _loader.ensure_loaded('nvjitlink')\n"
        "except Exception as e:\n"
        "    print(type(e).__name__); print(e)\n",
        env={"CUDA_CORE_NVJITLINK_PATH": str(bogus)},
    )
    assert r.stdout.startswith("LibraryNotFoundError")
    assert "could not be loaded" in r.stdout and "dlopen" in r.stdout


def test_loader_full_miss_lists_search_and_fix(tmp_path):
    # Hide wheels, toolkits and the system loader: the error lists each place.
    r = _run(
        "import sys, site\n"
        "from cuda_core import _loader\n"
        "_loader._site_dirs = lambda: []\n"
        "_loader._toolkit_roots = lambda: [('test', '/nonexistent-cuda')]\n"
        "_loader._LIBS['nvvm'] = _loader._LIBS['nvvm'][:4] + (('libnvvm-missing.so.0',),)"
        " + _loader._LIBS['nvvm'][5:]\n"
        "try:\n"
        "    _loader.ensure_loaded('nvvm')\n"
        "except Exception as e:\n"
        "    print(type(e).__name__); print(e)\n"
    )
    assert r.stdout.startswith("LibraryNotFoundError"), r.stdout + r.stderr
    assert "/nonexistent-cuda/nvvm/lib64/libnvvm.so" in r.stdout
    assert "libnvvm-missing.so.0" in r.stdout
    assert "cuda-core-cffi[cu1" in r.stdout and "CUDA_CORE_NVVM_PATH" in r.stdout


@pytest.mark.skipif(HAVE_GPU, reason="checks the behaviour without a CUDA driver")
def test_driver_calls_without_driver_raise_loader_error():
    r = _run(
        "from cuda_core._cuda_ffi import ffi, lib\n"
        "from cuda_core._errors import check\n"
        "try:\n"
        "    check(lib.cuInit(0))\n"
        "except Exception as e:\n"
        "    print(type(e).__name__); print(e)\n"
    )
    assert r.stdout.startswith("LibraryNotFoundError"), r.stdout + r.stderr
    assert "libcuda.so.1" in r.stdout and "NVIDIA driver" in r.stdout


def test_missing_symbol_status_is_reported():
    # The wrappers record which API was missing; the error layer names it.
    version = ffi.new("int *")
    assert lib.cc_take_missing(version) == ffi.NULL


@pytest.mark.gpu
def test_gpu_init_count_name():
    check(lib.cuInit(0))
    count = ffi.new("int *")
    check(lib.cuDeviceGetCount(count))
    assert count[0] >= 1
    name = ffi.new("char[256]")
    check(lib.cuDeviceGetName(name, 256, 0))
    assert len(ffi.string(name)) > 0
    v = _loader.driver_version()
    assert v >= 12000
    assert _loader.library_path("driver")
