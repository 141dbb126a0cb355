# SPDX-License-Identifier: Apache-2.0
"""Argument marshalling without a GPU: plans, packed bytes, errors, launch checks.

The packed blob is what ``cc_launch_blob`` receives: three header words
(layout, config, stream) and then every argument at the offset the layout
records.  Each value is compared byte for byte with NumPy / struct / ctypes.
"""

from __future__ import annotations

import ctypes
import struct
import threading

import numpy as np
import pytest
from _launch_args_setup import Cond, Pair, ctypes_bytes, expected_bytes

from cuda_core import Buffer, LaunchConfig, launch
from cuda_core._arg_plan import _GUARD_MAX, _packed_arguments
from cuda_core._cuda_ffi import ffi
from cuda_core._kernel import Kernel, ParamInfo
from cuda_core._kernel_attributes import KernelAttributes
from cuda_core._kernel_occupancy import KernelOccupancy
from cuda_core._stream import Stream


def make_kernel(param_info=False, mod=None):
    """A Kernel around a fake handle; ``param_info``: list of ParamInfo or False."""
    k = Kernel._from_library(ffi.cast("CUkernel", 0x1230), mod)
    k._param_info = param_info
    return k


def offsets(plan):
    return [plan.layout.offsets[i] for i in range(plan.nargs)]


def field(blob, plan, index, size):
    off = offsets(plan)[index]
    return blob[off : off + size]


class Small(ctypes.Structure):
    _fields_ = [("x", ctypes.c_float), ("y", ctypes.c_float), ("z", ctypes.c_float)]


SCALARS = [
    True,
    False,
    0,
    -5,
    0x7F00_1234_5678,
    2**63 - 1,
    -(2**63),
    2.5,
    -0.0,
    float("inf"),
    1.25 - 3.5j,
    np.bool_(True),
    np.int8(-128),
    np.int16(-12345),
    np.int32(-(2**31)),
    np.int64(2**62 + 7),
    np.uint8(255),
    np.uint16(65535),
    np.uint32(2**32 - 1),
    np.uint64(2**64 - 1),
    np.float16(np.nan),
    np.float16(-65504.0),
    np.frombuffer(b"\x01\x7c", dtype=np.float16)[0],  # a NaN payload: raw bits kept
    np.float32(3.1415927),
    np.float64(-1e300),
    np.complex64(1.5 - 2.25j),
    np.complex128(-3e-300 + 7j),
    ctypes.c_bool(True),
    ctypes.c_int8(-7),
    ctypes.c_int16(-300),
    ctypes.c_int32(-70000),
    ctypes.c_int64(-(2**40)),
    ctypes.c_uint8(200),
    ctypes.c_uint16(60000),
    ctypes.c_uint32(4_000_000_000),
    ctypes.c_uint64(2**64 - 2),
    ctypes.c_float(0.1),
    ctypes.c_double(0.1),
    Cond(0xDEADBEEF12345678),
]


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: f"{type(v).__name__}:{v!r}"[:40])
def test_each_scalar_type_packs_exactly(value):
    k = make_kernel()
    want = expected_bytes(value)
    for _ in range(2):  # first: the plan is built; second: the cached fast path
        plan, blob = _packed_arguments(k, (value,), 0xC0F, 0x57E)
        assert field(blob, plan, 0, len(want)) == want
        assert struct.unpack_from("@NNN", blob) == (plan.layout_addr, 0xC0F, 0x57E)
    assert plan.nargs == 1
    assert int(ffi.cast("uintptr_t", plan.layout.func)) == 0x1230


def test_mixed_arguments_natural_alignment_and_header():
    k = make_kernel()
    args = (np.int8(1), 2.0, np.int16(3), True, np.float32(4.0), 5, np.complex64(6 + 7j))
    plan, blob = _packed_arguments(k, args, 1, 2)
    offs = offsets(plan)
    assert offs[0] == 24  # after the three header words
    widths = [1, 8, 2, 1, 4, 8, 4]  # alignment of each C type
    for off, width in zip(offs, widths):
        assert off % width == 0
    assert offs == sorted(offs)
    for i, a in enumerate(args):
        want = expected_bytes(a)
        assert field(blob, plan, i, len(want)) == want
    assert len(blob) == plan.size


