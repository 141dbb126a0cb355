# SPDX-License-Identifier: Apache-2.0
"""The spawned-child runner and the IPC-enabled device and pinned pools shared by the IPC tests."""

from __future__ import annotations

import multiprocessing

import pytest
from _helpers import device_attribute

from cuda_core import (
    CUDAError,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    PinnedMemoryResource,
    PinnedMemoryResourceOptions,
)
from cuda_core._cuda_ffi import lib

#: Seconds a spawned child may take to answer and to exit.
TIMEOUT = 180


def run_child(target, *args, send=None):
    """Run ``target(conn, *args)`` in a spawned process (``send``: one object sent to it first).

    Return the dict the child sends back; fail on its error, a timeout or a bad exit.
    """
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe()
    proc = ctx.Process(target=target, args=(child_conn, *args))
    proc.start()
    try:
        if send is not None:
            parent_conn.send(send)
        if not parent_conn.poll(TIMEOUT):
            raise AssertionError("the child process did not answer in time")
        result = parent_conn.recv()
    finally:
        proc.join(TIMEOUT)
        if proc.is_alive():
            proc.kill()
    assert "error" not in result, result["error"]
    assert proc.exitcode == 0
    return result


def ipc_device_pool(device):
    """An IPC-enabled DeviceMemoryResource on ``device`` (skip where POSIX fds are unsupported)."""
    handle_types = device_attribute(device, lib.CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)
    if not handle_types & lib.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
        pytest.skip("memory pools with POSIX file descriptor handles are not supported here")
    return DeviceMemoryResource(device, DeviceMemoryResourceOptions(ipc_enabled=True))


def ipc_pinned_pool(device):
    """An IPC-enabled PinnedMemoryResource (skip where such pools are not supported)."""
    if not device_attribute(device, lib.CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED):
        pytest.skip("host NUMA memory pools are not supported here")
    try:
        return PinnedMemoryResource(PinnedMemoryResourceOptions(ipc_enabled=True))
    except CUDAError as exc:
        if exc.name != "CUDA_ERROR_NOT_SUPPORTED":
            raise
        pytest.skip(f"IPC-enabled pinned memory pools are not supported here: {exc}")
