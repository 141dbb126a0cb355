/* Benchmark floors (bench.c): the driver calls behind one operation, made
   count times from a C loop.  Built only with CUDA_CORE_BUILD_BENCH=1 (see
   cffi_src/README.md); uses the CUDA 12.8 driver types.  Each returns the
   first failure. */

CUresult cc_bench_launch_loop(CUfunction f, CUstream stream, void **params,
                              unsigned int count, int use_ex);
CUresult cc_bench_event_loop(CUstream stream, unsigned int count);
CUresult cc_bench_stream_loop(int priority, unsigned int count);
CUresult cc_bench_pool_loop(CUmemoryPool pool, CUstream stream, size_t size, unsigned int count);
