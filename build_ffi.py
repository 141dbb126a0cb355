# SPDX-License-Identifier: Apache-2.0
"""Build the ``cuda_core._cuda_ffi`` CFFI extension (API mode) from ``cffi_src/``.

The extension declares the parts of the CUDA driver, NVRTC, nvJitLink and
libNVVM that cuda_core uses.  No CUDA header or library is needed to build
it: the declarations in ``cffi_src/cdefs/`` are written from the published
ABI (each file names the CUDA version it follows), and every entry point is
resolved at run time -- the driver's through ``cuGetProcAddress`` with the
version annotated on its prototype, the other libraries' through ``dlopen``
+ ``dlsym``.  Each declared function becomes a small static C wrapper that
calls through a function pointer; when the library or the symbol is missing
the wrapper returns a status that the error layer turns into an exception
naming the missing API.  ``cffi_src/README.md`` says how to add a library.

Declaration files (``cffi_src/cdefs/*.h``, valid C) are read in this order:
:data:`TYPE_FILES`, then each :data:`LIBRARIES` entry's file, then
:data:`HELPER_FILES` (and :data:`BENCH_FILE` when built with benchmarks).
In a file, every top-level statement that declares a function is a
prototype; everything else (``#define``, ``typedef``, ``struct``) is a type
declaration, which goes into both the cdef and the C source.  Annotations
are C comments after the prototype's semicolon, on the same line:

* ``/* abi 12030 */`` -- a driver entry point's ``cuGetProcAddress`` version
  (1000 * major + 10 * minor); required on every driver prototype.
* ``/* cffi: extern "Python" */`` -- a callback implemented in Python.

Functions returning a library status type are declared to cffi as returning
``int`` (the C definitions keep the enum): the value Python gets is the
same, but cffi converts an ``int`` result directly, about 7 ns cheaper per
call on CPython than its generic enum conversion.

C sources (``cffi_src/csrc/*.c``) are concatenated after the type
declarations: :data:`SOURCES_BEFORE`, the generated wrappers, then
:data:`SOURCES_AFTER`.  ``bench.c`` (the ``cc_bench_*`` C loops that the
benchmarks use as a floor) is compiled only when the environment variable
``CUDA_CORE_BUILD_BENCH`` is set to a value other than ``0``.  The extension
is linked stripped (``-s``) unless ``CUDA_CORE_BUILD_DEBUG`` is set likewise.
"""

from __future__ import annotations

import os
import re
from collections import namedtuple

import cffi

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cffi_src")

#: One line per library.  ``index``: its CC_LIB_<NAME> number (0, 1, ... in
#: order); ``missing_status``: what a wrapper returns when the library is
#: loaded but lacks the entry point; ``resolver``: the generated C function
#: that looks up every entry point of the library.  Index 0 is the driver.
Library = namedtuple("Library", "name header index status_type missing_status resolver")
LIBRARIES = (
    Library(
        "driver", "driver_api.h", 0, "CUresult", "CUDA_ERROR_NOT_SUPPORTED", "cc_resolve_driver"
    ),
    Library("nvrtc", "nvrtc.h", 1, "nvrtcResult", "CC_MISSING_SYMBOL", "cc_resolve_nvrtc"),
    Library(
        "nvjitlink",
        "nvjitlink.h",
        2,
        "nvJitLinkResult",
        "CC_MISSING_SYMBOL",
        "cc_resolve_nvjitlink",
    ),
    Library("nvvm", "nvvm.h", 3, "nvvmResult", "CC_MISSING_SYMBOL", "cc_resolve_nvvm"),
    Library("nvml", "nvml.h", 4, "nvmlReturn_t", "CC_MISSING_SYMBOL", "cc_resolve_nvml"),
)

