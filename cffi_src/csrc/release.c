/* Releases in the owning context: each helper makes ``ctx`` current (pushed
   only when it is not already the current context), releases, and pops it
   again, in one call into the extension.  They serve the deferred releases
   (garbage-collection finalizers, PyPy guards, graph drains), which may run
   on a thread where no context, or another one, is current.  ctx NULL means
   "whatever is current": nothing is pushed.

   The status returned is the release's; when the context could not be made
   current the release is skipped and that failure is returned (a resource
   whose context is gone cannot be released any more).  A failure to pop the
   context again is returned only when the release itself succeeded.

   Part of the one cuda_core._cuda_ffi source, after streams.c (whose
   cc_enter_ctx / cc_leave_ctx these use); declarations in
   cffi_src/cdefs/cuda_core.h. */

static CUresult cc_leave_after_release(CUresult r, int pushed) {
    CUresult r2 = cc_leave_ctx(pushed);
    return r != CUDA_SUCCESS ? r : r2;
}

/* cuMemFreeAsync of ``ptr`` ordered on ``stream`` in ``ctx``. */
CUresult cc_free_async_in(CUcontext ctx, CUdeviceptr ptr, CUstream stream) {
    int pushed;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    return cc_leave_after_release(cuMemFreeAsync(ptr, stream), pushed);
}

/* cuEventDestroy of ``event`` in ``ctx``. */
CUresult cc_event_destroy_in(CUcontext ctx, CUevent event) {
    int pushed;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    return cc_leave_after_release(cuEventDestroy(event), pushed);
}

/* cuStreamDestroy of ``stream`` in ``ctx``; with ctx NULL, in the stream's
   own context (cuStreamGetCtx), which needs no current context. */
CUresult cc_stream_destroy_in(CUcontext ctx, CUstream stream) {
    int pushed;
    CUresult r;
    if (ctx == NULL && cuStreamGetCtx(stream, &ctx) != CUDA_SUCCESS) ctx = NULL;
    r = cc_enter_ctx(ctx, &pushed);
    if (r != CUDA_SUCCESS) return r;
    return cc_leave_after_release(cuStreamDestroy(stream), pushed);
}

/* Make ``ctx`` current for a release done from Python (several driver calls,
   or a user's deallocate): returns 1 when it was pushed (the caller pops it
   with cc_pop_ctx), 0 when nothing was pushed, or -1 with the status kept
   for cc_status when it could not be made current. */
int cc_push_ctx(CUcontext ctx) {
    int pushed;
    CUresult r = cc_enter_ctx(ctx, &pushed);
    cc_last_status = r;
    return r == CUDA_SUCCESS ? pushed : -1;
}

/* Pop the context pushed by cc_push_ctx. */
CUresult cc_pop_ctx(void) { return cc_leave_ctx(1); }

/* The calling thread's current context (NULL when none, or when the driver
   cannot say). */
CUcontext cc_current_ctx(void) {
    CUcontext cur = NULL;
    return cuCtxGetCurrent(&cur) == CUDA_SUCCESS ? cur : NULL;
}
