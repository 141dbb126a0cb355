/* Memory: the DLPack PyCapsule bridge and the pool allocation fast path.

   DLPack tensors travel in PyCapsule objects, which only the Python C API
   can make or open (CPython has ctypes.pythonapi, PyPy does not); these
   helpers do it in C on both interpreters.  They take the GIL themselves
   (PyGILState_Ensure) and exchange objects with cuda_core._memory._dlpack
   through its bridge dict, keyed by a token, which that module registers
   at import (cc_dlpack_set_bridge).  This file and dlpack_exchange.c are
   the only places where the C layer touches Python objects.

   Part of the one cuda_core._cuda_ffi source (see build_ffi.py for the
   order); declarations in cffi_src/cdefs/cuda_core.h, DLPack types in
   cffi_src/cdefs/dlpack.h.  The DLPack C exchange API that hands these
   tensors to other extensions without Python calls is in dlpack_exchange.c. */

#include <Python.h>
#include <stdlib.h>

/* The DLPack version of the tensors this extension makes. */
#define CC_DLPACK_MAJOR 1
#define CC_DLPACK_MINOR 3

/* The bridge dict (strong reference), registered once by the Python module
   that owns it (cuda_core._memory._dlpack) through cc_dlpack_set_bridge. */
static PyObject *cc_dlpack_bridge_dict = NULL;

/* Register the dict ``attr`` of the module ``module`` (found in sys.modules,
   so a module registers itself while it is being imported, passing its own
   __name__) as the bridge.  Returns 0, or -1 when there is no such module or
   the attribute is not a dict; a previous registration is then kept. */
int cc_dlpack_set_bridge(const char *module, const char *attr) {
    int rc = -1;
    PyObject *mod, *d;
    PyGILState_STATE st = PyGILState_Ensure();
    mod = PyDict_GetItemString(PyImport_GetModuleDict(), module);   /* borrowed */
    d = mod != NULL ? PyObject_GetAttrString(mod, attr) : NULL;
    if (d != NULL && PyDict_Check(d)) {
        Py_XDECREF(cc_dlpack_bridge_dict);
        cc_dlpack_bridge_dict = d;
        rc = 0;
    } else {
        Py_XDECREF(d);
    }
    PyErr_Clear();
    PyGILState_Release(st);
    return rc;
}

static void cc_dlpack_drop_owner(void *owner) {
    PyGILState_STATE st;
    PyObject *type, *value, *tb;
    if (owner == NULL || !Py_IsInitialized()) return;   /* leak at exit */
    st = PyGILState_Ensure();
    PyErr_Fetch(&type, &value, &tb);
    Py_DECREF((PyObject *)owner);
    PyErr_Restore(type, value, tb);
    PyGILState_Release(st);
}

static void cc_dlpack_deleter(DLManagedTensor *self) {
    if (self == NULL) return;
    cc_dlpack_drop_owner(self->manager_ctx);
    self->manager_ctx = NULL;
    free(self);
}

static void cc_dlpack_deleter_versioned(DLManagedTensorVersioned *self) {
    if (self == NULL) return;
    cc_dlpack_drop_owner(self->manager_ctx);
    self->manager_ctx = NULL;
    free(self);
}

/* Destructor of an exported capsule: only an unconsumed tensor is ours. */
static void cc_dlpack_capsule_destructor(PyObject *capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *t = (DLManagedTensor *)PyCapsule_GetPointer(capsule, "dltensor");
        if (t != NULL && t->deleter != NULL) t->deleter(t);
    } else if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *t =
            (DLManagedTensorVersioned *)PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (t != NULL && t->deleter != NULL) t->deleter(t);
    }
}

/* Replace bridge[token] (the owner to keep alive) by a new DLPack capsule.
   strides may be NULL (C-contiguous, not stated). */
