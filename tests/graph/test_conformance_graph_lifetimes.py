# SPDX-License-Identifier: Apache-2.0
"""Graphs behave as cuda.core's: what graphs keep alive, and until when."""

from __future__ import annotations

import ctypes
import gc
import weakref

import numpy as np
from _conformance_graph_setup import (
    ONE,
    _pinned,
    _RecordingResource,
    _view,
    _wait_for,
    gpu,
    kernels,  # noqa: F401 (fixtures)
)

from cuda_core import (
    Buffer,
)
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._memory._release import _SharedRelease, claim_allocation
from cuda_core.graph import (
    GraphDefinition,
    _attachments,
)


# ==========================================================================
# 1b. What graphs keep alive, and until when
# ==========================================================================
def test_a_claim_keeps_the_allocation_past_buffer_close():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x1000, 64, mr=mr)
    claim = claim_allocation(buf)
    assert type(buf._release) is _SharedRelease
    buf.close()
    assert buf.is_closed and buf.handle == 0
    assert mr.freed == []  # the graph's claim keeps the memory
    claim.drop()
    assert mr.freed == [0x1000]  # the last claim frees it, once
    claim.drop()
    assert mr.freed == [0x1000]


def test_the_last_claim_frees_whoever_holds_it():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x2000, 64, mr=mr)
    first = claim_allocation(buf)
    second = first.clone()  # a new node version keeping the same memory
    first.drop()
    buf.close()
    assert mr.freed == []
    second.drop()
    assert mr.freed == [0x2000]


def test_buffer_garbage_collected_while_claimed():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x3000, 64, mr=mr)
    claim = claim_allocation(buf)
    del buf
    gc.collect()
    assert mr.freed == []  # the Buffer's finalizer dropped only its own claim
    claim.drop()
    assert mr.freed == [0x3000]


def test_non_owning_buffers_give_their_owner():
    owner = object()
    view = Buffer.from_handle(0x4000, 64, owner=owner)
    assert claim_allocation(view) is owner
    assert claim_allocation(Buffer.from_handle(0x4000, 64)) is None


def test_released_attachment_drops_its_claims():
    mr = _RecordingResource()
    buf = Buffer.from_handle(0x5000, 64, mr=mr)
    att = _attachments._Attachment((claim_allocation(buf), "a plain owner"))
    token = next(_attachments._TOKENS)
    _attachments._LIVE[token] = att
    buf.close()
    assert mr.freed == []
    lib.cc_user_object_release(ffi.cast("void *", token))  # what the driver's destructor does
    _attachments.drain()
    assert mr.freed == [0x5000]


def test_empty_user_data_is_null():
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    fn = proto(lambda p: None)
    cb = _attachments.resolve_host_callback(fn, b"")
    assert cb.c_data == ffi.NULL and cb.owners == (fn,)


@gpu
def test_closed_buffer_stays_allocated_while_a_graph_copies_through_it(device, stream):
    n = 1024
    nbytes = 4 * n
    h_in, h_out = _pinned(nbytes), _pinned(nbytes)
    v_in, v_out = _view(h_in, np.float32, n), _view(h_out, np.float32, n)
    dbuf = device.allocate(nbytes, stream=stream)
    stream.sync()
    address = dbuf.handle
    gdef = GraphDefinition()
    gdef.memcpy(dbuf, h_in, nbytes).memcpy(h_out, dbuf, nbytes)
    shared = dbuf._release
    dbuf.close()
    assert dbuf.is_closed and dbuf.handle == 0
    # Still allocated: the pool cannot hand the address out again.
    others = [device.allocate(nbytes, stream=stream) for _ in range(4)]
    for other in others:
        other.fill(0xFF, stream=stream)
    stream.sync()
    assert address not in {o.handle for o in others}
    graph = gdef.instantiate()
    rng = np.random.default_rng(7)
    for _ in range(4):
        expected = rng.standard_normal(n).astype(np.float32)
        v_in[:] = expected
        graph.launch(stream)
        stream.sync()
        np.testing.assert_array_equal(v_out, expected)
    for other in others:
        other.close()
    gdef.close()  # the executable still holds the copy nodes' memory
    v_in[:] = 3.0
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(v_out, np.full(n, 3.0, np.float32))
    assert shared.claims > 0
    graph.close()
    stream.sync()
    assert _wait_for(lambda: shared.claims == 0)  # freed with the last user


