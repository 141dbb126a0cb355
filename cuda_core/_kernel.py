# SPDX-License-Identifier: Apache-2.0
"""Kernels: :class:`Kernel` and its parameter layout (:data:`ParamInfo`).

A :class:`Kernel` wraps a context-independent ``CUkernel`` taken from a
loaded library (:meth:`ObjectCode.get_kernel
<cuda_core.ObjectCode.get_kernel>`).  It is launched as is (the driver picks
the context of the launch stream); queries that need a context-bound
``CUfunction`` (occupancy) get one with ``cuKernelGetFunction`` for the
current context, cached per context.  Its attributes and occupancy queries
are views defined in :mod:`cuda_core._kernel_attributes` and
:mod:`cuda_core._kernel_occupancy`.

A kernel also carries the launch machinery's per-kernel caches: its
parameter layout (``cuKernelGetParamInfo``) and the argument plans that
:func:`~cuda_core.launch` builds for each combination of argument types.
"""

from __future__ import annotations

import warnings
import weakref
from collections import namedtuple
from typing import TYPE_CHECKING, Any

from cuda_core._arg_plan import _NO_PLAN
from cuda_core._coerce import as_int_handle, driver_handle
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check, check_allowing, status_in
from cuda_core._kernel_attributes import KernelAttributes
from cuda_core._kernel_occupancy import KernelOccupancy
from cuda_core._loader import driver_at_least, driver_version, format_cuda_version

if TYPE_CHECKING:
    from typing import Literal

    from cuda_core._arg_plan import _Plan
    from cuda_core._module import ObjectCode

__all__ = ["Kernel", "ParamInfo"]

#: One kernel parameter: its byte offset in the parameter block and its size.
ParamInfo = namedtuple("ParamInfo", ["offset", "size"])

_INVALID_VALUE = (lib.CUDA_ERROR_INVALID_VALUE,)
_MAX_HANDLE = 2 ** (8 * ffi.sizeof("void *")) - 1

