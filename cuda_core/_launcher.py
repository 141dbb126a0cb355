# SPDX-License-Identifier: Apache-2.0
"""Kernel launch: :func:`launch`.

How a launch works
------------------
Each launch is one call into the extension, ``cc_launch_blob(blob)``, whose
single argument is a byte block holding three pointer-sized words -- the
*argument layout* (the kernel and where each packed argument starts), the
prepared :class:`~cuda_core.LaunchConfig` structure and the stream -- followed
by the packed argument values.  The C side calls ``cuLaunchKernelEx`` with
the packed values as one parameter buffer when they are laid out exactly as
the kernel's parameters (the plan compares its offsets with those the driver
reports: the usual case, and cheaper for many parameters), else with a
``void *params[]`` array built from the layout.  One argument keeps the
call cheap on CPython (cffi passes a single argument without building an
argument tuple) and costs nothing on PyPy.

The blob is packed by the kernel's cached *argument plan*
(:mod:`cuda_core._arg_plan`); the rules for each argument type are in
:mod:`cuda_core._arg_types`.

A :class:`~cuda_core.LaunchConfig` prepares its C structure once (see
``LaunchConfig._prepare``); ``LaunchConfig._fast`` holds its address for
configurations that need no per-launch checks, so a launch reads one
attribute for the whole configuration.  Closed objects and special
configurations (clusters, cooperative launches) take the slow start,
:func:`_prepare_launch`.
"""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING, Any

from cuda_core._arg_plan import _slow_pack
from cuda_core._coerce import check_or_create_options
from cuda_core._cuda_ffi import lib
from cuda_core._errors import check
from cuda_core._kernel import Kernel
from cuda_core._launch_config import LaunchConfig, _check_device_support
from cuda_core._stream import Stream, _as_stream, _OpenStream

if TYPE_CHECKING:
    from cuda_core.graph import GraphBuilder
    from cuda_core.typing import IsStreamType

__all__ = ["launch"]

_launch_blob = lib.cc_launch_blob


def _launch(stream: Any, config: Any, kernel: Any, *kernel_args: Any) -> None:
    if type(stream) is not _OpenStream and type(stream) is not Stream:
        stream = _as_stream(stream, check_open=False, for_launch=True)
    try:
        cfg = config._fast  # the prepared config's address; None: take the slow path
        plan = kernel._plan
        closed = kernel._mod._closed or stream._closed
    except AttributeError:  # not a LaunchConfig (a dict?) or not a Kernel
        config, kernel = _check_launch_types(config, kernel)
        cfg, plan, closed = None, kernel._plan, True
    if cfg is None or closed:
        cfg = _prepare_launch(config, kernel, stream)
    try:
        blob = plan.pack(cfg, stream._h, kernel_args)  # bytes, or PyPy's thread buffer
    except Exception:
        plan, blob = _slow_pack(kernel, cfg, stream._h, kernel_args)
    status = _launch_blob(blob)
    if status:
        check(status, "cuLaunchKernelEx")


#: The public function is the fast path itself (no extra call layer), typed
#: and documented here.
if TYPE_CHECKING:

    def launch(
        stream: Stream | GraphBuilder | IsStreamType,
        config: LaunchConfig | dict[str, Any],
        kernel: Kernel,
        *kernel_args: Any,
    ) -> None: ...

else:
    launch = _launch