@gpu
def test_memset_keeps_an_owner_buffers_allocation(device, stream):
    h = _pinned(64)
    arr = _view(h, np.uint8, 64)
    arr[:] = 0
    owner = _pinned(64)  # a Buffer given as owner keeps its allocation, not itself
    gdef = GraphDefinition()
    gdef.memset(h.handle, 9, 64, dst_owner=owner)
    shared = owner._release
    owner.close()
    assert shared.claims == 1
    graph = gdef.instantiate()
    graph.launch(stream)
    stream.sync()
    assert (arr == 9).all()
    graph.close()
    gdef.close()
    assert _wait_for(lambda: shared.claims == 0)


@gpu
def test_destroying_a_node_releases_its_kernel_arguments(device, kernels):
    gdef = GraphDefinition()
    arg = _pinned(4)
    ref = weakref.ref(arg)
    node = gdef.launch(ONE, kernels.bump, arg)
    gdef.empty()
    del arg
    gc.collect()
    assert ref() is not None  # the node keeps its arguments
    node.destroy()
    assert _wait_for(lambda: ref() is None)
    gdef.close()


@gpu
def test_executable_keeps_the_arguments_of_a_destroyed_node(device, stream, kernels):
    gdef = GraphDefinition()
    arg = _pinned(4)
    counter = _view(arg, np.int32, 1)
    counter[:] = 0
    ref = weakref.ref(arg)
    node = gdef.launch(ONE, kernels.bump, arg)
    graph = gdef.instantiate()
    del arg
    node.destroy()
    gdef.close()
    _wait_for(lambda: False, timeout=0.05)
    assert ref() is not None  # the executable still uses them
    graph.launch(stream)
    graph.launch(stream)
    stream.sync()
    assert counter[0] == 2
    graph.close()
    stream.sync()
    assert _wait_for(lambda: ref() is None)


@gpu
def test_host_callback_user_data_lives_as_long_as_the_node(device, stream):
    got = []
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    @proto
    def fn(ptr):
        got.append(None if ptr is None else ctypes.string_at(ptr, 5))

    data = bytearray(b"hello")
    gdef = GraphDefinition()
    node = gdef.callback(fn, user_data=data)
    node.join().callback(fn, user_data=b"")  # no bytes: NULL user data
    data[:] = b"xxxxx"  # the node has its own copy
    del data
    gc.collect()
    graph = gdef.instantiate()
    entries = gdef._box.maps[gdef._h]
    assert node._h in entries
    node.destroy()  # the definition lets go of the copy; the executable keeps its own
    assert node._h not in entries
    gdef.close()
    gc.collect()
    for _ in range(2):
        graph.launch(stream)
    stream.sync()
    assert got == [b"hello", None, b"hello", None]
    graph.close()


@gpu
def test_embedded_copy_keeps_what_the_childs_nodes_use(device, stream):
    n = 256
    nbytes = 4 * n
    h_in, h_out = _pinned(nbytes), _pinned(nbytes)
    v_in, v_out = _view(h_in, np.int32, n), _view(h_out, np.int32, n)
    dbuf = device.allocate(nbytes, stream=stream)
    stream.sync()
    child = GraphDefinition()
    child.memcpy(dbuf, h_in, nbytes).memcpy(h_out, dbuf, nbytes)
    parent = GraphDefinition()
    cnode = parent.embed(child)
    shared = dbuf._release
    child.close()
    dbuf.close()
    assert shared.claims > 0  # the embedded copy keeps the child's attachments
    copy = cnode.child_graph
    mapped = parent._box.maps[copy._h]
    assert {node._h for node in copy.nodes()} == set(mapped)
    graph = parent.instantiate()
    v_in[:] = np.arange(n, dtype=np.int32)
    graph.launch(stream)
    stream.sync()
    np.testing.assert_array_equal(v_out, np.arange(n, dtype=np.int32))
    graph.close()
    parent.close()
    assert _wait_for(lambda: shared.claims == 0)
