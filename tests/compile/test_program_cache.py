# SPDX-License-Identifier: Apache-2.0
"""Program caches: in-memory and on-disk, cache keys, Program.compile(cache=)."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
import textwrap
import time

import pytest
from _helpers import _nvrtc_available
from _scripts.hardening_util import package_root

from cuda_core import ObjectCode, Program, ProgramOptions
from cuda_core.utils import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)

requires_nvrtc = pytest.mark.skipif(
    not _nvrtc_available(), reason='NVRTC not found (pip install "cuda-core-cffi[cu13]")'
)

KERNEL = 'extern "C" __global__ void k(float *a) { a[threadIdx.x] += 1.0f; }\n'


@pytest.fixture(params=["memory", "file"])
def cache(request, tmp_path):
    if request.param == "memory":
        c = InMemoryProgramCache()
    else:
        c = FileStreamProgramCache(tmp_path / "cache")
    with c:
        yield c


def _entry_files(cache):
    return [p for p in (cache.path / "entries").rglob("*") if p.is_file()]


# -- mapping behaviour (both backends) --------------------------------------------------


def test_hit_and_miss(cache):
    assert isinstance(cache, ProgramCacheResource)
    assert cache.get(b"k") is None
    assert cache.get("k", b"dflt") == b"dflt"
    with pytest.raises(KeyError):
        cache[b"k"]
    cache[b"k"] = b"value"
    assert cache[b"k"] == b"value"
    assert cache["k"] == b"value"  # str keys are their UTF-8 bytes
    assert cache.get(b"k") == b"value"
    assert len(cache) == 1
    cache["k"] = bytearray(b"new")
    assert cache[b"k"] == b"new" and isinstance(cache[b"k"], bytes)
    assert len(cache) == 1


def test_delete_clear_update(cache):
    cache.update({b"a": b"1", "b": memoryview(b"2")})
    cache.update([(b"c", b"3")])
    assert len(cache) == 3
    del cache[b"a"]
    with pytest.raises(KeyError):
        del cache[b"a"]
    assert cache.get(b"a") is None and cache[b"b"] == b"2"
    cache.clear()
    assert len(cache) == 0 and cache.get(b"c") is None


def test_object_code_values(cache, tmp_path):
    cache[b"obj"] = ObjectCode.from_cubin(b"\x7fELFdata", name="n")
    assert cache[b"obj"] == b"\x7fELFdata"
    path = tmp_path / "k.cubin"
    path.write_bytes(b"from-file")
    cache[b"path"] = ObjectCode.from_cubin(str(path))
    path.write_bytes(b"changed")  # the content was stored, not the path
    assert cache[b"path"] == b"from-file"


def test_bad_keys_and_values(cache):
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        cache[42] = b"x"
    with pytest.raises(TypeError, match="cache values must be bytes-like or ObjectCode"):
        cache[b"k"] = 42


def test_no_contains():
    for cls in (InMemoryProgramCache, FileStreamProgramCache, ProgramCacheResource):
        assert "__contains__" not in vars(cls)
    assert not hasattr(ProgramCacheResource, "__contains__")


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_in_memory_max_size_validation(bad):
    with pytest.raises(ValueError, match="max_size_bytes must be (a )?positive (int )?or None"):
        InMemoryProgramCache(max_size_bytes=bad)


def test_file_max_size_validation(tmp_path):
    for bad in (0, -1, -0.5):
        with pytest.raises(ValueError) as info:
            FileStreamProgramCache(tmp_path, max_size_bytes=bad)
        assert str(info.value) == (
            "max_size_bytes must be positive or None (0 would evict every write)"
        )
    with pytest.raises(TypeError):  # a non-number fails the comparison
        FileStreamProgramCache(tmp_path, max_size_bytes="10")
    FileStreamProgramCache(tmp_path, max_size_bytes=1.5e6)  # floats are accepted


def test_in_memory_lru_eviction():
    c = InMemoryProgramCache(max_size_bytes=30)
    c[b"a"] = b"x" * 10
    c[b"b"] = b"x" * 10
    c[b"c"] = b"x" * 10
    c[b"a"]  # a is now the most recently used
    c[b"d"] = b"x" * 10  # evicts b, the least recently used
    assert c.get(b"b") is None
    assert all(c.get(k) is not None for k in (b"a", b"c", b"d"))
    c[b"huge"] = b"x" * 100  # larger than the bound: does not survive
    assert c.get(b"huge") is None and len(c) == 0


# -- the file cache -----------------------------------------------------------------------


def test_file_cache_persists_and_defaults(tmp_path, monkeypatch):
    FileStreamProgramCache(tmp_path / "c")[b"k"] = b"persisted"
    assert FileStreamProgramCache(str(tmp_path / "c"))[b"k"] == b"persisted"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    default = FileStreamProgramCache()
    assert default.path == tmp_path / "xdg" / "cuda-python" / "program-cache"  # cuda.core's
    with pytest.raises(TypeError):
        FileStreamProgramCache(42)
    (tmp_path / "afile").write_bytes(b"")
    with pytest.raises(FileExistsError):
        FileStreamProgramCache(tmp_path / "afile")


def test_entries_are_raw_payloads_under_the_key_sha256(tmp_path):
    import hashlib

    c = FileStreamProgramCache(tmp_path)
    c[b"k"] = b"\x7fELF-payload"
    digest = hashlib.sha256(b"k").hexdigest()
    path = tmp_path / "entries" / digest[:2] / digest[2:]
    assert _entry_files(c) == [path]
    assert path.read_bytes() == b"\x7fELF-payload"  # no header: cuobjdump reads it


def test_reads_are_unvalidated_and_never_delete(tmp_path):
    c = FileStreamProgramCache(tmp_path)
    c[b"k"] = b"payload-bytes" * 10
    (path,) = _entry_files(c)
    for content in (b"", b"written by someone else", bytes(range(256))):
        path.write_bytes(content)
        assert c[b"k"] == content  # returned as stored
        assert path.exists()


def test_clear_and_eviction_leave_foreign_files_alone(tmp_path):
    c = FileStreamProgramCache(tmp_path, max_size_bytes=100)
    notes = tmp_path / "entries" / "README"
    odd = tmp_path / "entries" / "ab" / "not-an-entry"
    odd.parent.mkdir(parents=True)
    notes.write_bytes(b"x" * 1000)
    odd.write_bytes(b"y" * 1000)
    for i in range(5):
        c[b"k%d" % i] = bytes(60)  # each write evicts older entries
    assert len(c) == 1
    c.clear()
    assert len(c) == 0
    assert notes.read_bytes() == b"x" * 1000 and odd.read_bytes() == b"y" * 1000


def test_file_cache_lru_eviction(tmp_path):
    c = FileStreamProgramCache(tmp_path, max_size_bytes=3 * 1000 + 10)
    now = time.time()
    for i, key in enumerate((b"a", b"b", b"c")):
        c[key] = bytes(1000)
        os.utime(c._path(key), (now - 100 + i, now - 100 + i))  # a oldest, c newest
    c[b"a"]  # reading refreshes a's access time
    c[b"d"] = bytes(1000)  # over the bound: the least recently read (b) goes
    assert c.get(b"b") is None
    assert all(c.get(k) == bytes(1000) for k in (b"a", b"c", b"d"))
    assert len(c) == 3


def test_stale_temp_files_are_swept(tmp_path):
    c = FileStreamProgramCache(tmp_path)
    stale = tmp_path / "tmp" / "entry-crashed"
    fresh = tmp_path / "tmp" / "entry-inflight"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"y")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    FileStreamProgramCache(tmp_path)
    assert not stale.exists() and fresh.exists()
    c.clear()
    assert fresh.exists()  # a young temp file may be another process's write


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    from cuda_core.utils import FileStreamProgramCache
    cache = FileStreamProgramCache({path!r})
    tag = sys.argv[1]
    for round in range(40):
        for i in range(8):
            # Shared keys get different-size values from each writer.
            cache[b"shared-%d" % i] = (tag.encode() * (100 + 37 * i + round))
            cache[("own-%s-%d" % (tag, i)).encode()] = tag.encode() * 500
            value = cache.get(b"shared-%d" % i)
            assert value is None or value in {{
                t.encode() * (100 + 37 * i + r) for t in "AB" for r in range(40)
            }}, "torn read"
    print("ok")
    """
)


