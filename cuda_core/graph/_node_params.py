# SPDX-License-Identifier: Apache-2.0
"""Arguments of graph nodes: checking them and filling the driver's structs.

Shared by the builders and ``update`` methods of definition nodes and by the
node views of executable graphs: each ``_*_params`` helper checks its
arguments (the messages name the parameter) and returns the driver struct
together with the objects the graph must keep alive for it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Callable

import cuda_core._arg_plan as _arg_plan
from cuda_core._coerce import as_address, index_or_none
from cuda_core._coerce import as_size as _as_size
from cuda_core._context import _current_ctx
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import CUDAError, check
from cuda_core._event import Event
from cuda_core._event_share import claim_event
from cuda_core._kernel import Kernel
from cuda_core._launch_config import _coerce_config
from cuda_core._memory._buffer import Buffer
from cuda_core._memory._release import claim_allocation
from cuda_core.graph._types import GraphMemoryType
from cuda_core.typing import _refuse

__all__: list[str] = []

_tls = threading.local()


def _list_nodes(fn: Callable[..., int], handle: Any) -> list[Any]:
    """Call a ``(handle, CUgraphNode *, size_t *)`` driver query; return the nodes."""
    n = ffi.new("size_t *")
    check(fn(handle, ffi.NULL, n))
    if not n[0]:
        return []
    arr = ffi.new("CUgraphNode[]", n[0])
    check(fn(handle, arr, n))
    return [arr[i] for i in range(n[0])]


def _node_out() -> Any:
    try:
        return _tls.node_out
    except AttributeError:
        out = _tls.node_out = ffi.new("CUgraphNode *")
        return out


def _ctx() -> Any:
    c_ctx = _current_ctx()
    if c_ctx == ffi.NULL:
        raise CUDAError("no CUDA context is current; call Device.set_current() first")
    return c_ctx


def _device_id(value: object, what: str) -> int:
    device_id = getattr(value, "device_id", value)
    index = index_or_none(device_id)
    if index is None:
        raise TypeError(f"{what} must be a Device or an int, not {type(value).__name__}")
    device_id = index
    if device_id < 0:
        raise ValueError(f"{what} must be a non-negative device ordinal, got {device_id}")
    return device_id


def _memory_type(value: object) -> GraphMemoryType:
    if value is None:
        return GraphMemoryType.DEVICE
    if not isinstance(value, str):  # the enum would compare it with each value
        _refuse(GraphMemoryType, value)
    # An unknown value: "'x' is not a valid GraphMemoryType. Must be ...", as cuda.core.
    return GraphMemoryType(value)


def _as_address(value: object, what: str) -> int:
    address: int = as_address(value, what, "an int address or a Buffer")
    return address


def _operand(
    value: object, owner: object, what: str
) -> tuple[int, Buffer | None, tuple[object, ...]]:
    """Return ``(address, Buffer or None, keep)`` of a memcpy/memset operand.

    ``keep`` lists what the node must keep alive; :func:`_claims` turns its
    Buffers into claims on their allocations once every argument is checked.
    """
    if isinstance(value, Buffer):
        if owner is not None:
            raise ValueError(f"{what}_owner cannot be used when {what} is a Buffer")
        if value.is_closed:
            raise ValueError(f"{what} Buffer has no active allocation")
        return value.handle, value, (value,)
    address = _as_address(value, what)
    if owner is None:
        return address, None, ()
    if isinstance(owner, Buffer) and owner.is_closed:
        raise ValueError(f"{what}_owner Buffer has no active allocation")
    return address, None, (owner,)


def _claims(keep: Iterable[object]) -> tuple[object, ...]:
    """Return the owners a node attaches for ``keep``: a Buffer's allocation, not the Buffer."""
    return tuple(claim_allocation(o) if isinstance(o, Buffer) else o for o in keep)


def _memory_kind(address: int) -> int:
    """Return the ``CUmemorytype`` to use in a copy for ``address``."""
    mtype = ffi.new("unsigned int *")
    attr = ffi.new("CUpointer_attribute[1]", [lib.CU_POINTER_ATTRIBUTE_MEMORY_TYPE])
    data = ffi.new("void *[1]", [mtype])
    check(lib.cuPointerGetAttributes(1, attr, data, address))
    # Addresses unknown to the driver (e.g. graph allocations not mapped yet)
    # are taken as device addresses.
    kind: int = (
        lib.CU_MEMORYTYPE_HOST if mtype[0] == lib.CU_MEMORYTYPE_HOST else lib.CU_MEMORYTYPE_DEVICE
    )
    return kind


def _memcpy_params(
    dst: object, src: object, size: Any, dst_owner: object, src_owner: object
) -> tuple[Any, tuple[object, ...]]:
    """Return ``(CUDA_MEMCPY3D *, owners)`` for a 1-D copy."""
    c_dst, dst_buf, dst_keep = _operand(dst, dst_owner, "dst")
    c_src, src_buf, src_keep = _operand(src, src_owner, "src")
    size = _as_size(size, "size")
    if size == 0:
        raise ValueError("size must be > 0 for a memcpy node")
    for buf, what in ((dst_buf, "dst"), (src_buf, "src")):
        if buf is not None and size > buf.size:
            raise ValueError(f"size {size} exceeds the {what} Buffer's size ({buf.size} bytes)")
    p = ffi.new("CUDA_MEMCPY3D *")
    kind = _memory_kind(c_src)
    p.srcMemoryType = kind
    if kind == lib.CU_MEMORYTYPE_HOST:
        p.srcHost = ffi.cast("void *", c_src)
    else:
        p.srcDevice = c_src
    kind = _memory_kind(c_dst)
    p.dstMemoryType = kind
    if kind == lib.CU_MEMORYTYPE_HOST:
        p.dstHost = ffi.cast("void *", c_dst)
    else:
        p.dstDevice = c_dst
    p.WidthInBytes = size
    p.Height = 1
    p.Depth = 1
    return p, _claims(dst_keep + src_keep)


