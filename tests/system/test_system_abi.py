# SPDX-License-Identifier: Apache-2.0
"""cffi_src/cdefs/nvml.h against a real ``nvml.h``: the stricter checks.

tests/test_abi.py compares the struct layouts and (ignoring signedness) the
prototypes of every declaration file.  Here, where ``nvml.h`` is found
(``$CUDA_CORE_NVML_HEADER``, a CUDA toolkit, ``/usr/include`` or the
``nvidia-nvml-dev`` wheel's ``nvidia/cu13/include``), every NVML entry point
must match the header's signature including the signedness of each pointer
target (an ``int *`` for an ``unsigned int *`` would mis-read values above
2**31); elsewhere that test skips with the reason.  The struct version
words, which every versioned NVML call sends, are checked everywhere.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys

import pytest
from _helpers import CHECKOUT, build_ffi_module

from cuda_core._cuda_ffi import ffi
from cuda_core.system._nvml import struct_version

ROOT = CHECKOUT


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


def _run_probe(cc, header, body, tmp_path, name):
    src = tmp_path / f"{name}.c"
    src.write_text(
        "#include <stdio.h>\n#include <stddef.h>\n"
        "#define NVML_NO_UNVERSIONED_FUNC_DEFS 1\n"
        f'#include "{header}"\n' + body
    )
    obj = tmp_path / f"{name}.o"
    flags = ["-Werror=incompatible-pointer-types", "-Werror=pointer-sign", "-c"]
    return subprocess.run([cc, *flags, str(src), "-o", str(obj)], capture_output=True, text=True)


def test_entry_point_signatures_match_nvml_h(tmp_path):
    header, cc = _header_or_skip()
    protos = build_ffi_module().read_declarations("nvml.h").prototypes
    assert len(protos) > 80
    lines = [f"{p.restype} (*probe_{p.name})({p.params}) = {p.name};" for p in protos]
    r = _run_probe(cc, header, "\n".join(lines), tmp_path, "signatures")
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
