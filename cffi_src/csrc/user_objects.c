/* Graph attachments: the queue of released user-object tokens, and the
   wakeup that has Python drain it without waiting for a later cuda_core call.

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations in cffi_src/cdefs/cuda_core.h. */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The queue.  A CUDA user object's destructor runs on a driver thread
   where neither CUDA nor Python may be called: it only queues its token
   here, and cuda_core.graph drains the queue from Python (dropping the
   objects the token kept alive).  A failed realloc leaks the token (its
   objects stay alive) rather than losing track of it. */
static pthread_mutex_t cc_released_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long *cc_released_buf;
static size_t cc_released_len, cc_released_cap;

/* The wakeup (see cc_drain_wake).  cc_drain_lock guards the mode, the fd
   and the start of a retry thread; cc_drain_scheduled (atomic) is 1 while
   a wakeup is outstanding: sent and not yet acknowledged by a drain, or
   being retried.  Every destructor that finds it set adds nothing (the
   coming drain takes its token too), so any number of releases give one
   wakeup.

   Modes: 0 off (tokens wait for the next drain at a cuda_core safe point);
   CC_DRAIN_PENDING_CALL (CPython) Py_AddPendingCall, whose function runs
   the drain on the main thread between two bytecodes;
   CC_DRAIN_FD (PyPy) one byte written to a pipe that a daemon Python thread
   blocks on.  Python picks the mode at run time (cuda_core.graph._release). */
#define CC_DRAIN_PENDING_CALL 1
#define CC_DRAIN_FD 2
static pthread_mutex_t cc_drain_lock = PTHREAD_MUTEX_INITIALIZER;
static int cc_drain_mode;
static int cc_drain_fd = -1;
static int cc_drain_scheduled;
static int cc_drain_retrying;      /* guarded by cc_drain_lock */
static int cc_drain_fail_next;     /* tests: make the next N sends fail */
/* sent, coalesced, failed sends, retry threads started (cc_drain_stats) */
static unsigned long long cc_drain_counts[4];

static void cc_release_drain(void);   /* extern "Python", defined by cffi */

static void cc_drain_wake(void);

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
    cc_drain_wake();
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

#ifndef PYPY_VERSION
/* Runs on CPython's main thread, holding the GIL, between two bytecodes.
   The flag is cleared before the drain starts: a token queued after this
   point sends a new wakeup, one queued before it is taken by this drain.
   cc_release_drain (cffi's extern "Python") reports any exception through
   sys.unraisablehook, so none reaches the interrupted code. */
static int cc_drain_pending_call(void *arg) {
    (void)arg;
    __atomic_store_n(&cc_drain_scheduled, 0, __ATOMIC_SEQ_CST);
    cc_release_drain();
    return 0;
}
#endif

/* Send one wakeup; 0 on success.  Called with cc_drain_lock held.
   Py_AddPendingCall needs neither the GIL nor a thread state (it is in the
   stable ABI); it fails when the interpreter's queue of pending calls is
   full. */
static int cc_drain_send_locked(void) {
    if (cc_drain_fail_next > 0) {
        cc_drain_fail_next--;
        return -1;
    }
#ifndef PYPY_VERSION
    if (cc_drain_mode == CC_DRAIN_PENDING_CALL)
        return Py_AddPendingCall(cc_drain_pending_call, NULL) == 0 ? 0 : -1;
#endif
    if (cc_drain_mode == CC_DRAIN_FD) {
        char byte = 1;
        ssize_t n;
        do {
            n = write(cc_drain_fd, &byte, 1);
        } while (n < 0 && errno == EINTR);
        return n == 1 ? 0 : -1;
    }
    return -1;
}

/* A send failed: retry from a thread of our own, backing off from 1 ms to
   100 ms, until a send succeeds or the wakeup is turned off.  At most one
   such thread runs; the flag stays set meanwhile, so releases keep
   coalescing into the wakeup it will deliver. */
static void *cc_drain_retry_main(void *arg) {
    long delay_ns = 1000000L;
    (void)arg;
    for (;;) {
        struct timespec ts = {0, delay_ns};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        pthread_mutex_lock(&cc_drain_lock);
        if (cc_drain_mode == 0) {
            __atomic_store_n(&cc_drain_scheduled, 0, __ATOMIC_SEQ_CST);
            cc_drain_retrying = 0;
            pthread_mutex_unlock(&cc_drain_lock);
            return NULL;
        }
        if (cc_drain_send_locked() == 0) {
            __atomic_fetch_add(&cc_drain_counts[0], 1, __ATOMIC_RELAXED);
            cc_drain_retrying = 0;
            pthread_mutex_unlock(&cc_drain_lock);
            return NULL;
        }
        __atomic_fetch_add(&cc_drain_counts[2], 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&cc_drain_lock);
        if (delay_ns < 100000000L) delay_ns *= 2;
    }
}

