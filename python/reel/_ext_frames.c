/* _ext_frames.c: the Frames array type (own memory or a view kept alive by a
 * base object), its buffer protocol (CPython >= 3.11), __array_interface__
 * and its DLPack export (0.8 and 1.0). */
#include "_ext.h"

/* ======================================================================
 * DLPack, defined here from the public specification (no dlpack.h):
 * the 0.8 layout ("dltensor" capsules) and the 1.0 versioned one
 * ("dltensor_versioned"), chosen by the consumer's max_version.
 * ====================================================================== */

enum { kDLCPU = 1 };

typedef struct DLDevice {
    int32_t device_type; /* DLDeviceType, an int-sized enum */
    int32_t device_id;
} DLDevice;

typedef struct DLDataType {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct DLTensor {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLPackVersion {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;


const rx_dtype_info dtype_table[DT_COUNT] = {
    [DT_UINT8] = { "uint8", 1, kDLUInt, "B" },      [DT_FLOAT32] = { "float32", 4, kDLFloat, "f" },
    [DT_FLOAT16] = { "float16", 2, kDLFloat, "e" }, [DT_BFLOAT16] = { "bfloat16", 2, kDLBfloat, NULL },
    [DT_UINT16] = { "uint16", 2, kDLUInt, "H" },    [DT_INT64] = { "int64", 8, kDLInt, "q" },
};

int rx_frames_set_shape(FramesObject *f, int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > REEL_PY_MAXDIM) {
        PyErr_Format(PyExc_ValueError, "reel.Frames: %d dimensions (at most %d)", ndim, REEL_PY_MAXDIM);
        return -1;
    }
    size_t n = (size_t)dtype_table[f->dtype].itemsize;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > SIZE_MAX / (size_t)shape[i]) ||
            (uint64_t)shape[i] > (uint64_t)PY_SSIZE_T_MAX) {
            PyErr_SetString(PyExc_OverflowError, "reel.Frames: shape too large");
            return -1;
        }
        n *= (size_t)shape[i];
    }
    if (n > (size_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_OverflowError, "reel.Frames: shape too large");
        return -1;
    }
    f->ndim = ndim;
    Py_ssize_t stride = dtype_table[f->dtype].itemsize;
    for (int i = ndim - 1; i >= 0; i--) {
        f->shape[i] = shape[i];
        f->bshape[i] = (Py_ssize_t)shape[i];
        f->bstrides[i] = stride;
        stride *= (Py_ssize_t)(shape[i] ? shape[i] : 1);
    }
    f->nbytes = n;
    return 0;
}

