/* Managed memory: is a write made after a batch discard (and a stream
   synchronize) ever lost?  The same driver calls, flags and stream kind as
   cuda_core's discard_batch / prefetch_batch / Buffer.fill, with no Python
   in between.

   Build (no CUDA headers needed: see driver_entry.h, beside this file):
       cc -O2 -o managed_discard_repro managed_discard_repro.c -ldl
   Run:
       ./managed_discard_repro WRITE ORDER ITERATIONS [SECONDS]
   WRITE  memset  rewrite with cuMemsetD8Async on the stream, then prefetch
                  to the host and synchronize (the old test's steps)
          host    rewrite from the host after the synchronize, then prefetch
                  to the device and back and synchronize (the current test)
          host1   one range; rewrite from the host, read at once
   ORDER  what happens between the discard and the rewrite, after the
          cuStreamSynchronize that always follows the discard:
          none      nothing more
          ctxsync   cuCtxSynchronize
          event     cuEventRecord on the stream + cuEventSynchronize
          sleep     usleep(2000)
          prefetch  cuMemPrefetchBatchAsync of the ranges to the device on the
                    same stream, right after the discard (before the sync)
          discard_prefetch  cuMemDiscardAndPrefetchBatchAsync to the device
                    instead of the discard
   Each iteration allocates 4 ranges of 4 MiB (cuMemAllocManaged, global),
   fills them from the host, prefetches them to the device, discards them,
   rewrites and checks every byte.  Prints one line:
       RESULT write=.. order=.. iterations=N lost_iterations=K lost_ranges=R

   Measured on an H100 with driver 580.159.04 (lost iterations / iterations,
   a few seconds each; lost bytes read back 0xAB, the values from before the
   discard):
       memset none 513/513 (every range)   host none 121/121 (the first
       100-300 KiB of the first range written)   host1 none 0/267
       memset ctxsync 103/150   memset event 119/119   host ctxsync 57/57
       memset sleep 0/64   host sleep 0/34
       memset prefetch 2/152   host prefetch 3/122
       memset discard_prefetch 0/152
   So the discard takes effect for a while after its stream has completed;
   no synchronize orders it, a 2 ms wait or the combined discard-and-prefetch
   call does.  cuda_core's discard_batch uses the combined call.
*/
#include "driver_entry.h"
#include <stdint.h>
#include <time.h>
#include <unistd.h>

typedef void *CUevent;
typedef unsigned long long CUdeviceptr;
typedef struct { int type; int id; } CUmemLocation;

#define CU_MEM_ATTACH_GLOBAL 1
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_LOCATION_TYPE_HOST 2

#define NRANGES 4
#define RANGE (4u << 20)

static CUresult (*p_cuEventCreate)(CUevent *, unsigned);
static CUresult (*p_cuEventRecord)(CUevent, CUstream);
static CUresult (*p_cuEventSynchronize)(CUevent);
static CUresult (*p_cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*p_cuMemPrefetchBatchAsync)(CUdeviceptr *, size_t *, size_t, CUmemLocation *,
                                             size_t *, size_t, unsigned long long, CUstream);
static CUresult (*p_cuMemDiscardBatchAsync)(CUdeviceptr *, size_t *, size_t, unsigned long long,
                                            CUstream);
static CUresult (*p_cuMemDiscardAndPrefetchBatchAsync)(CUdeviceptr *, size_t *, size_t,
                                                       CUmemLocation *, size_t *, size_t,
                                                       unsigned long long, CUstream);

/* The driver, device 0's primary context current, and a new stream. */
static CUstream load(void) {
    getproc_t gp;
    CUstream stream = driver_start(&gp);
#define R(name, ver) DRIVER_RESOLVE(gp, name, ver)
    R(cuEventCreate, 12080);
    R(cuEventRecord, 12080);
    R(cuEventSynchronize, 12080);
    R(cuMemAllocManaged, 12080);
    R(cuMemFree, 12080);
    R(cuMemsetD8Async, 12080);
    R(cuMemPrefetchBatchAsync, 13000);
    R(cuMemDiscardBatchAsync, 13000);
    R(cuMemDiscardAndPrefetchBatchAsync, 13000);
#undef R
    return stream;
}

