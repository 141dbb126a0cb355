# SPDX-License-Identifier: Apache-2.0
"""The registration slots of ``cuda_core._slots`` and their table in docs/architecture.md.

Each slot is a typed module attribute filled by one higher module; the table
names every slot and the module that fills it, so a new slot fails here until
it is documented.
"""

from __future__ import annotations

import ast
import pathlib
import re

from _helpers import CHECKOUT, slots_and_accessors

ROOT = pathlib.Path(CHECKOUT)
PACKAGE = ROOT / "cuda_core"
DOC = ROOT / "docs" / "architecture.md"


def _doc_rows():
    """Map each slot named in the doc's table to its row's cells."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| `_slots\.(\w+)` \|", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in line.strip().strip("|").split("|")]
    return rows


def _fillers():
    """Map each slot to the modules (dotted, relative) that assign it."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and getattr(t.value, "id", None) == "_slots":
                        found.setdefault(t.attr, []).append(module)
    return found


def test_every_slot_is_in_the_doc_table_and_only_those():
    slots, _ = slots_and_accessors()
    assert set(_doc_rows()) == slots


def test_each_slot_is_filled_by_one_module_the_doc_names():
    slots, _ = slots_and_accessors()
    fillers = _fillers()
    assert set(fillers) == slots, "every slot is filled, and nothing else is assigned"
    rows = _doc_rows()
    for slot, modules in fillers.items():
        assert len(modules) == 1, f"{slot} is filled by {modules}"
        module = modules[0]
        named = "the package face" if module == "" else f"`{module}`"
        assert named in rows[slot][2], f"the doc row of {slot} does not name {named}"


def test_the_doc_names_existing_accessors():
    _, accessors = slots_and_accessors()
    for slot, cells in _doc_rows().items():
        named = set(re.findall(r"`(\w+)\(", cells[3]))
        assert named, f"the doc row of {slot} names no accessor"
        assert named <= accessors, f"{slot}: {sorted(named - accessors)} are not accessors"


def test_the_slots_hold_the_classes_once_imported():
    import cuda_core
    import cuda_core._slots as slots
    import cuda_core.graph
    import cuda_core.system
    import cuda_core.typing
    import cuda_core.utils

    assert slots.device_class() is cuda_core.Device
    assert slots.graph_builder() is cuda_core.graph.GraphBuilder
    assert slots.graph_builder_if_loaded() is cuda_core.graph.GraphBuilder
    assert slots.strided_memory_view() is cuda_core.utils.StridedMemoryView
    assert slots.nvml_device_class() is cuda_core.system.Device
    assert slots.subpackage("graph") is cuda_core.graph
    cache_type, make_key = slots.program_cache_support()
    assert cache_type is cuda_core.utils.ProgramCacheResource
    assert make_key is cuda_core.utils.make_program_cache_key
    assert slots.device_resources_type() is cuda_core.typing.DeviceResourcesType


def test_the_slot_docstring_names_the_lazy_subpackages():
    doc = ast.get_docstring(ast.parse((PACKAGE / "_slots.py").read_text()))
    for name in ("graph", "utils", "system", "texture"):
        assert f"``{name}``" in doc
