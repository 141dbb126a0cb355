# SPDX-License-Identifier: Apache-2.0
"""Per-copy attributes: :class:`CopyOptions`, its enumerations, and one copy with them.

A :class:`CopyOptions` becomes one driver ``CUmemcpyAttributes`` record
(source access order, source and destination location hints, flags), for
:func:`~cuda_core.utils.copy_batch` or for one copy by
:meth:`Buffer.copy_to <cuda_core.Buffer.copy_to>` and
:meth:`Buffer.copy_from <cuda_core.Buffer.copy_from>`
(``cuMemcpyWithAttributesAsync``, CUDA 13.2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._memory._location import current_driver_version, location_pair
from cuda_core.typing import _StrEnum

if TYPE_CHECKING:
    from cuda_core._stream import Stream

__all__ = ["CopyOptions", "MemcpyOverlapMode", "MemcpySrcAccessOrder"]


class MemcpySrcAccessOrder(_StrEnum):
    """How a batched copy may read its source (``CUmemcpySrcAccessOrder``).

    Plain strings (the values) are accepted wherever a member is.

    ``STREAM``
        The source is read in stream order: earlier work in the stream may
        still be writing it when the copy is enqueued.
    ``DURING_API_CALL``
        The source may be read out of stream order, but every read is done
        before the enqueuing call returns; no earlier work in the stream may
        be using the source.  Suits short-lived sources.
    ``ANY``
        The source may be read out of stream order, even after the call
        returns; it must stay unchanged until the copy completes, and no
        earlier work in the stream may be using it.
    """

    STREAM = "stream"
    DURING_API_CALL = "during_api_call"
    ANY = "any"


class MemcpyOverlapMode(_StrEnum):
    """Whether a batched copy should overlap with compute (``CUmemcpyFlags``).

    ``DEFAULT``
        No preference.
    ``PREFER_OVERLAP_WITH_COMPUTE``
        Ask the driver to overlap the copy with work on the SMs; a hint that
        the driver may ignore.
    """

    DEFAULT = "default"
    PREFER_OVERLAP_WITH_COMPUTE = "prefer_overlap_with_compute"


@dataclasses.dataclass(frozen=True)
class CopyOptions:
    """Attributes of one copy of a batch (see :func:`cuda_core.utils.copy_batch`).

    Frozen: options are values, and equal options given to neighbouring
    copies reach the driver once.

    Attributes
    ----------
    src_access_order : MemcpySrcAccessOrder or str
        How the source may be read; ``"stream"`` (the default) keeps stream
        order.
    src_location_hint : Device, Host or None
        Where the source should be read from.  Honoured only for managed
        memory on devices with concurrent managed access and for pageable
        system memory on devices that access it directly; ignored otherwise.
        It neither prefetches nor sets advice.  ``None``: no hint.  Checked
        when the copy is made (TypeError for anything else, device ordinals
        included).
    dst_location_hint : Device, Host or None
        The same, for the destination.
    overlap_mode : MemcpyOverlapMode or str
        ``"default"``, or ``"prefer_overlap_with_compute"`` (a hint).

    Raises
    ------
    ValueError
        If ``src_access_order`` or ``overlap_mode`` is not one of the values
        above.  Location hints are checked when the copy is made.
    """

    src_access_order: MemcpySrcAccessOrder | str = "stream"
    src_location_hint: object | None = None
    dst_location_hint: object | None = None
    overlap_mode: MemcpyOverlapMode | str = "default"

    def __post_init__(self) -> None:
        if not isinstance(self.src_access_order, MemcpySrcAccessOrder):
            try:
                order = MemcpySrcAccessOrder(self.src_access_order)
            except (ValueError, TypeError):
                raise ValueError(
                    f"invalid src_access_order: {self.src_access_order!r} (expected one of "
                    "'stream', 'during_api_call', 'any')"
                ) from None
            object.__setattr__(self, "src_access_order", order)
        if not isinstance(self.overlap_mode, MemcpyOverlapMode):
            try:
                mode = MemcpyOverlapMode(self.overlap_mode)
            except (ValueError, TypeError):
                raise ValueError(
                    f"invalid overlap_mode: {self.overlap_mode!r} (expected 'default' or "
                    "'prefer_overlap_with_compute')"
                ) from None
            object.__setattr__(self, "overlap_mode", mode)


_DEFAULT_OPTIONS = CopyOptions()

#: The driver version that introduced ``cuMemcpyWithAttributesAsync``.
_WITH_ATTRIBUTES_DRIVER = 13020

#: Handles the driver treats as the legacy default stream (NULL, CU_STREAM_LEGACY).
_LEGACY_HANDLES = (0, 1)

_SINGLE_FALLBACK_REQUIREMENT = (
    "a driver for CUDA 13.2 or newer (cuMemcpyWithAttributesAsync is unavailable with this driver)"
)

_ORDER_TO_DRIVER: dict[str, int] = {
    MemcpySrcAccessOrder.STREAM: lib.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
    MemcpySrcAccessOrder.DURING_API_CALL: lib.CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL,
    MemcpySrcAccessOrder.ANY: lib.CU_MEMCPY_SRC_ACCESS_ORDER_ANY,
}
_OVERLAP_TO_FLAGS: dict[str, int] = {
    MemcpyOverlapMode.DEFAULT: lib.CU_MEMCPY_FLAG_DEFAULT,
    MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE: lib.CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE,
}


def copy_one(c_dst: int, c_src: int, size: int, s: Stream, options: object, what: str) -> None:
    """Copy ``size`` bytes on open stream ``s``, honouring ``options`` where the driver can.

    ``options`` None is a plain ``cuMemcpyAsync``.  A :class:`CopyOptions`
    goes to ``cuMemcpyWithAttributesAsync`` with a CUDA 13.2 or newer
    driver; with an older one the copy is a ``cuMemcpyAsync``, which keeps
    ``STREAM`` and ``ANY`` access orders and drops the hints, and
    ``DURING_API_CALL`` is refused.  ``what`` names the method in messages.

    Raises
    ------
    TypeError
        For ``options`` that are not CopyOptions, and, with options, for the
        legacy default stream or a capturing stream.
    RuntimeError
        For ``DURING_API_CALL`` without ``cuMemcpyWithAttributesAsync``.
    """
    if options is None:
        if size:
            check(lib.cuMemcpyAsync(c_dst, c_src, size, s._handle))
        return
    if not isinstance(options, CopyOptions):
        raise TypeError(f"{what}: options must be CopyOptions, got {type(options).__name__}")
    if s._h in _LEGACY_HANDLES:
        raise TypeError(
            f"{what} does not accept LEGACY_DEFAULT_STREAM with options (as copy_batch): "
            "cuMemcpyWithAttributesAsync refuses the legacy default stream "
            "(PER_THREAD_DEFAULT_STREAM is accepted); pass an explicit stream, "
            "PER_THREAD_DEFAULT_STREAM, or options=None"
        )
    if _is_capturing(s):
        raise TypeError(
            f"{what} does not support graph capture with options (as copy_batch): the driver "
            "has no graph node for cuMemcpyWithAttributesAsync; use GraphNode.memcpy for a "
            "plain copy node, or pass options=None"
        )
    if current_driver_version() >= _WITH_ATTRIBUTES_DRIVER:
        c_attr = ffi.new("CUmemcpyAttributes *")
        _fill_attributes(c_attr, options)
        if size:
            check(
                lib.cuMemcpyWithAttributesAsync(c_dst, c_src, size, c_attr, s._handle),
                "cuMemcpyWithAttributesAsync",
            )
        return
    _reject_unsupported_during_api_call(options.src_access_order, _SINGLE_FALLBACK_REQUIREMENT)
    if size:
        check(lib.cuMemcpyAsync(c_dst, c_src, size, s._handle))


def _is_capturing(s: Stream) -> bool:
    """Whether stream ``s`` is capturing into a graph."""
    c_status = ffi.new("CUstreamCaptureStatus *")
    check(lib.cuStreamIsCapturing(s._handle, c_status), "cuStreamIsCapturing")
    return c_status[0] == lib.CU_STREAM_CAPTURE_STATUS_ACTIVE  # type: ignore[no-any-return]  # lib is Any


def _normalize_copy_options(options: object, n: int) -> tuple[CopyOptions, ...]:
    """Return one :class:`CopyOptions` per copy (a tuple of ``n``).

    ``None`` and a single :class:`CopyOptions` apply to every copy; a
    sequence pairs with the copies by index and must have length ``n``.
    """
    if options is None:
        return (_DEFAULT_OPTIONS,) * n
    if isinstance(options, CopyOptions):
        return (options,) * n
    if isinstance(options, Sequence) and not isinstance(options, (str, bytes)):
        if len(options) != n:
            raise ValueError(
                f"copy_batch: options length {len(options)} does not match buffers length {n}"
            )
        for item in options:
            if not isinstance(item, CopyOptions):
                raise TypeError(
                    f"copy_batch: each options element must be CopyOptions, got "
                    f"{type(item).__name__}"
                )
        return tuple(options)
    raise TypeError(
        "copy_batch: options must be CopyOptions or a sequence of CopyOptions, got "
        f"{type(options).__name__}"
    )


def _reject_unsupported_during_api_call(
    src_access_order: MemcpySrcAccessOrder | str, requirement: str, *, index: int | None = None
) -> None:
    """Refuse ``DURING_API_CALL`` where copies fall back to plain ``cuMemcpyAsync``.

    ``STREAM`` and ``ANY`` promise nothing a stream-ordered copy does not
    give, so the fallback honours them; ``DURING_API_CALL`` promises that the
    source is read before the call returns, which a stream-ordered copy
    cannot, and a caller relying on it would reuse the source too early.
    ``requirement`` says what the native path needs; ``index`` names the
    copy within a batch.

    Raises
    ------
    RuntimeError
        For ``DURING_API_CALL``.
    """
    if src_access_order != MemcpySrcAccessOrder.DURING_API_CALL:
        return
    where = f" at index {index}" if index is not None else ""
    raise RuntimeError(
        f"src_access_order=DURING_API_CALL{where} requires {requirement}. Without it each "
        "copy is a stream-ordered cuMemcpyAsync, which cannot guarantee that the source is "
        "read before the call returns; use src_access_order=STREAM or ANY, or omit options"
    )


def _fill_attributes(c_attr: Any, options: CopyOptions) -> None:
    """Write ``options`` into the ``CUmemcpyAttributes`` struct ``c_attr`` (zeroed)."""
    c_attr.srcAccessOrder = _ORDER_TO_DRIVER[options.src_access_order]
    c_attr.flags = _OVERLAP_TO_FLAGS[options.overlap_mode]
    src = location_pair(options.src_location_hint, allow_none=True)
    if src is not None:
        c_attr.srcLocHint.type, c_attr.srcLocHint.id = src
    dst = location_pair(options.dst_location_hint, allow_none=True)
    if dst is not None:
        c_attr.dstLocHint.type, c_attr.dstLocHint.id = dst
