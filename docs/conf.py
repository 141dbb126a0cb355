# SPDX-License-Identifier: Apache-2.0
"""Sphinx configuration for the cuda_core documentation.

Build (from the repository root, with the ``docs`` extra installed and the
extension built):  python -m sphinx -W -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import sys

# The checkout's package, built in place (pip install -e . or
# python setup.py build_ext --inplace), is the one documented.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import cuda_core  # noqa: E402
from cuda_core._version import UPSTREAM_VERSION  # noqa: E402

project = "cuda_core"
author = "The cuda-core-cffi authors"
copyright = "2026, the cuda-core-cffi authors"
version = release = cuda_core.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Docstrings are NumPy style.  "Attributes" sections become :ivar: fields, so
# that they do not describe a dataclass field a second time beside the member
# that autodoc documents.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_ivar = True
napoleon_use_rtype = False

autosummary_generate = False
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
autodoc_member_order = "groupwise"
autodoc_typehints = "signature"
autodoc_class_signature = "separated"
add_module_names = False

# Markdown pages (differences.md, architecture.md) link to files of the
# repository outside docs/ (README.md, benchmarks/, tests/); those links work
# where the files are read (a checkout, the sdist, the repository page) but
# are not documents of this site.  Headings get anchors for #section links.
myst_heading_anchors = 3
# "ref.python": an annotation written as plain ``Device`` may mean
# cuda_core.Device or cuda_core.system.Device; Sphinx links the first.
suppress_warnings = ["myst.xref_missing", "ref.python"]

rst_epilog = f"""
.. |upstream_version| replace:: {UPSTREAM_VERSION}
"""

html_theme = "alabaster"
html_title = f"cuda_core {release}"
html_static_path: list[str] = []
