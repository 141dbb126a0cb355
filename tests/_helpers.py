# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by test files: kernel-free GPU work, a flag-only memory resource, stand-ins."""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess

import numpy as np
import pytest
from _scripts.hardening_util import StreamBlocker, run_script

from cuda_core import Buffer, CUDAError, ManagedBuffer, MemoryResource
from cuda_core._cuda_ffi import ffi, lib
from cuda_core._errors import check
from cuda_core._loader import ensure_loaded

# The repository root (the folder holding tests/, benchmarks/, examples/).
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def build_ffi_module():
    """The checkout's ``build_ffi.py``, loaded once, without the checkout on ``sys.path``.

    (With the checkout on ``sys.path``, a subprocess that inherits it would
    import the checkout's ``cuda_core`` in place of an installed wheel.)
    """
    spec = importlib.util.spec_from_file_location(
        "_cc_build_ffi", os.path.join(CHECKOUT, "build_ffi.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RawBuffer:
    """A raw cuMemAlloc allocation of ``n`` uint32 values (kernel-free GPU work)."""

    def __init__(self, n):
        self.n = n
        out = ffi.new("CUdeviceptr *")
        check(lib.cuMemAlloc(out, 4 * n))
        self.ptr = out[0]

    def fill(self, value, stream, repeat=1):
        for _ in range(repeat):
            check(lib.cuMemsetD32Async(self.ptr, value, self.n, stream._handle))

    def to_host(self, stream):
        host = np.zeros(self.n, dtype=np.uint32)
        check(lib.cuMemcpyDtoHAsync(ffi.from_buffer(host), self.ptr, 4 * self.n, stream._handle))
        return host

    def free(self):
        check(lib.cuMemFree(self.ptr))


def run_over_stand_in(source, script, tmp_dir, timeout=120):
    """Build ``tests/_scripts/<source>`` into a shared library, run ``tests/_scripts/<script> LIB``.

    For stand-ins of the driver or NVML: skips without a C compiler, fails
    unless the script exits 0 with a ``RESULT`` line, and returns that result.
    """
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip(f"no C compiler to build the stand-in {source}")
    lib_path = os.path.join(str(tmp_dir), "lib" + os.path.splitext(source)[0] + ".so")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_scripts", source)
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib_path, src], check=True)
    proc, result = run_script(script, lib_path, timeout=timeout)
    detail = f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0 and result is not None, detail
    return result


class Blocker(StreamBlocker):
    """A :class:`StreamBlocker` that skips the test where the wait is unavailable."""

    def __init__(self, stream):
        super().__init__(stream)
        if self.status:
            pytest.skip(f"cuStreamWaitValue32 on host memory is unavailable (status {self.status})")


def record_calls(monkeypatch, module, name):
    """Make ``module.name`` record the first argument of each call (then run it).

    Returns the list the arguments are appended to; ``monkeypatch`` restores
    the original at the end of the test.
    """
    calls = []
    real = getattr(module, name)

    def recording(arg, *rest):
        calls.append(arg)
        return real(arg, *rest)

    monkeypatch.setattr(module, name, recording)
    return calls


class FlagResource(MemoryResource):
    """A memory resource that only reports flags: for buffers over made-up addresses.

    It never allocates, and frees nothing: the buffers' memory is never touched.
    """

    def __init__(self, device=True, host=True, managed=False, device_id=-1):
        self._flags = (device, host, managed, device_id)

    def allocate(self, size, *, stream=None):
        raise AssertionError("not used")

    def deallocate(self, ptr, size, *, stream=None):
        pass

    @property
    def is_device_accessible(self):
        return self._flags[0]

    @property
    def is_host_accessible(self):
        return self._flags[1]

    @property
    def is_managed(self):
        return self._flags[2]

    @property
    def device_id(self):
        return self._flags[3]


class HostOnlyResource(MemoryResource):
    """Base of the user-defined test resources whose buffers are not device memory.

    Host-accessible, not device-accessible, no device (``device_id`` -1).
    """

    @property
    def is_device_accessible(self):
        return False

    @property
    def is_host_accessible(self):
        return True

    @property
    def device_id(self):
        return -1


class HostAndDeviceResource(MemoryResource):
    """Base of the user-defined test resources whose buffers both the host and devices access."""

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True


class HostMemoryResource(HostOnlyResource):
    """A Python memory resource handing out host memory (cffi allocations)."""

    def __init__(self, fail_free=False):
        self.live = {}
        self.freed = []
        self.fail_free = fail_free

    def allocate(self, size, *, stream=None):
        mem = ffi.new("char[]", max(size, 1))
        ptr = int(ffi.cast("uintptr_t", mem))
        self.live[ptr] = mem
        return Buffer.from_handle(ptr, size, mr=self)

    def deallocate(self, ptr, size, *, stream=None):
        self.freed.append((ptr, size))
        if self.fail_free:
            raise CUDAError("simulated deallocation failure")
        del self.live[ptr]