def test_two_processes_writing_at_once(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(_WRITER.format(repo=package_root(), path=str(tmp_path / "cache")))
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), tag], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for tag in "AB"
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        assert out.strip() == b"ok"
    c = FileStreamProgramCache(tmp_path / "cache")
    assert len(c) == 8 + 16
    for i in range(8):
        value = c[b"shared-%d" % i]
        assert value in (b"A" * (100 + 37 * i + 39), b"B" * (100 + 37 * i + 39))
        for tag in "AB":
            assert c[f"own-{tag}-{i}".encode()] == tag.encode() * 500
    assert list((tmp_path / "cache" / "tmp").iterdir()) == []


# -- keys ---------------------------------------------------------------------------------

BASE = {"code": KERNEL, "code_type": "c++", "target_type": "cubin"}


def _key(options=None, **overrides):
    args = dict(BASE, options=options or ProgramOptions(arch="sm_90"))
    args.update(overrides)
    return make_program_cache_key(**args)


# One value per NVRTC-relevant field (files and side effects are covered below).
FIELD_VALUES = {
    "name": "other",
    "arch": "sm_80",
    "relocatable_device_code": True,
    "extensible_whole_program": True,
    "debug": True,
    "lineinfo": True,
    "device_code_optimize": True,
    "ptxas_options": "-v",
    "max_register_count": 32,
    "ftz": True,
    "prec_sqrt": False,
    "prec_div": False,
    "fma": False,
    "use_fast_math": True,
    "extra_device_vectorization": True,
    "link_time_optimization": True,
    "gen_opt_lto": True,
    "define_macro": "X",
    "undefine_macro": "X",
    "no_source_include": True,
    "std": "c++17",
    "builtin_move_forward": False,
    "builtin_initializer_list": False,
    "disable_warnings": True,
    "restrict": True,
    "device_as_default_execution_space": True,
    "device_int128": True,
    "optimization_info": "inline",
    "no_display_error_number": True,
    "diag_error": 1,
    "diag_suppress": 1,
    "diag_warn": 1,
    "brief_diagnostics": True,
    "split_compile": 2,
    "fdevice_syntax_only": True,
    "minimal": True,
    "no_cache": True,
    "device_float128": True,
    "frandom_seed": "7",
    "ofast_compile": "max",
    "pch_verbose": True,
    "pch_messages": False,
    "instantiate_templates_in_pch": True,
    "numba_debug": True,
}
NEED_DIGEST = {
    "include_path": "/inc",
    "pre_include": "h.h",
    "pch": True,
    "use_pch": "p",
    "pch_dir": "d",
}
SIDE_EFFECTS = {"create_pch": "p.pch", "time": "t.csv", "fdevice_time_trace": "t.json"}
NVVM_ONLY = {"extra_sources", "use_libdevice"}


