/* What cffi's CPython wrappers do around each call: errno and the GIL.

   Must come last in the extension's source: it redefines macros that only
   the wrappers cffi generates after this source expand (see build_ffi.py).
   PyPy calls the functions directly and is not affected by either part.

   errno.  Around every call the wrappers restore the C errno before and
   save it after (for ffi.errno).  The driver, NVRTC, nvJitLink and NVVM
   report failures through their return codes only, and cuda_core never
   reads ffi.errno, so those two steps -- about 10 ns of a 60-70 ns call --
   are compiled out.  Guarded: where cffi does not define them as macros,
   nothing changes.

   The GIL.  The wrappers release the GIL around every call (about 45 ns of
   a call on CPython).  The functions that build_ffi.py lists in
   KEEPS_GIL, and so CC_KEEPS_GIL (defined just before this file), keep it:
   each returns without waiting for the GPU, for a lock that another thread
   may hold while it needs the GIL, or for Python code -- reads of
   thread-local state, object creation, and destruction the driver
   completes asynchronously.  Nothing that queues work on a stream (a
   launch, an event record, an allocation or free) or waits is listed: those
   can block, and a thread that blocks holding the GIL could wait forever
   on a host callback that needs it.  A wrapper tells whether it is listed
   from __func__ ("_cffi_f_<name>"); GCC and Clang decide the comparisons at
   compile time, so the wrappers of the other functions are unchanged.
   Other compilers keep cffi's macros. */

#if defined(_cffi_restore_errno) && defined(_cffi_save_errno)
#  undef _cffi_restore_errno
#  undef _cffi_save_errno
#  define _cffi_restore_errno() ((void)0)
#  define _cffi_save_errno() ((void)0)
#endif

#if !defined(PYPY_VERSION) && defined(__GNUC__) && defined(CC_KEEPS_GIL) && \
    defined(Py_BEGIN_ALLOW_THREADS) && defined(Py_END_ALLOW_THREADS)
#  undef Py_BEGIN_ALLOW_THREADS
#  undef Py_END_ALLOW_THREADS
#  define Py_BEGIN_ALLOW_THREADS \
    { PyThreadState *_save = CC_KEEPS_GIL(__func__) ? NULL : PyEval_SaveThread();
#  define Py_END_ALLOW_THREADS \
    if (!CC_KEEPS_GIL(__func__)) PyEval_RestoreThread(_save); }
#endif
