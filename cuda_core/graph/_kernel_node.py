# SPDX-License-Identifier: Apache-2.0
"""Kernel launch nodes of a graph definition: :class:`KernelNode`.

Added by :meth:`GraphNode.launch <cuda_core.graph.GraphNode.launch>`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cuda_core._coerce import as_int_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._kernel import Kernel
from cuda_core._launch_config import LaunchConfig
from cuda_core.graph._graph_node import GraphNode
from cuda_core.graph._node_params import _kernel_params
from cuda_core.graph._node_registry import _register

__all__ = ["KernelNode"]


@_register(lib.CU_GRAPH_NODE_TYPE_KERNEL)
class KernelNode(GraphNode):
    """A kernel launch node.

    Properties ``grid``, ``block`` and ``shmem_size`` are recorded when the
    node is made (and stay readable after it is destroyed); ``kernel`` is the
    :class:`~cuda_core.Kernel` it launches and ``config`` a
    :class:`~cuda_core.LaunchConfig` rebuilt from the node.
    """

    __slots__ = ("_kernel", "_launch", "_kern_h")
    _extra = ("_kernel", "_launch", "_kern_h")
    _kernel: Kernel | None
    _launch: tuple[tuple[int, int, int], tuple[int, int, int], int]
    _kern_h: int

    def _repr_fields(self) -> str:
        return f" kernel={self._kern_h:#x}"

    def _params(self) -> Any:
        self._check_valid()
        p = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
        check(lib.cuGraphKernelNodeGetParams(self._node, p))
        return p

    def _load(self) -> None:
        p = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
        check(lib.cuGraphKernelNodeGetParams(self._node, p))
        self._launch = (
            (p.gridDimX, p.gridDimY, p.gridDimZ),
            (p.blockDimX, p.blockDimY, p.blockDimZ),
            p.sharedMemBytes,
        )
        self._kern_h = as_int_handle(p.kern) if p.kern != ffi.NULL else 0

    @property
    def grid(self) -> tuple[int, int, int]:
        """tuple of int: Grid dimensions in blocks (x, y, z)."""
        return self._launch[0]

    @property
    def block(self) -> tuple[int, int, int]:
        """tuple of int: Block dimensions (x, y, z)."""
        return self._launch[1]

    @property
    def shmem_size(self) -> int:
        """int: Dynamic shared memory per block, in bytes."""
        return self._launch[2]

    @property
    def kernel(self) -> Kernel | None:
        """Kernel or None: The launched kernel (None if the node launches a bare ``CUfunction``)."""
        if self._kernel is None and self._kern_h:
            self._kernel = Kernel.from_handle(self._kern_h)
        return self._kernel

    @property
    def config(self) -> LaunchConfig:
        """LaunchConfig: ``grid``, ``block`` and ``shmem_size`` of this node.

        Cluster dimensions and cooperative launches are not kept by kernel
        nodes, so they are not part of it.
        """
        grid, block, shmem = self._launch
        return LaunchConfig(grid=grid, block=block, shmem_size=shmem)

    def update(
        self,
        *,
        config: LaunchConfig | dict[str, Any] | None = None,
        kernel: Kernel | None = None,
        args: Iterable[Any] | None = None,
    ) -> None:
        """Replace parameters of this node for future instantiations.

        Executable graphs already instantiated keep the old parameters (use
        ``graph[node].update(...)`` for those).  Omitted parameters keep
        their values; changing the kernel needs its arguments too
        (``args=()`` for a kernel without parameters).  This is a cuda_core
        extension.

        Parameters
        ----------
        config : LaunchConfig or dict, optional
        kernel : Kernel, optional
        args : sequence, optional
            The complete new argument list.

        Raises
        ------
        TypeError
            If ``kernel`` is given without ``args``, or for wrong types.
        """
        if kernel is not None and args is None:
            raise TypeError(
                "changing the kernel needs its arguments too: pass args= (args=() for a "
                "kernel without parameters)"
            )
        current = self._params()
        if kernel is None and args is not None:
            kernel = self.kernel
            if kernel is None:
                raise ValueError("the node's kernel is unknown; pass kernel= with args=")
        params, owners, used = _kernel_params(
            config if config is not None else self.config,
            kernel,
            args,
            current=current,
        )
        keep = self._kernel if used is None else used
        self._set_params(
            owners,
            lambda: lib.cuGraphKernelNodeSetParams(self._node, params),
            keep_current=args is None,
        )
        self._kernel = keep