@requires_nvrtc
def test_key_field_table_covers_every_option():
    fields = {f.name for f in dataclasses.fields(ProgramOptions)}
    assert fields == set(FIELD_VALUES) | set(NEED_DIGEST) | set(SIDE_EFFECTS) | NVVM_ONLY


@requires_nvrtc
def test_key_is_deterministic_bytes():
    key = _key()
    assert isinstance(key, bytes) and len(key) == 32
    assert _key() == key
    with pytest.raises(AttributeError):  # as in cuda.core, options are not coerced
        _key(options={"arch": "sm_90"})
    code = (
        f"import sys; sys.path.insert(0, {package_root()!r})\n"
        "from cuda_core import ProgramOptions\n"
        "from cuda_core.utils import make_program_cache_key\n"
        f"print(make_program_cache_key(code={KERNEL!r}, code_type='c++', target_type='cubin',"
        " options=ProgramOptions(arch='sm_90')).hex())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stdout.strip().decode() == key.hex()  # stable across processes


@requires_nvrtc
def test_key_sensitive_to_every_option():
    keys = {"base": _key()}
    for field, value in FIELD_VALUES.items():
        keys[field] = _key(ProgramOptions(**{"arch": "sm_90", field: value}))
    for field, value in NEED_DIGEST.items():
        keys[field] = _key(ProgramOptions(arch="sm_90", **{field: value}), extra_digest=b"d")
    assert len(set(keys.values())) == len(keys), "two configurations share a key"


@requires_nvrtc
def test_key_sensitive_to_every_other_input(monkeypatch):
    keys = [
        _key(),
        _key(code=KERNEL + "\n"),
        _key(target_type="ptx"),
        _key(target_type="ltoir"),
        _key(name_expressions=("k",)),
        _key(name_expressions=(b"k",)),
        _key(extra_digest=b"headers-v1"),
        _key(extra_digest=b"headers-v2"),
        _key(code_type="ptx", code=KERNEL),
    ]
    import cuda_core._loader as loader

    monkeypatch.setattr(loader, "nvrtc_version", lambda: (99, 9))
    keys.append(_key())  # a different compiler version
    assert len(set(keys)) == len(keys)


@requires_nvrtc
def test_key_equivalences():
    assert _key(name_expressions=("a", "b")) == _key(name_expressions=["b", "a"])
    assert _key(ProgramOptions(arch="sm_90", debug=False)) == _key()  # emits no flag
    assert _key(code_type="C++", target_type="CUBIN") == _key()


@requires_nvrtc
def test_key_ptx_and_nvvm_backends():
    ptx_keys = {
        make_program_cache_key(
            code=KERNEL,
            code_type="ptx",
            options=ProgramOptions(arch="sm_90", **kw),
            target_type="cubin",
        )
        for kw in ({}, {"debug": True}, {"max_register_count": 40}, {"name": "n"})
    }
    assert len(ptx_keys) == 4
    # NVRTC-only options do not reach the linker, so they do not split PTX keys.
    assert (
        make_program_cache_key(
            code=KERNEL,
            code_type="ptx",
            options=ProgramOptions(arch="sm_90", std="c++17"),
            target_type="cubin",
        )
        in ptx_keys
    )


@requires_nvrtc
def test_key_nvvm():
    from _helpers import _nvvm_available, nvvm_ir

    if not _nvvm_available():
        pytest.skip("libNVVM not found")
    ir = nvvm_ir()

    def key(code=ir, target="ptx", extra_digest=None, **kw):
        return make_program_cache_key(
            code=code,
            code_type="nvvm",
            options=ProgramOptions(arch="sm_90", **kw),
            target_type=target,
            extra_digest=extra_digest,
        )

    keys = {
        key(),
        key(debug=True),
        key(use_libdevice=True, extra_digest=b"libdevice-v1"),
        key(extra_sources=[("m", "x")]),
        key(extra_sources=[("m", "y")]),
        key(target="ltoir"),
    }
    assert len(keys) == 6
    assert key() == key(code=ir.encode())  # text as str or bytes: same source


@requires_nvrtc
@pytest.mark.parametrize("field", sorted(SIDE_EFFECTS))
def test_key_refuses_side_effect_options(field):
    with pytest.raises(ValueError, match=f"compile-time side effects \\({field}\\)"):
        _key(ProgramOptions(arch="sm_90", **{field: SIDE_EFFECTS[field]}), extra_digest=b"x")


@requires_nvrtc
@pytest.mark.parametrize("field", sorted(NEED_DIGEST))
def test_key_needs_digest_for_file_options(field):
    opts = ProgramOptions(arch="sm_90", **{field: NEED_DIGEST[field]})
    with pytest.raises(ValueError, match=f"external file content \\({field}\\) without an"):
        _key(opts)
    assert _key(opts, extra_digest=b"fingerprint")
    for name in ("src/kernel.cu", "src\\kernel.cu"):
        with pytest.raises(ValueError, match="directory component"):
            _key(ProgramOptions(arch="sm_90", name=name))


@requires_nvrtc
def test_key_argument_validation():
    with pytest.raises(ValueError, match="'fortran' is not a valid SourceCodeType"):
        _key(code_type="fortran")
    with pytest.raises(ValueError, match="target_type='cubin' is not valid for code_type='nvvm'"):
        _key(code_type="nvvm")
    with pytest.raises(TypeError, match="code must be str for code_type='c\\+\\+'"):
        _key(code=KERNEL.encode())
    with pytest.raises(TypeError):  # bytes("text") has no encoding
        _key(extra_digest="text")
    with pytest.raises(TypeError, match="name_expressions elements must be str or bytes"):
        _key(name_expressions=(1,))


# -- Program.compile(cache=) ---------------------------------------------------------------


class _CountingCache(InMemoryProgramCache):
    def __init__(self):
        super().__init__()
        self.reads = self.writes = 0

    def __getitem__(self, key):
        self.reads += 1
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self.writes += 1
        super().__setitem__(key, value)


@requires_nvrtc
def test_compile_with_cache_miss_then_hit():
    cache = _CountingCache()
    opts = ProgramOptions(arch="sm_90", name="cached")
    with Program('#warning "log line"\n' + KERNEL, "c++", opts) as prog:
        first = prog.compile("cubin", cache=cache)
        logs = io.StringIO()
        second = prog.compile("cubin", cache=cache, logs=logs)
    assert (cache.reads, cache.writes) == (2, 1)
    assert second.code == first.code and second.code[:4] == b"\x7fELF"
    assert second.name == "cached" and second.code_type == "cubin"
    assert logs.getvalue() == ""  # a hit does not compile
    with Program('#warning "log line"\n' + KERNEL, "c++", opts) as other:
        third = other.compile("cubin", cache=cache)  # a new Program, same inputs: a hit
    assert third.code == first.code and cache.writes == 1


@requires_nvrtc
def test_compile_with_file_cache_shares_entries_between_caches(tmp_path):
    opts = ProgramOptions(arch="sm_90")
    with Program(KERNEL, "c++", opts) as prog:
        good = prog.compile("cubin", cache=FileStreamProgramCache(tmp_path)).code
    (path,) = _entry_files(FileStreamProgramCache(tmp_path))
    assert path.read_bytes() == good  # the raw cubin
    with Program(KERNEL, "c++", opts) as prog:
        assert prog.compile("cubin", cache=FileStreamProgramCache(tmp_path)).code == good


@requires_nvrtc
def test_compile_cache_rejects_name_expressions():
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        with pytest.raises(
            ValueError, match="Program.compile\\(cache=...\\) does not support name_expressions"
        ):
            prog.compile("cubin", name_expressions=("k",), cache=InMemoryProgramCache())


@requires_nvrtc
def test_compile_cache_for_ptx_programs():
    with Program(KERNEL, "c++", ProgramOptions(arch="sm_90")) as prog:
        ptx = prog.compile("ptx").code.decode()
    cache = _CountingCache()
    for _ in range(2):
        with Program(ptx, "ptx", ProgramOptions(arch="sm_90")) as prog:
            assert prog.compile("cubin", cache=cache).code[:4] == b"\x7fELF"
    assert cache.writes == 1
