/* CUDA driver: scalar and handle types, constants, small opaque structs.
   Follows the CUDA 12.8 ABI. */

typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef unsigned long long CUgraphConditionalHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUuserObject_st *CUuserObject;
typedef struct CUarray_st *CUarray;
typedef struct CUgraphDeviceUpdatableNode_st *CUgraphDeviceNode;
typedef void (*CUhostFn)(void *userData);
typedef size_t (*CUoccupancyB2DSize)(int blockSize);

#define CU_IPC_HANDLE_SIZE 64
#define CU_MEMHOSTALLOC_PORTABLE 1
#define CU_MEMHOSTALLOC_DEVICEMAP 2
#define CU_MEMHOSTALLOC_WRITECOMBINED 4
#define CU_MEMHOSTREGISTER_PORTABLE 1
#define CU_MEMHOSTREGISTER_DEVICEMAP 2
#define CU_MEMHOSTREGISTER_IOMEMORY 4
#define CU_MEMHOSTREGISTER_READ_ONLY 8
#define CU_GRAPH_KERNEL_NODE_PORT_DEFAULT 0
#define CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC 1
#define CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER 2

typedef struct CUuuid_st { char bytes[16]; } CUuuid;
typedef struct CUipcEventHandle_st { char reserved[64]; } CUipcEventHandle;
typedef struct CUipcMemHandle_st { char reserved[64]; } CUipcMemHandle;
typedef struct CUmemPoolPtrExportData_st { unsigned char reserved[64]; } CUmemPoolPtrExportData;

/* Textures, surfaces, CUDA arrays and TMA tensor maps (cuda_core.texture,
   cuda_core._tensor_map). */
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef unsigned long long CUtexObject;
typedef unsigned long long CUsurfObject;

#define CUDA_ARRAY3D_LAYERED 1
#define CUDA_ARRAY3D_SURFACE_LDST 2
#define CUDA_ARRAY3D_CUBEMAP 4
#define CUDA_ARRAY3D_TEXTURE_GATHER 8
#define CU_TRSF_READ_AS_INTEGER 1
#define CU_TRSF_NORMALIZED_COORDINATES 2
#define CU_TRSF_SRGB 16
#define CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION 32
#define CU_TRSF_SEAMLESS_CUBEMAP 64
#define CU_TENSOR_MAP_NUM_QWORDS 16

/* --- Green contexts and device resources, OpenGL interop --- */
typedef struct CUgreenCtx_st *CUgreenCtx;
typedef struct CUdevResourceDesc_st *CUdevResourceDesc;
typedef struct CUgraphicsResource_st *CUgraphicsResource;
