# SPDX-License-Identifier: Apache-2.0
"""Types of the CFFI extension ``cuda_core._cuda_ffi`` (built by ``build_ffi.py``).

``ffi`` is the extension's ``cffi.FFI`` instance and ``lib`` its library
object, whose attributes (C functions, constants, enum values) are made from
``cffi_src/cdefs/``; neither is typed further here.
"""

from typing import Any

ffi: Any
lib: Any
