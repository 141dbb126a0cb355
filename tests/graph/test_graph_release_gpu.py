# SPDX-License-Identifier: Apache-2.0
"""What graph nodes keep alive goes once the last graph using it goes, with no later call.

Each test attaches a Python host callback and a kernel-argument object (a
pinned Buffer) to graph nodes, holds weak references to both, and lets the
consumers go one by one.  The last one is usually an executable graph closed
while a launch of it is held in flight by a stream blocker: CUDA releases
the attachments only when that launch ends, on a driver thread, after
``close()`` returned.  Between releasing the blocker (a host write) and the
check, the tests call nothing of cuda_core: they sleep and collect, and the
weak references must clear within a second.

The handles of views whose graph is gone read 0, as in cuda.core.
"""

from __future__ import annotations

import gc
import time
import weakref

import numpy as np
import pytest
from _helpers import Blocker

from cuda_core import CUDAError, LaunchConfig, LegacyPinnedMemoryResource, Program, ProgramOptions
from cuda_core._cuda_ffi import ffi
from cuda_core.graph import GraphDefinition

pytestmark = pytest.mark.gpu

SRC = r"""
extern "C" __global__ void bump(int *a) { a[0] += 1; }
"""
ONE = LaunchConfig(grid=1, block=1)


@pytest.fixture(scope="module")
def bump():
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    code = Program(SRC, "c++", ProgramOptions(arch=f"sm_{dev.arch}")).compile("cubin")
    yield code.get_kernel("bump")
    code.close()


def _counter(buf):
    return np.frombuffer(ffi.buffer(ffi.cast("char *", buf.handle), 4), dtype=np.int32)


def _attach(target, kernel, callback=True):
    """Add a host-callback node (unless ``callback`` is False) and a kernel node to ``target``.

    ``target`` is a GraphDefinition or a node.  Returns the weak references
    to the callback and to the kernel-argument Buffer, the callback's call
    list and a view of the counter the kernel bumps (valid while the Buffer lives).
    """
    calls = []

    def cb():
        calls.append(1)

    arg = LegacyPinnedMemoryResource().allocate(4)
    count = _counter(arg)
    count[:] = 0
    refs = [weakref.ref(arg)]
    if callback:
        target.callback(cb).launch(ONE, kernel, arg)
        refs.append(weakref.ref(cb))
    else:
        target.launch(ONE, kernel, arg)
    return refs, calls, count


def _gone(refs, timeout=1.0):
    """Whether every weak reference cleared within ``timeout`` (sleep and collect only)."""
    deadline = time.monotonic() + timeout
    while any(r() is not None for r in refs):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
        gc.collect()
    return True


def _alive(refs, wait=0.2):
    """Whether every weak reference is still alive after ``wait`` seconds of collecting."""
    return not _gone_any(refs, wait)


