# SPDX-License-Identifier: Apache-2.0
"""Utilities: compiled-program caches, memory views and batched memory operations."""

from __future__ import annotations

from cuda_core._memory._copy_with_options import (
    CopyOptions,
    MemcpyOverlapMode,
    MemcpySrcAccessOrder,
)
from cuda_core._memory._managed_memory_ops import (
    discard_batch,
    discard_prefetch_batch,
    prefetch_batch,
)
from cuda_core.utils._copy_batch import copy_batch
from cuda_core.utils._memoryview import StridedMemoryView, args_viewable_as_strided_memory
from cuda_core.utils._program_cache import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)

__all__ = [
    "CopyOptions",
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "MemcpyOverlapMode",
    "MemcpySrcAccessOrder",
    "ProgramCacheResource",
    "StridedMemoryView",
    "args_viewable_as_strided_memory",
    "copy_batch",
    "discard_batch",
    "discard_prefetch_batch",
    "make_program_cache_key",
    "prefetch_batch",
]

# Read-only properties fail as on cuda.core's classes (see cuda_core._read_only).
from cuda_core._read_only import seal_read_only as _seal_read_only  # noqa: E402

_seal_read_only()
