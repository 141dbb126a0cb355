# SPDX-License-Identifier: Apache-2.0
"""Plain Python ints for narrow integer parameters, on the GPU.

A kernel with one parameter of each integer width writes what it received
into a pinned host buffer, launched with Python ints through ``launch()``,
a graph definition's kernel nodes, a captured launch and an executable
node's ``update``; the values are checked against NumPy's conversions.
"""

from __future__ import annotations

import numpy as np
import pytest

from cuda_core import LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions, launch
from cuda_core.graph import GraphDefinition

pytestmark = pytest.mark.gpu

SRC = r"""
extern "C" __global__ void widths(long long *out, int a, short b, signed char c,
                                  unsigned char d, unsigned short e, unsigned int f,
                                  long long g, bool h) {
    out[0] = a; out[1] = b; out[2] = c; out[3] = d;
    out[4] = e; out[5] = f; out[6] = g; out[7] = h ? 1 : 0;
}

extern "C" __global__ void fill(int *out, int value, unsigned short n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"""

#: The NumPy type of each scalar parameter of ``widths`` (after the pointer).
TYPES = (np.int32, np.int16, np.int8, np.uint8, np.uint16, np.uint32, np.int64, np.bool_)
ONE = LaunchConfig(grid=1, block=1)

#: Edges of each range, including negative values for unsigned parameters and
#: unsigned values for signed ones (the same bits).
CASES = [
    (-(2**31), -(2**15), -128, 0, 0, 0, -(2**63), False),
    (2**31 - 1, 2**15 - 1, 127, 255, 65535, 2**32 - 1, 2**63 - 1, True),
    (2**32 - 1, 2**16 - 1, 255, -1, -1, -1, -1, True),
    (2**31, 2**15, 128, -128, -(2**15), -(2**31), 12345, False),
    (7, -3, 5, 200, 40000, 3_000_000_000, 2**40, True),
]


def expected(values):
    """What the kernel stores for ``values``: each cast to its C type, then to int64."""
    out = []
    for value, tp in zip(values, TYPES):
        if tp is np.bool_:
            out.append(int(bool(value)))
            continue
        bits = 8 * np.dtype(tp).itemsize
        unsigned = np.dtype(f"u{bits // 8}").type
        out.append(int(np.array([value % (1 << bits)], dtype=unsigned).view(tp)[0]))
    return np.array(out, dtype=np.int64)


@pytest.fixture(scope="module")
def kernels():
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    prog = Program(SRC, "c++", ProgramOptions(arch=f"sm_{dev.arch}"))
    mod = prog.compile("cubin")
    return mod.get_kernel("widths"), mod.get_kernel("fill")


def _host(count):
    """A zeroed pinned host Buffer of ``count`` int64 and its NumPy view."""
    buf = LegacyPinnedMemoryResource().allocate(8 * count)
    arr = np.asarray(buf).view(np.int64)
    arr[:] = 0
    return buf, arr


def test_launch_with_python_ints(device, stream, kernels):
    widths, _ = kernels
    for values in CASES:
        buf, arr = _host(8)
        launch(stream, ONE, widths, buf, *values)
        stream.sync()
        np.testing.assert_array_equal(arr, expected(values))


def test_launch_with_python_ints_many_times(device, stream, kernels):
    _, fill = kernels
    n = 300
    buf = LegacyPinnedMemoryResource().allocate(4 * n)
    arr = np.asarray(buf).view(np.int32)
    cfg = LaunchConfig(grid=(n + 127) // 128, block=128)
    for value in (-5, 2**31 - 1, 2**32 - 1, 0):
        arr[:] = 1
        for _ in range(3):  # the cached plan's fast path
            launch(stream, cfg, fill, buf, value, n)
        stream.sync()
        np.testing.assert_array_equal(
            arr, np.full(n, value % 2**32, dtype=np.uint32).view(np.int32)
        )


def test_launch_overflow_and_float(device, stream, kernels):
    widths, fill = kernels
    buf, arr = _host(8)
    with pytest.raises(OverflowError, match=r"^kernel argument 2 is 65536, .* of 2 bytes"):
        launch(stream, ONE, widths, buf, 0, 65536, 0, 0, 0, 0, 0, True)
    with pytest.raises(OverflowError, match=r"^kernel argument 1 is 8589934592, .* of 4 bytes"):
        launch(stream, ONE, fill, buf, 2**33, 1)
    with pytest.raises(TypeError, match="pass numpy.float32"):
        launch(stream, ONE, fill, buf, 1.0, 1)
    stream.sync()
    assert (arr == 0).all()  # nothing was launched


def test_graph_definition_kernel_nodes(device, stream, kernels):
    widths, _ = kernels
    first, second = CASES[1], CASES[2]
    buf1, arr1 = _host(8)
    buf2, arr2 = _host(8)
    gdef = GraphDefinition()
    node = gdef.launch(ONE, widths, buf1, *first)  # GraphDefinition.launch
    node.launch(ONE, widths, buf2, *second)  # GraphNode.launch
    with pytest.raises(OverflowError, match=r"^kernel argument 4 is 256, .* of 1 byte"):
        node.launch(ONE, widths, buf2, 0, 0, 0, 256, 0, 0, 0, False)
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(arr1, expected(first))
    np.testing.assert_array_equal(arr2, expected(second))


def test_captured_launch(device, stream, kernels):
    widths, _ = kernels
    values = CASES[3]
    buf, arr = _host(8)
    gb = device.create_graph_builder().begin_building()
    launch(gb, ONE, widths, buf, *values)
    with pytest.raises(OverflowError, match=r"^kernel argument 6 is -2147483649, .* of 4 bytes"):
        launch(gb, ONE, widths, buf, 0, 0, 0, 0, 0, -(2**31) - 1, 0, True)
    graph = gb.end_building().complete()
    assert (arr == 0).all()
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(arr, expected(values))


def test_executable_kernel_node_update(device, stream, kernels):
    widths, _ = kernels
    buf, arr = _host(8)
    gdef = GraphDefinition()
    node = gdef.launch(ONE, widths, buf, *CASES[0])
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(arr, expected(CASES[0]))

    view = graph[node]
    view.update(config=ONE, kernel=widths, args=(buf, *CASES[4]))
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(arr, expected(CASES[4]))

    with pytest.raises(OverflowError, match=r"^kernel argument 5 is 65536, .* of 2 bytes"):
        view.update(config=ONE, kernel=widths, args=(buf, 0, 0, 0, 0, 65536, 0, 0, True))
    arr[:] = 0
    graph.launch(stream)  # the node keeps its last good arguments
    stream.sync()
    np.testing.assert_array_equal(arr, expected(CASES[4]))
