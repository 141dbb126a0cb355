/* CUDA driver: the entry points cuda_core calls (CUDA 12.8 ABI unless an
   entry point's annotation names another version).

   Annotation.  Every prototype ends, on the line of its semicolon, with a
   comment holding the word "abi" and a CUDA version written as
   1000 * major + 10 * minor (see cuInit below: "abi 12080").  It names the
   CUDA version whose variant of the entry point the prototype declares.  At
   run time the extension resolves the entry point with
   cuGetProcAddress(name, version), which returns the newest variant
   introduced at or before that version, so that variant must have the
   declared signature (tests/test_abi.py checks it against cudaTypedefs.h).
   A name ending in _vN (cuMemAdvise_v2) is looked up by that exact exported
   symbol instead; its version is then only reported when the symbol is
   missing.  The annotation is an ordinary comment, so the file stays valid
   C; build_ffi.py refuses a driver prototype without one. */

CUresult cuGetErrorName(CUresult error, const char **pStr); /* abi 12080 */
CUresult cuGetErrorString(CUresult error, const char **pStr); /* abi 12080 */
CUresult cuInit(unsigned int Flags); /* abi 12080 */
CUresult cuDriverGetVersion(int *driverVersion); /* abi 12080 */
CUresult cuDeviceGet(CUdevice *device, int ordinal); /* abi 12080 */
CUresult cuDeviceGetCount(int *count); /* abi 12080 */
CUresult cuDeviceGetName(char *name, int len, CUdevice dev); /* abi 12080 */
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev); /* abi 12080 */
CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev); /* abi 12080 */
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev); /* abi 12080 */
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev); /* abi 12080 */
CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev); /* abi 12080 */
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev); /* abi 12080 */
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev); /* abi 12080 */
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool); /* abi 12080 */
CUresult cuDeviceGraphMemTrim(CUdevice device); /* abi 12080 */
CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value); /* abi 12080 */
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value); /* abi 12080 */
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev); /* abi 12080 */
CUresult cuDevicePrimaryCtxRelease(CUdevice dev); /* abi 12080 */
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active); /* abi 12080 */
CUresult cuCtxGetCurrent(CUcontext *pctx); /* abi 12080 */
CUresult cuCtxSetCurrent(CUcontext ctx); /* abi 12080 */
CUresult cuCtxPushCurrent(CUcontext ctx); /* abi 12080 */
CUresult cuCtxPopCurrent(CUcontext *pctx); /* abi 12080 */
CUresult cuCtxGetDevice(CUdevice *device); /* abi 12080 */
CUresult cuCtxSynchronize(void); /* abi 12080 */
CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority); /* abi 12080 */
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version); /* abi 12080 */
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId); /* abi 12080 */
CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit); /* abi 12080 */
CUresult cuCtxSetLimit(CUlimit limit, size_t value); /* abi 12080 */
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags); /* abi 12080 */
CUresult cuCtxDisablePeerAccess(CUcontext peerContext); /* abi 12080 */
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags); /* abi 12080 */
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority); /* abi 12080 */
CUresult cuStreamDestroy(CUstream hStream); /* abi 12080 */
CUresult cuStreamQuery(CUstream hStream); /* abi 12080 */
CUresult cuStreamSynchronize(CUstream hStream); /* abi 12080 */
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags); /* abi 12080 */
CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags); /* abi 12080 */
CUresult cuStreamGetPriority(CUstream hStream, int *priority); /* abi 12080 */
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx); /* abi 9020 */
CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId); /* abi 12080 */
CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device); /* abi 12080 */
CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode); /* abi 12080 */
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph); /* abi 12080 */
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus); /* abi 12080 */
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, size_t *numDependencies_out); /* abi 11030 */
CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies, size_t numDependencies, unsigned int flags); /* abi 11030 */
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode); /* abi 12030 */
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode); /* abi 12080 */
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData); /* abi 12080 */
CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags); /* abi 12080 */
CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags); /* abi 12080 */
CUresult cuEventRecord(CUevent hEvent, CUstream hStream); /* abi 12080 */
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags); /* abi 12080 */
CUresult cuEventQuery(CUevent hEvent); /* abi 12080 */
CUresult cuEventSynchronize(CUevent hEvent); /* abi 12080 */
CUresult cuEventDestroy(CUevent hEvent); /* abi 12080 */
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd); /* abi 12080 */
CUresult cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event); /* abi 12080 */
CUresult cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle); /* abi 12080 */
CUresult cuMemGetInfo(size_t *free, size_t *total); /* abi 12080 */
CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize); /* abi 12080 */
CUresult cuMemFree(CUdeviceptr dptr); /* abi 12080 */
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream); /* abi 12080 */
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream); /* abi 12080 */
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream); /* abi 12080 */
CUresult cuMemAllocHost(void **pp, size_t bytesize); /* abi 12080 */
CUresult cuMemFreeHost(void *p); /* abi 12080 */
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags); /* abi 12080 */
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags); /* abi 12080 */
CUresult cuMemHostUnregister(void *p); /* abi 12080 */
CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags); /* abi 12080 */
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags); /* abi 12080 */
CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr); /* abi 12080 */
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount); /* abi 12080 */
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream); /* abi 12080 */
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream); /* abi 12080 */
CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount); /* abi 12080 */
CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount); /* abi 12080 */
CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount); /* abi 12080 */
CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream); /* abi 12080 */
CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream); /* abi 12080 */
CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream); /* abi 12080 */
CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N); /* abi 12080 */
CUresult cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N); /* abi 12080 */
CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N); /* abi 12080 */
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream); /* abi 12080 */
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream); /* abi 12080 */
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream); /* abi 12080 */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr); /* abi 12080 */
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr); /* abi 12080 */
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location); /* abi 12020 */
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream); /* abi 12020 */
CUresult cuMemRangeGetAttribute(void *data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr, size_t count); /* abi 12080 */
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps); /* abi 12080 */
CUresult cuMemPoolDestroy(CUmemoryPool pool); /* abi 12080 */
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value); /* abi 12080 */
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value); /* abi 12080 */
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count); /* abi 12080 */
CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location); /* abi 12080 */
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep); /* abi 12080 */
CUresult cuMemPoolExportToShareableHandle(void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType, unsigned long long flags); /* abi 12080 */
CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *pool_out, void *handle, CUmemAllocationHandleType handleType, unsigned long long flags); /* abi 12080 */
CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr); /* abi 12080 */
CUresult cuMemPoolImportPointer(CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData); /* abi 12080 */
CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location, CUmemAllocationType type); /* abi 13000 */
CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type); /* abi 13000 */
CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool); /* abi 13000 */
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags); /* abi 12080 */
CUresult cuMemRelease(CUmemGenericAllocationHandle handle); /* abi 12080 */
CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags); /* abi 12080 */
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size); /* abi 12080 */
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags); /* abi 12080 */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size); /* abi 12080 */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count); /* abi 12080 */
CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr); /* abi 12080 */
CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option); /* abi 12080 */
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle); /* abi 12080 */
CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType, unsigned long long flags); /* abi 12080 */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle, CUmemAllocationHandleType shHandleType); /* abi 12080 */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr); /* abi 12080 */
CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr); /* abi 12080 */
CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags); /* abi 12080 */
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr); /* abi 12080 */
CUresult cuModuleLoadData(CUmodule *module, const void *image); /* abi 12080 */
CUresult cuModuleUnload(CUmodule hmod); /* abi 12080 */
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name); /* abi 12080 */
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions); /* abi 12080 */
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions); /* abi 12080 */
CUresult cuLibraryUnload(CUlibrary library); /* abi 12080 */
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name); /* abi 12080 */
CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library); /* abi 12080 */
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name); /* abi 12080 */
CUresult cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib); /* abi 12040 */
CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib); /* abi 12040 */
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel); /* abi 12080 */
CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev); /* abi 12080 */
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev); /* abi 12080 */
CUresult cuKernelGetName(const char **name, CUkernel hfunc); /* abi 12030 */
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize); /* abi 12040 */
CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel); /* abi 12050 */
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc); /* abi 12080 */
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value); /* abi 12080 */
CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc); /* abi 12080 */
CUresult cuFuncGetName(const char **name, CUfunction hfunc); /* abi 12030 */
CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize); /* abi 12040 */
CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues, CUlinkState *stateOut); /* abi 12080 */
CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name, unsigned int numOptions, CUjit_option *options, void **optionValues); /* abi 12080 */
CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions, CUjit_option *options, void **optionValues); /* abi 12080 */
CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut); /* abi 12080 */
CUresult cuLinkDestroy(CUlinkState state); /* abi 12080 */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize); /* abi 12080 */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags); /* abi 12080 */
CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func, CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit); /* abi 12080 */
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize); /* abi 12080 */
CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config); /* abi 12080 */
CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config); /* abi 12080 */
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra); /* abi 12080 */
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra); /* abi 12080 */
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams); /* abi 12080 */
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags); /* abi 12080 */
CUresult cuGraphDestroy(CUgraph hGraph); /* abi 12080 */
CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph); /* abi 12080 */
CUresult cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph); /* abi 12080 */
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags); /* abi 12080 */
CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams); /* abi 12080 */
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream); /* abi 12080 */
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream); /* abi 12080 */
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec); /* abi 12080 */
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo); /* abi 12080 */
CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char *path, unsigned int flags); /* abi 12080 */
CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx); /* abi 12080 */
CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx); /* abi 12080 */
CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraph childGraph); /* abi 12080 */
CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies); /* abi 12080 */
CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event); /* abi 12080 */
CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event); /* abi 12080 */
CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUdeviceptr dptr); /* abi 12080 */
CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraphNodeParams *nodeParams); /* abi 12020 */
CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams); /* abi 12080 */
CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams); /* abi 12080 */
CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle *pHandle_out, CUgraph hGraph, CUcontext ctx, unsigned int defaultLaunchValue, unsigned int flags); /* abi 12080 */
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes); /* abi 12080 */
CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes); /* abi 12080 */
CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges); /* abi 10000 */
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type); /* abi 12080 */
CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies, size_t *numDependencies); /* abi 10000 */
CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes, size_t *numDependentNodes); /* abi 10000 */
CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies); /* abi 10000 */
CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies); /* abi 10000 */
CUresult cuGraphDestroyNode(CUgraphNode hNode); /* abi 12080 */
CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams); /* abi 12080 */
CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams); /* abi 12080 */
CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out); /* abi 12080 */
CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out); /* abi 12080 */
CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph); /* abi 12080 */
CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out); /* abi 12080 */
CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event); /* abi 12080 */
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out); /* abi 12080 */
CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event); /* abi 12080 */
CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled); /* abi 12080 */
CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled); /* abi 12080 */
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D *copyParams, CUcontext ctx); /* abi 12080 */
CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx); /* abi 12080 */
CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams); /* abi 12080 */
CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph); /* abi 12080 */
CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event); /* abi 12080 */
CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event); /* abi 12080 */
CUresult cuUserObjectCreate(CUuserObject *object_out, void *ptr, CUhostFn destroy, unsigned int initialRefcount, unsigned int flags); /* abi 12080 */
CUresult cuUserObjectRelease(CUuserObject object, unsigned int count); /* abi 12080 */
CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags); /* abi 12080 */
CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count); /* abi 12080 */

