# SPDX-License-Identifier: Apache-2.0
"""``_coerce.as_flag``: the one check of a bool option field, and the fields that use it."""

from __future__ import annotations

import pytest

from cuda_core import EventOptions, LinkerOptions, StreamOptions
from cuda_core._coerce import as_flag


def test_bools_pass_and_zero_one_become_bools():
    assert as_flag(True, "X.f") is True and as_flag(False, "X.f") is False
    assert as_flag(1, "X.f") is True and as_flag(0, "X.f") is False


@pytest.mark.parametrize("bad", ["yes", 2, 1.0, [], object()])
def test_others_raise_naming_the_field(bad):
    with pytest.raises(TypeError, match=r"^X\.f must be a bool \(True or False\), got .* of type"):
        as_flag(bad, "X.f")


def test_none_and_ints_as_the_field_allows():
    assert as_flag(None, "X.f", none_ok=True) is None
    with pytest.raises(TypeError, match=r"^X\.f must be a bool \(True or False\), got None"):
        as_flag(None, "X.f")
    with pytest.raises(TypeError, match=r"^X\.f must be True, False or None, got 1 of type int"):
        as_flag(1, "X.f", none_ok=True, ints=False)


def test_the_option_classes_use_it():
    assert StreamOptions(nonblocking=0).nonblocking is False
    with pytest.raises(TypeError, match=r"^StreamOptions\.nonblocking must be a bool"):
        StreamOptions(nonblocking="no")
    assert EventOptions(timing_enabled=None).timing_enabled is False
    with pytest.raises(
        TypeError, match=r"^EventOptions\.blocking_sync must be True, False or None"
    ):
        EventOptions(blocking_sync="no")
    with pytest.raises(TypeError, match=r"^LinkerOptions\.debug must be True, False or None"):
        LinkerOptions(arch="sm_90", debug=1)
