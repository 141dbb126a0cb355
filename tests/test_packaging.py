# SPDX-License-Identifier: Apache-2.0
"""Packaging: the cu12/cu13 extras, the install hints that name them, the
license and the build configuration."""

from __future__ import annotations

import os
import re

import pytest

from cuda_core import _loader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
