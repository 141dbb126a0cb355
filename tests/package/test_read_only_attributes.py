# SPDX-License-Identifier: Apache-2.0
"""Assigning a read-only attribute fails as on cuda.core's (Cython) classes.

``AttributeError: attribute 'x' of 'T' objects is not writable``, the same
text on CPython and PyPy (whose built-in messages for a property without a
setter differ from each other and from Cython's).
"""

from __future__ import annotations

import importlib
import sys

import pytest

import cuda_core
from cuda_core import LaunchConfig, ProgramOptions, Stream
from cuda_core._read_only import _ReadOnlyProperty

SUBPACKAGES = ["graph", "utils", "system", "texture", "checkpoint"]


def _plain_read_only_properties():
    for name in SUBPACKAGES:
        importlib.import_module(f"cuda_core.{name}")
    cuda_core.GraphicsResource  # noqa: B018 - the lazily imported names
    cuda_core.TensorMapDescriptor  # noqa: B018
    found = []
    for mod_name, module in list(sys.modules.items()):
        if module is None or not (mod_name == "cuda_core" or mod_name.startswith("cuda_core.")):
            continue
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != mod_name:
                continue
            for attr_name, attr in vars(cls).items():
                if type(attr) is property and attr.fset is None and attr.fdel is None:
                    found.append(f"{cls.__qualname__}.{attr_name}")
    return found


def test_every_read_only_property_is_sealed():
    assert _plain_read_only_properties() == []


def test_message():
    s = Stream.from_handle(0x1234)
    with pytest.raises(AttributeError) as info:
        s.handle = 5
    assert str(info.value) == "attribute 'handle' of 'Stream' objects is not writable"
    with pytest.raises(AttributeError, match=r"attribute 'is_nonblocking' .* is not writable"):
        del s.is_nonblocking
    assert s.handle == 0x1234


def test_properties_keep_their_docs_and_setters():
    prop = vars(Stream)["handle"]
    assert isinstance(prop, _ReadOnlyProperty) and isinstance(prop, property)
    assert prop.__doc__ and "CUstream" in prop.__doc__
    config = LaunchConfig(grid=1, block=1)
    config.grid = 4  # a settable attribute stays settable
    assert config.grid == (4, 1, 1)
    opts = ProgramOptions(arch="sm_80")
    opts.arch = "sm_90"
    assert opts.arch == "sm_90"
