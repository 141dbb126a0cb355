/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmark-only: the NVML calls of benchmarks/bench_system.py made from a C
   loop (its "C floor").  Each returns the first failing status, or 0. */

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
