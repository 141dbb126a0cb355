# SPDX-License-Identifier: Apache-2.0
"""Build script: the CFFI extension comes from build_ffi.py."""

from setuptools import setup

setup(cffi_modules=["build_ffi.py:ffibuilder"])
