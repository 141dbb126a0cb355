# SPDX-License-Identifier: Apache-2.0
"""The stream argument of ``launch``: checked by the one stream coercer, as cuda.core does.

None and non-streams raise TypeError before anything else; a
``__cuda_stream__`` object is wrapped and then warns (DeprecationWarning,
attributed to the caller of ``launch``).  No GPU needed: the launch fails
later, on the kernel argument.
"""

from __future__ import annotations

import warnings

import pytest

from cuda_core import launch


class Foreign:
    def __cuda_stream__(self):
        return (0, 0x7000)


def test_none_stream_has_launch_wording():
    with pytest.raises(TypeError, match="^stream is required and must not be None"):
        launch(None, None, object())


def test_non_stream_raises_the_generic_type_error():
    with pytest.raises(TypeError, match="^Stream or GraphBuilder expected, got int$"):
        launch(5, None, object())


def test_protocol_stream_warns_at_the_caller():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TypeError, match="kernel must be a Kernel"):
            launch(Foreign(), {"grid": 1, "block": 1}, object())
    dep = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 1
    assert "via the stream protocol is deprecated" in str(dep[0].message)
    assert dep[0].filename == __file__