/* Batched memory operations.  cuMemcpyBatchAsync is declared in its CUDA 12.8
   variant, whose failIdx out-parameter reports the index of the copy that
   failed (SIZE_MAX when the failure concerns no single copy); CUDA 13.0
   headers map the name to cuMemcpyBatchAsync_v2, which drops failIdx.  The
   prefetch and discard batches are CUDA 13.0 entry points; flags must be 0
   and none of them accepts the legacy NULL stream. */
CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count, CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream hStream); /* abi 12080 */
CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream); /* abi 13000 */
CUresult cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, unsigned long long flags, CUstream hStream); /* abi 13000 */
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs, size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags, CUstream hStream); /* abi 13000 */
/* One copy with batch-copy attributes (CUDA 13.2): Buffer.copy_to/copy_from
   with options. */
CUresult cuMemcpyWithAttributesAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUmemcpyAttributes *attr, CUstream hStream); /* abi 13020 */

/* Textures, surfaces, CUDA arrays and TMA tensor maps (cuda_core.texture,
   cuda_core._tensor_map). */
CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray); /* abi 12080 */
CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray); /* abi 12080 */
CUresult cuArrayDestroy(CUarray hArray); /* abi 12080 */
CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc, unsigned int numMipmapLevels); /* abi 12080 */
CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level); /* abi 12080 */
CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray); /* abi 12080 */
CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream); /* abi 12080 */
CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc, const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc); /* abi 12080 */
CUresult cuTexObjectDestroy(CUtexObject texObject); /* abi 12080 */
CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc); /* abi 12080 */
CUresult cuSurfObjectDestroy(CUsurfObject surfObject); /* abi 12080 */
CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const cuuint32_t *boxDim, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill); /* abi 12080 */
CUresult cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner, const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill); /* abi 12080 */
CUresult cuTensorMapEncodeIm2colWide(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim, const cuuint64_t *globalStrides, int pixelBoxLowerCornerWidth, int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides, CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill); /* abi 12080 */
CUresult cuTensorMapReplaceAddress(CUtensorMap *tensorMap, void *globalAddress); /* abi 12080 */

