# SPDX-License-Identifier: Apache-2.0
"""Bad input, table-driven: every invalid value raises a clear error.

Deterministic companion of test_hardening_hypothesis.py (which needs
``hypothesis``): the same rules (``tests/_scripts/badinput_spec.py``) are
applied to a fixed pool of awkward values (``WEIRD_VALUES``) for every
field of every option dataclass and of LaunchConfig, to
``Buffer.from_handle``, ``Buffer.fill``, ``Buffer.copy_to/copy_from`` and
the argument lists of ``launch``.  An invalid input must raise TypeError,
ValueError (or CUDAError where only the device can tell) with a message
naming the field; it must never crash the interpreter or be accepted.

Defects these tests once found are pinned by regression tests at the end.
"""

from __future__ import annotations

import ctypes
import fractions
import itertools
import os

import numpy as np
import pytest
from _scripts import badinput_spec as spec
from _scripts.badinput_checks import (
    FakeResource,
    check_fill,
    check_from_handle,
    check_launch,
    open_mem,
    run_valid,
)
from _scripts.hardening_util import compile_kernels, to_host
from conftest import gpu_status

from cuda_core import (
    Buffer,
    CUDAError,
    LaunchConfig,
    LinkerOptions,
    ProgramOptions,
    Stream,
    VirtualMemoryResourceOptions,
    launch,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:In future, it will be an error for 'np.bool':DeprecationWarning"
)

HAVE_GPU = gpu_status()[0]
COUNTS = {}


def _count(what, n):
    COUNTS[what] = COUNTS.get(what, 0) + n


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    total = sum(COUNTS.values())
    print(f"\nbad-input table examples: {total} {dict(sorted(COUNTS.items()))}")


def _class_ids():
    return [cls.__name__ for cls in spec.option_classes()]


# --------------------------------------------------------------------------
# Option dataclasses and LaunchConfig
# --------------------------------------------------------------------------
CROSS_FIELD_CASES = [
    ("EventOptions", {"ipc_enabled": True, "timing_enabled": True}),  # constructs
    ("EventOptions", {"ipc_enabled": 1, "timing_enabled": True}),
    ("LinkerOptions", {"arch": "sm_90", "ptx": True}),
    ("LinkerOptions", {"arch": "sm_90", "ptx": True, "link_time_optimization": False}),
    ("LinkerOptions", {"arch": "sm_90", "ptx": True, "link_time_optimization": True}),
    ("GraphCompleteOptions", {"device_launch": True, "auto_free_on_launch": True}),
    ("GraphCompleteOptions", {"device_launch": True, "use_node_priority": True}),
    ("ManagedMemoryResourceOptions", {"preferred_location_type": "device"}),
    (
        "ManagedMemoryResourceOptions",
        {"preferred_location_type": "device", "preferred_location": 0},
    ),
    (
        "ManagedMemoryResourceOptions",
        {"preferred_location_type": "device", "preferred_location": -1},
    ),
    ("ManagedMemoryResourceOptions", {"preferred_location_type": "host", "preferred_location": 0}),
    (
        "ManagedMemoryResourceOptions",
        {"preferred_location_type": "host_numa", "preferred_location": -3},
    ),
    ("ManagedMemoryResourceOptions", {"preferred_location_type": "host_numa"}),
    ("ManagedMemoryResourceOptions", {"preferred_location": -2}),
    ("LaunchConfig", {"grid": 2**31, "block": 1, "cluster": 2}),
    ("LaunchConfig", {"grid": (1, 2**20), "block": 1, "cluster": (1, 2**12)}),
    ("LaunchConfig", {"grid": (1, 2, 3), "block": (4, 5, 6), "cluster": (1, 1, 2)}),
    ("LaunchConfig", {"grid": None, "block": None}),
    ("LaunchConfig", {"grid": 1}),
    ("LaunchConfig", {"block": 1}),
    ("ProgramOptions", {"arch": "sm_90", "define_macro": [("A", "1"), "B", ("C", "2", "3")]}),
    ("ProgramOptions", {"arch": "sm_90", "extra_sources": [("a", "x"), ("b", "")]}),
    ("ProgramOptions", {"arch": "sm_90", "diag_error": [1, True]}),
    ("ProgramOptions", {"arch": "compute_90", "lineinfo": True, "debug": False}),
]