int cc_dlpack_export(long long token, int versioned, void *data, int32_t device_type,
                     int32_t device_id, int32_t ndim, uint8_t code, uint8_t bits,
                     uint16_t lanes, const int64_t *shape, const int64_t *strides,
                     uint64_t flags) {
    int rc = -1;
    int32_t i;
    size_t head = versioned ? sizeof(DLManagedTensorVersioned) : sizeof(DLManagedTensor);
    PyObject *d, *key = NULL, *owner, *capsule = NULL;
    void *block = NULL;
    int64_t *dims;
    DLTensor *t;
    PyGILState_STATE st;
    if (ndim < 0) return -1;
    st = PyGILState_Ensure();
    d = cc_dlpack_bridge_dict;
    if (d == NULL) goto out;
    key = PyLong_FromLongLong(token);
    if (key == NULL) goto out;
    owner = PyDict_GetItem(d, key);   /* borrowed */
    if (owner == NULL) goto out;
    block = calloc(1, head + 2 * (size_t)ndim * sizeof(int64_t));
    if (block == NULL) goto out;
    dims = (int64_t *)((char *)block + head);
    for (i = 0; i < ndim; i++) {
        dims[i] = shape[i];
        dims[ndim + i] = strides != NULL ? strides[i] : 0;
    }
    if (versioned) {
        DLManagedTensorVersioned *v = (DLManagedTensorVersioned *)block;
        v->version.major = CC_DLPACK_MAJOR;
        v->version.minor = CC_DLPACK_MINOR;
        v->manager_ctx = owner;
        v->deleter = cc_dlpack_deleter_versioned;
        v->flags = flags;
        t = &v->dl_tensor;
    } else {
        DLManagedTensor *m = (DLManagedTensor *)block;
        m->manager_ctx = owner;
        m->deleter = cc_dlpack_deleter;
        t = &m->dl_tensor;
    }
    t->data = data;
    t->device.device_type = device_type;
    t->device.device_id = device_id;
    t->ndim = ndim;
    t->dtype.code = code;
    t->dtype.bits = bits;
    t->dtype.lanes = lanes;
    t->shape = ndim ? dims : NULL;
    t->strides = (ndim && strides != NULL) ? dims + ndim : NULL;
    t->byte_offset = 0;
    Py_INCREF(owner);
    capsule = PyCapsule_New(block, versioned ? "dltensor_versioned" : "dltensor",
                            cc_dlpack_capsule_destructor);
    if (capsule == NULL) {
        Py_DECREF(owner);
        free(block);
        goto out;
    }
    if (PyDict_SetItem(d, key, capsule) == 0) rc = 0;
out:
    Py_XDECREF(capsule);   /* on failure its destructor frees the tensor */
    Py_XDECREF(key);
    if (rc != 0) PyErr_Clear();
    PyGILState_Release(st);
    return rc;
}

/* Consume the capsule in bridge[token]: rename it "used_..." and return the
   managed tensor (the caller must cc_dlpack_release it), or NULL. */
void *cc_dlpack_take(long long token, int *versioned) {
    void *p = NULL;
    PyObject *d, *key, *capsule;
    PyGILState_STATE st = PyGILState_Ensure();
    d = cc_dlpack_bridge_dict;
    key = d != NULL ? PyLong_FromLongLong(token) : NULL;
    capsule = key != NULL ? PyDict_GetItem(d, key) : NULL;   /* borrowed */
    if (capsule != NULL) {
        if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
            p = PyCapsule_GetPointer(capsule, "dltensor_versioned");
            if (p != NULL && PyCapsule_SetName(capsule, "used_dltensor_versioned") != 0) p = NULL;
            *versioned = 1;
        } else if (PyCapsule_IsValid(capsule, "dltensor")) {
            p = PyCapsule_GetPointer(capsule, "dltensor");
            if (p != NULL && PyCapsule_SetName(capsule, "used_dltensor") != 0) p = NULL;
            *versioned = 0;
        }
    }
    Py_XDECREF(key);
    PyErr_Clear();
    PyGILState_Release(st);
    return p;
}

/* Call the producer's deleter of a consumed tensor (with the GIL held). */
void cc_dlpack_release(void *tensor, int versioned) {
    PyGILState_STATE st;
    if (tensor == NULL || !Py_IsInitialized()) return;
    st = PyGILState_Ensure();
    if (versioned) {
        DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)tensor;
        if (t->deleter != NULL) t->deleter(t);
    } else {
        DLManagedTensor *t = (DLManagedTensor *)tensor;
        if (t->deleter != NULL) t->deleter(t);
    }
    PyGILState_Release(st);
}

/* Stream-ordered pool allocation in one call: refuses a capturing stream.
   Returns the pointer, or 0 with the status kept for cc_pool_alloc_status.
   A size of 0 returns 0 at once, with no driver call and CUDA_SUCCESS kept
   (the caller then makes an empty Buffer), so that the caller's fast path
   need not test for it.
   The address is returned as a signed word (like cc_last_handle's): PyPy
   turns a signed 64-bit result into a machine-word int, but an unsigned one
   into a big-integer object that is slower everywhere the address is used
   next.  Device addresses are user-space addresses, below 2**63. */
static __thread CUresult cc_pool_status;

intptr_t cc_pool_alloc(size_t size, CUmemoryPool pool, CUstream stream) {
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    CUdeviceptr p = 0;
    CUresult r;
    if (size == 0) {
        cc_pool_status = CUDA_SUCCESS;
        return 0;
    }
    r = cuStreamIsCapturing(stream, &cs);
    if (r == CUDA_SUCCESS && cs != CU_STREAM_CAPTURE_STATUS_NONE) r = (CUresult)CC_STREAM_CAPTURING;
    if (r == CUDA_SUCCESS) r = cuMemAllocFromPoolAsync(&p, size, pool, stream);
    if (r != CUDA_SUCCESS) p = 0;
    cc_pool_status = r;
    return (intptr_t)p;
}

CUresult cc_pool_alloc_status(void) { return cc_pool_status; }