/* --- Green contexts and device resources, checkpoint, OpenGL interop.
   cuGraphicsGL* are declared in cudaGL.h (their PFN types in
   cudaGLTypedefs.h), with GLuint and GLenum, which are unsigned int. --- */
CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, CUdevResourceType type); /* abi 12040 */
CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource *resource, CUdevResourceType type); /* abi 12040 */
CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *resource, CUdevResourceType type); /* abi 12040 */
CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups, const CUdevResource *input, CUdevResource *remaining, unsigned int useFlags, unsigned int minCount); /* abi 12040 */
CUresult cuDevSmResourceSplit(CUdevResource *result, unsigned int nbGroups, const CUdevResource *input, CUdevResource *remainder, unsigned int flags, CU_DEV_SM_RESOURCE_GROUP_PARAMS *groupParams); /* abi 13010 */
CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources, unsigned int nbResources); /* abi 12040 */
CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags); /* abi 12040 */
CUresult cuGreenCtxDestroy(CUgreenCtx hCtx); /* abi 12040 */
CUresult cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx); /* abi 12040 */
CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags, int priority); /* abi 12050 */
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid); /* abi 12080 */
CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state); /* abi 12080 */
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args); /* abi 12080 */
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args); /* abi 12080 */
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args); /* abi 12080 */
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args); /* abi 12080 */
CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource *pCudaResource, unsigned int buffer, unsigned int Flags); /* abi 12080 */
CUresult cuGraphicsGLRegisterImage(CUgraphicsResource *pCudaResource, unsigned int image, unsigned int target, unsigned int Flags); /* abi 12080 */
CUresult cuGraphicsUnregisterResource(CUgraphicsResource resource); /* abi 12080 */
CUresult cuGraphicsMapResources(unsigned int count, CUgraphicsResource *resources, CUstream hStream); /* abi 12080 */
CUresult cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource *resources, CUstream hStream); /* abi 12080 */
CUresult cuGraphicsResourceGetMappedPointer_v2(CUdeviceptr *pDevPtr, size_t *pSize, CUgraphicsResource resource); /* abi 12080 */
