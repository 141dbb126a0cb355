# SPDX-License-Identifier: Apache-2.0
"""Generated code of argument plans: the functions that pack a launch's arguments.

An argument plan (:mod:`cuda_core._arg_plan`) is specialised Python source,
written here for one kernel and combination of argument types and compiled
once:

* ``_pack(c, s, args)`` (CPython) checks the argument types and returns the
  whole blob -- header and values -- packed by precompiled
  ``struct.Struct.pack`` functions;
* ``_pack(c, s, args)`` (PyPy) checks the types (JIT guards), stores header
  and values into the thread's buffer through typed cffi pointers and
  returns that buffer.

Both raise ``_Mismatch`` (or a conversion error) when the arguments do not
fit, and the launch takes its slow path.  The generated text comes from a
fixed grammar over the slots' expressions (:mod:`cuda_core._arg_types`);
no user text reaches it.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Callable, Dict, List, Literal, Sequence, Tuple

    from cuda_core._arg_types import _Slot

    #: One packed value of an argument: (struct code, CPython expr, PyPy expr, blob offset).
    _Item = Tuple[str, str, str, int]
    _ArgItems = Sequence[Sequence[_Item]]

__all__: list[str] = []

_VIEWS = {
    "?": ("u8", 1),
    "b": ("i8", 1),
    "B": ("u8", 1),
    "h": ("i16", 2),
    "H": ("u16", 2),
    "i": ("i32", 4),
    "I": ("u32", 4),
    "q": ("i64", 8),
    "Q": ("u64", 8),
    "n": ("i64", 8),
    "N": ("u64", 8),
    "f": ("f32", 4),
    "d": ("f64", 8),
}
#: PyPy plans store runs of at least this many like arguments in a loop (the
#: JIT compiles a loop better than a very long straight line).
_RUN_MIN = 17
#: Arguments stored per pass of such a loop: fewer loop-control operations per
#: argument (a quarter less time for 256 ints on PyPy 7.3 than one per pass);
#: the remainder is stored after the loop.
_UNROLL = 4


def _compile(source: str, namespace: Dict[str, Any], name: str) -> Callable[..., Any]:
    """Compile generated plan code in a fresh module namespace; return function ``name``.

    A real module dictionary (rather than a plain dict) lets PyPy's JIT treat
    the plan's globals (types, layout address) as constants.
    """
    module = types.ModuleType(f"cuda_core._launch_plan_{name}")
    module.__dict__.update(namespace)
    code = compile(source, f"<cuda_core launch plan {name}>", "exec")
    exec(code, module.__dict__)  # noqa: S102 - generated from a fixed grammar, no user text
    return module.__dict__[name]  # type: ignore[no-any-return]  # the generated function


def _guards(
    slots: Sequence[_Slot], with_types: bool, indices: Sequence[int] | None = None
) -> List[str]:
    """Return the conditions under which argument ``a<i>`` does not fit its slot."""
    conds = []
    for i, slot in zip(range(len(slots)) if indices is None else indices, slots):
        if with_types:
            conds.append(f"type(a{i}) is not _T{i}")
        if slot.dtype is not None:
            conds.append(f"a{i}.dtype != _D{i}")
    return conds


def _exprs(arg_items: _ArgItems, which: Literal[1, 2]) -> List[str]:
    out: List[str] = []
    for i, placed in enumerate(arg_items):
        for item in placed:
            out.append(item[which].format(a=f"a{i}", i=i))
    return out


def _cpython_source(slots: Sequence[_Slot], arg_items: _ArgItems, guarded: bool) -> str:
    """``_pack(c, s, args)``: check the types, return header and arguments packed.

    With ``guarded``, the arguments are unpacked and their types checked one
    by one; otherwise one ``list(map(type, args))`` comparison checks them and
    the header is packed separately (one pack call over the argument tuple,
    without copying it).
    """
    n = len(slots)
    lines = ["def _pack(c, s, args):"]
    names = ", ".join(f"a{i}" for i in range(n))
    exprs = _exprs(arg_items, 1)
    trivial = all(e == f"a{i}" for i, e in enumerate(exprs)) and len(exprs) == n
    if n == 0:
        lines.append("    if args:")
        lines.append("        raise _Mismatch")
    elif guarded:
        lines.append(f"    {names}, = args")
    else:
        lines.append("    if list(map(type, args)) != _KEY:")
        lines.append("        raise _Mismatch")
        if not trivial:
            lines.append(f"    {names}, = args")
    conds = _guards(slots, guarded)
    if conds and (guarded or not trivial):
        lines.append("    if " + " or ".join(conds) + ":")
        lines.append("        raise _Mismatch")
    if guarded:
        values = "".join(", " + e for e in exprs)
        lines.append(f"    return _sp(_L, c, s{values})")
    elif trivial:
        lines.append("    return _hdr(_L, c, s) + _sp(*args)")
    else:
        lines.append(f"    return _hdr(_L, c, s) + _sp({', '.join(exprs)})")
    return "\n".join(lines) + "\n"


def _runs(slots: Sequence[_Slot], arg_items: _ArgItems) -> List[Tuple[int, int]]:
    """Split the arguments into runs: (start, count) of identical one-value slots
    stored back to back, or single arguments (count 1)."""
    runs: List[Tuple[int, int]] = []
    i, n = 0, len(slots)
    while i < n:
        j = i + 1
        placed = arg_items[i]
        if len(placed) == 1 and not placed[0][0].endswith("s") and slots[i].dtype is None:
            code, _, pypy, offset = placed[0]
            width = _VIEWS[code][1]
            while (
                j < n
                and slots[j].type is slots[i].type
                and len(arg_items[j]) == 1
                and arg_items[j][0][0] == code
                and arg_items[j][0][2] == pypy
                and arg_items[j][0][3] == offset + (j - i) * width
            ):
                j += 1
        if j - i < _RUN_MIN:
            runs.extend((k, 1) for k in range(i, j))
        else:
            runs.append((i, j - i))
        i = j
    return runs


def _run_loop(start: int, count: int, view: str, index: int, pypy: str) -> List[str]:
    """Lines storing ``args[start:start + count]`` (one slot type) at ``view[index:]``.

    A loop storing ``_UNROLL`` arguments per pass, then the remainder.
    """
    looped = count - count % _UNROLL
    names = [f"a{u}" for u in range(_UNROLL)]
    lines = [f"    for j in range(0, {looped}, {_UNROLL}):"]
    lines += [f"        {a} = args[{start + u} + j]" for u, a in enumerate(names)]
    lines.append("        if " + " or ".join(f"type({a}) is not _T{start}" for a in names) + ":")
    lines.append("            raise _Mismatch")
    lines += [
        f"        {view}[{index + u} + j] = {pypy.format(a=a, i=f'{start + u} + j')}"
        for u, a in enumerate(names)
    ]
    for k in range(looped, count):
        lines.append(f"    a = args[{start + k}]")
        lines.append(f"    if type(a) is not _T{start}:")
        lines.append("        raise _Mismatch")
        lines.append(f"    {view}[{index + k}] = {pypy.format(a='a', i=start + k)}")
    return lines


def _pypy_source(slots: Sequence[_Slot], arg_items: _ArgItems) -> str:
    """``_pack(c, s, args)``: check types, store header and values into the thread's
    buffer (``_tls.st``; AttributeError when the thread has none yet) and return it."""
    n = len(slots)
    runs = _runs(slots, arg_items)
    straight = all(count == 1 for _, count in runs)
    lines = ["def _pack(c, s, args):", "    st = _tls.st"]
    if n == 0:
        lines.append("    if args:")
        lines.append("        raise _Mismatch")
    elif straight:
        lines.append("    " + ", ".join(f"a{i}" for i in range(n)) + ", = args")
        lines.append("    if " + " or ".join(_guards(slots, True)) + ":")
        lines.append("        raise _Mismatch")
    else:
        lines.append("    if len(args) != _N:")
        lines.append("        raise _Mismatch")
    lines.append("    if st.cap < _SIZE:")
    lines.append("        raise _Mismatch")
    body = []
    used = {"u64"}
    for start, count in runs:
        if count == 1:
            i = start
            if not straight:
                body.append(f"    a{i} = args[{i}]")
                conds = _guards([slots[i]], True, [i])
                body.append("    if " + " or ".join(conds) + ":")
                body.append("        raise _Mismatch")
            for code, _, pypy, offset in arg_items[i]:
                expr = pypy.format(a=f"a{i}", i=i)
                if code.endswith("s"):
                    size = int(code[:-1])
                    used.add("buf")
                    body.append(f"    buf[{offset}:{offset + size}] = {expr}")
                else:
                    view, width = _VIEWS[code]
                    used.add(view)
                    body.append(f"    {view}[{offset // width}] = {expr}")
        else:
            code, _, pypy, offset = arg_items[start][0]
            view, width = _VIEWS[code]
            used.add(view)
            body.extend(_run_loop(start, count, view, offset // width, pypy))
    for view in sorted(used):
        lines.append(f"    {view} = st.{view}")
    lines.append("    u64[0] = _L")
    lines.append("    u64[1] = c")
    lines.append("    u64[2] = s")
    lines.extend(body)
    lines.append("    return st.buf")
    return "\n".join(lines) + "\n"