/* One batch call for n ranges to one location (what cuda_core passes: one
   location entry, index 0 for the run). */
static void prefetch(CUdeviceptr *p, size_t *sz, size_t n, CUmemLocation loc, CUstream s) {
    size_t idx = 0;
    CK(p_cuMemPrefetchBatchAsync(p, sz, n, &loc, &idx, 1, 0, s));
}

static size_t count_wrong(const unsigned char *p, size_t n, unsigned char want) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += p[i] != want;
    return bad;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s memset|host|host1 ORDER ITERATIONS [SECONDS]\n", argv[0]);
        return 1;
    }
    const char *write = argv[1], *order = argv[2];
    long iterations = atol(argv[3]);
    double seconds = argc > 4 ? atof(argv[4]) : 1e9;
    CUstream s = load();
    CUevent ev;
    CK(p_cuEventCreate(&ev, 2 /* CU_EVENT_DISABLE_TIMING */));
    CUmemLocation on_dev = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CUmemLocation on_host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    size_t n = strcmp(write, "host1") == 0 ? 1 : NRANGES;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long done = 0, lost_iterations = 0, lost_ranges = 0;
    for (; done < iterations; done++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + 1e-9 * (t.tv_nsec - t0.tv_nsec) > seconds) break;
        CUdeviceptr p[NRANGES];
        size_t sz[NRANGES];
        for (size_t i = 0; i < n; i++) {
            CK(p_cuMemAllocManaged(&p[i], RANGE, CU_MEM_ATTACH_GLOBAL));
            sz[i] = RANGE;
            memset((void *)(uintptr_t)p[i], 0xAB, RANGE);
        }
        prefetch(p, sz, n, on_dev, s);
        if (strcmp(order, "discard_prefetch") == 0) {
            size_t idx = 0;
            CK(p_cuMemDiscardAndPrefetchBatchAsync(p, sz, n, &on_dev, &idx, 1, 0, s));
        } else {
            CK(p_cuMemDiscardBatchAsync(p, sz, n, 0, s));
            if (strcmp(order, "prefetch") == 0) prefetch(p, sz, n, on_dev, s);
        }
        CK(p_cuStreamSynchronize(s));
        if (strcmp(order, "ctxsync") == 0) CK(p_cuCtxSynchronize());
        if (strcmp(order, "event") == 0) {
            CK(p_cuEventRecord(ev, s));
            CK(p_cuEventSynchronize(ev));
        }
        if (strcmp(order, "sleep") == 0) usleep(2000);
        if (strcmp(write, "memset") == 0) {
            for (size_t i = 0; i < n; i++) CK(p_cuMemsetD8Async(p[i], 0x30 + i, RANGE, s));
            prefetch(p, sz, n, on_host, s);
            CK(p_cuStreamSynchronize(s));
        } else {
            for (size_t i = 0; i < n; i++) memset((void *)(uintptr_t)p[i], 0x30 + i, RANGE);
            if (n > 1) {
                prefetch(p, sz, n, on_dev, s);
                prefetch(p, sz, n, on_host, s);
                CK(p_cuStreamSynchronize(s));
            }
        }
        long bad = 0;
        for (size_t i = 0; i < n; i++) {
            size_t wrong = count_wrong((const unsigned char *)(uintptr_t)p[i], RANGE, 0x30 + i);
            if (wrong) {
                bad++;
                if (lost_ranges < 5)
                    fprintf(stderr, "iteration %ld range %zu: %zu of %u bytes wrong (first: 0x%02x)\n",
                            done, i, wrong, RANGE, ((unsigned char *)(uintptr_t)p[i])[0]);
            }
        }
        lost_ranges += bad;
        lost_iterations += bad != 0;
        CK(p_cuStreamSynchronize(s));
        for (size_t i = 0; i < n; i++) CK(p_cuMemFree(p[i]));
    }
    printf("RESULT write=%s order=%s iterations=%ld lost_iterations=%ld lost_ranges=%ld\n", write,
           order, done, lost_iterations, lost_ranges);
    return 0;
}