/* A new array owning zero-filled-not memory for `shape` (uninitialised). */
FramesObject *frames_alloc(reel_state *st, int dtype, int ndim, const int64_t *shape)
{
    FramesObject *f = (FramesObject *)rx_type_alloc(st->FramesType);
    if (!f) return NULL;
    f->dtype = dtype;
    if (rx_frames_set_shape(f, ndim, shape) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    void *p = rx_pool_alloc(&st->pool, f->nbytes);
    if (!p) {
        const size_t bytes = f->nbytes;
        Py_DECREF(f);
        PyErr_Format(PyExc_MemoryError, "reel: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    f->alloc = p;
    f->data = p;
    return f;
}

/* A view of `data`, kept alive by `base` (a new reference is taken). */
FramesObject *frames_view(reel_state *st, PyObject *base, void *data, int dtype, int ndim, const int64_t *shape)
{
    FramesObject *f = (FramesObject *)rx_type_alloc(st->FramesType);
    if (!f) return NULL;
    f->dtype = dtype;
    if (rx_frames_set_shape(f, ndim, shape) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    f->data = data;
    f->base = Py_NewRef(base);
    return f;
}

static void frames_dealloc(FramesObject *self)
{
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    if (self->alloc) { /* the type holds its module, so the state outlives every array */
        reel_state *st = PyType_GetModuleState(Py_TYPE(self));
        rx_pool_free(st ? &st->pool : NULL, self->alloc, self->nbytes);
    }
    if (!self->dev_borrowed) reel_device_buffer_free(&self->dev);
    Py_XDECREF(self->base);
    Py_XDECREF(self->indices);
    Py_XDECREF(self->pts);
    Py_XDECREF(self->dur);
    Py_XDECREF(self->layout);
    Py_XDECREF(self->dist);
    Py_XDECREF(self->within);
    rx_type_free((PyObject *)self);
}

PyObject *frames_new_forbidden(PyTypeObject *tp, PyObject *a, PyObject *k)
{
    (void)a;
    (void)k;
    PyObject *name = rx_type_name_of(tp);
    if (name) PyErr_Format(PyExc_TypeError, "cannot create '%U' instances directly", name);
    Py_XDECREF(name);
    return NULL;
}

static PyObject *frames_shape_tuple(FramesObject *self)
{
    PyObject *t = PyTuple_New(self->ndim);
    if (!t) return NULL;
    for (int i = 0; i < self->ndim; i++) {
        PyObject *v = PyLong_FromLongLong(self->shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SetItem(t, i, v); /* steals v; t is new: cannot fail */
    }
    return t;
}

static PyObject *frames_get_shape(FramesObject *self, void *c)
{
    (void)c;
    return frames_shape_tuple(self);
}
static PyObject *frames_get_dtype(FramesObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(dtype_table[self->dtype].name);
}
static PyObject *frames_get_ndim(FramesObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->ndim);
}
static PyObject *frames_get_nbytes(FramesObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(self->nbytes);
}
static PyObject *frames_get_itemsize(FramesObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(dtype_table[self->dtype].itemsize);
}
static PyObject *frames_get_data_ptr(FramesObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(self->data);
}
static PyObject *frames_get_device(FramesObject *self, void *c)
{
    (void)c;
    if (self->gpu) return PyUnicode_FromFormat("cuda:%d", self->gpu_index);
    return PyUnicode_FromString("cpu");
}
static PyObject *frames_get_owns(FramesObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->alloc != NULL);
}
#define META_GETTER(fn, field)                                 \
    static PyObject *fn(FramesObject *self, void *c)           \
    {                                                          \
        (void)c;                                               \
        return Py_NewRef(self->field ? self->field : Py_None); \
    }
META_GETTER(frames_get_indices, indices)
META_GETTER(frames_get_pts, pts)
META_GETTER(frames_get_dur, dur)
META_GETTER(frames_get_layout, layout)
META_GETTER(frames_get_dist, dist)
META_GETTER(frames_get_within, within)

/* numpy's array interface (version 3), the zero-copy way in for numpy and
 * torch.as_tensor where the buffer protocol is not (CPython 3.10); numpy
 * keeps this object as the array's base. */
static PyObject *frames_get_array_interface(FramesObject *self, void *c)
{
    (void)c;
    if (self->gpu) return rx_gpu_refuse(self, "__array_interface__");
    const rx_dtype_info *dt = &dtype_table[self->dtype];
    char kind = dt->dl_code == kDLUInt ? 'u' : dt->dl_code == kDLInt ? 'i' : dt->dl_code == kDLFloat ? 'f' : 0;
    if (!kind) {
        PyErr_Format(PyExc_TypeError, "%s has no array-interface type: use __dlpack__ (torch.from_dlpack)", dt->name);
        return NULL;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    char order = dt->itemsize == 1 ? '|' : '>';
#else
    char order = dt->itemsize == 1 ? '|' : '<';
#endif
    char typestr[8];
    snprintf(typestr, sizeof typestr, "%c%c%d", order, kind, dt->itemsize);
    PyObject *shape = frames_shape_tuple(self);
    PyObject *ptr = shape ? PyLong_FromVoidPtr(self->data) : NULL;
    PyObject *r = NULL;
    if (ptr)
        r = Py_BuildValue("{s:O,s:s,s:(O,O),s:O,s:i}", "shape", shape, "typestr", typestr, "data", ptr, Py_False,
                          "strides", Py_None, "version", 3);
    Py_XDECREF(shape);
    Py_XDECREF(ptr);
    return r;
}

static PyGetSetDef frames_getset[] = {
    { "shape", (getter)frames_get_shape, NULL, "The shape, a tuple of ints.", NULL },
    { "dtype", (getter)frames_get_dtype, NULL,
      "Element type: 'uint8', 'uint16', 'float32', 'float16', 'bfloat16' or 'int64'.", NULL },
    { "ndim", (getter)frames_get_ndim, NULL, "Number of dimensions.", NULL },
    { "nbytes", (getter)frames_get_nbytes, NULL, "Size of the data in bytes.", NULL },
    { "itemsize", (getter)frames_get_itemsize, NULL, "Bytes per element.", NULL },
    { "data_ptr", (getter)frames_get_data_ptr, NULL, "Address of the first element (C-contiguous data).", NULL },
    { "device", (getter)frames_get_device, NULL, "Always 'cpu'.", NULL },
    { "owns_data", (getter)frames_get_owns, NULL, "True if this object allocated its memory; False for a view.", NULL },
    { "indices", (getter)frames_get_indices, NULL,
      "Frame indices (an int, a list, or a list of lists for clips), or None.", NULL },
    { "pts_seconds", (getter)frames_get_pts, NULL, "Presentation times in seconds, shaped like indices, or None.",
      NULL },
    { "duration_seconds", (getter)frames_get_dur, NULL, "Frame durations in seconds, shaped like indices, or None.",
      NULL },
    { "distance_seconds", (getter)frames_get_dist, NULL,
      "Frames by timestamp (get_frames_near, decode_near): |t - pts| of each frame in seconds, shaped like indices; "
      "else None.",
      NULL },
    { "within_tolerance", (getter)frames_get_within, NULL,
      "Frames by timestamp: whether each frame lies within the tolerance of its time (False only under "
      "on_violation='flag'), shaped like indices; else None.",
      NULL },
    { "__array_interface__", (getter)frames_get_array_interface, NULL,
      "numpy's array interface (zero-copy; np.asarray, torch.as_tensor).", NULL },
    { "layout", (getter)frames_get_layout, NULL, "Dimension names, e.g. 'NCHW', 'NTHWC', 'BTCHW'; None if not images.",
      NULL },
    { NULL }
};

/* ---- DLPack export ----------------------------------------------------- */

typedef struct dl_legacy {
    DLManagedTensor m; /* first: the managed tensor's address is the block's */
    int64_t shape[REEL_PY_MAXDIM];
    int64_t strides[REEL_PY_MAXDIM];
} dl_legacy;

typedef struct dl_versioned {
    DLManagedTensorVersioned m;
    int64_t shape[REEL_PY_MAXDIM];
    int64_t strides[REEL_PY_MAXDIM];
} dl_versioned;

/* Drops the reference that kept the memory alive. Consumers may call the
 * deleter from any thread, with or without the GIL. At interpreter
 * shutdown the reference is left (a leak at exit beats a crash). */
static void dl_release_owner(void *owner)
{
    if (!owner || !Py_IsInitialized() || rx_py_exiting()) return;
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)owner);
    PyGILState_Release(g);
}

static void dl_deleter_legacy(DLManagedTensor *m)
{
    dl_release_owner(m->manager_ctx);
    free(m);
}

static void dl_deleter_versioned(DLManagedTensorVersioned *m)
{
    dl_release_owner(m->manager_ctx);
    free(m);
}

/* Capsule destructors: a consumer that took the tensor renamed the capsule
 * ("used_..."), and then owns the deleter call. */
static void dl_capsule_legacy(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "used_dltensor") || !PyCapsule_IsValid(cap, "dltensor")) return;
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->deleter) m->deleter(m);
}

