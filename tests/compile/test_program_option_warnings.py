# SPDX-License-Identifier: Apache-2.0
"""ProgramOptions takes odd values as cuda.core does, and says how it reads them;
its fields that take several values are typed so (``tuple[str, ...]``)."""

from __future__ import annotations

import platform
import textwrap
import warnings

import numpy as np
import pytest
from _scripts.hardening_util import mypy_strict

from cuda_core import LinkerOptions, ProgramOptions


def _warnings_of(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        options = ProgramOptions(arch="sm_90", **kwargs)
    return options, [w for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize(
    ("field", "value", "read_as"),
    [("debug", "no", True), ("lineinfo", "", False), ("fma", 0.0, False), ("ftz", [0], True)],
)
def test_a_bool_field_given_a_non_bool_warns_and_keeps_the_value(field, value, read_as):
    options, caught = _warnings_of(**{field: value})
    assert getattr(options, field) == value  # kept as given, as in cuda.core
    assert len(caught) == 1
    assert str(caught[0].message) == (
        f"ProgramOptions.{field}={value!r} is not a bool; it is read by its truth value, "
        f"{read_as}, as cuda.core reads it. Pass True or False."
    )
    assert caught[0].filename == __file__  # points at the caller's line


def test_debug_no_turns_debugging_on_as_upstream():
    options, _ = _warnings_of(debug="no")
    assert b"--device-debug" in options.as_bytes("nvrtc")


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [
        ("max_register_count", -1, "--maxrregcount=-1"),
        ("max_register_count", "32", "--maxrregcount=32"),
        ("split_compile", True, "--split-compile=True"),
        ("split_compile", 1.5, "--split-compile=1.5"),
    ],
)
def test_a_count_field_given_an_odd_value_warns_and_renders_it(field, value, flag):
    options, caught = _warnings_of(**{field: value})
    assert [str(w.message) for w in caught] == [
        f"ProgramOptions.{field}={value!r} is not a non-negative int; it is passed to the "
        f"compiler as given ({flag}), as cuda.core does."
    ]
    assert flag.encode() in options.as_bytes("nvrtc")


def test_a_diag_field_given_a_string_warns_with_the_flags_it_makes():
    options, caught = _warnings_of(diag_error="12")
    assert [str(w.message) for w in caught] == [
        "ProgramOptions.diag_error='12' is not an int or a list/tuple of int; it is rendered "
        "as given (--diag-error=1 --diag-error=2), as cuda.core does."
    ]
    flags = options.as_bytes("nvrtc")
    assert b"--diag-error=1" in flags and b"--diag-error=2" in flags


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"debug": True, "lineinfo": False, "fma": None, "ftz": 1, "prec_div": np.bool_(True)},
        {"max_register_count": 32, "split_compile": 0},
        {"max_register_count": np.int32(64)},
        {"diag_error": 1, "diag_suppress": [1, 2], "diag_warn": (3, np.int64(4))},
        {"include_path": ("a", "b"), "define_macro": [("X", "1"), "Y"]},
    ],
)
def test_good_values_do_not_warn(kwargs):
    _, caught = _warnings_of(**kwargs)
    assert caught == []


@pytest.mark.skipif(
    platform.python_implementation() != "CPython", reason="mypy runs on CPython only"
)
def test_fields_taking_several_values_accept_any_length_under_mypy_strict(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra (CPython)")
    script = tmp_path / "options_script.py"
    script.write_text(
        textwrap.dedent(
            """\
            from cuda_core import LinkerOptions, ProgramOptions

            ProgramOptions(
                include_path=("a", "b", "c"),
                undefine_macro=("X", "Y"),
                pre_include=("p.h", "q.h"),
                ptxas_options=("-v", "-O3"),
                diag_error=(1, 2, 3),
                diag_suppress=(4, 5),
                diag_warn=(6, 7),
            )
            LinkerOptions(
                kernels_used=("k1", "k2"),
                variables_used=("v1", "v2"),
                ptxas_options=("-v", "-O3"),
            )
            """
        )
    )
    r = mypy_strict(script, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_single_element_tuple_annotations_on_the_option_classes():
    import dataclasses

    for cls in (ProgramOptions, LinkerOptions):
        for field in dataclasses.fields(cls):
            text = str(field.type)
            assert "tuple[str]" not in text and "tuple[int]" not in text, (cls, field.name)
