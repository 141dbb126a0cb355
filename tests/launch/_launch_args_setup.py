# SPDX-License-Identifier: Apache-2.0
"""Argument values and the bytes oracle shared by the launch and argument-packing tests."""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from cuda_core import Buffer
from cuda_core._arg_types import GRAPH_CONDITION_MARKER

__all__ = ["PACKED_PAIR_DTYPE", "Cond", "Pair", "ctypes_bytes", "expected_bytes"]

# A C ``struct Pair { char a; double b; }`` given without its padding.
PACKED_PAIR_DTYPE = np.dtype([("a", "i1"), ("b", "<f8")])


class Pair(ctypes.Structure):
    _fields_ = [("a", ctypes.c_char), ("b", ctypes.c_double)]


class Cond:
    """Stands for cuda_core.graph.GraphCondition (duck-typed by its marker)."""

    def __init__(self, handle):
        self.handle = handle


setattr(Cond, GRAPH_CONDITION_MARKER, True)


def ctypes_bytes(obj):
    return ctypes.string_at(ctypes.addressof(obj), ctypes.sizeof(obj))


def expected_bytes(value):
    """The bytes a kernel parameter receives for ``value``, computed independently of cuda_core."""
    if isinstance(value, Buffer):
        return struct.pack("=Q", value.handle)
    if type(value) is bool:
        return bytes([value])
    if type(value) is int:
        return np.array(value, dtype=np.intp).tobytes()
    if type(value) is float:
        return np.array(value, dtype=np.float64).tobytes()
    if type(value) is complex:
        return np.array(value, dtype=np.complex128).tobytes()
    if isinstance(value, np.void) and value.dtype == PACKED_PAIR_DTYPE:
        # laid out as the C struct
        return bytes([int(value["a"]) & 0xFF]) + bytes(7) + struct.pack("<d", value["b"])
    if isinstance(value, np.generic):
        return value.tobytes()  # exact width; float16 as raw bits
    if isinstance(value, (ctypes._SimpleCData, ctypes.Structure)):
        return ctypes_bytes(value)
    if isinstance(value, Cond):
        return struct.pack("=Q", value.handle)
    raise AssertionError(type(value))
