# SPDX-License-Identifier: Apache-2.0
"""Kernels: :class:`Kernel`, :class:`KernelAttributes`, :class:`KernelOccupancy`.

A :class:`Kernel` wraps a context-independent ``CUkernel`` taken from a
loaded library (:meth:`ObjectCode.get_kernel
<cuda_core.ObjectCode.get_kernel>`).  It is launched as is (the driver picks
the context of the launch stream); queries that need a context-bound
``CUfunction`` (occupancy) get one with ``cuKernelGetFunction`` for the
current context, cached per context.

A kernel also carries the launch machinery's per-kernel caches: its
parameter layout (``cuKernelGetParamInfo``) and the argument plans that
:func:`~cuda_core.launch` builds for each combination of argument types.
"""

from __future__ import annotations

import weakref
from collections import namedtuple

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check
from cuda_core._utils import as_int_handle, check_nonnegative_int, index_or_none

__all__ = [
    "Kernel",
    "KernelAttributes",
    "KernelOccupancy",
    "MaxPotentialBlockSizeOccupancyResult",
    "ParamInfo",
]

#: One kernel parameter: its byte offset in the parameter block and its size.
ParamInfo = namedtuple("ParamInfo", ["offset", "size"])

#: The result of :meth:`KernelOccupancy.max_potential_block_size`.
MaxPotentialBlockSizeOccupancyResult = namedtuple(
    "MaxPotentialBlockSizeOccupancyResult", ("min_grid_size", "max_block_size")
)

_INVALID_VALUE = 1
_PARAM_INFO_MIN_DRIVER = 12040


class _NoModule:
    """Stands for the ObjectCode of a kernel wrapped without one (never closed)."""

    __slots__ = ()
    _closed = False

    def __repr__(self):
        return "<no ObjectCode>"


_NO_MODULE = _NoModule()


