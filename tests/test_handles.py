# SPDX-License-Identifier: Apache-2.0
"""Addresses and handles as Python ints.

Every address the library hands out (buffer pointers, stream and config
handles) is a non-negative int equal to the pointer's unsigned value.  On
PyPy it is also a machine-word int rather than a big-integer object: the JIT
stores a machine word straight into a launch's argument buffer, while a
big-integer object costs a conversion call each time it is used.
"""

from __future__ import annotations

import sys

import pytest

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi

IS_PYPY = sys.implementation.name == "pypy"
pypy_only = pytest.mark.skipif(not IS_PYPY, reason="int representation is a PyPy matter")


def _is_machine_word(value):
    import __pypy__

    return "W_IntObject" in __pypy__.internal_repr(value)


BOUNDARIES = [0, 1, 0x7F12_3456_7000, (1 << 47) - 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


@pytest.mark.parametrize("value", BOUNDARIES)
def test_as_int_handle_keeps_the_unsigned_value_of_pointers(value):
    got = as_int_handle(ffi.cast("void *", value))
    assert type(got) is int
    assert got == value


@pytest.mark.parametrize("value", BOUNDARIES)
def test_as_int_handle_keeps_the_value_of_driver_ints(value):
    # e.g. a CUdeviceptr output read back as an unsigned 64-bit int
    out = ffi.new("unsigned long long *", value)
    assert as_int_handle(out[0]) == value


@pypy_only
@pytest.mark.parametrize("value", [0, 1, 0x7F12_3456_7000, (1 << 63) - 1])
def test_as_int_handle_gives_machine_words_on_pypy(value):
    out = ffi.new("unsigned long long *", value)
    assert _is_machine_word(as_int_handle(out[0]))
    assert _is_machine_word(as_int_handle(ffi.cast("void *", value)))


@pytest.mark.gpu
def test_stream_and_config_handles_are_unsigned_addresses(device):
    from cuda_core import LaunchConfig

    s = device.create_stream()
    try:
        assert s.handle == int(ffi.cast("uintptr_t", s._handle)) > 0
        assert s._h == s.handle
        config = LaunchConfig(grid=1, block=1)
        cfg, addr, _special = config._prepare()
        assert addr == int(ffi.cast("uintptr_t", cfg)) > 0
        if IS_PYPY:
            assert _is_machine_word(s._h)
            assert _is_machine_word(addr)
    finally:
        s.close()


@pytest.mark.gpu
def test_buffer_handles_are_unsigned_addresses(device):
    import numpy as np

    from cuda_core import Buffer, LegacyPinnedMemoryResource, PinnedMemoryResource

    s = device.create_stream()
    resources = [device.memory_resource, LegacyPinnedMemoryResource()]
    if device.properties.host_memory_pools_supported:
        resources.append(PinnedMemoryResource())
    data = np.arange(256, dtype=np.uint8)
    try:
        for mr in resources:
            name = type(mr).__name__
            buf = mr.allocate(256, stream=s)
            try:
                assert buf.handle > 0
                if IS_PYPY:
                    assert _is_machine_word(buf.handle), name
                    assert _is_machine_word(buf.handle + 16), name
                # The int is the real address: a view made from it reads
                # back what was written through the buffer.
                buf.copy_from(Buffer.from_handle(data.ctypes.data, 256, owner=data), stream=s)
                out = np.zeros(256, dtype=np.uint8)
                view = Buffer.from_handle(buf.handle + 16, 240, owner=buf)
                view.copy_to(Buffer.from_handle(out.ctypes.data, 240, owner=out), stream=s)
                s.sync()
                np.testing.assert_array_equal(out[:240], data[16:], err_msg=name)
            finally:
                buf.close(s)
        s.sync()
    finally:
        s.close()
