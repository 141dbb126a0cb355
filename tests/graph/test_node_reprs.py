# SPDX-License-Identifier: Apache-2.0
"""Graph node reprs as cuda.core prints them: ``<Kind handle=0x... field=...>``.

The CPU tests build node objects over stand-in values (no driver: the
repr reads only what the node recorded when it was made); the GPU test
builds one node of each kind in a real graph.
"""

from __future__ import annotations

import re

import pytest
from _graph_setup import ONE, k, mod  # noqa: F401 - fixtures

from cuda_core import DeviceMemoryResource, LegacyPinnedMemoryResource
from cuda_core._cuda_ffi import ffi
from cuda_core.graph import (
    AllocNode,
    ChildGraphNode,
    EmptyNode,
    EventRecordNode,
    EventWaitNode,
    FreeNode,
    GraphDefinition,
    HostCallbackNode,
    IfElseNode,
    IfNode,
    KernelNode,
    MemcpyNode,
    MemsetNode,
    SwitchNode,
    WhileNode,
)
from cuda_core.graph._graph_condition import GraphCondition

H = r"0x[0-9a-f]+"
PATTERNS = {
    AllocNode: rf"<AllocNode handle={H} dptr={H} size=\d+>",
    FreeNode: rf"<FreeNode handle={H} dptr={H}>",
    MemsetNode: rf"<MemsetNode handle={H} dptr={H} value=\d+>",
    MemcpyNode: rf"<MemcpyNode handle={H} dst={H}\([DH]\) src={H}\([DH]\) size=\d+>",
    KernelNode: rf"<KernelNode handle={H} kernel={H}>",
    ChildGraphNode: rf"<ChildGraphNode handle={H} child={H}>",
    EventRecordNode: rf"<EventRecordNode handle={H} event={H}>",
    EventWaitNode: rf"<EventWaitNode handle={H} event={H}>",
    HostCallbackNode: rf"<HostCallbackNode handle={H} callback=\w+>",
    IfNode: rf"<IfNode handle={H} condition={H}>",
    IfElseNode: rf"<IfElseNode handle={H} condition={H}>",
    WhileNode: rf"<WhileNode handle={H} condition={H}>",
    SwitchNode: rf"<SwitchNode handle={H} condition={H}>",
    EmptyNode: rf"<EmptyNode handle={H}>",
}


class _Child:
    """Stands in for a child GraphDefinition: the repr reads its handle."""

    _h = 0xC0FFEE


def _stand_in(cls, handle=0xABC0, destroyed=False, **fields):
    node = object.__new__(cls)
    node._gdef = None
    node._node = ffi.cast("CUgraphNode", handle)
    node._h = handle
    node._destroyed = destroyed
    node._dep = None
    for name in cls._extra:
        setattr(node, name, None)
    for name, value in fields.items():
        setattr(node, name, value)
    return node


def _host_fn():
    pass


def _stand_ins():
    cond = GraphCondition._from_handle(0x51)
    return {
        AllocNode: {"_meta": (0x7F0000, 4096, 0, "device", ())},
        FreeNode: {"_dptr": 0x7F0000},
        MemsetNode: {"_fill": (0x7F0000, 7, 1, 16, 1, 0)},
        MemcpyNode: {"_copy": (0x7F0000, 0x1000, 64, False, True)},
        KernelNode: {"_kern_h": 0x5000, "_launch": ((1, 1, 1), (1, 1, 1), 0)},
        ChildGraphNode: {"_child": _Child()},
        EventRecordNode: {"_event_h": 0xE1},
        EventWaitNode: {"_event_h": 0xE2},
        HostCallbackNode: {"_callback": _host_fn},
        IfNode: {"_condition": cond},
        IfElseNode: {"_condition": cond},
        WhileNode: {"_condition": cond},
        SwitchNode: {"_condition": cond},
        EmptyNode: {},
    }


@pytest.mark.parametrize("cls", list(PATTERNS), ids=lambda c: c.__name__)
def test_repr_of_each_kind(cls):
    node = _stand_in(cls, **_stand_ins()[cls])
    assert re.fullmatch(PATTERNS[cls], repr(node)), repr(node)


