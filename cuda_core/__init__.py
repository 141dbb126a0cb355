# SPDX-License-Identifier: Apache-2.0
"""cuda_core: the Pythonic CUDA API of NVIDIA's ``cuda.core`` on CFFI.

Runs on CPython and PyPy.  Importing this package needs no GPU and no CUDA
library; each library is found and loaded at its first use (see
``python -m cuda_core`` for a report of what was found).
"""

from __future__ import annotations

from cuda_core._errors import (
    CUDAError,
    CUDAWarning,
    LibraryNotFoundError,
    NVJitLinkError,
    NVRTCError,
    NVVMError,
)
from cuda_core._version import __version__

# --- public classes (one import line per module; keep sorted) ---
