# SPDX-License-Identifier: Apache-2.0
"""Utilities: compiled-program caches (and, from the memory work, memory views)."""

from __future__ import annotations

from cuda_core.utils._memoryview import StridedMemoryView, args_viewable_as_strided_memory
from cuda_core.utils._program_cache import (
    FileStreamProgramCache,
    InMemoryProgramCache,
    ProgramCacheResource,
    make_program_cache_key,
)

__all__ = [
    "FileStreamProgramCache",
    "InMemoryProgramCache",
    "ProgramCacheResource",
    "StridedMemoryView",
    "args_viewable_as_strided_memory",
    "make_program_cache_key",
]
