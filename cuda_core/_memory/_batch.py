# SPDX-License-Identifier: Apache-2.0
"""Argument handling shared by the batched memory operations.

:func:`~cuda_core.utils.copy_batch`, :func:`~cuda_core.utils.prefetch_batch`,
:func:`~cuda_core.utils.discard_batch` and
:func:`~cuda_core.utils.discard_prefetch_batch` take sequences of
:class:`~cuda_core.Buffer` objects and memory locations; this module checks
them and turns them into what the driver's batch entry points take.
"""

from __future__ import annotations

import array
import platform
from collections.abc import Sequence
from itertools import repeat

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._loader import driver_version
from cuda_core._memory._buffer import Buffer

__all__ = []

#: ``size_t`` all ones: what the driver writes as a failed copy's index when
#: the failure concerns no particular copy.
SIZE_MAX = (1 << 64) - 1

_LOC_DEVICE = lib.CU_MEM_LOCATION_TYPE_DEVICE
_LOC_HOST = lib.CU_MEM_LOCATION_TYPE_HOST
_LOC_HOST_NUMA = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA
_LOC_HOST_NUMA_CURRENT = lib.CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT


# Filling a C array from a list of ints: on CPython array.array converts
# about ten times faster than ffi.new; on PyPy ffi.new is the faster one.
_VIA_ARRAY = platform.python_implementation() == "CPython" and array.array("Q").itemsize == 8


def coerce_buffers(buffers, what, single_hint):
    """Return ``buffers`` as a tuple of open Buffers.

    A bare Buffer is refused (the per-buffer API named by ``single_hint`` is
    the way to operate on one), as are non-sequences, an empty sequence,
    elements that are not Buffers and closed Buffers.

    Raises
    ------
    TypeError
        For a bare Buffer, a non-sequence, or a non-Buffer element.
    ValueError
        For an empty sequence.
    RuntimeError
        For a closed Buffer.
    """
    if isinstance(buffers, Buffer):
        raise TypeError(
            f"{what}: pass a sequence of Buffers; for a single buffer use {single_hint}"
        )
    if not isinstance(buffers, Sequence) or isinstance(buffers, (str, bytes)):
        raise TypeError(
            f"{what}: buffers must be a sequence of Buffer, got {type(buffers).__name__}"
        )
    if not buffers:
        raise ValueError(f"{what}: empty buffers sequence")
    out = tuple(buffers)
    # Whole-sequence checks first (cheap for long batches); the loop below
    # runs only to report the first offending element.
    if all(map(isinstance, out, repeat(Buffer))) and True not in [b._closed for b in out]:
        return out
    for i, buf in enumerate(out):
        if not isinstance(buf, Buffer):
            raise TypeError(f"{what}: expected Buffer, got {type(buf).__name__}")
        if buf._closed:
            raise RuntimeError(
                f"{what}: the Buffer at index {i} is closed; it cannot be used after close()"
            )
    return out


def u64_array(ctype, values):
    """Return a C array of ``ctype`` (a 64-bit unsigned type) holding ``values``.

    ``ctype`` names the array type, e.g. ``"CUdeviceptr[]"`` or ``"size_t[]"``.
    """
    if _VIA_ARRAY:
        return ffi.from_buffer(ctype, array.array("Q", values))
    return ffi.new(ctype, values)


def location_pair(value, *, allow_none=False):
    """Return ``(CUmemLocationType, id)`` for a memory location, or None.

    Accepts a :class:`~cuda_core.Device`, a host location (an object with
    ``numa_id`` and ``is_numa_current``: the plain host, a host NUMA node or
    the calling thread's NUMA node), a device ordinal, or ``-1`` for the
    host.  ``None`` gives None when ``allow_none`` is true.

    Raises
    ------
    ValueError
        For ``None`` (when not allowed) or a negative int other than -1.
    TypeError
        For anything else.
    """
    if value is None:
        if allow_none:
            return None
        raise ValueError("location is required")
    if isinstance(value, bool):
        raise TypeError("location must be a Device, Host, or None; got bool")
    if isinstance(value, int):
        if value >= 0:
            return (_LOC_DEVICE, value)
        if value == -1:
            return (_LOC_HOST, 0)
        raise ValueError(f"a location int must be a device ordinal or -1 (host), got {value}")
    if hasattr(value, "set_current"):  # a Device (other objects have a device_id too)
        dev_id = getattr(value, "device_id", None)
        if isinstance(dev_id, int):
            return (_LOC_DEVICE, dev_id)
    if hasattr(value, "numa_id") and hasattr(value, "is_numa_current"):
        if value.is_numa_current:
            return (_LOC_HOST_NUMA_CURRENT, 0)
        if value.numa_id is not None:
            return (_LOC_HOST_NUMA, int(value.numa_id))
        return (_LOC_HOST, 0)
    raise TypeError(f"location must be a Device, Host, or None; got {type(value).__name__}")


def run_starts(values):
    """Return the index where each run of equal neighbouring ``values`` starts.

    This is the driver's ``*Idxs`` encoding: entry ``k`` of the value array
    applies to the operations ``starts[k]`` up to ``starts[k + 1] - 1`` (the
    last one up to the end), so a value shared by the whole batch reaches
    the driver once.
    """
    starts = []
    prev = None
    for i, value in enumerate(values):
        if i == 0 or value != prev:
            starts.append(i)
        prev = value
    return starts


#: The driver's CUDA version (asked once per process, by the loader).
current_driver_version = driver_version


def hex_address(address):
    """Format an address for an error message."""
    return f"0x{address:x}"