# ProgramOptions takes odd values as cuda.core does, warning about each one
# (tests/compile/test_program_option_warnings.py checks those warnings).
@pytest.mark.filterwarnings(r"ignore:ProgramOptions\.\w+=.*:UserWarning")
@pytest.mark.parametrize("cls", list(spec.option_classes()), ids=_class_ids())
def test_option_class_against_value_pool(cls):
    problems, defects, n = [], 0, 0
    for field in spec.option_classes()[cls]:
        for value in spec.WEIRD_VALUES:
            kwargs = dict(spec.base_kwargs(cls))
            kwargs[field] = value
            n += 1
            if spec.known_defect(cls, kwargs):
                defects += 1
                continue
            problem = spec.check_example(cls, kwargs, [field])
            if problem:
                problems.append(problem)
    for cls_name, kwargs in CROSS_FIELD_CASES:
        if cls_name == cls.__name__:
            n += 1
            problem = spec.check_example(cls, dict(kwargs))
            if problem:
                problems.append(problem)
    _count(cls.__name__, n)
    print(f"{cls.__name__}: {n} examples, {defects} on known defects")
    assert not problems, "\n".join(problems[:30])


def test_every_field_has_a_rule():
    # A new option field cannot slip past the bad-input tests unnoticed.
    import dataclasses

    for cls, rules in spec.option_classes().items():
        if dataclasses.is_dataclass(cls):
            names = {f.name for f in dataclasses.fields(cls)}
            assert names == set(rules), cls.__name__


def test_options_as_dict_with_unknown_key_raises():
    from cuda_core import StreamOptions
    from cuda_core._coerce import check_or_create_options

    with pytest.raises(TypeError, match="bogus"):
        check_or_create_options(StreamOptions, {"bogus": 1}, "Stream options")
    with pytest.raises(TypeError, match="Stream options"):
        check_or_create_options(StreamOptions, 3, "Stream options")


# --------------------------------------------------------------------------
# Buffer.from_handle
# --------------------------------------------------------------------------
def _from_handle_cases():
    from cuda_core._cuda_ffi import ffi

    ptrs = [*spec.WEIRD_VALUES, ffi.cast("void *", 0x1000), ffi.NULL]
    sizes = [0, 1, 64, 2**64 - 1, 2**64, -1, True, 1.0, "8", None, np.int64(8), spec.IndexOnly(3)]
    fake = FakeResource()
    stream = Stream.from_handle(0x1234)
    combos = [(None, None, None), (fake, None, None), (None, object(), None)]
    combos += [(fake, object(), None), (None, None, stream), (fake, None, stream), (7, None, None)]
    for ptr in ptrs:
        yield ptr, 64, None, None, None
    for size in sizes:
        yield 0x1000, size, None, None, None
    for mr, owner, s in combos:
        yield 0x1000, 64, mr, owner, s


def test_buffer_from_handle_against_value_pool():
    problems, n = [], 0
    for ptr, size, mr, owner, stream in _from_handle_cases():
        n += 1
        problem = check_from_handle(ptr, size, mr, owner, stream)
        if problem:
            problems.append(problem)
    _count("Buffer.from_handle", n)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------
# fill / copy_to / copy_from: validation happens before the driver is used.
# Without a GPU the buffers are views of fake addresses and a valid call
# ends in LibraryNotFoundError (no driver); with one they are real.
# --------------------------------------------------------------------------
@pytest.fixture
def mem():
    m = open_mem(HAVE_GPU)
    yield m
    m.close()


class Foreign:
    def __init__(self, info):
        self.info = info

    def __cuda_stream__(self):
        return self.info


BAD_STREAMS = [
    None,
    0,
    1,
    "stream",
    object(),
    1.5,
    Foreign((1, 0x1000)),
    Foreign("x"),
    Foreign((0,)),
    Foreign((0, -1)),
    Foreign((0, "a")),
    Foreign((0, 1.5)),
]
# A malformed __cuda_stream__ result raises RuntimeError (as in cuda.core), a
# negative address OverflowError.
BAD_STREAM_ERRORS = (TypeError, ValueError, RuntimeError, OverflowError)

FILL_VALUES = [
    *spec.WEIRD_VALUES,
    np.uint16(0x1234),
    np.float32(1.5),
    np.int8(-1),
    np.array([1, 2], dtype=np.uint16),
    np.array([1.0]),
    b"\x00\x00\x00\x00\x00",
    memoryview(b"ab"),
    ctypes.c_uint32(5),
    -1,
    255,
    256,
]


def test_fill_against_value_pool(mem):
    problems, n = [], 0
    for value in FILL_VALUES:
        for buf in (mem.buf, mem.odd):
            n += 1
            problem = check_fill(mem, buf, value)
            if problem:
                problems.append(problem)
    for stream in BAD_STREAMS:
        n += 1
        with pytest.raises(BAD_STREAM_ERRORS) as info:
            mem.buf.fill(0, stream=stream)
        assert str(info.value)
    with pytest.raises(TypeError):
        mem.buf.fill(0)  # stream is required
    _count("Buffer.fill", n)
    assert not problems, "\n".join(problems)
    if mem.real:  # the valid fills really happened and nothing was poisoned
        mem.buf.fill(np.uint32(0xAABBCCDD), stream=mem.stream)
        got = to_host(mem.buf, mem.stream)
        np.testing.assert_array_equal(got, np.full(16, 0xAABBCCDD, dtype=np.uint32))


