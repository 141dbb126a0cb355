# SPDX-License-Identifier: Apache-2.0
"""The API reference (docs/) names every public name; its sources hang together.

This reads the reference's sources, not a built site: the full Sphinx build
(``python -m sphinx -W -b html docs <out>``) runs in .ci/run.
"""

from __future__ import annotations

import importlib
import os
import re

import pytest

import cuda_core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")

# The public subpackages and modules whose __all__ the reference must cover.
SUBMODULES = (
    "cuda_core.checkpoint",
    "cuda_core.graph",
    "cuda_core.system",
    "cuda_core.system.exceptions",
    "cuda_core.system.typing",
    "cuda_core.texture",
    "cuda_core.typing",
    "cuda_core.utils",
)
# Names documented under another public module that exports the same object.
ALSO_DOCUMENTED_AS = {"cuda_core.system.exceptions": "cuda_core.system"}

_DIRECTIVE = re.compile(
    r"^\s*\.\. (auto(?:class|function|data|exception|attribute|module)|currentmodule)::\s+(\S+)",
    re.MULTILINE,
)


def _sources():
    for dirpath, _, files in os.walk(DOCS):
        if "_build" in dirpath:
            continue
        for name in sorted(files):
            if name.endswith((".rst", ".md")):
                yield os.path.join(dirpath, name)


def _documented():
    """Every full name an autodoc directive in docs/ documents."""
    names = set()
    for path in _sources():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        module = "cuda_core"
        for directive, target in _DIRECTIVE.findall(text):
            if directive == "currentmodule":
                module = target
            elif directive == "automodule":
                names.add(target)
            else:
                names.add(target if target.startswith("cuda_core.") else f"{module}.{target}")
    return names


pytestmark = pytest.mark.skipif(not os.path.isdir(DOCS), reason="no docs/ beside the tests")


def test_every_name_of_the_package_is_in_the_reference():
    documented = _documented()
    missing = [n for n in cuda_core.__all__ if f"cuda_core.{n}" not in documented]
    assert missing == [], f"not in docs/api: {missing}"


@pytest.mark.parametrize("module_name", SUBMODULES)
def test_every_name_of_a_subpackage_is_in_the_reference(module_name):
    documented = _documented()
    module = importlib.import_module(module_name)
    homes = (module_name, ALSO_DOCUMENTED_AS.get(module_name, module_name))
    missing = [n for n in module.__all__ if not any(f"{home}.{n}" in documented for home in homes)]
    assert missing == [], f"{module_name}: not in docs/api: {missing}"
    for home in homes:
        assert getattr(importlib.import_module(home), "__all__", None) is not None


def test_the_reference_documents_only_names_that_exist():
    for full in sorted(_documented()):
        module_name, _, attr = full.rpartition(".")
        try:
            importlib.import_module(full)  # a module
            continue
        except ImportError:
            pass
        module = importlib.import_module(module_name)
        assert hasattr(module, attr), f"docs name {full}, which does not exist"


def test_every_api_page_and_markdown_page_is_in_a_toctree():
    with open(os.path.join(DOCS, "index.rst"), encoding="utf-8") as f:
        index = f.read()
    with open(os.path.join(DOCS, "api", "index.rst"), encoding="utf-8") as f:
        api_index = f.read()
    for page in ("getting-started", "api/index", "differences", "architecture"):
        assert f"\n   {page}\n" in index, page
    assert "\n   *ing\n" in index  # contributing and releasing
    for name in os.listdir(os.path.join(DOCS, "api")):
        stem, ext = os.path.splitext(name)
        if ext == ".rst" and stem != "index":
            assert f"\n   {stem}\n" in api_index, name


def test_the_docs_extra_and_the_configuration_agree():
    with open(os.path.join(DOCS, "conf.py"), encoding="utf-8") as f:
        conf = f.read()
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        pyproject = f.read()
    if "[project.optional-dependencies]" not in pyproject:
        pytest.skip("no pyproject.toml beside the tests")
    docs_extra = re.search(r"^docs = \[(.*?)\]", pyproject, re.MULTILINE | re.DOTALL)
    assert docs_extra, "pyproject.toml has no docs extra"
    assert "sphinx" in docs_extra.group(1) and "myst-parser" in docs_extra.group(1)
    for extension in ("myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"):
        assert f'"{extension}"' in conf
