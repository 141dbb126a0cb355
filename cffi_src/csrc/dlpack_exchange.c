/* The DLPack C exchange API (DLPack 1.3) of StridedMemoryView.

   Other extensions find a DLPackExchangeAPI struct through the
   __dlpack_c_exchange_api__ class attribute (a PyCapsule named
   "dlpack_exchange_api", made here) and call its function pointers to trade
   tensors with views without going through __dlpack__.  The struct is
   static: it lives as long as the process, so the capsule has no destructor.

   The work that needs a view's Python-level state is done by three Python
   functions that cuda_core.utils registers in the DLPack bridge dict (see
   memory.c) under the names below; these C entry points take the GIL, call
   them, and hand objects and tensors across.  As dlpack.h asks, each
   returns 0, or -1 with a Python exception set.

   Also here: cc_pyobject_new_ref, cc_pyobject_steal and cc_pyerr_take,
   which let Python code on either interpreter hold a PyObject * (and read
   the exception a C call left), e.g. to call the exchange API through cffi.

   Part of the one cuda_core._cuda_ffi source, after memory.c (whose bridge
   dict, capsule destructor and version constants it uses); declarations in
   cffi_src/cdefs/cuda_core.h and cffi_src/cdefs/dlpack.h. */

#define CC_HOOK_TO_TENSOR "smv_to_managed_tensor"
#define CC_HOOK_FILL_DLTENSOR "smv_fill_dltensor"
#define CC_HOOK_FROM_CAPSULE "smv_from_capsule"

/* bridge[name] (borrowed), or NULL with RuntimeError set.  GIL held. */
static PyObject *cc_exchange_hook(const char *name) {
    PyObject *fn = NULL;
    if (cc_dlpack_bridge_dict != NULL) fn = PyDict_GetItemString(cc_dlpack_bridge_dict, name);
    if (fn == NULL)
        PyErr_Format(PyExc_RuntimeError, "the DLPack exchange function %s is not registered",
                     name);
    return fn;
}

static int cc_smv_managed_tensor_allocator(
    DLTensor *prototype, DLManagedTensorVersioned **out, void *error_ctx,
    void (*SetError)(void *error_ctx, const char *kind, const char *message)) {
    static const char msg[] = "managed_tensor_allocator is not supported by StridedMemoryView";
    PyGILState_STATE st;
    (void)prototype;
    if (out != NULL) *out = NULL;
    /* dlpack.h leaves taking the GIL to SetError; calling it without holding
       the GIL also keeps PyPy's cffi callbacks from re-entering it. */
    if (SetError != NULL) SetError(error_ctx, "NotImplementedError", msg);
    st = PyGILState_Ensure();
    PyErr_SetString(PyExc_NotImplementedError, msg);
    PyGILState_Release(st);
    return -1;
}

/* A new versioned managed tensor describing the view py_object (the tensor
   keeps the view alive until its deleter runs). */
static int cc_smv_managed_tensor_from_py_object(void *py_object,
                                                DLManagedTensorVersioned **out) {
    int rc = -1;
    PyObject *fn, *capsule = NULL;
    void *tensor;
    PyGILState_STATE st = PyGILState_Ensure();
    if (out == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "out cannot be NULL");
        goto done;
    }
    *out = NULL;
    if (py_object == NULL) {
        PyErr_SetString(PyExc_TypeError, "py_object must be a StridedMemoryView");
        goto done;
    }
    fn = cc_exchange_hook(CC_HOOK_TO_TENSOR);
    if (fn == NULL) goto done;
    capsule = PyObject_CallFunctionObjArgs(fn, (PyObject *)py_object, NULL);
    if (capsule == NULL) goto done;
    tensor = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    /* Renamed, the capsule no longer owns the tensor: the caller does. */
    if (tensor == NULL || PyCapsule_SetName(capsule, "used_dltensor_versioned") != 0) goto done;
    *out = (DLManagedTensorVersioned *)tensor;
    rc = 0;
done:
    Py_XDECREF(capsule);
    PyGILState_Release(st);
    return rc;
}

/* A new view (new reference) of the tensor, which it takes over: the view's
   exporting_obj is a consumed capsule holding it.  On failure the tensor's
   deleter has run. */
static int cc_smv_managed_tensor_to_py_object(DLManagedTensorVersioned *tensor,
                                              void **out_py_object) {
    int rc = -1;
    PyObject *fn, *capsule, *view;
    PyGILState_STATE st = PyGILState_Ensure();
    if (out_py_object == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "out_py_object cannot be NULL");
        goto done;
    }
    *out_py_object = NULL;
    if (tensor == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tensor cannot be NULL");
        goto done;
    }
    fn = cc_exchange_hook(CC_HOOK_FROM_CAPSULE);
    if (fn == NULL) goto done;
    capsule = PyCapsule_New(tensor, "dltensor_versioned", cc_dlpack_capsule_destructor);
    if (capsule == NULL) goto done;
    view = PyObject_CallFunctionObjArgs(fn, capsule, NULL);
    Py_DECREF(capsule);   /* the view keeps it; on failure this runs the deleter */
    if (view == NULL) goto done;
    *out_py_object = view;
    rc = 0;
done:
    PyGILState_Release(st);
    return rc;
}

