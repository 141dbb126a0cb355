/* Benchmark floors: the driver calls behind one operation, made ``count``
   times from a C loop (no Python at all).  Compiled only when
   CUDA_CORE_BUILD_BENCH=1 is set at build time (see cffi_src/README.md);
   declarations in cffi_src/cdefs/bench.h.  Each returns the first failure. */

/* Launches of a 1x1 grid with a prepared parameter array (cuLaunchKernel,
   or cuLaunchKernelEx when ``use_ex``). */
CUresult cc_bench_launch_loop(CUfunction f, CUstream stream, void **params,
                              unsigned int count, int use_ex) {
    unsigned int i;
    CUresult r = CUDA_SUCCESS;
    CUlaunchConfig c;
    c.gridDimX = c.gridDimY = c.gridDimZ = 1;
    c.blockDimX = c.blockDimY = c.blockDimZ = 1;
    c.sharedMemBytes = 0;
    c.hStream = stream;
    c.attrs = NULL;
    c.numAttrs = 0;
    for (i = 0; i < count && r == CUDA_SUCCESS; i++) {
        if (use_ex)
            r = cuLaunchKernelEx(&c, f, params, NULL);
        else
            r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL);
    }
    return r;
}

/* Event cycles (create, record, sync, destroy) in the current context. */
CUresult cc_bench_event_loop(CUstream stream, unsigned int count) {
    unsigned int i;
    CUresult r = CUDA_SUCCESS, r2;
    CUevent e;
    for (i = 0; i < count && r == CUDA_SUCCESS; i++) {
        r = cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) break;
        r = cuEventRecord(e, stream);
        if (r == CUDA_SUCCESS) r = cuEventSynchronize(e);
        r2 = cuEventDestroy(e);
        if (r == CUDA_SUCCESS) r = r2;
    }
    return r;
}

/* Stream cycles (create, destroy) in the current context. */
CUresult cc_bench_stream_loop(int priority, unsigned int count) {
    unsigned int i;
    CUresult r = CUDA_SUCCESS;
    CUstream s;
    for (i = 0; i < count && r == CUDA_SUCCESS; i++) {
        r = cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority);
        if (r == CUDA_SUCCESS) r = cuStreamDestroy(s);
    }
    return r;
}

/* Pool allocations as cc_pool_alloc makes them (the capture check, then
   allocate), each freed again. */
CUresult cc_bench_pool_loop(CUmemoryPool pool, CUstream stream, size_t size, unsigned int count) {
    unsigned int i;
    CUresult r = CUDA_SUCCESS;
    CUdeviceptr p;
    for (i = 0; i < count && r == CUDA_SUCCESS; i++) {
        p = cc_pool_alloc(size, pool, stream);
        if (p == 0) return cc_pool_alloc_status();
        r = cuMemFreeAsync(p, stream);
    }
    return r;
}

/* NVML: the calls behind benchmarks/bench_system.py's cases. */
nvmlReturn_t cc_bench_nvml_memory_loop(nvmlDevice_t device, unsigned int count) {
    nvmlMemory_v2_t m;
    nvmlReturn_t r;
    unsigned int i;
    for (i = 0; i < count; i++) {
        m.version = (unsigned int)sizeof(nvmlMemory_v2_t) | (2u << 24);
        r = nvmlDeviceGetMemoryInfo_v2(device, &m);
        if (r != 0) return r;
    }
    return 0;
}

nvmlReturn_t cc_bench_nvml_temperature_loop(nvmlDevice_t device, unsigned int count) {
    nvmlTemperature_t t;
    nvmlReturn_t r;
    unsigned int i;
    for (i = 0; i < count; i++) {
        t.version = (unsigned int)sizeof(nvmlTemperature_t) | (1u << 24);
        t.sensorType = 0; /* NVML_TEMPERATURE_GPU */
        r = nvmlDeviceGetTemperatureV(device, &t);
        if (r != 0) return r;
    }
    return 0;
}

nvmlReturn_t cc_bench_nvml_count_loop(unsigned int count) {
    unsigned int n;
    nvmlReturn_t r;
    unsigned int i;
    for (i = 0; i < count; i++) {
        r = nvmlDeviceGetCount_v2(&n);
        if (r != 0) return r;
    }
    return 0;
}
