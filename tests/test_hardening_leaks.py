# SPDX-License-Identifier: Apache-2.0
"""No leaks: 100k create/close cycles leave host and device memory flat.

For each resource class the cycle runs ``WARMUP`` times (so pools, caches
and, on PyPy, the JIT reach their steady state), then host RSS
(``/proc/self/statm``) and free device memory (``cuMemGetInfo``) are read,
the cycle runs ``CYCLES`` more times, and both are read again (after
``gc.collect()``).  Growth must stay under ``RSS_TOLERANCE`` (16 MiB, i.e.
under 170 bytes per cycle: one leaked Python wrapper per cycle would
exceed it) and ``DEVICE_TOLERANCE`` (32 MiB; a leaked 4 KiB allocation or
stream per cycle would exceed it many times over).

The finalizer tests drop objects without ``close()`` and check that the
garbage collector gives the CUDA resources back.  That path is only the
safety net: on PyPy finalizers run late (at the collector's discretion), so
``close()`` or ``with`` is the way to manage lifetimes there.
"""

from __future__ import annotations

import gc
import time

import numpy as np
import pytest
from _scripts.hardening_util import (
    compile_kernels,
    device_free_bytes,
    from_host,
    rss_bytes,
    to_host,
)

from cuda_core import DeviceMemoryResource, DeviceMemoryResourceOptions, LaunchConfig, launch

pytestmark = pytest.mark.gpu

WARMUP = 10_000
CYCLES = 100_000
RSS_TOLERANCE = 16 << 20
DEVICE_TOLERANCE = 32 << 20
N = 256  # uint32 elements per launch buffer


def _settle(stream=None):
    if stream is not None:
        stream.sync()
    for _ in range(3):
        gc.collect()


def _assert_flat(what, cycle, device, stream):
    """Run ``cycle(n)`` for warm-up and measurement; assert memory stays flat."""
    cycle(WARMUP)
    _settle(stream)
    device.sync()
    rss0, free0 = rss_bytes(), device_free_bytes()
    start = time.perf_counter()
    cycle(CYCLES)
    elapsed = time.perf_counter() - start
    _settle(stream)
    device.sync()
    rss1, free1 = rss_bytes(), device_free_bytes()
    grew = rss1 - rss0
    used = free0 - free1
    print(
        f"{what}: {CYCLES} cycles in {elapsed:.2f}s, host RSS {grew / 2**20:+.2f} MiB, "
        f"device {used / 2**20:+.2f} MiB"
    )
    assert grew < RSS_TOLERANCE, f"{what}: host RSS grew by {grew} bytes over {CYCLES} cycles"
    assert used < DEVICE_TOLERANCE, f"{what}: device memory shrank by {used} bytes"


def test_stream_create_close_cycles(device, stream):
    def cycle(n):
        create = device.create_stream
        for _ in range(n):
            create().close()

    _assert_flat("stream", cycle, device, stream)


def test_event_create_close_cycles(device, stream):
    def cycle(n):
        create = device.create_event
        record = stream.record
        for i in range(n):
            if i & 1:
                create().close()
            else:
                record().close()

    _assert_flat("event", cycle, device, stream)


def test_buffer_allocate_close_cycles(device, stream):
    sizes = (256, 4096, 65536, 1 << 20)

    def cycle(n):
        allocate = device.allocate
        for i in range(n):
            allocate(sizes[i & 3], stream=stream).close()

    _assert_flat("buffer", cycle, device, stream)


