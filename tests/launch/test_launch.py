# SPDX-License-Identifier: Apache-2.0
"""Kernel launches on the GPU: every argument type round-trips bit for bit,
cluster, cooperative and PDL launches, and launch errors."""

from __future__ import annotations

import ctypes
import os
import struct
import threading

import numpy as np
import pytest
from _launch_args_setup import PACKED_PAIR_DTYPE, Cond, Pair, expected_bytes

from cuda_core import CUDAError, Device, LaunchConfig, Program, ProgramOptions, launch
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check

pytestmark = pytest.mark.gpu


PAIR_DTYPE = np.dtype([("a", "i1"), ("b", "<f8")], align=True)

# (test id, C parameter type, value)
CASES = [
    ("bool_true", "bool", True),
    ("bool_false", "bool", False),
    ("int_ptr", "long long", 0x7F00_1234_5678),
    ("int_neg", "long long", -(2**63)),
    ("float", "double", -2.5e-300),
    ("complex", "double2", 1.25 - 3.5j),
    ("np_bool", "bool", np.bool_(True)),
    ("np_int8", "signed char", np.int8(-128)),
    ("np_int16", "short", np.int16(-12345)),
    ("np_int32", "int", np.int32(-(2**31))),
    ("np_int64", "long long", np.int64(2**62 + 7)),
    ("np_uint8", "unsigned char", np.uint8(255)),
    ("np_uint16", "unsigned short", np.uint16(65535)),
    ("np_uint32", "unsigned int", np.uint32(2**32 - 1)),
    ("np_uint64", "unsigned long long", np.uint64(2**64 - 1)),
    ("np_float16", "unsigned short", np.float16(-1.5)),
    ("np_float16_nan", "unsigned short", np.frombuffer(b"\x01\x7c", dtype=np.float16)[0]),
    ("np_float32", "float", np.float32(3.1415927)),
    ("np_float64", "double", np.float64(-1e300)),
    ("np_complex64", "float2", np.complex64(1.5 - 2.25j)),
    ("np_complex128", "double2", np.complex128(-3e-300 + 7j)),
    ("c_bool", "bool", ctypes.c_bool(True)),
    ("c_int8", "signed char", ctypes.c_int8(-7)),
    ("c_int16", "short", ctypes.c_int16(-300)),
    ("c_int32", "int", ctypes.c_int32(-70000)),
    ("c_int64", "long long", ctypes.c_int64(-(2**40))),
    ("c_uint8", "unsigned char", ctypes.c_uint8(200)),
    ("c_uint16", "unsigned short", ctypes.c_uint16(60000)),
    ("c_uint32", "unsigned int", ctypes.c_uint32(4_000_000_000)),
    ("c_uint64", "unsigned long long", ctypes.c_uint64(2**64 - 2)),
    ("c_float", "float", ctypes.c_float(0.1)),
    ("c_double", "double", ctypes.c_double(0.1)),
    ("condition", "unsigned long long", Cond(0xDEADBEEF12345678)),
    ("ctypes_struct", "Pair", Pair(b"z", 1.5)),
    ("numpy_struct", "Pair", np.array((-3, 2.75), dtype=PAIR_DTYPE)[()]),
    ("numpy_packed_struct", "Pair", np.array((9, -0.5), dtype=PACKED_PAIR_DTYPE)[()]),
]