def _gone_any(refs, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gc.collect()
        if any(r() is None for r in refs):
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def hold(stream):
    """``hold()`` blocks ``stream`` until the returned blocker is released (always at teardown)."""
    made = []

    def make():
        blocker = Blocker(stream)
        made.append(blocker)
        return blocker

    yield make
    for blocker in made:
        blocker.release()
    stream.sync()
    for blocker in made:
        blocker.free()


def _close_in_flight(graph, stream, hold):
    """Launch ``graph`` behind a blocker and close it; return the blocker (release it to finish)."""
    blocker = hold()
    graph.launch(stream)
    graph.close()
    return blocker


def test_definition_and_two_executables(device, stream, bump, hold):
    gdef = GraphDefinition()
    refs, calls, count = _attach(gdef, bump)
    exe1 = gdef.instantiate()
    exe2 = gdef.instantiate()
    gdef.close()
    assert _alive(refs)  # both executables keep them
    exe1.launch(stream)
    stream.sync()
    assert calls == [1] and count[0] == 1
    exe1.close()
    assert _alive(refs)  # exe2 still does
    blocker = _close_in_flight(exe2, stream, hold)
    del exe1, exe2
    assert _alive(refs)  # the launch in flight does
    blocker.release()
    assert _gone(refs)


def test_executable_dropped_by_the_collector(device, stream, bump, hold):
    # No close() at all: the last executable goes with the garbage collector.
    gdef = GraphDefinition()
    refs, _, _ = _attach(gdef, bump)
    exe = gdef.instantiate()
    gdef.close()
    blocker = hold()
    exe.launch(stream)
    del exe
    blocker.release()
    assert _gone(refs)


def test_embedded_clone_outlives_the_child_definition(device, stream, bump, hold):
    child = GraphDefinition()
    refs, calls, _ = _attach(child, bump)
    parent = GraphDefinition()
    parent.embed(child)
    child.close()
    assert _alive(refs)  # the clone embedded in the parent keeps them
    exe = parent.instantiate()
    parent.close()
    assert _alive(refs)
    blocker = _close_in_flight(exe, stream, hold)
    del exe
    blocker.release()
    assert _gone(refs)
    assert calls == [1]  # (the counter went with its Buffer)


def test_child_graph_node_destroyed(device, stream, bump, hold):
    child = GraphDefinition()
    refs, _, _ = _attach(child, bump)
    parent = GraphDefinition()
    node = parent.embed(child)
    view = node.child_graph
    assert view.handle != 0
    child.close()
    exe = parent.instantiate()
    blocker = hold()
    exe.launch(stream)
    exe.close()
    node.destroy()  # the parent's copy goes with its node
    assert view.handle == 0 and not view.is_valid
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        view.nodes()
    del node, view, exe
    assert _alive(refs)  # the launch in flight keeps them
    blocker.release()
    assert _gone(refs)
    parent.close()


def test_child_graph_replaced_by_update(device, stream, bump, hold):
    first = GraphDefinition()
    refs, _, _ = _attach(first, bump)
    second = GraphDefinition()
    later, calls, count = _attach(second, bump)
    parent = GraphDefinition()
    node = parent.embed(first)
    first.close()
    exe = parent.instantiate()
    blocker = hold()
    exe.launch(stream)
    exe.close()
    node.update(second)  # the old clone goes; the new one keeps ``later``
    del exe, node
    blocker.release()
    assert _gone(refs)
    assert _alive(later)
    second.close()
    exe = parent.instantiate()
    exe.launch(stream)
    stream.sync()
    assert calls == [1] and count[0] == 1
    parent.close()
    exe.close()
    assert _gone(later)


def test_node_destroy(device, stream, bump, hold):
    gdef = GraphDefinition()

    def cb():
        pass

    arg = LegacyPinnedMemoryResource().allocate(4)
    refs = [weakref.ref(cb), weakref.ref(arg)]
    cb_node = gdef.callback(cb)
    k_node = gdef.launch(ONE, bump, arg)
    del cb, arg
    kept, _, _ = _attach(gdef, bump)  # another chain, which stays
    exe = gdef.instantiate()
    blocker = hold()
    exe.launch(stream)
    exe.close()
    cb_node.destroy()  # the definition lets go of what these two nodes use
    k_node.destroy()
    del cb_node, k_node, exe
    assert _alive(refs)  # the launch in flight keeps them
    blocker.release()
    assert _gone(refs)
    assert _alive(kept)  # the other chain's nodes still use theirs
    gdef.close()
    assert _gone(kept)


def test_whole_graph_update_replaces_attachments(device, stream, bump):
    old_def = GraphDefinition()
    old, old_calls, _ = _attach(old_def, bump)
    new_def = GraphDefinition()
    new, new_calls, new_count = _attach(new_def, bump)
    exe = old_def.instantiate()
    exe.launch(stream)
    stream.sync()
    assert old_calls == [1]
    exe.update(new_def)  # the executable lets go of the old ones
    del old_def  # the collector destroys the definition, the last holder
    assert _gone(old)
    del new_def
    assert _alive(new)  # the executable holds the new ones
    exe.launch(stream)
    stream.sync()
    assert new_calls == [1] and new_count[0] == 1
    del exe
    assert _gone(new)


def test_failed_update_keeps_attachments(device, stream, bump, hold):
    gdef = GraphDefinition()
    refs, calls, count = _attach(gdef, bump)
    other = GraphDefinition()
    other.launch(ONE, bump, LegacyPinnedMemoryResource().allocate(4))  # another topology
    exe = gdef.instantiate()
    gdef.close()
    with pytest.raises(CUDAError, match="Graph update failed"):
        exe.update(other)
    other.close()
    assert _alive(refs, wait=0.3)  # the executable still uses them
    exe.launch(stream)
    stream.sync()
    assert calls == [1] and count[0] == 1
    blocker = _close_in_flight(exe, stream, hold)
    del exe
    blocker.release()
    assert _gone(refs)


def test_graph_handle_reads_zero_after_close(device, bump):
    gdef = GraphDefinition()
    gdef.launch(ONE, bump, LegacyPinnedMemoryResource().allocate(4))
    exe = gdef.instantiate()
    assert exe.handle != 0
    exe.close()
    exe.close()  # idempotent
    assert exe.handle == 0 and exe.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        exe.upload(None)
    gdef.close()
    gdef.close()
    with pytest.raises(RuntimeError, match="no longer valid"):
        gdef.handle  # noqa: B018 - a closed definition (a cuda_core extra) still raises


@pytest.mark.parametrize("kind", ["if_then", "while_loop", "if_else"])
def test_conditional_bodies(device, stream, bump, kind):
    # The executable is closed idle: destroying one with a conditional node
    # in flight may wait for the launch, which a blocker would hold forever.
    gdef = GraphDefinition()
    cond = gdef.create_condition(default_value=0)
    node = getattr(gdef, kind)(cond)
    bodies = node.branches
    refs = []
    for body in bodies:  # host nodes are not allowed in conditional bodies
        refs += _attach(body, bump, callback=False)[0]
    exe = gdef.instantiate()
    exe.launch(stream)
    stream.sync()
    exe.close()
    assert _alive(refs)  # the definition's bodies keep them
    assert all(b.handle != 0 for b in bodies)
    node.destroy()  # the bodies go with their node, and what they used with them
    assert all(b.handle == 0 and not b.is_valid for b in bodies)
    assert _gone(refs)
    del node, exe
    gdef.close()
