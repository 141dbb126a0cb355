# SPDX-License-Identifier: Apache-2.0
"""DLPack export and import on CPython and PyPy.

DLPack tensors travel in ``PyCapsule`` objects, which only the Python C API
can create or open.  The extension does that in C (``cc_dlpack_export``,
``cc_dlpack_take``, ``cc_dlpack_release`` in ``cffi_src/csrc/memory.c``);
objects cross between this module and the C code through the :data:`_bridge`
dict, keyed by a per-call token, so the same code runs on both interpreters.
The module hands the dict to the C code at import
(``cc_dlpack_set_bridge`` with its own ``__name__``), so the C code names
no Python module.

The DLPack C exchange API (a struct of C function pointers that other
extensions call instead of ``__dlpack__``) is in
``cffi_src/csrc/dlpack_exchange.c``; :func:`exchange_api_capsule` registers
the Python functions it calls.  :func:`object_address`,
:func:`object_from_address` and :func:`take_python_error` let Python code
hand a ``PyObject *`` to such C functions through cffi, on either
interpreter.
"""

from __future__ import annotations

import enum
import itertools
from typing import TYPE_CHECKING, Any

from cuda_core._cuda_ffi import ffi, lib
from cuda_core._lifetime import require_open

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Callable, Protocol

__all__ = [
    "DLDataTypeCode",
    "DLDeviceType",
    "capsule_from_tensor",
    "classify_dl_device",
    "exchange_api_address",
    "exchange_api_capsule",
    "make_py_capsule",
    "object_address",
    "object_from_address",
    "take_capsule",
    "take_python_error",
]

if TYPE_CHECKING:

    class _ExportedBuffer(Protocol):
        """What the exports need of a Buffer (the self type of :class:`BufferExports`)."""

        _ptr: int
        _size: int
        _closed: bool

        @property
        def handle(self) -> int: ...
        @property
        def size(self) -> int: ...
        @property
        def device_id(self) -> int: ...
        @property
        def is_device_accessible(self) -> bool: ...
        @property
        def is_host_accessible(self) -> bool: ...
        @property
        def is_managed(self) -> bool: ...


#: Exchange slots with the C helpers: token -> object (read and written by C).
_bridge: dict[int | str, Any] = {}
_tokens = itertools.count(1)
if lib.cc_dlpack_set_bridge(__name__.encode(), b"_bridge") != 0:
    raise ImportError(f"{__name__}: the extension could not register the DLPack bridge")

DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 3
DLPACK_FLAG_BITMASK_READ_ONLY = 1


class DLDeviceType(enum.IntEnum):
    """DLPack device types that cuda_core produces or accepts."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLCUDAManaged = 13


class DLDataTypeCode(enum.IntEnum):
    """DLPack data type codes."""

    kDLInt = 0
    kDLUInt = 1
    kDLFloat = 2
    kDLBfloat = 4
    kDLComplex = 5
    kDLBool = 6


class BufferExports:
    """How a :class:`~cuda_core.Buffer` hands its memory to other libraries.

    DLPack (``__dlpack__``, ``__dlpack_device__``) and, for host memory,
    NumPy's array interface; a mixin of Buffer, which holds ``_ptr``,
    ``_size`` and ``_closed``.
    """

    __slots__ = ()

    def __dlpack__(
        self: _ExportedBuffer,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export this buffer as a 1-D ``int8`` DLPack tensor of ``size`` elements.

        ``stream`` is ignored (as if it were -1): keeping the producer and
        the consumer in stream order is the caller's responsibility.
        ``max_version`` None gives a legacy ``"dltensor"`` capsule; a tuple
        of at least ``(1, 0)`` gives a ``"dltensor_versioned"`` one of
        DLPack 1.3 (no flags).

        Raises
        ------
        BufferError
            For any ``dl_device`` (even this buffer's own), ``copy=True``, or
            a malformed ``max_version``.
        """
        require_open(self._closed, "Buffer")
        if dl_device is not None:
            raise BufferError("Sorry, not supported: dl_device other than None")
        if copy is True:
            raise BufferError("Sorry, not supported: copy=True")
        versioned = wants_versioned(max_version)
        return make_py_capsule(self, versioned)

    def __dlpack_device__(self: _ExportedBuffer) -> tuple[int, int]:
        """Return the DLPack ``(device_type, device_id)`` of this buffer.

        ``(1, 0)`` CPU, ``(2, id)`` CUDA device memory, ``(3, 0)`` pinned host
        memory, ``(13, 0)`` managed memory.
        """
        require_open(self._closed, "Buffer")
        return classify_dl_device(self)

    @property
    def __array_interface__(self: _ExportedBuffer) -> dict[str, Any]:
        """NumPy array interface of a host-accessible buffer: its bytes as ``uint8``.

        ``numpy.asarray(buf)`` is then a writable, zero-copy view that keeps
        the buffer object alive (on CPython and PyPy; NumPy marks arrays made
        through a legacy DLPack capsule read-only, and NumPy on PyPy asks
        only for legacy capsules).  Device-only buffers have no array
        interface (AttributeError).  This is a cuda_core extension.
        """
        require_open(self._closed, "Buffer")
        if not self.is_host_accessible:
            raise AttributeError(
                "__array_interface__ is only available for host-accessible buffers"
            )
        return {
            "version": 3,
            "shape": (self._size,),
            "typestr": "|u1",
            "data": (self._ptr, False),
            "strides": None,
        }


