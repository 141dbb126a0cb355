/* Kernel launches: one extension call per launch.

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations and the cc_launch_cfg / cc_arg_layout types in
   cffi_src/cdefs/cuda_core.h. */

#include <stdlib.h>
#include <string.h>

#define CC_STACK_PARAMS 512
/* The three pointer-sized header words of a launch blob (see below). */
#define CC_BLOB_HEADER (3 * sizeof(void *))
/* The ``extra`` markers of cuLaunchKernel (cuda.h's CU_LAUNCH_PARAM_*). */
#define CC_LAUNCH_PARAM_END ((void *)0x00)
#define CC_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CC_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)

/* The launch hot path: one call per launch, with one argument so that the
   call is as cheap as the interpreter allows.  ``blob`` starts with three
   pointer-sized words -- the argument layout (kernel + offsets, prepared once
   per kernel and argument types), the launch configuration (prepared once per
   LaunchConfig, only read here, possibly shared between threads) and the
   stream -- followed by the packed argument values; argument i starts at
   ``blob + layout->offsets[i]``.  The driver copies the parameter values
   before cuLaunchKernelEx returns, so the blob may be reused right after.
   When ``layout->bufsize`` is not 0, the packed values after the header are
   laid out exactly as the kernel's parameter buffer (checked when the layout
   is made, against the offsets the driver reports) and are handed over as
   one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER): one copy in the driver rather
   than one per parameter, which is cheaper for kernels with many parameters. */
CUresult cc_launch_blob(const char *blob) {
    const cc_arg_layout *layout;
    const cc_launch_cfg *cfg;
    CUstream stream;
    CUlaunchConfig c;
    void *stack_params[CC_STACK_PARAMS];
    void **params = NULL;
    unsigned int i, nargs;
    CUresult r;
    memcpy(&layout, blob, sizeof(layout));
    memcpy(&cfg, blob + sizeof(void *), sizeof(cfg));
    memcpy(&stream, blob + 2 * sizeof(void *), sizeof(stream));
    c.gridDimX = cfg->gridDimX; c.gridDimY = cfg->gridDimY; c.gridDimZ = cfg->gridDimZ;
    c.blockDimX = cfg->blockDimX; c.blockDimY = cfg->blockDimY; c.blockDimZ = cfg->blockDimZ;
    c.sharedMemBytes = cfg->sharedMemBytes;
    c.hStream = stream;
    c.attrs = (CUlaunchAttribute *)cfg->attrs;
    c.numAttrs = cfg->numAttrs;
    nargs = layout->nargs;
    if (layout->bufsize != 0) {
        size_t bufsize = layout->bufsize;
        void *extra[5];
        extra[0] = CC_LAUNCH_PARAM_BUFFER_POINTER;
        extra[1] = (void *)(blob + CC_BLOB_HEADER);
        extra[2] = CC_LAUNCH_PARAM_BUFFER_SIZE;
        extra[3] = (void *)&bufsize;
        extra[4] = CC_LAUNCH_PARAM_END;
        return cuLaunchKernelEx(&c, layout->func, NULL, extra);
    }
    if (nargs > 0) {
        if (nargs <= CC_STACK_PARAMS) {
            params = stack_params;
        } else {
            params = (void **)malloc(sizeof(void *) * (size_t)nargs);
            if (params == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (i = 0; i < nargs; i++) params[i] = (void *)(blob + layout->offsets[i]);
    }
    r = cuLaunchKernelEx(&c, layout->func, params, NULL);
    if (params != NULL && params != stack_params) free(params);
    return r;
}
