# SPDX-License-Identifier: Apache-2.0
"""Double close is harmless; use after close raises a clear error, never a crash.

Covered classes: Stream (owned and borrowed), Event, Buffer (pool, view,
user resource), DeviceMemoryResource (owned and default pool),
PinnedMemoryResource, ManagedMemoryResource, GraphMemoryResource, Program,
Linker, ObjectCode, Kernel (through its ObjectCode), Graph, GraphBuilder
and GraphDefinition.  "Clear error" means RuntimeError whose message says
the object is closed (the project rule, ``require_open``).

Passing a *closed stream* to another API runs in a subprocess per case
(``tests/_scripts/closed_use.py``): a destroyed stream handle reaching the
driver is undefined behaviour.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
from _helpers import HostOnlyResource
from _scripts.hardening_util import compile_kernels, run_scripts

from cuda_core import (
    Buffer,
    CUDAError,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Kernel,
    LaunchConfig,
    LibraryNotFoundError,
    Linker,
    LinkerOptions,
    ObjectCode,
    PinnedMemoryResource,
    Program,
    ProgramOptions,
    Stream,
    launch,
)

CLOSED = "closed"
SRC = 'extern "C" __global__ void k(int *p) { if (p) *p = 1; }'
ARCH = "sm_90"


def _raises_closed(fn, match=CLOSED):
    with pytest.raises(RuntimeError, match=match) as info:
        fn()
    assert str(info.value)
    return info.value


def _program(code=SRC, **options):
    try:
        return Program(code, "c++", options=ProgramOptions(arch=ARCH, **options))
    except LibraryNotFoundError as exc:
        pytest.skip(f"NVRTC is not installed: {exc}")


# --------------------------------------------------------------------------
# CPU: no driver needed
# --------------------------------------------------------------------------
def test_program_close_twice_and_use_after_close():
    prog = _program()
    assert not prog.is_closed
    prog.close()
    prog.close()
    assert prog.is_closed
    _raises_closed(lambda: prog.compile("cubin"))
    _raises_closed(lambda: prog.handle)
    assert "Program" in repr(prog)
    with _program() as prog2:
        prog2.compile("cubin")
    assert prog2.is_closed
    _raises_closed(lambda: prog2.compile("ltoir"))


def test_ptx_program_close_twice_and_use_after_close():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # PTX newer than the driver
        ptx = _program(relocatable_device_code=True).compile("ptx").code
    prog = Program(ptx.decode(), "ptx", options=ProgramOptions(arch=ARCH))
    prog.compile("cubin")
    prog.close()
    prog.close()
    _raises_closed(lambda: prog.compile("cubin"))
    _raises_closed(lambda: prog.handle)


def test_dropped_program_is_finalized():
    prog = _program()
    finalizer = prog._finalizer
    assert finalizer.alive
    del prog
    for _ in range(3):
        gc.collect()
    assert not finalizer.alive


def _rdc_cubin():
    with _program(relocatable_device_code=True) as prog:
        return prog.compile("cubin")


def test_linker_close_twice_and_use_after_close():
    linker = Linker(_rdc_cubin(), options=LinkerOptions(arch=ARCH))
    linker.close()
    linker.close()
    assert linker.is_closed
    _raises_closed(lambda: linker.link("cubin"))
    _raises_closed(lambda: linker.handle)
    # The logs stay readable.
    assert isinstance(linker.get_error_log(), str)
    assert isinstance(linker.get_info_log(), str)
    with Linker(_rdc_cubin(), options=LinkerOptions(arch=ARCH)) as linker2:
        out = linker2.link("cubin")
    assert linker2.is_closed and out.code_type == "cubin"
    _raises_closed(lambda: linker2.link("cubin"))


def test_object_code_close_twice_and_use_after_close():
    code = _rdc_cubin()
    data = code.code
    code.close()
    code.close()
    _raises_closed(lambda: code.get_kernel("k"))
    _raises_closed(lambda: code.handle)
    assert code.code == data  # the image itself stays available
    # Never loaded, closed, used: still a clear error.
    raw = ObjectCode.from_cubin(b"\x7fELF not really", name="raw")
    with raw:
        pass
    raw.close()
    _raises_closed(lambda: raw.get_kernel("k"))


def test_borrowed_stream_close_twice_and_use_after_close():
    s = Stream.from_handle(0x1000)
    s.close()
    s.close()
    assert s.is_closed and repr(s).startswith("<Stream handle=0x0 ")
    for use in (
        s.sync,
        s.record,
        lambda: s.wait(Stream.from_handle(0x2000)),
        lambda: Stream.from_handle(0x2000).wait(s),
        lambda: s.handle,
        lambda: s.priority,
        lambda: s.is_nonblocking,
        lambda: s.device,
        lambda: s.context,
        s.__cuda_stream__,
        s.create_graph_builder,
        lambda: launch(s, LaunchConfig(grid=1, block=1), Kernel.from_handle(0x1000)),
    ):
        _raises_closed(use)


def test_buffer_view_close_twice_and_use_after_close():
    buf = Buffer.from_handle(0x1000, 64)
    other = Buffer.from_handle(0x2000, 64)
    s = Stream.from_handle(0x3000)
    buf.close()
    buf.close()
    assert buf.is_closed and buf.handle == 0 and buf.size == 0
    for use in (
        lambda: buf.fill(1, stream=s),
        lambda: buf.copy_to(other, stream=s),
        lambda: buf.copy_from(other, stream=s),
        lambda: other.copy_to(buf, stream=s),
        lambda: other.copy_from(buf, stream=s),
        lambda: buf.set_deallocation_stream(s),
        buf.__dlpack__,
        buf.__dlpack_device__,
        lambda: np.asarray(buf),
    ):
        _raises_closed(use)


class _CountingResource(HostOnlyResource):
    """A user resource over fake addresses that counts deallocations."""

    def __init__(self):
        self.freed = []

    def allocate(self, size, *, stream=None):
        return Buffer.from_handle(0x10000, size, mr=self)

    def deallocate(self, ptr, size, *, stream=None):
        self.freed.append((int(ptr), size))


def test_user_resource_buffer_frees_exactly_once():
    mr = _CountingResource()
    buf = mr.allocate(128)
    buf.close()
    buf.close()
    with buf:
        pass
    del buf
    gc.collect()
    assert mr.freed == [(0x10000, 128)]


# --------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------
@pytest.mark.gpu
def test_owned_stream_use_after_close(device):
    s = device.create_stream()
    other = device.create_stream()
    s.close()
    s.close()
    for use in (
        s.sync,
        s.record,
        lambda: s.wait(other),
        lambda: other.wait(s),
        lambda: s.handle,
        lambda: s.priority,
        lambda: s.device,
        lambda: s.context,
        s.__cuda_stream__,
        s.create_graph_builder,
        lambda: device.create_stream(s),
    ):
        _raises_closed(use)
    code, k = compile_kernels(device)
    _raises_closed(lambda: launch(s, LaunchConfig(grid=1, block=1), k["add_one"], 0, 0))
    with device.create_stream() as s2:
        pass
    assert s2.is_closed
    other.close()
    code.close()


@pytest.mark.gpu
def test_event_use_after_close(device, stream):
    e = stream.record(options={"timing_enabled": True})
    e2 = stream.record(options={"timing_enabled": True})
    e2.sync()
    e.close()
    e.close()
    for use in (
        e.sync,
        lambda: e.is_done,
        lambda: e.handle,
        lambda: e2 - e,
        lambda: e - e2,
        lambda: stream.record(e),
        lambda: stream.wait(e),
    ):
        _raises_closed(use)
    assert e.is_timing_enabled  # plain flags stay readable
    assert repr(e) == "<Event handle=0x0>"
    with device.create_event() as e3:
        pass
    assert e3.is_closed
    e2.close()


@pytest.mark.gpu
def test_pool_buffer_use_after_close(device, stream):
    code, k = compile_kernels(device)
    buf = device.allocate(1024, stream=stream)
    other = device.allocate(1024, stream=stream)
    buf.close()
    buf.close()
    assert buf.handle == 0 and buf.size == 0 and buf.is_closed
    for use in (
        lambda: buf.fill(0, stream=stream),
        lambda: buf.copy_to(other, stream=stream),
        lambda: buf.copy_to(stream=stream),
        lambda: buf.copy_from(other, stream=stream),
        lambda: other.copy_to(buf, stream=stream),
        lambda: other.copy_from(buf, stream=stream),
        lambda: buf.set_deallocation_stream(stream),
        buf.__dlpack__,
        buf.__dlpack_device__,
    ):
        _raises_closed(use)
    cfg = LaunchConfig(grid=1, block=256)
    _raises_closed(lambda: launch(stream, cfg, k["add_one"], buf, np.uint64(256)))
    launch(stream, cfg, k["add_one"], other, np.uint64(256))  # the next launch is fine
    stream.sync()
    other.close()
    code.close()


def _pool_resources(device):
    yield (
        "owned DeviceMemoryResource",
        lambda: DeviceMemoryResource(device, DeviceMemoryResourceOptions()),
    )
    yield "default DeviceMemoryResource", lambda: DeviceMemoryResource(device)
    yield "PinnedMemoryResource", lambda: PinnedMemoryResource()
    yield "owned PinnedMemoryResource", lambda: PinnedMemoryResource({"max_size": 1 << 26})

    def managed():
        from cuda_core import ManagedMemoryResource

        return ManagedMemoryResource()

    yield "ManagedMemoryResource", managed


@pytest.mark.gpu
def test_memory_resources_close_twice_and_use_after_close(device, stream):
    # Buffers are freed before their resource is closed here; a buffer that
    # outlives its (owned) pool is a closed_use.py case, in its own process.
    tried = []
    for name, make in _pool_resources(device):
        try:
            mr = make()
        except (CUDAError, RuntimeError) as exc:
            print(f"{name}: not available here ({exc})")
            continue
        tried.append(name)
        live = mr.allocate(4096, stream=stream)
        live.close(stream=stream)
        stream.sync()
        mr.close()
        mr.close()
        assert mr.is_closed and mr.handle == 0, name
        _raises_closed(lambda mr=mr: mr.allocate(64, stream=stream))
        _raises_closed(lambda mr=mr: mr.attributes)
        with make() as again:  # a fresh resource of the same kind works
            again.allocate(64, stream=stream).close(stream=stream)
        assert again.is_closed
    stream.sync()
    assert "owned DeviceMemoryResource" in tried and "default DeviceMemoryResource" in tried
    # Closing a resource over the device's current pool leaves the device usable.
    device.allocate(64, stream=stream).close()
    stream.sync()


@pytest.mark.gpu
def test_kernel_use_after_its_object_code_closed(device, stream):
    code, k = compile_kernels(device)
    kernel = k["add_one"]
    assert kernel.attributes.num_regs > 0
    code.close()
    code.close()
    _raises_closed(lambda: launch(stream, LaunchConfig(grid=1, block=1), kernel, 0, np.uint64(0)))
    # Attributes raise too, also num_regs, read (and cached) before close.
    _raises_closed(lambda: kernel.attributes.max_threads_per_block)
    _raises_closed(lambda: kernel.attributes.num_regs)
    _raises_closed(lambda: kernel.occupancy.max_active_blocks_per_multiprocessor(128, 0))
    _raises_closed(lambda: code.get_kernel("add_one"))
    _raises_closed(lambda: code.handle)


@pytest.mark.gpu
def test_graph_and_builder_use_after_close(device, stream):
    code, k = compile_kernels(device)
    buf = device.allocate(1024, stream=stream)
    builder = device.create_graph_builder()
    builder.begin_building()
    launch(builder, LaunchConfig(grid=1, block=256), k["add_one"], buf, np.uint64(256))
    builder.end_building()
    graph = builder.complete()
    builder.close()
    builder.close()
    for use in (
        builder.begin_building,
        builder.end_building,
        builder.complete,
        builder.__cuda_stream__,
        lambda: builder.split(2),
        lambda: launch(builder, LaunchConfig(grid=1, block=1), k["add_one"], buf, 0),
    ):
        _raises_closed(use)
    assert builder.stream is None  # as upstream: a closed builder has no stream
    graph.launch(stream)  # the graph outlives its builder
    stream.sync()
    graph.close()
    graph.close()
    _raises_closed(lambda: graph.launch(stream))
    _raises_closed(lambda: graph.upload(stream))
    assert "closed" in repr(graph)
    # Closing a builder while it is still capturing ends the capture.
    capturing = stream.create_graph_builder().begin_building()
    buf.fill(0, stream=capturing)
    capturing.close()
    capturing.close()
    assert not stream.is_closed  # the builder did not own the stream
    buf.fill(1, stream=stream)  # the stream is no longer capturing
    stream.sync()
    buf.close()
    code.close()


@pytest.mark.gpu
def test_graph_definition_use_after_close(device, stream):
    from cuda_core.graph import GraphDefinition

    code, k = compile_kernels(device)
    buf = device.allocate(1024, stream=stream)
    gdef = GraphDefinition()
    gdef.launch(LaunchConfig(grid=1, block=256), k["add_one"], buf, np.uint64(256))
    gdef.close()
    gdef.close()
    assert not gdef.is_valid
    for use in (
        lambda: gdef.handle,
        gdef.instantiate,
        gdef.empty,
        lambda: gdef.launch(LaunchConfig(grid=1, block=1), k["add_one"], buf, 0),
    ):
        with pytest.raises(RuntimeError, match="no longer valid|closed"):
            use()
    buf.close()
    code.close()


# Passing a closed stream to other APIs (each case in a fresh interpreter).
# case: expected ("closed": RuntimeError naming the closed stream; "ok": works;
# "no errors": works and every step of it succeeded, see closed_use._outlive)
CLOSED_STREAM_CASES = {
    "device_allocate": "closed",
    "owned_pool_allocate": "closed",
    "fill": "closed",
    "copy_to": "closed",
    "copy_from": "closed",
    "deallocate": "closed",
    "pool_buffer_close_after_its_stream_closed": "ok",
    "legacy_pinned_close_after_its_stream_closed": "ok",
    # Not about streams, but about use after close, and unsafe in-process:
    "pinned_pool_buffer_fill": "ok",
    "buffer_outlives_owned_device_pool": "no errors",
    "buffer_outlives_owned_pinned_pool": "no errors",
}


@pytest.fixture(scope="module")
def closed_stream_outcomes():
    """Run every case at once, each in its own interpreter."""
    return run_scripts({case: ("closed_use.py", case) for case in CLOSED_STREAM_CASES}, timeout=180)


@pytest.mark.gpu
@pytest.mark.parametrize("case", sorted(CLOSED_STREAM_CASES))
def test_closed_stream_passed_to_other_apis(closed_stream_outcomes, case):
    proc, result = closed_stream_outcomes[case]
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}"
    assert proc.returncode == 0, f"the process crashed\n{detail}"
    assert result is not None, detail
    out = result["outcome"]
    want = CLOSED_STREAM_CASES[case]
    if want == "ok":
        assert out["ok"], out
    elif want == "no errors":
        # A closed owned pool is destroyed only after its last buffer is freed.
        assert out["ok"] and out["value"] == "[]", out
    else:
        assert not out["ok"], f"a closed stream was accepted: {out}"
        assert "RuntimeError" in out["bases"], out
        assert "closed" in out["message"], out


def test_open_class_twin_carries_the_finalizer_until_retyped():
    from cuda_core._lifetime import open_class

    calls = []

    class Thing:
        __slots__ = ("closed", "__weakref__")

        def __init__(self):
            raise RuntimeError("not constructible")

    def finalizer(self):
        calls.append(self.closed)

    twin = open_class(Thing, finalizer)
    assert open_class(Thing, finalizer) is twin
    assert open_class(twin, finalizer) is twin  # a twin is its own open class
    assert issubclass(twin, Thing) and twin._plain is Thing
    assert (twin.__name__, twin.__qualname__, twin.__module__) == (
        Thing.__name__,
        Thing.__qualname__,
        Thing.__module__,
    )
    with pytest.raises(RuntimeError, match="not constructible"):
        Thing()
    with pytest.raises(TypeError):
        twin(1)  # the twin allocates an empty object and takes no arguments
    dropped = twin()
    dropped.closed = False
    del dropped
    gc.collect()
    assert calls == [False]
    closed = twin()
    closed.closed = True
    closed.__class__ = closed._plain
    assert type(closed) is Thing
    del closed
    gc.collect()
    assert calls == [False]  # the plain class has no finalizer


def test_open_class_methods_and_variants():
    from cuda_core._lifetime import open_class

    class Thing:
        __slots__ = ("closed", "__weakref__")

        def close(self):
            """Close the thing."""
            return "generic"

    def fast_close(self):
        return "open"

    def finalizer(self):
        pass

    twin = open_class(Thing, finalizer, close=fast_close)
    other = open_class(Thing, finalizer, variant="other", close=fast_close)
    assert other is not twin and open_class(Thing, finalizer, variant="other") is other
    assert open_class(Thing, finalizer) is twin  # cached apart from the variant
    for cls in (twin, other):
        assert cls._plain is Thing and issubclass(cls, Thing)
        obj = cls()
        assert obj.close() == "open"  # the open twin's method
        obj.__class__ = Thing
        assert obj.close() == "generic"  # back to the plain class's method
    assert twin.close.__name__ == "close"
    assert twin.close.__qualname__ == Thing.close.__qualname__
    assert twin.close.__doc__ == "Close the thing."


def test_open_handle_methods_close_retypes_and_check_failures():
    from cuda_core import CUDAError
    from cuda_core._cuda_ffi import lib
    from cuda_core._lifetime import open_class, open_handle_methods

    calls = []

    class Thing:
        __slots__ = ("_handle", "_closed", "__weakref__")

        def close(self):
            """Close."""

        def sync(self):
            """Wait."""

    def destroy(handle):
        calls.append(("destroy", handle))
        return 0 if handle == 1 else lib.CUDA_ERROR_INVALID_HANDLE

    def wait(handle):
        calls.append(("wait", handle))
        return 0 if handle == 1 else lib.CUDA_ERROR_INVALID_HANDLE

    twin = open_class(Thing, lambda self: None, **open_handle_methods(Thing, destroy, wait))
    good, bad = twin(), twin()
    good._handle, bad._handle = 1, 2
    good._closed = bad._closed = False
    good.sync()
    good.close()
    assert type(good) is Thing and good._closed
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_HANDLE"):
        bad.sync()
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_HANDLE"):
        bad.close()
    assert type(bad) is Thing and bad._closed  # closed even though destroying failed
    assert calls == [("wait", 1), ("destroy", 1), ("wait", 2), ("destroy", 2)]
    assert twin.close.__doc__ == "Close." and twin.sync.__name__ == "sync"