def wants_versioned(max_version: tuple[int, int] | None) -> bool:
    """Return whether ``__dlpack__(max_version=...)`` asks for a versioned capsule.

    Raises BufferError for a ``max_version`` that is not None or a pair.
    """
    if max_version is None:
        return False
    if not isinstance(max_version, tuple) or len(max_version) != 2:
        raise BufferError(f"Expected max_version tuple[int, int], got {max_version}")
    return max_version >= (1, 0)


def classify_dl_device(buf: _ExportedBuffer) -> tuple[int, int]:
    """Return the DLPack ``(device_type, device_id)`` pair of a buffer.

    ``buf`` must expose ``is_device_accessible``, ``is_host_accessible``,
    ``is_managed`` and ``device_id``.  Pinned and managed memory report
    device id 0, as the DLPack specification asks.
    """
    d = buf.is_device_accessible
    h = buf.is_host_accessible
    if d and not h:
        return (int(DLDeviceType.kDLCUDA), int(buf.device_id))
    if d and h:
        if buf.is_managed:
            return (int(DLDeviceType.kDLCUDAManaged), 0)
        return (int(DLDeviceType.kDLCUDAHost), 0)
    if h:
        return (int(DLDeviceType.kDLCPU), 0)
    raise BufferError("buffer is neither device-accessible nor host-accessible")


def capsule_from_tensor(
    owner: object,
    data: int,
    device: tuple[int, int],
    dtype: tuple[int, int, int],
    shape: Sequence[int],
    strides: Sequence[int] | None,
    *,
    versioned: bool,
    readonly: bool = False,
) -> Any:
    """Build a DLPack capsule describing memory that ``owner`` keeps alive.

    Parameters
    ----------
    owner : object
        Referenced by the tensor's ``manager_ctx`` until the consumer calls
        the deleter (or the unconsumed capsule is destroyed).
    data : int
        Address of the first element.
    device : tuple
        DLPack ``(device_type, device_id)``.
    dtype : tuple
        DLPack ``(code, bits, lanes)``.
    shape, strides : sequence of int
        Extents and strides (in elements), of equal length; ``strides`` may
        be None (a NULL strides pointer: C-contiguous, not stated).
    versioned : bool
        Produce a ``dltensor_versioned`` capsule (DLPack 1.3) instead of a
        legacy ``dltensor`` one.
    readonly : bool
        Set the read-only flag (versioned capsules only).
    """
    ndim = len(shape)
    if strides is not None and len(strides) != ndim:
        raise BufferError("shape and strides must have the same length")
    c_shape = ffi.new("int64_t[]", list(shape)) if ndim else ffi.NULL
    c_strides = ffi.new("int64_t[]", list(strides)) if ndim and strides is not None else ffi.NULL
    code, bits, lanes = dtype
    flags = DLPACK_FLAG_BITMASK_READ_ONLY if (readonly and versioned) else 0
    token = next(_tokens)
    _bridge[token] = owner
    try:
        rc = lib.cc_dlpack_export(
            token,
            1 if versioned else 0,
            ffi.cast("void *", data),
            device[0],
            device[1],
            ndim,
            code,
            bits,
            lanes,
            c_shape,
            c_strides,
            flags,
        )
        if rc:
            raise BufferError("could not create the DLPack capsule")
        return _bridge[token]
    finally:
        _bridge.pop(token, None)


def make_py_capsule(buf: _ExportedBuffer, versioned: bool) -> Any:
    """Export the bytes of a :class:`~cuda_core.Buffer` as a 1-D int8 tensor."""
    device = classify_dl_device(buf)
    size = buf.size
    return capsule_from_tensor(
        buf,
        buf.handle,
        device,
        (int(DLDataTypeCode.kDLInt), 8, 1),
        (size,),
        (1,),
        versioned=versioned,
    )