launch.__name__ = launch.__qualname__ = "launch"
launch.__doc__ = """Launch ``kernel`` on ``stream`` with ``config`` and ``kernel_args``.

    Parameters
    ----------
    stream : Stream or GraphBuilder
        Where the launch is ordered (a graph builder captures it).  An
        object implementing ``__cuda_stream__`` is still accepted but, as in
        ``cuda.core``, deprecated: each such call warns; convert it with
        ``Stream(obj)`` instead.
    config : LaunchConfig or dict
        Grid, block, cluster, shared memory and launch flags (a dict is
        passed to :class:`LaunchConfig`).
    kernel : Kernel
        The kernel to launch.
    *kernel_args
        The kernel's arguments, marshalled by type as
        ``cuda_core._arg_types`` describes (e.g. :class:`~cuda_core.Buffer`
        -> pointer, ``int`` -> ``intptr_t``, or the parameter's width for
        a parameter of 1, 2 or 4 bytes, ``numpy.float32`` -> ``float``).
        Each must have exactly its parameter's width (see Notes).

    Raises
    ------
    TypeError
        If ``stream`` is None (``"stream is required and must not be
        None; ..."``) or neither a Stream, a GraphBuilder nor a
        ``__cuda_stream__`` object (``"Stream or GraphBuilder expected, got
        <type>"``); if ``config`` or ``kernel`` has the wrong type, an
        argument has an unsupported type (the message names its position
        and type), the number of arguments differs from the kernel's
        parameter count, or an argument's width differs from its
        parameter's size (the message names its position, its type and
        both sizes).
    OverflowError
        If a Python int for an integer parameter of 1, 2 or 4 bytes lies
        outside both the signed and the unsigned range of that width (also
        a ValueError; the message names the argument's position, the width
        and the value).
    ValueError
        If a Python int does not fit in ``intptr_t`` (also an
        OverflowError; the message names the argument's position), a
        cooperative launch's grid cannot be co-resident (the message gives
        both numbers), or a structure argument is larger than its parameter.
    RuntimeError
        If the stream, the kernel's ObjectCode or a Buffer argument is closed,
        or a ``__cuda_stream__`` object returns something other than
        ``(0, address)``.
    CUDAError
        If the device cannot do what the configuration asks (clusters,
        cooperative launches), or the driver rejects the launch (e.g.
        ``CUDA_ERROR_INVALID_VALUE`` for a block that is too large).

    Warns
    -----
    DeprecationWarning
        For a ``stream`` that is not a Stream or GraphBuilder but implements
        ``__cuda_stream__`` (``"Passing foreign stream objects to this
        function via the stream protocol is deprecated. ..."``).

    Notes
    -----
    Deliberate difference from NVIDIA's ``cuda.core`` (the design rule "bad
    input gets a clear exception"): where the driver reports the kernel's
    parameter sizes (CUDA 12.4 or newer), an argument whose packed width
    differs from its parameter's size raises TypeError instead of being
    passed as is.  ``cuda.core`` passes e.g. a ``numpy.uint8`` for an
    ``int`` parameter (the kernel reads three bytes of whatever follows) or
    a Python ``float`` -- always an 8-byte double -- for a ``float``
    parameter: pass ``numpy.float32(x)`` there.  A Python ``int`` or
    ``bool`` for a parameter of 1, 2 or 4 bytes is packed in that width (for
    an ``int``, the bytes the driver reads of ``cuda.core``'s ``intptr_t``),
    and raises OverflowError where the value fits neither the signed nor the
    unsigned range of the width (``cuda.core`` truncates it); for 8-byte
    parameters it is an ``intptr_t``.  The parameter's type is unknown, so an ``int``
    for a ``float`` parameter passes integer bits, as in ``cuda.core``.
    The checks and the choice of width run once per kernel and combination
    of argument types, never per launch.
    """


# --------------------------------------------------------------------------
# Private helpers: the slow start and the checks that only special
# configurations need.
# --------------------------------------------------------------------------
def _check_launch_types(config: object, kernel: object) -> tuple[LaunchConfig, Kernel]:
    """Return ``(config, kernel)`` with ``config`` a LaunchConfig; raise TypeError otherwise.

    The config is coerced first, as ``cuda.core`` does (``None`` and dicts
    become LaunchConfigs); ``cuda.core`` does not check ``kernel``.
    """
    config = check_or_create_options(LaunchConfig, config, "launch config")
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a Kernel, not {type(kernel).__name__}")
    return config, kernel


def _prepare_launch(config: LaunchConfig, kernel: Kernel, stream: Stream) -> int:
    """The launch's slow start: closed checks, preparing the config, special checks.

    Returns the address of the prepared configuration structure.
    """
    if stream._closed:
        raise RuntimeError("Stream is closed; it cannot be used after close()")
    kernel._require_open()
    cfg, addr, special = config._prepare()
    if special:
        _check_special(config, kernel, stream)
    return addr


def _check_special(config: LaunchConfig, kernel: Kernel, stream: Stream) -> None:
    """Cluster and cooperative launches: device support and co-residency."""
    device = stream.device
    device_id = device.device_id
    _check_device_support(config, device_id)
    if not config._is_cooperative:
        return
    cfg = config._prepare()[0]
    grid_blocks = cfg.gridDimX * cfg.gridDimY * cfg.gridDimZ
    block_size = prod(config._block)
    key = (device_id, block_size, config._shmem_size)
    limit = kernel._coop_limits.get(key)
    if limit is None:
        per_sm = kernel.occupancy.max_active_blocks_per_multiprocessor(
            block_size, config._shmem_size
        )
        limit = per_sm * device.properties.multiprocessor_count
        kernel._coop_limits[key] = limit
    if grid_blocks > limit:
        x, y, z = cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ
        raise ValueError(
            f"The specified grid size ({x} * {y} * {z} = {grid_blocks} blocks) exceeds the "
            f"limit ({limit}) for a cooperative launch: at most max_active_blocks_per_"
            f"multiprocessor x multiprocessor_count blocks can be co-resident"
        )
