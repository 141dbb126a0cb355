# SPDX-License-Identifier: Apache-2.0
"""``cuda_core.typing`` holds the names and members that ``cuda.core.typing`` has."""

from __future__ import annotations

import enum
import sys
import typing

import pytest

import cuda_core.typing as ct

# Every public name of cuda.core.typing.
_UPSTREAM_NAMES = {
    "AddressModeType",
    "ArrayFormatType",
    "CompilerBackendType",
    "DevicePointerType",
    "DeviceResourcesType",
    "FilterModeType",
    "GraphConditionalType",
    "GraphMemoryType",
    "IsStreamType",
    "ManagedMemoryLocationType",
    "ObjectCodeFormatType",
    "PCHStatusType",
    "ProcessStateType",
    "ReadModeType",
    "SourceCodeType",
    "VirtualMemoryAccessType",
    "VirtualMemoryAllocationType",
    "VirtualMemoryGranularityType",
    "VirtualMemoryHandleType",
    "VirtualMemoryLocationType",
    "WorkqueueSharingScopeType",
}
# Names that arrive with the texture and green-context modules.
_ARRIVING_WITH_OTHER_MODULES = {
    "AddressModeType",
    "ArrayFormatType",
    "FilterModeType",
    "ReadModeType",
    "DeviceResourcesType",
    "WorkqueueSharingScopeType",
    "ProcessStateType",
}

# name -> {member: value}, as in cuda.core.typing.
_MEMBERS = {
    "SourceCodeType": {"CXX": "c++", "PTX": "ptx", "NVVM": "nvvm"},
    "ObjectCodeFormatType": {
        "PTX": "ptx",
        "CUBIN": "cubin",
        "LTOIR": "ltoir",
        "FATBIN": "fatbin",
        "OBJECT": "object",
        "LIBRARY": "library",
    },
    "CompilerBackendType": {
        "NVRTC": "NVRTC",
        "NVVM": "NVVM",
        "NVJITLINK": "nvJitLink",
        "DRIVER": "driver",
    },
    "PCHStatusType": {"CREATED": "created", "NOT_ATTEMPTED": "not_attempted", "FAILED": "failed"},
    "GraphConditionalType": {"IF": "if", "WHILE": "while", "SWITCH": "switch"},
    "GraphMemoryType": {"DEVICE": "device", "HOST": "host", "MANAGED": "managed"},
    "ManagedMemoryLocationType": {"DEVICE": "device", "HOST": "host", "HOST_NUMA": "host_numa"},
    "VirtualMemoryHandleType": {
        "POSIX_FD": "posix_fd",
        "WIN32_KMT": "win32_kmt",
        "FABRIC": "fabric",
    },
    "VirtualMemoryLocationType": {
        "DEVICE": "device",
        "HOST": "host",
        "HOST_NUMA": "host_numa",
        "HOST_NUMA_CURRENT": "host_numa_current",
    },
    "VirtualMemoryGranularityType": {"MINIMUM": "minimum", "RECOMMENDED": "recommended"},
    "VirtualMemoryAccessType": {"READ_WRITE": "rw", "READ": "r"},
    "VirtualMemoryAllocationType": {"PINNED": "pinned", "MANAGED": "managed"},
    "AddressModeType": {"WRAP": "wrap", "CLAMP": "clamp", "MIRROR": "mirror", "BORDER": "border"},
    "ArrayFormatType": {
        "UINT8": "uint8",
        "UINT16": "uint16",
        "UINT32": "uint32",
        "INT8": "int8",
        "INT16": "int16",
        "INT32": "int32",
        "FLOAT16": "float16",
        "FLOAT32": "float32",
    },
    "FilterModeType": {"POINT": "point", "LINEAR": "linear"},
    "ReadModeType": {"ELEMENT_TYPE": "element_type", "NORMALIZED_FLOAT": "normalized_float"},
    "WorkqueueSharingScopeType": {
        "DEVICE_CTX": "device_ctx",
        "GREEN_CTX_BALANCED": "green_ctx_balanced",
    },
}


def test_all_holds_only_upstream_names():
    assert set(ct.__all__) <= _UPSTREAM_NAMES
    assert len(ct.__all__) == len(set(ct.__all__))


@pytest.mark.parametrize("name", sorted(_UPSTREAM_NAMES))
def test_every_upstream_name_is_exported(name):
    if name in _ARRIVING_WITH_OTHER_MODULES and name not in ct.__all__:
        pytest.skip(f"{name} arrives with the texture / green-context modules")
    assert name in ct.__all__
    assert getattr(ct, name) is not None


@pytest.mark.parametrize("name", sorted(_MEMBERS))
def test_enum_members_match_upstream(name):
    if name in _ARRIVING_WITH_OTHER_MODULES and name not in ct.__all__:
        pytest.skip(f"{name} arrives with the texture / green-context modules")
    cls = getattr(ct, name)
    assert {m.name: m.value for m in cls} == _MEMBERS[name]
    assert len(cls) == len(_MEMBERS[name])
    for member in cls:
        assert isinstance(member, str)
        assert member == member.value
        assert str(member) == member.value
        assert f"{member}" == member.value


def test_virtual_memory_handle_type_has_no_win32_member():
    members = list(ct.VirtualMemoryHandleType)
    assert [m.value for m in members] == ["posix_fd", "win32_kmt", "fabric"]
    with pytest.raises(ValueError):
        ct.VirtualMemoryHandleType("win32")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="enum.StrEnum is new in Python 3.11")
def test_enums_are_strenums_where_python_has_them():
    for name in _MEMBERS:
        if name in ct.__all__:
            assert issubclass(getattr(ct, name), enum.StrEnum), name


def test_process_state_type_is_upstreams_literal():
    if "ProcessStateType" not in ct.__all__:
        pytest.skip("ProcessStateType arrives with the checkpoint module")
    assert typing.get_args(ct.ProcessStateType) == ("running", "locked", "checkpointed", "failed")


def test_strenum_base_is_not_a_public_name():
    assert not hasattr(ct, "StrEnum")


def test_is_stream_type_is_a_protocol_with_cuda_stream():
    class Foreign:
        def __cuda_stream__(self):
            return (0, 0)

    assert hasattr(ct.IsStreamType, "__cuda_stream__")
    assert Foreign().__cuda_stream__() == (0, 0)


def test_every_name_importable_in_a_fresh_process():
    # The graph enumerations live in cuda_core.typing itself: importing them
    # does not import the lazily imported cuda_core.graph, and `import *`
    # must give every name.
    import os
    import subprocess

    script = (
        "import sys\n"
        "import cuda_core.typing as t\n"
        "assert 'cuda_core.graph' not in sys.modules\n"
        "from cuda_core.typing import GraphConditionalType, GraphMemoryType\n"
        "assert GraphConditionalType.WHILE == 'while', list(GraphConditionalType)\n"
        "assert 'cuda_core.graph' not in sys.modules\n"
        "ns = {}\n"
        "exec('from cuda_core.typing import *', ns)\n"
        "missing = set(t.__all__) - set(ns)\n"
        "assert not missing, missing\n"
        "try:\n"
        "    t.NoSuchName\n"
        "except AttributeError as e:\n"
        "    assert 'NoSuchName' in str(e)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
