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
import sys
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any

from cuda_core._cuda_ffi import ffi
from cuda_core._ffi_types import ctype_of
from cuda_core._memory._buffer import Buffer

__all__: list[str] = []

#: ``size_t`` all ones: what the driver writes as a failed copy's index when
#: the failure concerns no particular copy.
SIZE_MAX = (1 << 64) - 1


# Filling a C array from a list of ints: on CPython array.array converts
# about ten times faster than ffi.new; on PyPy ffi.new is the faster one.
_VIA_ARRAY = sys.implementation.name == "cpython" and array.array("Q").itemsize == 8


def coerce_buffers(buffers: Any, what: str, single_hint: str) -> tuple[Buffer, ...]:
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


def u64_array(ctype: str, values: Iterable[int]) -> Any:
    """Return a C array of ``ctype`` (a 64-bit unsigned type) holding ``values``.

    ``ctype`` names the array type, e.g. ``"CUdeviceptr[]"`` or ``"size_t[]"``.
    """
    if _VIA_ARRAY:
        return ffi.from_buffer(ctype_of(ctype), array.array("Q", values))
    return ffi.new(ctype_of(ctype), values)


def run_starts(values: Iterable[object]) -> list[int]:
    """Return the index where each run of equal neighbouring ``values`` starts.

    This is the driver's ``*Idxs`` encoding: entry ``k`` of the value array
    applies to the operations ``starts[k]`` up to ``starts[k + 1] - 1`` (the
    last one up to the end), so a value shared by the whole batch reaches
    the driver once.
    """
    starts: list[int] = []
    prev: object = None
    for i, value in enumerate(values):
        if i == 0 or value != prev:
            starts.append(i)
        prev = value
    return starts


def hex_address(address: int) -> str:
    """Format an address for an error message."""
    return f"0x{address:x}"
