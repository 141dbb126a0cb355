/* Library loading: every library is opened with dlopen on its first use
   (the driver by its first wrapper call, the others by cuda_core._loader);
   each wrapper calls through a pointer resolved here and reports a missing
   entry point (cc_note_missing) instead of crashing.

   Generic over the builder's library table: the builder defines CC_NLIBS
   and one CC_LIB_<NAME> index per library before this file, and after it
   the wrappers, one resolver per library and cc_resolve_library (which
   calls the resolver of a library index).  Only the driver is handled
   specially (cuGetProcAddress, fork safety); every other library is a
   dlopen'ed file whose entry points are found with dlsym.

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations in cffi_src/cdefs/cuda_core.h. */

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

typedef struct {
    void *handle;
    int state;              /* 0 untried, 1 loaded, 2 failed (driver only),
                               3 CC_DRIVER_FORKED (driver only: see below) */
    char error[1024];
    pthread_mutex_t lock;
} cc_lib_t;
static cc_lib_t cc_libs[CC_NLIBS] = {
    [0 ... CC_NLIBS - 1] = {NULL, 0, "", PTHREAD_MUTEX_INITIALIZER},
};

static __thread const char *cc_missing_name;
static __thread int cc_missing_version;

static int cc_note_missing(const char *name, int version, int status) {
    cc_missing_name = name;
    cc_missing_version = version;
    return status;
}

const char *cc_take_missing(int *version) {
    const char *name = cc_missing_name;
    *version = cc_missing_version;
    cc_missing_name = NULL;
    cc_missing_version = 0;
    return name;
}

int cc_library_state(int which) {
    if (which < 0 || which >= CC_NLIBS) return -1;
    return __atomic_load_n(&cc_libs[which].state, __ATOMIC_ACQUIRE);
}

const char *cc_library_error(int which) {
    if (which < 0 || which >= CC_NLIBS) return "no such library index";
    return cc_libs[which].error;
}

typedef CUresult (*cc_getproc_v2_t)(const char *, void **, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult *);
typedef CUresult (*cc_getproc_v1_t)(const char *, void **, int, cuuint64_t);
static cc_getproc_v2_t cc_getproc_v2;
static cc_getproc_v1_t cc_getproc_v1;

/* Resolve one driver entry point: exported versioned names by dlsym, the
   rest through cuGetProcAddress with the ABI version the cdef follows. */
