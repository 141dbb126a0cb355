# SPDX-License-Identifier: Apache-2.0
"""Memory details a cuda.core user meets: messages, reprs, read-only attributes,
pool attributes keeping their pool, live location sets as MutableSets."""

from __future__ import annotations

import collections.abc
import gc
import re

import pytest

from cuda_core import (
    Buffer,
    CUDAError,
    DeviceMemoryResource,
    DeviceMemoryResourceOptions,
    Host,
    LegacyPinnedMemoryResource,
    VirtualMemoryResourceOptions,
)
from cuda_core._cuda_ffi import ffi
from cuda_core._memory import _owned_pool
from cuda_core._memory._graph_memory_resource import GraphMemoryResourceAttributes
from cuda_core._memory._managed_memory_resource import AccessedBySet
from cuda_core._memory._pool_attributes import _MemPoolAttributes

ATTRIBUTES = re.compile(
    r"\w*Attributes\(release_threshold=\d+, reserved_mem_current=\d+, reserved_mem_high=\d+, "
    r"reuse_allow_internal_dependencies=(True|False), reuse_allow_opportunistic=(True|False), "
    r"reuse_follow_event_dependencies=(True|False), used_mem_current=\d+, used_mem_high=\d+\)"
)
NOT_WRITABLE = r"attribute '{}' .* is not writable"


# ---------------------------------------------------------------- messages
def test_legacy_pinned_device_id():
    mr = LegacyPinnedMemoryResource()
    with pytest.raises(RuntimeError, match="not bound to any GPU"):
        _ = mr.device_id


@pytest.mark.parametrize("bad", [5, "descriptor", None, object()])
def test_from_ipc_descriptor_type(bad):
    with pytest.raises(TypeError) as info:
        Buffer.from_ipc_descriptor(LegacyPinnedMemoryResource(), bad, stream=None)
    assert str(info.value).startswith("Argument 'ipc_descriptor' has incorrect type")
    assert type(bad).__name__ in str(info.value)


VALIDATORS = [
    ("_access_to_flags", "Unknown access spec", ["rw", "r", None]),
    ("_allocation_type_to_driver", "Unsupported allocation_type", ["pinned", "managed"]),
    (
        "_location_type_to_driver",
        "Unsupported location_type",
        ["device", "host", "host_numa", "host_numa_current"],
    ),
    ("_handle_type_to_driver", "Unsupported handle_type", ["posix_fd", "fabric", None]),
    ("_granularity_to_driver", "Unsupported granularity", ["minimum", "recommended"]),
]


@pytest.mark.parametrize("name, message, good", VALIDATORS, ids=[v[0] for v in VALIDATORS])
def test_virtual_memory_option_translators(name, message, good):
    validate = getattr(VirtualMemoryResourceOptions, name)
    assert isinstance(VirtualMemoryResourceOptions.__dict__[name], staticmethod)
    with pytest.raises(ValueError) as info:
        validate("invalid")
    assert str(info.value) == f"{message}: 'invalid'"
    with pytest.raises(ValueError, match=message):
        validate(["unhashable"])
    values = [validate(spec) for spec in good]
    assert all(isinstance(v, int) for v in values)
    assert len(set(values)) == len(values)


def test_virtual_memory_translators_take_members():
    from cuda_core.typing import VirtualMemoryAccessType, VirtualMemoryGranularityType

    opts = VirtualMemoryResourceOptions
    assert opts._access_to_flags(VirtualMemoryAccessType.READ) == opts._access_to_flags("r")
    assert opts._access_to_flags(None) == 0
    minimum = VirtualMemoryGranularityType.MINIMUM
    assert opts._granularity_to_driver(minimum) == opts._granularity_to_driver("minimum")


# ---------------------------------------------------------------- read-only attributes
def test_read_only_attribute_message():
    attrs = GraphMemoryResourceAttributes._init(0)
    for name in ("reserved_mem_current", "used_mem_current"):
        with pytest.raises(AttributeError, match=NOT_WRITABLE.format(name)):
            setattr(attrs, name, 0)
        with pytest.raises(AttributeError, match=NOT_WRITABLE.format(name)):
            delattr(attrs, name)


def test_read_only_everywhere():
    # A few read-only properties of other classes, on both interpreters alike.
    pool_attrs = object.__new__(_MemPoolAttributes)
    with pytest.raises(AttributeError, match=NOT_WRITABLE.format("used_mem_high")):
        pool_attrs.used_mem_high = 1
    mr = LegacyPinnedMemoryResource()
    with pytest.raises(AttributeError, match=NOT_WRITABLE.format("is_host_accessible")):
        mr.is_host_accessible = False
    with pytest.raises(AttributeError, match=NOT_WRITABLE.format("device_id")):
        mr.device_id = 0
    # Writable properties keep their setters.
    assert GraphMemoryResourceAttributes.__dict__["used_mem_high"].fset is not None


# ---------------------------------------------------------------- pool attributes
class _PoolStandIn:
    _pool = ffi.NULL

    def __init__(self, state):
        self._state = state


