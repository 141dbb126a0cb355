# SPDX-License-Identifier: Apache-2.0
"""Kernel occupancy: :class:`KernelOccupancy` and its block-size suggestion.

The queries help choose block size, grid size and dynamic shared memory for
a kernel.  They go through the kernel's context-bound ``CUfunction`` for the
current context (see ``Kernel._function``), so a device must be current.
"""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from cuda_core._coerce import check_nonnegative_int, index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._launch_config import _coerce_config
from cuda_core._stream import _as_stream

if TYPE_CHECKING:
    from typing import Any, Callable

    from cuda_core._kernel import Kernel
    from cuda_core._launch_config import LaunchConfig
    from cuda_core._stream import Stream

__all__ = ["KernelOccupancy", "MaxPotentialBlockSizeOccupancyResult"]

#: The result of :meth:`KernelOccupancy.max_potential_block_size`.
MaxPotentialBlockSizeOccupancyResult = namedtuple(
    "MaxPotentialBlockSizeOccupancyResult", ("min_grid_size", "max_block_size")
)


class KernelOccupancy:
    """Occupancy queries that help choose block size, grid size and shared memory.

    The queries use the kernel's ``CUfunction`` in the current context (so a
    device must be current: :meth:`Device.set_current
    <cuda_core.Device.set_current>`).

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = ("_kernel",)

    _kernel: Kernel

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "KernelOccupancy cannot be instantiated directly. Please use Kernel.occupancy."
        )

    @classmethod
    def _init(cls, kernel: Kernel) -> KernelOccupancy:
        self = object.__new__(cls)
        self._kernel = kernel
        return self

    def max_active_blocks_per_multiprocessor(
        self, block_size: int, dynamic_shared_memory_size: int
    ) -> int:
        """Return the maximum number of resident blocks per multiprocessor.

        Parameters
        ----------
        block_size : int
            Threads per block.
        dynamic_shared_memory_size : int
            Dynamic shared memory per block, in bytes (0 for none).

        Returns
        -------
        int
            Blocks of this kernel that fit on one multiprocessor at once.  That
            number times ``block_size`` over the multiprocessor's thread limit
            is the theoretical occupancy.
        """
        block_size = _int_arg("block_size", block_size)
        shmem = _int_arg("dynamic_shared_memory_size", dynamic_shared_memory_size)
        out = ffi.new("int *")
        check(
            lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                out, self._kernel._function(), block_size, shmem
            )
        )
        return int(out[0])

    def max_potential_block_size(
        self, dynamic_shared_memory_needed: int | Callable[[int], int] | Any, block_size_limit: int
    ) -> MaxPotentialBlockSizeOccupancyResult:
        """Suggest a block size that reaches the maximum occupancy.

        Parameters
        ----------
        dynamic_shared_memory_needed : int or callable
            Dynamic shared memory per block, in bytes, or, when it depends on
            the block size, a function ``f(block_size) -> bytes``: a
            ``cuda.bindings`` ``CUoccupancyB2DSize`` (as in ``cuda.core``), a
            cffi ``CUoccupancyB2DSize`` function pointer, or a Python callable
            (wrapped in a cffi callback; the driver calls it while the GIL is
            released, so it must not block on other Python threads).
        block_size_limit : int
            The largest block size the kernel is designed for (0: no limit).

        Returns
        -------
        MaxPotentialBlockSizeOccupancyResult
            ``(min_grid_size, max_block_size)``: the smallest grid that
            reaches the maximum occupancy, and the block size that does.

        Raises
        ------
        TypeError
            If ``dynamic_shared_memory_needed`` is neither an int nor callable.
        """
        limit = _int_arg("block_size_limit", block_size_limit)
        min_grid = ffi.new("int *")
        block = ffi.new("int *")
        callback = ffi.NULL
        shmem = 0
        keep = None
        needed = dynamic_shared_memory_needed
        if isinstance(needed, ffi.CData):
            callback = ffi.cast("CUoccupancyB2DSize", needed)
        elif type(needed).__name__ == "CUoccupancyB2DSize" and hasattr(needed, "getPtr"):
            # cuda.bindings' function pointer object: getPtr() gives the
            # function's address, as cuda.core reads it.
            callback = ffi.cast("CUoccupancyB2DSize", int(needed.getPtr()))
        elif callable(needed):
            keep = _b2d_callback(needed)
            callback = keep
        elif index_or_none(needed) is not None:
            shmem = _int_arg("dynamic_shared_memory_needed", needed)
        else:
            raise TypeError(
                "dynamic_shared_memory_needed expected to have type int, or a callable / "
                f"CUoccupancyB2DSize function pointer, got {type(needed).__name__}"
            )
        func = self._kernel._function()
        check(lib.cuOccupancyMaxPotentialBlockSize(min_grid, block, func, callback, shmem, limit))
        del keep
        return MaxPotentialBlockSizeOccupancyResult(
            min_grid_size=int(min_grid[0]), max_block_size=int(block[0])
        )

    def available_dynamic_shared_memory_per_block(
        self, num_blocks_per_multiprocessor: int, block_size: int
    ) -> int:
        """Return the dynamic shared memory available per block, in bytes.

        Parameters
        ----------
        num_blocks_per_multiprocessor : int
            Blocks meant to be resident on one multiprocessor at once.
        block_size : int
            Threads per block.

        Returns
        -------
        int
        """
        nblocks = _int_arg("num_blocks_per_multiprocessor", num_blocks_per_multiprocessor)
        block_size = _int_arg("block_size", block_size)
        out = ffi.new("size_t *")
        check(
            lib.cuOccupancyAvailableDynamicSMemPerBlock(
                out, self._kernel._function(), nblocks, block_size
            )
        )
        return int(out[0])

    def max_potential_cluster_size(
        self, config: LaunchConfig | dict[str, Any], *, stream: Stream
    ) -> int:
        """Return the largest cluster size this kernel can be launched with.

        Parameters
        ----------
        config : LaunchConfig or dict
            The launch configuration (its cluster dimensions are ignored).
        stream : Stream
            Keyword-only: the stream the kernel is meant for (pass
            ``device.default_stream`` for the default stream).

        Returns
        -------
        int
            The largest number of blocks per cluster.
        """
        return self._cluster_query(lib.cuOccupancyMaxPotentialClusterSize, config, stream)

    def max_active_clusters(self, config: LaunchConfig | dict[str, Any], *, stream: Stream) -> int:
        """Return how many clusters of ``config`` can be resident on the device at once.

        Parameters
        ----------
        config : LaunchConfig or dict
            The launch configuration, with its cluster dimensions.
        stream : Stream
            Keyword-only: the stream the kernel is meant for.

        Returns
        -------
        int
        """
        return self._cluster_query(lib.cuOccupancyMaxActiveClusters, config, stream)

    def _cluster_query(
        self, fn: Callable[..., int], config: LaunchConfig | dict[str, Any], stream: Stream
    ) -> int:
        config = _coerce_config(config)
        s = _as_stream(stream)
        c_config, keep = config._to_cu_launch_config(s._handle)
        out = ffi.new("int *")
        check(fn(out, self._kernel._function(), c_config))
        del keep
        return int(out[0])


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _int_arg(what: str, value: object) -> int:
    return check_nonnegative_int(value, what)


def _b2d_callback(fn: Callable[[int], int]) -> Any:
    """Wrap a Python ``f(block_size) -> bytes`` as a ``CUoccupancyB2DSize`` callback."""

    def call(block_size: int) -> int:
        return int(fn(block_size))

    return ffi.callback("CUoccupancyB2DSize", call, error=0)
