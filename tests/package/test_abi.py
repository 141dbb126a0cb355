# SPDX-License-Identifier: Apache-2.0
"""ABI check: every declaration file against the real headers, where found.

Each file of ``cffi_src/cdefs`` follows one library's header (the driver's
four files follow ``cuda.h``).  For each, a small C program is generated
that includes the real header and prints ``sizeof``/``offsetof`` of every
struct and union the file declares, the size of every scalar typedef and the
value of every enum constant and integer ``#define``; each line is compared
with what the extension reports through ``ffi.sizeof``/``ffi.offsetof``/
``lib.X``.  The prototypes are checked too: the driver's against
``cudaTypedefs.h`` at their annotated version, the other libraries' by
assigning each real function to a pointer of the declared type.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import site
import subprocess
import sys

import pytest
from _helpers import CHECKOUT, build_ffi_module

from cuda_core._cuda_ffi import ffi, lib

ROOT = CHECKOUT
CDEFS = os.path.join(ROOT, "cffi_src", "cdefs")

#: Declaration file -> the real header it follows (None: the extension's own).
HEADERS = {
    "driver_types.h": "cuda.h",
    "driver_enums.h": "cuda.h",
    "driver_structs.h": "cuda.h",
    "driver_api.h": "cuda.h",
    "nvrtc.h": "nvrtc.h",
    "nvjitlink.h": "nvJitLink.h",
    "nvvm.h": "nvvm.h",
    "nvml.h": "nvml.h",
    "dlpack.h": "dlpack.h",
    "cuda_core.h": None,
    "bench.h": None,
}

#: Real header -> directories under a root to look in.
SEARCH = {
    "cuda.h": ("include",),
    "nvrtc.h": ("include",),
    "nvJitLink.h": ("include",),
    "nvvm.h": ("include", "nvvm/include"),
    "nvml.h": ("include",),
    "dlpack.h": ("include/dlpack", "include"),
}


def _site_dirs():
    return list(site.getsitepackages()) + [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
    ]


def _header_dirs(header):
    roots = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    roots.append("/usr/local/cuda")
    for s in _site_dirs():
        for sub in ("nvidia/cu13", "nvidia/cuda_nvrtc", "nvidia/nvjitlink", "nvidia/cuda_nvcc"):
            roots.append(os.path.join(s, sub))
    if header == "nvml.h":
        roots += ["/usr", "/usr/local"]  # a distribution's NVML development package
    if header == "dlpack.h":
        # DLPack ships inside array libraries' wheels, or as a system package.
        roots += ["/usr", "/usr/local"]
        for s in _site_dirs():
            for pattern in ("*", "*/_core", "*/include/*"):
                roots += sorted(glob.glob(os.path.join(s, pattern)))
    return roots


def find_header(header):
    for root in _header_dirs(header):
        for sub in SEARCH[header]:
            path = os.path.join(root, sub, header)
            if not os.path.exists(path):
                continue
            # Only a DLPack 1.3 header declares the C exchange API.
            if header == "dlpack.h":
                with open(path) as f:
                    if "DLPackExchangeAPI" not in f.read():
                        continue
            return path
    return None


_BLOCK = re.compile(r"\{[^{}]*\}")
_TYPEDEF_NAME = re.compile(r"^typedef\s[^;()]*?\b(\w+)\s*;", re.M)
_DEFINES = re.compile(r"^#define\s+(\w+)\s+(-?\d+)\s*$", re.M)


def declared_items(filename):
    """Return the C expressions to evaluate and what the extension says of each."""
    types = build_ffi_module().read_declarations(filename).types
    items = {}
    flat = types
    while _BLOCK.search(flat):  # drop struct/union/enum bodies, innermost first
        flat = _BLOCK.sub(" ", flat)
    for name in _TYPEDEF_NAME.findall(flat):
        t = ffi.typeof(name)
        if t.kind in ("struct", "union"):
            items[f"sizeof({name})"] = ffi.sizeof(t)
            for field, _ in t.fields:
                items[f"offsetof({name}, {field})"] = ffi.offsetof(t, field)
        elif t.kind == "primitive":
            items[f"sizeof({name})"] = ffi.sizeof(t)
        elif t.kind == "enum":
            for value, const in t.elements.items():
                items[f"(long long){const}"] = value
    for const, _ in _DEFINES.findall(types):
        items[f"(long long){const}"] = getattr(lib, const)
    return items


def _compile_probe(cc, header_path, exprs, tmp_path):
    lines = [
        "#include <stdio.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        f'#include "{header_path}"',
        "int main(void) {",
    ]
    for i, expr in enumerate(exprs):
        lines.append(f'    printf("%d %lld\\n", {i}, (long long)({expr}));')
    lines += ["    return 0;", "}"]
    src = tmp_path / "probe.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "probe"
    inc = os.path.dirname(header_path)
    r = subprocess.run(
        [cc, "-w", "-I", inc, str(src), "-o", str(exe)], capture_output=True, text=True
    )
    return r, exe


def evaluate_in_c(header_path, exprs, tmp_path):
    """Evaluate ``exprs`` against the header; return (values, names it lacks).

    A constant newer than the header found (e.g. a 13.5 status code against
    a 13.0 header) is reported as absent rather than as a mismatch.
    """
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the ABI probe")
    absent = []
    for _ in range(5):
        r, exe = _compile_probe(cc, header_path, exprs, tmp_path)
        if r.returncode == 0:
            break
        undeclared = set(
            re.findall(
                r"'(\w+)' undeclared", r.stderr.replace("\u2018", "'").replace("\u2019", "'")
            )
        )
        if not undeclared:
            break
        absent.extend(sorted(undeclared))
        exprs = [e for e in exprs if not any(re.search(rf"\b{u}\b", e) for u in undeclared)]
    assert r.returncode == 0, f"ABI probe did not compile:\n{r.stderr[-4000:]}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    values = {}
    for line in out.splitlines():
        i, v = line.split()
        values[exprs[int(i)]] = int(v)
    return values, absent


def test_every_declaration_file_is_checked():
    """A new declaration file must name the header it follows (or None) above."""
    on_disk = {f for f in os.listdir(CDEFS) if f.endswith(".h")}
    assert on_disk == set(HEADERS)
    assert set(build_ffi_module().declaration_files(bench=True)) == on_disk


# driver_api.h holds prototypes only: test_driver_entry_point_versions_match_typedefs.
@pytest.mark.parametrize(
    "filename", sorted(f for f, h in HEADERS.items() if h and f != "driver_api.h")
)
def test_declarations_match_headers(filename, tmp_path):
    header = HEADERS[filename]
    path = find_header(header)
    if path is None:
        where = "a DLPack 1.3 dlpack.h" if header == "dlpack.h" else "the CUDA toolkit"
        pytest.skip(f"{header} not found (install {where} or the nvidia-* wheels)")
    items = declared_items(filename)
    assert items, f"{filename} declares no types or constants"
    exprs = sorted(items)
    real, absent = evaluate_in_c(path, exprs, tmp_path)
    # Only constants newer than the header may be absent, never a type.
    assert all(a.isupper() for a in absent), f"types missing from {path}: {absent}"
    exprs = [e for e in exprs if e in real]
    mismatches = [f"{e}: cdef {items[e]} != header {real[e]}" for e in exprs if items[e] != real[e]]
    assert not mismatches, f"{len(mismatches)} ABI mismatches vs {path}:\n" + "\n".join(mismatches)
    structs = sum(1 for e in exprs if e.startswith("sizeof("))
    fields = sum(1 for e in exprs if e.startswith("offsetof("))
    consts = sum(1 for e in exprs if e.startswith("(long long)"))
    print(
        f"{filename} vs {path}: {structs} sizes, {fields} field offsets, {consts} constants"
        f"; newer than this header: {', '.join(absent) or 'none'}"
    )


@pytest.mark.parametrize("filename", sorted(f for f, h in HEADERS.items() if h is None))
def test_own_declarations_are_built(filename):
    """The extension's own prototypes all exist (bench.h: all or none, see its header)."""
    names = [p.name for p in build_ffi_module().read_declarations(filename).prototypes]
    assert names, f"{filename} declares no functions"
    present = [n for n in names if hasattr(lib, n)]
    if filename == "bench.h":
        assert present in ([], names), f"partly built: {present}"
    else:
        assert present == names


