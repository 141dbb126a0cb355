# SPDX-License-Identifier: Apache-2.0
"""Stream options: :class:`StreamOptions` and the device's priority range.

The options of :meth:`Device.create_stream
<cuda_core.Device.create_stream>` are validated on construction (types); the
priority is checked against the device's range (``cuCtxGetStreamPriorityRange``,
read once per device) when the stream is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cuda_core._coerce import as_flag, index_or_none
from cuda_core._context import _pop, _push_if_needed
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check

if TYPE_CHECKING:
    from cuda_core._context import Context

__all__ = ["StreamOptions"]

# device ordinal -> (least priority, greatest priority); device-wide facts.
_PRIORITY_RANGES: dict[int, tuple[int, int]] = {}
_LEAST_PRIORITY: dict[int, int] = {}  # device ordinal -> default (lowest) priority


@dataclass
class StreamOptions:
    """Options for :meth:`Device.create_stream <cuda_core.Device.create_stream>`.

    Attributes
    ----------
    nonblocking : bool, optional
        The stream does not synchronize with the legacy default (NULL)
        stream (default True).
    priority : int, optional
        Stream priority; a lower number is a higher priority.  None (the
        default) means the lowest priority.  The allowed range comes from the
        device (``cuCtxGetStreamPriorityRange``); values outside it raise
        ValueError at stream creation.

    Raises
    ------
    TypeError
        When ``nonblocking`` is not a bool or ``priority`` is not an int or None.
    """

    nonblocking: bool = True
    priority: int | None = None

    def __post_init__(self) -> None:
        self.nonblocking = as_flag(self.nonblocking, "StreamOptions.nonblocking")
        priority = self.priority
        if priority is not None:
            index = index_or_none(priority)
            if index is None:
                raise TypeError(
                    "StreamOptions.priority must be an int or None, got "
                    f"{priority!r} of type {type(priority).__name__}"
                )
            self.priority = index


def _priority_range(ctx: Context) -> tuple[int, int]:
    """Return (least, greatest) stream priority on ``ctx``'s device (cached per device)."""
    rng = _PRIORITY_RANGES.get(ctx._device_id)
    if rng is None:
        least = ffi.new("int *")
        greatest = ffi.new("int *")
        pushed = _push_if_needed(ctx._handle)
        try:
            check(lib.cuCtxGetStreamPriorityRange(least, greatest))
        finally:
            if pushed:
                _pop()
        rng = _PRIORITY_RANGES[ctx._device_id] = (least[0], greatest[0])
        _LEAST_PRIORITY[ctx._device_id] = least[0]
    return rng


def _checked_priority(ctx: Context, priority: int | None) -> int:
    """Return ``priority`` (None: the least) after checking it against ``ctx``'s device range."""
    least, greatest = _priority_range(ctx)
    if priority is None:
        return least
    if not greatest <= priority <= least:
        raise ValueError(
            f"priority={priority} is out of range [{greatest}, {least}] for device "
            f"{ctx._device_id} (a lower number is a higher priority)"
        )
    return priority