def test_copy_against_value_pool(mem):
    n = 0
    bad_targets = [v for v in spec.WEIRD_VALUES if v is not None] + [mem.small, mem.odd]
    for target in bad_targets:
        for call in (
            lambda target=target: mem.buf.copy_to(target, stream=mem.stream),
            lambda target=target: mem.buf.copy_from(target, stream=mem.stream),
        ):
            n += 1
            with pytest.raises((TypeError, ValueError)) as info:
                call()
            assert str(info.value)
    n += 1
    with pytest.raises((TypeError, ValueError)):
        mem.buf.copy_from(None, stream=mem.stream)
    for stream in BAD_STREAMS:
        for call in (
            lambda stream=stream: mem.buf.copy_to(mem.other, stream=stream),
            lambda stream=stream: mem.buf.copy_from(mem.other, stream=stream),
        ):
            n += 1
            with pytest.raises(BAD_STREAM_ERRORS) as info:
                call()
            assert str(info.value)
    for options in (0, {}, "x", object()):
        n += 1
        with pytest.raises((TypeError, ValueError, NotImplementedError)) as info:
            mem.buf.copy_to(mem.other, stream=mem.stream, options=options)
        assert str(info.value)
    with pytest.raises(TypeError):
        mem.buf.copy_to(mem.other)  # stream is required
    # Valid copies still go through.
    assert run_valid(mem, lambda: mem.buf.copy_to(mem.other, stream=mem.stream)) is None
    assert run_valid(mem, lambda: mem.other.copy_from(mem.buf, stream=mem.stream)) is None
    if mem.real:
        fresh = mem.buf.copy_to(stream=mem.stream)  # allocated from the buffer's resource
        assert fresh.size == 64
        fresh.close()
    else:
        with pytest.raises(ValueError, match="memory_resource"):
            mem.buf.copy_to(stream=mem.stream)  # a view has no resource to allocate from
    _count("Buffer.copy_to/copy_from", n)


# --------------------------------------------------------------------------
# launch (GPU: the kernel is needed for its parameter list)
# --------------------------------------------------------------------------
class Pair(ctypes.Structure):
    _fields_ = [("a", ctypes.c_uint32), ("b", ctypes.c_uint32)]


LAUNCH_ARG_POOL = [
    7,
    -1,
    2**63 - 1,
    True,
    1.5,
    1j,
    np.uint64(7),
    np.uint32(7),
    np.float64(1.0),
    np.float32(1.0),
    np.int8(1),
    ctypes.c_uint64(1),
    ctypes.c_uint32(1),
    ctypes.c_double(1.0),
    Pair(1, 2),
    "7",
    b"7",
    None,
    [7],
    (7,),
    {},
    object(),
    np.array([1, 2]),
    fractions.Fraction(1, 2),
    os,
]


@pytest.fixture(scope="module")
def kernels():
    if not HAVE_GPU:
        pytest.skip("needs a GPU")
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    code, k = compile_kernels(dev)
    yield dev, k
    code.close()


@pytest.mark.gpu
def test_launch_arguments_against_value_pool(kernels):
    dev, k = kernels
    sink = k["sink"]
    s = dev.create_stream()
    cfg = LaunchConfig(grid=1, block=1)
    try:
        count_checked = sink.num_arguments == 3
    except (CUDAError, RuntimeError):
        count_checked = False
    problems, n = [], 0
    lists = [()]
    lists += [(a,) for a in LAUNCH_ARG_POOL]
    lists += [(a, b) for a, b in itertools.product(LAUNCH_ARG_POOL[:8], repeat=2)]
    lists += [(7, np.uint32(1), b) for b in LAUNCH_ARG_POOL]
    lists += [(a, np.uint32(1), 2.0) for a in LAUNCH_ARG_POOL]
    lists += [(7, b, 2.0) for b in LAUNCH_ARG_POOL]
    lists += [(7, np.uint32(1), 2.0, x) for x in LAUNCH_ARG_POOL[:6]]
    for args in lists:
        n += 1
        problem = check_launch(s, cfg, sink, args, count_checked)
        if problem:
            problems.append(problem)
    for stream in BAD_STREAMS:
        n += 1
        with pytest.raises(BAD_STREAM_ERRORS):
            launch(stream, cfg, sink, 7, np.uint32(1), 2.0)
    for config in (None, 1, "cfg", (1, 1), {"grid": 1}, {"grid": 1, "block": 1, "bogus": 2}):
        n += 1
        with pytest.raises((TypeError, ValueError)) as info:
            launch(s, config, sink, 7, np.uint32(1), 2.0)
        assert str(info.value)
    for kernel in (None, "sink", sink._handle, object(), k):
        n += 1
        with pytest.raises(TypeError, match="Kernel"):
            launch(s, cfg, kernel, 7, np.uint32(1), 2.0)
    # Configurations only the device can refuse: a clear CUDAError, no poisoning.
    for bad in (
        LaunchConfig(grid=1, block=2048),
        LaunchConfig(grid=(1, 70000), block=1),
        LaunchConfig(grid=1, block=(1, 1, 128)),
        LaunchConfig(grid=1, block=1, shmem_size=1 << 20),
    ):
        n += 1
        with pytest.raises(CUDAError) as info:
            launch(s, bad, sink, 7, np.uint32(1), 2.0)
        assert info.value.name == "CUDA_ERROR_INVALID_VALUE", info.value
    _count("launch", n)
    # The context is healthy: a real kernel computes the right thing.
    buf = dev.allocate(4 * 256, stream=s)
    buf.fill(0, stream=s)
    launch(s, LaunchConfig(grid=1, block=256), k["add_value"], buf, np.uint64(256), np.uint32(5))
    np.testing.assert_array_equal(to_host(buf, s), np.full(256, 5, dtype=np.uint32))
    buf.close()
    s.close()
    assert not problems, "\n".join(problems[:30])