#: CUkernel address -> the ObjectCode whose library it came from, for the
#: kernels cuda_core obtained itself (what Kernel.from_handle can know).
_KERNEL_LIBRARIES: weakref.WeakValueDictionary[int, ObjectCode] = weakref.WeakValueDictionary()
_PARAM_INFO_MIN_DRIVER = (12, 4)


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
        If constructed directly instead of by ``ObjectCode.get_kernel``
        or :meth:`from_handle`.
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

    _handle: Any  # CUkernel cdata
    _h: int
    _mod: ObjectCode | _NoModule
    _attributes: KernelAttributes | None
    _occupancy: KernelOccupancy | None
    _param_info: list[ParamInfo] | Literal[False] | None  # False: the driver cannot tell
    _plans: dict[tuple[Any, ...], _Plan]
    _plan: _Plan
    _funcs: dict[int, Any]  # context address -> CUfunction cdata
    _coop_limits: dict[tuple[int, int, int], int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "Kernel objects cannot be instantiated directly. Please use ObjectCode APIs "
            "(ObjectCode.get_kernel) or Kernel.from_handle."
        )

    @classmethod
    def _from_library(cls, c_kernel: Any, mod: ObjectCode | _NoModule | None) -> Kernel:
        """Wrap a ``CUkernel`` cdata obtained from ObjectCode ``mod``'s library."""
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

    @classmethod
    def _from_object_code(cls, c_kernel: Any, mod: ObjectCode) -> Kernel:
        """Wrap a ``CUkernel`` that ``mod.get_kernel`` obtained, and remember its library."""
        self = cls._from_library(c_kernel, mod)
        _KERNEL_LIBRARIES[self._h] = mod
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Kernel):
            return NotImplemented
        return self._h == other._h

    def __hash__(self) -> int:
        return hash(self._h)

    def __repr__(self) -> str:
        state = " (closed)" if self._is_closed() else ""
        return f"<Kernel handle={self._h:#x}{state}>"

    @staticmethod
    def from_handle(handle: int, mod: ObjectCode | None = None) -> Kernel:
        """Wrap an existing ``CUkernel`` address.

        Parameters
        ----------
        handle : int, CUkernel or CUfunction
            The address of a ``CUkernel`` (e.g. from another library), or a
            ``cuda.bindings`` ``CUkernel``/``CUfunction`` object.  As in
            ``cuda.core``, a bool counts as an int and ``0`` gives a kernel
            with a null handle.
        mod : ObjectCode, optional
            The code object the kernel comes from.  When ``handle`` is a
            kernel that cuda_core obtained with
            :meth:`ObjectCode.get_kernel <cuda_core.ObjectCode.get_kernel>`
            and whose ObjectCode is still open, the new kernel keeps *that*
            ObjectCode (its library) alive and ``mod`` is not kept.  Otherwise
            the kernel's library is unknown: ``mod`` is kept alive with the
            kernel, and once ``mod`` is closed the kernel cannot be used.
            Without either, keeping the library loaded is the caller's
            responsibility.

        Returns
        -------
        Kernel

        Raises
        ------
        TypeError
            If ``handle`` is not an int, or ``mod`` is neither None nor an
            ObjectCode (``cuda.core`` does not check ``mod``; cuda_core does).
        OverflowError
            If ``handle`` is negative or does not fit in a pointer.

        Warns
        -----
        UserWarning
            When ``mod`` is loaded and its library is not the one the kernel
            is known to come from (the kernel is still returned).
        """
        if not isinstance(handle, int):
            address = driver_handle(handle, "CUkernel", "CUfunction")  # cuda.bindings
            if address is None:
                raise TypeError(f"handle must be an integer, got {type(handle).__name__}")
            handle = address
        if handle < 0:
            raise OverflowError("can't convert negative value to size_t")
        if handle > _MAX_HANDLE:
            raise OverflowError("value too large to convert to size_t")
        if mod is not None and not hasattr(mod, "_closed"):
            raise TypeError(f"mod must be an ObjectCode or None, not {type(mod).__name__}")
        handle = int(handle)
        owner = _KERNEL_LIBRARIES.get(handle)
        if owner is not None and owner._closed:
            owner = None  # its library was unloaded: the handle is no longer known
        if owner is None:
            return Kernel._from_library(ffi.cast("CUkernel", handle), mod)
        if mod is not None and mod is not owner and _loaded_library(mod) is not None:
            if _loaded_library(mod) != _loaded_library(owner):
                warnings.warn(
                    "The library from the provided ObjectCode does not match the library "
                    "associated with this kernel.",
                    stacklevel=2,
                )
        return Kernel._from_library(ffi.cast("CUkernel", handle), owner)

    def _is_closed(self) -> bool:
        return self._mod._closed

    def _require_open(self) -> None:
        if self._is_closed():
            raise RuntimeError(
                "Kernel is closed: the ObjectCode it came from was closed, so it cannot "
                "be used any more"
            )

    def _function(self) -> Any:
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

    def _get_param_info(self) -> list[ParamInfo]:
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
        if not driver_at_least(*_PARAM_INFO_MIN_DRIVER):
            self._param_info = False
            raise NotImplementedError(_param_info_unsupported_message())
        offset = ffi.new("size_t *")
        size = ffi.new("size_t *")
        result: list[ParamInfo] = []
        index = 0
        while True:
            status = lib.cuKernelGetParamInfo(self._handle, index, offset, size)
            if not check_allowing(status, _INVALID_VALUE, f"cuKernelGetParamInfo(index={index})"):
                break
            result.append(ParamInfo(offset=int(offset[0]), size=int(size[0])))
            index += 1
        # INVALID_VALUE at ``index``: accept it as the end of the list only when
        # it is consistent with being the end.
        _confirm_end_of_params(self._handle, index, result, offset, size)
        self._param_info = result
        return result

    def _param_info_or_none(self) -> list[ParamInfo] | None:
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
    def attributes(self) -> KernelAttributes:
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
    def num_arguments(self) -> int:
        """int: The number of parameters of the kernel (driver 12.4 or newer)."""
        return len(self._get_param_info())

    @property
    def arguments_info(self) -> list[ParamInfo]:
        """list of ParamInfo: ``(offset, size)`` of each kernel parameter (driver 12.4+)."""
        return list(self._get_param_info())

    @property
    def occupancy(self) -> KernelOccupancy:
        """KernelOccupancy: Occupancy queries for launching this kernel."""
        occ = self._occupancy
        if occ is None:
            occ = self._occupancy = KernelOccupancy._init(self)
        return occ

    @property
    def handle(self) -> int:
        """int: The address of the underlying ``CUkernel``."""
        return self._h


# --------------------------------------------------------------------------
# Private helpers.
# --------------------------------------------------------------------------
class _NoModule:
    """Stands for the ObjectCode of a kernel wrapped without one (never closed)."""

    __slots__ = ()
    _closed = False

    def __repr__(self) -> str:
        return "<no ObjectCode>"


_NO_MODULE = _NoModule()


def _param_info_unsupported_message() -> str:
    return (
        "Driver version {}.{} or newer is required for this function (cuKernelGetParamInfo). "
        "Using driver version {}"
    ).format(*_PARAM_INFO_MIN_DRIVER, format_cuda_version(driver_version()))


def _confirm_end_of_params(
    c_kernel: Any, count: int, result: list[ParamInfo], offset: Any, size: Any
) -> None:
    """Check that INVALID_VALUE at index ``count`` really marks the end of the list.

    Raises CUDAError when it does not: the kernel handle must be valid, index
    ``count + 1`` must fail the same way, and the offsets found so far must
    be increasing and non-overlapping.
    """
    # A valid handle: any attribute query succeeds (an invalid one raises here).
    out = ffi.new("int *")
    dev = ffi.new("CUdevice *")
    if not lib.cuCtxGetDevice(dev):
        check(
            lib.cuKernelGetAttribute(out, lib.CU_FUNC_ATTRIBUTE_NUM_REGS, c_kernel, dev[0]),
            "cuKernelGetAttribute (validating the kernel while enumerating its parameters)",
        )
    status = lib.cuKernelGetParamInfo(c_kernel, count + 1, offset, size)
    if not status_in(status, _INVALID_VALUE):
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


def _loaded_library(mod: object) -> int | None:
    """Return the ``CUlibrary`` address of a loaded, open ObjectCode, else None."""
    box = getattr(mod, "_box", None)
    if box is None or getattr(mod, "_closed", True):
        return None
    return as_int_handle(box[0])
