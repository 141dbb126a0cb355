# SPDX-License-Identifier: Apache-2.0
"""Python ints and bools for narrow integer parameters, without a GPU.

Where the driver reports a kernel's parameter sizes, a Python ``int`` (or
``bool``) for a parameter of 1, 2 or 4 bytes is packed in that width when it
fits the signed or the unsigned range, and raises OverflowError otherwise.
The kernels here are stand-ins around a fake handle with the parameter
layout a driver would report (``Kernel._param_info``); the bytes come from
the same plans and packing code as a launch (``_packed_arguments``) and as a
graph kernel node (``_pack_args``).  The expected bytes are computed with
NumPy, independently of the packing code.
"""

from __future__ import annotations

import enum
import struct

import numpy as np
import pytest

from cuda_core import Buffer
from cuda_core._arg_plan import _packed_arguments
from cuda_core._cuda_ffi import ffi
from cuda_core._kernel import Kernel, ParamInfo
from cuda_core.graph._node_params import _pack_args

#: The unsigned NumPy type of each width.
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
POINTER = Buffer.from_handle(0x7F00_0000_1000, 64)


def stand_in(*sizes):
    """A Kernel around a fake handle whose parameters have ``sizes`` (C layout)."""
    info, offset = [], 0
    for size in sizes:
        offset += -offset % size
        info.append(ParamInfo(offset, size))
        offset += size
    k = Kernel._from_library(ffi.cast("CUkernel", 0x4560), None)
    k._param_info = info
    return k


def expected(value, width):
    """The ``width`` bytes a parameter receives for ``value`` (two's complement)."""
    return np.array([value % (1 << (8 * width))], dtype=UNSIGNED[width]).tobytes()


def field(plan, blob, index, width):
    offset = plan.layout.offsets[index]
    return blob[offset : offset + width]


def edges(width):
    """Values at the edges of the signed and unsigned ranges of ``width`` bytes."""
    bits = 8 * width
    return [
        0,
        1,
        -1,
        -(1 << (bits - 1)),  # signed minimum
        (1 << (bits - 1)) - 1,  # signed maximum
        1 << (bits - 1),  # the first value only the unsigned range holds
        (1 << bits) - 1,  # unsigned maximum
    ]


def too_wide(width):
    bits = 8 * width
    return [
        -(1 << (bits - 1)) - 1,
        1 << bits,
        (1 << bits) + 5,  # wraps to a small value if truncated
        (1 << bits) + (1 << (bits - 1)),
        2**33,
        -(2**33),
        2**70,
    ]


# -- values that fit ------------------------------------------------------------


@pytest.mark.parametrize("width", [1, 2, 4])
def test_ints_at_the_edges_are_packed_in_the_parameter_width(width):
    k = stand_in(8, width, 8)
    for value in edges(width):
        for _ in range(2):  # the plan is built, then reused
            plan, blob = _packed_arguments(k, (POINTER, value, 7))
            assert field(plan, blob, 1, width) == expected(value, width), value
            assert field(plan, blob, 0, 8) == struct.pack("=Q", POINTER.handle)
            assert field(plan, blob, 2, 8) == struct.pack("=q", 7)
    assert len(k._plans) == 1  # one plan for the argument types, whatever the values


@pytest.mark.parametrize("width", [1, 2, 4])
def test_bools_are_packed_in_the_parameter_width(width):
    k = stand_in(width, width)
    plan, blob = _packed_arguments(k, (True, False))
    assert field(plan, blob, 0, width) == expected(1, width)
    assert field(plan, blob, 1, width) == expected(0, width)


def test_a_kernel_of_every_integer_width():
    # (int *p, int a, short b, signed char c, unsigned char d, unsigned short e,
    #  unsigned int f, long long g)
    widths = (8, 4, 2, 1, 1, 2, 4, 8)
    k = stand_in(*widths)
    values = (POINTER, -(2**31), -(2**15), -128, 255, 65535, 2**32 - 1, -(2**63))
    plan, blob = _packed_arguments(k, values)
    assert field(plan, blob, 0, 8) == struct.pack("=Q", POINTER.handle)
    for i in range(1, 8):
        assert field(plan, blob, i, widths[i]) == expected(values[i], widths[i]), i
    # Laid out exactly as the parameters: handed to the driver as one buffer.
    assert [plan.layout.offsets[i] - plan.layout.offsets[0] for i in range(8)] == [
        p.offset for p in k._param_info
    ]
    assert plan.layout.bufsize == 32


def test_int_subclasses_are_narrowed_too():
    class Mode(enum.IntEnum):
        LOW = -3
        HIGH = 40000

    k = stand_in(2, 2)
    plan, blob = _packed_arguments(k, (Mode.LOW, Mode.HIGH))
    assert field(plan, blob, 0, 2) == expected(-3, 2)
    assert field(plan, blob, 1, 2) == expected(40000, 2)


