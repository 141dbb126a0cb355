# SPDX-License-Identifier: Apache-2.0
"""The sdist holds every file the README links (MANIFEST.in's rules, evaluated here).

``python -m build`` in .ci/run makes the real sdist; this test reads the same
rules over the checkout, so a README link to a file that the sdist leaves out
fails here first.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What setuptools puts into every sdist besides MANIFEST.in's rules.
DEFAULTS = ("README.md", "pyproject.toml", "setup.py", "LICENSE", "MANIFEST.in")

pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(ROOT, "MANIFEST.in")), reason="no MANIFEST.in beside the tests"
)


def _all_files():
    out = set()
    for dirpath, dirnames, files in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in files:
            out.add(os.path.relpath(os.path.join(dirpath, name), ROOT).replace(os.sep, "/"))
    return out


def _under(files, folder):
    folder = folder.rstrip("/") + "/"
    return {f for f in files if f.startswith(folder)}


def sdist_files():
    """The files MANIFEST.in's rules select (the subset of its commands used here)."""
    every = _all_files()
    chosen = {f for f in every if f in DEFAULTS}
    chosen |= {f for f in every if f.startswith("cuda_core/") and f.endswith((".py", ".pyi"))}
    with open(os.path.join(ROOT, "MANIFEST.in"), encoding="utf-8") as f:
        lines = [line.split("#", 1)[0].split() for line in f]
    for words in filter(None, lines):
        command, args = words[0], words[1:]
        if command == "include":
            for pattern in args:
                chosen |= {f for f in every if fnmatch.fnmatch(f, pattern)}
        elif command == "exclude":
            chosen -= {f for f in chosen if any(fnmatch.fnmatch(f, p) for p in args)}
        elif command == "recursive-include":
            folder, patterns = args[0], args[1:]
            chosen |= {
                f
                for f in _under(every, folder)
                if any(fnmatch.fnmatch(os.path.basename(f), p) for p in patterns)
            }
        elif command == "graft":
            chosen |= _under(every, args[0])
        elif command == "prune":
            chosen -= _under(chosen, args[0])
        elif command == "global-exclude":
            chosen = {
                f for f in chosen if not any(fnmatch.fnmatch(os.path.basename(f), p) for p in args)
            }
        else:
            raise AssertionError(f"MANIFEST.in command this test does not know: {command}")
    return chosen


def _readme_links():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        yield target.split("#", 1)[0]


def test_every_file_the_readme_links_is_in_the_sdist():
    files = sdist_files()
    links = list(_readme_links())
    assert links, "the README links no file"
    for target in links:
        path = os.path.normpath(target).replace(os.sep, "/")
        assert os.path.exists(os.path.join(ROOT, path)), f"README links {target}, which is missing"
        if os.path.isdir(os.path.join(ROOT, path)):
            assert _under(files, path), f"README links {target}/, which the sdist leaves out"
        else:
            assert path in files, f"README links {target}, which the sdist leaves out"


def test_the_sdist_holds_the_docs_the_examples_and_the_build_inputs():
    files = sdist_files()
    for must in (
        "docs/conf.py",
        "docs/index.rst",
        "docs/differences.md",
        "docs/architecture.md",
        "docs/releasing.md",
        "benchmarks/RESULTS.md",
        "benchmarks/RESULTS.png",
        "build_ffi.py",
        "cffi_src/README.md",
        "LICENSE",
    ):
        assert must in files, must
    for example in glob.glob(os.path.join(ROOT, "examples", "*.py")):
        assert f"examples/{os.path.basename(example)}" in files
    assert not any(f.startswith("docs/_build/") for f in files)