static void *cc_driver_symbol(const char *name, int version, int exact) {
    void *p = NULL;
    if (exact) return dlsym(cc_libs[CC_LIB_DRIVER].handle, name);
    if (cc_getproc_v2 != NULL) {
        CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SUCCESS;
        if (cc_getproc_v2(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) != CUDA_SUCCESS
            || q != CU_GET_PROC_ADDRESS_SUCCESS)
            p = NULL;
    } else if (cc_getproc_v1 != NULL) {
        if (cc_getproc_v1(name, &p, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS)
            p = NULL;
    }
    return p;
}

static void cc_resolve_driver(void);
static void cc_forget_driver(void);
static void cc_resolve_library(int which, void *h);

/* Fork safety.  A child created by fork() after its parent loaded the driver
   cannot use CUDA, and the driver does not always say so (some calls return
   success there).  When the driver is loaded, a pthread_atfork child handler
   is registered (once); in the child it sets the driver's state to
   CC_DRIVER_FORKED and clears every driver entry point, so each wrapper takes
   its (already present) NULL-pointer slow path, which returns
   CUDA_ERROR_NOT_INITIALIZED in that state: no cost on the fast path.  The
   prepare/parent handlers hold the loader locks across fork() so that the
   child never inherits one locked by another thread. */
static void cc_atfork_prepare(void) {
    int i;
    for (i = 0; i < CC_NLIBS; i++) pthread_mutex_lock(&cc_libs[i].lock);
    pthread_mutex_lock(&cc_released_lock);
    pthread_mutex_lock(&cc_drain_lock);
}

static void cc_atfork_parent(void) {
    int i;
    pthread_mutex_unlock(&cc_drain_lock);
    pthread_mutex_unlock(&cc_released_lock);
    for (i = CC_NLIBS - 1; i >= 0; i--) pthread_mutex_unlock(&cc_libs[i].lock);
}

static const char cc_forked_message[] =
    "this process was created by fork() after its parent loaded the CUDA driver, "
    "and CUDA cannot be used in such a child";

static void cc_atfork_child(void) {
    int i;
    if (cc_libs[CC_LIB_DRIVER].state == 1) {
        cc_forget_driver();
        cc_getproc_v2 = NULL;
        cc_getproc_v1 = NULL;
        memcpy(cc_libs[CC_LIB_DRIVER].error, cc_forked_message, sizeof(cc_forked_message));
        __atomic_store_n(&cc_libs[CC_LIB_DRIVER].state, CC_DRIVER_FORKED, __ATOMIC_RELEASE);
    }
    cc_drain_after_fork_child();
    pthread_mutex_unlock(&cc_drain_lock);
    pthread_mutex_unlock(&cc_released_lock);
    for (i = CC_NLIBS - 1; i >= 0; i--) pthread_mutex_unlock(&cc_libs[i].lock);
}

static int cc_atfork_registered;   /* guarded by the driver's lock */

int cc_load_library(int which, const char *path) {
    cc_lib_t *lib;
    void *h;
    int rc = 0;
    if (which < 0 || which >= CC_NLIBS) return -1;
    lib = &cc_libs[which];
    pthread_mutex_lock(&lib->lock);
    if (lib->state == 1) goto done;
    if (which == CC_LIB_DRIVER && (lib->state == 2 || lib->state == CC_DRIVER_FORKED)) {
        rc = -1;
        goto done;
    }
    if (path == NULL) {
        if (which != CC_LIB_DRIVER) {
            snprintf(lib->error, sizeof(lib->error), "no library path given");
            rc = -1;
            goto done;
        }
        path = "libcuda.so.1";
    }
    dlerror();
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(lib->error, sizeof(lib->error), "dlopen(\"%s\") failed: %s", path,
                 e ? e : "unknown error");
        if (which == CC_LIB_DRIVER) __atomic_store_n(&lib->state, 2, __ATOMIC_RELEASE);
        rc = -1;
        goto done;
    }
    lib->handle = h;
    switch (which) {
    case CC_LIB_DRIVER:
        cc_getproc_v2 = (cc_getproc_v2_t)dlsym(h, "cuGetProcAddress_v2");
        cc_getproc_v1 = (cc_getproc_v1_t)dlsym(h, "cuGetProcAddress");
        if (cc_getproc_v2 == NULL && cc_getproc_v1 == NULL) {
            snprintf(lib->error, sizeof(lib->error),
                     "%s has no cuGetProcAddress: the CUDA driver is too old (need 11.3 or newer)",
                     path);
            __atomic_store_n(&lib->state, 2, __ATOMIC_RELEASE);
            rc = -1;
            goto done;
        }
        cc_resolve_driver();
        if (!cc_atfork_registered
            && pthread_atfork(cc_atfork_prepare, cc_atfork_parent, cc_atfork_child) == 0)
            cc_atfork_registered = 1;
        break;
    default: cc_resolve_library(which, h); break;
    }
    lib->error[0] = '\0';
    __atomic_store_n(&lib->state, 1, __ATOMIC_RELEASE);
done:
    pthread_mutex_unlock(&lib->lock);
    return rc;
}

/* 0: the driver is loaded; 1: forked child (CC_DRIVER_FORKED); -1: not loadable. */
static int cc_driver_autoload(void) {
    int s = __atomic_load_n(&cc_libs[CC_LIB_DRIVER].state, __ATOMIC_ACQUIRE);
    if (s == 1) return 0;
    if (s == CC_DRIVER_FORKED) return 1;
    if (s == 2) return -1;
    return cc_load_library(CC_LIB_DRIVER, NULL);
}

/* The file a loaded library was opened from (as the dynamic loader found
   it); 0, or -1 when the library is not loaded or the loader cannot say. */
int cc_library_path(int which, char *buf, size_t len) {
    struct link_map *map = NULL;
    if (len == 0 || cc_library_state(which) != 1) return -1;
    if (dlinfo(cc_libs[which].handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL
        || map->l_name == NULL || map->l_name[0] == '\0')
        return -1;
    snprintf(buf, len, "%s", map->l_name);
    return 0;
}
