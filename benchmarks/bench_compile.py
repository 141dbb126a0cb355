# SPDX-License-Identifier: Apache-2.0
"""Compile-time benchmark: cold NVRTC compiles and program-cache hits.

Cases (a ~200-line CUDA C++ kernel compiled to cubin):

* cold compile through cuda_core vs NVIDIA ``cuda.core`` on the same source
  (both call NVRTC, so the ratio should be close to 1);
* a hit in :class:`InMemoryProgramCache` and in :class:`FileStreamProgramCache`
  vs the cold compile (the ratio is the fraction of a compile a hit costs).

Needs NVRTC (``pip install "cuda-core-cffi[cu13]"``), not a GPU: without one
the kernel is compiled for ``sm_90``.  Run: ``python benchmarks/bench_compile.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:  # run from a source checkout without installing: use the tree above
    import cuda_core  # noqa: F401
except ImportError:
    sys.path.insert(1, os.path.dirname(_HERE))

from _harness import interleaved, nvidia_core, optional_import, report, sampler  # noqa: E402

BENCH = "compile"


def kernel_source():
    """Return a ~200-line kernel: helpers, a template, a tiled stencil and a reduction."""
    helpers = []
    for i in range(36):
        helpers.append(
            f"__device__ __forceinline__ float poly{i}(float x) {{\n"
            f"    float y = x * {i + 1}.0f + {i * 0.5:.1f}f;\n"
            f"    return y * y - x / ({i + 2}.0f + x * x);\n"
            f"}}\n"
        )
    calls = " + ".join(f"poly{i}(v)" for i in range(36))
    body = f"""
template <typename T, int TILE>
__device__ T tile_sum(const T *tile, int n) {{
    T acc = T(0);
#pragma unroll
    for (int i = 0; i < TILE; ++i) {{
        if (i < n) acc += tile[i];
    }}
    return acc;
}}

struct Params {{
    int nx, ny;
    float alpha, beta;
}};

extern "C" __global__ void stencil(const float *__restrict__ in, float *__restrict__ out,
                                   Params p) {{
    __shared__ float tile[18][18];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * 16 + tx, y = blockIdx.y * 16 + ty;
    if (x < p.nx && y < p.ny) tile[ty + 1][tx + 1] = in[y * p.nx + x];
    if (tx == 0 && x > 0 && y < p.ny) tile[ty + 1][0] = in[y * p.nx + x - 1];
    if (tx == 15 && x + 1 < p.nx && y < p.ny) tile[ty + 1][17] = in[y * p.nx + x + 1];
    if (ty == 0 && y > 0 && x < p.nx) tile[0][tx + 1] = in[(y - 1) * p.nx + x];
    if (ty == 15 && y + 1 < p.ny && x < p.nx) tile[17][tx + 1] = in[(y + 1) * p.nx + x];
    __syncthreads();
    if (x >= p.nx || y >= p.ny) return;
    float v = tile[ty + 1][tx + 1];
    float lap = tile[ty][tx + 1] + tile[ty + 2][tx + 1] + tile[ty + 1][tx] + tile[ty + 1][tx + 2]
                - 4.0f * v;
    float extra = {calls};
    out[y * p.nx + x] = p.alpha * v + p.beta * lap + 1e-6f * extra;
}}

extern "C" __global__ void reduce(const float *in, float *out, int n) {{
    extern __shared__ float buf[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + tid;
    float s = 0.0f;
    if (i < n) s += in[i];
    if (i + blockDim.x < n) s += in[i + blockDim.x];
    buf[tid] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 32; stride >>= 1) {{
        if (tid < stride) buf[tid] += buf[tid + stride];
        __syncthreads();
    }}
    if (tid < 32) {{
        float w = buf[tid] + (blockDim.x > 32 ? buf[tid + 32] : 0.0f);
        for (int off = 16; off > 0; off >>= 1) w += __shfl_down_sync(0xffffffffu, w, off);
        if (tid == 0) atomicAdd(out, w + tile_sum<float, 4>(buf, 0));
    }}
}}
"""
    return "".join(helpers) + body


def detect_arch():
    """Return (arch, note): the GPU's ``sm_XY`` or ``sm_90`` without a GPU."""
    try:
        from cuda_core import Device

        return f"sm_{Device().arch}", "the GPU's architecture"
    except Exception as e:  # noqa: BLE001 - any failure means "no usable GPU"
        return "sm_90", f"no GPU ({str(e).splitlines()[0][:80]}); compiling for sm_90"


