# SPDX-License-Identifier: Apache-2.0
"""Kernel attributes: :class:`KernelAttributes`, read through ``cuKernelGetAttribute``.

A kernel's attributes (registers, shared and local memory, the
architecture it was built for, cluster requirements) are per device.  The
view from :attr:`Kernel.attributes <cuda_core.Kernel.attributes>` reads them
for the current device; indexing it gives a view bound to another device.
Values are queried once per device and attribute, in a cache shared by all
views of one kernel.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import cuda_core._slots as _slots
from cuda_core._coerce import index_or_none
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check

if TYPE_CHECKING:
    from cuda_core._device import Device
    from cuda_core._kernel import Kernel

__all__ = ["KernelAttributes"]


class KernelAttributes:
    """Read-only view of a kernel's per-device attributes (``cuKernelGetAttribute``).

    The view returned by :attr:`Kernel.attributes` is bound to the current
    device, resolved when an attribute is read (the device of the current
    context, or device 0 when none is current, as :class:`~cuda_core.Device`
    does).  ``attributes[device]`` returns a view bound to ``device`` (a
    :class:`~cuda_core.Device` or an int ordinal).  All views of one kernel
    share a cache, so a value is queried from the driver once per device.

    Raises
    ------
    RuntimeError
        On direct construction, or when the kernel no longer exists or is
        closed.
    """

    __slots__ = ("_kernel_ref", "_cache", "_device_id")

    _kernel_ref: weakref.ref[Kernel]
    _cache: dict[tuple[int, int], int]
    _device_id: int | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "KernelAttributes cannot be instantiated directly. Please use Kernel.attributes."
        )

    @classmethod
    def _init(
        cls,
        kernel: Kernel,
        cache: dict[tuple[int, int], int] | None = None,
        device_id: int | None = None,
    ) -> KernelAttributes:
        self = object.__new__(cls)
        self._kernel_ref = weakref.ref(kernel)
        self._cache = {} if cache is None else cache
        self._device_id = device_id
        return self

    def __getitem__(self, device: Device | int) -> KernelAttributes:
        """Return a view of these attributes bound to ``device``.

        Parameters
        ----------
        device : Device or int
            The device (or its ordinal) whose attributes to read.

        Returns
        -------
        KernelAttributes
            A view sharing this view's cache.
        """
        if isinstance(device, _slots.device_class()):
            device_id = device.device_id
        else:
            index = index_or_none(device)
            if index is None:
                raise TypeError(f"device must be a Device or an int, not {type(device).__name__}")
            device_id = _slots.device_class()(index).device_id
        kernel = self._kernel()
        return KernelAttributes._init(kernel, self._cache, device_id)

    def __repr__(self) -> str:
        where = "current device" if self._device_id is None else f"device {self._device_id}"
        return f"<KernelAttributes of {self._kernel()!r} on {where}>"

    def _kernel(self) -> Kernel:
        kernel = self._kernel_ref()
        if kernel is None:
            raise RuntimeError("Cannot access kernel attributes for expired Kernel object")
        return kernel

    def _get(self, attribute: int) -> int:
        device_id = self._device_id
        if device_id is None:
            device_id = _slots.device_class()().device_id
        kernel = self._kernel()
        kernel._require_open()  # cached values too: a closed kernel has no attributes
        key = (device_id, attribute)
        value = self._cache.get(key)
        if value is None:
            out = ffi.new("int *")
            check(
                lib.cuKernelGetAttribute(out, attribute, kernel._handle, device_id),
                "cuKernelGetAttribute",
            )
            value = self._cache[key] = int(out[0])
        return value

    @property
    def max_threads_per_block(self) -> int:
        """int: The maximum number of threads per block this kernel can be launched with."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def shared_size_bytes(self) -> int:
        """int: Statically allocated shared memory per block, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)

    @property
    def const_size_bytes(self) -> int:
        """int: User-allocated constant memory used by the kernel, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)

    @property
    def local_size_bytes(self) -> int:
        """int: Local memory per thread, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    @property
    def num_regs(self) -> int:
        """int: Registers per thread."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_NUM_REGS)

    @property
    def ptx_version(self) -> int:
        """int: The PTX virtual architecture the kernel was compiled for (e.g. 90)."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_PTX_VERSION)

    @property
    def binary_version(self) -> int:
        """int: The binary architecture the kernel was compiled for (e.g. 90)."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_BINARY_VERSION)

    @property
    def cache_mode_ca(self) -> bool:
        """bool: Whether the kernel was compiled with ``-Xptxas --dlcm=ca``."""
        return bool(self._get(lib.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA))

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        """int: The largest dynamic shared memory per block the kernel may use, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @property
    def preferred_shared_memory_carveout(self) -> int:
        """int: The preferred shared memory carveout, in percent of the maximum."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)

    @property
    def cluster_size_must_be_set(self) -> bool:
        """bool: Whether the kernel must be launched with a cluster size."""
        return bool(self._get(lib.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET))

    @property
    def required_cluster_width(self) -> int:
        """int: The cluster width (in blocks) the kernel was compiled to require, or 0."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)

    @property
    def required_cluster_height(self) -> int:
        """int: The cluster height (in blocks) the kernel was compiled to require, or 0."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)

    @property
    def required_cluster_depth(self) -> int:
        """int: The cluster depth (in blocks) the kernel was compiled to require, or 0."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)

    @property
    def non_portable_cluster_size_allowed(self) -> bool:
        """bool: Whether the kernel may be launched with a non-portable cluster size."""
        return bool(self._get(lib.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED))

    @property
    def cluster_scheduling_policy_preference(self) -> int:
        """int: The block scheduling policy preference (a ``CUclusterSchedulingPolicy`` value)."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)