/* After a token was queued: make sure one wakeup is on its way. */
static void cc_drain_wake(void) {
    if (__atomic_exchange_n(&cc_drain_scheduled, 1, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_add(&cc_drain_counts[1], 1, __ATOMIC_RELAXED);
        return;
    }
    pthread_mutex_lock(&cc_drain_lock);
    if (cc_drain_mode == 0) {
        __atomic_store_n(&cc_drain_scheduled, 0, __ATOMIC_SEQ_CST);
    } else if (cc_drain_send_locked() == 0) {
        __atomic_fetch_add(&cc_drain_counts[0], 1, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&cc_drain_counts[2], 1, __ATOMIC_RELAXED);
        if (!cc_drain_retrying) {
            pthread_t t;
            pthread_attr_t attr;
            int ok = pthread_attr_init(&attr) == 0;
            if (ok) {
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                ok = pthread_create(&t, &attr, cc_drain_retry_main, NULL) == 0;
                pthread_attr_destroy(&attr);
            }
            if (ok) {
                cc_drain_retrying = 1;
                __atomic_fetch_add(&cc_drain_counts[3], 1, __ATOMIC_RELAXED);
            } else {
                /* No thread: the next release sends again, and the drains
                   at cuda_core's safe points take the queue meanwhile. */
                __atomic_store_n(&cc_drain_scheduled, 0, __ATOMIC_SEQ_CST);
            }
        }
    }
    pthread_mutex_unlock(&cc_drain_lock);
}

/* Turn the wakeup on (mode CC_DRAIN_PENDING_CALL, or CC_DRAIN_FD writing to
   fd) or off (mode 0).  Returns 0, or -1 for a mode this build lacks
   (CC_DRAIN_PENDING_CALL on PyPy).  Turning it on sends a wakeup when
   tokens are already queued. */
int cc_drain_configure(int mode, int fd) {
    int queued;
#ifdef PYPY_VERSION
    if (mode == CC_DRAIN_PENDING_CALL) return -1;
#endif
    if (mode != 0 && mode != CC_DRAIN_PENDING_CALL && mode != CC_DRAIN_FD) return -1;
    pthread_mutex_lock(&cc_drain_lock);
    cc_drain_mode = mode;
    cc_drain_fd = mode == CC_DRAIN_FD ? fd : -1;
    pthread_mutex_unlock(&cc_drain_lock);
    queued = __atomic_load_n(&cc_released_len, __ATOMIC_ACQUIRE) != 0;
    if (mode != 0 && queued) cc_drain_wake();
    return 0;
}

/* The drain has started: the outstanding wakeup is used up (see
   cc_drain_pending_call; the PyPy thread calls this after its read). */
void cc_drain_acknowledge(void) {
    __atomic_store_n(&cc_drain_scheduled, 0, __ATOMIC_SEQ_CST);
}

/* Tests: the counters (sent, coalesced, failed sends, retry threads
   started), whether a wakeup is outstanding and whether a retry thread runs;
   fail_next >= 0 makes that many coming sends fail. */
void cc_drain_stats(unsigned long long *out4, int *scheduled, int *retrying, int fail_next) {
    int i;
    pthread_mutex_lock(&cc_drain_lock);
    for (i = 0; i < 4; i++) out4[i] = __atomic_load_n(&cc_drain_counts[i], __ATOMIC_RELAXED);
    *scheduled = __atomic_load_n(&cc_drain_scheduled, __ATOMIC_SEQ_CST);
    *retrying = cc_drain_retrying;
    if (fail_next >= 0) cc_drain_fail_next = fail_next;
    pthread_mutex_unlock(&cc_drain_lock);
}

/* fork(): the loader's pthread_atfork handlers hold cc_released_lock and
   cc_drain_lock across fork(); in the child no retry thread runs and the
   parent's pipe is not ours, so the wakeup is off until Python turns it on
   again (its own at-fork hook). */
static void cc_drain_after_fork_child(void) {
    cc_drain_retrying = 0;
    __atomic_store_n(&cc_drain_scheduled, 0, __ATOMIC_SEQ_CST);
    if (cc_drain_mode == CC_DRAIN_FD) {
        cc_drain_mode = 0;
        cc_drain_fd = -1;
    }
}
