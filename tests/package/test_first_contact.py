# SPDX-License-Identifier: Apache-2.0
"""The errors a new user meets first say what is wrong and how to fix it."""

from __future__ import annotations

import importlib
import os
import pickle
import pkgutil
import shutil
import subprocess
import sys
import traceback

import numpy as np
import pytest

import cuda_core
from cuda_core import CUDAError, LaunchConfig, LibraryNotFoundError, ObjectCode
from cuda_core.utils import StridedMemoryView

PACKAGE = os.path.dirname(os.path.abspath(cuda_core.__file__))


def test_unbuilt_checkout_says_how_to_build(tmp_path):
    shutil.copytree(
        PACKAGE, tmp_path / "cuda_core", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    other = tmp_path / "cuda_core" / "_cuda_ffi.someotherpython-x86_64-linux-gnu.so"
    other.write_bytes(b"")
    code = (
        "try:\n"
        "    import cuda_core\n"
        "except ModuleNotFoundError as e:\n"
        "    print(type(e).__name__, e.name)\n"
        "    print(e)\n"
    )
    r = subprocess.run(
        # -S: no site hooks, so an editable install's finder cannot supply
        # the real package instead of the copy
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout, "the copy imported: " + r.stderr
    first, message = r.stdout.split("\n", 1)
    assert first == "ModuleNotFoundError cuda_core._cuda_ffi"
    assert message.startswith("cuda_core's C extension, cuda_core._cuda_ffi, is not built")
    assert str(tmp_path / "cuda_core") in message
    assert "pip install -e ." in message and "python setup.py build_ext --inplace" in message
    assert other.name in message  # the build that is there, for another interpreter


def test_diagnosis_report_shows_the_whole_library_error(monkeypatch):
    import cuda_core.__main__ as main

    def missing(name):
        raise LibraryNotFoundError(
            f"{name} could not be found. Searched:\n  /a/lib{name}.so: not present\nFix: do X"
        )

    monkeypatch.setattr(main, "ensure_loaded", missing)
    lines = main._library_lines()
    text = "\n".join(lines)
    for name in ("nvrtc", "nvjitlink", "nvvm"):
        assert f"not found: {name} could not be found. Searched:" in text
        assert f"/a/lib{name}.so: not present" in text
    assert text.count("Fix: do X") == 3
    assert len(lines) == 9


def test_from_dlpack_without_dlpack_is_a_clear_type_error():
    with pytest.raises(TypeError, match="list does not support DLPack") as info:
        StridedMemoryView.from_dlpack([1, 2, 3], stream_ptr=-1)
    assert isinstance(info.value, AttributeError)  # what cuda.core raises
    with pytest.raises(TypeError, match="list does not support the CUDA Array Interface") as info:
        StridedMemoryView.from_cuda_array_interface([1, 2, 3], stream_ptr=-1)
    assert isinstance(info.value, AttributeError)


@pytest.mark.parametrize("bad", ["x", 1.5, b"1"])
def test_stream_ptr_of_the_wrong_type_is_named(bad):
    with pytest.raises(TypeError, match="^stream_ptr must be an int") as info:
        StridedMemoryView.from_dlpack(np.arange(3), stream_ptr=bad)
    assert isinstance(info.value, ValueError)  # int() raises it in cuda.core
    assert type(bad).__name__ in str(info.value)


def test_stream_ptr_accepts_integers():
    view = StridedMemoryView.from_dlpack(np.arange(3), stream_ptr=np.int64(-1))
    assert view.shape == (3,)


# Private exception classes that never leave the package (control flow).
INTERNAL = {"_Mismatch"}


def _private_exception_classes():
    """Every private exception class of the package that can reach the user."""
    found = {}
    modules = [cuda_core] + [
        importlib.import_module(m.name)
        for m in pkgutil.walk_packages(cuda_core.__path__, "cuda_core.")
        if m.name != "cuda_core.__main__"
    ]
    for module in modules:
        for attr, value in vars(module).items():
            if (
                attr.startswith("_")
                and attr not in INTERNAL
                and isinstance(value, type)
                and issubclass(value, BaseException)
                and not _is_public(value)  # a private alias of a public class
            ):
                found[(module.__name__, attr)] = value
    return found


def _is_public(cls):
    home = sys.modules.get(cls.__module__)
    return not cls.__qualname__.startswith("_") and getattr(home, cls.__qualname__, None) is cls


def _instance(cls):
    try:
        return cls("something is wrong")
    except TypeError:  # a constructor of its own (NVML's classes)
        exc = cls.__new__(cls)
        exc.args = ("something is wrong",)
        return exc


def test_private_exception_classes_are_shown_as_a_public_type():
    classes = _private_exception_classes()
    assert len(classes) >= 10
    for (module, attr), cls in classes.items():
        shown = cls.__bases__[0]
        assert cls.__name__ == shown.__name__, (module, attr)
        exc = _instance(cls)
        line = "".join(traceback.format_exception_only(type(exc), exc))
        qualified = shown.__name__
        if shown.__module__ != "builtins":
            qualified = f"{shown.__module__}.{shown.__name__}"
        assert line == f"{qualified}: {exc}\n", (module, attr, line)
        assert attr not in line
        back = pickle.loads(pickle.dumps(exc))  # keeps the real class and its state
        assert type(back) is cls and back.args == exc.args
        assert vars(back) == vars(exc)


def test_launch_config_error_traceback_names_no_private_class():
    with pytest.raises(TypeError) as info:
        LaunchConfig(grid="x", block=1)
    text = "".join(traceback.format_exception_only(info.type, info.value))
    assert text.startswith("TypeError: LaunchConfig.grid must be")
    assert isinstance(info.value, ValueError)


def test_missing_cubin_file_is_reported_as_a_missing_file(tmp_path):
    missing = str(tmp_path / "kernels.cubin")
    code = ObjectCode.from_cubin(missing)
    with pytest.raises(CUDAError) as info:
        code.get_kernel("k")
    assert not isinstance(info.value, LibraryNotFoundError)  # not "no driver"
    assert info.value.name == "CUDA_ERROR_FILE_NOT_FOUND" and info.value.code == 301
    assert str(info.value).startswith("CUDA_ERROR_FILE_NOT_FOUND: file not found")
    assert missing in str(info.value)