static void dl_capsule_versioned(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "used_dltensor_versioned") || !PyCapsule_IsValid(cap, "dltensor_versioned")) return;
    DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (m && m->deleter) m->deleter(m);
}

static void dl_fill(DLTensor *t, FramesObject *f, int64_t *shape, int64_t *strides)
{
    t->data = f->data;
    t->device.device_type = f->gpu ? 2 /* kDLCUDA */ : kDLCPU;
    t->device.device_id = f->gpu ? f->gpu_index : 0;
    t->ndim = f->ndim;
    t->dtype.code = dtype_table[f->dtype].dl_code;
    t->dtype.bits = (uint8_t)(8 * dtype_table[f->dtype].itemsize);
    t->dtype.lanes = 1;
    int64_t s = 1;
    for (int i = f->ndim - 1; i >= 0; i--) {
        shape[i] = f->shape[i];
        strides[i] = s;
        s *= f->shape[i] ? f->shape[i] : 1;
    }
    t->shape = shape;
    t->strides = strides;
    t->byte_offset = 0;
}

static PyObject *frames_copy_impl(FramesObject *self);

static PyObject *frames_dlpack(FramesObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "stream", "max_version", "dl_device", "copy", NULL };
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$OOO:__dlpack__", kwlist, &stream, &max_version, &dl_device,
                                     &copy))
        return NULL;
    if (self->gpu) {
        if (dl_device != Py_None || copy == Py_True)
            return rx_gpu_refuse(self, "__dlpack__ with dl_device or copy=True");
        if (rx_gpu_wait(self, stream) < 0) return NULL;
        stream = Py_None;
    }
    if (stream != Py_None) {
        long s = PyLong_Check(stream) ? PyLong_AsLong(stream) : 0;
        if (!PyLong_Check(stream) || s != -1) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_BufferError, "reel arrays live on the CPU: __dlpack__ stream must be None");
            return NULL;
        }
    }
    if (dl_device != Py_None) {
        int dt = 0, di = 0;
        if (!PyArg_ParseTuple(dl_device, "ii:dl_device", &dt, &di)) return NULL;
        if (dt != kDLCPU || di != 0) {
            PyErr_Format(PyExc_BufferError, "reel arrays live on the CPU (1, 0); cannot export to device (%d, %d)", dt,
                         di);
            return NULL;
        }
    }
    int versioned = 0;
    if (max_version != Py_None) {
        unsigned major = 0, minor = 0;
        if (!PyArg_ParseTuple(max_version, "II:max_version", &major, &minor)) return NULL;
        versioned = major >= 1;
    }
    FramesObject *src = self;
    PyObject *tmp = NULL;
    if (copy == Py_True) {
        tmp = frames_copy_impl(self);
        if (!tmp) return NULL;
        src = (FramesObject *)tmp;
    }
    PyObject *cap = NULL;
    if (versioned) {
        dl_versioned *b = calloc(1, sizeof *b);
        if (!b) {
            Py_XDECREF(tmp);
            return PyErr_NoMemory();
        }
        b->m.version.major = REEL_DLPACK_MAJOR;
        b->m.version.minor = REEL_DLPACK_MINOR;
        b->m.flags = copy == Py_True ? (1ULL << 1) /* DLPACK_FLAG_BITMASK_IS_COPIED */ : 0;
        dl_fill(&b->m.dl_tensor, src, b->shape, b->strides);
        b->m.manager_ctx = Py_NewRef((PyObject *)src);
        b->m.deleter = dl_deleter_versioned;
        cap = PyCapsule_New(&b->m, "dltensor_versioned", dl_capsule_versioned);
        if (!cap) {
            Py_DECREF((PyObject *)src);
            free(b);
        }
    } else {
        dl_legacy *b = calloc(1, sizeof *b);
        if (!b) {
            Py_XDECREF(tmp);
            return PyErr_NoMemory();
        }
        dl_fill(&b->m.dl_tensor, src, b->shape, b->strides);
        b->m.manager_ctx = Py_NewRef((PyObject *)src);
        b->m.deleter = dl_deleter_legacy;
        cap = PyCapsule_New(&b->m, "dltensor", dl_capsule_legacy);
        if (!cap) {
            Py_DECREF((PyObject *)src);
            free(b);
        }
    }
    Py_XDECREF(tmp);
    return cap;
}

