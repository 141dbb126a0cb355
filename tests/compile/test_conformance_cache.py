# SPDX-License-Identifier: Apache-2.0
"""make_program_cache_key and the program caches behave as cuda.core's.

The CPU tests rebuild expected keys from the documented schema (label +
8-byte big-endian length + payload, SHA-256) and check the refusals in
cuda.core's order.  The GPU tests run only where ``cuda.core`` itself is
importable: they compare keys and flags with it, and share one cache
directory with it in both directions.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import re

import pytest

import cuda_core._loader as loader
from cuda_core import ObjectCode, Program, ProgramOptions
from cuda_core._errors import LibraryNotFoundError
from cuda_core._linker import Linker
from cuda_core.typing import CompilerBackendType
from cuda_core.utils import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    make_program_cache_key,
)

KERNEL = 'extern "C" __global__ void k(int *a) { a[threadIdx.x] = 7; }\n'


def _frame(label, payload):
    return label.encode("ascii") + len(payload).to_bytes(8, "big") + payload


def _expected(*fields):
    return hashlib.sha256(b"".join(_frame(label, payload) for label, payload in fields)).digest()


def _key(options=None, **kw):
    args = {
        "code": KERNEL,
        "code_type": "c++",
        "target_type": "cubin",
        "options": options if options is not None else ProgramOptions(arch="sm_90"),
    }
    args.update(kw)
    return make_program_cache_key(**args)


@pytest.fixture
def nvrtc_13_0(monkeypatch):
    monkeypatch.setattr(loader, "nvrtc_version", lambda: (13, 0))


# -- key derivation -------------------------------------------------------------------


def test_cpp_key_layout(nvrtc_13_0):
    opts = ProgramOptions(arch="sm_90", debug=True, name="prog")
    got = _key(opts, name_expressions=["k", b"j"], extra_digest=b"\x01\x02")
    assert got == _expected(
        ("schema", b"2"),
        ("nvrtc", b"13.0"),
        ("code_type", b"c++"),
        ("target_type", b"cubin"),
        ("code", KERNEL.encode()),
        ("option_count", b"2"),
        ("option", b"-arch=sm_90"),
        ("option", b"--device-debug"),
        ("names_count", b"2"),
        ("name", b"b:j"),
        ("name", b"s:k"),
        ("options_name", b"prog"),
        ("extra_digest", b"\x01\x02"),
    )


def test_failed_probe_is_recorded_not_raised(monkeypatch):
    def missing():
        raise LibraryNotFoundError("no NVRTC here")

    monkeypatch.setattr(loader, "nvrtc_version", missing)
    got = _key(target_type="ptx")
    assert got == _expected(
        ("schema", b"2"),
        ("nvrtc_probe_failed", b"LibraryNotFoundError"),
        ("code_type", b"c++"),
        ("target_type", b"ptx"),
        ("code", KERNEL.encode()),
        ("option_count", b"1"),
        ("option", b"-arch=sm_90"),
        ("names_count", b"0"),
        ("options_name", b"default_program"),
    )


def _linker_fields(driver, **values):
    gated = {
        "name": repr("default_program"),
        "arch": repr("sm_90"),
        "max_register_count": "None",
        "time": "False",
        "link_time_optimization": "False",
        "debug": "False",
        "lineinfo": "False",
        "ftz": "None",
        "prec_div": "None",
        "prec_sqrt": "None",
        "fma": "None",
        "split_compile": "None",
        "ptxas_options": "None",
        "no_cache": "False",
    }
    gated.update(values)
    if driver:
        for f in ("ftz", "prec_div", "prec_sqrt", "fma"):
            gated[f] = "<driver-ignored>"
    return [("option", f"{k}={v}".encode()) for k, v in gated.items()]


@pytest.mark.parametrize("driver", [False, True])
def test_ptx_key_layout(monkeypatch, driver):
    backend = CompilerBackendType.DRIVER if driver else CompilerBackendType.NVJITLINK
    monkeypatch.setattr(Linker, "which_backend", classmethod(lambda cls: backend))
    monkeypatch.setattr(loader, "nvjitlink_version", lambda: (13, 1))
    monkeypatch.setattr(loader, "driver_version", lambda: 13020)
    opts = ProgramOptions(arch="sm_90", debug=1, ftz=0, ptxas_options="-v", std="c++17")
    values = {"debug": "True", "ftz": "False", "ptxas_options": "('-Xptxas=-v',)"}
    if driver:
        with pytest.raises(ValueError, match="^the cuLink driver linker does not support these"):
            make_program_cache_key(code="x", code_type="ptx", options=opts, target_type="cubin")
        opts.ptxas_options = None
        values.pop("ptxas_options")
    got = make_program_cache_key(
        code="ptx text", code_type="PTX", options=opts, target_type="CUBIN"
    )
    probe = (
        [("linker_backend", b"driver"), ("linker_version", b"13020")]
        if driver
        else [("linker_backend", b"nvJitLink"), ("linker_version", b"(13, 1)")]
    )
    assert got == _expected(
        ("schema", b"2"),
        *probe,
        ("code_type", b"ptx"),
        ("target_type", b"cubin"),
        ("code", b"ptx text"),
        ("option_count", b"14"),
        *_linker_fields(driver, **values),
        ("options_name", b"default_program"),
    )


def test_nvvm_key_layout(monkeypatch):
    def missing():
        raise LibraryNotFoundError("no libNVVM")

    monkeypatch.setattr(loader, "nvvm_version", missing)
    opts = ProgramOptions(
        arch="sm_90", extra_sources=[("b", b"\x00bc"), ("a", "text")], use_libdevice=True
    )
    got = make_program_cache_key(
        code=b"BC\xc0\xde",
        code_type="nvvm",
        options=opts,
        target_type="ltoir",
        name_expressions=["ignored"],
        extra_digest=b"libdevice",
    )
    assert got == _expected(
        ("schema", b"2"),
        ("nvvm_probe_failed", b"LibraryNotFoundError"),
        ("code_type", b"nvvm"),
        ("target_type", b"ltoir"),
        ("code", b"BC\xc0\xde"),
        ("option_count", b"2"),
        ("option", b"-arch=compute_90"),
        ("option", b"-gen-lto"),
        ("extra_sources_count", b"2"),
        ("extra_source_name", b"b"),
        ("extra_source_code", b"\x00bc"),
        ("extra_source_name", b"a"),
        ("extra_source_code", b"text"),
        ("use_libdevice", b"1"),
        ("options_name", b"default_program"),
        ("extra_digest", b"libdevice"),
    )


def test_extra_digest_is_mixed_in_as_bytes(nvrtc_13_0):
    assert _key(extra_digest=3) == _key(extra_digest=b"\x00\x00\x00")  # as upstream


# -- refusals, in cuda.core's order -----------------------------------------------------


def test_code_type_and_target_messages(nvrtc_13_0):
    with pytest.raises(ValueError) as info:
        _key(code_type="Fortran")
    assert (
        str(info.value) == "'fortran' is not a valid SourceCodeType. Must be 'c++', 'nvvm' or 'ptx'"
    )
    with pytest.raises(ValueError, match="^5 is not a valid SourceCodeType"):
        _key(code_type=5)
    with pytest.raises(ValueError) as info:
        _key(target_type="FATBIN")
    assert str(info.value) == (
        "target_type='fatbin' is not supported by the program cache (must be 'cubin', 'ltoir' "
        "or 'ptx')"
    )
    with pytest.raises(ValueError) as info:
        _key(code_type="nvvm", code="x")
    assert str(info.value) == (
        "target_type='cubin' is not valid for code_type='nvvm' (supported: ['ltoir', 'ptx']). "
        "Program.compile() rejects this combination, so caching a key for it is meaningless."
    )


def test_options_are_not_coerced(nvrtc_13_0):
    for bad in (None, {"arch": "sm_90"}):
        with pytest.raises(AttributeError):
            make_program_cache_key(code=KERNEL, code_type="c++", options=bad, target_type="cubin")


def test_cpp_refusal_order(nvrtc_13_0):
    prefix = re.escape("make_program_cache_key() refuses to build a key for options that")
    # Side effects first ("set" means not None: False counts).
    opts = ProgramOptions(arch="sm_90", time=False, create_pch="p", include_path="/i")
    with pytest.raises(ValueError, match=rf"^{prefix} have compile-time side effects "):
        _key(opts)
    with pytest.raises(ValueError, match=r"\(create_pch, time\)"):
        _key(opts, extra_digest=b"d")  # extra_digest does not lift it
    # Then extra_sources.
    opts = ProgramOptions(arch="sm_90", extra_sources=[("m", "x")], include_path="/i")
    with pytest.raises(ValueError) as info:
        _key(opts)
    assert str(info.value) == (
        "extra_sources is only valid for code_type='nvvm'; Program() rejects it for "
        "code_type='c++'."
    )
    # Then external content without a digest.
    opts = ProgramOptions(arch="sm_90", pch=True, pre_include="", name="d/x.cu")
    with pytest.raises(
        ValueError,
        match=rf"^{prefix} pull in external file content \(pre_include, pch\) without an",
    ):
        _key(opts)
    # Then a name with a directory component (either separator).
    for name in ("src/k.cu", "src\\k.cu"):
        with pytest.raises(ValueError) as info:
            _key(ProgramOptions(arch="sm_90", name=name))
        assert str(info.value).startswith(
            f"make_program_cache_key() refuses to build a key for options.name={name!r} "
            "(NVRTC source-filename with a directory component) without an extra_digest"
        )
        assert _key(ProgramOptions(arch="sm_90", name=name), extra_digest=b"h")
    # Unset forms do not count: empty lists, falsy pch.
    assert _key(ProgramOptions(arch="sm_90", include_path=[], pch=False))


def test_code_type_checks(nvrtc_13_0):
    with pytest.raises(TypeError) as info:
        _key(code=KERNEL.encode())
    assert str(info.value) == (
        "code must be str for code_type='c++'; bytes/bytearray are only accepted for "
        "code_type='nvvm'."
    )
    with pytest.raises(TypeError, match="^code must be str for code_type='ptx'"):
        _key(code=b"x", code_type="ptx")
    with pytest.raises(TypeError, match="^code must be str or bytes, got int"):
        _key(code=5)


def test_name_expression_checks(nvrtc_13_0):
    with pytest.raises(
        TypeError, match="^name_expressions elements must be str or bytes; bytearray"
    ):
        _key(name_expressions=[bytearray(b"k")])
    with pytest.raises(TypeError) as info:
        _key(name_expressions=[1])
    assert str(info.value) == "name_expressions elements must be str or bytes; got int"


def test_nvvm_libdevice_needs_a_digest(monkeypatch):
    monkeypatch.setattr(loader, "nvvm_version", lambda: (2, 0))
    with pytest.raises(
        ValueError,
        match=re.escape(
            "make_program_cache_key() refuses to build an NVVM key with use_libdevice=True "
            "and no extra_digest"
        ),
    ):
        make_program_cache_key(
            code="ir",
            code_type="nvvm",
            options=ProgramOptions(arch="sm_90", use_libdevice=True),
            target_type="ptx",
        )


def test_ptx_extra_sources_refused(monkeypatch):
    monkeypatch.setattr(
        Linker, "which_backend", classmethod(lambda cls: CompilerBackendType.NVJITLINK)
    )
    with pytest.raises(ValueError) as info:
        make_program_cache_key(
            code="x",
            code_type="ptx",
            options=ProgramOptions(arch="sm_90", extra_sources=[("m", "x")]),
            target_type="cubin",
        )
    assert str(info.value).endswith("Program() rejects it for code_type='ptx'.")


def test_nvvm_options_go_through_nvvm_flags(monkeypatch):
    monkeypatch.setattr(loader, "nvvm_version", lambda: (2, 0))
    with pytest.raises(Exception, match="not supported by NVVM backend: define_macro"):
        make_program_cache_key(
            code="ir",
            code_type="nvvm",
            options=ProgramOptions(arch="sm_90", define_macro="X"),
            target_type="ptx",
        )


# -- Program.compile(cache=) checks -----------------------------------------------------


def test_compile_rejects_non_cache_objects():
    prog = Program.__new__(Program)  # the checks come before anything is compiled
    prog._source, prog._code_type, prog._options = KERNEL, "c++", ProgramOptions(arch="sm_90")
    for bad in ({}, "cache", 5):
        with pytest.raises(TypeError) as info:
            prog.compile("cubin", cache=bad)
        assert str(info.value) == (
            "cache must be an instance of cuda_core.utils.ProgramCacheResource; "
            f"got {type(bad).__name__}"
        )
    with pytest.raises(
        ValueError, match=r"^Program.compile\(cache=...\) does not support name_expressions"
    ):
        prog.compile("cubin", name_expressions=["k"], cache=InMemoryProgramCache())


def test_compile_key_target_check_wins(nvrtc_13_0):
    prog = Program.__new__(Program)
    prog._source, prog._code_type, prog._options = KERNEL, "c++", ProgramOptions(arch="sm_90")
    with pytest.raises(
        ValueError, match="^target_type='fatbin' is not supported by the program cache"
    ):
        prog.compile("fatbin", cache=InMemoryProgramCache())


# -- the caches -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -5])
def test_in_memory_max_size_not_positive(bad):
    with pytest.raises(ValueError) as info:
        InMemoryProgramCache(max_size_bytes=bad)
    assert str(info.value) == "max_size_bytes must be positive or None (0 would evict every write)"


@pytest.mark.parametrize("bad", [True, 2.5, "10"])
def test_in_memory_max_size(bad):
    with pytest.raises(ValueError) as info:
        InMemoryProgramCache(max_size_bytes=bad)
    assert str(info.value) == (
        f"max_size_bytes must be a positive int or None (0 would evict every write), got {bad!r}"
    )


def test_file_max_size(tmp_path):
    with pytest.raises(ValueError, match=r"^max_size_bytes must be positive or None \(0 would"):
        FileStreamProgramCache(tmp_path, max_size_bytes=0)
    with pytest.raises(TypeError):
        FileStreamProgramCache(tmp_path, max_size_bytes=[1])
    assert len(FileStreamProgramCache(tmp_path, max_size_bytes=0.5)) == 0


def test_key_and_value_types(tmp_path):
    for cache in (InMemoryProgramCache(), FileStreamProgramCache(tmp_path)):
        with pytest.raises(TypeError, match="^cache keys must be bytes or str, got int"):
            cache[1] = b"x"
        with pytest.raises(
            TypeError, match="^cache values must be bytes-like or ObjectCode, got str"
        ):
            cache[b"k"] = "text"
        gone = tmp_path / "gone.cubin"
        gone.write_bytes(b"x")
        code = ObjectCode.from_cubin(str(gone))
        gone.unlink()
        with pytest.raises(FileNotFoundError) as info:
            cache[b"k"] = code
        assert str(info.value) == (
            f"cannot store path-backed ObjectCode in cache: {gone} no longer exists"
        )


def test_file_cache_default_directory_is_shared_with_cuda_core(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = FileStreamProgramCache()
    cache[b"k"] = b"v"
    digest = hashlib.sha256(b"k").hexdigest()
    entry = tmp_path / "cuda-python" / "program-cache" / "entries" / digest[:2] / digest[2:]
    assert entry.read_bytes() == b"v"


def test_file_cache_recreates_tmp_and_shard(tmp_path):
    import shutil

    cache = FileStreamProgramCache(tmp_path)
    cache[b"a"] = b"1"
    shutil.rmtree(tmp_path / "tmp")
    shutil.rmtree(tmp_path / "entries")
    cache[b"a"] = b"2"
    assert cache[b"a"] == b"2"


def test_file_cache_counts_temp_files_toward_the_cap(tmp_path):
    (tmp_path / "tmp").mkdir(parents=True)
    (tmp_path / "tmp" / "entry-inflight").write_bytes(bytes(900))  # another writer's
    cache = FileStreamProgramCache(tmp_path, max_size_bytes=1000)
    cache[b"a"] = bytes(50)
    cache[b"b"] = bytes(60)  # 900 + 50 + 60 > 1000: the older entry goes
    assert cache.get(b"a") is None and cache[b"b"] == bytes(60)
    assert (tmp_path / "tmp" / "entry-inflight").exists()  # young temp files stay


# -- with cuda.core itself (GPU machine) ------------------------------------------------


def _upstream():
    """Return cuda.core (and its utils) when importable with a program cache, else skip."""
    try:
        core = importlib.import_module("cuda.core")
        utils = importlib.import_module("cuda.core.utils")
    except Exception as e:  # noqa: BLE001 - any failure means "not available here"
        pytest.skip(f"cuda.core is not importable: {e}")
    if not hasattr(utils, "make_program_cache_key") or not hasattr(utils, "FileStreamProgramCache"):
        pytest.skip("this cuda.core has no program cache")
    return core, utils


def _upstream_schema():
    mod = importlib.import_module("cuda.core.utils._program_cache._keys")
    return getattr(mod, "_KEY_SCHEMA_VERSION", None)


def _upstream_nvrtc_version():
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    assert int(err) == 0
    return int(major), int(minor)


OPTION_SETS = [
    {},
    {"debug": True, "lineinfo": True},
    {"define_macro": ["A", ("B", "2")], "std": "c++17", "max_register_count": 64},
    {"ftz": True, "prec_div": False, "fma": False, "use_fast_math": True},
    {"relocatable_device_code": True, "diag_suppress": [177, 550], "name": "named"},
]


@pytest.mark.gpu
@pytest.mark.parametrize("kwargs", OPTION_SETS, ids=lambda kw: ",".join(kw) or "defaults")
def test_nvrtc_flags_match_cuda_core(device, kwargs):
    core, _ = _upstream()
    if not hasattr(core.ProgramOptions, "as_bytes"):
        pytest.skip("this cuda.core's ProgramOptions has no as_bytes")
    arch = f"sm_{device.arch}"
    ours = ProgramOptions(arch=arch, **kwargs).as_bytes("nvrtc", "cubin")
    theirs = core.ProgramOptions(arch=arch, **kwargs).as_bytes("nvrtc", "cubin")
    assert ours == theirs


@pytest.mark.gpu
@pytest.mark.parametrize("kwargs", OPTION_SETS, ids=lambda kw: ",".join(kw) or "defaults")
def test_cpp_keys_match_cuda_core(device, kwargs):
    core, utils = _upstream()
    if _upstream_schema() != 2:
        pytest.skip(f"cuda.core's key schema is {_upstream_schema()}, ours is 2")
    if _upstream_nvrtc_version() != loader.nvrtc_version():
        pytest.skip("cuda.core and cuda_core load different NVRTC versions")
    arch = f"sm_{device.arch}"
    for target in ("cubin", "ptx"):
        ours = make_program_cache_key(
            code=KERNEL,
            code_type="c++",
            options=ProgramOptions(arch=arch, **kwargs),
            target_type=target,
            name_expressions=("k",),
        )
        theirs = utils.make_program_cache_key(
            code=KERNEL,
            code_type="c++",
            options=core.ProgramOptions(arch=arch, **kwargs),
            target_type=target,
            name_expressions=("k",),
        )
        assert ours == theirs, (target, kwargs)


def _compile_with_cache(program_cls, options, cache):
    return program_cls(KERNEL, "c++", options=options).compile("cubin", cache=cache)


@pytest.mark.gpu
def test_shared_cache_directory_both_ways(device, tmp_path):
    core, utils = _upstream()
    if "cache" not in inspect.signature(core.Program.compile).parameters:
        pytest.skip("this cuda.core's Program.compile takes no cache")
    if _upstream_schema() != 2 or _upstream_nvrtc_version() != loader.nvrtc_version():
        pytest.skip("cuda.core derives other keys here (schema or NVRTC version differs)")
    arch = f"sm_{device.arch}"
    ours_opts = ProgramOptions(arch=arch, name="shared")
    their_opts = core.ProgramOptions(arch=arch, name="shared")
    key = make_program_cache_key(
        code=KERNEL, code_type="c++", options=ours_opts, target_type="cubin"
    )

    # cuda_core writes, cuda.core reads: a marker payload proves the hit.
    FileStreamProgramCache(tmp_path)[key] = b"written-by-cuda_core"
    hit = _compile_with_cache(core.Program, their_opts, utils.FileStreamProgramCache(tmp_path))
    assert bytes(hit.code) == b"written-by-cuda_core"

    # cuda.core writes, cuda_core reads.
    utils.FileStreamProgramCache(tmp_path)[key] = b"written-by-cuda.core"
    hit = _compile_with_cache(Program, ours_opts, FileStreamProgramCache(tmp_path))
    assert bytes(hit.code) == b"written-by-cuda.core"

    # A real compilation stored by one is the other's hit, byte for byte, and raw.
    FileStreamProgramCache(tmp_path).clear()
    compiled = _compile_with_cache(Program, ours_opts, FileStreamProgramCache(tmp_path))
    digest = hashlib.sha256(key).hexdigest()
    entry = tmp_path / "entries" / digest[:2] / digest[2:]
    assert entry.read_bytes() == bytes(compiled.code)
    assert entry.read_bytes()[:4] == b"\x7fELF"  # raw cubin: readable by cuobjdump
    assert utils.FileStreamProgramCache(tmp_path)[key] == bytes(compiled.code)
    utils.FileStreamProgramCache(tmp_path).clear()
    compiled = _compile_with_cache(core.Program, their_opts, utils.FileStreamProgramCache(tmp_path))
    assert FileStreamProgramCache(tmp_path)[key] == bytes(compiled.code)
    kernel = ObjectCode.from_cubin(FileStreamProgramCache(tmp_path)[key]).get_kernel("k")
    assert kernel.handle != 0


@pytest.mark.gpu
def test_default_directories_agree(tmp_path, monkeypatch):
    _, utils = _upstream()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    utils.FileStreamProgramCache()[b"from-cuda.core"] = b"x"
    assert FileStreamProgramCache()[b"from-cuda.core"] == b"x"