def test_buffer_argument_passes_its_pointer():
    buf = Buffer.from_handle(0x7F12_3456_7000, 64)
    k = make_kernel()
    plan, blob = _packed_arguments(k, (buf, 7), 0, 0)
    assert field(blob, plan, 0, 8) == struct.pack("=Q", 0x7F12_3456_7000)
    assert field(blob, plan, 1, 8) == struct.pack("=q", 7)


def test_closed_buffer_raises():
    buf = Buffer.from_handle(0x7F12_3456_7000, 64)
    k = make_kernel()
    _packed_arguments(k, (buf,))
    buf.close()
    with pytest.raises(RuntimeError, match="kernel argument 0: Buffer is closed"):
        _packed_arguments(k, (buf,))


@pytest.mark.parametrize("closed_at", [0, 5, 18, 38, 39])
def test_closed_buffer_in_a_long_run_names_its_position(closed_at):
    # 40 Buffers in a row: packed in a loop (several per pass, then the rest)
    bufs = [Buffer.from_handle(0x7F12_3456_7000 + 64 * i, 64) for i in range(40)]
    k = make_kernel()
    plan, blob = _packed_arguments(k, tuple(bufs))
    for i in range(40):
        assert field(blob, plan, i, 8) == struct.pack("=Q", 0x7F12_3456_7000 + 64 * i)
    bufs[closed_at].close()
    with pytest.raises(RuntimeError, match=f"kernel argument {closed_at}: Buffer is closed"):
        _packed_arguments(k, tuple(bufs))


def test_null_buffer_passes_zero():
    buf = Buffer.from_handle(0, 0)
    plan, blob = _packed_arguments(make_kernel(), (buf,))
    assert field(blob, plan, 0, 8) == bytes(8)


def test_int_subclass_is_intptr_and_bool_is_one_byte():
    import enum

    class Color(enum.IntEnum):
        RED = 5

    plan, blob = _packed_arguments(make_kernel(), (Color.RED, True, np.bool_(False)))
    assert field(blob, plan, 0, 8) == struct.pack("=q", 5)
    assert field(blob, plan, 1, 1) == b"\x01"
    assert field(blob, plan, 2, 1) == b"\x00"
    assert offsets(plan)[2] == offsets(plan)[1] + 1


def test_plans_are_cached_per_type_combination():
    k = make_kernel()
    p1, _ = _packed_arguments(k, (1, 2.0))
    p2, _ = _packed_arguments(k, (3, 4.0))
    assert p1 is p2
    p3, blob = _packed_arguments(k, (3.0, 4))  # other types: another plan
    assert p3 is not p1
    assert field(blob, p3, 0, 8) == struct.pack("=d", 3.0)
    p4, _ = _packed_arguments(k, (5, 6.0))
    assert p4 is p1  # found again in the cache
    assert len(k._plans) == 2


def test_type_change_at_any_position_is_detected():
    k = make_kernel()
    args = [7] * 12
    _packed_arguments(k, tuple(args))
    for i in range(12):
        changed = list(args)
        changed[i] = np.int32(9)
        plan, blob = _packed_arguments(k, tuple(changed))
        assert field(blob, plan, i, 4) == struct.pack("=i", 9)


@pytest.mark.parametrize("n", [_GUARD_MAX, _GUARD_MAX + 1, 64, 300])
def test_many_arguments(n):
    k = make_kernel()
    args = tuple(range(1000, 1000 + n))
    for _ in range(2):
        plan, blob = _packed_arguments(k, args, 3, 4)
        assert offsets(plan) == [24 + 8 * i for i in range(n)]
        assert blob[24:] == np.arange(1000, 1000 + n, dtype=np.intp).tobytes()
    # a different type late in the list is noticed, on both paths
    changed = args[:-1] + (np.float32(1.5),)
    plan, blob = _packed_arguments(k, changed)
    assert field(blob, plan, n - 1, 4) == np.float32(1.5).tobytes()
    doubles = tuple(float(i) + 0.5 for i in range(n))
    plan, blob = _packed_arguments(k, doubles)
    assert blob[24:] == np.array(doubles).tobytes()


