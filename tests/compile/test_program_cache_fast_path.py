# SPDX-License-Identifier: Apache-2.0
"""The fast paths of a cache hit give the answers of the slow ones.

Keys are remembered per process for plain inputs: every remembered key must
equal the key derived afresh, and any change to the inputs (an option, its
type, the compiler version) must give the fresh key too.  The on-disk cache
reads entries through file descriptors: the bytes and the access-time
refresh must be those of a plain read.
"""

from __future__ import annotations

import os
import time

import pytest
from _helpers import _nvrtc_available

import cuda_core._loader as loader
from cuda_core import ProgramOptions
from cuda_core.utils import FileStreamProgramCache, make_program_cache_key
from cuda_core.utils._program_cache import _keys

requires_nvrtc = pytest.mark.skipif(
    not _nvrtc_available(), reason='NVRTC not found (pip install "cuda-core-cffi[cu13]")'
)

KERNEL = 'extern "C" __global__ void k(float *a) { a[threadIdx.x] += 2.0f; }\n'


def _key(options, **kw):
    args = {"code": KERNEL, "code_type": "c++", "target_type": "cubin", "options": options}
    args.update(kw)
    return make_program_cache_key(**args)


def _fresh_key(options, **kw):
    _keys._memo.clear()
    return _key(options, **kw)


@requires_nvrtc
def test_remembered_key_equals_the_fresh_one():
    opts = ProgramOptions(arch="sm_90", name="k", std="c++17", debug=True)
    first = _fresh_key(opts)
    assert _key(opts) == first  # remembered
    assert len(_keys._memo) == 1
    assert _fresh_key(opts) == first


@requires_nvrtc
def test_changing_an_option_after_a_key_changes_the_key():
    opts = ProgramOptions(arch="sm_90", name="k")
    before = _fresh_key(opts)
    _key(opts)
    opts.lineinfo = True
    after = _key(opts)
    assert after != before
    assert after == _fresh_key(opts)
    opts.lineinfo = None
    assert _key(opts) == before


@requires_nvrtc
def test_equal_values_of_other_types_are_not_confused():
    # 1 == True, but the flag renders "--maxrregcount=1" and "--maxrregcount=True".
    as_int = ProgramOptions(arch="sm_90", max_register_count=1)
    as_bool = ProgramOptions(arch="sm_90", max_register_count=True)
    _keys._memo.clear()
    k_int = _key(as_int)
    k_bool = _key(as_bool)
    assert k_int != k_bool
    assert k_int == _fresh_key(as_int)
    assert k_bool == _fresh_key(as_bool)


@requires_nvrtc
def test_inputs_that_are_not_plain_are_not_remembered():
    _keys._memo.clear()
    _key(ProgramOptions(arch="sm_90", include_path=["/nonexistent"]), extra_digest=b"h")
    _key(ProgramOptions(arch="sm_90"), name_expressions=("k",))
    _key(ProgramOptions(arch="sm_90", define_macro=("A", "1")))
    assert _keys._memo == {}


@requires_nvrtc
def test_a_new_compiler_version_is_seen_by_a_remembered_key(monkeypatch):
    opts = ProgramOptions(arch="sm_90")
    before = _fresh_key(opts)
    monkeypatch.setattr(loader, "nvrtc_version", lambda: (99, 9))
    after = _key(opts)
    assert after != before
    assert after == _fresh_key(opts)


def test_version_probes_are_read_once(monkeypatch):
    calls = []
    monkeypatch.setattr(loader, "_versions", {})
    monkeypatch.setattr(loader, "ensure_loaded", lambda name: calls.append(name))

    class FakeLib:
        def nvrtcVersion(self, major, minor):
            major[0], minor[0] = 12, 8
            return 0

    monkeypatch.setattr(loader, "lib", FakeLib())
    assert loader.nvrtc_version() == (12, 8)
    assert loader.nvrtc_version() == (12, 8)
    assert calls == ["nvrtc"]


def test_file_entry_read_matches_a_plain_read(tmp_path):
    cache = FileStreamProgramCache(tmp_path / "c")
    payload = os.urandom(300_001)
    cache[b"key"] = payload
    path = cache._path(b"key")
    old = time.time_ns() - 10**12  # 1000 s ago
    os.utime(path, ns=(old, old))
    assert cache[b"key"] == path.read_bytes() == payload
    st = os.stat(path)
    assert st.st_mtime_ns == old  # kept
    assert st.st_atime_ns > old  # refreshed by the read
    assert cache.get(b"absent") is None
    with pytest.raises(KeyError):
        cache[b"absent"]


def test_file_entry_read_to_the_end_when_it_grew(tmp_path):
    from cuda_core.utils._program_cache._file_stream import _read_all

    path = tmp_path / "f"
    path.write_bytes(b"x" * 5000)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_all(fd, 10) == b"x" * 5000  # fstat said 10 bytes: read on to the end
    finally:
        os.close(fd)
