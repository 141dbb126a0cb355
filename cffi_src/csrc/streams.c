/* Streams and events: create one in a given context in a single call (the
   context is pushed only when it is not already current, and popped again),
   so Device.create_stream / create_event / Stream.record cost one call into
   the extension.  ctx NULL means "the current context".

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations in cffi_src/cdefs/cuda_core.h. */

static CUresult cc_enter_ctx(CUcontext ctx, int *pushed) {
    CUcontext cur = NULL;
    CUresult r;
    *pushed = 0;
    if (ctx == NULL) return CUDA_SUCCESS;
    r = cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS || cur == ctx) return r;
    r = cuCtxPushCurrent(ctx);
    if (r == CUDA_SUCCESS) *pushed = 1;
    return r;
}

static CUresult cc_leave_ctx(int pushed) {
    CUcontext popped;
    return pushed ? cuCtxPopCurrent(&popped) : CUDA_SUCCESS;
}

/* Leave the context entered for a creation that returned r.  Returns the
   status to report: r, or the failure to leave after a successful creation,
   in which case *undo is set and the caller destroys what it created. */
static CUresult cc_leave_after_create(CUresult r, int pushed, int *undo) {
    CUresult r2 = cc_leave_ctx(pushed);
    *undo = r == CUDA_SUCCESS && r2 != CUDA_SUCCESS;
    return *undo ? r2 : r;
}

CUresult cc_stream_create(CUcontext ctx, unsigned int flags, int priority, CUstream *out) {
    int pushed, undo;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    r = cc_leave_after_create(cuStreamCreateWithPriority(out, flags, priority), pushed, &undo);
    if (undo) cuStreamDestroy(*out);
    return r;
}

CUresult cc_event_create(CUcontext ctx, unsigned int flags, CUevent *out) {
    int pushed, undo;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    r = cc_leave_after_create(cuEventCreate(out, flags), pushed, &undo);
    if (undo) cuEventDestroy(*out);
    return r;
}

/* Texture and surface objects in ``ctx`` (pushed only when it is not
   current): the context step and the creation in one call. */
CUresult cc_tex_object_create(CUcontext ctx, CUtexObject *out, const CUDA_RESOURCE_DESC *res,
                              const CUDA_TEXTURE_DESC *tex) {
    int pushed, undo;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    r = cc_leave_after_create(cuTexObjectCreate(out, res, tex, NULL), pushed, &undo);
    if (undo) cuTexObjectDestroy(*out);
    return r;
}

CUresult cc_surf_object_create(CUcontext ctx, CUsurfObject *out, const CUDA_RESOURCE_DESC *res) {
    int pushed, undo;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    r = cc_leave_after_create(cuSurfObjectCreate(out, res), pushed, &undo);
    if (undo) cuSurfObjectDestroy(*out);
    return r;
}

/* Single-result form of cc_event_create for the hot path: the new handle is
   the return value (NULL on failure, with the status kept for cc_status on
   the calling thread), so Python needs no output buffer. */
static __thread CUresult cc_last_status;

CUevent cc_event_new(CUcontext ctx, unsigned int flags) {
    CUevent e = NULL;
    CUresult r = cc_event_create(ctx, flags, &e);
    cc_last_status = r;
    return r == CUDA_SUCCESS ? e : NULL;
}

/* cc_event_new for the default options (timing disabled).  One argument:
   on CPython cffi passes a single argument without building a tuple, which
   makes this call markedly cheaper than the two-argument form. */
CUevent cc_event_new_untimed(CUcontext ctx) {
    return cc_event_new(ctx, CU_EVENT_DISABLE_TIMING);
}

/* Device.create_stream() with default options, in one single-argument call:
   a non-blocking stream of the lowest priority of ctx's device (queried each
   time, as the priority range belongs to the device).  Returns NULL on
   failure, with the status kept for cc_status; the handle's integer value is
   kept for cc_last_handle (a cheaper way for Python to get both forms than
   converting the pointer), as a signed word for the reason given at
   cc_pool_alloc. */
static __thread intptr_t cc_last_handle_value;

CUstream cc_stream_new(CUcontext ctx) {
    int pushed, undo, least = 0, greatest = 0;
    CUstream s = NULL;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r == CUDA_SUCCESS) {
        r = cuCtxGetStreamPriorityRange(&least, &greatest);
        if (r == CUDA_SUCCESS) r = cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, least);
        r = cc_leave_after_create(r, pushed, &undo);
        if (undo) cuStreamDestroy(s);
    }
    if (r != CUDA_SUCCESS) s = NULL;
    cc_last_status = r;
    cc_last_handle_value = (intptr_t)s;
    return s;
}

/* The integer value of the calling thread's last cc_stream_new result. */
intptr_t cc_last_handle(void) { return cc_last_handle_value; }

/* The status of the calling thread's last cc_event_new, cc_event_new_untimed
   or cc_stream_new. */
CUresult cc_status(void) { return cc_last_status; }

/* Device()'s key: the calling thread's number (1, 2, ... in order of first
   use, never reused) shifted left by 20 bits, or'ed with the ordinal of the
   current context's device; -1 when there is no current context or the
   driver cannot say (the caller then takes its checked path).  Device()
   keys a process-wide table on it: one dictionary lookup instead of a
   thread-local one. */
static long long cc_thread_count;
static __thread long long cc_thread_no;

long long cc_current_device_key(void) {
    CUdevice d = 0;
    long long t;
    if (cuCtxGetDevice(&d) != CUDA_SUCCESS) return -1;
    t = cc_thread_no;
    if (t == 0) t = cc_thread_no = __atomic_add_fetch(&cc_thread_count, 1, __ATOMIC_RELAXED);
    return (t << 20) | (long long)d;
}