def test_repr_fields():
    fields = _stand_ins()
    assert (
        repr(_stand_in(MemcpyNode, **fields[MemcpyNode]))
        == "<MemcpyNode handle=0xabc0 dst=0x7f0000(D) src=0x1000(H) size=64>"
    )
    assert (
        repr(_stand_in(AllocNode, **fields[AllocNode]))
        == "<AllocNode handle=0xabc0 dptr=0x7f0000 size=4096>"
    )
    assert (
        repr(_stand_in(MemsetNode, **fields[MemsetNode]))
        == "<MemsetNode handle=0xabc0 dptr=0x7f0000 value=7>"
    )
    assert repr(_stand_in(KernelNode, **fields[KernelNode])) == (
        "<KernelNode handle=0xabc0 kernel=0x5000>"
    )
    assert repr(_stand_in(ChildGraphNode, **fields[ChildGraphNode])) == (
        "<ChildGraphNode handle=0xabc0 child=0xc0ffee>"
    )
    assert repr(_stand_in(WhileNode, **fields[WhileNode])) == (
        "<WhileNode handle=0xabc0 condition=0x51>"
    )
    assert repr(_stand_in(HostCallbackNode, **fields[HostCallbackNode])) == (
        "<HostCallbackNode handle=0xabc0 callback=_host_fn>"
    )


def test_destroyed_node_shows_a_null_handle_and_its_recorded_fields():
    node = _stand_in(FreeNode, destroyed=True, _dptr=0x7F0000)
    assert repr(node) == "<FreeNode handle=0x0 dptr=0x7f0000>"
    # A ctypes callback (no Python callable) of a destroyed node: no address to read.
    node = _stand_in(HostCallbackNode, destroyed=True, _callback=None)
    assert repr(node) == "<HostCallbackNode handle=0x0 cfunc=0x0>"


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_reprs_of_a_real_graph(device, k):  # noqa: F811 - fixture
    g = GraphDefinition()
    try:
        alloc = g.allocate(1024)
        free = alloc.deallocate(alloc.dptr)
        dmr = DeviceMemoryResource(device)
        dbuf = dmr.allocate(256, stream=device.default_stream)
        hbuf = LegacyPinnedMemoryResource().allocate(256)
        memset = g.memset(dbuf, 3, 256)
        memcpy = memset.memcpy(hbuf, dbuf, 256)
        kern = g.launch(ONE, k.empty_kernel)
        child_def = GraphDefinition()
        child_def.launch(ONE, k.empty_kernel)
        child = g.embed(child_def)
        event = device.create_event()
        rec = g.record(event)
        wait = rec.wait(event)
        host = g.callback(_host_fn)
        nodes = [alloc, free, memset, memcpy, kern, child, rec, wait, host, g.empty()]
        try:  # one condition per conditional node (the driver refuses a shared one)
            nodes.append(g.if_then(g.create_condition(default_value=0)))
            nodes.append(g.while_loop(g.create_condition(default_value=0)))
            nodes.append(g.if_else(g.create_condition(default_value=0)))
            nodes.append(g.switch(g.create_condition(default_value=0), 2))
        except (RuntimeError, NotImplementedError) as exc:  # an older driver
            if "Driver version" not in str(exc) and "needs" not in str(exc):
                raise
        for node in nodes:
            assert re.fullmatch(PATTERNS[type(node)], repr(node)), repr(node)
        assert repr(memcpy).endswith(
            f"dst={hbuf.handle:#x}(H) src={dbuf.handle:#x}(D) size=256>"
        ) or repr(memcpy).endswith(f"dst={hbuf.handle:#x}(D) src={dbuf.handle:#x}(D) size=256>")
        assert f"event={event.handle:#x}" in repr(rec) and f"event={event.handle:#x}" in repr(wait)
        assert f"kernel={k.empty_kernel.handle:#x}" in repr(kern)
        assert f"child={child.child_graph.handle:#x}" in repr(child)
        assert repr(memset).endswith(f"dptr={dbuf.handle:#x} value=3>")
        assert repr(alloc).endswith(f"dptr={alloc.dptr:#x} size={alloc.bytesize}>")
        assert repr(free) == f"<FreeNode handle={free.handle:#x} dptr={alloc.dptr:#x}>"
    finally:
        g.close()
    # A destroyed node keeps its recorded fields and shows handle 0x0 (in a graph
    # without memory nodes: the driver refuses destroying nodes of one with them).
    g = GraphDefinition()
    try:
        memset = g.memset(dbuf, 3, 256)
        memset.destroy()
        assert repr(memset) == f"<MemsetNode handle=0x0 dptr={dbuf.handle:#x} value=3>"
    finally:
        g.close()
        dbuf.close()
        hbuf.close()