def test_launch_with_fresh_argument_buffers(device, stream):
    code, k = compile_kernels(device)
    add_one, copy_plus = k["add_one"], k["copy_plus"]
    cfg = LaunchConfig(grid=1, block=N)
    n = np.uint64(N)
    one = np.uint32(1)
    src = device.allocate(4 * N, stream=stream)
    base = np.arange(N, dtype=np.uint32) * 3
    from_host(base, src, stream)

    def cycle(count):
        allocate = device.allocate
        for _ in range(count):
            dst = allocate(4 * N, stream=stream)
            launch(stream, cfg, copy_plus, src, dst, n, one)
            launch(stream, cfg, add_one, dst, n)
            dst.close()

    _assert_flat("launch", cycle, device, stream)
    # The launches computed what they should (checked on a last fresh buffer).
    dst = device.allocate(4 * N, stream=stream)
    launch(stream, cfg, copy_plus, src, dst, n, one)
    launch(stream, cfg, add_one, dst, n)
    np.testing.assert_array_equal(to_host(dst, stream), base + 2)
    dst.close()
    src.close()
    code.close()


# --------------------------------------------------------------------------
# The finalizer safety net (objects dropped without close()).
# --------------------------------------------------------------------------
def test_dropped_buffers_return_device_memory(device, stream):
    """Buffers dropped without close() are freed by the collector.

    ``close()``/``with`` is the way on PyPy, where collection is late; this
    checks only that the safety net works once the collector runs.
    """
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions())  # own pool, threshold 0
    chunk, count = 64 << 20, 16  # 1 GiB in all
    try:
        _settle(stream)
        device.sync()
        free0 = device_free_bytes()
        bufs = [mr.allocate(chunk, stream=stream) for _ in range(count)]
        for b in bufs:
            b.fill(1, stream=stream)
        stream.sync()
        assert mr.attributes.used_mem_current >= chunk * count
        assert free0 - device_free_bytes() >= chunk * count * 0.9
        del bufs, b
        _settle(stream)
        device.sync()
        assert mr.attributes.used_mem_current == 0
        free1 = device_free_bytes()
        assert free0 - free1 < DEVICE_TOLERANCE, f"{free0 - free1} bytes not returned"
    finally:
        mr.close()


def test_dropped_streams_and_events_are_destroyed(device, monkeypatch):
    """Streams and events dropped without close() are destroyed by the collector.

    On PyPy all 1000 are alive until the collection, so the driver's caches
    grow to 1000 streams once (observed: about 0.5 GiB of device memory kept
    for reuse); the first round reaches that high-water mark, the second must
    not add to it.
    """
    import cuda_core._event as event_mod
    import cuda_core._stream as stream_mod

    destroyed = {"stream": 0, "event": 0}
    real_stream, real_event = stream_mod._destroy_stream, event_mod._destroy_event

    def count_stream(c_stream):
        destroyed["stream"] += 1
        real_stream(c_stream)

    def count_event(c_event, *rest):
        destroyed["event"] += 1
        real_event(c_event, *rest)

    monkeypatch.setattr(stream_mod, "_destroy_stream", count_stream)
    monkeypatch.setattr(event_mod, "_destroy_event", count_event)

    def round_of_drops():
        for _ in range(1000):
            s = device.create_stream()
            s.record()  # an event dropped too
        del s
        _settle()
        device.sync()

    _settle()
    round_of_drops()
    assert destroyed["stream"] >= 1000 - 1 and destroyed["event"] >= 1000 - 1, destroyed
    free0 = device_free_bytes()
    round_of_drops()
    assert destroyed["stream"] >= 2000 - 1 and destroyed["event"] >= 2000 - 1, destroyed
    assert free0 - device_free_bytes() < DEVICE_TOLERANCE


def test_dropped_modules_and_graphs_are_finalized(device, stream):
    """ObjectCode and Graph finalizers run once the objects are collected."""
    code, k = compile_kernels(device)
    builder = device.create_graph_builder().begin_building()
    buf = device.allocate(4 * N, stream=stream)
    launch(builder, LaunchConfig(grid=1, block=N), k["add_one"], buf, np.uint64(N))
    graph = builder.end_building().complete()
    builder.close()
    graph.launch(stream)
    stream.sync()
    finalizers = [code._finalizer, graph._finalizer]
    assert all(f.alive for f in finalizers)
    del code, k, graph
    _settle(stream)
    assert not any(f.alive for f in finalizers), "a finalizer did not run"
    buf.close()
