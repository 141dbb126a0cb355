# SPDX-License-Identifier: Apache-2.0
"""Bad input, property-based: generated values against the documented rules.

For every option dataclass and LaunchConfig, ``Buffer.from_handle``,
``Buffer.fill`` and ``launch`` argument lists, hypothesis draws values
(anything from None to nested containers, NumPy scalars, near-valid strings
and out-of-range ints) and checks them against the oracle in
``tests/_scripts/badinput_spec.py``: a valid input is accepted, an invalid
one raises TypeError/ValueError (or CUDAError where only the device can
tell) with a message naming the field, and nothing crashes.  Inputs that hit
a known defect are left to the ``xfail(strict=True)`` tests of
test_hardening_badinput.py, which also runs every rule on a fixed table of
values where hypothesis is not installed.

The number of examples run is printed at the end of the module (run pytest
with ``-s`` to see it); ``CUDA_CORE_HYPOTHESIS_EXAMPLES`` sets the examples
per test (default 300 per option class, 400 per API).
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from _scripts import badinput_spec as spec  # noqa: E402
from _scripts.badinput_checks import (  # noqa: E402
    FakeResource,
    check_fill,
    check_from_handle,
    check_launch,
    open_mem,
)
from _scripts.hardening_util import compile_kernels  # noqa: E402
from conftest import gpu_status  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cuda_core import (  # noqa: E402
    CUDAError,
    LaunchConfig,
    LibraryNotFoundError,
    Stream,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:In future, it will be an error for 'np.bool':DeprecationWarning"
)

HAVE_GPU = gpu_status()[0]
# Examples per test; CUDA_CORE_HYPOTHESIS_EXAMPLES overrides both (e.g. to
# keep a GPU run short).
OPTION_EXAMPLES = int(os.environ.get("CUDA_CORE_HYPOTHESIS_EXAMPLES", 300))
API_EXAMPLES = int(os.environ.get("CUDA_CORE_HYPOTHESIS_EXAMPLES", 400))
SETTINGS = settings(
    max_examples=OPTION_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
COUNTS = {}


def _count(what):
    COUNTS[what] = COUNTS.get(what, 0) + 1


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    total = sum(COUNTS.values())
    print(f"\nhypothesis examples run: {total} {dict(sorted(COUNTS.items()))}")


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------
NEAR_VALID_TEXT = st.sampled_from(
    [
        "sm_90",
        "sm_90a",
        "sm_80",
        "compute_90",
        "lto_90",
        "sm_",
        "sm_9x",
        "SM_90",
        "sm_\u0669\u0660",
        "device",
        "host",
        "host_numa",
        "host_numa_current",
        "pinned",
        "managed",
        "posix_fd",
        "fabric",
        "win32",
        "minimum",
        "recommended",
        "rw",
        "r",
        "w",
        "0",
        "min",
        "mid",
        "max",
        "fast",
        "c++17",
        "-O3",
        "",
    ]
)

numpy_scalars = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(0, 2**64 - 1).map(np.uint64),
    st.integers(-(2**31), 2**31 - 1).map(np.int32),
    st.integers(0, 2**32 - 1).map(np.uint32),
    st.integers(0, 255).map(np.uint8),
    st.integers(0, 2**16 - 1).map(np.uint16),
    st.floats(width=32, allow_nan=True).map(np.float32),
    st.floats(allow_nan=True).map(np.float64),
    st.booleans().map(np.bool_),
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 300),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 1, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True),
    st.text(max_size=8),
    NEAR_VALID_TEXT,
    st.binary(max_size=6),
    numpy_scalars,
    st.sampled_from(spec.WEIRD_VALUES),
    st.builds(spec.PathLikeValue, st.text(max_size=6)),
    st.builds(spec.IndexOnly, st.integers(-3, 2**33)),
)

values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.tuples(NEAR_VALID_TEXT, st.one_of(st.text(max_size=4), st.binary(max_size=3))),
        st.dictionaries(st.text(max_size=3), children, max_size=2),
        st.frozensets(st.integers(-2, 3), max_size=3),
    ),
    max_leaves=6,
)


# Values that are often valid somewhere (flags, small ints, option words,
# short lists of them), so that accepted inputs are exercised too.
likely = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 70),
    NEAR_VALID_TEXT,
    st.lists(NEAR_VALID_TEXT, max_size=3),
    st.tuples(st.text(max_size=3), st.text(max_size=3)),
    st.lists(st.integers(0, 5), max_size=3).map(tuple),
)
field_values = st.one_of(likely, values)


# --------------------------------------------------------------------------
# Option dataclasses and LaunchConfig
# --------------------------------------------------------------------------
def _check_options(cls, data):
    fields = list(spec.option_classes()[cls])
    chosen = data.draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique=True))
    kwargs = dict(spec.base_kwargs(cls))
    for name in chosen:
        kwargs[name] = data.draw(field_values, label=name)
    _count(cls.__name__)
    if spec.known_defect(cls, kwargs):
        return
    problem = spec.check_example(cls, kwargs, chosen)
    assert problem is None, problem


@pytest.mark.parametrize(
    "cls", list(spec.option_classes()), ids=[c.__name__ for c in spec.option_classes()]
)
@SETTINGS
@given(data=st.data())
# ProgramOptions takes odd values with a warning each (checked in
# tests/compile/test_program_option_warnings.py), as cuda.core takes them.
@pytest.mark.filterwarnings(r"ignore:ProgramOptions\.\w+=.*:UserWarning")
def test_option_class_properties(cls, data):
    _check_options(cls, data)


# --------------------------------------------------------------------------
# Buffer.from_handle
# --------------------------------------------------------------------------
@settings(SETTINGS, max_examples=API_EXAMPLES)
@given(
    ptr=st.one_of(values, st.integers(0, 2**64 - 1)),
    size=st.one_of(values, st.integers(0, 2**64 - 1)),
    which=st.sampled_from(["view", "mr", "owner", "mr+owner", "stream", "mr+stream", "bad mr"]),
)
def test_buffer_from_handle_properties(ptr, size, which):
    _count("Buffer.from_handle")
    mr = FakeResource() if "mr" in which and which != "bad mr" else None
    if which == "bad mr":
        mr = 7
    owner = object() if "owner" in which else None
    stream = Stream.from_handle(0x1234) if "stream" in which else None
    problem = check_from_handle(ptr, size, mr, owner, stream)
    assert problem is None, problem


# --------------------------------------------------------------------------
# Buffer.fill (real buffers on a GPU; views of fake addresses without one)
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mem():
    m = open_mem(HAVE_GPU)
    yield m
    m.close()


fill_values = st.one_of(
    values,
    st.integers(-300, 600),
    st.builds(
        lambda n, dt: np.zeros(n, dtype=dt),
        st.integers(0, 5),
        st.sampled_from([np.uint8, np.uint16, np.float32, np.int64, np.complex64]),
    ),
    st.binary(max_size=6).map(memoryview),
)


@settings(SETTINGS, max_examples=API_EXAMPLES)
@given(value=fill_values, odd=st.booleans())
def test_buffer_fill_properties(mem, value, odd):
    _count("Buffer.fill")
    problem = check_fill(mem, mem.odd if odd else mem.buf, value)
    assert problem is None, problem


@settings(SETTINGS, max_examples=API_EXAMPLES // 2)
@given(value=values, bad_stream=st.booleans(), to=st.booleans())
def test_buffer_copy_properties(mem, value, bad_stream, to):
    # ``value`` (never a Buffer or a stream) is used as the destination/source,
    # or as the stream.
    _count("Buffer.copy_to/copy_from")
    if bad_stream:
        other, stream = mem.other, value
    else:
        other, stream = value, mem.stream
    call = mem.buf.copy_to if to else mem.buf.copy_from
    # Only copy_to(None) with a real stream is valid: it allocates the destination.
    allocates = to and other is None and not bad_stream
    try:
        result = call(other, stream=stream)
    except (TypeError, ValueError) as exc:
        assert str(exc)
        if allocates:
            assert not mem.real, exc  # a view has no memory resource to allocate from
        return
    except LibraryNotFoundError:
        assert allocates and not mem.real
        return
    assert allocates, f"accepted: copy {'to' if to else 'from'} {other!r} on {stream!r}"
    result.close()


# --------------------------------------------------------------------------
# launch argument lists (GPU; the `sink` kernel touches no memory, so any
# accepted argument list is harmless)
# --------------------------------------------------------------------------
launch_args = st.one_of(
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True),
    st.complex_numbers(allow_nan=True),
    st.booleans(),
    numpy_scalars,
    st.integers(0, 2**32 - 1).map(ctypes.c_uint32),
    st.integers(0, 2**64 - 1).map(ctypes.c_uint64),
    st.floats(allow_nan=True).map(ctypes.c_double),
    st.just(np.float16(1.5)),
    st.just(np.complex64(1 + 2j)),
    st.sampled_from(spec.WEIRD_VALUES),
    st.sampled_from([os, print, "7", b"7"]),
)


@pytest.fixture(scope="module")
def sink():
    if not HAVE_GPU:
        pytest.skip("needs a GPU")
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    code, k = compile_kernels(dev)
    s = dev.create_stream()
    try:
        count_checked = k["sink"].num_arguments == 3
    except (CUDAError, RuntimeError):
        count_checked = False
    yield s, k["sink"], count_checked
    s.sync()
    s.close()
    code.close()


@pytest.mark.gpu
@settings(SETTINGS, max_examples=API_EXAMPLES)
@given(args=st.lists(launch_args, max_size=5), exact=st.booleans())
def test_launch_argument_properties(sink, args, exact):
    stream, kernel, count_checked = sink
    if exact:  # mostly the right count, so that the type rules are exercised
        args = (args + [7, np.uint32(1), 2.0])[:3]
    _count("launch")
    problem = check_launch(stream, LaunchConfig(grid=1, block=1), kernel, args, count_checked)
    assert problem is None, problem
    stream.sync()  # nothing accepted broke the context
