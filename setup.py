# SPDX-License-Identifier: Apache-2.0
"""Build script: the CFFI extension comes from build_ffi.py."""

import platform
import sysconfig

from setuptools import setup

options = {}
if platform.python_implementation() == "CPython" and not sysconfig.get_config_var(
    "Py_GIL_DISABLED"
):
    # cffi compiles the extension against the stable ABI (_cuda_ffi.abi3.so);
    # tag the wheel to match, so that one wheel serves CPython 3.9 and newer.
    # PyPy wheels keep their interpreter's tag.
    options["bdist_wheel"] = {"py_limited_api": "cp39"}

setup(cffi_modules=["build_ffi.py:ffibuilder"], options=options)