def device_attribute(device, attr):
    """The value of the driver's ``CU_DEVICE_ATTRIBUTE_*`` ``attr`` for ``device``."""
    out = ffi.new("int *")
    check(lib.cuDeviceGetAttribute(out, attr, device.device_id))
    return out[0]


def skip_without_managed_batch(device):
    """Skip the test where the batched managed-memory calls cannot work on ``device``."""
    from cuda_core._loader import driver_version

    if driver_version() < 13000:
        pytest.skip("the batched managed-memory calls need a CUDA 13 driver")
    if not device_attribute(device, lib.CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS):
        pytest.skip("the batched managed-memory calls need concurrent managed access")


class CuMemAllocManagedResource(HostAndDeviceResource):
    """A user-defined resource over ``cuMemAllocManaged``, handing out ManagedBuffers."""

    def allocate(self, size, *, stream):
        out = ffi.new("CUdeviceptr *")
        check(lib.cuMemAllocManaged(out, size, lib.CU_MEM_ATTACH_GLOBAL))
        return ManagedBuffer.from_handle(int(out[0]), size, mr=self)

    def deallocate(self, ptr, size, *, stream):
        stream.sync()
        check(lib.cuMemFree(ptr))

    @property
    def is_managed(self):
        return True


# Compiler availability, an NVVM IR sample, and the load check of ObjectCode tests.


def _loads(name):
    """Whether the library ``name`` (``"nvrtc"``, ``"nvvm"``) can be loaded here."""
    try:
        ensure_loaded(name)
    except Exception:
        return False
    return True


def _nvvm_available():
    return _loads("nvvm")


def _nvrtc_available():
    return _loads("nvrtc")


_DATALAYOUT = (
    "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-"
    "f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"
)


def nvvm_ir(kernel="simple"):
    """A small NVVM IR module (LLVM text, typed pointers) with one kernel."""
    ensure_loaded("nvvm")
    v = ffi.new("int[4]")
    assert lib.nvvmIRVersion(v, v + 1, v + 2, v + 3) == 0
    return f"""target triple = "nvptx64-nvidia-cuda"
target datalayout = "{_DATALAYOUT}"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()

define void @{kernel}(float* %data, float %factor) {{
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, %ntid
  %i = add i32 %base, %tid
  %idx = zext i32 %i to i64
  %p = getelementptr inbounds float, float* %data, i64 %idx
  %v = load float, float* %p, align 4
  %r = fmul float %v, %factor
  store float %r, float* %p, align 4
  ret void
}}

!nvvm.annotations = !{{!0}}
!0 = !{{void (float*, float)* @{kernel}, !"kernel", i32 1}}
!nvvmir.version = !{{!1}}
!1 = !{{i32 {v[0]}, i32 {v[1]}, i32 {v[2]}, i32 {v[3]}}}
"""


def _kernel_module():
    try:
        import cuda_core._kernel as kernel_mod
    except ImportError:
        return None
    return kernel_mod


def _check_loads(obj, name):
    """Load ``obj`` and find kernel ``name`` (via Kernel when _kernel.py exists)."""
    handle = obj.handle
    assert isinstance(handle, int) and handle != 0
    assert obj.handle == handle  # loaded once
    assert "handle=0x" in repr(obj)
    kernel_mod = _kernel_module()
    if kernel_mod is None:
        from cuda_core._cuda_ffi import ffi, lib
        from cuda_core._errors import check

        out = ffi.new("CUkernel *")
        symbol = obj.symbol_mapping.get(name, name)
        symbol = symbol.encode() if isinstance(symbol, str) else symbol
        check(lib.cuLibraryGetKernel(out, obj._library(), symbol))
        assert out[0] != ffi.NULL
        return None
    kernel = obj.get_kernel(name)
    assert isinstance(kernel, kernel_mod.Kernel)
    return kernel


def slots_and_accessors():
    """The slot names and accessor names that ``cuda_core/_slots.py`` defines.

    A slot is an annotated module attribute; an accessor a public function.
    """
    import ast

    with open(os.path.join(CHECKOUT, "cuda_core", "_slots.py")) as f:
        tree = ast.parse(f.read())
    slots = {
        s.target.id
        for s in tree.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    accessors = {
        f.name for f in tree.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
    }
    return slots, accessors


# -- the compilers and the linker: tests that need them skip where they are missing ----

_LIBRARY_LABELS = {"nvrtc": "NVRTC", "nvjitlink": "nvJitLink", "nvvm": "libNVVM"}


def library_found(name):
    """Whether cuda_core can load ``name`` ("nvrtc", "nvjitlink" or "nvvm")."""
    try:
        ensure_loaded(name)
    except CUDAError:
        return False
    return True


def needs_library(*names):
    """A skip mark for a test that needs these libraries (the [cu13]/[cu12] extras)."""
    missing = [_LIBRARY_LABELS[n] for n in names if not library_found(n)]
    return pytest.mark.skipif(
        bool(missing),
        reason=f"{' and '.join(missing)} not found (pip install -e '.[cu13]' brings them)",
    )