# --------------------------------------------------------------------------
# Fixed defects (each pins one precise input that was once mishandled; see
# the module docstring of tests/_scripts/badinput_spec.py).
# --------------------------------------------------------------------------
def test_arch_rejects_non_ascii_digits():
    with pytest.raises(ValueError, match="arch"):
        LinkerOptions(arch="sm_\u0669\u0660")
    # ProgramOptions, as in cuda.core, takes the arch as given (NVRTC judges it).
    assert ProgramOptions(arch="sm_\u0669\u0660").arch == "sm_\u0669\u0660"


def test_vmr_options_gpu_direct_rdma_must_be_bool():
    with pytest.raises(TypeError, match="gpu_direct_rdma"):
        VirtualMemoryResourceOptions(gpu_direct_rdma="no")


def test_vmr_options_unhashable_choice_names_the_field():
    with pytest.raises((TypeError, ValueError), match="allocation_type"):
        VirtualMemoryResourceOptions(allocation_type=["pinned"])


def test_vmr_options_non_iterable_peers_names_the_field():
    with pytest.raises((TypeError, ValueError), match="peers"):
        VirtualMemoryResourceOptions(peers=1)


@pytest.mark.parametrize("value", [int, np.array([1, 2])], ids=["int-class", "array"])
def test_launch_config_fake_index_names_the_field(value):
    with pytest.raises((TypeError, ValueError), match="LaunchConfig.block"):
        LaunchConfig(grid=1, block=value)


def test_program_options_ofast_compile_is_rendered_as_given():
    # As in cuda.core: accepted at construction, rendered into the flag.
    opts = ProgramOptions(arch="sm_90", ofast_compile=np.array([1, 2]))
    assert opts.as_bytes("nvrtc")[-1] == b"--Ofast-compile=[1 2]"


@pytest.mark.parametrize("ptr", [4096.7, "4096", b"4096", fractions.Fraction(8193, 2)])
def test_buffer_from_handle_rejects_non_integer_addresses(ptr):
    with pytest.raises((TypeError, ValueError)):
        Buffer.from_handle(ptr, 64)


def test_buffer_from_handle_infinite_address():
    with pytest.raises((TypeError, ValueError), match="ptr"):
        Buffer.from_handle(float("inf"), 64)


@pytest.mark.gpu
def test_launch_int_overflow_is_a_value_error(kernels):
    dev, k = kernels
    s = dev.create_stream()
    try:
        with pytest.raises(ValueError, match="argument 0"):
            launch(s, LaunchConfig(grid=1, block=1), k["sink"], 2**64, np.uint32(1), 2.0)
    finally:
        s.close()


@pytest.mark.gpu
def test_launch_rejects_argument_narrower_than_parameter(kernels):
    # The parameter sizes come from cuKernelGetParamInfo (driver 12.4 or newer).
    dev, k = kernels
    try:
        assert len(k["add_value"].arguments_info) == 3
    except NotImplementedError as exc:
        pytest.skip(str(exc))
    s = dev.create_stream()
    buf = dev.allocate(4 * 64, stream=s)
    try:
        buf.fill(0, stream=s)
        with pytest.raises((TypeError, ValueError), match="argument 2"):
            launch(
                s,
                LaunchConfig(grid=1, block=64),
                k["add_value"],
                buf,
                np.uint64(64),
                np.uint8(1),
            )
    finally:
        s.sync()
        buf.close()
        s.close()
