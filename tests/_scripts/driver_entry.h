/* What the C reproducers of tests/_scripts share: the CUDA driver opened
   with dlopen and its entry points found with cuGetProcAddress_v2, as
   cuda_core does, so that no CUDA header or library is needed to build
   them; and CK, which ends the program on a failed call.

   Use: include this file; driver_start() opens the driver, makes device
   0's primary context current and returns a new non-blocking stream; then
   resolve what else the program calls with DRIVER_RESOLVE(gp, name,
   version) into a function pointer named p_<name>.  p_cuCtxSynchronize and
   p_cuStreamSynchronize are resolved here. */
#ifndef CC_DRIVER_ENTRY_H
#define CC_DRIVER_ENTRY_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;

#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 1
#define CU_STREAM_NON_BLOCKING 1

typedef CUresult (*getproc_t)(const char *, void **, int, unsigned long long, int *);

#define CK(call)                                                                   \
    do {                                                                           \
        CUresult r_ = (call);                                                      \
        if (r_) {                                                                  \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, r_); \
            exit(2);                                                               \
        }                                                                          \
    } while (0)

/* Store the entry point `name` of this driver (version `version`) in
   *slot; exit with status 3 when the driver has none. */
static void driver_resolve(getproc_t gp, const char *name, void *slot, int version) {
    void *p = NULL;
    int status = 0;
    if (gp(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) || p == NULL) {
        fprintf(stderr, "no %s in this driver\n", name);
        exit(3);
    }
    memcpy(slot, &p, sizeof p);
}

#define DRIVER_RESOLVE(gp, name, version) driver_resolve(gp, #name, &p_##name, version)

/* Open libcuda.so.1 and return its cuGetProcAddress_v2; exit with status 3
   when there is no driver. */
static getproc_t driver_entry_point(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    getproc_t gp;
    if (!lib) {
        fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
        exit(3);
    }
    gp = (getproc_t)dlsym(lib, "cuGetProcAddress_v2");
    if (!gp) {
        fprintf(stderr, "no cuGetProcAddress_v2\n");
        exit(3);
    }
    return gp;
}

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned);
static CUresult (*p_cuStreamSynchronize)(CUstream);

/* Open the driver (*gp_out: its cuGetProcAddress_v2), make device 0's
   primary context current, and return a new non-blocking stream. */
static CUstream driver_start(getproc_t *gp_out) {
    getproc_t gp = driver_entry_point();
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    DRIVER_RESOLVE(gp, cuInit, 12080);
    DRIVER_RESOLVE(gp, cuDeviceGet, 12080);
    DRIVER_RESOLVE(gp, cuDevicePrimaryCtxRetain, 12080);
    DRIVER_RESOLVE(gp, cuCtxSetCurrent, 12080);
    DRIVER_RESOLVE(gp, cuCtxSynchronize, 12080);
    DRIVER_RESOLVE(gp, cuStreamCreate, 12080);
    DRIVER_RESOLVE(gp, cuStreamSynchronize, 12080);
    CK(p_cuInit(0));
    CK(p_cuDeviceGet(&dev, 0));
    CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(p_cuCtxSetCurrent(ctx));
    CK(p_cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    *gp_out = gp;
    return stream;
}

#endif