TYPE_FILES = ("driver_types.h", "driver_enums.h", "driver_structs.h")
HELPER_FILES = ("dlpack.h", "cuda_core.h")
BENCH_FILE = "bench.h"
SOURCES_BEFORE = ("user_objects.c", "loader.c")
SOURCES_AFTER = (
    "launch.c",
    "streams.c",
    "texture.c",
    "release.c",
    "memory.c",
    "dlpack_exchange.c",
    "nvml.c",
    "tensor_map.c",
)
BENCH_SOURCE = "bench.c"
LAST_SOURCE = "cffi_wrappers.c"
#: The functions whose CPython wrappers keep the GIL during the call (see
#: cffi_src/csrc/cffi_wrappers.c for the rule): each returns without waiting
#: for the GPU, a lock or Python code.  Releasing and retaking the GIL costs
#: about 45 ns, two thirds of such a call.  Nothing that queues work on a
#: stream or waits belongs here.
KEEPS_GIL = (
    # reads of the calling thread's state
    "cc_status",
    "cc_last_handle",
    "cc_pool_alloc_status",
    "cc_current_device_key",
    "cuCtxGetCurrent",
    "cuCtxGetDevice",
    # creation, and destruction that the driver completes asynchronously
    "cc_event_new",
    "cc_event_new_untimed",
    "cuEventDestroy",
    "cc_stream_new",
    "cuStreamDestroy",
    "cc_tex_object_new",
    "cc_surf_object_new",
    "cc_tex_object_release",
    "cc_surf_object_release",
    # shared claims: atomic counts
    "cc_claim_retain",
    "cc_claim_drop",
)
BENCH_ENV = "CUDA_CORE_BUILD_BENCH"
DEBUG_ENV = "CUDA_CORE_BUILD_DEBUG"

Prototype = namedtuple("Prototype", "restype name params argnames version python")
Declarations = namedtuple("Declarations", "types prototypes")

_ABI = re.compile(r";[ \t]*/\*\s*abi\s+(\d+)\s*\*/")
_PYTHON = re.compile(r';[ \t]*/\*\s*cffi:\s*extern\s+"Python"\s*\*/')
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_PROTO = re.compile(r"(.+?)\b(\w+)\s*\((.*)\)\s*(?:@abi:(\d+)|(@python))?\s*;", re.S)
_NOT_PROTO = ("typedef", "struct", "union", "enum", "#")


def declaration_files(bench=False):
    """Return every declaration file name, in the order the builder reads them."""
    names = TYPE_FILES + tuple(lib.header for lib in LIBRARIES) + HELPER_FILES
    return names + ((BENCH_FILE,) if bench else ())


def read_declarations(filename):
    """Split ``cffi_src/cdefs/<filename>`` into type declarations and prototypes."""
    with open(os.path.join(SRC, "cdefs", filename)) as f:
        text = f.read()
    text = _PYTHON.sub(" @python;", _ABI.sub(r" @abi:\1;", text))
    text = _COMMENT.sub("", text)
    types, prototypes, stmt, depth = [], [], "", 0
    for line in text.splitlines():
        if not stmt.strip() and line.lstrip().startswith("#"):
            types.append(line.strip())
            continue
        stmt += line + "\n"
        depth += line.count("{") - line.count("}")
        if depth != 0 or not stmt.rstrip().endswith(";"):
            continue
        s, stmt = stmt.strip(), ""
        m = _PROTO.fullmatch(s)
        if m is None or s.startswith(_NOT_PROTO):
            if "@abi:" in s or "@python" in s:
                raise ValueError(f"{filename}: annotation on a non-prototype: {s[:80]}")
            types.append(s)
            continue
        restype, name, params, version, python = m.groups()
        params = " ".join(params.split())
        argnames = []
        if params and params != "void":
            argnames = [re.findall(r"\w+", p)[-1] for p in params.split(",")]
        prototypes.append(
            Prototype(
                " ".join(restype.split()),
                name,
                params,
                argnames,
                int(version) if version else None,
                bool(python),
            )
        )
    if stmt.strip():
        raise ValueError(f"{filename}: unterminated declaration: {stmt.strip()[:80]}")
    return Declarations("\n".join(types), prototypes)


def driver_entry_points():
    """Return the driver's prototypes, each with its ``cuGetProcAddress`` version."""
    return read_declarations(LIBRARIES[0].header).prototypes


def _read_source(filename):
    with open(os.path.join(SRC, "csrc", filename)) as f:
        return f.read()


def _cdef_line(proto, status_types):
    restype = "int" if proto.restype in status_types else proto.restype
    extern = 'extern "Python" ' if proto.python else ""
    return f"{extern}{restype} {proto.name}({proto.params});"


