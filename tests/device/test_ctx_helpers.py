# SPDX-License-Identifier: Apache-2.0
"""The extension's create-in-a-context helpers, over a stand-in driver (no GPU needed).

``cc_stream_create``, ``cc_event_create``, ``cc_tex_object_create``,
``cc_surf_object_create``, the single-result ``cc_stream_new`` and
``cc_event_new``, and ``cc_tex_object_new`` / ``cc_surf_object_new`` (which
also take a claim) push the given context when it is not current, create,
and pop.  These tests drive every outcome through
``tests/_scripts/fake_ctx_driver.c`` in a separate interpreter: a failed
push returns at once, a failed creation reports its own status and destroys
nothing, and a failed pop after a successful creation destroys the new
object once and reports the pop's status.  The texture helpers' claim
counts and ``cc_*_object_release`` are checked there too.
"""

from __future__ import annotations

import pytest
from _helpers import run_over_stand_in

HELPERS = [
    "cc_stream_create",
    "cc_event_create",
    "cc_tex_object_create",
    "cc_surf_object_create",
    "cc_stream_new",
    "cc_event_new",
    "cc_tex_object_new",
    "cc_surf_object_new",
]

#: CC_CLAIM_RELEASED (cffi_src/cdefs/cuda_core.h).
RELEASED = 2147418116


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    result = run_over_stand_in(
        "fake_ctx_driver.c", "ctx_helpers_fake_driver.py", tmp_path_factory.mktemp("fake_ctx")
    )
    assert "error" not in result, result
    return result


@pytest.mark.parametrize(
    ("combo", "expected"),
    [
        ("0 0 0 0", [0, 0]),  # pushed, created, popped
        ("0 0 2 0", [2, 1]),  # the pop failed: the new object is destroyed, the pop's status
        ("0 1 0 0", [1, 0]),  # the creation failed: its status, nothing to destroy
        ("0 1 2 0", [1, 0]),  # both failed: the creation's status comes first
        ("3 0 0 0", [3, 0]),  # the push failed: nothing created
    ],
)
def test_each_helper_reports_and_undoes(outcomes, combo, expected):
    for name in HELPERS:
        assert outcomes[combo][name] == expected, (name, outcomes[combo])


def test_a_failed_priority_query_creates_no_default_stream(outcomes):
    row = outcomes["0 0 0 4"]
    assert row["cc_stream_new"] == [4, 0]  # the query's status, nothing created
    for name in HELPERS:
        if name != "cc_stream_new":
            assert row[name] == [0, 0], (name, row)  # the others do not ask


@pytest.mark.parametrize("destroy", [0, 5, 2147418113])  # 5; CC_LIB_NOT_LOADED
@pytest.mark.parametrize("kind", ["tex", "surf"])
def test_texture_helpers_take_and_drop_claims(outcomes, kind, destroy):
    row = outcomes["claims"]
    created = [0x77, 0]  # the stand-in's handle, success
    # Creation: the claim is taken with the object; a count at 0 is refused
    # before anything is created; NULL (a Buffer's claim) takes none.
    assert row[f"{kind}_new 0 {destroy}"] == [[0, RELEASED], 0, 0]
    assert row[f"{kind}_new 1 {destroy}"] == [created, 2, 0]
    assert row[f"{kind}_new 2 {destroy}"] == [created, 3, 0]
    assert row[f"{kind}_new None {destroy}"] == [created, None, 0]
    # Release: destroyed and the claim dropped whatever the status; the
    # result is 2 * status + (last claim, or none counted).
    assert row[f"{kind}_release 2 {destroy}"] == [2 * destroy, 1, 1]
    assert row[f"{kind}_release 1 {destroy}"] == [2 * destroy + 1, 0, 1]
    assert row[f"{kind}_release None {destroy}"] == [2 * destroy + 1, None, 1]
    assert row[f"{kind}_release 0 {destroy}"] == [2 * destroy, -1, 1]  # over-released: not last


def test_claim_counts_stop_at_zero(outcomes):
    # retain (1 -> 2), drop (-> 1), drop (-> 0), retain refused, count 0
    assert outcomes["claims"]["retain drop"] == [1, 1, 0, 0, 0]