def echo_source():
    lines = [
        "struct Pair { char a; double b; };",
        "template <typename T> __device__ void put(char *out, const T &v) {",
        "    const char *p = (const char *)&v;",
        "    for (int i = 0; i < (int)sizeof(T); ++i) out[i] = p[i];",
        "}",
    ]
    for name, ctype, _ in CASES:
        lines.append(
            f'extern "C" __global__ void echo_{name}(char *out, {ctype} v) {{ put(out, v); }}'
        )
    # one kernel with many differently aligned parameters
    lines.append(
        'extern "C" __global__ void mixed(char *out, signed char a, double b, short c, bool d,'
        " float e, long long f, float2 g, Pair h, unsigned short i, double2 j, void *k) {"
        " int o = 0; put(out + o, a); o += 1; put(out + o, b); o += 8; put(out + o, c); o += 2;"
        " put(out + o, d); o += 1; put(out + o, e); o += 4; put(out + o, f); o += 8;"
        " put(out + o, g); o += 8; put(out + o, h); o += 16; put(out + o, i); o += 2;"
        " put(out + o, j); o += 16; put(out + o, k); }"
    )
    many = ", ".join(f"long long a{i}" for i in range(300))
    stores = " ".join(f"out[{i}] = a{i};" for i in range(300))
    lines.append(f'extern "C" __global__ void many(long long *out, {many}) {{ {stores} }}')
    lines.append(
        'extern "C" __global__ void saxpy(float a, const float *x, float *y,'
        " unsigned long long n) {"
        " unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;"
        " if (i < n) y[i] = a * x[i] + y[i]; }"
    )
    lines.append('extern "C" __global__ void noop() {}')
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def code():
    dev = Device(0)
    dev.set_current()
    prog = Program(echo_source(), "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    obj = prog.compile("cubin")
    yield obj
    obj.close()


def to_host(buf, nbytes, stream):
    """Copy ``nbytes`` from ``buf`` in ``stream`` order, wait, return them."""
    out = bytearray(nbytes)
    check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(out), buf.handle, nbytes, stream._handle))
    stream.sync()
    return bytes(out)


def to_device(buf, data, stream):
    """Copy ``data`` into ``buf`` in ``stream`` order and wait."""
    data = bytes(data)
    check(lib.cuMemcpyHtoDAsync(buf.handle, data, len(data), stream._handle))
    stream.sync()


@pytest.mark.parametrize("name, ctype, value", CASES, ids=[c[0] for c in CASES])
def test_argument_round_trip(device, stream, code, name, ctype, value):
    kernel = code.get_kernel(f"echo_{name}")
    want = expected_bytes(value)
    out = device.allocate(64, stream=stream)
    cfg = LaunchConfig(grid=1, block=1)
    for attempt in range(2):  # plan built, then the cached fast path
        to_device(out, b"\xa5" * 64, stream)
        stream.sync()
        launch(stream, cfg, kernel, out, value)
        stream.sync()
        got = to_host(out, len(want), stream)
        if ctype == "Pair":
            # A kernel copies a struct field by field: its padding (bytes 1-7)
            # is not observable, so compare the fields only.
            assert got[:1] + got[8:] == want[:1] + want[8:], f"attempt {attempt}: {got.hex()}"
        else:
            assert got == want, f"attempt {attempt}: {got.hex()} != {want.hex()}"
    out.close()


def test_buffer_and_int_pointer_arguments(device, stream, code):
    kernel = code.get_kernel("echo_int_ptr")
    out = device.allocate(8, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, out.handle, 0x1122334455667788)
    stream.sync()
    assert to_host(out, 8, stream) == struct.pack("<q", 0x1122334455667788)
    # a Buffer passes its pointer: echo it through a pointer-typed parameter
    kernel = code.get_kernel("echo_condition")  # (char *out, unsigned long long v)
    src = device.allocate(16, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, out, src)
    stream.sync()
    assert to_host(out, 8, stream) == struct.pack("<Q", src.handle)


def test_mixed_alignment_kernel(device, stream, code):
    kernel = code.get_kernel("mixed")
    out = device.allocate(128, stream=stream)
    args = (
        np.int8(-5),
        2.5,
        np.int16(-2),
        True,
        np.float32(0.75),
        -(2**40),
        np.complex64(1 - 1j),
        Pair(b"q", -8.0),
        np.float16(0.5),
        3 + 4j,
        out.handle,
    )
    for _ in range(3):
        launch(stream, LaunchConfig(grid=1, block=1), kernel, out, *args)
        stream.sync()
        # double2 is 16-byte aligned in the kernel, the complex only 8 in the
        # blob: the arguments go by one pointer each, not as one buffer.
        assert kernel._plan.layout.bufsize == 0
        want = b"".join(expected_bytes(a) for a in args)
        got = to_host(out, len(want), stream)
        pair = 1 + 8 + 2 + 1 + 4 + 8 + 8  # where the Pair argument was written
        # the struct's padding (bytes 1-7 of the Pair) is not observable in a kernel
        assert got[: pair + 1] + got[pair + 8 :] == want[: pair + 1] + want[pair + 8 :]


