# SPDX-License-Identifier: Apache-2.0
"""Without a CUDA driver, every entry point that needs one says so clearly.

Runs in CI (no GPU, no ``libcuda.so.1``).  Each public entry point that has
to talk to the driver must raise :class:`~cuda_core.LibraryNotFoundError`
whose message names ``libcuda.so.1`` and how to fix it -- never a crash, a
hang, an ``AttributeError`` from a half-initialized object or a silent
success.  The whole module is skipped where a driver is installed (then
the other hardening modules run instead).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _scripts.hardening_util import package_root

import cuda_core
from cuda_core import (
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Buffer,
    CUDAError,
    Device,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Kernel,
    LaunchConfig,
    LegacyPinnedMemoryResource,
    LibraryNotFoundError,
    ManagedMemoryResource,
    ObjectCode,
    PinnedMemoryResource,
    Program,
    ProgramOptions,
    Stream,
    VirtualMemoryResource,
    launch,
)
from cuda_core._cuda_ffi import ffi, lib


def _driver_present():
    return lib.cc_load_library(lib.CC_LIB_DRIVER, ffi.NULL) == 0


pytestmark = pytest.mark.skipif(
    _driver_present(),
    reason="a CUDA driver (libcuda.so.1) is installed here; the no-driver behaviour "
    "can only be observed on a machine without one",
)

FOREIGN = 0x1000  # an address that is never dereferenced: the driver is missing


def _foreign_stream():
    return Stream.from_handle(FOREIGN)


def _event_from_ipc():
    from cuda_core._event import Event, IPCEventDescriptor

    return Event.from_ipc_descriptor(IPCEventDescriptor._init(bytes(64), False))


def _graph_builder():
    builder = _foreign_stream().create_graph_builder()
    builder.begin_building()


def _graph_definition():
    from cuda_core.graph import GraphDefinition

    return GraphDefinition()


def _graph_memory_resource_allocate():
    from cuda_core import GraphMemoryResource

    return GraphMemoryResource(0).allocate(256, stream=_foreign_stream())


# Every entry point that needs the driver, as (id, callable).
ENTRY_POINTS = [
    ("Device()", lambda: Device()),
    ("Device(0)", lambda: Device(0)),
    ("Device.get_all_devices", lambda: Device.get_all_devices()),
    ("Stream.from_handle.sync", lambda: _foreign_stream().sync()),
    ("Stream.record", lambda: _foreign_stream().record()),
    ("Stream.wait(stream)", lambda: _foreign_stream().wait(Stream.from_handle(FOREIGN + 8))),
    ("Stream.priority", lambda: _foreign_stream().priority),
    ("Stream.is_nonblocking", lambda: _foreign_stream().is_nonblocking),
    ("Stream.device", lambda: _foreign_stream().device),
    ("Stream.context", lambda: _foreign_stream().context),
    ("LEGACY_DEFAULT_STREAM.sync", lambda: LEGACY_DEFAULT_STREAM.sync()),
    ("PER_THREAD_DEFAULT_STREAM.record", lambda: PER_THREAD_DEFAULT_STREAM.record()),
    ("Event.from_ipc_descriptor", _event_from_ipc),
    ("DeviceMemoryResource(0)", lambda: DeviceMemoryResource(0)),
    (
        "DeviceMemoryResource(0, options)",
        lambda: DeviceMemoryResource(0, DeviceMemoryResourceOptions(max_size=1 << 20)),
    ),
    ("PinnedMemoryResource()", lambda: PinnedMemoryResource()),
    ("ManagedMemoryResource()", lambda: ManagedMemoryResource()),
    ("LegacyPinnedMemoryResource.allocate", lambda: LegacyPinnedMemoryResource().allocate(64)),
    ("VirtualMemoryResource(0)", lambda: VirtualMemoryResource(0)),
    ("GraphMemoryResource.allocate", _graph_memory_resource_allocate),
    ("Buffer.is_device_accessible", lambda: Buffer.from_handle(FOREIGN, 64).is_device_accessible),
    ("Buffer.fill", lambda: Buffer.from_handle(FOREIGN, 64).fill(1, stream=_foreign_stream())),
    (
        "Buffer.copy_to",
        lambda: Buffer.from_handle(FOREIGN, 64).copy_to(
            Buffer.from_handle(FOREIGN * 2, 64), stream=_foreign_stream()
        ),
    ),
    ("ObjectCode.get_kernel", lambda: ObjectCode.from_cubin(b"\x7fELF").get_kernel("k")),
    ("Kernel.attributes", lambda: Kernel.from_handle(FOREIGN).attributes.num_regs),
    (
        "launch",
        lambda: launch(
            _foreign_stream(), LaunchConfig(grid=1, block=1), Kernel.from_handle(FOREIGN)
        ),
    ),
    ("GraphBuilder.begin_building", _graph_builder),
    ("GraphDefinition()", _graph_definition),
]


@pytest.mark.parametrize("what, call", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_entry_point_raises_library_not_found(what, call):
    with pytest.raises(LibraryNotFoundError) as info:
        call()
    err = info.value
    assert isinstance(err, CUDAError)  # catchable as the package's base error
    message = str(err)
    assert "libcuda.so.1" in message, message
    assert "Fix:" in message and "LD_LIBRARY_PATH" in message, message


def test_same_error_every_time():
    # No half-initialized state: the second attempt fails the same way.
    messages = []
    for _ in range(3):
        with pytest.raises(LibraryNotFoundError) as info:
            Device(0)
        messages.append(str(info.value))
    assert len(set(messages)) == 1


def test_driver_free_parts_still_work():
    # Objects that need no driver are usable: options, launch configs,
    # wrappers of foreign handles, and compilation with an explicit arch.
    assert LaunchConfig(grid=(2, 3), block=128).grid == (2, 3, 1)
    assert ProgramOptions(arch="sm_90").arch == "sm_90"
    s = _foreign_stream()
    assert s.handle == FOREIGN and not s.is_closed
    s.close()
    s.close()
    assert s.is_closed
    buf = Buffer.from_handle(FOREIGN, 64)
    assert buf.handle == FOREIGN and buf.size == 64
    buf.close()
    assert buf.handle == 0
    code = ObjectCode.from_cubin(b"\x7fELF", name="k")
    assert code.code == b"\x7fELF"
    code.close()


def test_compile_without_arch_names_the_missing_driver():
    # With no arch and no driver to ask, compilation explains what is missing.
    try:
        prog = Program("__global__ void k() {}", "c++")
    except LibraryNotFoundError as exc:  # NVRTC itself is absent here
        pytest.skip(f"NVRTC is not installed: {exc}")
    with prog:
        with pytest.raises(ValueError, match="arch") as info:
            prog.compile("cubin")
    assert "driver" in str(info.value)


def test_fresh_interpreter_reports_missing_driver():
    # A first driver call in a brand-new process fails cleanly, with nothing on
    # stderr but the traceback we print ourselves.
    code = (
        "import cuda_core\n"
        "try:\n"
        "    cuda_core.Device(0)\n"
        "except cuda_core.LibraryNotFoundError as e:\n"
        "    print('OK', 'libcuda.so.1' in str(e))\n"
    )
    path = os.pathsep.join([package_root(), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "OK True"
    assert r.stderr == ""
    assert cuda_core.__version__