def upstream_api():
    """Return NVIDIA cuda.core's (Program, ProgramOptions, caches module) or None."""
    core = nvidia_core("Program")
    if core is None:
        return None
    utils = optional_import("cuda.core.utils")
    if utils is not None and not hasattr(utils, "InMemoryProgramCache"):
        utils = None
    return core.Program, core.ProgramOptions, utils


def _raw_nvrtc_compile(src, opts):
    """Return a function compiling ``src`` with bare NVRTC calls and our flags.

    This separates NVRTC's own time from anything cuda_core adds around it.
    """
    from cuda_core._cuda_ffi import ffi, lib
    from cuda_core._errors import check_nvrtc

    flags = [ffi.new("char[]", f) for f in opts.as_bytes("nvrtc")]
    c_flags = ffi.new("const char *[]", flags)
    c_src = src.encode()

    def compile_raw():
        prog = ffi.new("nvrtcProgram *")
        check_nvrtc(lib.nvrtcCreateProgram(prog, c_src, b"bench", 0, ffi.NULL, ffi.NULL))
        try:
            check_nvrtc(lib.nvrtcCompileProgram(prog[0], len(flags), c_flags), prog[0])
            size = ffi.new("size_t *")
            check_nvrtc(lib.nvrtcGetCUBINSize(prog[0], size))
            check_nvrtc(lib.nvrtcGetCUBIN(prog[0], ffi.new("char[]", size[0])))
        finally:
            check_nvrtc(lib.nvrtcDestroyProgram(prog))

    return compile_raw


def main():
    try:
        from cuda_core import Program, ProgramOptions
        from cuda_core._loader import ensure_loaded, nvrtc_version
        from cuda_core.utils import FileStreamProgramCache, InMemoryProgramCache

        ensure_loaded("nvrtc")
    except Exception as e:  # noqa: BLE001
        print(f"bench_compile: skipped, NVRTC is not available: {e}")
        return 0
    src = kernel_source()
    arch, note = detect_arch()
    print(
        f"bench_compile: {src.count(chr(10))}-line kernel, arch {arch} ({note}), "
        "NVRTC {}.{}".format(*nvrtc_version())
    )
    opts = ProgramOptions(arch=arch, name="bench")

    def ours_cold():
        with Program(src, "c++", opts) as prog:
            prog.compile("cubin")

    cold_fns = {"cuda_core": ours_cold, "raw NVRTC": _raw_nvrtc_compile(src, opts)}
    upstream = upstream_api()
    if upstream is not None:
        UProgram, UOptions, uutils = upstream
        uopts = UOptions(arch=arch, name="bench")

        def theirs_cold():
            prog = UProgram(src, "c++", uopts)
            prog.compile("cubin")
            prog.close()

        cold_fns["cuda.core"] = theirs_cold
    else:
        print("bench_compile: NVIDIA cuda.core is not importable here; only our numbers")
    # A compile takes milliseconds and NVRTC's speed drifts during a run:
    # one compile per sample, the implementations taking turns, medians.
    results = interleaved(
        {name: sampler(fn, min_time=0, warmup=1) for name, fn in cold_fns.items()},
        reduce=statistics.median,
    )
    report(BENCH, "cold compile to cubin (~200-line kernel)", results)
    cold = results["cuda_core"]

    mem = InMemoryProgramCache()
    with tempfile.TemporaryDirectory() as tmp:
        disk = FileStreamProgramCache(tmp)
        for name, cache in (("in-memory", mem), ("file", disk)):
            prog = Program(src, "c++", opts)
            prog.compile("cubin", cache=cache)  # fill

            def hit(prog=prog, cache=cache):
                prog.compile("cubin", cache=cache)

            samplers = {"cuda_core": sampler(hit)}
            if upstream is not None and upstream[2] is not None:
                UProgram, UOptions, uutils = upstream
                ucache = (
                    uutils.InMemoryProgramCache()
                    if name == "in-memory"
                    else uutils.FileStreamProgramCache(os.path.join(tmp, "upstream"))
                )
                uprog = UProgram(src, "c++", UOptions(arch=arch, name="bench"))
                uprog.compile("cubin", cache=ucache)
                samplers["cuda.core hit"] = sampler(
                    lambda uprog=uprog, ucache=ucache: uprog.compile("cubin", cache=ucache)
                )
            hit_results = interleaved(samplers)
            hit_results["cold compile"] = cold
            report(BENCH, f"{name} cache hit (vs cold compile)", hit_results)
            speedup = cold / hit_results["cuda_core"]
            print(f"  {name} cache hit is {speedup:.0f}x faster than compiling")
            prog.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