/* Fill a caller-owned DLTensor that borrows the view's memory and its
   shape/stride arrays (valid while the view lives). */
static int cc_smv_dltensor_from_py_object(void *py_object, DLTensor *out) {
    int rc = -1;
    PyObject *fn, *address = NULL, *r;
    PyGILState_STATE st = PyGILState_Ensure();
    if (out == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "out cannot be NULL");
        goto done;
    }
    if (py_object == NULL) {
        PyErr_SetString(PyExc_TypeError, "py_object must be a StridedMemoryView");
        goto done;
    }
    fn = cc_exchange_hook(CC_HOOK_FILL_DLTENSOR);
    if (fn == NULL) goto done;
    address = PyLong_FromVoidPtr(out);
    if (address == NULL) goto done;
    r = PyObject_CallFunctionObjArgs(fn, (PyObject *)py_object, address, NULL);
    if (r == NULL) goto done;
    Py_DECREF(r);
    rc = 0;
done:
    Py_XDECREF(address);
    PyGILState_Release(st);
    return rc;
}

/* cuda_core keeps no current stream: always NULL. */
static int cc_smv_current_work_stream(int32_t device_type, int32_t device_id,
                                      void **out_current_stream) {
    PyGILState_STATE st;
    (void)device_type;
    (void)device_id;
    if (out_current_stream != NULL) {
        *out_current_stream = NULL;
        return 0;
    }
    st = PyGILState_Ensure();
    PyErr_SetString(PyExc_RuntimeError, "out_current_stream cannot be NULL");
    PyGILState_Release(st);
    return -1;
}

static DLPackExchangeAPI cc_smv_exchange_api = {
    {{CC_DLPACK_MAJOR, CC_DLPACK_MINOR}, NULL},
    cc_smv_managed_tensor_allocator,
    cc_smv_managed_tensor_from_py_object,
    cc_smv_managed_tensor_to_py_object,
    cc_smv_dltensor_from_py_object,
    cc_smv_current_work_stream,
};

/* The address of the process-lifetime exchange API struct. */
void *cc_dlpack_exchange_api(void) { return &cc_smv_exchange_api; }

/* Put a new "dlpack_exchange_api" capsule (no destructor) in bridge[token].
   Returns 0, or -1. */
int cc_dlpack_exchange_api_capsule(long long token) {
    int rc = -1;
    PyObject *key = NULL, *capsule = NULL;
    PyGILState_STATE st = PyGILState_Ensure();
    if (cc_dlpack_bridge_dict == NULL) goto done;
    key = PyLong_FromLongLong(token);
    if (key == NULL) goto done;
    capsule = PyCapsule_New(&cc_smv_exchange_api, "dlpack_exchange_api", NULL);
    if (capsule == NULL) goto done;
    if (PyDict_SetItem(cc_dlpack_bridge_dict, key, capsule) == 0) rc = 0;
done:
    Py_XDECREF(capsule);
    Py_XDECREF(key);
    if (rc != 0) PyErr_Clear();
    PyGILState_Release(st);
    return rc;
}

/* A new reference to bridge[token] as a PyObject *, or NULL. */
void *cc_pyobject_new_ref(long long token) {
    PyObject *key, *obj = NULL;
    PyGILState_STATE st = PyGILState_Ensure();
    key = cc_dlpack_bridge_dict != NULL ? PyLong_FromLongLong(token) : NULL;
    if (key != NULL) obj = PyDict_GetItem(cc_dlpack_bridge_dict, key);   /* borrowed */
    Py_XINCREF(obj);
    Py_XDECREF(key);
    PyErr_Clear();
    PyGILState_Release(st);
    return obj;
}

/* Store obj (a PyObject *) in bridge[token], taking over the caller's
   reference (released even on failure).  Returns 0, or -1. */
int cc_pyobject_steal(long long token, void *obj) {
    int rc = -1;
    PyObject *key;
    PyGILState_STATE st;
    if (obj == NULL) return -1;
    st = PyGILState_Ensure();
    key = cc_dlpack_bridge_dict != NULL ? PyLong_FromLongLong(token) : NULL;
    if (key != NULL && PyDict_SetItem(cc_dlpack_bridge_dict, key, (PyObject *)obj) == 0) rc = 0;
    Py_XDECREF(key);
    Py_DECREF((PyObject *)obj);
    PyErr_Clear();
    PyGILState_Release(st);
    return rc;
}

/* Move the Python exception pending in this thread (if any) into
   bridge[token].  Returns 1 if there was one, else 0. */
int cc_pyerr_take(long long token) {
    int rc = 0;
    PyObject *type, *value, *tb, *key;
    PyGILState_STATE st = PyGILState_Ensure();
    PyErr_Fetch(&type, &value, &tb);
    if (type != NULL) {
        PyErr_NormalizeException(&type, &value, &tb);
        if (value != NULL && tb != NULL) PyException_SetTraceback(value, tb);
        key = cc_dlpack_bridge_dict != NULL ? PyLong_FromLongLong(token) : NULL;
        if (key != NULL && value != NULL) PyDict_SetItem(cc_dlpack_bridge_dict, key, value);
        Py_XDECREF(key);
        rc = 1;
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    PyGILState_Release(st);
    return rc;
}
