# SPDX-License-Identifier: Apache-2.0
"""The pool of awkward values the bad-input tests try for every field and argument.

badinput_spec.py re-exports :data:`WEIRD_VALUES` and the helper types, and says
which of them each field accepts.
"""

from __future__ import annotations

import enum
import fractions
import math
import os

import numpy as np

__all__ = ["WEIRD_VALUES", "IndexOnly", "PathLikeValue"]


class PathLikeValue(os.PathLike):
    def __init__(self, path):
        self.path = path

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"PathLikeValue({self.path!r})"


class IndexOnly:
    """An integer-like object: ``__index__`` only."""

    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value

    def __repr__(self):
        return f"IndexOnly({self.value})"


class IntOnly:
    """Converts with ``int()`` but is not an integer (no ``__index__``)."""

    def __int__(self):
        return 4096

    def __repr__(self):
        return "IntOnly()"


class BadBool:
    """Raises when asked for its truth value."""

    def __bool__(self):
        raise ValueError("BadBool has no truth value")

    def __repr__(self):
        return "BadBool()"


class Color(enum.Enum):
    RED = "device"


class StrSub(str):
    pass


#: A fixed pool of awkward values, used for every field by the table tests.
WEIRD_VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    7,
    255,
    256,
    1024,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    2**100,
    0.0,
    1.0,
    1.5,
    -2.5,
    math.nan,
    math.inf,
    1j,
    "",
    "0",
    "1",
    "true",
    "abc",
    "sm_90",
    "compute_90",
    "sm_90a",
    "SM_90",
    "sm_",
    "device",
    "host",
    "host_numa",
    "pinned",
    "rw",
    "r",
    "min",
    "posix_fd",
    "recommended",
    "-O3",
    "\x00",
    "é",
    b"",
    b"x",
    b"\x01\x02",
    b"\x01\x02\x03\x04",
    bytearray(b"ab"),
    [],
    [1],
    [1, 2, 3, 4],
    ["a", "b"],
    ["a", 1],
    [("A", "1")],
    (),
    (1,),
    (1, 2),
    (1, 2, 3),
    (1, 2, 3, 4),
    (0, 1),
    ("a", "b"),
    ("a",),
    ("a", "b", "c"),
    (("mod", "x"),),
    [("mod", b"")],
    {},
    {"a": 1},
    {1, 2},
    frozenset(),
    range(3),
    object(),
    Ellipsis,
    int,
    np.int32(3),
    np.int64(-1),
    np.uint64(2**64 - 1),
    np.uint8(7),
    np.float32(1.0),
    np.float64(2.0),
    np.bool_(True),
    np.array([1, 2]),
    fractions.Fraction(1, 2),
    PathLikeValue("some/path"),
    IndexOnly(5),
    IndexOnly(-5),
    IntOnly(),
    BadBool(),
    Color.RED,
    StrSub("pinned"),
]