static PyObject *frames_dlpack_device(FramesObject *self, PyObject *unused)
{
    (void)unused;
    if (self->gpu) return Py_BuildValue("(ii)", 2 /* kDLCUDA */, self->gpu_index);
    return Py_BuildValue("(ii)", kDLCPU, 0);
}

static PyObject *frames_numpy(FramesObject *self, PyObject *unused)
{
    (void)unused;
    if (self->gpu) return rx_gpu_refuse(self, "numpy()");
    if (self->dtype == DT_BFLOAT16) {
        PyErr_SetString(PyExc_TypeError, "numpy has no bfloat16: use .torch(), or decode as float32/float16");
        return NULL;
    }
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return NULL;
    PyObject *r = PyObject_CallMethod(np, "from_dlpack", "O", (PyObject *)self);
    Py_DECREF(np);
    return r;
}

static PyObject *frames_torch(FramesObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *torch = PyImport_ImportModule("torch");
    if (!torch) return NULL;
    PyObject *r = PyObject_CallMethod(torch, "from_dlpack", "O", (PyObject *)self);
    Py_DECREF(torch);
    return r;
}

static PyObject *frames_copy_impl(FramesObject *self)
{
    if (self->gpu) return rx_gpu_refuse(self, "copy()");
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    FramesObject *c = frames_alloc(st, self->dtype, self->ndim, self->shape);
    if (!c) return NULL;
    memcpy(c->data, self->data, self->nbytes);
    c->indices = Py_XNewRef(self->indices);
    c->pts = Py_XNewRef(self->pts);
    c->dur = Py_XNewRef(self->dur);
    c->layout = Py_XNewRef(self->layout);
    c->dist = Py_XNewRef(self->dist);
    c->within = Py_XNewRef(self->within);
    return (PyObject *)c;
}

