# SPDX-License-Identifier: Apache-2.0
"""What Buffer.from_handle, Buffer.fill and launch accept: the argument half of the oracle.

The option-type half, and the meaning of ``VALID`` / ``INVALID`` / ``EITHER``,
are in badinput_spec.py; both are used by tests/_scripts/badinput_checks.py.
"""

from __future__ import annotations

import numpy as np
from _scripts.badinput_spec import (
    EITHER,
    INVALID,
    SIZE_MAX,
    VALID,
    _index,
    _is_py_int,
    integer,
)

__all__ = ["fill_verdict", "from_handle_verdict", "launch_verdict"]


# --------------------------------------------------------------------------
# Arguments of Buffer.from_handle, Buffer.fill and launch.
# --------------------------------------------------------------------------
def _is_cdata(v):
    from cuda_core._cuda_ffi import ffi

    return isinstance(v, ffi.CData)


def from_handle_verdict(ptr, size, mr=None, owner=None, stream=None):
    """VALID/INVALID/EITHER for ``Buffer.from_handle(ptr, size, mr, owner, stream=...)``."""
    from cuda_core import MemoryResource

    verdicts = []
    if ptr is None:
        verdicts.append(INVALID)  # cuda.core's int(ptr) refuses None
    elif _is_cdata(ptr):
        verdicts.append(VALID)
    elif isinstance(ptr, (bool, np.bool_)):
        verdicts.append(EITHER)
    else:
        value = _index(ptr)
        if value is None or not 0 <= value <= SIZE_MAX:
            verdicts.append(INVALID)
        else:
            verdicts.append(VALID if _is_py_int(ptr) else EITHER)
    verdicts.append(integer(0, SIZE_MAX, none_ok=False)(size))
    if mr is not None and not isinstance(mr, MemoryResource):
        verdicts.append(INVALID)
    if mr is not None and owner is not None:
        verdicts.append(INVALID)
    if stream is not None and mr is None:
        verdicts.append(INVALID)
    if INVALID in verdicts:
        return INVALID
    return EITHER if EITHER in verdicts else VALID


def fill_verdict(value, size):
    """VALID/INVALID/EITHER for ``buf.fill(value, stream=...)`` on a ``size``-byte buffer."""
    if isinstance(value, bool):
        return EITHER
    if isinstance(value, int):
        return VALID if 0 <= value < 256 else INVALID
    try:
        nbytes = memoryview(value).nbytes
    except TypeError:
        return INVALID
    if nbytes not in (1, 2, 4):
        return INVALID
    return VALID if size % nbytes == 0 else INVALID


#: Parameter sizes of the ``sink(unsigned long long, unsigned int, double)`` kernel.
SINK_PARAM_SIZES = (8, 4, 8)


def launch_arg_size(arg):
    """Bytes ``launch`` packs for ``arg``, or None if it is not a kernel argument type."""
    import ctypes

    from cuda_core import Buffer

    if isinstance(arg, Buffer):
        return 8
    if isinstance(arg, (np.generic,)) and not isinstance(arg, (np.str_, np.bytes_, np.object_)):
        if isinstance(arg, np.void) and arg.dtype.fields is None:
            return None
        return arg.dtype.itemsize
    if isinstance(arg, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union)):
        if isinstance(arg, (ctypes.c_char_p, ctypes.c_wchar_p, ctypes.c_void_p)):
            return None
        return ctypes.sizeof(arg)
    if isinstance(arg, bool):
        return 1
    if isinstance(arg, int):
        return 8
    if isinstance(arg, float):
        return 8
    if isinstance(arg, complex):
        return 16
    return None


def launch_int_out_of_range(args):
    """A Python int beyond intptr_t (launch raises a ValueError that is also an OverflowError)."""
    return any(
        isinstance(a, int) and not isinstance(a, bool) and not -(2**63) <= a < 2**63 for a in args
    )


def launch_verdict(args, count_checked=True):
    """VALID/INVALID/EITHER for ``launch(stream, config, sink, *args)``.

    ``count_checked``: whether the driver reports the kernel's parameters
    (CUDA 12.4 or newer), so that the argument count and sizes are checked.
    """
    sizes = [launch_arg_size(a) for a in args]
    if None in sizes:
        return INVALID
    if len(args) != len(SINK_PARAM_SIZES):
        return INVALID if count_checked else EITHER
    if launch_int_out_of_range(args):
        return INVALID
    if not all(_launch_size_ok(a, s, p) for a, s, p in zip(args, sizes, SINK_PARAM_SIZES)):
        return INVALID if count_checked else EITHER  # a width other than the parameter's
    return VALID


def _launch_size_ok(arg, size, param_size):
    """Scalars must have the parameter's width; structures may be shorter (zero-padded).

    A Python int or bool for a parameter of 1, 2 or 4 bytes is packed in
    that width when it fits its signed or unsigned range.
    """
    import ctypes

    if isinstance(arg, int) and param_size in (1, 2, 4):
        bits = 8 * param_size
        return -(1 << (bits - 1)) <= arg < (1 << bits)

    if isinstance(arg, (ctypes.Structure, ctypes.Union)) or (
        isinstance(arg, np.void) and arg.dtype.fields is not None
    ):
        return size <= param_size
    return size == param_size
