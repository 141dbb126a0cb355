/* A stand-in for libcuda.so.1 for the extension's create-in-a-context
   helpers (tests/test_ctx_helpers.py).  Another context is always current,
   so the helpers push and pop; the statuses of the push, the creations, the
   pop and the priority query come from the environment variables PUSH,
   CREATE, POP and PRIO, that of destroying a texture or surface object
   from DESTROY (default 0, success); every destroy is counted in
   fake_destroys.  Any other entry point succeeds. */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
int fake_destroys = 0;

static CUresult status_of(const char *name) {
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}
static CUresult succeed(void) { return 0; }
static CUresult get_current(void **cur) { *cur = (void *)0x1; return 0; }
static CUresult push(void *ctx) { (void)ctx; return status_of("PUSH"); }
static CUresult pop(void **ctx) { *ctx = (void *)0x2; return status_of("POP"); }
static CUresult create_handle(void **out) { *out = (void *)0x77; return status_of("CREATE"); }
static CUresult create_object(unsigned long long *out) { *out = 0x77; return status_of("CREATE"); }
static CUresult priorities(int *least, int *greatest) {
    *least = 0;
    *greatest = -5;
    return status_of("PRIO");
}
static CUresult destroy_handle(void *h) { (void)h; fake_destroys++; return 0; }
static CUresult destroy_object(unsigned long long h) {
    (void)h;
    fake_destroys++;
    return status_of("DESTROY");
}

static int is(const char *name, const char *a, const char *b) {
    return !strcmp(name, a) || (b && !strcmp(name, b));
}

CUresult cuInit(unsigned int flags) { (void)flags; return 0; }

CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version,
                             unsigned long long flags, int *status) {
    void *f = (void *)succeed;
    (void)version;
    (void)flags;
    if (is(name, "cuCtxGetCurrent", NULL)) f = (void *)get_current;
    else if (is(name, "cuCtxPushCurrent", NULL)) f = (void *)push;
    else if (is(name, "cuCtxPopCurrent", NULL)) f = (void *)pop;
    else if (is(name, "cuStreamCreateWithPriority", "cuEventCreate")) f = (void *)create_handle;
    else if (is(name, "cuTexObjectCreate", "cuSurfObjectCreate")) f = (void *)create_object;
    else if (is(name, "cuCtxGetStreamPriorityRange", NULL)) f = (void *)priorities;
    else if (is(name, "cuStreamDestroy", "cuEventDestroy")) f = (void *)destroy_handle;
    else if (is(name, "cuTexObjectDestroy", "cuSurfObjectDestroy")) f = (void *)destroy_object;
    *pfn = f;
    if (status) *status = 0;
    return 0;
}
