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
from _helpers import CHECKOUT, slots_and_accessors

PACKAGE = "cuda_core"
ROOT = pathlib.Path(CHECKOUT) / PACKAGE

# Lowest first.  Names are relative to the package; "" is the package face.
LAYERS = [
    ("extension", ["_cuda_ffi", "_ffi_types"]),
    (
        "registration slots, exceptions, loader, error layer, versions",
        ["_slots", "_errors", "_loader", "_version"],
    ),
    ("shared helpers and typing", ["_coerce", "_lifetime", "_read_only", "typing"]),
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


# -- one way up: the registration slots of ``_slots`` and nothing else ---------------

SLOTS_MODULE = "_slots"

# Functions of a lower module that higher modules may call to store something
# there, with the reason each may stay.  Anything else that does so is a
# registry beside ``_slots`` and fails test_no_registry_beside_the_slots.
ALLOWED_REGISTRIES = {
    # Node classes register by driver node type within the graph package
    # itself (documented beside the slots in docs/architecture.md).
    ("graph._node_registry", "_register"),
}

_MUTATORS = {"append", "extend", "update", "add", "insert", "setdefault"}


def _module_aliases(module, path, tree, mods):
    """Map each local name bound to a package module (``import x as y``) to that module."""
    aliases = {}
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name.startswith(PACKAGE + ".") and _rel(a.name) in mods:
                    aliases[a.asname] = _rel(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, is_package, node.level, node.module)
            for a in node.names:
                full = f"{base}.{a.name}"
                if full.startswith(PACKAGE + ".") and _rel(full) in mods:
                    aliases[a.asname or a.name] = _rel(full)
    return aliases


def _other_module(node, aliases, module):
    """The package module ``node`` (a Name) stands for, if another one than ``module``."""
    if isinstance(node, ast.Name) and aliases.get(node.id, module) != module:
        return aliases[node.id]
    return None


def _writes_into_other_modules(module, path, mods):
    """Yield (line, text) for each write into another package module's namespace.

    Assigning a module attribute (``_errors.hook = f``) or mutating a
    module-level container through the module (``_context.FACTORIES.append``)
    are registries; assigning a slot of ``_slots`` is the one allowed form.
    """
    tree = ast.parse(path.read_text(), str(path))
    aliases = _module_aliases(module, path, tree, mods)
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Attribute):
                owner = target.value
                while isinstance(owner, ast.Attribute):  # mod.CONTAINER[...] = / mod.a.b =
                    owner = owner.value
                other = _other_module(owner, aliases, module)
                if other is not None and other != SLOTS_MODULE:
                    yield node.lineno, f"assigns into {_where(other)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            inner = node.func.value
            if node.func.attr in _MUTATORS and isinstance(inner, ast.Attribute):
                other = _other_module(inner.value, aliases, module)
                if other is not None:
                    yield node.lineno, f"mutates {_where(other)}.{inner.attr}"


def _registering_functions(path):
    """Module-level functions that store what they are handed into their module's globals.

    A lazily filled cache stores what it computed; a registry stores an
    argument (a class, a callback): a store whose value names a parameter of
    the function (or of a function nested in it, for decorators), or any
    write through ``globals()``.
    """
    tree = ast.parse(path.read_text(), str(path))
    top = set()
    for stmt in tree.body:
        for target in getattr(stmt, "targets", [getattr(stmt, "target", None)]):
            if isinstance(target, ast.Name):
                top.add(target.id)
    found = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        params = {
            a.arg
            for f in ast.walk(fn)
            if isinstance(f, (ast.FunctionDef, ast.Lambda))
            for a in f.args.posonlyargs
            + f.args.args
            + f.args.kwonlyargs
            + [x for x in (f.args.vararg, f.args.kwarg) if x]
        }
        declared = {n for s in ast.walk(fn) if isinstance(s, ast.Global) for n in s.names}

        def handed(value, params=params):
            # What was handed in itself (a name, or a tuple or list of them),
            # not something computed from it.
            if isinstance(value, (ast.Tuple, ast.List)):
                return bool(value.elts) and all(handed(e) for e in value.elts)
            return isinstance(value, ast.Name) and value.id in params

        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "globals":
                found.add(fn.name)
            elif isinstance(node, (ast.Assign, ast.AugAssign)) and handed(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id in declared:
                        found.add(fn.name)
                    if (
                        isinstance(target, ast.Subscript)
                        and getattr(target.value, "id", None) in top
                    ):
                        found.add(fn.name)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and getattr(node.func.value, "id", None) in top
                and any(handed(a) for a in node.args)
            ):
                found.add(fn.name)
    return found


def test_no_module_writes_into_another_module():
    mods = package_modules()
    bad = [
        f"{mods[m].relative_to(ROOT.parent)}:{line}: {_where(m)} {what}"
        for m in mods
        for line, what in _writes_into_other_modules(m, mods[m], mods)
    ]
    assert not bad, (
        "a higher module stores into a lower one only through a slot of cuda_core._slots "
        "(see docs/architecture.md):\n" + "\n".join(bad)
    )


def test_no_registry_beside_the_slots():
    # A lower module's function that stores what a higher module hands it
    # (a class, a callback) is a registry: use a slot of _slots instead.
    mods, graph = import_graph()
    registering = {m: _registering_functions(p) for m, p in mods.items()}
    bad = []
    for module, path in mods.items():
        mine = rank_of(module)
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _rel(_absolute(module, path.name == "__init__.py", node.level, node.module))
            if base not in registering or base == module:
                continue
            for a in node.names:
                if a.name not in registering[base] or (base, a.name) in ALLOWED_REGISTRIES:
                    continue
                if rank_of(base) is not None and mine is not None and rank_of(base) < mine:
                    bad.append(f"{_where(module)} registers through {_where(base)}.{a.name}")
    assert not bad, "\n".join(bad)


def test_slots_are_read_through_their_accessors():
    # A slot is filled by assignment and read through its accessor, which
    # says what an empty slot means; never copied out by ``from ... import``.
    slots, accessors = slots_and_accessors()
    mods = package_modules()
    bad = []
    for module, path in mods.items():
        if module == SLOTS_MODULE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        aliases = _module_aliases(module, path, tree, mods)
        names = {a for a, m in aliases.items() if m == SLOTS_MODULE}
        calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == f"{PACKAGE}.{SLOTS_MODULE}":
                bad.append(f"{_where(module)}:{node.lineno} imports names from _slots")
            if not (isinstance(node, ast.Attribute) and getattr(node.value, "id", None) in names):
                continue
            where = f"{_where(module)}:{node.lineno} _slots.{node.attr}"
            if isinstance(node.ctx, ast.Store):
                if node.attr not in slots:
                    bad.append(f"{where}: not a slot")
            elif node.attr not in accessors or id(node) not in calls:
                bad.append(f"{where}: read it through its accessor")
    assert not bad, "\n".join(bad)
