# SPDX-License-Identifier: Apache-2.0
"""Green contexts: :class:`ContextOptions` and their creation, streams and lifetime.

:meth:`Device.create_context <cuda_core.Device.create_context>` turns a set
of device resources (an :class:`~cuda_core.SMResource` group, optionally a
configured :class:`~cuda_core.WorkqueueResource`) into a green context:
``cuDevResourceGenerateDesc``, then ``cuGreenCtxCreate``, wrapped as a
:class:`~cuda_core.Context` through ``cuCtxFromGreenCtx``.  Work submitted to
its streams (:meth:`Context.create_stream <cuda_core.Context.create_stream>`,
``cuGreenCtxStreamCreate``) runs on its SMs only.

The ``CUgreenCtx`` belongs to a :class:`_GreenOwner` that the Context and
each of its streams refer to: it is destroyed when the Context is closed and
none of those streams is open any more (or, as a safety net, when the last
of them is garbage collected).
"""

from __future__ import annotations

import typing
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cuda_core._slots as _slots
from cuda_core._coerce import as_int_handle, check_or_create_options
from cuda_core._context import Context, _bufs
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._device_resources import (
    SMResource,
    WorkqueueResource,
    _check_green_ctx_support,
)
from cuda_core._errors import check, in_forked_child, warn_cuda
from cuda_core._stream import _OWNED, _adopt
from cuda_core._stream_options import StreamOptions, _checked_priority

if TYPE_CHECKING:
    from cuda_core._stream import Stream

__all__ = ["ContextOptions", "DeviceResourcesType"]

#: The resources a green context is made of (:attr:`ContextOptions.resources`).
DeviceResourcesType = typing.Sequence[typing.Union[SMResource, WorkqueueResource]]
_slots.DeviceResourcesType = DeviceResourcesType  # cuda_core.typing reads it


@dataclass
class ContextOptions:
    """Options for :meth:`Device.create_context <cuda_core.Device.create_context>`.

    Attributes
    ----------
    resources : sequence of SMResource and WorkqueueResource
        What the green context is made of: SM groups from one
        :meth:`SMResource.split <cuda_core.SMResource.split>` (not a dry
        run), and optionally a configured workqueue resource.  Checked by
        :meth:`Device.create_context <cuda_core.Device.create_context>`.
    """

    resources: DeviceResourcesType


class _GreenOwner:
    """Owns one ``CUgreenCtx``: destroyed once its Context and streams are done with it."""

    __slots__ = ("c_green", "streams", "destroyed", "_finalizer", "__weakref__")

    def __init__(self, c_green: Any) -> None:
        self.c_green = c_green
        self.streams: weakref.WeakSet[Any] = weakref.WeakSet()
        self.destroyed = False
        self._finalizer = weakref.finalize(self, _destroy_green_ctx, c_green)

    def release(self) -> None:
        """The Context let go: destroy now unless one of its streams is still open."""
        if any(not s._closed for s in list(self.streams)):
            return  # destroyed when the last stream object is collected
        self._finalizer.detach()
        self.destroyed = True
        check(lib.cuGreenCtxDestroy(self.c_green), "cuGreenCtxDestroy")


def create_green_context(device_id: int, options: Any) -> Context:
    """Create a green context on ``device_id`` from ``options`` (see Device.create_context)."""
    if options is None:
        raise ValueError("ContextOptions with resources must be provided to create a green context")
    opts = check_or_create_options(ContextOptions, options, "Context options")
    resources = opts.resources
    if resources is None:
        raise ValueError("resources must be provided (a sequence of SMResource/WorkqueueResource)")
    if isinstance(resources, (SMResource, WorkqueueResource)):
        raise TypeError("resources must be a sequence of SMResource/WorkqueueResource objects")
    resources = list(resources)
    if not resources:
        raise ValueError("resources must be provided (a sequence of SMResource/WorkqueueResource)")
    structs: list[Any] = []
    for res in resources:
        if isinstance(res, SMResource):
            if not res._usable:
                raise ValueError(
                    "cannot create a context from a dry-run SMResource; split again "
                    "with dry_run=False"
                )
            structs.append(res._res)
        elif isinstance(res, WorkqueueResource):
            structs.append(res._config)
        else:
            raise TypeError(
                "resources must contain SMResource or WorkqueueResource objects, "
                f"got {type(res).__name__}"
            )
    _check_green_ctx_support()
    array = ffi.new("CUdevResource[]", len(structs))
    size = ffi.sizeof("CUdevResource")
    for i, c_res in enumerate(structs):
        ffi.memmove(array + i, c_res, size)
    desc = ffi.new("CUdevResourceDesc *")
    check(lib.cuDevResourceGenerateDesc(desc, array, len(structs)), "cuDevResourceGenerateDesc")
    out = ffi.new("CUgreenCtx *")
    check(
        lib.cuGreenCtxCreate(out, desc[0], device_id, lib.CU_GREEN_CTX_DEFAULT_STREAM),
        "cuGreenCtxCreate",
    )
    owner = _GreenOwner(out[0])
    c_ctx = _bufs().ctx
    status = lib.cuCtxFromGreenCtx(c_ctx, out[0])
    if status:
        owner.release()  # nothing else refers to it yet
        check(status, "cuCtxFromGreenCtx")
    context: Context = Context._from_green(c_ctx[0], device_id, owner)
    return context


def _create_green_stream(ctx: Any, options: Any) -> Stream:
    """Create a stream of green Context ``ctx`` (``cuGreenCtxStreamCreate``)."""
    opts = check_or_create_options(StreamOptions, options, "Stream options")
    if not opts.nonblocking:
        raise ValueError("streams of a green context must be non-blocking (nonblocking=True)")
    priority = _checked_priority(ctx, opts.priority)
    owner = ctx._green
    out = ffi.new("CUstream *")
    check(
        lib.cuGreenCtxStreamCreate(out, owner.c_green, lib.CU_STREAM_NON_BLOCKING, priority),
        "cuGreenCtxStreamCreate",
    )
    # The stream keeps its green context (owner) alive: the context outlives its streams.
    stream = _adopt(out[0], as_int_handle(out[0]), ctx, _OWNED, owner, options=(True, priority))
    owner.streams.add(stream)
    return stream


def _destroy_green_ctx(c_green: Any) -> None:
    """Finalizer: destroy a green context nothing refers to any more; warn on failure."""
    if in_forked_child():
        return
    status = lib.cuGreenCtxDestroy(c_green)
    if status:
        warn_cuda("cuGreenCtxDestroy (green context finalizer)", status)


_slots.green_stream_factory = _create_green_stream
