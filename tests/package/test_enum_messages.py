# SPDX-License-Identifier: Apache-2.0
"""An unknown value for a cuda_core.typing string enumeration: cuda.core's ValueError.

``"'x' is not a valid <EnumName>. Must be 'a', 'b' or 'c'"``, from the
enumeration itself and from every option coerced to one.
"""

from __future__ import annotations

import enum
import re

import numpy as np
import pytest

import cuda_core
from cuda_core import ManagedMemoryResourceOptions, WorkqueueResourceOptions
from cuda_core import typing as cc_typing
from cuda_core.graph._node_params import _memory_type

ENUMS = [
    getattr(cc_typing, name)
    for name in cc_typing.__all__
    if isinstance(getattr(cc_typing, name), type)
    and issubclass(getattr(cc_typing, name), enum.Enum)
]


def _expected(cls, value):
    values = [repr(m.value) for m in cls]
    listed = values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"
    return f"{value!r} is not a valid {cls.__name__}. Must be {listed}"


def test_the_enumerations_are_found():
    names = {cls.__name__ for cls in ENUMS}
    assert {"GraphMemoryType", "ManagedMemoryLocationType", "SourceCodeType"} <= names
    assert len(ENUMS) >= 15


@pytest.mark.parametrize("cls", ENUMS, ids=lambda c: c.__name__)
def test_unknown_value(cls):
    with pytest.raises(ValueError) as info:
        cls("invalid")
    assert str(info.value) == _expected(cls, "invalid")
    first = next(iter(cls))
    assert cls(first.value) is first  # members still convert


def test_graph_memory_type():
    with pytest.raises(ValueError) as info:
        _memory_type("invalid")
    assert str(info.value) == (
        "'invalid' is not a valid GraphMemoryType. Must be 'device', 'host' or 'managed'"
    )
    with pytest.raises(ValueError, match="is not a valid GraphMemoryType"):
        _memory_type(np.array([1, 2]))  # compared as a whole, never element-wise
    assert _memory_type(None) == "device" and _memory_type("host") == "host"


def test_managed_memory_options():
    with pytest.raises(ValueError) as info:
        ManagedMemoryResourceOptions(preferred_location_type="invalid")
    assert re.match(
        r"'invalid' is not a valid ManagedMemoryLocationType\. Must be ", str(info.value)
    )
    with pytest.raises(ValueError, match="is not a valid ManagedMemoryLocationType"):
        ManagedMemoryResourceOptions(preferred_location_type=np.array([1, 2]))


def test_workqueue_sharing_scope():
    with pytest.raises(
        ValueError, match=r"^'x' is not a valid WorkqueueSharingScopeType\. Must be"
    ):
        WorkqueueResourceOptions(sharing_scope="x")


def test_program_cache_key_code_type():
    with pytest.raises(ValueError, match=r"^'cobol' is not a valid SourceCodeType\. Must be"):
        cuda_core.utils.make_program_cache_key(
            code="",
            code_type="cobol",
            options=cuda_core.ProgramOptions(arch="sm_80"),
            target_type="cubin",
        )