def test_many_arguments(device, stream, code):
    kernel = code.get_kernel("many")
    out = device.allocate(300 * 8, stream=stream)
    for base in (0, 1000, -77):
        values = [base + 3 * i for i in range(300)]
        launch(stream, LaunchConfig(grid=1, block=1), kernel, out, *values)
        stream.sync()
        assert kernel._plan.layout.bufsize == 301 * 8  # passed as one parameter buffer
        got = np.frombuffer(to_host(out, 300 * 8, stream), dtype=np.int64)
        np.testing.assert_array_equal(got, values)
    # a different type in the middle
    values = [7] * 300
    values[150] = np.int64(-1)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, out, *values)
    stream.sync()
    assert np.frombuffer(to_host(out, 300 * 8, stream), dtype=np.int64)[150] == -1


def test_saxpy_against_numpy(device, stream, code):
    kernel = code.get_kernel("saxpy")
    n = 100_003
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx = device.allocate(x.nbytes, stream=stream)
    dy = device.allocate(y.nbytes, stream=stream)
    to_device(dx, x.tobytes(), stream)
    to_device(dy, y.tobytes(), stream)
    block = 256
    cfg = {"grid": (n + block - 1) // block, "block": block}  # a dict config
    launch(stream, cfg, kernel, np.float32(2.0), dx, dy, np.uint64(n))
    stream.sync()
    got = np.frombuffer(to_host(dy, y.nbytes, stream), dtype=np.float32)
    np.testing.assert_allclose(got, 2.0 * x + y, rtol=1e-6, atol=1e-6)


def test_foreign_stream_object(device, stream, code):
    class Foreign:
        def __init__(self, s):
            self.s = s

        def __cuda_stream__(self):
            return (0, self.s.handle)

    kernel = code.get_kernel("echo_int_ptr")
    out = device.allocate(8, stream=stream)
    launch(Foreign(stream), LaunchConfig(grid=1, block=1), kernel, out, 42)
    stream.sync()
    assert to_host(out, 8, stream) == struct.pack("<q", 42)
    launch(device.default_stream, LaunchConfig(grid=1, block=1), kernel, out, 43)
    device.sync()
    assert to_host(out, 8, stream) == struct.pack("<q", 43)


def test_concurrent_launches_from_threads(device, code):
    kernel = code.get_kernel("many")
    errors = []

    def work(tid):
        try:
            dev = Device(0)
            dev.set_current()
            s = dev.create_stream()
            out = dev.allocate(300 * 8, stream=s)
            for rep in range(20):
                values = [tid * 100_000 + rep * 1000 + i for i in range(300)]
                launch(s, LaunchConfig(grid=1, block=1), kernel, out, *values)
                s.sync()
                got = np.frombuffer(to_host(out, 300 * 8, s), dtype=np.int64)
                np.testing.assert_array_equal(got, values)
            out.close()
            s.close()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- errors --------------------------------------------------------------------------


def test_block_too_large_is_a_driver_error(device, stream, code):
    kernel = code.get_kernel("noop")
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE") as info:
        launch(stream, LaunchConfig(grid=1, block=4096), kernel)
    assert info.value.name == "CUDA_ERROR_INVALID_VALUE"
    launch(stream, LaunchConfig(grid=1, block=1024), kernel)  # still usable
    stream.sync()


def test_wrong_argument_count(device, stream, code):
    kernel = code.get_kernel("echo_int_ptr")
    cfg = LaunchConfig(grid=1, block=1)
    with pytest.raises(TypeError, match="kernel takes 2 arguments but 1 was given"):
        launch(stream, cfg, kernel, 5)
    with pytest.raises(TypeError, match="kernel takes 2 arguments but 3 were given"):
        launch(stream, cfg, kernel, 5, 6, 7)
    with pytest.raises(TypeError, match="kernel takes 0 arguments but 1 was given"):
        launch(stream, cfg, code.get_kernel("noop"), 5)


def test_unsupported_argument(device, stream, code):
    kernel = code.get_kernel("echo_int_ptr")
    with pytest.raises(TypeError, match=r"unsupported type.*str.*kernel argument 1"):
        launch(stream, LaunchConfig(grid=1, block=1), kernel, 0, "text")


def test_closed_stream_and_closed_code(device, code):
    s = device.create_stream()
    kernel = code.get_kernel("noop")
    launch(s, LaunchConfig(grid=1, block=1), kernel)
    s.sync()
    s.close()
    with pytest.raises(RuntimeError, match="Stream is closed"):
        launch(s, LaunchConfig(grid=1, block=1), kernel)
    prog = Program(
        'extern "C" __global__ void k() {}', "c++", options=ProgramOptions(arch=f"sm_{device.arch}")
    )
    obj = prog.compile("cubin")
    k = obj.get_kernel("k")
    s2 = device.create_stream()
    launch(s2, LaunchConfig(grid=1, block=1), k)
    s2.sync()
    obj.close()
    with pytest.raises(RuntimeError, match="Kernel is closed"):
        launch(s2, LaunchConfig(grid=1, block=1), k)
    s2.close()


# -- special launches ------------------------------------------------------------------

SPECIAL_SOURCE = r"""
extern "C" __global__ void cluster_ranks(unsigned int *out) {
    unsigned int rank, size, cid;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = rank;
        out[3 * blockIdx.x + 1] = size;
        out[3 * blockIdx.x + 2] = cid;
    }
}
// A grid-wide barrier that is only safe when every block is resident at
// once: what a cooperative launch guarantees.
extern "C" __global__ void grid_barrier(unsigned int *counter, int *flags, int *out) {
    if (threadIdx.x == 0) {
        flags[blockIdx.x] = blockIdx.x + 1;
        __threadfence();
        atomicAdd(counter, 1u);
        while (atomicAdd(counter, 0u) < gridDim.x) { }
        __threadfence();
        int s = 0;
        for (unsigned int i = 0; i < gridDim.x; ++i) s += ((volatile int *)flags)[i];
        out[blockIdx.x] = s;
    }
}
extern "C" __global__ void producer(int *x, int n) {
    asm volatile("griddepcontrol.launch_dependents;");
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        long long t = clock64();
        while (clock64() - t < 2000) { }
        x[i] = i * 3;
    }
}
extern "C" __global__ void consumer(const int *x, int *y, int n) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = x[i] + 1;
}
"""


@pytest.fixture(scope="module")
def special():
    dev = Device(0)
    dev.set_current()
    if dev.compute_capability < (9, 0):
        pytest.skip("cluster and PDL kernels need compute capability 9.0")
    prog = Program(SPECIAL_SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}"))
    obj = prog.compile("cubin")
    yield obj
    obj.close()


def test_cluster_launch(device, stream, special):
    kernel = special.get_kernel("cluster_ranks")
    grid, cluster = 4, 2
    out = device.allocate(grid * cluster * 3 * 4, stream=stream)
    cfg = LaunchConfig(grid=grid, cluster=cluster, block=32)  # grid counts clusters
    launch(stream, cfg, kernel, out)
    stream.sync()
    got = np.frombuffer(to_host(out, grid * cluster * 12, stream), dtype=np.uint32).reshape(-1, 3)
    blocks = np.arange(grid * cluster)
    np.testing.assert_array_equal(got[:, 0], blocks % cluster)  # rank in cluster
    np.testing.assert_array_equal(got[:, 1], np.full(grid * cluster, cluster))
    np.testing.assert_array_equal(got[:, 2], blocks // cluster)  # cluster id


def test_cooperative_launch(device, stream, special):
    kernel = special.get_kernel("grid_barrier")
    sms = device.properties.multiprocessor_count
    per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(64, 0)
    n = sms  # one block per SM: always co-resident
    counter = device.allocate(4, stream=stream)
    flags = device.allocate(4 * n, stream=stream)
    out = device.allocate(4 * n, stream=stream)
    to_device(counter, bytes(4), stream)
    cfg = LaunchConfig(grid=n, block=64, is_cooperative=True)
    launch(stream, cfg, kernel, counter, flags, out)
    stream.sync()
    got = np.frombuffer(to_host(out, 4 * n, stream), dtype=np.int32)
    np.testing.assert_array_equal(got, np.full(n, n * (n + 1) // 2))
    # a grid that cannot be co-resident is refused before the driver is called
    too_big = LaunchConfig(grid=per_sm * sms + 1, block=64, is_cooperative=True)
    with pytest.raises(
        ValueError, match=rf"\({per_sm * sms + 1} \* 1 \* 1.*limit \({per_sm * sms}\)"
    ):
        launch(stream, too_big, kernel, counter, flags, out)


def test_programmatic_dependent_launch(device, stream, special):
    prod = special.get_kernel("producer")
    cons = special.get_kernel("consumer")
    n = 4096
    x = device.allocate(4 * n, stream=stream)
    y = device.allocate(4 * n, stream=stream)
    for _ in range(3):
        to_device(x, bytes(4 * n), stream)
        to_device(y, bytes(4 * n), stream)
        launch(stream, LaunchConfig(grid=1, block=256), prod, x, np.int32(n))
        pdl = LaunchConfig(grid=1, block=256, programmatic_stream_serialization=True)
        launch(stream, pdl, cons, x, y, np.int32(n))
        stream.sync()
        got = np.frombuffer(to_host(y, 4 * n, stream), dtype=np.int32)
        np.testing.assert_array_equal(got, np.arange(n, dtype=np.int32) * 3 + 1)


def _cuda_include_dirs():
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        inc = os.path.join(root, "include")
        if os.path.exists(os.path.join(inc, "cooperative_groups.h")):
            dirs = [inc]
            if os.path.isdir(os.path.join(inc, "cccl")):
                dirs.append(os.path.join(inc, "cccl"))
            return dirs
    return None


def test_cooperative_groups_grid_sync(device, stream):
    include = _cuda_include_dirs()
    if include is None:
        pytest.skip("no CUDA toolkit headers (cooperative_groups.h) on this machine")
    src = r"""
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    extern "C" __global__ void sync_sum(int *flags, int *out) {
        cg::grid_group grid = cg::this_grid();
        if (threadIdx.x == 0) flags[blockIdx.x] = blockIdx.x + 1;
        grid.sync();
        if (threadIdx.x == 0) {
            int s = 0;
            for (unsigned int i = 0; i < gridDim.x; ++i) s += flags[i];
            out[blockIdx.x] = s;
        }
    }
    """
    opts = ProgramOptions(arch=f"sm_{device.arch}", include_path=include, std="c++17")
    obj = Program(src, "c++", options=opts).compile("cubin")
    kernel = obj.get_kernel("sync_sum")
    n = device.properties.multiprocessor_count
    flags = device.allocate(4 * n, stream=stream)
    out = device.allocate(4 * n, stream=stream)
    launch(stream, LaunchConfig(grid=n, block=128, is_cooperative=True), kernel, flags, out)
    stream.sync()
    got = np.frombuffer(to_host(out, 4 * n, stream), dtype=np.int32)
    np.testing.assert_array_equal(got, np.full(n, n * (n + 1) // 2))
    obj.close()