def test_many_mixed_arguments_with_runs():
    k = make_kernel()
    args = (np.int8(1),) + tuple(range(40)) + (2.5,) * 10 + (np.int16(-2), True) + tuple(range(9))
    for _ in range(2):
        plan, blob = _packed_arguments(k, args)
        for i, a in enumerate(args):
            want = expected_bytes(a)
            assert field(blob, plan, i, len(want)) == want


def test_ctypes_structure_by_value():
    k = make_kernel()
    value = Pair(b"z", 1.5)
    plan, blob = _packed_arguments(k, (value, 3))
    assert ctypes.sizeof(Pair) == 16
    assert field(blob, plan, 0, 16) == ctypes_bytes(value)
    assert offsets(plan)[0] % 8 == 0
    assert field(blob, plan, 1, 8) == struct.pack("=q", 3)


def test_numpy_structured_scalar_by_value():
    k = make_kernel()
    dt = np.dtype([("x", "i1"), ("y", "f8")], align=True)
    value = np.array((5, 2.5), dtype=dt)[()]
    plan, blob = _packed_arguments(k, (value,))
    assert field(blob, plan, 0, 16) == value.tobytes()
    # another dtype: another plan, even though the Python type (numpy.void) is the same
    dt2 = np.dtype([("a", "<i4"), ("b", "<i4")])
    value2 = np.array((1, 2), dtype=dt2)[()]
    plan2, blob2 = _packed_arguments(k, (value2,))
    assert plan2 is not plan
    assert field(blob2, plan2, 0, 8) == struct.pack("<ii", 1, 2)
    plan3, blob3 = _packed_arguments(k, (value,))
    assert plan3 is plan and field(blob3, plan3, 0, 16) == value.tobytes()


def test_structures_follow_the_kernel_parameter_size():
    # A packed NumPy struct for a C struct {char; double;} (16 bytes) is laid out
    # as C does; a shorter struct is zero-padded; a longer one is an error.
    packed = np.dtype([("x", "i1"), ("y", "<f8")])
    assert packed.itemsize == 9
    value = np.array((3, -1.5), dtype=packed)[()]
    k = make_kernel([ParamInfo(0, 16), ParamInfo(16, 16)])
    plan, blob = _packed_arguments(k, (value, Small(1, 2, 3)))
    want = bytes([3]) + bytes(7) + struct.pack("<d", -1.5)  # C layout, zero padding
    assert field(blob, plan, 0, 16) == want
    assert field(blob, plan, 1, 16) == ctypes_bytes(Small(1, 2, 3)) + bytes(4)
    k2 = make_kernel([ParamInfo(0, 8)])
    with pytest.raises(ValueError, match="argument 0: the ctypes structure Pair is 16 bytes.*8"):
        _packed_arguments(k2, (Pair(b"a", 1.0),))


def test_parameter_buffer_when_the_layout_matches_the_kernel():
    # Offsets as the driver reports them for (long long, int, signed char):
    # the packed arguments are the kernel's parameter buffer, 13 bytes.
    k = make_kernel([ParamInfo(0, 8), ParamInfo(8, 4), ParamInfo(12, 1)])
    plan, blob = _packed_arguments(k, (5, np.int32(-2), np.int8(7)))
    assert plan.layout.bufsize == 13
    header = struct.calcsize("@NNN")
    assert blob[header : header + 13] == struct.pack("=qib", 5, -2, 7)


def test_no_parameter_buffer_when_the_layout_differs_or_is_unknown():
    # A 16-byte structure the kernel aligns to 16 after an int: the blob puts
    # it at 8, so each argument must go by its own pointer.
    k = make_kernel([ParamInfo(0, 4), ParamInfo(16, 16)])
    plan, _ = _packed_arguments(k, (np.int32(1), Pair(b"a", 2.0)))
    assert plan.layout.bufsize == 0
    assert offsets(plan)[1] - struct.calcsize("@NNN") == 8
    # padding between parameters (here 4 bytes) is part of the buffer
    k = make_kernel([ParamInfo(0, 4), ParamInfo(8, 8)])
    plan, _ = _packed_arguments(k, (np.int32(1), 2))
    assert plan.layout.bufsize == 16
    for info, args in (([], ()), (False, (1, 2.0))):
        plan, _ = _packed_arguments(make_kernel(info), args)
        assert plan.layout.bufsize == 0


