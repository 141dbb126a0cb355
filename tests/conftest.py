# SPDX-License-Identifier: Apache-2.0
"""Shared test setup: the ``gpu`` marker and device fixtures."""

from __future__ import annotations

import functools
import os

import pytest

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def gpu_status():
    """Return (available, reason) for the CUDA driver and a GPU."""
    from cuda_core._cuda_ffi import ffi, lib

    if lib.cc_load_library(lib.CC_LIB_DRIVER, ffi.NULL) != 0:
        reason = ffi.string(lib.cc_library_error(lib.CC_LIB_DRIVER)).decode()
        return False, f"no CUDA driver: {reason}"
    status = lib.cuInit(0)
    if status:
        return False, f"cuInit failed with status {status}: no usable GPU"
    count = ffi.new("int *")
    if lib.cuDeviceGetCount(count) or count[0] < 1:
        return False, "no CUDA GPU present"
    return True, ""


def pytest_report_header(config):
    import cuda_core

    return f"cuda_core {cuda_core.__version__} from {os.path.dirname(cuda_core.__file__)}"


def pytest_configure(config):
    # CI sets CUDA_CORE_TEST_INSTALLED=1 to test an installed wheel: an import
    # of this checkout's cuda_core instead would make the run meaningless.
    if os.environ.get("CUDA_CORE_TEST_INSTALLED", "0") != "0":
        import cuda_core

        where = os.path.abspath(cuda_core.__file__)
        if where.startswith(os.path.join(CHECKOUT, "")):
            raise pytest.UsageError(
                f"CUDA_CORE_TEST_INSTALLED is set but cuda_core was imported from "
                f"the checkout ({where}): run pytest from outside it"
            )


def pytest_collection_modifyitems(config, items):
    available, reason = gpu_status()
    if available:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU ({reason})")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    """Device 0, made current on the calling thread."""
    from cuda_core import Device

    dev = Device(0)
    dev.set_current()
    return dev


@pytest.fixture
def stream(device):
    """A fresh stream on device 0, closed after the test."""
    s = device.create_stream()
    yield s
    s.close()
