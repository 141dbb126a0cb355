# SPDX-License-Identifier: Apache-2.0
"""The package's layers: a module imports only its own layer or lower ones.

Every ``import`` statement of every module under ``cuda_core/`` is read with
:mod:`ast`, including the ones inside functions, and checked against
:data:`LAYERS`.  A lower layer that must hand back a higher object uses a
registration slot that the higher module fills at import (see
``docs/architecture.md``), never an import.

Adding a module: put its name (relative to ``cuda_core``, ``*`` globs allowed)
in the layer it belongs to in :data:`LAYERS`, or in :data:`SIDE_PACKAGES` for a
package that sits beside the stack over its lowest layers.
"""

from __future__ import annotations

import ast
import fnmatch
import pathlib

import pytest
from _helpers import CHECKOUT

PACKAGE = "cuda_core"
ROOT = pathlib.Path(CHECKOUT) / PACKAGE

# Lowest first.  Names are relative to the package; "" is the package face.
LAYERS = [
    ("extension", ["_cuda_ffi"]),
    ("exceptions, loader, error layer, versions", ["_errors", "_loader", "_version"]),
    ("shared helpers and typing", ["_coerce", "_lifetime", "_read_only", "_slots", "typing"]),
    ("context", ["_context", "_device_resources", "_host"]),
    (
        "events and streams",
        ["_event", "_event_share", "_stream", "_stream_*", "_default_stream", "_green_context"],
    ),
    ("memory", ["_memory", "_memory.*", "_graphics"]),
    (
        "modules, kernels, launch",
        [
            "_module",
            "_kernel",
            "_kernel_*",
            "_launch_config",
            "_arg_*",
            "_launcher",
            "_tensor_map",
            "_tensor_map_*",
        ],
    ),
    ("linker and program", ["_linker", "_linker_*", "_program", "_program_*", "_compile_common"]),
    ("utils and graph", ["utils", "utils.*", "graph", "graph.*"]),
    ("Device", ["_device", "_device_properties", "_device_textures"]),
    ("package face", ["", "__main__", "_install"]),
]

# Packages beside the stack: (names, the highest layer they may import).
# Every layer above that highest one may import them.
SIDE_PACKAGES = [
    (["system", "system.*", "checkpoint", "checkpoint.*"], "shared helpers and typing"),
    # Textures and surfaces read Buffers and copy on streams.
    (["texture", "texture.*"], "memory"),
]

# The largest import cycle allowed (1: none).
MAX_CYCLE = 1


def _layer_names():
    return [name for name, _ in LAYERS]


def _side_rank(limit):
    # A side package ranks just above the highest layer it may import.
    return _layer_names().index(limit) + 0.5


def rank_of(module):
    """Return the layer rank of ``module`` (dotted, relative to the package)."""
    for rank, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return rank
    for patterns, limit in SIDE_PACKAGES:
        if any(fnmatch.fnmatchcase(module, p) for p in patterns):
            return _side_rank(limit)
    return None


def layer_name(rank):
    if rank == int(rank):
        return LAYERS[int(rank)][0]
    return f"beside the stack over '{LAYERS[int(rank)][0]}'"


def package_modules():
    """Map each module (relative dotted name) to its source path."""
    mods = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _absolute(module, is_package, level, name):
    if level == 0:
        return name or ""
    base = [PACKAGE] + (module.split(".") if module else [])
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports_of(module, path, mods):
    """Yield (line, target) for each package module ``module`` imports.

    ``target`` is relative to the package ("" for the package face); module-
    level and function-level imports alike, but not those under
    ``if TYPE_CHECKING:``.
    """
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    typing_only = _type_checking_imports(tree)
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            names = [f"{base}.{a.name}" for a in node.names]
            names = [n if _rel(n) in mods else base for n in names]
        else:
            continue
        for name in names:
            if name != PACKAGE and not name.startswith(PACKAGE + "."):
                continue
            target = _rel(name)
            while target and target not in mods and target != "_cuda_ffi":
                target = target.rpartition(".")[0]
            if target != module:
                yield node.lineno, target


def _type_checking_imports(tree):
    """The ids of import nodes under ``if TYPE_CHECKING:``.

    They name types for annotations and never run, so they are neither a
    layer violation nor part of an import cycle.
    """
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
            if name == "TYPE_CHECKING":
                found.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return found


def _rel(name):
    return name[len(PACKAGE) + 1 :] if name != PACKAGE else ""


def import_graph():
    mods = package_modules()
    return mods, {m: list(imports_of(m, p, mods)) for m, p in mods.items()}


def _where(module):
    return f"{PACKAGE}.{module}" if module else PACKAGE


def test_every_module_has_a_layer():
    mods = package_modules()
    unknown = sorted(m for m in mods if rank_of(m) is None)
    assert not unknown, (
        f"modules without a layer: {[_where(m) for m in unknown]}; add each to LAYERS "
        "(or SIDE_PACKAGES) in tests/test_layers.py, in the layer it belongs to "
        "(see docs/architecture.md)"
    )


def test_no_module_imports_a_higher_layer():
    mods, graph = import_graph()
    bad = []
    for module, edges in graph.items():
        mine = rank_of(module)
        if mine is None:
            continue
        for line, target in edges:
            theirs = rank_of(target)
            if theirs is not None and theirs > mine:
                bad.append(
                    f"{mods[module].relative_to(ROOT.parent)}:{line}: {_where(module)} "
                    f"({layer_name(mine)}) imports {_where(target)} ({layer_name(theirs)})"
                )
    assert not bad, "upward imports (use a registration slot instead):\n" + "\n".join(bad)


def test_side_packages_import_only_the_lowest_layers():
    # The rule above, spelled out for the packages beside the stack.
    mods, graph = import_graph()
    bad = []
    for patterns, limit in SIDE_PACKAGES:
        highest = _layer_names().index(limit)
        for module in mods:
            if any(fnmatch.fnmatchcase(module, p) for p in patterns):
                bad.extend(
                    f"{_where(module)} imports {_where(target)}; it may import only "
                    f"layers up to '{limit}' and its own package"
                    for _, target in graph[module]
                    if rank_of(target) is None
                    or (rank_of(target) > highest and rank_of(target) != _side_rank(limit))
                )
    assert not bad, "\n".join(bad)


def test_nothing_imports_the_package_face():
    # ``from cuda_core import X`` reads the face (or a submodule through it);
    # inside the package, import the module that defines X.
    bad = []
    for module, path in package_modules().items():
        if module in ("", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [_absolute(module, path.name == "__init__.py", node.level, node.module)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.asname is None]
            else:
                continue
            if PACKAGE in names:
                bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert not bad, f"the package face imported inside the package: {bad}"


def strongly_connected(graph):
    """Return the strongly connected components of ``graph`` (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    _, graph = import_graph()
    edges = {m: {t for _, t in e} for m, e in graph.items()}
    cycles = [c for c in strongly_connected(edges) if len(c) > MAX_CYCLE]
    assert not cycles, f"import cycles: {[[_where(m) for m in c] for c in cycles]}"


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("_errors", 1),
        ("_memory._buffer", 5),
        ("graph._graph", 8),
        ("", 10),
        ("system._nvml", 2.5),
        ("texture._tex", 5.5),
    ],
)
def test_layer_table_places_modules(module, expected):
    assert rank_of(module) == expected


def test_an_unknown_module_is_reported():
    assert rank_of("_brand_new_feature") is None
