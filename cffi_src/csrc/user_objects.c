/* Graph host callbacks' user objects: a queue of released tokens.

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations in cffi_src/cdefs/cuda_core.h. */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Graph attachments.  A CUDA user object's destructor runs on a driver
   thread where neither CUDA nor Python may be called: it only queues its
   token here, and cuda_core.graph drains the queue from Python (dropping the
   objects the token kept alive) at its next safe point.  A failed realloc
   leaks the token (its objects stay alive) rather than losing track of it. */
static pthread_mutex_t cc_released_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long *cc_released_buf;
static size_t cc_released_len, cc_released_cap;

void cc_user_object_release(void *token) {
    pthread_mutex_lock(&cc_released_lock);
    if (cc_released_len == cc_released_cap) {
        size_t cap = cc_released_cap ? 2 * cc_released_cap : 64;
        unsigned long long *p = (unsigned long long *)realloc(cc_released_buf, cap * sizeof *p);
        if (p == NULL) {
            pthread_mutex_unlock(&cc_released_lock);
            return;
        }
        cc_released_buf = p;
        cc_released_cap = cap;
    }
    cc_released_buf[cc_released_len] = (unsigned long long)(uintptr_t)token;
    __atomic_store_n(&cc_released_len, cc_released_len + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cc_released_lock);
}

size_t cc_take_released(unsigned long long *out, size_t max) {
    size_t n;
    pthread_mutex_lock(&cc_released_lock);
    n = cc_released_len < max ? cc_released_len : max;
    if (n) memcpy(out, cc_released_buf + (cc_released_len - n), n * sizeof *out);
    __atomic_store_n(&cc_released_len, cc_released_len - n, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cc_released_lock);
    return n;
}

size_t cc_released_pending(void) {
    return __atomic_load_n(&cc_released_len, __ATOMIC_ACQUIRE);
}
