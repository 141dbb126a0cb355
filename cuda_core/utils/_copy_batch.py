# SPDX-License-Identifier: Apache-2.0
"""Batched copies: :func:`copy_batch`.

Many buffer-to-buffer copies go to the driver in one ``cuMemcpyBatchAsync``
call.  The declaration follows the CUDA 12.8 ABI of that entry point, whose
last-but-one argument reports the index of the copy that failed; CUDA 13.0
headers name a later revision without it (``cuMemcpyBatchAsync_v2``), and
drivers keep serving the 12.8 one to callers that ask for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check, driver_error
from cuda_core._memory._batch import SIZE_MAX, coerce_buffers, hex_address, run_starts, u64_array
from cuda_core._memory._copy_with_options import (
    _DEFAULT_OPTIONS,
    _fill_attributes,
    _normalize_copy_options,
    _reject_unsupported_during_api_call,
)
from cuda_core._memory._location import current_driver_version
from cuda_core._stream import _as_stream

if TYPE_CHECKING:
    from cuda_core._memory._buffer import Buffer
    from cuda_core._memory._copy_with_options import CopyOptions
    from cuda_core._stream import Stream
    from cuda_core.graph import GraphBuilder

__all__ = ["copy_batch"]

#: The driver version that introduced ``cuMemcpyBatchAsync``.
_BATCH_DRIVER = 12080

_SINGLE_HINT = "Buffer.copy_to / Buffer.copy_from"

#: Handles the driver treats as the legacy default stream (NULL, CU_STREAM_LEGACY).
_LEGACY_HANDLES = (0, 1)

_DEFAULTS: list[
    tuple[Any, Any, int]
] = []  # [(attrs, attrsIdxs, numAttrs)] for the default options, once made

_FALLBACK_REQUIREMENT = (
    "a driver for CUDA 12.8 or newer (cuMemcpyBatchAsync is unavailable with this driver)"
)


def copy_batch(
    stream: Stream | GraphBuilder,
    srcs: Sequence[Buffer],
    dsts: Sequence[Buffer],
    *,
    options: CopyOptions | Sequence[CopyOptions] | None = None,
) -> None:
    """Copy each buffer of ``srcs`` into the matching one of ``dsts``, asynchronously.

    The copies go to the driver in one ``cuMemcpyBatchAsync`` call.  The
    batch as a whole is ordered on ``stream``; the copies within it run in
    no particular order, possibly concurrently, so no copy may write memory
    that another copy of the batch reads or writes (this is not checked).
    Each copy's size is its source's; each destination must have the same
    size.  Empty copies are skipped.  For one copy, use
    :meth:`Buffer.copy_to <cuda_core.Buffer.copy_to>` or
    :meth:`Buffer.copy_from <cuda_core.Buffer.copy_from>`.

    The driver has no graph node for batched copies, so a batch cannot be
    captured into a graph: a capturing stream (a
    :class:`~cuda_core.graph.GraphBuilder` among them) is refused.

    Parameters
    ----------
    stream : Stream
        The stream that orders the batch.  The legacy default stream
        (:data:`~cuda_core.LEGACY_DEFAULT_STREAM`) is refused, as the
        driver refuses it; the per-thread default stream is accepted.
    srcs : sequence of Buffer
        The sources (a bare Buffer is refused).
    dsts : sequence of Buffer
        The destinations, as many as ``srcs``.
    options : CopyOptions, sequence of CopyOptions, or None
        One :class:`~cuda_core.utils.CopyOptions` for every copy, one per
        copy (same length as ``srcs``), or None for stream-ordered defaults.

    Raises
    ------
    TypeError
        For a bare Buffer, a non-sequence, a non-Buffer element, bad
        ``options``, the legacy default stream, or a capturing stream.
    ValueError
        For an empty sequence, ``srcs`` and ``dsts`` (or ``options``) of
        different lengths, or a source and destination of different sizes.
    RuntimeError
        For a closed buffer or stream, or for
        ``src_access_order=DURING_API_CALL`` where ``cuMemcpyBatchAsync`` is
        unavailable (see Notes).
    CUDAError
        If the driver refuses the batch; the message names the copy that
        failed (index, addresses and size) when the driver reports one.

    Notes
    -----
    ``cuMemcpyBatchAsync`` needs a CUDA 12.8 or newer driver.  With an
    older one each copy is a ``cuMemcpyAsync``: ``STREAM`` and ``ANY``
    access orders hold there and the other hints are dropped, but
    ``DURING_API_CALL`` raises RuntimeError, since a stream-ordered copy
    cannot read the source before the call returns.
    """
    src_bufs = coerce_buffers(srcs, "copy_batch", _SINGLE_HINT)
    dst_bufs = coerce_buffers(dsts, "copy_batch", _SINGLE_HINT)
    n = len(src_bufs)
    if len(dst_bufs) != n:
        raise ValueError(f"copy_batch: srcs length {n} does not match dsts length {len(dst_bufs)}")
    s = _as_stream(stream)
    if s._h in _LEGACY_HANDLES:
        raise TypeError(
            "copy_batch does not accept LEGACY_DEFAULT_STREAM: cuMemcpyBatchAsync refuses the "
            "legacy default stream (PER_THREAD_DEFAULT_STREAM is accepted); pass an explicit "
            "stream or PER_THREAD_DEFAULT_STREAM"
        )
    _refuse_capture(s)
    sizes = [buf._size for buf in src_bufs]
    dst_sizes = [buf._size for buf in dst_bufs]
    if sizes != dst_sizes:
        i = next(i for i in range(n) if sizes[i] != dst_sizes[i])
        raise ValueError(
            f"copy_batch: buffer size mismatch at index {i} (src={sizes[i]}, dst={dst_sizes[i]})"
        )
    live = [i for i in range(n) if sizes[i]] if 0 in sizes else None
    attrs = None if options is None else _normalize_copy_options(options, n)
    if current_driver_version() >= _BATCH_DRIVER:
        if live is None:
            _copy_native(src_bufs, dst_bufs, sizes, None, attrs, s)
        elif live:
            _copy_native(src_bufs, dst_bufs, sizes, live, attrs, s)
        return
    if attrs is not None:
        for i, attr in enumerate(attrs):
            _reject_unsupported_during_api_call(
                attr.src_access_order, _FALLBACK_REQUIREMENT, index=i
            )
    for i in range(n) if live is None else live:
        src, dst = src_bufs[i], dst_bufs[i]
        status = lib.cuMemcpyAsync(dst._ptr, src._ptr, src._size, s._handle)
        if status:
            check(status, "cuMemcpyAsync: " + _describe_copy(i, n, src, dst))


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------
def _refuse_capture(s: Stream) -> None:
    c_status = ffi.new("CUstreamCaptureStatus *")
    check(lib.cuStreamIsCapturing(s._handle, c_status), "cuStreamIsCapturing")
    if c_status[0] != lib.CU_STREAM_CAPTURE_STATUS_NONE:
        raise TypeError(
            "copy_batch does not support graph capture (the driver has no graph node for "
            "batched copies); use GraphDefinition memcpy nodes or per-buffer Buffer.copy_to "
            "instead"
        )


def _copy_native(
    src_bufs: Sequence[Buffer],
    dst_bufs: Sequence[Buffer],
    sizes: list[int],
    live: list[int] | None,
    attrs: Sequence[CopyOptions] | None,
    s: Stream,
) -> None:
    """One ``cuMemcpyBatchAsync`` call.

    ``sizes``: each copy's size; ``live``: the indices of the non-empty
    copies, or None when none is empty; ``attrs``: one CopyOptions per
    copy, or None for the defaults.
    """
    if live is None:
        count = len(src_bufs)
        c_dsts = u64_array("CUdeviceptr[]", [buf._ptr for buf in dst_bufs])
        c_srcs = u64_array("CUdeviceptr[]", [buf._ptr for buf in src_bufs])
        c_sizes = u64_array("size_t[]", sizes)
        live_attrs = attrs
    else:
        count = len(live)
        c_dsts = u64_array("CUdeviceptr[]", [dst_bufs[i]._ptr for i in live])
        c_srcs = u64_array("CUdeviceptr[]", [src_bufs[i]._ptr for i in live])
        c_sizes = u64_array("size_t[]", [sizes[i] for i in live])
        live_attrs = None if attrs is None else [attrs[i] for i in live]
    if live_attrs is None:
        c_attrs, c_idxs, num_attrs = _default_attributes()
    else:
        starts = _attr_run_starts(live_attrs)
        c_attrs = ffi.new("CUmemcpyAttributes[]", len(starts))
        for k, start in enumerate(starts):
            _fill_attributes(c_attrs[k], live_attrs[start])
        c_idxs = ffi.new("size_t[]", starts)
        num_attrs = len(starts)
    c_fail = ffi.new("size_t *", SIZE_MAX)
    status = lib.cuMemcpyBatchAsync(
        c_dsts, c_srcs, c_sizes, count, c_attrs, c_idxs, num_attrs, c_fail, s._handle
    )
    if status:
        raise _batch_error(status, c_fail[0], live, src_bufs, dst_bufs)


def _attr_run_starts(attrs: Sequence[CopyOptions]) -> list[int]:
    """Return where each run of equal neighbouring options starts (the driver's ``attrsIdxs``)."""
    return run_starts(attrs)


def _default_attributes() -> tuple[Any, Any, int]:
    """``(attrs, attrsIdxs, numAttrs)`` applying the default options to a whole batch.

    Made once; the driver only reads them.
    """
    if not _DEFAULTS:
        c_attrs = ffi.new("CUmemcpyAttributes[1]")
        _fill_attributes(c_attrs[0], _DEFAULT_OPTIONS)
        _DEFAULTS.append((c_attrs, ffi.new("size_t[1]", [0]), 1))
    return _DEFAULTS[0]


def _batch_error(
    status: int,
    fail: int,
    live: list[int] | None,
    src_bufs: Sequence[Buffer],
    dst_bufs: Sequence[Buffer],
) -> Exception:
    """The CUDAError for a failed batch, naming the failed copy when the driver did.

    ``live``: the indices of the copies given to the driver (None: all).
    """
    n = len(src_bufs)
    if fail < (n if live is None else len(live)):
        i = fail if live is None else live[fail]
        context = "cuMemcpyBatchAsync: " + _describe_copy(i, n, src_bufs[i], dst_bufs[i])
    else:
        context = f"cuMemcpyBatchAsync: batch of {n} copies failed (the driver named no copy)"
    return driver_error(status, context)


def _describe_copy(i: int, n: int, src: Buffer, dst: Buffer) -> str:
    return (
        f"copy {i} of {n} failed (src={hex_address(src._ptr)}, dst={hex_address(dst._ptr)}, "
        f"size={src._size})"
    )
