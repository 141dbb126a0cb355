# SPDX-License-Identifier: Apache-2.0
"""ABI check: the cdefs against the real CUDA headers, where they can be found.

For each library a small C program is generated that includes the real
header and prints ``sizeof``/``offsetof`` of every struct and union declared
in the cdefs, the size of every scalar typedef and the value of every enum
constant and integer ``#define``.  Each line is compared with what the
extension reports through ``ffi.sizeof``/``ffi.offsetof``/``lib.X``.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys

import pytest

from cuda_core._cuda_ffi import ffi, lib

GROUPS = {
    # header: (prefixes of the names it declares, directories to search)
    "cuda.h": (("CU", "cu", "CUDA_"), ("include",)),
    "nvrtc.h": (("nvrtc", "NVRTC_"), ("include",)),
    "nvJitLink.h": (("nvJitLink", "NVJITLINK_"), ("include",)),
    "nvvm.h": (("nvvm", "NVVM_"), ("include", "nvvm/include")),
}


def _header_dirs():
    roots = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(os.environ[var])
    roots.append("/usr/local/cuda")
    sites = list(site.getsitepackages()) + [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
    ]
    for s in sites:
        for sub in ("nvidia/cu13", "nvidia/cuda_nvrtc", "nvidia/nvjitlink", "nvidia/cuda_nvcc"):
            roots.append(os.path.join(s, sub))
    return roots


def find_header(header):
    for root in _header_dirs():
        for sub in GROUPS[header][1]:
            path = os.path.join(root, sub, header)
            if os.path.exists(path):
                return path
    return None


def _owner(name):
    for header in ("nvrtc.h", "nvJitLink.h", "nvvm.h", "cuda.h"):
        if name.startswith(GROUPS[header][0]):
            return header
    return None


def declared_items(header):
    """Return the C expressions to evaluate and what the cdefs say of each."""
    items = {}
    typedefs, _, _ = ffi.list_types()
    for name in typedefs:
        if name.startswith("cc_") or _owner(name) != header:
            continue
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
            for const in t.relements:
                items[f"(long long){const}"] = t.relements[const]
    if header == "cuda.h":
        for const in (
            "CU_IPC_HANDLE_SIZE",
            "CU_MEMHOSTALLOC_PORTABLE",
            "CU_MEMHOSTALLOC_DEVICEMAP",
            "CU_MEMHOSTALLOC_WRITECOMBINED",
            "CU_MEMHOSTREGISTER_PORTABLE",
            "CU_MEMHOSTREGISTER_DEVICEMAP",
            "CU_MEMHOSTREGISTER_IOMEMORY",
            "CU_MEMHOSTREGISTER_READ_ONLY",
            "CU_GRAPH_KERNEL_NODE_PORT_DEFAULT",
            "CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC",
            "CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER",
        ):
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


@pytest.mark.parametrize("header", sorted(GROUPS))
def test_cdefs_match_headers(header, tmp_path):
    path = find_header(header)
    if path is None:
        pytest.skip(f"{header} not found (install the CUDA toolkit or the nvidia-* wheels)")
    items = declared_items(header)
    assert items, f"no declarations attributed to {header}"
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
        f"{header}: {structs} sizes, {fields} field offsets, {consts} constants compared"
        f"; newer than this header: {', '.join(absent) or 'none'}"
    )


def _driver_signatures():
    """Yield (cdef name, base name, requested version, restype, params)."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location(
        "_cc_build_ffi", os.path.join(root, "build_ffi.py")
    )
    build_ffi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_ffi)
    for version, restype, name, params, _ in build_ffi._parse(build_ffi.DRIVER_FUNCTIONS):
        base = re.sub(r"_v\d+$", "", name)
        yield name, base, version or build_ffi.DEFAULT_DRIVER_VERSION, restype, params


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
    variants = {}
    for base, ver in re.findall(r"\*\s*PFN_(\w+?)_v(\d+)\)", text):
        variants.setdefault(base, []).append(int(ver))
    lines = ["#include <cuda.h>", "#include <cudaTypedefs.h>"]
    unresolvable = []
    checked = 0
    for name, base, version, restype, params in _driver_signatures():
        usable = [v for v in variants.get(base, []) if v <= version]
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
            "-I",
            os.path.dirname(cuda_h),
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
    print(f"{checked} driver entry points checked against cudaTypedefs.h")