static PyObject *frames_copy(FramesObject *self, PyObject *unused)
{
    (void)unused;
    return frames_copy_impl(self);
}

static PyObject *frames_tobytes(FramesObject *self, PyObject *unused)
{
    (void)unused;
    if (self->gpu) return rx_gpu_refuse(self, "tobytes()");
    return PyBytes_FromStringAndSize(self->data, (Py_ssize_t)self->nbytes);
}

static int parse_shape(PyObject *obj, int64_t *shape, int *ndim)
{
    PyObject *seq = PySequence_Fast(obj, "shape must be a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = rx_fast_size(seq);
    if (n > REEL_PY_MAXDIM) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions (at most %d)", n, REEL_PY_MAXDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(rx_fast_item(seq, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < 0) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "shape entries must be >= 0");
            return -1;
        }
        shape[i] = v;
    }
    *ndim = (int)n;
    Py_DECREF(seq);
    return 0;
}

/* _view(shape, indices=None, pts_seconds=None, duration_seconds=None, layout=None, offset=0,
 * distance_seconds=None, within_tolerance=None): the same memory with another
 * shape and metadata: all of it, or, with an element offset, a contiguous
 * part of it. */
static PyObject *frames_view_method(FramesObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "shape",  "indices", "pts_seconds",      "duration_seconds",
                              "layout", "offset",  "distance_seconds", "within_tolerance",
                              NULL };
    PyObject *shape_obj, *indices = Py_None, *pts = Py_None, *dur = Py_None, *layout = Py_None;
    PyObject *dist = Py_None, *within = Py_None;
    long long offset = -1; /* -1: the whole array */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOLOO:_view", kwlist, &shape_obj, &indices, &pts, &dur, &layout,
                                     &offset, &dist, &within))
        return NULL;
    int64_t shape[REEL_PY_MAXDIM];
    int ndim = 0;
    if (parse_shape(shape_obj, shape, &ndim) < 0) return NULL;
    uint64_t count = 1, mine = 1;
    for (int i = 0; i < ndim; i++) count *= (uint64_t)shape[i];
    for (int i = 0; i < self->ndim; i++) mine *= (uint64_t)self->shape[i];
    int whole = offset == -1;
    if (whole) offset = 0;
    if (offset < 0 || (uint64_t)offset > mine || count > mine - (uint64_t)offset || (whole && count != mine)) {
        PyErr_Format(PyExc_ValueError, "cannot view %llu elements at offset %lld of %llu", (unsigned long long)count,
                     offset, (unsigned long long)mine);
        return NULL;
    }
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    PyObject *owner = self->alloc || self->dev ? (PyObject *)self : self->base;
    FramesObject *v = frames_view(st, owner, self->data + (size_t)offset * (size_t)dtype_table[self->dtype].itemsize,
                                  self->dtype, ndim, shape);
    if (!v) return NULL;
    v->gpu = self->gpu;
    v->gpu_index = self->gpu_index;
    v->indices = indices == Py_None ? NULL : Py_NewRef(indices);
    v->pts = pts == Py_None ? NULL : Py_NewRef(pts);
    v->dur = dur == Py_None ? NULL : Py_NewRef(dur);
    v->layout = layout == Py_None ? NULL : Py_NewRef(layout);
    v->dist = dist == Py_None ? NULL : Py_NewRef(dist);
    v->within = within == Py_None ? NULL : Py_NewRef(within);
    return (PyObject *)v;
}