def test_argument_count_must_match_the_kernel():
    k = make_kernel([ParamInfo(0, 8), ParamInfo(8, 8)])
    with pytest.raises(TypeError, match="kernel takes 2 arguments but 3 were given"):
        _packed_arguments(k, (1, 2, 3))
    with pytest.raises(TypeError, match="kernel takes 2 arguments but 1 was given"):
        _packed_arguments(k, (1,))
    plan, _ = _packed_arguments(k, (1, 2))
    assert plan.nargs == 2


@pytest.mark.parametrize(
    "bad",
    ["text", b"bytes", None, [1, 2], object(), np.array([1, 2]), ctypes.c_char(b"x"), {}],
)
def test_unsupported_types_raise_type_error_naming_position_and_type(bad):
    k = make_kernel()
    with pytest.raises(TypeError) as info:
        _packed_arguments(k, (1, 2.0, bad))
    msg = str(info.value)
    assert "the argument is of unsupported type" in msg
    assert "kernel argument 2" in msg
    assert type(bad).__name__ in msg


def test_int_out_of_range_raises_overflow_error():
    k = make_kernel()
    _packed_arguments(k, (1, 2))
    for big in (2**63, -(2**63) - 1, 2**100):
        with pytest.raises(OverflowError, match=r"kernel argument 1 .*does not fit in intptr_t"):
            _packed_arguments(k, (1, big))


def test_threads_pack_independently():
    k = make_kernel()
    errors = []

    def work(seed):
        try:
            for i in range(300):
                args = (seed, float(i), np.int32(i), i * 3)
                plan, blob = _packed_arguments(k, args)
                for j, a in enumerate(args):
                    want = expected_bytes(a)
                    assert field(blob, plan, j, len(want)) == want
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- launch() checks that happen before the driver is called -------------------


def fake_stream():
    return Stream.from_handle(0x5678)


def test_launch_rejects_wrong_types():
    k = make_kernel()
    cfg = LaunchConfig(grid=1, block=1)
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got str"):
        launch("stream", cfg, k)
    with pytest.raises(TypeError, match="The launch config must be provided as an object of type"):
        launch(fake_stream(), (1, 1), k)
    with pytest.raises(TypeError, match="kernel must be a Kernel, not str"):
        launch(fake_stream(), cfg, "kernel")
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        launch(fake_stream(), {"grid": 1, "block": 1, "smem": 4}, k)


def test_launch_on_closed_stream_or_kernel_raises():
    class FakeCode:
        _closed = False

    mod = FakeCode()
    k = make_kernel(mod=mod)
    cfg = LaunchConfig(grid=1, block=1)
    s = fake_stream()
    s.close()
    with pytest.raises(RuntimeError, match="Stream is closed"):
        launch(s, cfg, k)
    mod._closed = True
    with pytest.raises(RuntimeError, match="Kernel is closed"):
        launch(fake_stream(), cfg, k)
    assert "closed" in repr(k)


def test_launch_reports_bad_arguments_before_the_driver():
    k = make_kernel([ParamInfo(0, 8)])
    cfg = LaunchConfig(grid=1, block=1)
    with pytest.raises(TypeError, match="kernel takes 1 argument but 2 were given"):
        launch(fake_stream(), cfg, k, 1, 2)
    with pytest.raises(TypeError, match="kernel argument 0"):
        launch(fake_stream(), cfg, k, "x")


# -- Kernel objects ----------------------------------------------------------------


def test_kernel_cannot_be_constructed_directly():
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        Kernel()
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        KernelAttributes()
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        KernelOccupancy()


def test_kernel_from_handle():
    k = Kernel.from_handle(0xABCDEF)
    assert k.handle == 0xABCDEF
    assert type(k.handle) is int
    assert k == Kernel.from_handle(0xABCDEF)
    assert hash(k) == hash(Kernel.from_handle(0xABCDEF))
    assert k != Kernel.from_handle(0xABCDE0)
    assert "0xabcdef" in repr(k)
    with pytest.raises(TypeError, match="handle must be an integer"):
        Kernel.from_handle("0xabc")
    assert Kernel.from_handle(True).handle == 1  # bool is an int, as in cuda.core
    assert Kernel.from_handle(0).handle == 0  # a null kernel, as in cuda.core
    with pytest.raises(OverflowError):
        Kernel.from_handle(-1)


