# SPDX-License-Identifier: Apache-2.0
"""What each option type and argument accepts: the oracle of the bad-input tests.

Used by tests/test_hardening_badinput.py (fixed tables of values) and
tests/test_hardening_hypothesis.py (generated values).  For a set of keyword
arguments, :func:`classify` says ``VALID`` (must be accepted), ``INVALID``
(must raise TypeError or ValueError with a message naming the field) or
``EITHER`` (both are fine: lenient coercions such as ``1`` for ``True``, and
values whose range only a device can check).

The rules are written from the documented contracts (the docstrings and
upstream ``cuda.core`` semantics), not from the implementation.
:data:`KNOWN_DEFECTS` lists inputs where the implementation is known to
differ (none at present); the property tests skip those, and
test_hardening_badinput.py pins each of them with an ``xfail(strict=True)``
test.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import os
import re

import numpy as np
from _scripts.badinput_values import WEIRD_VALUES, IndexOnly, PathLikeValue  # noqa: F401 (re-exported)

__all__ = [
    "EITHER",
    "INVALID",
    "KNOWN_DEFECTS",
    "VALID",
    "WEIRD_VALUES",
    "base_kwargs",
    "check_example",
    "classify",
    "known_defect",
    "option_classes",
]

VALID, INVALID, EITHER = "valid", "invalid", "either"
SIZE_MAX = 2**64 - 1
UINT_MAX = 2**32 - 1


# --------------------------------------------------------------------------
# Field rules.  Each returns VALID, INVALID or EITHER for one value.
# --------------------------------------------------------------------------
def _is_py_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _index(v):
    """Return ``v`` as an int if it is an integer (not a bool), else None."""
    if isinstance(v, (bool, np.bool_, type)):
        return None
    try:
        return operator.index(v)
    except Exception:  # noqa: BLE001 - not an integer
        return None


def _is_index_int(v):
    return _index(v) is not None


def flag(*, accept_01, none_ok):
    """A bool field: True/False; ``accept_01``: the ints 0 and 1 too."""

    def rule(v):
        if isinstance(v, bool):
            return VALID
        if v is None:
            return VALID if none_ok else INVALID
        if type(v) is int and v in (0, 1):
            return VALID if accept_01 else EITHER
        if isinstance(v, np.bool_):
            return EITHER
        return INVALID

    return rule


def integer(lo=None, hi=None, *, none_ok=True, bool_ok=False, soft_hi=None):
    """An int in ``[lo, hi]``; numpy/``__index__`` ints may or may not be taken.

    Values above ``soft_hi`` are EITHER (a device or compiler rejects them later).
    """

    def rule(v):
        if v is None:
            return VALID if none_ok else INVALID
        if isinstance(v, bool):
            return EITHER if bool_ok else INVALID
        if isinstance(v, np.bool_):
            return EITHER  # NumPy versions differ on whether np.bool_ is an index
        value = _index(v)
        if value is None:
            return INVALID
        inside = (lo is None or value >= lo) and (hi is None or value <= hi)
        if not inside:
            return INVALID
        if soft_hi is not None and value > soft_hi:
            return EITHER
        return VALID if _is_py_int(v) else EITHER

    return rule


def string(*, none_ok=True, path_ok=False):
    def rule(v):
        if v is None:
            return VALID if none_ok else INVALID
        if isinstance(v, str):
            return VALID
        if path_ok and isinstance(v, os.PathLike):
            return VALID
        return INVALID

    return rule


def str_or_seq(*, path_ok=False):
    one = string(none_ok=False, path_ok=path_ok)

    def rule(v):
        if v is None:
            return VALID
        if one(v) == VALID:
            return VALID
        if isinstance(v, (list, tuple)):
            return VALID if all(one(x) == VALID for x in v) else INVALID
        return INVALID

    return rule


def choice(values, *, none_ok=False, enum_types=()):
    def rule(v):
        if v is None:
            return VALID if none_ok else INVALID
        if isinstance(v, enum.Enum):
            if isinstance(v, enum_types):
                return VALID
            return EITHER if v.value in values else INVALID
        if isinstance(v, str) and str(v) in values and type(v) is str:
            return VALID
        if isinstance(v, str) and str.__str__(v) in values:
            return EITHER  # a str subclass with an allowed value
        return INVALID

    return rule


_ARCH = re.compile(r"(sm|compute|lto)_[0-9]+[a-z]?")


def arch(v):
    if v is None:
        return VALID
    if not isinstance(v, str):
        return INVALID
    if _ARCH.fullmatch(v):
        return VALID
    if _ARCH.fullmatch(v[:-1]) and v[-1:].isascii() and v[-1:].isupper():
        return EITHER  # "sm_90A": the compiler rejects it at compile time
    return INVALID


def diag(v):
    one = integer(0, none_ok=False)
    if v is None:
        return VALID
    if isinstance(v, (list, tuple)):
        results = [one(x) for x in v]
        if INVALID in results:
            return INVALID
        return EITHER if EITHER in results else VALID
    return one(v)


def define_macro(v):
    def one(m):
        if isinstance(m, str):
            return VALID
        if isinstance(m, tuple) and len(m) == 2 and all(isinstance(x, str) for x in m):
            return VALID
        return INVALID

    if v is None:
        return VALID
    if isinstance(v, (str, tuple)):
        return one(v)
    if isinstance(v, list):
        return VALID if all(one(m) == VALID for m in v) else INVALID
    return INVALID


def extra_sources(v):
    if v is None:
        return VALID
    if not isinstance(v, (list, tuple)):
        return INVALID
    for item in v:
        if not (isinstance(item, tuple) and len(item) == 2):
            return INVALID
        name, source = item
        if not isinstance(name, str) or not isinstance(source, (str, bytes, bytearray)):
            return INVALID
        if len(source) == 0:
            return INVALID
    return VALID


def frandom_seed(v):
    if v is None or isinstance(v, str) or _is_py_int(v):
        return VALID
    return INVALID


def time_option(v):
    if v is None or isinstance(v, (str, os.PathLike, bool)):
        return VALID
    return INVALID


def anything(v):
    return VALID


def truthy(v):
    return VALID if isinstance(v, bool) else EITHER


def stream_or_none(v):
    from cuda_core import Stream

    if v is None or isinstance(v, Stream):
        return VALID
    if hasattr(v, "__cuda_stream__"):
        return EITHER
    return INVALID


def peers(v):
    if isinstance(v, (tuple, list, set, frozenset)):
        ok = all(_is_py_int(p) and p >= 0 for p in v)
        return VALID if ok else INVALID
    if isinstance(v, (bytes, bytearray, dict, range)) or (isinstance(v, str) and not v):
        return EITHER  # iterables of ints in disguise, or nothing at all
    return INVALID


def dims(*, none_ok=False):
    """A launch dimension: a positive 32-bit int or a tuple/list of 1-3 of them."""

    def one(x):
        if isinstance(x, np.bool_):
            return EITHER  # NumPy versions differ on whether np.bool_ is an index
        value = _index(x)
        if value is None:
            return INVALID
        if not 1 <= value <= UINT_MAX:
            return INVALID
        return VALID if _is_py_int(x) else EITHER

    def rule(v):
        if v is None:
            return VALID if none_ok else INVALID
        if isinstance(v, (tuple, list)):
            if not 1 <= len(v) <= 3:
                return INVALID
            results = [one(x) for x in v]
            if INVALID in results:
                return INVALID
            return EITHER if EITHER in results else VALID
        return one(v)

    return rule


# --------------------------------------------------------------------------
# The option classes.
# --------------------------------------------------------------------------
def _option_classes():
    from cuda_core import (
        DeviceMemoryResourceOptions,
        LaunchConfig,
        LinkerOptions,
        ManagedMemoryResourceOptions,
        PinnedMemoryResourceOptions,
        ProgramOptions,
        StreamOptions,
        VirtualMemoryResourceOptions,
    )
    from cuda_core._event import EventOptions
    from cuda_core.graph import GraphCompleteOptions, GraphDebugPrintOptions

    strict = flag(accept_01=False, none_ok=True)
    # As in cuda.core, ProgramOptions takes every value as given: only
    # extra_sources is checked at construction (``name`` must be a str: its
    # ``encode()`` raises AttributeError, which is outside this pool's rules).
    program_rules = {f.name: anything for f in dataclasses.fields(ProgramOptions)}
    program_rules["name"] = string(none_ok=False)
    program_rules["extra_sources"] = extra_sources
    linker_rules = {
        "name": string(),
        "arch": arch,
        "max_register_count": integer(1, soft_hi=UINT_MAX),
        "optimization_level": integer(0, 4),
        "split_compile": integer(0, bool_ok=True, soft_hi=UINT_MAX),
        "split_compile_extended": integer(0, bool_ok=True, soft_hi=UINT_MAX),
        "kernels_used": str_or_seq(),
        "variables_used": str_or_seq(),
        "ptxas_options": str_or_seq(),
    }
    for f in dataclasses.fields(LinkerOptions):
        linker_rules.setdefault(f.name, strict)
    lenient = flag(accept_01=True, none_ok=False)
    # As upstream, the graph options are plain dataclasses: construction takes
    # any value (each field counts by its truth value when used).
    graph_print_rules = {f.name: anything for f in dataclasses.fields(GraphDebugPrintOptions)}
    from cuda_core._memory._managed_memory_resource import ManagedMemoryLocationType
    from cuda_core._memory._virtual_memory_resource import (
        VirtualMemoryAccessType,
        VirtualMemoryAllocationType,
        VirtualMemoryGranularityType,
        VirtualMemoryHandleType,
        VirtualMemoryLocationType,
    )

    classes = {
        StreamOptions: {
            "nonblocking": lenient,
            "priority": integer(soft_hi=-1 + 2**31),
        },
        EventOptions: {
            "timing_enabled": flag(accept_01=True, none_ok=True),
            "blocking_sync": flag(accept_01=True, none_ok=True),
            "ipc_enabled": flag(accept_01=True, none_ok=True),
        },
        ProgramOptions: program_rules,
        LinkerOptions: linker_rules,
        DeviceMemoryResourceOptions: {
            "ipc_enabled": flag(accept_01=False, none_ok=False),
            "max_size": _max_size,
        },
        PinnedMemoryResourceOptions: {
            "ipc_enabled": flag(accept_01=False, none_ok=False),
            "max_size": _max_size,
            "numa_id": integer(0, soft_hi=UINT_MAX),
        },
        ManagedMemoryResourceOptions: {
            "preferred_location": integer(-1, soft_hi=UINT_MAX),
            "preferred_location_type": choice(
                ("device", "host", "host_numa"),
                none_ok=True,
                enum_types=(ManagedMemoryLocationType,),
            ),
        },
        VirtualMemoryResourceOptions: {
            "allocation_type": choice(
                ("pinned", "managed"), enum_types=(VirtualMemoryAllocationType,)
            ),
            "location_type": choice(
                ("device", "host", "host_numa", "host_numa_current"),
                enum_types=(VirtualMemoryLocationType,),
            ),
            "handle_type": choice(
                ("posix_fd", "win32", "win32_kmt", "fabric"),
                none_ok=True,
                enum_types=(VirtualMemoryHandleType,),
            ),
            "granularity": choice(
                ("minimum", "recommended"), enum_types=(VirtualMemoryGranularityType,)
            ),
            "gpu_direct_rdma": flag(accept_01=True, none_ok=False),
            "addr_hint": integer(0, soft_hi=SIZE_MAX),
            "addr_align": integer(0, soft_hi=SIZE_MAX),
            "peers": peers,
            "self_access": choice(("rw", "r"), none_ok=True, enum_types=(VirtualMemoryAccessType,)),
            "peer_access": choice(("rw", "r"), none_ok=True, enum_types=(VirtualMemoryAccessType,)),
            "win32_handle_metadata": anything,  # unused on Linux
        },
        GraphCompleteOptions: {
            "auto_free_on_launch": anything,
            "upload_stream": anything,
            "device_launch": anything,
            "use_node_priority": anything,
        },
        GraphDebugPrintOptions: graph_print_rules,
        LaunchConfig: {
            "grid": dims(),
            "block": dims(),
            "cluster": dims(none_ok=True),
            "shmem_size": integer(0, UINT_MAX),
            "is_cooperative": truthy,
            "programmatic_stream_serialization": truthy,
        },
    }
    return classes


def _max_size(v):
    # A pool size: an int >= 0; above size_t the pool creation rejects it later.
    if isinstance(v, bool):
        return INVALID
    if isinstance(v, np.bool_):
        return EITHER  # NumPy versions differ on whether np.bool_ is an index
    value = _index(v)
    if value is None:
        return INVALID
    if value < 0:
        return INVALID
    if value > SIZE_MAX:
        return EITHER
    return VALID if _is_py_int(v) else EITHER


_CLASSES = []


def option_classes():
    """Return ``{class: {field: rule}}`` (built once, on first use)."""
    if not _CLASSES:
        _CLASSES.append(_option_classes())
    return _CLASSES[0]


def base_kwargs(cls):
    """Keyword arguments every example of ``cls`` starts from."""
    name = cls.__name__
    if name in ("ProgramOptions", "LinkerOptions"):
        return {"arch": "sm_90"}
    if name == "LaunchConfig":
        return {"grid": 1, "block": 1}
    return {}


def classify(cls, kwargs):
    """Return VALID, INVALID or EITHER for ``cls(**kwargs)``."""
    rules = option_classes()[cls]
    results = [rules[name](value) for name, value in kwargs.items()]
    if INVALID in results:
        return INVALID
    verdict = EITHER if EITHER in results else VALID
    try:
        cross = _cross_field(cls.__name__, kwargs)
    except Exception:  # noqa: BLE001 - exotic int-likes: no firm expectation
        return EITHER
    if cross is not None:
        return cross
    return verdict


def _cross_field(name, kw):
    """Rules that involve more than one field (None: no objection)."""
    # EventOptions(ipc_enabled=True, timing_enabled=True) constructs, as in
    # cuda.core: creating an event with it raises (tests/test_event.py).
    if name == "LinkerOptions":
        if kw.get("ptx") is True and kw.get("link_time_optimization") is not True:
            return INVALID
    if name == "ManagedMemoryResourceOptions":
        loc = kw.get("preferred_location")
        kind = kw.get("preferred_location_type")
        kind = getattr(kind, "value", kind)
        if kind is None:
            return None
        if kind == "device" and (loc is None or loc < 0):
            return INVALID
        if kind == "host" and loc is not None:
            return INVALID
        if kind == "host_numa" and loc is not None and loc < 0:
            return INVALID
    if name == "LaunchConfig":
        if kw.get("grid") is None or kw.get("block") is None:
            return INVALID  # both are required
        grid, cluster = kw.get("grid"), kw.get("cluster")
        try:
            g = _as_dims(grid)
            c = _as_dims(cluster)
        except Exception:  # noqa: BLE001 - an invalid field decides already
            return None
        if g is not None and c is not None and any(a * b > UINT_MAX for a, b in zip(g, c)):
            return INVALID
    return None


def _true(v):
    return v is True or (type(v) is int and v == 1)


def _as_dims(v):
    if v is None:
        return None
    items = v if isinstance(v, (tuple, list)) else (v,)
    d = tuple(_index(x) for x in items)
    if None in d:
        raise TypeError("not a dimension")
    return d + (1,) * (3 - len(d))


# --------------------------------------------------------------------------
# Known defects: (class name, field, predicate(value), description).
# --------------------------------------------------------------------------
#: None at present: every defect the bad-input tests found has been fixed (the
#: tests of test_hardening_badinput.py that pinned them now assert the fix).
KNOWN_DEFECTS = [
    (
        "ProgramOptions",
        "name",
        lambda v: not isinstance(v, str),
        "not a defect: as in cuda.core, a non-str name raises AttributeError (name.encode())",
    ),
]

#: Words that count as naming a field in an error message, besides its name.
FIELD_ALIASES = {"extra_sources": ("extra module", "Module")}


def known_defect(cls, kwargs):
    """Return the description of a known defect this example hits, or None."""
    name = cls.__name__
    for cls_name, field, pred, text in KNOWN_DEFECTS:
        if cls_name != name:
            continue
        if field in kwargs:
            try:
                hit = pred(kwargs[field])
            except Exception:  # noqa: BLE001
                hit = False
            if hit:
                return text
    return None


def check_example(cls, kwargs, varied=None):
    """Construct ``cls(**kwargs)`` and judge the outcome against :func:`classify`.

    ``varied``: the fields under test (default: all of ``kwargs``); an
    error for an invalid example must name one of them or the class.
    Returns a problem description, or None when the behaviour is right.
    """
    varied = list(kwargs) if varied is None else list(varied)
    verdict = classify(cls, kwargs)
    try:
        obj = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        if verdict == VALID:
            return f"{cls.__name__}({kwargs!r}) is valid but raised {exc!r}"
        message = str(exc)
        if not message:
            return f"{cls.__name__}({kwargs!r}) raised {type(exc).__name__} with no message"
        words = [cls.__name__, *varied]
        for k in varied:
            words.extend(FIELD_ALIASES.get(k, ()))
            words.extend(part for part in k.split("_") if len(part) >= 3)
        lowered = message.lower()
        named = any(w.lower() in lowered for w in words)
        if verdict == INVALID and not named:
            return (
                f"{cls.__name__}({kwargs!r}) raised {type(exc).__name__}({message!r}), "
                "which names neither the class nor the field"
            )
        return None
    except Exception as exc:  # noqa: BLE001 - the wrong kind of error
        from cuda_core import CUDAError

        if isinstance(exc, CUDAError) and verdict != VALID:
            return None
        return f"{cls.__name__}({kwargs!r}) raised {type(exc).__name__}: {exc}"
    if verdict == INVALID:
        return f"{cls.__name__}({kwargs!r}) was silently accepted as {obj!r}"
    return None
