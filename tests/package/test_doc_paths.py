# SPDX-License-Identifier: Apache-2.0
"""Every file path that README.md and docs/*.md name exists in the repository.

A path is a backticked word with a ``/`` or a file ending (``_errors.py``,
``cffi_src/cdefs/*.h``, ``benchmarks/RESULTS.md``); globs must match at least
one file.  A path may be written from the repository root or from the
folders the docs speak from (the package, the C sources, the tests, the docs
themselves).  Paths outside the repository (``../shared/...``) and those
the GPU tooling makes (``.device/``, ``$OUT/``) are not checked.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from _helpers import CHECKOUT

ROOT = pathlib.Path(CHECKOUT)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Where a short path may start.
BASES = ["", "cuda_core", "cffi_src", "tests", "docs", "benchmarks"]
ENDINGS = (".py", ".pyi", ".h", ".c", ".md", ".sh", ".toml", ".json", ".jsonl", ".txt", ".png")
NOT_HERE = ("../", ".device/", "$", "/", "~", "http", "OUT/")
# Files the package makes at run time, not in the repository.
RUN_TIME = {"tmp/", "tmp/entry-*"}  # a FileStreamProgramCache's temporary files

_BACKTICKED = re.compile(r"`([^`\s]+)`")
_PATHLIKE = re.compile(r"^[\w.*/-]+$")


def named_paths(text):
    """The file paths named in ``text`` (markdown), in order, without repeats."""
    seen = []
    for word in _BACKTICKED.findall(text):
        word = word.rstrip(".,:;")
        if not _PATHLIKE.match(word) or word.startswith(NOT_HERE) or word in RUN_TIME:
            continue
        if "/" not in word and not word.endswith(ENDINGS):
            continue
        if word.count(".") > 1 and "/" not in word and not word.endswith(ENDINGS):
            continue  # a dotted module name
        if word not in seen:
            seen.append(word)
    return seen


def exists(path, doc):
    for base in [*BASES, str(doc.parent.relative_to(ROOT))]:
        where = ROOT / base
        if any(ch in path for ch in "*?["):
            if any(where.glob(path)):
                return True
        elif (where / path).exists():
            return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_named_path_exists(doc):
    missing = [p for p in named_paths(doc.read_text()) if not exists(p, doc)]
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_reader_finds_paths():
    text = "see `_errors.py`, `cffi_src/cdefs/*.h`, `cuda_core.utils` and `x = 1`"
    assert named_paths(text) == ["_errors.py", "cffi_src/cdefs/*.h"]
