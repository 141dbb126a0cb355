# SPDX-License-Identifier: Apache-2.0
"""The C type strings cuda_core hands to ``ffi``, parsed before any thread can race.

PyPy's cffi backend parses a type string (``ffi.new("int *")``) the first
time it meets it and caches the result; that first parse is not safe across
threads.  Two threads parsing different strings at once can each get the
other's type, and the wrong one stays cached for the rest of the process: a
cdata of the wrong type, seen as an AttributeError on a field or as memory
read with the wrong layout.  A string already parsed is a cache lookup,
which is safe.

So on PyPy, importing cuda_core parses every type string that the library
passes to ``ffi`` as a literal (:data:`TYPES`; ``tests/package/test_ffi_types.py``
holds the list equal to the source).  A type built at run time (an NVML
output type, a pool attribute's type) goes through :func:`ctype_of`, which
parses under a lock.  CPython's cffi parses with the GIL held throughout and
needs neither; :func:`ctype_of` costs it one dictionary lookup.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from cuda_core._cuda_ffi import ffi

__all__ = ["TYPES", "ctype_of", "parse_all"]

#: Every type string passed to an ``ffi`` call as a literal in cuda_core.
TYPES = (
    "CUDA_ARRAY3D_DESCRIPTOR *",
    "CUDA_GRAPH_INSTANTIATE_PARAMS *",
    "CUDA_HOST_NODE_PARAMS *",
    "CUDA_KERNEL_NODE_PARAMS *",
    "CUDA_MEMCPY3D *",
    "CUDA_MEMSET_NODE_PARAMS *",
    "CUDA_MEM_ALLOC_NODE_PARAMS *",
    "CUDA_RESOURCE_DESC *",
    "CUDA_TEXTURE_DESC *",
    "CU_DEV_SM_RESOURCE_GROUP_PARAMS[]",
    "CUarray",
    "CUarray *",
    "CUcheckpointGpuPair[]",
    "CUcheckpointLockArgs *",
    "CUcheckpointRestoreArgs *",
    "CUcontext *",
    "CUdevResource",
    "CUdevResource *",
    "CUdevResourceDesc *",
    "CUdevResource[]",
    "CUdevice *",
    "CUdeviceptr *",
    "CUevent *",
    "CUfunction",
    "CUfunction *",
    "CUgraph",
    "CUgraph *",
    "CUgraphConditionalHandle *",
    "CUgraphExec *",
    "CUgraphExecUpdateResult",
    "CUgraphExecUpdateResultInfo *",
    "CUgraphInstantiateResult",
    "CUgraphNode",
    "CUgraphNode *",
    "CUgraphNodeParams *",
    "CUgraphNodeType *",
    "CUgraphNode[1]",
    "CUgraphNode[]",
    "CUgraphicsResource *",
    "CUgreenCtx *",
    "CUhostFn",
    "CUipcEventHandle *",
    "CUjit_option[]",
    "CUkernel",
    "CUkernel *",
    "CUlaunchConfig *",
    "CUlibrary *",
    "CUlinkState *",
    "CUmemAccessDesc[]",
    "CUmemAccess_flags *",
    "CUmemAllocationProp *",
    "CUmemGenericAllocationHandle *",
    "CUmemLocation *",
    "CUmemLocation[]",
    "CUmemPoolProps *",
    "CUmemPoolPtrExportData *",
    "CUmemcpyAttributes *",
    "CUmemcpyAttributes[1]",
    "CUmemcpyAttributes[]",
    "CUmemoryPool *",
    "CUmipmappedArray",
    "CUmipmappedArray *",
    "CUoccupancyB2DSize",
    "CUpointer_attribute[1]",
    "CUpointer_attribute[3]",
    "CUprocessState *",
    "CUstream",
    "CUstream *",
    "CUstreamCaptureMode *",
    "CUstreamCaptureStatus *",
    "CUtensorMap *",
    "CUuserObject *",
    "CUuuid *",
    "DLManagedTensor *",
    "DLManagedTensorVersioned *",
    "DLTensor *",
    "cc_arg_layout",
    "cc_arg_layout *",
    "cc_launch_cfg *",
    "char *",
    "char[256]",
    "char[]",
    "const CUgraphNode **",
    "const char **",
    "const char *[]",
    "cuuint32_t[]",
    "cuuint64_t *",
    "cuuint64_t[]",
    "double *",
    "float *",
    "int *",
    "int16_t *",
    "int32_t *",
    "int64_t *",
    "int64_t[]",
    "int8_t *",
    "int[2]",
    "int[4]",
    "int[]",
    "intptr_t",
    "intptr_t *",
    "nvJitLinkHandle *",
    "nvmlBAR1Memory_t *",
    "nvmlC2cModeInfo_v1_t *",
    "nvmlClockOffset_t *",
    "nvmlCoolerInfo_t *",
    "nvmlDeviceAddressingMode_t *",
    "nvmlDeviceAttributes_t *",
    "nvmlDevice_t",
    "nvmlDevice_t *",
    "nvmlEnableState_t *",
    "nvmlEventData_t *",
    "nvmlEventSet_t *",
    "nvmlFanSpeedInfo_t *",
    "nvmlFieldValue_t[]",
    "nvmlGpuDynamicPstatesInfo_t *",
    "nvmlGpuThermalSettings_t *",
    "nvmlMarginTemperature_t *",
    "nvmlMemory_v2_t *",
    "nvmlPciInfoExt_t *",
    "nvmlPstates_t[16]",
    "nvmlRepairStatus_t *",
    "nvmlReturn_t *",
    "nvmlSystemDriverBranchInfo_t *",
    "nvmlSystemEventData_v1_t[]",
    "nvmlSystemEventSetCreateRequest_t *",
    "nvmlSystemEventSetFreeRequest_t *",
    "nvmlSystemEventSetWaitRequest_t *",
    "nvmlSystemRegisterEventRequest_t *",
    "nvmlUtilization_t *",
    "nvrtcProgram *",
    "nvrtcResult",
    "nvvmProgram *",
    "size_t *",
    "size_t[1]",
    "size_t[]",
    "uint16_t *",
    "uint32_t *",
    "uint64_t *",
    "uint8_t *",
    "uintptr_t",
    "unsigned int *",
    "unsigned int[2]",
    "unsigned long",
    "unsigned long *",
    "unsigned long long *",
    "unsigned long long[]",
    "unsigned long[]",
    "void *",
    "void **",
    "void *[1]",
    "void *[3]",
    "void *[]",
)

_parsed: dict[str, Any] = {}
_lock = threading.Lock()


def ctype_of(decl: str) -> Any:
    """Return the cffi type named by ``decl``, parsed at most once, under a lock."""
    ctype = _parsed.get(decl)
    if ctype is None:
        with _lock:
            ctype = _parsed.get(decl)
            if ctype is None:
                ctype = _parsed[decl] = ffi.typeof(decl)
    return ctype


def parse_all() -> None:
    """Parse every string of :data:`TYPES` now (on PyPy; a no-op on CPython)."""
    if sys.implementation.name != "pypy":
        return
    with _lock:
        for decl in TYPES:
            ffi.typeof(decl)
