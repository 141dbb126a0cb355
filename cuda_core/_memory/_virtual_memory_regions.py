# SPDX-License-Identifier: Apache-2.0
"""The bookkeeping of one virtual memory allocation, and its rollback.

A :class:`~cuda_core.VirtualMemoryResource` allocation is one or more
address reservations with physical memory mapped into them (:class:`_Region`);
:func:`_release_region` unmaps and frees them all.  :class:`_Undo` undoes the
driver calls of an allocation or a resize that failed part way.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Callable, Literal

from cuda_core._cuda_ffi import lib
from cuda_core._errors import CUDAWarning, check

if TYPE_CHECKING:
    from types import TracebackType

    from typing_extensions import Self

__all__: list[str] = []


class _Region:
    """The address reservations and mappings that make up one allocation."""

    __slots__ = ("reservations", "mappings", "total")
    reservations: list[tuple[int, int]]  # (address, size)
    mappings: list[tuple[int, int]]
    total: int

    def __init__(self) -> None:
        self.reservations = []
        self.mappings = []
        self.total = 0


class _Undo:
    """Run registered undo steps in reverse unless committed."""

    def __init__(self) -> None:
        self.steps: list[tuple[Callable[..., int], tuple[int, ...]]] = []

    def __enter__(self) -> Self:
        return self

    def add(self, fn: Callable[..., int], *args: int) -> None:
        self.steps.append((fn, args))

    def commit(self) -> None:
        self.steps.clear()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        for fn, args in reversed(self.steps):
            status = fn(*args)
            if status:
                warnings.warn(
                    f"rolling back a failed virtual memory operation: {fn.__name__} returned "
                    f"status {status}",
                    CUDAWarning,
                    stacklevel=3,
                )
        self.steps.clear()
        return False


def _release_region(region: _Region) -> None:
    """Unmap every mapping and free every reservation of an allocation."""
    errors: list[tuple[str, int]] = []
    for va, size in region.mappings:
        status = lib.cuMemUnmap(va, size)
        if status:
            errors.append(("cuMemUnmap", status))
    for va, size in region.reservations:
        status = lib.cuMemAddressFree(va, size)
        if status:
            errors.append(("cuMemAddressFree", status))
    if errors:
        what, status = errors[0]
        check(status, what)
