# SPDX-License-Identifier: Apache-2.0
"""What the README states about the project stays true: examples, versions, docs."""

from __future__ import annotations

import os
import re

import pytest

from cuda_core._version import UPSTREAM_VERSION

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")

pytestmark = pytest.mark.skipif(not os.path.exists(README), reason="no README.md beside the tests")


def _readme():
    with open(README, encoding="utf-8") as f:
        return f.read()


def test_the_example_table_lists_exactly_the_examples():
    listed = set(re.findall(r"^\| `examples/(\w+\.py)` \|", _readme(), re.MULTILINE))
    present = {f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py")}
    assert listed == present


def test_the_readme_names_the_distribution_and_the_upstream_version():
    text = _readme()
    assert "distribution `cuda-core-cffi`" in text
    assert f"following `cuda.core` **{UPSTREAM_VERSION}**" in text
    assert f"`cuda.core` {UPSTREAM_VERSION}." in text


def test_the_readme_counts_the_differences_about_right():
    said = int(re.search(r"deliberate differences, about (\d+),", _readme()).group(1))
    with open(os.path.join(ROOT, "docs", "differences.md"), encoding="utf-8") as f:
        items = len(re.findall(r"^- ", f.read(), re.MULTILINE))
    assert abs(items - said) <= 15, f"the README says about {said}; differences.md has {items}"


def test_the_readme_links_the_docs():
    text = _readme()
    for target in (
        "docs/differences.md",
        "docs/architecture.md",
        "docs/index.rst",
        "docs/getting-started.md",
        "docs/releasing.md",
        "benchmarks/RESULTS.md",
    ):
        assert f"]({target})" in text, target


def test_the_readme_says_what_the_extra_downloads():
    assert "about 180 MB to download" in _readme()
