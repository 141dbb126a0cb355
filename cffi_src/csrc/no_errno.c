/* errno.  Around every call, cffi's CPython wrappers restore the C errno
   before and save it after (for ffi.errno).  The driver, NVRTC, nvJitLink
   and NVVM report failures through their return codes only, and cuda_core
   never reads ffi.errno, so those two steps -- about 10 ns of a 60-70 ns
   call -- are compiled out.  The GIL is still released around every call.
   Guarded: where cffi does not define them as macros, nothing changes.
   (PyPy calls the functions directly and is not affected.)

   Must come last in the extension's source (see build_ffi.py). */

#if defined(_cffi_restore_errno) && defined(_cffi_save_errno)
#  undef _cffi_restore_errno
#  undef _cffi_save_errno
#  define _cffi_restore_errno() ((void)0)
#  define _cffi_save_errno() ((void)0)
#endif
