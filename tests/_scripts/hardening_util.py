# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of the hardening tests and of the scripts they run.

Imported by the ``tests/test_hardening_*.py`` modules (as
``_scripts.hardening_util``) and by the scripts in this directory, which run
in their own interpreter (``sys.executable``) so that a poisoned CUDA context,
a fork or interpreter shutdown cannot affect the test process.  A script
prints its findings as one ``RESULT {json}`` line on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = [
    "KERNEL_SOURCE",
    "ROOT",
    "StreamBlocker",
    "compile_kernels",
    "device_free_bytes",
    "emit",
    "from_host",
    "mypy_strict",
    "outcome",
    "package_root",
    "rss_bytes",
    "run_script",
    "run_scripts",
    "to_host",
]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

#: Kernels used by the hardening tests (compiled to cubin for the GPU in use).
KERNEL_SOURCE = r"""
extern "C" __device__ void __assertfail(const char *message, const char *file,
                                        unsigned int line, const char *function,
                                        size_t char_size);

extern "C" __global__ void add_one(unsigned int *p, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] += 1u;
}

extern "C" __global__ void add_value(unsigned int *p, unsigned long long n, unsigned int v) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] += v;
}

extern "C" __global__ void copy_plus(const unsigned int *src, unsigned int *dst,
                                     unsigned long long n, unsigned int v) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i] + v;
}

extern "C" __global__ void poke(unsigned long long address) {
    *(volatile unsigned int *)address = 42u;
}

extern "C" __global__ void trap_kernel() { __trap(); }

// Takes arguments and touches no memory: safe to launch with any values.
extern "C" __global__ void sink(unsigned long long a, unsigned int b, double c) {}

extern "C" __global__ void assert_kernel(int x) {
    if (x != 0) __assertfail("x == 0", "hardening.cu", 7u, "assert_kernel", 1);
}
"""

KERNEL_NAMES = (
    "add_one",
    "add_value",
    "copy_plus",
    "poke",
    "trap_kernel",
    "assert_kernel",
    "sink",
)


def compile_kernels(dev):
    """Compile :data:`KERNEL_SOURCE` to cubin for ``dev``; return (ObjectCode, {name: Kernel})."""
    from cuda_core import Program, ProgramOptions

    with Program(KERNEL_SOURCE, "c++", options=ProgramOptions(arch=f"sm_{dev.arch}")) as prog:
        code = prog.compile("cubin")
    return code, {name: code.get_kernel(name) for name in KERNEL_NAMES}


def to_host(buf, stream, dtype="uint32"):
    """Copy device Buffer ``buf`` into a new NumPy array (synchronizes ``stream``)."""
    import numpy as np

    from cuda_core import LegacyPinnedMemoryResource

    with LegacyPinnedMemoryResource().allocate(buf.size, stream=stream) as pinned:
        buf.copy_to(pinned, stream=stream)
        stream.sync()
        return np.asarray(pinned).view(dtype).copy()


def from_host(array, buf, stream):
    """Copy NumPy ``array`` into device Buffer ``buf`` (synchronizes ``stream``)."""
    import numpy as np

    from cuda_core import LegacyPinnedMemoryResource

    data = np.ascontiguousarray(array).view(np.uint8).ravel()
    with LegacyPinnedMemoryResource().allocate(buf.size, stream=stream) as pinned:
        np.asarray(pinned)[:] = data
        buf.copy_from(pinned, stream=stream)
        stream.sync()


def package_root():
    """The directory holding the ``cuda_core`` under test.

    This checkout when the tests run against it, site-packages when they run
    against an installed wheel: a subprocess that puts it first on
    PYTHONPATH imports the same copy as the test process.
    """
    import cuda_core

    return os.path.dirname(os.path.dirname(os.path.abspath(cuda_core.__file__)))


def mypy_strict(script, workdir):
    """Run ``mypy --strict`` on the user script ``script`` from ``workdir``; return the run.

    As a user runs it: no settings of their own, and the package under test
    (the checkout or the installed one) followed silently, so that only the
    script is judged.
    """
    (workdir / "mypy.ini").write_text("[mypy]\n")  # the user's own settings: none
    env = dict(os.environ)
    root = package_root()
    if os.path.basename(root) not in ("site-packages", "dist-packages"):
        env["MYPYPATH"] = root  # a checkout: mypy does not read PYTHONPATH
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",  # judge the script, not the package
            "--no-incremental",
            "--config-file",
            str(workdir / "mypy.ini"),
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(workdir),
        env=env,
    )


