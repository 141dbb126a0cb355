# SPDX-License-Identifier: Apache-2.0
"""cffi_src/cdefs/nvml.h against a real ``nvml.h``, where one can be found.

Where ``nvml.h`` is found (``$CUDA_CORE_NVML_HEADER``, a CUDA toolkit, or the
``nvidia-nvml-dev`` wheel's ``nvidia/cu13/include``), a C probe that includes
it prints ``sizeof``/``offsetof`` of every NVML struct the extension
declares, and a second one checks that every declared entry point has the
header's exact signature.  Elsewhere those tests skip with the reason.  The
struct version words are checked everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys

import pytest

from cuda_core._cuda_ffi import ffi
from cuda_core.system._nvml import struct_version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CDEF = os.path.join(ROOT, "cffi_src", "cdefs", "nvml.h")


def find_nvml_header():
    explicit = os.environ.get("CUDA_CORE_NVML_HEADER")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    roots = [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    roots += ["/usr/local/cuda", "/usr"]
    sites = list(site.getsitepackages()) + [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
    ]
    for s in sites:
        for sub in ("nvidia/cu13", "nvidia/cu12", "nvidia/cuda_nvml_dev", "nvidia/nvml_dev"):
            roots.append(os.path.join(s, sub))
    for root in roots:
        path = os.path.join(root, "include", "nvml.h")
        if os.path.exists(path):
            return path
    return None


def _header_or_skip():
    path = find_nvml_header()
    if path is None:
        pytest.skip(
            "nvml.h not found (set CUDA_CORE_NVML_HEADER, install a CUDA toolkit, "
            "or pip install nvidia-nvml-dev)"
        )
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the ABI probe")
    return path, cc


def _nvml_structs():
    typedefs, _, _ = ffi.list_types()
    out = {}
    for name in typedefs:
        if not name.startswith("nvml"):
            continue
        t = ffi.typeof(name)
        if t.kind in ("struct", "union"):
            out[name] = t
    return out


def _run_probe(cc, header, body, tmp_path, name, link=True):
    src = tmp_path / f"{name}.c"
    src.write_text(
        "#include <stdio.h>\n#include <stddef.h>\n"
        "#define NVML_NO_UNVERSIONED_FUNC_DEFS 1\n"
        f'#include "{header}"\n' + body
    )
    exe = tmp_path / (name if link else name + ".o")
    return subprocess.run(
        [
            cc,
            "-Werror=incompatible-pointer-types",
            "-Werror=pointer-sign",
            *(() if link else ("-c",)),
            str(src),
        ]
        + ["-o", str(exe)],
        capture_output=True,
        text=True,
    ), exe


def test_struct_layouts_match_nvml_h(tmp_path):
    header, cc = _header_or_skip()
    structs = _nvml_structs()
    assert len(structs) >= 25
    items = {}
    for name, t in structs.items():
        items[f"sizeof({name})"] = ffi.sizeof(t)
        for field, _ in t.fields:
            items[f"offsetof({name}, {field})"] = ffi.offsetof(t, field)
    for name in ("nvmlReturn_t", "nvmlEnableState_t", "nvmlPstates_t", "nvmlDeviceArchitecture_t"):
        items[f"sizeof({name})"] = ffi.sizeof(name)
    exprs = sorted(items)
    lines = ["int main(void) {"]
    lines += [f'    printf("%d %lld\\n", {i}, (long long)({e}));' for i, e in enumerate(exprs)]
    lines += ["    return 0;", "}"]
    r, exe = _run_probe(cc, header, "\n".join(lines), tmp_path, "layout")
    assert r.returncode == 0, f"probe did not compile against {header}:\n{r.stderr[-4000:]}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    real = {exprs[int(i)]: int(v) for i, v in (line.split() for line in out.splitlines())}
    bad = [f"{e}: cdef {items[e]} != header {real[e]}" for e in exprs if items[e] != real[e]]
    assert not bad, f"{len(bad)} ABI mismatches vs {header}:\n" + "\n".join(bad)


def test_entry_point_signatures_match_nvml_h(tmp_path):
    header, cc = _header_or_skip()
    text = open(CDEF).read().partition("/* ---- functions ---- */")[2]
    protos = re.findall(r"^(.+?)\b(nvml\w+)\((.*)\);$", text, re.M)
    assert len(protos) > 80
    lines = []
    for i, (restype, name, params) in enumerate(protos):
        lines.append(f"{restype.strip()} (*probe_{i})({params}) = {name};")
    r, _ = _run_probe(cc, header, "\n".join(lines), tmp_path, "signatures", link=False)
    assert r.returncode == 0, f"signatures differ from {header}:\n{r.stderr[-6000:]}"


def test_struct_version_words():
    # NVML_STRUCT_VERSION(T, v) = sizeof(T_vN_t) | v << 24, on 64-bit Linux.
    expected = {
        ("nvmlSystemDriverBranchInfo_v1_t", 1): 0x01000054,
        ("nvmlMemory_v2_t", 2): 0x02000028,
        ("nvmlPciInfoExt_v1_t", 1): 0x01000040,
        ("nvmlCoolerInfo_v1_t", 1): 0x01000010,
        ("nvmlClockOffset_v1_t", 1): 0x01000018,
        ("nvmlFanSpeedInfo_v1_t", 1): 0x0100000C,
        ("nvmlTemperature_v1_t", 1): 0x0100000C,
        ("nvmlRepairStatus_v1_t", 1): 0x0100000C,
        ("nvmlMarginTemperature_v1_t", 1): 0x01000008,
        ("nvmlDeviceAddressingMode_v1_t", 1): 0x01000008,
        ("nvmlSystemEventSetCreateRequest_v1_t", 1): 0x01000010,
        ("nvmlSystemEventSetFreeRequest_v1_t", 1): 0x01000010,
        ("nvmlSystemRegisterEventRequest_v1_t", 1): 0x01000018,
        ("nvmlSystemEventSetWaitRequest_v1_t", 1): 0x01000020,
    }
    for (ctype, version), word in expected.items():
        assert struct_version(ctype, version) == word, ctype
    assert ffi.sizeof("nvmlFieldValue_t") == 40 and ffi.sizeof("nvmlProcessInfo_t") == 24
    assert ffi.sizeof("nvmlEventData_t") == 32 and ffi.sizeof("nvmlSystemEventData_v1_t") == 16
