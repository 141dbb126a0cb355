# SPDX-License-Identifier: Apache-2.0
"""DLPack export of a :class:`~cuda_core.utils.StridedMemoryView`.

``__dlpack__`` and the DLPack C exchange API share :func:`export_capsule`
(a new managed tensor that keeps the view alive).  :func:`install` gives
the view class its ``__dlpack_c_exchange_api__`` and
``__c_dlpack_exchange_api__`` attributes: the same PyCapsule named
``"dlpack_exchange_api"``, pointing to a process-lifetime
``DLPackExchangeAPI`` struct (DLPack 1.3) whose C functions
(``cffi_src/csrc/dlpack_exchange.c``) call back into the Python functions
defined here.  The capsule is made through cpyext on PyPy, so the API is
there on both interpreters.  Unlike cuda.core, ``managed_tensor_allocator``
calls the consumer's ``SetError`` without holding the GIL (dlpack.h leaves
taking it to ``SetError``; PyPy's cffi callbacks need it so), then sets the
same ``NotImplementedError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuda_core._cuda_ffi import ffi
from cuda_core._memory import _dlpack
from cuda_core.utils._memoryview_layout import _numpy_to_dlpack_dtype
from cuda_core.utils._memoryview_protocols import _reset, _view_from_capsule

if TYPE_CHECKING:
    from cuda_core.utils._memoryview import StridedMemoryView

__all__: list[str] = []


def export_capsule(view: StridedMemoryView, versioned: bool) -> Any:
    """Return a new DLPack capsule describing ``view`` (which it keeps alive).

    Strides are always given for ``ndim > 0`` (the C-contiguous ones when the
    view has none), shape and strides are NULL for ``ndim == 0``, the data
    pointer is NULL for an empty view, and ``byte_offset`` is 0.
    """
    layout = view._layout
    code = _export_dtype(view)
    device = view.__dlpack_device__()
    data = 0 if layout.volume == 0 else view._ptr
    return _dlpack.capsule_from_tensor(
        view,
        data,
        device,
        code,
        layout.shape,
        layout.element_strides(),
        versioned=versioned,
        readonly=view._readonly,
    )


def install(cls: type[StridedMemoryView]) -> None:
    """Give ``cls`` the DLPack C exchange API (both attribute names, one capsule)."""

    def to_managed_tensor(obj: object) -> Any:
        _require_view(obj, cls)
        return export_capsule(obj, True)  # type: ignore[arg-type]  # checked just above

    def fill_dltensor(obj: object, address: int) -> None:
        _require_view(obj, cls)
        _fill_dltensor(obj, ffi.cast("DLTensor *", address))  # type: ignore[arg-type]  # checked

    def from_capsule(capsule: Any) -> StridedMemoryView:
        view = object.__new__(cls)
        _reset(view)
        _view_from_capsule(view, capsule, capsule)
        return view

    capsule = _dlpack.exchange_api_capsule(to_managed_tensor, fill_dltensor, from_capsule)
    cls.__dlpack_c_exchange_api__ = capsule  # type: ignore[attr-defined]  # set here
    cls.__c_dlpack_exchange_api__ = capsule  # type: ignore[attr-defined]  # set here


def _require_view(obj: object, cls: type) -> None:
    if not isinstance(obj, cls):
        raise TypeError("py_object must be a StridedMemoryView")


def _export_dtype(view: StridedMemoryView) -> tuple[int, int, int]:
    dtype = view.dtype
    if dtype is None:
        raise BufferError(
            "Cannot export StridedMemoryView via DLPack without dtype information; "
            "create the view with dtype specified."
        )
    return _numpy_to_dlpack_dtype(dtype)


def _fill_dltensor(view: StridedMemoryView, out: Any) -> None:
    """Describe ``view`` in the caller's ``DLTensor`` without allocating.

    Shape and strides point into an array the view's layout owns, so they
    stay valid while the view lives.
    """
    layout = view._layout
    code, bits, lanes = _export_dtype(view)
    device_type, device_id = view.__dlpack_device__()
    ndim = len(layout.shape)
    out.data = ffi.cast("void *", 0 if layout.volume == 0 else view._ptr)
    out.device.device_type = device_type
    out.device.device_id = device_id
    out.ndim = ndim
    out.dtype.code = code
    out.dtype.bits = bits
    out.dtype.lanes = lanes
    if ndim == 0:
        out.shape = ffi.NULL
        out.strides = ffi.NULL
    else:
        dims = layout.c_dims(ffi)
        out.shape = dims
        out.strides = dims + ndim
    out.byte_offset = 0
