/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for libnvidia-ml.so.1 with two GPUs, for CPU tests of
   cuda_core.system (built by tests/test_system_fake.py and loaded through
   CUDA_CORE_NVML_PATH).  It answers with fixed values and checks what a
   caller must get right: struct version words, buffer sizes, the two-call
   protocol.  nvmlDeviceGetSerial is deliberately absent (a missing symbol). */
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef void *nvmlEventSet_t;

#define V(type_size, v) ((unsigned int)(type_size) | ((unsigned int)(v) << 24))

int fake_nvml_inits, fake_nvml_shutdowns, fake_nvml_event_sets_freed;
/* Set by the test script: a status that the count, memory and temperature
   reads return instead of their answer (0: answer), and GPU 0's temperature. */
int fake_nvml_fail_status;
int fake_nvml_temperature = 40;
static char fake_set_storage[4];

static int dev_index(nvmlDevice_t d) {
    long i = (long)((char *)d - (char *)0x1000);
    return (i == 0 || i == 1) ? (int)i : -1;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case 0: return "Success";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 10: return "Timeout";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlInit_v2(void) { fake_nvml_inits++; return 0; }
nvmlReturn_t nvmlShutdown(void) { fake_nvml_shutdowns++; return 0; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int n) {
    if (n < 80) return 7;
    snprintf(buf, n, "580.65.06");
    return 0;
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *buf, unsigned int n) {
    if (n < 80) return 7;
    snprintf(buf, n, "13.580.65.06");
    return 0;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { *v = 13000; return 0; }

typedef struct { unsigned int version; char branch[80]; } branch_t;
nvmlReturn_t nvmlSystemGetDriverBranch(branch_t *info, unsigned int n) {
    if (info->version != V(sizeof(branch_t), 1)) return 25;
    snprintf(info->branch, n < 80 ? n : 80, "r580_00");
    return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (fake_nvml_fail_status) return fake_nvml_fail_status;
    *count = 2;
    return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (i >= 2) return 2;
    *d = (char *)0x1000 + i;
    return 0;
}

static const char *uuids[2] = {
    "GPU-00000000-1111-2222-3333-444444444444",
    "GPU-55555555-6666-7777-8888-999999999999",
};

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d) {
    int i;
    for (i = 0; i < 2; i++) {
        if (strcmp(uuid, uuids[i]) == 0) {
            *d = (char *)0x1000 + i;
            return 0;
        }
    }
    return 6;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n) {
    int i = dev_index(d);
    if (i < 0) return 2;
    if (n < 96) return 7;
    snprintf(buf, n, "%s", uuids[i]);
    return 0;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int n) {
    int i = dev_index(d);
    if (i < 0) return 2;
    snprintf(buf, n, "Fake GPU %d \xc2\xb5", i); /* a non-ASCII character: UTF-8 decoding */
    return 0;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *i) {
    if (dev_index(d) < 0) return 2;
    *i = (unsigned int)dev_index(d);
    return 0;
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *arch) {
    *arch = dev_index(d) == 0 ? 9 : 77; /* HOPPER, then an unknown value */
    return 0;
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t d, int *brand) {
    *brand = dev_index(d) == 0 ? 2 : 99;
    return 0;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode) {
    *mode = dev_index(d) == 0;
    return 0;
}

nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t d, unsigned int *n) {
    if (dev_index(d) == 0) return 3;
    *n = 0;
    return 0;
}

typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} mem_v2_t;
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, mem_v2_t *m) {
    if (m->version != V(sizeof(mem_v2_t), 2)) return 25;
    if (fake_nvml_fail_status) return fake_nvml_fail_status;
    m->total = 80ULL << 30;
    m->reserved = 512ULL << 20;
    m->used = (1ULL << 30) + (unsigned long long)dev_index(d);
    m->free = m->total - m->reserved - m->used;
    return 0;
}

typedef struct { unsigned int version; int sensorType; int temperature; } temp_t;
nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t d, temp_t *t) {
    if (t->version != V(sizeof(temp_t), 1) || t->sensorType != 0) return 25;
    if (fake_nvml_fail_status) return fake_nvml_fail_status;
    t->temperature = fake_nvml_temperature + dev_index(d);
    return 0;
}

typedef struct {
    unsigned int version, domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
    char busId[32];
} pci_t;
nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t d, pci_t *p) {
    if (p->version != V(sizeof(pci_t), 1)) return 25;
    p->domain = 0;
    p->bus = (unsigned int)dev_index(d) + 1;
    p->device = 0;
    p->pciDeviceId = 0x233010DE;
    snprintf(p->busId, 32, "00000000:%02X:00.0", p->bus);
    return 0;
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *p) {
    *p = dev_index(d) == 0 ? 0 : 32;
    return 0;
}

nvmlReturn_t nvmlDeviceGetSupportedPerformanceStates(nvmlDevice_t d, int *p, unsigned int size) {
    (void)d;
    if (size != 16 * sizeof(int)) return 7;
    p[0] = 0;
    p[1] = 2;
    p[2] = 8;
    return 0;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
    (void)d;
    *r = 0x1 | 0x4;
    return 0;
}

nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t d, unsigned long long *r) {
    (void)d;
    *r = 0x10000; /* a bit no ClocksEventReasons member has */
    return 0;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *is_mig) {
    (void)d;
    *is_mig = 0;
    return 0;
}

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} proc_t;
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *n, proc_t *p) {
    unsigned int i;
    if (dev_index(d) != 0) {
        *n = 0;
        return 0;
    }
    if (*n < 2 || p == NULL) {
        *n = 2;
        return 7;
    }
    for (i = 0; i < 2; i++) {
        p[i].pid = 1000 + i;
        p[i].usedGpuMemory = (i + 1) << 20;
    }
    *n = 2;
    return 0;
}

nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *buf, unsigned int n) {
    if (pid != 1000) return 6;
    snprintf(buf, n, "fake-process");
    return 0;
}

typedef union {
    double dVal; int siVal; unsigned int uiVal; unsigned long ulVal;
    unsigned long long ullVal; signed long long sllVal; unsigned short usVal;
} value_t;
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    value_t value;
} field_t;
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, field_t *v) {
    int i;
    (void)d;
    for (i = 0; i < count; i++) {
        v[i].timestamp = 1700000000000000LL;
        if (v[i].fieldId == 91) {          /* DEV_NVLINK_LINK_COUNT */
            v[i].valueType = 1;
            v[i].value.uiVal = 18;
            v[i].nvmlReturn = 0;
        } else if (v[i].fieldId == 82) {   /* DEV_MEMORY_TEMP */
            v[i].valueType = 0;
            v[i].value.dVal = 35.5;
            v[i].nvmlReturn = 0;
        } else {
            v[i].nvmlReturn = 3;
        }
    }
    return 0;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) { *set = fake_set_storage; return 0; }

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t s) {
    (void)s;
    if (dev_index(d) != 0 || types & ~0x4ULL) return 3; /* only PSTATE, only on GPU 0 */
    return 0;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t s, void *data, unsigned int ms) {
    struct timespec t;
    (void)s; (void)data;
    t.tv_sec = ms / 1000;
    t.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&t, NULL);
    return 10;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t s) {
    if (s != fake_set_storage) return 2;
    fake_nvml_event_sets_freed++;
    return 0;
}