@pytest.mark.parametrize("filename", [lib_.header for lib_ in build_ffi_module().LIBRARIES[1:]])
def test_library_prototypes_match_headers(filename, tmp_path):
    """Each real function converts to a pointer of the declared type, exactly."""
    path = find_header(HEADERS[filename])
    if path is None:
        pytest.skip(f"{HEADERS[filename]} not found (install the nvidia-* wheels)")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    decls = build_ffi_module().read_declarations(filename)
    # The file's own helper typedefs (cc_*) are not in the real header.
    own = [s for s in re.findall(r"typedef[^;]*;", decls.types) if re.search(r"\bcc_\w+", s)]
    checks = [
        f"static {p.restype} (*chk_{p.name})({p.params}) = &{p.name};" for p in decls.prototypes
    ]
    absent = []
    for _ in range(5):
        src = tmp_path / "protos.c"
        src.write_text(
            "\n".join([f'#include "{path}"', *own, *checks, "int main(void) { return 0; }"])
        )
        r = subprocess.run(
            [
                cc,
                "-Werror=incompatible-pointer-types",
                "-Wno-unused-variable",
                "-I",
                os.path.dirname(path),
                "-c",
                str(src),
                "-o",
                str(tmp_path / "protos.o"),
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode == 0:
            break
        text = r.stderr.replace("\u2018", "'").replace("\u2019", "'")
        undeclared = set(re.findall(r"'(\w+)' undeclared", text))
        if not undeclared:
            break
        absent.extend(sorted(undeclared))  # newer than the header found
        checks = [c for c in checks if not any(f"&{u};" in c for u in undeclared)]
    # A difference in const qualifiers only (``const char **`` declared where
    # the header says ``const char * const *``) leaves the ABI unchanged.
    text = r.stderr.replace("\u2018", "'").replace("\u2019", "'")
    errors = [
        ln
        for ln in text.splitlines()
        if "error:" in ln and not _qualifiers_only(ln) and "warnings being treated" not in ln
    ]
    assert not errors, f"{len(errors)} signature mismatches:\n" + "\n".join(errors[:40])
    print(f"{filename}: {len(checks)} prototypes checked; newer than {path}: {absent or 'none'}")


def _qualifiers_only(line):
    """Whether a pointer-type error names two types that differ only in const."""
    m = re.search(r"initialization of '(.*)' from incompatible pointer type '(.*)'", line)
    if m is None:
        return False
    a, b = (re.sub(r"\bconst\b|\s", "", s) for s in m.groups())
    return a == b


def _driver_signatures():
    """Yield (cdef name, base name, requested version, restype, params)."""
    for p in build_ffi_module().driver_entry_points():
        yield p.name, re.sub(r"_v\d+$", "", p.name), p.version, p.restype, p.params


def test_driver_entry_point_versions_match_typedefs(tmp_path):
    """Each entry point's requested version resolves to the declared signature.

    ``cuGetProcAddress(name, version)`` returns the newest variant of ``name``
    introduced at or before ``version``; ``cudaTypedefs.h`` names each variant
    ``PFN_<name>_v<version>``.  The probe assigns each of those pointer types
    to a pointer with the cdef's signature; any difference fails to compile.
    """
    cuda_h = find_header("cuda.h")
    typedefs_h = cuda_h and os.path.join(os.path.dirname(cuda_h), "cudaTypedefs.h")
    if not typedefs_h or not os.path.exists(typedefs_h):
        pytest.skip("cudaTypedefs.h not found (install the CUDA toolkit)")
    with open(typedefs_h) as f:
        text = f.read()
    lines = ["#include <cuda.h>", "#include <cudaTypedefs.h>"]
    variants = _pfn_variants(text)
    # The OpenGL-interop entry points' PFN types live in cudaGLTypedefs.h,
    # which includes <GL/gl.h> for the two GL types it names.  Where no GL
    # headers are installed, a stand-in declares just those two, as the
    # OpenGL ABI defines them (32-bit unsigned ints).
    include_dirs = [os.path.dirname(cuda_h)]
    gl_variants = {}
    gl_typedefs = os.path.join(os.path.dirname(cuda_h), "cudaGLTypedefs.h")
    if os.path.exists(gl_typedefs):
        with open(gl_typedefs) as f:
            gl_variants = _pfn_variants(f.read())
        lines.append("#include <cudaGLTypedefs.h>")
        if not _compiles(["#include <GL/gl.h>"], tmp_path):
            (tmp_path / "gl" / "GL").mkdir(parents=True)
            (tmp_path / "gl" / "GL" / "gl.h").write_text(
                "typedef unsigned int GLenum;\ntypedef unsigned int GLuint;\n"
            )
            include_dirs.append(str(tmp_path / "gl"))
    for base, versions in gl_variants.items():
        variants.setdefault(base, []).extend(versions)
    with open(cuda_h) as f:
        header_version = int(re.search(r"#define CUDA_VERSION (\d+)", f.read()).group(1))
    unresolvable = []
    newer = []
    unchecked = []
    checked = 0
    for name, base, version, restype, params in _driver_signatures():
        usable = [v for v in variants.get(base, []) if v <= version]
        if not usable and version > header_version:
            newer.append(name)  # an API newer than this header: cannot be checked here
            continue
        if not usable and base.startswith("cuGraphicsGL") and not gl_variants:
            unchecked.append(name)  # this toolkit installs no cudaGLTypedefs.h
            continue
        if not usable:
            unresolvable.append(f"{name} @{version}: variants {sorted(variants.get(base, []))}")
            continue
        # cuda.h maps some base names to versioned macros; #undef them so the
        # probe names only our declaration.
        lines.append(f"#undef {name}")
        lines.append(f"static {restype} (*chk_{name})({params}) = (PFN_{base}_v{max(usable)})0;")
        checked += 1
    assert not unresolvable, "entry points with no variant at the requested version:\n" + (
        "\n".join(unresolvable)
    )
    lines.append("int main(void) { return 0; }")
    src = tmp_path / "sigs.c"
    src.write_text("\n".join(lines))
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    r = subprocess.run(
        [
            cc,
            "-Werror=incompatible-pointer-types",
            "-Wno-unused-variable",
            *(f"-I{d}" for d in include_dirs),
            "-c",
            str(src),
            "-o",
            str(tmp_path / "sigs.o"),
        ],
        capture_output=True,
        text=True,
    )
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert r.returncode == 0, f"{len(errors)} signature mismatches:\n" + "\n".join(errors[:40])
    print(
        f"{checked} driver entry points checked against cudaTypedefs.h; newer than this "
        f"header: {', '.join(newer) or 'none'}; without cudaGLTypedefs.h: "
        f"{', '.join(unchecked) or 'none'}"
    )


def _pfn_variants(text):
    """Map each base name to the versions of its ``PFN_<name>_v<version>`` typedefs."""
    variants = {}
    for base, ver in re.findall(r"\*\s*PFN_(\w+?)_v(\d+)\)", text):
        variants.setdefault(base, []).append(int(ver))
    return variants


def _compiles(lines, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return False
    src = tmp_path / "probe_include.c"
    src.write_text("\n".join([*lines, "int main(void) { return 0; }"]))
    r = subprocess.run(
        [cc, "-c", str(src), "-o", str(tmp_path / "probe_include.o")], capture_output=True
    )
    return r.returncode == 0
