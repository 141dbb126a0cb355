/* Texture and surface objects (cuda_core/texture): claim counts, and the
   creation and release of an object in one call each.

   A claim count is an int owned by a texture.SharedHandle (an array or a
   mipmapped array, with one claim per wrapper, texture or surface that
   uses it).  It is changed atomically, so taking and dropping claims needs
   no lock: cc_claim_retain adds one unless the count has reached 0 (the
   handle is released for good), cc_claim_drop removes one and returns what
   is left (0: the caller destroys the handle).

   cc_tex_object_new / cc_surf_object_new take a claim (where claims is not
   NULL) and create the object in ctx (see cc_tex_object_create).  They
   return the new handle, or 0 on failure with the status kept for
   cc_status: CC_CLAIM_RELEASED when the claim could not be taken (nothing
   created), else the creation's status, the claim still held (the caller
   drops it).  cc_tex_object_release / cc_surf_object_release destroy the
   object and drop its claim whatever the destruction's status; they return
   2 * status + last, where last is 1 when the caller has the rest to do
   (claims NULL, or the claim dropped was the last), so 0 is the common
   case: destroyed, and other claims remain.

   Part of the one cuda_core._cuda_ffi source (after streams.c, whose
   helpers and per-thread status these use); declarations in
   cffi_src/cdefs/cuda_core.h. */

int cc_claim_retain(int *claims) {
    int n = __atomic_load_n(claims, __ATOMIC_RELAXED);
    while (n > 0) {
        if (__atomic_compare_exchange_n(claims, &n, n + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

int cc_claim_drop(int *claims) { return __atomic_sub_fetch(claims, 1, __ATOMIC_ACQ_REL); }

static int cc_claim_take(int *claims) {
    if (claims == NULL || cc_claim_retain(claims)) return 1;
    cc_last_status = (CUresult)CC_CLAIM_RELEASED;
    return 0;
}

static long long cc_release_result(CUresult r, int *claims) {
    int last = claims == NULL || cc_claim_drop(claims) == 0;
    return 2 * (long long)r + last; /* wide enough for the CC_* sentinel statuses */
}

CUtexObject cc_tex_object_new(CUcontext ctx, const CUDA_RESOURCE_DESC *res,
                              const CUDA_TEXTURE_DESC *tex, int *claims) {
    CUtexObject h = 0;
    CUresult r;
    if (!cc_claim_take(claims)) return 0;
    r = cc_tex_object_create(ctx, &h, res, tex);
    cc_last_status = r;
    return r == CUDA_SUCCESS ? h : 0;
}

CUsurfObject cc_surf_object_new(CUcontext ctx, const CUDA_RESOURCE_DESC *res, int *claims) {
    CUsurfObject h = 0;
    CUresult r;
    if (!cc_claim_take(claims)) return 0;
    r = cc_surf_object_create(ctx, &h, res);
    cc_last_status = r;
    return r == CUDA_SUCCESS ? h : 0;
}

long long cc_tex_object_release(CUtexObject h, int *claims) {
    return cc_release_result(cuTexObjectDestroy(h), claims);
}

long long cc_surf_object_release(CUsurfObject h, int *claims) {
    return cc_release_result(cuSurfObjectDestroy(h), claims);
}
