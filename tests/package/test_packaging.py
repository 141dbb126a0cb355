# SPDX-License-Identifier: Apache-2.0
"""Packaging: the cu12/cu13 extras, the install hints that name them, the
license and the build configuration."""

from __future__ import annotations

import os
import platform
import re

import pytest
from _helpers import CHECKOUT

from cuda_core import _loader

ROOT = CHECKOUT


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        return f.read()


def _extra(name):
    """The requirement strings of extra ``name`` in pyproject.toml."""
    m = re.search(rf"^{name} = \[(.*?)\]$", _pyproject(), re.M | re.S)
    assert m, f"extra {name} not in pyproject.toml"
    return re.findall(r'"([^"]+)"', m.group(1))


def _dist_name(requirement):
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)


@pytest.mark.parametrize("major", [12, 13])
def test_extra_installs_the_wheels_the_loader_names(major):
    names = {_dist_name(r) for r in _extra(f"cu{major}")}
    assert names == {wheels[major] for wheels in _loader.WHEELS.values()}


def test_extras_pin_their_cuda_major_version():
    for major in (12, 13):
        for req in _extra(f"cu{major}"):
            # "==12.*" or ">=12.3,<13": nothing from the other major version
            assert f"=={major}.*" in req or f"<{major + 1}" in req, req


@pytest.mark.parametrize("major", [12, 13])
def test_install_hint_follows_the_driver(monkeypatch, major):
    monkeypatch.setattr(_loader, "_driver_major", lambda: major)
    for name, wheels in _loader.WHEELS.items():
        hint = _loader.install_hint(name)
        assert hint.startswith(f'pip install "cuda-core-cffi[cu{major}]"'), hint
        assert f"CUDA {major}" in hint and wheels[major] in hint
        other = 25 - major
        assert f"[cu{other}]" not in hint
        assert not re.search(re.escape(wheels[other]) + r"(?![\w-])", hint)


@pytest.mark.parametrize("major", [None, 11, 14])
def test_install_hint_without_a_known_driver_names_both_extras(monkeypatch, major):
    monkeypatch.setattr(_loader, "_driver_major", lambda: major)
    hint = _loader.install_hint("nvvm")
    assert '"cuda-core-cffi[cu13]" for a CUDA 13 driver' in hint
    assert '"cuda-core-cffi[cu12]" for a CUDA 12 driver' in hint
    assert "nvidia-nvvm" in hint and "nvidia-cuda-nvcc-cu12" in hint


def test_install_hint_matches_this_machine():
    major = _loader._driver_major()
    hint = _loader.install_hint("nvrtc")
    if major in (12, 13):
        assert f"[cu{major}]" in hint
    else:
        assert "[cu12]" in hint and "[cu13]" in hint


# -- license and build configuration --------------------------------------------


def test_license_is_the_apache_2_text_the_headers_name():
    with open(os.path.join(ROOT, "LICENSE")) as f:
        text = f.read()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text
    with open(os.path.join(ROOT, "cuda_core", "__init__.py")) as f:
        assert "SPDX-License-Identifier: Apache-2.0" in f.readline()


def test_license_metadata_is_the_spdx_expression(tmp_path):
    """setup.py gives the license as an SPDX expression where setuptools has them (77+,
    which isolated builds require) and as the classic field otherwise, so that an
    in-place build on an older system setuptools still works."""
    import subprocess
    import sys

    import setuptools

    text = _pyproject()
    assert re.search(r'^dynamic = \["version", "license"\]', text, re.M)
    assert int(re.search(r'"setuptools>=(\d+)', text).group(1)) >= 77
    subprocess.run(
        [sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (info,) = tmp_path.glob("*.egg-info")
    pkg_info = (info / "PKG-INFO").read_text()
    if int(setuptools.__version__.split(".")[0]) >= 77:
        assert "License-Expression: Apache-2.0" in pkg_info
        assert "License-File: LICENSE" in pkg_info
    else:
        assert "License: Apache-2.0" in pkg_info


def _elf_section_names(path):
    """The section names of a 64-bit little-endian ELF file."""
    import struct

    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = sections[shstrndx][4]  # sh_offset of the section-name table
    names = []
    for name_off, *_ in sections:
        end = data.index(b"\0", strtab + name_off)
        names.append(data[strtab + name_off : end].decode())
    return names


@pytest.mark.skipif(
    os.environ.get("CUDA_CORE_BUILD_DEBUG", "") not in ("", "0"),
    reason="CUDA_CORE_BUILD_DEBUG keeps the debug information",
)
def test_extension_is_stripped():
    from cuda_core import _cuda_ffi

    names = _elf_section_names(_cuda_ffi.__file__)
    assert ".dynsym" in names and ".text" in names  # it parsed
    assert not [n for n in names if n.startswith(".debug")], names
    assert ".symtab" not in names


@pytest.mark.skipif(
    platform.python_implementation() != "CPython", reason="the stable ABI is CPython's"
)
def test_cpython_extension_uses_the_stable_abi():
    from cuda_core import _cuda_ffi

    assert os.path.basename(_cuda_ffi.__file__) == "_cuda_ffi.abi3.so"
    with open(os.path.join(ROOT, "setup.py")) as f:
        assert '{"py_limited_api": "cp39"}' in f.read()  # the wheel's tag matches
