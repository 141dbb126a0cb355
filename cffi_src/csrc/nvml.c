/* SPDX-License-Identifier: Apache-2.0 */
/* NVML helpers of cuda_core.system (declared in cdefs/cuda_core.h).

   cc_use_c_locale / cc_restore_locale: on WSL, NVML garbles process names
   under a non-"C" locale; cuda_core.system.get_process_name runs its NVML
   calls with the calling thread pinned to the "C" locale (uselocale is
   per thread, so other threads are unaffected). */
#include <locale.h>
#include <stdlib.h>

typedef struct {
    locale_t c_locale;
    locale_t previous;
} cc_locale_swap_t;

void *cc_use_c_locale(void) {
    cc_locale_swap_t *s = (cc_locale_swap_t *)malloc(sizeof *s);
    if (s == NULL) return NULL;
    s->c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (s->c_locale == (locale_t)0) {
        free(s);
        return NULL;
    }
    s->previous = uselocale(s->c_locale);
    return s;
}

void cc_restore_locale(void *saved) {
    cc_locale_swap_t *s = (cc_locale_swap_t *)saved;
    if (s == NULL) return;
    uselocale(s->previous);
    freelocale(s->c_locale);
    free(s);
}

/* In a child created by fork() after the parent loaded NVML, cuda_core.system
   calls this (from os.register_at_fork): every NVML entry point goes back to
   NULL, so each wrapper returns CC_MISSING_SYMBOL at once and the error layer
   raises its fork() error instead of letting NVML run on the parent's state. */
void cc_nvml_forget(void) {
    cc_forget_nvml();
}

/* The hot reads of cuda_core.system (Device.memory_info,
   Temperature.get_sensor, get_num_devices): NVML's call and its out-parameter
   in one extension call, so Python allocates nothing for them.  A failure
   comes back as CC_NVML_FAILED - status; the Python error layer decodes it.
   An NVML that is not loaded (or was forgotten after fork()) answers through
   the wrappers' usual CC_LIB_NOT_LOADED / CC_MISSING_SYMBOL. */
long long cc_nvml_device_count(void) {
    unsigned int n = 0;
    int r = (int)nvmlDeviceGetCount_v2(&n);
    return r == 0 ? (long long)n : CC_NVML_FAILED - (long long)r;
}

long long cc_nvml_gpu_temperature(nvmlDevice_t device) {
    nvmlTemperature_t t;
    int r;
    t.version = (unsigned int)sizeof(nvmlTemperature_t) | (1u << 24);
    t.sensorType = (nvmlTemperatureSensors_t)0; /* NVML_TEMPERATURE_GPU */
    t.temperature = 0;
    r = (int)nvmlDeviceGetTemperatureV(device, &t);
    return r == 0 ? (long long)t.temperature : CC_NVML_FAILED - (long long)r;
}

int cc_nvml_memory_info(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
    memory->version = (unsigned int)sizeof(nvmlMemory_v2_t) | (2u << 24);
    return (int)nvmlDeviceGetMemoryInfo_v2(device, memory);
}
