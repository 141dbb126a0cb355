# SPDX-License-Identifier: Apache-2.0
"""``_coerce.index_or_none``: every integer argument becomes a plain int, on both interpreters."""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core._coerce import as_size, check_nonnegative_int, index_or_none


class _Sub(int):
    """An int subclass that redefines what a careless conversion would call."""

    def __int__(self):
        return 99

    def __index__(self):
        return 98

    def __add__(self, other):
        return 77

    __radd__ = __add__


class _Indexable:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


@pytest.mark.parametrize(
    "value, expected",
    [(5, 5), (_Sub(5), 5), (np.int64(7), 7), (np.uint8(3), 3), (_Indexable(11), 11)],
    ids=["int", "int-subclass", "np.int64", "np.uint8", "__index__"],
)
def test_integers_become_plain_ints(value, expected):
    for index in (index_or_none(value), check_nonnegative_int(value, "n"), as_size(value)):
        assert index == expected and type(index) is int


@pytest.mark.parametrize("value", [True, np.bool_(False), 1.0, "3", None, int, np.zeros(2)])
def test_non_integers_are_none(value):
    assert index_or_none(value) is None


@pytest.mark.filterwarnings("ignore:__index__ returned non-int:DeprecationWarning")  # CPython's
def test_an_index_method_returning_a_subclass_gives_a_plain_int():
    index = index_or_none(_Indexable(_Sub(6)))
    assert index == 6 and type(index) is int