static PyObject *frames_reduce(FramesObject *self, PyObject *unused)
{
    (void)unused;
    if (self->gpu) return rx_gpu_refuse(self, "pickling");
    PyObject *mod = PyType_GetModule(Py_TYPE(self));
    if (!mod) return NULL;
    PyObject *fn = PyObject_GetAttrString(mod, "_frames_from_bytes");
    if (!fn) return NULL;
    PyObject *data = frames_tobytes(self, NULL);
    PyObject *shape = frames_shape_tuple(self);
    PyObject *r = NULL;
    if (data && shape)
        r = Py_BuildValue("(O(OsOOOOOOO))", fn, data, dtype_table[self->dtype].name, shape,
                          self->indices ? self->indices : Py_None, self->pts ? self->pts : Py_None,
                          self->dur ? self->dur : Py_None, self->layout ? self->layout : Py_None,
                          self->dist ? self->dist : Py_None, self->within ? self->within : Py_None);
    Py_DECREF(fn);
    Py_XDECREF(data);
    Py_XDECREF(shape);
    return r;
}

static Py_ssize_t frames_len(FramesObject *self)
{
    if (self->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d reel.Frames");
        return -1;
    }
    return (Py_ssize_t)self->shape[0];
}

static PyObject *frames_repr(FramesObject *self)
{
    PyObject *shape = frames_shape_tuple(self);
    if (!shape) return NULL;
    PyObject *r;
    if (self->layout)
        r = PyUnicode_FromFormat("reel.Frames(shape=%R, dtype=%s, layout=%R)", shape, dtype_table[self->dtype].name,
                                 self->layout);
    else
        r = PyUnicode_FromFormat("reel.Frames(shape=%R, dtype=%s)", shape, dtype_table[self->dtype].name);
    Py_DECREF(shape);
    return r;
}

/* The getbuffer slot, in the type only on CPython >= 3.11 (frames_spec). */
static int frames_getbuffer(FramesObject *self, rx_pybuffer *view, int flags)
{
    const char *fmt = dtype_table[self->dtype].format;
    view->obj = NULL;
    if (self->gpu) {
        rx_gpu_refuse(self, "the buffer protocol");
        return -1;
    }
    if (!fmt) {
        PyErr_SetString(PyExc_BufferError,
                        "bfloat16 has no buffer-protocol format: use __dlpack__ (torch.from_dlpack)");
        return -1;
    }
    if ((flags & RX_PYBUF_F_CONTIGUOUS) == RX_PYBUF_F_CONTIGUOUS && self->ndim > 1) {
        int nontrivial = 0;
        for (int i = 0; i < self->ndim; i++) nontrivial += self->shape[i] > 1;
        if (nontrivial > 1) {
            PyErr_SetString(PyExc_BufferError, "reel.Frames is C-contiguous, not Fortran-contiguous");
            return -1;
        }
    }
    view->buf = self->data;
    view->obj = Py_NewRef((PyObject *)self);
    view->len = (Py_ssize_t)self->nbytes;
    view->readonly = 0;
    view->itemsize = dtype_table[self->dtype].itemsize;
    view->format = (flags & RX_PYBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = self->ndim;
    view->shape = (flags & RX_PYBUF_ND) == RX_PYBUF_ND ? self->bshape : NULL;
    view->strides = (flags & RX_PYBUF_STRIDES) == RX_PYBUF_STRIDES ? self->bstrides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    if (!view->shape) view->ndim = 1; /* a flat run of bytes */
    return 0;
}

static PyObject *frames_cpu(FramesObject *self, PyObject *unused)
{
    (void)unused;
    return rx_gpu_cpu(self);
}

static PyMethodDef frames_methods[] = {
    { "__dlpack__", (PyCFunction)(void (*)(void))frames_dlpack, METH_VARARGS | METH_KEYWORDS,
      "__dlpack__($self, stream=None, *, max_version=None, dl_device=None, copy=None)\n--\n\n"
      "Exports the array as a DLPack capsule without copying: 'dltensor' (DLPack 0.8\n"
      "layout) by default, 'dltensor_versioned' (1.0) when max_version >= (1, 0). The\n"
      "capsule keeps this object alive until the consumer's tensor is freed." },
    { "__dlpack_device__", (PyCFunction)frames_dlpack_device, METH_NOARGS,
      "__dlpack_device__($self)\n--\n\n(1, 0): kDLCPU, device 0." },
    { "numpy", (PyCFunction)frames_numpy, METH_NOARGS,
      "numpy($self)\n--\n\nA numpy array viewing the same memory (numpy.from_dlpack; imports numpy)." },
    { "torch", (PyCFunction)frames_torch, METH_NOARGS,
      "torch($self)\n--\n\nA torch tensor viewing the same memory (torch.from_dlpack; imports torch)." },
    { "copy", (PyCFunction)frames_copy, METH_NOARGS, "copy($self)\n--\n\nA copy that owns its memory." },
    { "cpu", (PyCFunction)frames_cpu, METH_NOARGS,
      "cpu($self)\n--\n\nFrames on the CPU: frames on a GPU copied to the host (after their write), CPU frames "
      "as they are." },
    { "tobytes", (PyCFunction)frames_tobytes, METH_NOARGS, "tobytes($self)\n--\n\nThe data as bytes (a copy)." },
    { "_view", (PyCFunction)(void (*)(void))frames_view_method, METH_VARARGS | METH_KEYWORDS,
      "_view($self, shape, indices=None, pts_seconds=None, duration_seconds=None, layout=None, offset=0, "
      "distance_seconds=None, within_tolerance=None)\n--\n\n"
      "Private: the same memory (from an element offset) with another shape and metadata." },
    { "__reduce__", (PyCFunction)frames_reduce, METH_NOARGS, NULL },
    { NULL }
};

static PyMemberDef frames_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(FramesObject, weakreflist), READONLY, NULL }, { NULL }
};

