/* cuda_core's own C helpers, defined in cffi_src/csrc/ (the extension's
   part that is not a CUDA library).  Uses the CUDA 12.8 driver types.

   The library indices (CC_LIB_DRIVER, CC_LIB_NVRTC, ...) are not here: the
   builder defines one per entry of its library table. */

/* Sentinel statuses, outside every real status range. */
#define CC_LIB_NOT_LOADED 2147418113
#define CC_MISSING_SYMBOL 2147418114
#define CC_STREAM_CAPTURING 2147418115
/* cc_tex_object_new / cc_surf_object_new: the claim was already released. */
#define CC_CLAIM_RELEASED 2147418116
/* cc_library_state of the driver in a child created by fork() after its
   parent loaded the driver (see loader.c). */
#define CC_DRIVER_FORKED 3

/* Launch fast path (launch.c).  cc_launch_cfg: a launch configuration
   prepared once per LaunchConfig (grid in blocks, the launch attributes it
   needs); the stream comes per launch.  cc_arg_layout: the kernel and the
   offsets of its packed arguments, prepared once per kernel and combination
   of argument types. */
typedef struct {
    unsigned int gridDimX;
    unsigned int gridDimY;
    unsigned int gridDimZ;
    unsigned int blockDimX;
    unsigned int blockDimY;
    unsigned int blockDimZ;
    unsigned int sharedMemBytes;
    unsigned int numAttrs;
    CUlaunchAttribute attrs[4];
} cc_launch_cfg;
typedef struct {
    CUfunction func;
    unsigned int nargs;
    size_t bufsize;
    unsigned int offsets[];
} cc_arg_layout;

/* Library loading and missing-symbol reports (loader.c). */
int cc_load_library(int which, const char *path);
int cc_library_state(int which);
const char *cc_library_error(int which);
int cc_library_path(int which, char *buf, size_t len);
const char *cc_take_missing(int *version);

/* Graph host callbacks and user objects (user_objects.c).  The callback and
   the drain run by a wakeup are implemented in Python (cffi's extern
   "Python"). */
void cc_host_callback(void *userData); /* cffi: extern "Python" */
void cc_release_drain(void); /* cffi: extern "Python" */
void cc_user_object_release(void *token);
size_t cc_take_released(unsigned long long *out, size_t max);
size_t cc_released_pending(void);
int cc_drain_configure(int mode, int fd);
void cc_drain_acknowledge(void);
void cc_drain_stats(unsigned long long *out4, int *scheduled, int *retrying, int fail_next);

/* Kernel launches (launch.c). */
CUresult cc_launch_blob(const char *blob);

/* Streams and events (streams.c). */
CUresult cc_stream_create(CUcontext ctx, unsigned int flags, int priority, CUstream *out);
CUresult cc_event_create(CUcontext ctx, unsigned int flags, CUevent *out);
CUevent cc_event_new(CUcontext ctx, unsigned int flags);
CUevent cc_event_new_untimed(CUcontext ctx);
CUstream cc_stream_new(CUcontext ctx);
intptr_t cc_last_handle(void);
CUresult cc_status(void);
long long cc_current_device_key(void);
CUresult cc_tex_object_create(CUcontext ctx, CUtexObject *out, const CUDA_RESOURCE_DESC *res,
                              const CUDA_TEXTURE_DESC *tex);
CUresult cc_surf_object_create(CUcontext ctx, CUsurfObject *out, const CUDA_RESOURCE_DESC *res);

/* Texture and surface objects: claim counts, create and release in one call
   (texture.c). */
int cc_claim_retain(int *claims);
int cc_claim_drop(int *claims);
CUtexObject cc_tex_object_new(CUcontext ctx, const CUDA_RESOURCE_DESC *res,
                              const CUDA_TEXTURE_DESC *tex, int *claims);
CUsurfObject cc_surf_object_new(CUcontext ctx, const CUDA_RESOURCE_DESC *res, int *claims);
long long cc_tex_object_release(CUtexObject h, int *claims);
long long cc_surf_object_release(CUsurfObject h, int *claims);

/* Releases in the owning context (release.c). */
CUresult cc_free_async_in(CUcontext ctx, CUdeviceptr ptr, CUstream stream);
CUresult cc_event_destroy_in(CUcontext ctx, CUevent event);
CUresult cc_stream_destroy_in(CUcontext ctx, CUstream stream);
int cc_push_ctx(CUcontext ctx);
CUresult cc_pop_ctx(void);
CUcontext cc_current_ctx(void);

/* TMA tensor maps (tensor_map.c): the current context and its device in
   one call (out[0] the status, out[1] the device); a tiled encode from
   packed driver-order arrays into 128 bytes at out; both at once, giving 0
   for any failure (the caller then finds which). */
intptr_t cc_context_device(int *out);
CUresult cc_tensor_map_encode_tiled(char *out, int dtype, unsigned int rank, uintptr_t address,
                                    const cuuint64_t *layout, const cuuint32_t *box,
                                    int interleave, int swizzle, int l2, int oob);
intptr_t cc_tensor_map_encode_tiled_here(int *out2, int device, char *out, int dtype,
                                         unsigned int rank, uintptr_t address,
                                         const cuuint64_t *layout, const cuuint32_t *box,
                                         int interleave, int swizzle, int l2, int oob);

/* DLPack bridge and pool allocations (memory.c). */
int cc_dlpack_set_bridge(const char *module, const char *attr);
int cc_dlpack_export(long long token, int versioned, void *data, int32_t device_type,
                     int32_t device_id, int32_t ndim, uint8_t code, uint8_t bits,
                     uint16_t lanes, const int64_t *shape, const int64_t *strides,
                     uint64_t flags);
void *cc_dlpack_take(long long token, int *versioned);
void cc_dlpack_release(void *tensor, int versioned);
intptr_t cc_pool_alloc(size_t size, CUmemoryPool pool, CUstream stream);
CUresult cc_pool_alloc_status(void);

/* DLPack C exchange API and PyObject * hand-over (dlpack_exchange.c). */
void *cc_dlpack_exchange_api(void);
int cc_dlpack_exchange_api_capsule(long long token);
void *cc_pyobject_new_ref(long long token);
int cc_pyobject_steal(long long token, void *obj);
int cc_pyerr_take(long long token);

/* NVML helpers (nvml.c): the "C" locale for one thread around NVML's process
   names on WSL, and the forked child's reset of every NVML entry point. */
void *cc_use_c_locale(void);
void cc_restore_locale(void *saved);
void cc_nvml_forget(void);

/* Hot NVML reads (nvml.c), one extension call each.  The two returning long
   long give the value read, or CC_NVML_FAILED - status when NVML fails (every
   value they read lies in [-2^31, 2^32), so no value is mistaken for a
   failure); cc_nvml_memory_info sets the struct's version word itself. */
#define CC_NVML_FAILED -4294967296
long long cc_nvml_device_count(void);
long long cc_nvml_gpu_temperature(nvmlDevice_t device);
int cc_nvml_memory_info(nvmlDevice_t device, nvmlMemory_v2_t *memory);