def _fill_value(value: object) -> tuple[int, int]:
    """Return ``(bits, element size)`` of a memset value."""
    if isinstance(value, bool):
        raise TypeError("value must be an int in [0, 256) or a 1, 2 or 4 byte buffer, not bool")
    if isinstance(value, int):
        if not 0 <= value < 256:
            raise ValueError(f"an int fill value must be in [0, 256), got {value}")
        return value, 1
    try:
        raw = memoryview(value).tobytes()  # type: ignore[arg-type]  # TypeError handled below
    except TypeError:
        raise TypeError(
            "value must be an int in [0, 256) or an object supporting the buffer protocol "
            f"(1, 2 or 4 bytes), not {type(value).__name__}"
        ) from None
    if len(raw) not in (1, 2, 4):
        raise ValueError(f"a fill value must be 1, 2 or 4 bytes long, got {len(raw)} bytes")
    return int.from_bytes(raw, "little"), len(raw)


def _memset_params(
    dst: object, value: object, width: Any, height: Any, pitch: Any, dst_owner: object
) -> tuple[Any, tuple[object, ...]]:
    """Return ``(CUDA_MEMSET_NODE_PARAMS *, owners)``."""
    c_dst, buf, keep = _operand(dst, dst_owner, "dst")
    bits, elem = _fill_value(value)
    width = _as_size(width, "width")
    height = _as_size(height, "height")
    pitch = _as_size(pitch, "pitch")
    if width == 0 or height == 0:
        raise ValueError(f"width and height must be >= 1, got width={width}, height={height}")
    row = width * elem
    if height > 1 and pitch < row:
        raise ValueError(f"pitch ({pitch}) must be >= width * element size ({row}) when height > 1")
    if buf is not None:
        needed = (height - 1) * pitch + row
        if needed > buf.size:
            raise ValueError(
                f"the memset covers {needed} bytes, more than the dst Buffer's {buf.size}"
            )
    if c_dst % elem:
        raise ValueError(f"dst {c_dst:#x} is not aligned to the element size ({elem})")
    p = ffi.new("CUDA_MEMSET_NODE_PARAMS *")
    p.dst = c_dst
    p.pitch = pitch if height > 1 else 0
    p.value = bits
    p.elementSize = elem
    p.width = width
    p.height = height
    return p, _claims(keep)


def _kernel_params(
    config: object,
    kernel: Kernel | None,
    args: Iterable[object] | None,
    *,
    current: Any = None,
) -> tuple[Any, list[object], Kernel | None]:
    """Return ``(CUDA_KERNEL_NODE_PARAMS *, owners, kernel)`` for a kernel node.

    With ``current`` (the node's present parameters), ``kernel`` and
    ``args`` may be None: the present kernel and argument values are kept.
    """
    config = _coerce_config(config)
    if config.cluster is not None or config.is_cooperative:
        raise NotImplementedError("clustered or cooperative graph kernel nodes are not supported")
    p = ffi.new("CUDA_KERNEL_NODE_PARAMS *")
    owners: list[object] = []
    if kernel is not None:
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be a Kernel, not {type(kernel).__name__}")
        kernel._require_open()
        p.kern = kernel._handle
        p.func = ffi.NULL
        p.ctx = ffi.NULL
        owners.append(kernel)
    elif current is None:  # a new launch (ExecutableKernelNode.update) names its kernel
        raise TypeError("kernel must be a Kernel, not NoneType")
    else:
        p.func = current.func
        p.kern = current.kern
        p.ctx = current.ctx
    if args is not None:
        if kernel is None:  # the callers pass the node's kernel along with new args
            raise ValueError("kernel arguments need their kernel: pass kernel= with args=")
        args = tuple(args)
        c_params, storage = _pack_args(kernel, args)
        p.kernelParams = c_params
        p.extra = ffi.NULL
        owners.extend((args, storage, c_params))
    else:
        # Keep the node's arguments as the driver holds them: an array of
        # pointers, or one parameter buffer (a node captured from launch()).
        p.kernelParams = current.kernelParams
        p.extra = current.extra
    grid = config.grid
    block = config.block
    p.gridDimX, p.gridDimY, p.gridDimZ = grid
    p.blockDimX, p.blockDimY, p.blockDimZ = block
    p.sharedMemBytes = config.shmem_size
    return p, owners, kernel


def _pack_args(kernel: Kernel, args: tuple[object, ...]) -> tuple[Any, Any]:
    """Pack ``args`` as :func:`~cuda_core.launch` does; return ``(void **, storage)``.

    Uses the launcher's cached argument plan for this kernel and argument
    types; the packed values are copied into storage owned by the caller.
    """
    plan, blob = _arg_plan._packed_arguments(kernel, args)
    n = plan.nargs
    storage = ffi.new("char[]", blob or b"\0")
    c_params = ffi.new("void *[]", max(n, 1))
    offsets = plan.layout.offsets
    for i in range(n):
        c_params[i] = storage + offsets[i]
    return c_params, storage


def _require_event(event: object) -> object:
    """Check ``event``; return the claim a node attaches to keep its ``CUevent`` alive.

    A closed Event raises RuntimeError (``cuda.core`` hands the driver a null
    event; a deliberate difference).
    """
    if not isinstance(event, Event):
        raise TypeError(f"event must be an Event, not {type(event).__name__}")
    if event.is_closed:
        raise RuntimeError("Event is closed; it cannot be used after close()")
    return claim_event(event)