/* The getbuffer slot first: frames_spec_nobuffer is the rest. */
static PyType_Slot frames_slots[] = {
    { Py_bf_getbuffer, (void *)frames_getbuffer },
    { Py_tp_doc, (void *)"An n-dimensional CPU array of decoded frames (or labels), C-contiguous.\n\n"
                         "Zero-copy into torch and numpy: torch.from_dlpack(x) / np.from_dlpack(x), or\n"
                         "x.torch() / x.numpy(). The memory lives as long as any array viewing it.\n"
                         "Decoder results also carry indices, pts_seconds and duration_seconds." },
    { Py_tp_dealloc, (void *)frames_dealloc },
    { Py_tp_new, (void *)frames_new_forbidden },
    { Py_tp_repr, (void *)frames_repr },
    { Py_tp_getset, frames_getset },
    { Py_tp_methods, frames_methods },
    { Py_tp_members, frames_members },
    { Py_sq_length, (void *)frames_len },
    { Py_mp_length, (void *)frames_len },
    { 0, NULL }
};

PyType_Spec frames_spec = {
    .name = "reel.Frames",
    .basicsize = sizeof(FramesObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = frames_slots,
};

PyType_Spec frames_spec_nobuffer = {
    .name = "reel.Frames",
    .basicsize = sizeof(FramesObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = frames_slots + 1,
};

static int dtype_from_name(const char *name)
{
    for (int i = 0; i < DT_COUNT; i++)
        if (!strcmp(dtype_table[i].name, name)) return i;
    return -1;
}

/* _frames_from_bytes(data, dtype, shape, indices, pts, dur, layout, dist=None, within=None): unpickling. */
PyObject *mod_frames_from_bytes(PyObject *module, PyObject *args)
{
    const char *data;
    Py_ssize_t len;
    const char *dtname;
    PyObject *shape_obj, *indices, *pts, *dur, *layout, *dist = Py_None, *within = Py_None;
    if (!PyArg_ParseTuple(args, "y#sOOOOO|OO:_frames_from_bytes", &data, &len, &dtname, &shape_obj, &indices, &pts,
                          &dur, &layout, &dist, &within))
        return NULL;
    reel_state *st = PyModule_GetState(module);
    int dt = dtype_from_name(dtname);
    int64_t shape[REEL_PY_MAXDIM];
    int ndim = 0;
    FramesObject *f = NULL;
    if (dt < 0)
        PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", dtname);
    else if (parse_shape(shape_obj, shape, &ndim) == 0 && (f = frames_alloc(st, dt, ndim, shape))) {
        if ((size_t)len != f->nbytes) {
            PyErr_SetString(PyExc_ValueError, "data size does not match the shape");
            Py_CLEAR(f);
        } else {
            memcpy(f->data, data, f->nbytes);
            f->indices = indices == Py_None ? NULL : Py_NewRef(indices);
            f->pts = pts == Py_None ? NULL : Py_NewRef(pts);
            f->dur = dur == Py_None ? NULL : Py_NewRef(dur);
            f->layout = layout == Py_None ? NULL : Py_NewRef(layout);
            f->dist = dist == Py_None ? NULL : Py_NewRef(dist);
            f->within = within == Py_None ? NULL : Py_NewRef(within);
        }
    }
    return (PyObject *)f;
}
