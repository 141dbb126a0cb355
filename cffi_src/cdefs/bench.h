/* Benchmark floors (bench.c): the driver (or NVML) calls behind one
   operation, made count times from a C loop.  Built only with
   CUDA_CORE_BUILD_BENCH=1 (see cffi_src/README.md); uses the CUDA 12.8
   driver types and nvml.h's.  Each returns the
   first failure. */

CUresult cc_bench_launch_loop(CUfunction f, CUstream stream, void **params,
                              unsigned int count, int use_ex);
CUresult cc_bench_event_loop(CUstream stream, unsigned int count);
CUresult cc_bench_stream_loop(int priority, unsigned int count);
CUresult cc_bench_pool_loop(CUmemoryPool pool, CUstream stream, size_t size, unsigned int count);

/* NVML (benchmarks/bench_system.py). */
nvmlReturn_t cc_bench_nvml_memory_loop(nvmlDevice_t device, unsigned int count);
nvmlReturn_t cc_bench_nvml_temperature_loop(nvmlDevice_t device, unsigned int count);
nvmlReturn_t cc_bench_nvml_count_loop(unsigned int count);
