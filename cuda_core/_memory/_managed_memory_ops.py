# SPDX-License-Identifier: Apache-2.0
"""Batched managed-memory operations: prefetch, discard, discard-and-prefetch.

:func:`prefetch_batch`, :func:`discard_batch` and
:func:`discard_prefetch_batch` (exported by :mod:`cuda_core.utils`) act on
many managed ranges in one driver call (``cuMemPrefetchBatchAsync``,
``cuMemDiscardBatchAsync``, ``cuMemDiscardAndPrefetchBatchAsync``, all CUDA
13.0).  :class:`~cuda_core.ManagedBuffer` uses the same code for its
``discard`` and ``discard_prefetch`` methods.

Before CUDA 13.0, prefetches are issued one ``cuMemPrefetchAsync`` per
range; discards have no older equivalent and raise NotImplementedError.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Callable

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._loader import format_cuda_version
from cuda_core._memory._batch import coerce_buffers, hex_address, run_starts, u64_array
from cuda_core._memory._location import current_driver_version, location_pair
from cuda_core._stream import _as_stream

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core._host import Host
    from cuda_core._memory._buffer import Buffer
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder

__all__ = ["discard_batch", "discard_prefetch_batch", "prefetch_batch"]

#: The driver version that introduced the batched managed-memory entry points.
_BATCH_DRIVER = 13000

_SINGLE_HINT = "the ManagedBuffer instance method"


def prefetch_batch(
    stream: Stream | GraphBuilder,
    buffers: Sequence[Buffer],
    locations: Device | Host | Sequence[Device | Host],
) -> None:
    """Prefetch managed ranges to target locations, asynchronously on ``stream``.

    For one buffer, use :meth:`ManagedBuffer.prefetch
    <cuda_core.ManagedBuffer.prefetch>`.

    Parameters
    ----------
    stream : Stream or GraphBuilder
        The stream that orders the prefetches (not the legacy default
        stream, which the driver's batch call refuses).
    buffers : sequence of Buffer
        Managed allocations (a bare Buffer is refused).
    locations : Device, Host or sequence of them
        One location for every buffer, or one per buffer (same length).
        ``Host(numa_id=...)`` and ``Host.numa_current()`` need a CUDA 13
        driver.

    Raises
    ------
    TypeError
        For a bare Buffer, a non-sequence, a non-Buffer element, a location
        of the wrong type, or a non-stream.
    ValueError
        For an empty sequence, a location sequence of another length, a
        missing location, or a buffer that is not managed memory.
    RuntimeError
        For a closed buffer or stream.
    CUDAError
        If the driver refuses the batch (for instance when a device lacks
        concurrent managed access).

    Notes
    -----
    With a CUDA 12 driver the prefetches are issued one
    ``cuMemPrefetchAsync`` per buffer.
    """
    bufs = coerce_buffers(buffers, "prefetch_batch", _SINGLE_HINT)
    locs = _broadcast_locations(locations, len(bufs), "prefetch_batch")
    s = _as_stream(stream)
    for buf in bufs:
        _require_managed(buf, "prefetch_batch")
    if current_driver_version() >= _BATCH_DRIVER:
        _batch_with_locations(lib.cuMemPrefetchBatchAsync, "cuMemPrefetchBatchAsync", bufs, locs, s)
        return
    c_loc = ffi.new("CUmemLocation *")
    for i, buf in enumerate(bufs):
        if not buf._size:
            continue
        c_loc.type, c_loc.id = locs[i]
        status = lib.cuMemPrefetchAsync_v2(buf._ptr, buf._size, c_loc[0], 0, s._handle)
        if status:
            check(status, f"cuMemPrefetchAsync: range {i} of {len(bufs)} failed{_describe(buf)}")


def discard_batch(stream: Stream | GraphBuilder, buffers: Sequence[Buffer]) -> None:
    """Discard the contents of managed ranges, asynchronously on ``stream``.

    The resident pages are released without migrating their contents; a
    later read of a range not written or prefetched since returns
    indeterminate values.  Needs a CUDA 13 driver.  For one buffer, use
    :meth:`ManagedBuffer.discard <cuda_core.ManagedBuffer.discard>`.

    Parameters
    ----------
    stream : Stream or GraphBuilder
        The stream that orders the discards (not the legacy default stream).
    buffers : sequence of Buffer
        Managed allocations (a bare Buffer is refused).

    Raises
    ------
    TypeError
        For a bare Buffer, a non-sequence, a non-Buffer element or a
        non-stream.
    ValueError
        For an empty sequence or a buffer that is not managed memory.
    RuntimeError
        For a closed buffer or stream.
    NotImplementedError
        With a driver older than CUDA 13.0.
    CUDAError
        If the driver refuses the batch.

    Notes
    -----
    The discard is made with ``cuMemDiscardAndPrefetchBatchAsync`` to the
    stream's device, so the pages end up resident there (contents still
    indeterminate).  ``cuMemDiscardBatchAsync`` alone, as ``cuda.core``
    uses it, takes effect after its stream completes with driver 580: a
    write made right after synchronizing the stream (a device memset, or
    from the host) can be lost, and no synchronize or event prevents it.
    """
    bufs = coerce_buffers(buffers, "discard_batch", _SINGLE_HINT)
    s = _as_stream(stream)
    for buf in bufs:
        _require_managed(buf, "discard_batch")
    _discard(bufs, s, "discard")


def discard_prefetch_batch(
    stream: Stream | GraphBuilder,
    buffers: Sequence[Buffer],
    locations: Device | Host | Sequence[Device | Host],
) -> None:
    """Discard managed ranges and prefetch them to target locations, on ``stream``.

    Equivalent to :func:`discard_batch` followed by :func:`prefetch_batch`,
    in one driver call: the pages are made resident at the target without
    migrating their old contents.  Needs a CUDA 13 driver.  For one buffer,
    use :meth:`ManagedBuffer.discard_prefetch
    <cuda_core.ManagedBuffer.discard_prefetch>`.

    Parameters
    ----------
    stream : Stream or GraphBuilder
        The stream that orders the operations (not the legacy default
        stream).
    buffers : sequence of Buffer
        Managed allocations (a bare Buffer is refused).
    locations : Device, Host or sequence of them
        One location for every buffer, or one per buffer (same length).

    Raises
    ------
    TypeError, ValueError, RuntimeError, CUDAError
        As :func:`prefetch_batch`.
    NotImplementedError
        With a driver older than CUDA 13.0.
    """
    bufs = coerce_buffers(buffers, "discard_prefetch_batch", _SINGLE_HINT)
    locs = _broadcast_locations(locations, len(bufs), "discard_prefetch_batch")
    s = _as_stream(stream)
    for buf in bufs:
        _require_managed(buf, "discard_prefetch_batch")
    _discard_prefetch(bufs, locs, s, "discard_prefetch")


def discard_one(buf: Buffer, stream: Stream | GraphBuilder) -> None:
    """:meth:`ManagedBuffer.discard`: discard one managed range."""
    _require_managed(buf, "discard")
    s = _as_stream(stream)
    _discard((buf,), s, "discard")


def discard_prefetch_one(
    buf: Buffer, location: Device | Host, stream: Stream | GraphBuilder
) -> None:
    """:meth:`ManagedBuffer.discard_prefetch`: discard one range and prefetch it."""
    _require_managed(buf, "discard_prefetch")
    loc = location_pair(location)
    s = _as_stream(stream)
    _discard_prefetch((buf,), (loc,), s, "discard_prefetch")


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------
def _require_managed(buf: Buffer, what: str) -> None:
    if not buf.is_managed:
        raise ValueError(f"{what} requires a managed-memory allocation")


def _broadcast_locations(
    locations: Device | Host | Sequence[Device | Host], n: int, what: str
) -> tuple[tuple[int, int], ...]:
    """Return ``n`` ``(type, id)`` pairs: one location for all, or one each."""
    if isinstance(locations, Sequence) and not isinstance(locations, (str, bytes)):
        if len(locations) != n:
            raise ValueError(
                f"{what}: location length {len(locations)} does not match targets length {n}"
            )
        return tuple(location_pair(loc) for loc in locations)
    return (location_pair(locations),) * n


def _require_batch_driver(what: str, api: str) -> None:
    version = current_driver_version()
    if version < _BATCH_DRIVER:
        raise NotImplementedError(
            f"{what} requires a CUDA 13.0 or newer driver ({api}); this driver supports CUDA "
            f"{format_cuda_version(version)}"
        )


def _discard(bufs: Sequence[Buffer], s: Stream, what: str) -> None:
    """Discard the ranges, then make them resident on the stream's device, in one call.

    A plain ``cuMemDiscardBatchAsync`` is not enough: with driver 580 it
    takes effect for a while after its stream has completed, so a write
    issued right after a stream synchronize (a device memset, a write from
    the host) is lost, and neither ``cuCtxSynchronize`` nor an event
    prevents it (``tests/_scripts/managed_discard_repro.c``).  The combined
    discard-and-prefetch call completes with its stream.  The contents stay
    indeterminate, as after a discard; the pages are resident on the device.
    """
    _require_batch_driver(what, "cuMemDiscardBatchAsync")
    if _PLAIN_DISCARD:
        _plain_discard(bufs, s)
        return
    if not any(buf._size for buf in bufs):
        return
    loc = location_pair(s.device)
    _discard_prefetch(bufs, (loc,) * len(bufs), s, what)


#: True: discard with ``cuMemDiscardBatchAsync`` alone (what ``cuda.core``
#: does), which loses later writes with driver 580.  For the reproducer
#: ``tests/_scripts/managed_discard_rewrite.py --plain`` only.
_PLAIN_DISCARD = False


def _plain_discard(bufs: Sequence[Buffer], s: Stream) -> None:
    live = [i for i, buf in enumerate(bufs) if buf._size]
    if not live:
        return
    c_ptrs = u64_array("CUdeviceptr[]", [bufs[i]._ptr for i in live])
    c_sizes = u64_array("size_t[]", [bufs[i]._size for i in live])
    status = lib.cuMemDiscardBatchAsync(c_ptrs, c_sizes, len(live), 0, s._handle)
    if status:
        check(status, f"cuMemDiscardBatchAsync: {len(live)} ranges{_single(bufs, live)}")


def _discard_prefetch(
    bufs: Sequence[Buffer], locs: Sequence[tuple[int, int]], s: Stream, what: str
) -> None:
    _require_batch_driver(what, "cuMemDiscardAndPrefetchBatchAsync")
    _batch_with_locations(
        lib.cuMemDiscardAndPrefetchBatchAsync, "cuMemDiscardAndPrefetchBatchAsync", bufs, locs, s
    )


def _batch_with_locations(
    fn: Callable[..., int],
    name: str,
    bufs: Sequence[Buffer],
    locs: Sequence[tuple[int, int]],
    s: Stream,
) -> None:
    """Call a ``(dptrs, sizes, count, locs, locIdxs, numLocs, flags, stream)`` entry point.

    Empty ranges are left out (the driver has nothing to do for them);
    neighbouring ranges with the same location share one location entry.
    """
    live = [i for i, buf in enumerate(bufs) if buf._size]
    if not live:
        return
    live_locs = [locs[i] for i in live]
    starts = run_starts(live_locs)
    c_ptrs = u64_array("CUdeviceptr[]", [bufs[i]._ptr for i in live])
    c_sizes = u64_array("size_t[]", [bufs[i]._size for i in live])
    c_locs = ffi.new("CUmemLocation[]", len(starts))
    for k, start in enumerate(starts):
        c_locs[k].type, c_locs[k].id = live_locs[start]
    c_idxs = ffi.new("size_t[]", starts)
    status = fn(c_ptrs, c_sizes, len(live), c_locs, c_idxs, len(starts), 0, s._handle)
    if status:
        check(status, f"{name}: {len(live)} ranges{_single(bufs, live)}")


def _single(bufs: Sequence[Buffer], live: list[int]) -> str:
    """Describe the range of a one-range batch for an error message."""
    return _describe(bufs[live[0]]) if len(live) == 1 else ""


def _describe(buf: Buffer) -> str:
    return f" (ptr={hex_address(buf._ptr)}, size={buf._size})"