class _Consumed:
    """A managed tensor taken from a capsule; calls its deleter when released."""

    __slots__ = ("tensor", "versioned", "_gc")
    tensor: Any  # DLTensor cdata
    versioned: bool
    _gc: Any  # the managed tensor's pointer (cdata), None once released

    def __init__(self, c_ptr: Any, versioned: bool) -> None:
        self.versioned = versioned
        if versioned:
            managed = ffi.cast("DLManagedTensorVersioned *", c_ptr)
        else:
            managed = ffi.cast("DLManagedTensor *", c_ptr)
        self.tensor = managed.dl_tensor
        # The producer's deleter runs when this object goes away (safety net)
        # or at release(); never twice.
        self._gc = ffi.gc(c_ptr, _release_versioned if versioned else _release_plain)

    @property
    def flags(self) -> int:
        if not self.versioned:
            return 0
        return int(ffi.cast("DLManagedTensorVersioned *", self._gc).flags)

    def release(self) -> None:
        """Call the producer's deleter now (idempotent)."""
        c_ptr = self._gc
        if c_ptr is None:
            return
        self._gc = None
        ffi.gc(c_ptr, None)
        lib.cc_dlpack_release(c_ptr, 1 if self.versioned else 0)


def _release_plain(c_ptr: Any) -> None:
    lib.cc_dlpack_release(c_ptr, 0)


def _release_versioned(c_ptr: Any) -> None:
    lib.cc_dlpack_release(c_ptr, 1)


def take_capsule(capsule: object) -> _Consumed:
    """Consume a DLPack capsule (marking it used) and return a ``_Consumed``.

    Raises
    ------
    BufferError
        If ``capsule`` is not an unconsumed DLPack capsule.
    """
    token = next(_tokens)
    _bridge[token] = capsule
    versioned = ffi.new("int *")
    try:
        c_ptr = lib.cc_dlpack_take(token, versioned)
    finally:
        _bridge.pop(token, None)
    if c_ptr == ffi.NULL:
        raise BufferError(
            f"expected an unconsumed DLPack capsule, got {type(capsule).__name__} "
            "(a capsule can be consumed only once)"
        )
    return _Consumed(c_ptr, bool(versioned[0]))


#: Names under which the exchange API's C functions find their Python halves
#: in the bridge (they match the CC_HOOK_* names of dlpack_exchange.c).
_EXCHANGE_HOOKS = ("smv_to_managed_tensor", "smv_fill_dltensor", "smv_from_capsule")


def exchange_api_capsule(
    to_managed_tensor: Callable[[object], Any],
    fill_dltensor: Callable[[object, int], None],
    from_capsule: Callable[[Any], object],
) -> Any:
    """Register the exchange API's Python functions; return its capsule.

    Parameters
    ----------
    to_managed_tensor : callable
        ``f(obj)``: a new, unconsumed ``dltensor_versioned`` capsule of the
        view ``obj`` (TypeError for anything else).
    fill_dltensor : callable
        ``f(obj, address)``: fill the ``DLTensor`` at ``address`` with a
        borrowed description of the view ``obj``.
    from_capsule : callable
        ``f(capsule)``: a new view that consumes ``capsule``.

    Returns
    -------
    PyCapsule
        Named ``"dlpack_exchange_api"``, pointing to the process-lifetime
        ``DLPackExchangeAPI`` struct.
    """
    for name, fn in zip(_EXCHANGE_HOOKS, (to_managed_tensor, fill_dltensor, from_capsule)):
        _bridge[name] = fn
    token = next(_tokens)
    try:
        if lib.cc_dlpack_exchange_api_capsule(token) != 0:
            raise ImportError("the extension could not create the DLPack exchange API capsule")
        return _bridge[token]
    finally:
        _bridge.pop(token, None)


def exchange_api_address() -> int:
    """Return the address of the ``DLPackExchangeAPI`` struct (an int)."""
    return int(ffi.cast("uintptr_t", lib.cc_dlpack_exchange_api()))


def object_address(obj: object) -> int:
    """Return a new reference to ``obj`` as a ``PyObject *`` address (an int).

    The reference must be released, e.g. by :func:`object_from_address`.
    """
    token = next(_tokens)
    _bridge[token] = obj
    try:
        return int(ffi.cast("uintptr_t", lib.cc_pyobject_new_ref(token)))
    finally:
        _bridge.pop(token, None)


def object_from_address(address: int) -> object:
    """Return the object of a ``PyObject *`` address, taking over that reference."""
    token = next(_tokens)
    try:
        if lib.cc_pyobject_steal(token, ffi.cast("void *", address)) != 0:
            raise ValueError(f"no Python object at address {address:#x}")
        return _bridge[token]
    finally:
        _bridge.pop(token, None)


def take_python_error() -> BaseException | None:
    """Return (and clear) the exception a C call left pending in this thread, or None."""
    token = next(_tokens)
    try:
        if not lib.cc_pyerr_take(token):
            return None
        return _bridge.get(token)
    finally:
        _bridge.pop(token, None)