def test_kernel_attributes_view_expires_with_kernel():
    import gc

    k = make_kernel()
    attrs = k.attributes
    assert k.attributes is attrs
    assert k.occupancy is k.occupancy
    del k
    gc.collect()
    with pytest.raises(RuntimeError, match="expired Kernel"):
        attrs._kernel()


def test_strided_memory_view_passes_its_pointer():
    from cuda_core.utils import StridedMemoryView

    host = np.arange(8, dtype=np.float32)
    view = StridedMemoryView.from_dlpack(host, stream_ptr=-1)
    assert view.ptr == host.ctypes.data
    plan, blob = _packed_arguments(make_kernel(), (view, 3))
    assert field(blob, plan, 0, 8) == struct.pack("=Q", host.ctypes.data)
    assert field(blob, plan, 1, 8) == struct.pack("=q", 3)


def test_closed_kernel_attributes_raise_even_when_cached():
    from cuda_core._cuda_ffi import lib

    class FakeCode:
        _closed = False

    mod = FakeCode()
    k = make_kernel(mod=mod)
    cache = {(0, lib.CU_FUNC_ATTRIBUTE_NUM_REGS): 32}
    attrs = KernelAttributes._init(k, cache, 0)
    assert attrs.num_regs == 32  # cached: no driver call
    mod._closed = True
    with pytest.raises(RuntimeError, match="Kernel is closed"):
        _ = attrs.num_regs


@pytest.mark.parametrize("bad", [int, np.array([0, 1]), "0", 1.0, True])
def test_kernel_attributes_device_must_be_an_int(bad):
    with pytest.raises(TypeError, match="device must be a Device or an int"):
        make_kernel().attributes[bad]


# -- argument widths against the kernel's parameter sizes (driver 12.4+) ----------


@pytest.mark.parametrize(
    "value, size",
    [
        (np.uint8(1), 4),
        (np.int32(1), 8),
        (np.float32(1.0), 8),
        (ctypes.c_uint16(1), 4),
        (True, 8),  # a bool is one byte; Python ints and bools are narrowed, never widened
        (1, 16),  # a Python int is an intptr_t beyond 4 bytes
        (2.0, 4),  # a Python float is a double: too wide for a float
        (1 + 2j, 8),
        (np.complex64(1), 16),
        (Buffer.from_handle(0x7F00_0000_0000, 16), 4),
    ],
    ids=lambda v: type(v).__name__,
)
def test_argument_width_must_match_the_parameter(value, size):
    k = make_kernel([ParamInfo(0, 8), ParamInfo(8, size)])
    with pytest.raises(TypeError) as info:
        _packed_arguments(k, (0, value))
    msg = str(info.value)
    assert "kernel argument 1" in msg
    assert f"kernel parameter is {size} bytes" in msg
    assert type(value).__name__ in msg
    assert not k._plans  # nothing cached for the refused combination


def test_argument_widths_that_match_are_packed():
    k = make_kernel(
        [ParamInfo(0, 8), ParamInfo(8, 4), ParamInfo(12, 2), ParamInfo(14, 1), ParamInfo(16, 8)]
    )
    buf = Buffer.from_handle(0x7F00_0000_0000, 16)
    args = (buf, np.uint32(7), np.float16(1.0), True, 2.5)
    for _ in range(2):
        plan, blob = _packed_arguments(k, args)
        assert field(blob, plan, 0, 8) == struct.pack("=Q", buf.handle)
        assert field(blob, plan, 1, 4) == struct.pack("=I", 7)
        assert field(blob, plan, 4, 8) == struct.pack("=d", 2.5)
    # A Python int fits a pointer-sized parameter.
    plan, blob = _packed_arguments(k, (0x1234, np.uint32(7), np.float16(1.0), True, 2.5))
    assert field(blob, plan, 0, 8) == struct.pack("=q", 0x1234)


def test_int_out_of_range_is_also_a_value_error():
    k = make_kernel([ParamInfo(0, 8), ParamInfo(8, 8)])
    with pytest.raises(ValueError, match="kernel argument 1 .*does not fit in intptr_t") as info:
        _packed_arguments(k, (1, 2**64))
    assert isinstance(info.value, OverflowError)