def test_many_narrow_ints():
    # Beyond the sizes at which the plans store like arguments in a loop
    # (PyPy) or check the types in one comparison (CPython).
    for n in (17, 40):
        k = stand_in(*([4] * n))
        values = tuple(i << 26 if i % 2 else -(i << 25) for i in range(n))
        plan, blob = _packed_arguments(k, values)
        assert (
            blob[plan.layout.offsets[0] :]
            == np.array(values, dtype=np.int64).astype(np.int32).tobytes()
        )
        bad = list(values)
        bad[n - 3] = 2**32
        with pytest.raises(OverflowError, match=rf"kernel argument {n - 3} is 4294967296"):
            _packed_arguments(k, tuple(bad))


def test_eight_byte_parameters_keep_intptr_t():
    k = stand_in(8, 8)
    plan, blob = _packed_arguments(k, (-1, 2**63 - 1))
    assert field(plan, blob, 0, 8) == struct.pack("=q", -1)
    assert field(plan, blob, 1, 8) == struct.pack("=q", 2**63 - 1)
    assert all(slot.int_width is None for slot in plan.slots)
    with pytest.raises(OverflowError, match="kernel argument 1 .*does not fit in intptr_t"):
        _packed_arguments(k, (0, 2**63))


def test_without_parameter_sizes_ints_stay_intptr_t():
    k = stand_in(4)
    k._param_info = False  # a driver before CUDA 12.4 reports no layout
    plan, blob = _packed_arguments(k, (2**40,))
    assert field(plan, blob, 0, 8) == struct.pack("=q", 2**40)


def test_the_width_is_decided_by_the_plan():
    k = stand_in(1, 2, 4, 8)
    plan, _ = _packed_arguments(k, (1, 2, 3, 4))
    assert [slot.int_width for slot in plan.slots] == [1, 2, 4, None]


# -- values that do not fit --------------------------------------------------------


@pytest.mark.parametrize("width", [1, 2, 4])
def test_ints_outside_both_ranges_raise_overflow_error(width):
    k = stand_in(8, width)
    bits = 8 * width
    for value in too_wide(width):
        for _ in range(2):  # building the plan, then the cached plan
            with pytest.raises(OverflowError) as info:
                _packed_arguments(k, (POINTER, value))
            assert isinstance(info.value, ValueError)  # a bad value, as the package's others
            assert type(info.value).__name__ == "OverflowError"
            msg = str(info.value)
            assert msg.startswith(f"kernel argument 1 is {value}, "), msg
            byte = "byte" if width == 1 else "bytes"
            assert f"kernel parameter of {width} {byte}" in msg
            assert f"[{-(1 << (bits - 1))}, {(1 << bits) - 1}]" in msg
            assert info.value.__cause__ is None and info.value.__suppress_context__
    # The plan stays valid: a value that fits is packed right after.
    plan, blob = _packed_arguments(k, (POINTER, -1))
    assert field(plan, blob, 1, width) == expected(-1, width)


def test_overflow_through_a_graph_kernel_node_pack():
    k = stand_in(8, 2)
    with pytest.raises(OverflowError, match=r"^kernel argument 1 is 65536, .* of 2 bytes"):
        _pack_args(k, (POINTER, 65536))


def test_graph_kernel_node_pack_narrows_ints():
    k = stand_in(8, 4, 2, 1)
    c_params, storage = _pack_args(k, (POINTER, 2**32 - 1, -2, 200))
    assert storage is not None
    read = [
        int(ffi.cast("uint64_t *", c_params[0])[0]),
        int(ffi.cast("int32_t *", c_params[1])[0]),
        int(ffi.cast("int16_t *", c_params[2])[0]),
        int(ffi.cast("uint8_t *", c_params[3])[0]),
    ]
    assert read == [POINTER.handle, -1, -2, 200]


# -- what stays refused -----------------------------------------------------------


def test_float_for_a_four_byte_parameter_asks_for_float32():
    k = stand_in(8, 4)
    with pytest.raises(TypeError) as info:
        _packed_arguments(k, (POINTER, 1.5))
    msg = str(info.value)
    assert msg.startswith("kernel argument 1 is a Python float (float)")
    assert "pass numpy.float32" in msg
    assert not k._plans
    plan, blob = _packed_arguments(k, (POINTER, np.float32(1.5)))
    assert field(plan, blob, 1, 4) == np.float32(1.5).tobytes()


def test_float_for_an_eight_byte_parameter_is_a_double():
    k = stand_in(8)
    plan, blob = _packed_arguments(k, (1.5,))
    assert field(plan, blob, 0, 8) == np.float64(1.5).tobytes()


@pytest.mark.parametrize(
    "value, size",
    [(True, 8), (1, 16), (1, 3), (True, 16)],
    ids=["bool-8", "int-16", "int-3", "bool-16"],
)
def test_other_widths_stay_refused(value, size):
    k = stand_in(size)
    with pytest.raises(TypeError, match=rf"kernel parameter is {size} bytes"):
        _packed_arguments(k, (value,))