def _wrappers(library, prototypes):
    """Return the C source of one library's wrappers and resolver."""
    driver = library.index == 0
    src, resolve, forget = [], [], []
    for p in prototypes:
        if driver and p.version is None:
            raise ValueError(f"{library.header}: {p.name} has no /* abi NNNNN */ annotation")
        restype, name = p.restype, p.name
        pfn = f"cc_pfn_{name}"
        src.append(f"typedef {restype} (*{pfn})({p.params});")
        src.append(f"static {pfn} cc_p_{name};")
        if restype.endswith("*"):
            on_missing = "return NULL;"
        elif driver:
            on_missing = (
                "int a = cc_driver_autoload();\n"
                f"        if (a != 0) return ({restype})(a > 0 ? CUDA_ERROR_NOT_INITIALIZED"
                " : CC_LIB_NOT_LOADED);\n"
                f"        if (cc_p_{name} == NULL) return ({restype})cc_note_missing("
                f'"{name}", {p.version}, {library.missing_status});'
            )
        else:
            on_missing = (
                f"if (cc_library_state({library.index}) != 1) return ({restype})CC_LIB_NOT_LOADED;\n"
                f'        return ({restype})cc_note_missing("{name}", 0, {library.missing_status});'
            )
        src.append(
            f"static {restype} {name}({p.params}) {{\n"
            f"    if (__builtin_expect(cc_p_{name} == NULL, 0)) {{\n        {on_missing}\n    }}\n"
            f"    return cc_p_{name}({', '.join(p.argnames)});\n}}"
        )
        if driver:
            exact = 1 if re.search(r"_v\d+$", name) else 0
            resolve.append(
                f'    cc_p_{name} = ({pfn})cc_driver_symbol("{name}", {p.version}, {exact});'
            )
        else:
            resolve.append(f'    cc_p_{name} = ({pfn})dlsym(h, "{name}");')
        forget.append(f"    cc_p_{name} = NULL;")
    if driver:
        src.append(f"static void {library.resolver}(void) {{\n" + "\n".join(resolve) + "\n}")
        # Fork safety (see cc_atfork_child): every entry point back to NULL.
        src.append("static void cc_forget_driver(void) {\n" + "\n".join(forget) + "\n}")
    else:
        src.append(f"static void {library.resolver}(void *h) {{\n" + "\n".join(resolve) + "\n}")
        # Every entry point back to NULL (cuda_core.system calls it in a forked child).
        forget_name = library.resolver.replace("_resolve_", "_forget_")
        src.append(f"static void {forget_name}(void) {{\n" + "\n".join(forget) + "\n}")
    return "\n".join(src)


def keeps_gil_macro(names=KEEPS_GIL):
    """``CC_KEEPS_GIL(f)``: whether ``f`` (a wrapper's ``__func__``) wraps one of ``names``."""
    tests = " || ".join(f'__builtin_strcmp((f), "_cffi_f_{n}") == 0' for n in names)
    return f"#define CC_KEEPS_GIL(f) ({tests or '0'})"


def _build(bench=None):
    if bench is None:
        bench = os.environ.get(BENCH_ENV, "") not in ("", "0")
    assert [lib.index for lib in LIBRARIES] == list(range(len(LIBRARIES)))
    status_types = {lib.status_type for lib in LIBRARIES}
    decls = {name: read_declarations(name) for name in declaration_files(bench)}
    types = "\n".join(d.types for d in decls.values())
    indices = "\n".join(f"#define CC_LIB_{lib.name.upper()} {lib.index}" for lib in LIBRARIES)
    own = [
        p
        for name in HELPER_FILES + ((BENCH_FILE,) if bench else ())
        for p in decls[name].prototypes
    ]
    library_protos = [p for lib in LIBRARIES for p in decls[lib.header].prototypes]
    ffi = cffi.FFI()
    ffi.cdef(
        "\n".join([types, indices] + [_cdef_line(p, status_types) for p in own + library_protos])
    )
    dispatch = "".join(
        f"    case {lib.index}: {lib.resolver}(h); break;\n" for lib in LIBRARIES[1:]
    )
    sources = (
        ["#include <stdint.h>", "#include <stddef.h>", types, indices]
        + [f"#define CC_NLIBS {len(LIBRARIES)}"]
        + [_read_source(name) for name in SOURCES_BEFORE]
        + [_wrappers(lib, decls[lib.header].prototypes) for lib in LIBRARIES]
        + [
            "static void cc_resolve_library(int which, void *h) {\n"
            f"    switch (which) {{\n{dispatch}    default: break;\n    }}\n}}"
        ]
        + [_read_source(name) for name in SOURCES_AFTER]
        + ([_read_source(BENCH_SOURCE)] if bench else [])
        + [keeps_gil_macro(), _read_source(LAST_SOURCE)]
    )
    ffi.set_source(
        "cuda_core._cuda_ffi",
        "\n".join(sources),
        libraries=["dl", "pthread"],
        define_macros=[("_GNU_SOURCE", "1")],
        extra_compile_args=["-O2", "-Wno-unused-function"],
        # Stripped (no debug information) unless CUDA_CORE_BUILD_DEBUG is set.
        extra_link_args=[] if os.environ.get(DEBUG_ENV, "") not in ("", "0") else ["-s"],
    )
    return ffi


ffibuilder = _build()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