def test_pool_attributes_keep_an_owned_pool(monkeypatch):
    destroyed = []
    real_destroy = _owned_pool._OwnedPool._destroy

    def destroy(self, raise_errors):
        # Only the stand-in is counted: another test's pool that the
        # collections below reclaim is destroyed for real.
        if self is state:
            destroyed.append(1)
        else:
            real_destroy(self, raise_errors)

    monkeypatch.setattr(_owned_pool._OwnedPool, "_destroy", destroy)
    state = _owned_pool._OwnedPool(ffi.NULL, "DeviceMemoryResource")
    attrs = _MemPoolAttributes._init(_PoolStandIn(state))
    assert len(state.live) == 1
    state.close()  # the resource closes: the attributes still use the pool
    assert destroyed == []
    del attrs
    gc.collect()
    gc.collect()
    assert destroyed == [1] and state.live == []
    state.token.clear()  # nothing left for the (unpatched) finalizer to destroy


def test_pool_attributes_of_a_pool_not_owned():
    attrs = _MemPoolAttributes._init(_PoolStandIn(None))
    assert attrs._state is None


# ---------------------------------------------------------------- live location sets
class _FakeManaged:
    """Stands in for a ManagedBuffer: accessed-by advice kept in a set of ids."""

    def __init__(self):
        self.ids = set()

    def _advise(self, advice, location):
        from cuda_core._cuda_ffi import lib

        loc = -1 if isinstance(location, Host) else location.device_id
        if advice == lib.CU_MEM_ADVISE_SET_ACCESSED_BY:
            self.ids.add(loc)
        else:
            self.ids.discard(loc)


class _Accessed(AccessedBySet):
    __slots__ = ()

    def _ids(self):
        return set(self._buf.ids)


def test_accessed_by_is_a_mutable_set():
    buf = _FakeManaged()
    s = _Accessed(buf)
    assert isinstance(s, collections.abc.MutableSet) and isinstance(s, collections.abc.Set)
    assert len(s) == 0 and s == set() and not s
    s |= {Host()}
    assert buf.ids == {-1} and Host() in s and s == {Host()}
    assert s <= {Host()} and s >= set() and not (s < {Host()})
    assert s | set() == {Host()} and isinstance(s | set(), set)
    assert s & {Host()} == {Host()} and s - {Host()} == set()
    assert s ^ {Host()} == set()
    assert not s.isdisjoint({Host()}) and s.isdisjoint(set())
    assert s.pop() == Host() and buf.ids == set()
    s.add(Host())
    s.discard(Host())
    s.discard("not a location")  # ignored, as set.discard ignores what is absent
    assert buf.ids == set()
    s.add(Host())
    s.clear()
    assert buf.ids == set() and len(s) == 0
    with pytest.raises(KeyError):
        s.pop()
    with pytest.raises(KeyError):
        s.remove(Host())
    with pytest.raises(TypeError):
        hash(s)


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_pool_attributes_repr_and_lifetime(device):
    mr = DeviceMemoryResource(device, DeviceMemoryResourceOptions(max_size=1 << 21))
    buf = mr.allocate(64, stream=device.default_stream)
    attrs = mr.attributes
    assert ATTRIBUTES.fullmatch(str(attrs)), str(attrs)
    assert repr(attrs).startswith(type(attrs).__name__ + "(")
    buf.close()
    device.sync()
    high = attrs.used_mem_high
    mr.close()
    del mr
    gc.collect()
    assert attrs.used_mem_high == high >= 64  # the pool lives while its attributes do
    with pytest.raises(AttributeError, match=NOT_WRITABLE.format("reserved_mem_current")):
        attrs.reserved_mem_current = 0
    del attrs
    gc.collect()


@pytest.mark.gpu
def test_graph_memory_attributes_read_only(device):
    from cuda_core import GraphMemoryResource

    attrs = GraphMemoryResource(device).attributes
    with pytest.raises(AttributeError, match=NOT_WRITABLE.format("reserved_mem_current")):
        attrs.reserved_mem_current = 0
    attrs.used_mem_high = 0  # a high watermark resets


@pytest.mark.gpu
def test_graph_allocate_zero_reaches_the_driver(device):
    from cuda_core.graph import GraphDefinition

    g = GraphDefinition()
    try:
        with pytest.raises(CUDAError):
            g.allocate(0)
        with pytest.raises(ValueError) as info:
            g.allocate(64, memory_type="invalid")
        assert str(info.value) == (
            "'invalid' is not a valid GraphMemoryType. Must be 'device', 'host' or 'managed'"
        )
    finally:
        g.close()


@pytest.mark.gpu
def test_accessed_by_on_a_managed_buffer(device):
    from cuda_core import ManagedMemoryResource

    try:
        mr = ManagedMemoryResource()
        buf = mr.allocate(1 << 16, stream=device.default_stream)
    except (CUDAError, NotImplementedError, RuntimeError) as exc:
        pytest.skip(f"no managed memory pool: {exc}")
    try:
        s = buf.accessed_by
        assert isinstance(s, collections.abc.MutableSet)
        try:
            s |= {device}
        except CUDAError as exc:  # advice on pool-allocated managed memory
            if "CUDA_ERROR_NOT_SUPPORTED" not in str(exc):
                raise
            pytest.skip(f"this driver takes no access advice for this memory: {exc}")
        assert device in s and s == {device} and s & {device} == {device}
        assert s.isdisjoint({Host()}) and s - {device} == set()
        assert s.pop() == device and len(s) == 0
        s.add(device)
        s.clear()
        assert len(s) == 0
    finally:
        buf.close()
        device.sync()


@pytest.mark.gpu
def test_legacy_pinned_buffer_device_id(device):
    buf = LegacyPinnedMemoryResource().allocate(64)
    try:
        assert buf.device_id == -1
    finally:
        buf.close()
