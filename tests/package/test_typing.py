# SPDX-License-Identifier: Apache-2.0
"""The public API is typed: a user's script type-checks under ``mypy --strict``
and mypy infers the documented types (no GPU needed: nothing runs)."""

from __future__ import annotations

import platform
import re
import textwrap

import pytest
from _scripts.hardening_util import mypy_strict

pytestmark = pytest.mark.skipif(
    platform.python_implementation() != "CPython", reason="mypy runs on CPython only"
)

USER_SCRIPT = """
from __future__ import annotations

import numpy as np

from cuda_core import (
    Buffer,
    Device,
    DeviceMemoryResource,
    Event,
    EventOptions,
    Kernel,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    MemoryResource,
    ObjectCode,
    Program,
    ProgramOptions,
    Stream,
    launch,
)
from cuda_core.graph import Graph, GraphBuilder

SOURCE = 'extern "C" __global__ void k(float *x, size_t n) {}'


def run() -> float:
    dev = Device(0)
    reveal_type(dev)
    dev.set_current()
    reveal_type(dev.arch)
    reveal_type(dev.compute_capability.major)
    stream = dev.create_stream()
    reveal_type(stream)
    start = stream.record(options=EventOptions(timing_enabled=True))
    reveal_type(start)

    mr = dev.memory_resource
    reveal_type(mr)
    pool = DeviceMemoryResource(dev)
    buf = pool.allocate(4096, stream=stream)
    reveal_type(buf)
    reveal_type(buf.size)
    reveal_type(buf.handle)
    reveal_type(buf.memory_resource)
    host = LegacyPinnedMemoryResource().allocate(4096, stream=stream)
    reveal_type(buf.copy_to(host, stream=stream))
    buf.copy_from(host, stream=stream)
    view = Buffer.from_handle(buf.handle, 16)
    reveal_type(view)

    options = ProgramOptions(arch=f"sm_{dev.arch}")
    program = Program(SOURCE, "c++", options=options)
    code = program.compile("cubin")
    reveal_type(code)
    reveal_type(ObjectCode.from_cubin(code.code if isinstance(code.code, bytes) else b""))
    kernel = code.get_kernel("k")
    reveal_type(kernel)
    reveal_type(kernel.num_arguments)
    config = LaunchConfig(grid=(4, 1), block=256)
    reveal_type(config.grid)
    reveal_type(launch(stream, config, kernel, buf, np.uint64(1024)))

    builder = stream.create_graph_builder()
    reveal_type(builder)
    builder.begin_building()
    launch(builder, config, kernel, buf, np.uint64(1024))
    builder.end_building()
    graph = builder.complete()
    reveal_type(graph)
    graph.upload(stream)
    graph.launch(stream)

    end = stream.record()
    end.sync()
    elapsed = end - start
    reveal_type(elapsed)
    reveal_type(end.is_done)
    for closeable in (graph, builder, program, buf, host):
        closeable.close()
    stream.close()
    return elapsed


def check(s: Stream, e: Event, b: Buffer, r: MemoryResource, o: ObjectCode, k: Kernel) -> None:
    reveal_type(r.allocate(8, stream=s).close())
    reveal_type(s.wait(e))
    reveal_type(o.code_type)
    reveal_type(k.handle)
    g: GraphBuilder = s.create_graph_builder()
    x: Graph = g.complete()
    reveal_type(x.handle)
    reveal_type(b.is_device_accessible)
"""

# In the order of the reveal_type calls above.
EXPECTED = [
    "cuda_core._device.Device",
    "str",
    "int",
    "cuda_core._stream.Stream",
    "cuda_core._event.Event",
    "cuda_core._memory._memory_resource.MemoryResource",
    "cuda_core._memory._buffer.Buffer",
    "int",
    "int",
    "cuda_core._memory._memory_resource.MemoryResource | None",
    "cuda_core._memory._buffer.Buffer",
    "cuda_core._memory._buffer.Buffer",
    "cuda_core._module.ObjectCode",
    "cuda_core._module.ObjectCode",
    "cuda_core._kernel.Kernel",
    "int",
    "tuple[int, int, int]",
    "None",
    "cuda_core.graph._graph_builder.GraphBuilder",
    "cuda_core.graph._graph.Graph",
    "float",
    "bool",
    "None",
    "None",
    "str",
    "int",
    "int",
    "bool",
]


def test_user_script_type_checks_strictly_with_the_documented_types(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra (CPython)")
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent(USER_SCRIPT))
    r = mypy_strict(script, tmp_path)
    out = r.stdout + r.stderr
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert not errors, out
    revealed = re.findall(r'note: Revealed type is "(.*)"', out)
    # mypy 1 says "builtins.int" where mypy 2 says "int"
    assert [r.replace("builtins.", "") for r in revealed] == EXPECTED, out


def test_package_exports_exactly_its_public_names():
    import cuda_core

    # dir() names the lazily imported subpackages too, imported yet or not
    public = {n for n in dir(cuda_core) if not n.startswith("_")} - {"annotations"}
    assert sorted(cuda_core.__all__, key=str.lower) == cuda_core.__all__
    assert set(cuda_core.__all__) == public, "add the new name to cuda_core.__all__"