class Kernel:
    """A compiled kernel loaded onto the device, ready for :func:`~cuda_core.launch`.

    Kernels cannot be constructed directly: get them from
    :meth:`ObjectCode.get_kernel <cuda_core.ObjectCode.get_kernel>`, or wrap
    a foreign ``CUkernel`` with :meth:`from_handle`.  A kernel keeps its
    :class:`~cuda_core.ObjectCode` alive; once that object is closed the
    kernel can no longer be used (RuntimeError).  Two Kernel objects are equal
    when they wrap the same ``CUkernel``.

    Raises
    ------
    RuntimeError
        On direct construction.
    """

    __slots__ = (
        "_handle",
        "_h",
        "_mod",
        "_attributes",
        "_occupancy",
        "_param_info",
        "_plans",
        "_plan",
        "_funcs",
        "_coop_limits",
        "__weakref__",
    )

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Kernel objects cannot be instantiated directly. Please use ObjectCode APIs "
            "(ObjectCode.get_kernel) or Kernel.from_handle."
        )

    @classmethod
    def _from_library(cls, c_kernel, mod):
        """Wrap a ``CUkernel`` cdata obtained from ObjectCode ``mod``'s library."""
        from cuda_core._launcher import _NO_PLAN

        self = object.__new__(cls)
        self._handle = ffi.cast("CUkernel", c_kernel)
        self._h = as_int_handle(c_kernel)
        self._mod = _NO_MODULE if mod is None else mod
        self._attributes = None
        self._occupancy = None
        self._param_info = None  # list of ParamInfo, or False where unsupported
        self._plans = {}
        self._plan = _NO_PLAN
        self._funcs = {}
        self._coop_limits = {}
        return self

    def __eq__(self, other):
        if not isinstance(other, Kernel):
            return NotImplemented
        return self._h == other._h

    def __hash__(self):
        return hash(self._h)

    def __repr__(self):
        state = " (closed)" if self._is_closed() else ""
        return f"<Kernel handle={self._h:#x}{state}>"

    @staticmethod
    def from_handle(handle, mod=None):
        """Wrap an existing ``CUkernel`` address.

        Parameters
        ----------
        handle : int
            The address of a ``CUkernel`` (e.g. from another library).
        mod : ObjectCode, optional
            The code object the kernel comes from; it is kept alive with the
            kernel.  Without it, keeping the kernel's library loaded is the
            caller's responsibility.

        Returns
        -------
        Kernel

        Raises
        ------
        TypeError
            If ``handle`` is not an int.
        ValueError
            If ``handle`` is negative or zero.
        """
        if isinstance(handle, bool) or not isinstance(handle, int):
            raise TypeError(f"handle must be an integer, got {type(handle).__name__}")
        if handle <= 0:
            raise ValueError(f"handle must be the address of a CUkernel, got {handle}")
        if mod is not None and not hasattr(mod, "_closed"):
            raise TypeError(f"mod must be an ObjectCode or None, not {type(mod).__name__}")
        return Kernel._from_library(ffi.cast("CUkernel", handle), mod)

    def _is_closed(self):
        return self._mod._closed

    def _require_open(self):
        if self._is_closed():
            raise RuntimeError(
                "Kernel is closed: the ObjectCode it came from was closed, so it cannot "
                "be used any more"
            )

    def _function(self):
        """Return the ``CUfunction`` of this kernel in the current context (cached)."""
        self._require_open()
        out = ffi.new("CUcontext *")
        check(lib.cuCtxGetCurrent(out))
        if out[0] == ffi.NULL:
            raise CUDAError(
                "no CUDA context is current; call Device.set_current() before querying "
                "kernel occupancy"
            )
        key = as_int_handle(out[0])
        func = self._funcs.get(key)
        if func is None:
            pfunc = ffi.new("CUfunction *")
            check(lib.cuKernelGetFunction(pfunc, self._handle))
            func = self._funcs[key] = pfunc[0]
        return func

    def _get_param_info(self):
        """Return the list of ParamInfo (cached).

        ``cuKernelGetParamInfo`` is called for index 0, 1, ... until it
        reports ``CUDA_ERROR_INVALID_VALUE``, which is accepted only as the end
        of the list: the handle is checked to be valid, the next index must
        fail the same way, and the layout must be consistent (increasing,
        non-overlapping offsets).  Any other failure raises.

        Raises
        ------
        NotImplementedError
            With a driver older than CUDA 12.4 (the API does not exist).
        CUDAError
            For any other failure.
        """
        info = self._param_info
        if info is False:
            raise NotImplementedError(_param_info_unsupported_message())
        if info is not None:
            return info
        self._require_open()
        from cuda_core._loader import driver_version

        if driver_version() < _PARAM_INFO_MIN_DRIVER:
            self._param_info = False
            raise NotImplementedError(_param_info_unsupported_message())
        offset = ffi.new("size_t *")
        size = ffi.new("size_t *")
        result = []
        index = 0
        while True:
            status = lib.cuKernelGetParamInfo(self._handle, index, offset, size)
            if status == 0:
                result.append(ParamInfo(offset=int(offset[0]), size=int(size[0])))
                index += 1
                continue
            if status != _INVALID_VALUE:
                check(status, f"cuKernelGetParamInfo(index={index})")
            break
        # INVALID_VALUE at ``index``: accept it as the end of the list only when
        # it is consistent with being the end.
        _confirm_end_of_params(self._handle, index, result, offset, size)
        self._param_info = result
        return result

    def _param_info_or_none(self):
        """Return the parameter layout, or None where the driver cannot tell it."""
        info = self._param_info
        if info is False:
            return None
        if info is not None:
            return info
        try:
            return self._get_param_info()
        except NotImplementedError:
            return None

    @property
    def attributes(self):
        """KernelAttributes: The kernel's per-device attributes (read-only).

        The default view refers to the current device, resolved each time an
        attribute is read; ``kernel.attributes[device]`` gives a view of
        another device (a :class:`~cuda_core.Device` or an ordinal).  Values
        are cached, in one cache shared by all views; once the kernel's
        :class:`~cuda_core.ObjectCode` is closed, reading any attribute (cached
        or not) raises RuntimeError.
        """
        attrs = self._attributes
        if attrs is None:
            attrs = self._attributes = KernelAttributes._init(self)
        return attrs

    @property
    def num_arguments(self):
        """int: The number of parameters of the kernel (driver 12.4 or newer)."""
        return len(self._get_param_info())

    @property
    def arguments_info(self):
        """list of ParamInfo: ``(offset, size)`` of each kernel parameter (driver 12.4+)."""
        return list(self._get_param_info())

    @property
    def occupancy(self):
        """KernelOccupancy: Occupancy queries for launching this kernel."""
        occ = self._occupancy
        if occ is None:
            occ = self._occupancy = KernelOccupancy._init(self)
        return occ

    @property
    def handle(self):
        """int: The address of the underlying ``CUkernel``."""
        return self._h


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

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "KernelAttributes cannot be instantiated directly. Please use Kernel.attributes."
        )

    @classmethod
    def _init(cls, kernel, cache=None, device_id=None):
        self = object.__new__(cls)
        self._kernel_ref = weakref.ref(kernel)
        self._cache = {} if cache is None else cache
        self._device_id = device_id
        return self

    def __getitem__(self, device):
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
        from cuda_core._device import Device

        if isinstance(device, Device):
            device_id = device.device_id
        else:
            index = index_or_none(device)
            if index is None:
                raise TypeError(f"device must be a Device or an int, not {type(device).__name__}")
            device_id = Device(index).device_id
        kernel = self._kernel()
        return KernelAttributes._init(kernel, self._cache, device_id)

    def __repr__(self):
        where = "current device" if self._device_id is None else f"device {self._device_id}"
        return f"<KernelAttributes of {self._kernel()!r} on {where}>"

    def _kernel(self):
        kernel = self._kernel_ref()
        if kernel is None:
            raise RuntimeError("Cannot access kernel attributes for expired Kernel object")
        return kernel

    def _get(self, attribute):
        device_id = self._device_id
        if device_id is None:
            from cuda_core._device import Device

            device_id = Device().device_id
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
    def max_threads_per_block(self):
        """int: The maximum number of threads per block this kernel can be launched with."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)

    @property
    def shared_size_bytes(self):
        """int: Statically allocated shared memory per block, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)

    @property
    def const_size_bytes(self):
        """int: User-allocated constant memory used by the kernel, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)

    @property
    def local_size_bytes(self):
        """int: Local memory per thread, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)

    @property
    def num_regs(self):
        """int: Registers per thread."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_NUM_REGS)

    @property
    def ptx_version(self):
        """int: The PTX virtual architecture the kernel was compiled for (e.g. 90)."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_PTX_VERSION)

    @property
    def binary_version(self):
        """int: The binary architecture the kernel was compiled for (e.g. 90)."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_BINARY_VERSION)

    @property
    def cache_mode_ca(self):
        """bool: Whether the kernel was compiled with ``-Xptxas --dlcm=ca``."""
        return bool(self._get(lib.CU_FUNC_ATTRIBUTE_CACHE_MODE_CA))

    @property
    def max_dynamic_shared_size_bytes(self):
        """int: The largest dynamic shared memory per block the kernel may use, in bytes."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)

    @property
    def preferred_shared_memory_carveout(self):
        """int: The preferred shared memory carveout, in percent of the maximum."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)

    @property
    def cluster_size_must_be_set(self):
        """bool: Whether the kernel must be launched with a cluster size."""
        return bool(self._get(lib.CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET))

    @property
    def required_cluster_width(self):
        """int: The cluster width (in blocks) the kernel was compiled to require, or 0."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)

    @property
    def required_cluster_height(self):
        """int: The cluster height (in blocks) the kernel was compiled to require, or 0."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)

    @property
    def required_cluster_depth(self):
        """int: The cluster depth (in blocks) the kernel was compiled to require, or 0."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)

    @property
    def non_portable_cluster_size_allowed(self):
        """bool: Whether the kernel may be launched with a non-portable cluster size."""
        return bool(self._get(lib.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED))

    @property
    def cluster_scheduling_policy_preference(self):
        """int: The block scheduling policy preference (a ``CUclusterSchedulingPolicy`` value)."""
        return self._get(lib.CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE)


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

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "KernelOccupancy cannot be instantiated directly. Please use Kernel.occupancy."
        )

    @classmethod
    def _init(cls, kernel):
        self = object.__new__(cls)
        self._kernel = kernel
        return self

    def max_active_blocks_per_multiprocessor(self, block_size, dynamic_shared_memory_size):
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

    def max_potential_block_size(self, dynamic_shared_memory_needed, block_size_limit):
        """Suggest a block size that reaches the maximum occupancy.

        Parameters
        ----------
        dynamic_shared_memory_needed : int or callable
            Dynamic shared memory per block, in bytes, or, when it depends on
            the block size, a function ``f(block_size) -> bytes``: a cffi
            ``CUoccupancyB2DSize`` function pointer, or a Python callable
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

    def available_dynamic_shared_memory_per_block(self, num_blocks_per_multiprocessor, block_size):
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

    def max_potential_cluster_size(self, config, *, stream):
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

    def max_active_clusters(self, config, *, stream):
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

    def _cluster_query(self, fn, config, stream):
        from cuda_core._launch_config import _coerce_config
        from cuda_core._stream import _as_open_stream

        config = _coerce_config(config)
        s = _as_open_stream(stream)
        c_config, keep = config._to_cu_launch_config(s._handle)
        out = ffi.new("int *")
        check(fn(out, self._kernel._function(), c_config))
        del keep
        return int(out[0])


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
def _int_arg(what, value):
    return check_nonnegative_int(value, what)


def _b2d_callback(fn):
    """Wrap a Python ``f(block_size) -> bytes`` as a ``CUoccupancyB2DSize`` callback."""

    def call(block_size):
        return int(fn(block_size))

    return ffi.callback("CUoccupancyB2DSize", call, error=0)


def _param_info_unsupported_message():
    from cuda_core._loader import driver_version

    ver = driver_version()
    return (
        "Driver version 12.4 or newer is required for this function (cuKernelGetParamInfo). "
        f"Using driver version {ver // 1000}.{(ver % 1000) // 10}"
    )


def _confirm_end_of_params(c_kernel, count, result, offset, size):
    """Check that INVALID_VALUE at index ``count`` really marks the end of the list.

    Raises CUDAError when it does not: the kernel handle must be valid, index
    ``count + 1`` must fail the same way, and the offsets found so far must
    be increasing and non-overlapping.
    """
    # A valid handle: any attribute query succeeds (an invalid one raises here).
    out = ffi.new("int *")
    dev = ffi.new("CUdevice *")
    if lib.cuCtxGetDevice(dev) == 0:
        check(
            lib.cuKernelGetAttribute(out, lib.CU_FUNC_ATTRIBUTE_NUM_REGS, c_kernel, dev[0]),
            "cuKernelGetAttribute (validating the kernel while enumerating its parameters)",
        )
    status = lib.cuKernelGetParamInfo(c_kernel, count + 1, offset, size)
    if status != _INVALID_VALUE:
        raise CUDAError(
            f"cuKernelGetParamInfo reported the end of the parameter list at index {count} "
            f"but returned status {status} for index {count + 1}: inconsistent parameter "
            "enumeration"
        )
    end = 0
    for i, p in enumerate(result):
        if p.offset < end:
            raise CUDAError(
                f"cuKernelGetParamInfo returned overlapping parameters (parameter {i} at "
                f"offset {p.offset}, previous one ends at {end})"
            )
        end = p.offset + p.size
