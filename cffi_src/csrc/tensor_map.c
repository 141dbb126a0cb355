/* TMA tensor maps: the context lookup and the tiled encode of
   StridedMemoryView.as_tensor_map, one extension call each, or both in one.

   cc_context_device returns the current context (0 when there is none or
   the lookup failed) and stores the status in out[0] (0: success) and the
   context's device in out[1].  A failed cuCtxGetCurrent returns 0 with its
   status; a failed cuCtxGetDevice returns the context with its status.

   cc_tensor_map_encode_tiled encodes into an aligned CUtensorMap of its
   own and copies the 128 bytes to out (any alignment).  layout holds the
   driver-order (innermost-first) dims, then the rank - 1 outer byte
   strides (at least one entry); box holds the driver-order box dims, then
   the element strides.

   cc_tensor_map_encode_tiled_here does both in one call, for a view whose
   device is known: it returns the current context after encoding, or 0
   when anything failed (no context, a failed lookup, the context's device
   not `device` (-1: any), a failed encode), and then the caller goes the
   long way to raise what failed first.  out2 as cc_context_device's.

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations in cffi_src/cdefs/cuda_core.h. */

#include <string.h>

intptr_t cc_context_device(int *out) {
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    CUresult r = cuCtxGetCurrent(&ctx);
    out[1] = 0;
    if (r != CUDA_SUCCESS) {
        out[0] = (int)r;
        return 0;
    }
    if (ctx != NULL) {
        r = cuCtxGetDevice(&dev);
        out[1] = (int)dev;
    }
    out[0] = (int)r;
    return (intptr_t)ctx;
}

CUresult cc_tensor_map_encode_tiled(char *out, int dtype, unsigned int rank, uintptr_t address,
                                    const cuuint64_t *layout, const cuuint32_t *box,
                                    int interleave, int swizzle, int l2, int oob) {
    /* CUDA 13 declares CUtensorMap alignas(128) (12.x: 64). */
    char storage[sizeof(CUtensorMap) + 128];
    CUtensorMap *map = (CUtensorMap *)(storage + ((128 - ((uintptr_t)storage & 127)) & 127));
    CUresult r = cuTensorMapEncodeTiled(
        map, (CUtensorMapDataType)dtype, rank, (void *)address, layout, layout + rank, box,
        box + rank, (CUtensorMapInterleave)interleave, (CUtensorMapSwizzle)swizzle,
        (CUtensorMapL2promotion)l2, (CUtensorMapFloatOOBfill)oob);
    if (r == CUDA_SUCCESS) memcpy(out, map, sizeof(CUtensorMap));
    return r;
}

intptr_t cc_tensor_map_encode_tiled_here(int *out2, int device, char *out, int dtype,
                                         unsigned int rank, uintptr_t address,
                                         const cuuint64_t *layout, const cuuint32_t *box,
                                         int interleave, int swizzle, int l2, int oob) {
    intptr_t ctx = cc_context_device(out2);
    if (ctx == 0 || out2[0] != 0 || (device >= 0 && out2[1] != device)) return 0;
    if (cc_tensor_map_encode_tiled(out, dtype, rank, address, layout, box, interleave, swizzle,
                                   l2, oob) != CUDA_SUCCESS)
        return 0;
    return ctx;
}
