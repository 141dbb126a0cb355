# SPDX-License-Identifier: Apache-2.0
"""Build script: the CFFI extension comes from build_ffi.py."""

import platform
import sysconfig

import setuptools
from setuptools import setup

options = {}
# The license is an SPDX expression (PEP 639) where setuptools knows them
# (77 and newer: the wheels built by pip and `python -m build`); an older
# setuptools, as used by `python setup.py build_ext --inplace` on a system
# interpreter, gets the same text in the classic field, so that such builds
# keep working.
if int(setuptools.__version__.split(".")[0]) >= 77:
    license_args = {"license_expression": "Apache-2.0", "license_files": ["LICENSE"]}
else:
    license_args = {"license": "Apache-2.0", "license_files": ["LICENSE"]}
if platform.python_implementation() == "CPython" and not sysconfig.get_config_var(
    "Py_GIL_DISABLED"
):
    # cffi compiles the extension against the stable ABI (_cuda_ffi.abi3.so);
    # tag the wheel to match, so that one wheel serves CPython 3.9 and newer.
    # PyPy wheels keep their interpreter's tag.
    options["bdist_wheel"] = {"py_limited_api": "cp39"}

setup(cffi_modules=["build_ffi.py:ffibuilder"], options=options, **license_args)