def script_env():
    """The environment for a script: the ``cuda_core`` under test first on PYTHONPATH."""
    parts = [package_root()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(parts), PYTHONUNBUFFERED="1")


def run_script(name, *args, timeout=120):
    """Run ``tests/_scripts/<name>`` with this interpreter.

    Returns
    -------
    (subprocess.CompletedProcess, dict or None)
        The finished process (a timeout raises ``subprocess.TimeoutExpired``,
        so a hang fails the calling test instead of the whole run) and the
        decoded ``RESULT`` line, if the script printed one.
    """
    return run_scripts({None: (name, *args)}, timeout=timeout)[None]


def run_scripts(jobs, timeout=120):
    """Run several scripts at once: ``{key: (name, *args)}`` -> ``{key: (proc, result)}``.

    Each job runs in its own interpreter (and CUDA context); a job that
    outlives ``timeout`` is killed and reported with return code None and
    ``"TIMEOUT"`` in its stderr.
    """
    import time

    procs = {}
    for key, (name, *args) in jobs.items():
        procs[key] = subprocess.Popen(
            [sys.executable, os.path.join(HERE, name), *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=script_env(),
            cwd=ROOT,
        )
    deadline = time.monotonic() + timeout
    out = {}
    for key, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            returncode = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            returncode = None
            stderr += f"\nTIMEOUT: killed after {timeout}s (hang?)"
        done = subprocess.CompletedProcess(proc.args, returncode, stdout, stderr)
        result = None
        for line in stdout.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT ") :])
        out[key] = (done, result)
    return out


def emit(result):
    """Print ``result`` as the script's ``RESULT`` line."""
    print("RESULT " + json.dumps(result), flush=True)


class StreamBlocker:
    """Hold a stream at ``cuStreamWaitValue32`` on a host-mapped flag until :meth:`release`.

    ``status`` is the driver's answer to the wait: non-zero means the wait is
    unavailable here, the flag is already freed and nothing is held.  Both
    :meth:`release` and :meth:`free` may be called more than once.
    """

    def __init__(self, stream):
        from cuda_core._cuda_ffi import ffi, lib
        from cuda_core._errors import check

        out = ffi.new("void **")
        check(lib.cuMemHostAlloc(out, 4, lib.CU_MEMHOSTALLOC_DEVICEMAP))
        self.host = out[0]
        self.word = ffi.cast("uint32_t *", self.host)
        self.word[0] = 0
        dptr = ffi.new("CUdeviceptr *")
        check(lib.cuMemHostGetDevicePointer(dptr, self.host, 0))
        self.status = lib.cuStreamWaitValue32(stream._handle, dptr[0], 1, 0)  # 0: WAIT_VALUE_GEQ
        self.released = self.freed = False
        if self.status:
            check(lib.cuMemFreeHost(self.host))
            self.released = self.freed = True

    def release(self):
        if not self.released:
            self.word[0] = 1
            self.released = True

    def free(self):
        from cuda_core._cuda_ffi import lib
        from cuda_core._errors import check

        if not self.freed:
            self.release()
            check(lib.cuCtxSynchronize())
            check(lib.cuMemFreeHost(self.host))
            self.freed = True


def outcome(fn):
    """Call ``fn`` and describe what happened as a JSON-friendly dict.

    ``{"ok": True, "value": repr}`` or ``{"ok": False, "type": exception class
    name, "bases": [names of its classes], "name": CUDAError.name, "message": str}``.
    """
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - reported, judged by the test
        return {
            "ok": False,
            "type": type(exc).__name__,
            "bases": [c.__name__ for c in type(exc).__mro__],
            "name": getattr(exc, "name", None),
            "message": str(exc),
        }
    return {"ok": True, "value": repr(value)[:200]}


def rss_bytes():
    """Resident set size of this process, from ``/proc/self/statm``."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def device_free_bytes():
    """Free device memory of the current context's device (``cuMemGetInfo``)."""
    from cuda_core._cuda_ffi import ffi, lib
    from cuda_core._errors import check

    free = ffi.new("size_t *")
    total = ffi.new("size_t *")
    check(lib.cuMemGetInfo(free, total))
    return free[0]
