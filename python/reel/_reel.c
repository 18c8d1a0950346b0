/* _reel.c: the CPython extension reel._reel, written against the C API. It owns
 * the Frames array type (own or borrowed memory, exported through DLPack and the
 * buffer protocol), the Decoder and Loader wrappers and the ReelError hierarchy. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <structmember.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "reel/reel.h"
#include "reel/pipeline.h"
#include "pipeline/clock.h"
#include "pipeline/plan.h"
#include "synth/synth.h"

/* ======================================================================
 * Compatibility (the oldest supported CPython is 3.9)
 * ====================================================================== */

#if PY_VERSION_HEX < 0x030A00F0
static inline PyObject *Py_NewRef(PyObject *o) { Py_INCREF(o); return o; }
static inline PyObject *Py_XNewRef(PyObject *o) { Py_XINCREF(o); return o; }
#endif

#if PY_VERSION_HEX < 0x030A0000
static int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v)
{
    Py_INCREF(v);
    if (PyModule_AddObject(m, name, v) < 0) { Py_DECREF(v); return -1; }
    return 0;
}
#endif

#if PY_VERSION_HEX < 0x030B0000
/* PyType_GetModuleByDef() arrived in 3.11; this is the same walk over the MRO. */
static PyObject *reel_type_module_by_def(PyTypeObject *type, struct PyModuleDef *def)
{
    PyObject *mro = type->tp_mro;
    Py_ssize_t n = mro ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE)) continue;
        PyObject *m = ((PyHeapTypeObject *)t)->ht_module;
        if (m && PyModule_GetDef(m) == def) return m;
    }
    PyErr_Format(PyExc_TypeError, "PyType_GetModuleByDef: no module found for '%s'", type->tp_name);
    return NULL;
}
#define PyType_GetModuleByDef reel_type_module_by_def
#endif

#if PY_VERSION_HEX >= 0x030D0000
#define reel_py_finalizing() Py_IsFinalizing()
#else
#define reel_py_finalizing() _Py_IsFinalizing()
#endif

/* ======================================================================
 * DLPack, defined here from the public specification (no dlpack.h):
 * the 0.8 layout ("dltensor" capsules) and the 1.0 versioned one
 * ("dltensor_versioned"), chosen by the consumer's max_version.
 * ====================================================================== */

enum { kDLCPU = 1 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 };

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

#define REEL_DLPACK_MAJOR 1
#define REEL_DLPACK_MINOR 0

/* ======================================================================
 * Module state
 * ====================================================================== */

typedef struct reel_state {
    PyTypeObject *FramesType;
    PyTypeObject *DecoderType;
    PyTypeObject *LoaderType;
    PyTypeObject *BatchHandleType;
    PyObject *ReelError;
    PyObject *NotFoundError;
    PyObject *CorruptError;
    PyObject *UnsupportedError;
    PyObject *OutOfRangeError;
    PyObject *InvalidArgumentError;
    PyObject *NoVideoStreamError;
} reel_state;

static struct PyModuleDef reel_module;

static reel_state *state_of(PyObject *obj)
{
    PyObject *m = PyType_GetModuleByDef(Py_TYPE(obj), &reel_module);
    return m ? (reel_state *)PyModule_GetState(m) : NULL;
}

/* ======================================================================
 * Errors: reel statuses -> ReelError and its subclasses
 * ====================================================================== */

static const struct { int status; const char *name; } status_names[] = {
    { REEL_OK, "OK" },
    { REEL_E_INVALID_ARG, "INVALID_ARG" },
    { REEL_E_NOT_FOUND, "NOT_FOUND" },
    { REEL_E_IO, "IO" },
    { REEL_E_NOT_VIDEO, "NOT_VIDEO" },
    { REEL_E_NO_VIDEO_STREAM, "NO_VIDEO_STREAM" },
    { REEL_E_UNSUPPORTED_CODEC, "UNSUPPORTED_CODEC" },
    { REEL_E_CORRUPT, "CORRUPT" },
    { REEL_E_OUT_OF_RANGE, "OUT_OF_RANGE" },
    { REEL_E_NOMEM, "NOMEM" },
    { REEL_E_INDEX_STALE, "INDEX_STALE" },
    { REEL_E_BUFFER_TOO_SMALL, "BUFFER_TOO_SMALL" },
    { REEL_E_TIMEOUT, "TIMEOUT" },
    { REEL_E_CANCELLED, "CANCELLED" },
    { REEL_E_EMPTY, "EMPTY" },
    { REEL_E_INTERNAL, "INTERNAL" },
    { REEL_E_AGAIN, "AGAIN" },
    { REEL_E_PERMISSION, "PERMISSION" },
    { REEL_E_NO_DATA, "NO_DATA" },
};

static PyObject *error_class(reel_state *st, int status)
{
    switch (status) {
    case REEL_E_NOT_FOUND: return st->NotFoundError;
    case REEL_E_NOT_VIDEO:
    case REEL_E_CORRUPT:
    case REEL_E_INDEX_STALE: return st->CorruptError;
    case REEL_E_UNSUPPORTED_CODEC: return st->UnsupportedError;
    case REEL_E_OUT_OF_RANGE: return st->OutOfRangeError;
    case REEL_E_INVALID_ARG: return st->InvalidArgumentError;
    case REEL_E_NO_VIDEO_STREAM: return st->NoVideoStreamError;
    default: return st->ReelError;
    }
}

/* Raises the exception for `status` with `message` ("<file>: <reason>"; empty:
 * reel_strerror), .path = path (may be NULL: None) and .status. `cause` (a
 * reference that is stolen, may be NULL) becomes __cause__. Returns NULL. */
static PyObject *raise_reel(reel_state *st, int status, const char *message, const char *path,
                            PyObject *cause)
{
    PyObject *cls = error_class(st, status);
    const char *text = message && *message ? message : reel_strerror(status);
    PyObject *msg = PyUnicode_DecodeFSDefault(text);
    PyObject *exc = msg ? PyObject_CallOneArg(cls, msg) : NULL;
    Py_XDECREF(msg);
    if (!exc) { Py_XDECREF(cause); return NULL; }
    PyObject *p = path ? PyUnicode_DecodeFSDefault(path) : Py_NewRef(Py_None);
    PyObject *s = PyLong_FromLong(status);
    if (!p || !s || PyObject_SetAttrString(exc, "path", p) < 0 ||
        PyObject_SetAttrString(exc, "status", s) < 0) {
        Py_XDECREF(p); Py_XDECREF(s); Py_DECREF(exc); Py_XDECREF(cause);
        return NULL;
    }
    Py_DECREF(p);
    Py_DECREF(s);
    if (cause) PyException_SetCause(exc, cause); /* steals */
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *raise_err(reel_state *st, int status, const reel_error *err, const char *path)
{
    return raise_reel(st, status, err && err->status != REEL_OK ? err->message : NULL, path, NULL);
}

/* ======================================================================
 * Frames: an n-dimensional, C-contiguous CPU array (own memory, or a view
 * of memory kept alive by `base`), with optional per-frame metadata.
 * ====================================================================== */

#define REEL_PY_MAXDIM 8
#define REEL_PY_ALIGN 64

/* Element types: the first four equal reel_dtype values. */
enum { DT_UINT8 = REEL_DTYPE_UINT8, DT_FLOAT32 = REEL_DTYPE_FLOAT32, DT_FLOAT16 = REEL_DTYPE_FLOAT16,
       DT_BFLOAT16 = REEL_DTYPE_BFLOAT16, DT_INT64 = 4, DT_COUNT = 5 };

static const struct {
    const char *name;
    int itemsize;
    uint8_t dl_code;
    const char *format; /* buffer protocol; NULL: none (bfloat16) */
} dtype_table[DT_COUNT] = {
    [DT_UINT8] = { "uint8", 1, kDLUInt, "B" },
    [DT_FLOAT32] = { "float32", 4, kDLFloat, "f" },
    [DT_FLOAT16] = { "float16", 2, kDLFloat, "e" },
    [DT_BFLOAT16] = { "bfloat16", 2, kDLBfloat, NULL },
    [DT_INT64] = { "int64", 8, kDLInt, "q" },
};

typedef struct FramesObject {
    PyObject_HEAD
    char *data;
    void *alloc;        /* owned allocation (free()), or NULL for a view */
    PyObject *base;     /* keeps `data` alive for a view */
    int dtype;
    int ndim;
    int64_t shape[REEL_PY_MAXDIM];
    Py_ssize_t bshape[REEL_PY_MAXDIM];   /* for the buffer protocol */
    Py_ssize_t bstrides[REEL_PY_MAXDIM]; /* bytes */
    size_t nbytes;
    PyObject *indices;  /* metadata, NULL: None */
    PyObject *pts;
    PyObject *dur;
    PyObject *layout;
    PyObject *weakreflist;
} FramesObject;

static int frames_set_shape(FramesObject *f, int ndim, const int64_t *shape)
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
static FramesObject *frames_alloc(reel_state *st, int dtype, int ndim, const int64_t *shape)
{
    FramesObject *f = (FramesObject *)st->FramesType->tp_alloc(st->FramesType, 0);
    if (!f) return NULL;
    f->dtype = dtype;
    if (frames_set_shape(f, ndim, shape) < 0) { Py_DECREF(f); return NULL; }
    void *p = NULL;
    size_t bytes = f->nbytes > REEL_PY_ALIGN ? f->nbytes : REEL_PY_ALIGN;
    if (posix_memalign(&p, REEL_PY_ALIGN, bytes) != 0 || !p) {
        Py_DECREF(f);
        PyErr_Format(PyExc_MemoryError, "reel: cannot allocate %zu bytes", bytes);
        return NULL;
    }
    f->alloc = p;
    f->data = p;
    return f;
}

/* A view of `data`, kept alive by `base` (a new reference is taken). */
static FramesObject *frames_view(reel_state *st, PyObject *base, void *data, int dtype, int ndim,
                                 const int64_t *shape)
{
    FramesObject *f = (FramesObject *)st->FramesType->tp_alloc(st->FramesType, 0);
    if (!f) return NULL;
    f->dtype = dtype;
    if (frames_set_shape(f, ndim, shape) < 0) { Py_DECREF(f); return NULL; }
    f->data = data;
    f->base = Py_NewRef(base);
    return f;
}

static void frames_dealloc(FramesObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    free(self->alloc);
    Py_XDECREF(self->base);
    Py_XDECREF(self->indices);
    Py_XDECREF(self->pts);
    Py_XDECREF(self->dur);
    Py_XDECREF(self->layout);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *frames_new_forbidden(PyTypeObject *tp, PyObject *a, PyObject *k)
{
    (void)a; (void)k;
    PyErr_Format(PyExc_TypeError, "cannot create '%s' instances directly", tp->tp_name);
    return NULL;
}

static PyObject *frames_shape_tuple(FramesObject *self)
{
    PyObject *t = PyTuple_New(self->ndim);
    if (!t) return NULL;
    for (int i = 0; i < self->ndim; i++) {
        PyObject *v = PyLong_FromLongLong(self->shape[i]);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *frames_get_shape(FramesObject *self, void *c) { (void)c; return frames_shape_tuple(self); }
static PyObject *frames_get_dtype(FramesObject *self, void *c) { (void)c; return PyUnicode_FromString(dtype_table[self->dtype].name); }
static PyObject *frames_get_ndim(FramesObject *self, void *c) { (void)c; return PyLong_FromLong(self->ndim); }
static PyObject *frames_get_nbytes(FramesObject *self, void *c) { (void)c; return PyLong_FromSize_t(self->nbytes); }
static PyObject *frames_get_itemsize(FramesObject *self, void *c) { (void)c; return PyLong_FromLong(dtype_table[self->dtype].itemsize); }
static PyObject *frames_get_data_ptr(FramesObject *self, void *c) { (void)c; return PyLong_FromVoidPtr(self->data); }
static PyObject *frames_get_device(FramesObject *self, void *c) { (void)self; (void)c; return PyUnicode_FromString("cpu"); }
static PyObject *frames_get_owns(FramesObject *self, void *c) { (void)c; return PyBool_FromLong(self->alloc != NULL); }
#define META_GETTER(fn, field) \
    static PyObject *fn(FramesObject *self, void *c) { (void)c; return Py_NewRef(self->field ? self->field : Py_None); }
META_GETTER(frames_get_indices, indices)
META_GETTER(frames_get_pts, pts)
META_GETTER(frames_get_dur, dur)
META_GETTER(frames_get_layout, layout)

static PyGetSetDef frames_getset[] = {
    { "shape", (getter)frames_get_shape, NULL, "The shape, a tuple of ints.", NULL },
    { "dtype", (getter)frames_get_dtype, NULL, "Element type: 'uint8', 'float32', 'float16', 'bfloat16' or 'int64'.", NULL },
    { "ndim", (getter)frames_get_ndim, NULL, "Number of dimensions.", NULL },
    { "nbytes", (getter)frames_get_nbytes, NULL, "Size of the data in bytes.", NULL },
    { "itemsize", (getter)frames_get_itemsize, NULL, "Bytes per element.", NULL },
    { "data_ptr", (getter)frames_get_data_ptr, NULL, "Address of the first element (C-contiguous data).", NULL },
    { "device", (getter)frames_get_device, NULL, "Always 'cpu'.", NULL },
    { "owns_data", (getter)frames_get_owns, NULL, "True if this object allocated its memory; False for a view.", NULL },
    { "indices", (getter)frames_get_indices, NULL, "Frame indices (an int, a list, or a list of lists for clips), or None.", NULL },
    { "pts_seconds", (getter)frames_get_pts, NULL, "Presentation times in seconds, shaped like indices, or None.", NULL },
    { "duration_seconds", (getter)frames_get_dur, NULL, "Frame durations in seconds, shaped like indices, or None.", NULL },
    { "layout", (getter)frames_get_layout, NULL, "Dimension names, e.g. 'NCHW', 'NTHWC', 'BTCHW'; None if not images.", NULL },
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
    if (!owner || !Py_IsInitialized() || reel_py_finalizing()) return;
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
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
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
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$OOO:__dlpack__", kwlist,
                                     &stream, &max_version, &dl_device, &copy))
        return NULL;
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
            PyErr_Format(PyExc_BufferError, "reel arrays live on the CPU (1, 0); cannot export to device (%d, %d)", dt, di);
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
        if (!b) { Py_XDECREF(tmp); return PyErr_NoMemory(); }
        b->m.version.major = REEL_DLPACK_MAJOR;
        b->m.version.minor = REEL_DLPACK_MINOR;
        b->m.flags = copy == Py_True ? (1ULL << 1) /* DLPACK_FLAG_BITMASK_IS_COPIED */ : 0;
        dl_fill(&b->m.dl_tensor, src, b->shape, b->strides);
        b->m.manager_ctx = Py_NewRef((PyObject *)src);
        b->m.deleter = dl_deleter_versioned;
        cap = PyCapsule_New(&b->m, "dltensor_versioned", dl_capsule_versioned);
        if (!cap) { Py_DECREF((PyObject *)src); free(b); }
    } else {
        dl_legacy *b = calloc(1, sizeof *b);
        if (!b) { Py_XDECREF(tmp); return PyErr_NoMemory(); }
        dl_fill(&b->m.dl_tensor, src, b->shape, b->strides);
        b->m.manager_ctx = Py_NewRef((PyObject *)src);
        b->m.deleter = dl_deleter_legacy;
        cap = PyCapsule_New(&b->m, "dltensor", dl_capsule_legacy);
        if (!cap) { Py_DECREF((PyObject *)src); free(b); }
    }
    Py_XDECREF(tmp);
    return cap;
}

static PyObject *frames_dlpack_device(FramesObject *self, PyObject *unused)
{
    (void)self; (void)unused;
    return Py_BuildValue("(ii)", kDLCPU, 0);
}

static PyObject *frames_numpy(FramesObject *self, PyObject *unused)
{
    (void)unused;
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
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    FramesObject *c = frames_alloc(st, self->dtype, self->ndim, self->shape);
    if (!c) return NULL;
    memcpy(c->data, self->data, self->nbytes);
    c->indices = Py_XNewRef(self->indices);
    c->pts = Py_XNewRef(self->pts);
    c->dur = Py_XNewRef(self->dur);
    c->layout = Py_XNewRef(self->layout);
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
    return PyBytes_FromStringAndSize(self->data, (Py_ssize_t)self->nbytes);
}

static int parse_shape(PyObject *obj, int64_t *shape, int *ndim)
{
    PyObject *seq = PySequence_Fast(obj, "shape must be a sequence of ints");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > REEL_PY_MAXDIM) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions (at most %d)", n, REEL_PY_MAXDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        if (v < 0) { Py_DECREF(seq); PyErr_SetString(PyExc_ValueError, "shape entries must be >= 0"); return -1; }
        shape[i] = v;
    }
    *ndim = (int)n;
    Py_DECREF(seq);
    return 0;
}

/* _view(shape, indices=None, pts_seconds=None, duration_seconds=None, layout=None, offset=0):
 * the same memory with another shape and metadata: all of it, or, with an
 * element offset, a contiguous part of it. */
static PyObject *frames_view_method(FramesObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "shape", "indices", "pts_seconds", "duration_seconds", "layout", "offset", NULL };
    PyObject *shape_obj, *indices = Py_None, *pts = Py_None, *dur = Py_None, *layout = Py_None;
    long long offset = -1; /* -1: the whole array */
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOOOL:_view", kwlist, &shape_obj, &indices, &pts, &dur,
                                     &layout, &offset))
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
        PyErr_Format(PyExc_ValueError, "cannot view %llu elements at offset %lld of %llu",
                     (unsigned long long)count, offset, (unsigned long long)mine);
        return NULL;
    }
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    PyObject *owner = self->alloc ? (PyObject *)self : self->base;
    FramesObject *v = frames_view(st, owner, self->data + (size_t)offset * (size_t)dtype_table[self->dtype].itemsize,
                                  self->dtype, ndim, shape);
    if (!v) return NULL;
    v->indices = indices == Py_None ? NULL : Py_NewRef(indices);
    v->pts = pts == Py_None ? NULL : Py_NewRef(pts);
    v->dur = dur == Py_None ? NULL : Py_NewRef(dur);
    v->layout = layout == Py_None ? NULL : Py_NewRef(layout);
    return (PyObject *)v;
}

static PyObject *frames_reduce(FramesObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *mod = PyType_GetModuleByDef(Py_TYPE(self), &reel_module);
    if (!mod) return NULL;
    PyObject *fn = PyObject_GetAttrString(mod, "_frames_from_bytes");
    if (!fn) return NULL;
    PyObject *data = frames_tobytes(self, NULL);
    PyObject *shape = frames_shape_tuple(self);
    PyObject *r = NULL;
    if (data && shape)
        r = Py_BuildValue("(O(OsOOOOO))", fn, data, dtype_table[self->dtype].name, shape,
                          self->indices ? self->indices : Py_None, self->pts ? self->pts : Py_None,
                          self->dur ? self->dur : Py_None, self->layout ? self->layout : Py_None);
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
        r = PyUnicode_FromFormat("reel.Frames(shape=%R, dtype=%s, layout=%R)", shape, dtype_table[self->dtype].name, self->layout);
    else
        r = PyUnicode_FromFormat("reel.Frames(shape=%R, dtype=%s)", shape, dtype_table[self->dtype].name);
    Py_DECREF(shape);
    return r;
}

static int frames_getbuffer(FramesObject *self, Py_buffer *view, int flags)
{
    const char *fmt = dtype_table[self->dtype].format;
    view->obj = NULL;
    if (!fmt) {
        PyErr_SetString(PyExc_BufferError, "bfloat16 has no buffer-protocol format: use __dlpack__ (torch.from_dlpack)");
        return -1;
    }
    if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && self->ndim > 1) {
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
    view->format = (flags & PyBUF_FORMAT) ? (char *)fmt : NULL;
    view->ndim = self->ndim;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? self->bshape : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? self->bstrides : NULL;
    view->suboffsets = NULL;
    view->internal = NULL;
    if (!view->shape) view->ndim = 1; /* a flat run of bytes */
    return 0;
}

static PyMethodDef frames_methods[] = {
    { "__dlpack__", (PyCFunction)(void (*)(void))frames_dlpack, METH_VARARGS | METH_KEYWORDS,
      "__dlpack__(stream=None, *, max_version=None, dl_device=None, copy=None)\n--\n\n"
      "Exports the array as a DLPack capsule without copying: 'dltensor' (DLPack 0.8\n"
      "layout) by default, 'dltensor_versioned' (1.0) when max_version >= (1, 0). The\n"
      "capsule keeps this object alive until the consumer's tensor is freed." },
    { "__dlpack_device__", (PyCFunction)frames_dlpack_device, METH_NOARGS,
      "__dlpack_device__()\n--\n\n(1, 0): kDLCPU, device 0." },
    { "numpy", (PyCFunction)frames_numpy, METH_NOARGS,
      "numpy()\n--\n\nA numpy array viewing the same memory (numpy.from_dlpack; imports numpy)." },
    { "torch", (PyCFunction)frames_torch, METH_NOARGS,
      "torch()\n--\n\nA torch tensor viewing the same memory (torch.from_dlpack; imports torch)." },
    { "copy", (PyCFunction)frames_copy, METH_NOARGS, "copy()\n--\n\nA copy that owns its memory." },
    { "tobytes", (PyCFunction)frames_tobytes, METH_NOARGS, "tobytes()\n--\n\nThe data as bytes (a copy)." },
    { "_view", (PyCFunction)(void (*)(void))frames_view_method, METH_VARARGS | METH_KEYWORDS,
      "_view(shape, indices=None, pts_seconds=None, duration_seconds=None, layout=None, offset=0)\n--\n\n"
      "Private: the same memory (from an element offset) with another shape and metadata." },
    { "__reduce__", (PyCFunction)frames_reduce, METH_NOARGS, NULL },
    { NULL }
};

static PyMemberDef frames_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(FramesObject, weakreflist), READONLY, NULL },
    { NULL }
};

static PyType_Slot frames_slots[] = {
    { Py_tp_doc, (void *)
      "An n-dimensional CPU array of decoded frames (or labels), C-contiguous.\n\n"
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
    { Py_bf_getbuffer, (void *)frames_getbuffer },
    { 0, NULL }
};

static PyType_Spec frames_spec = {
    .name = "reel.Frames",
    .basicsize = sizeof(FramesObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = frames_slots,
};

static int dtype_from_name(const char *name)
{
    for (int i = 0; i < DT_COUNT; i++)
        if (!strcmp(dtype_table[i].name, name)) return i;
    return -1;
}

/* _frames_from_bytes(data, dtype, shape, indices, pts, dur, layout): unpickling. */
static PyObject *mod_frames_from_bytes(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    const char *dtname;
    PyObject *shape_obj, *indices, *pts, *dur, *layout;
    if (!PyArg_ParseTuple(args, "y*sOOOOO:_frames_from_bytes", &buf, &dtname, &shape_obj, &indices, &pts, &dur, &layout))
        return NULL;
    reel_state *st = PyModule_GetState(module);
    int dt = dtype_from_name(dtname);
    int64_t shape[REEL_PY_MAXDIM];
    int ndim = 0;
    FramesObject *f = NULL;
    if (dt < 0) PyErr_Format(PyExc_ValueError, "unknown dtype '%s'", dtname);
    else if (parse_shape(shape_obj, shape, &ndim) == 0 && (f = frames_alloc(st, dt, ndim, shape))) {
        if ((size_t)buf.len != f->nbytes) {
            PyErr_SetString(PyExc_ValueError, "data size does not match the shape");
            Py_CLEAR(f);
        } else {
            memcpy(f->data, buf.buf, f->nbytes);
            f->indices = indices == Py_None ? NULL : Py_NewRef(indices);
            f->pts = pts == Py_None ? NULL : Py_NewRef(pts);
            f->dur = dur == Py_None ? NULL : Py_NewRef(dur);
            f->layout = layout == Py_None ? NULL : Py_NewRef(layout);
        }
    }
    PyBuffer_Release(&buf);
    return (PyObject *)f;
}

/* ======================================================================
 * Helpers: sequences of ints / floats -> C arrays (PyMem; free with PyMem_Free)
 * ====================================================================== */

static int64_t *parse_int64_seq(PyObject *obj, Py_ssize_t *n_out, const char *what)
{
    if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj) && !PyByteArray_Check(obj)) {
        Py_buffer b;
        if (PyObject_GetBuffer(obj, &b, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
            const char *f = b.format ? b.format : "B";
            if (*f == '<' || *f == '=' || *f == '@') f++;
            int ok = b.ndim <= 1 && f[0] && !f[1] && (f[0] == 'q' || f[0] == 'l' || f[0] == 'i') &&
                     (b.itemsize == 8 || b.itemsize == 4);
            if (ok) {
                Py_ssize_t n = b.len / b.itemsize;
                int64_t *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *out);
                if (!out) { PyBuffer_Release(&b); PyErr_NoMemory(); return NULL; }
                for (Py_ssize_t i = 0; i < n; i++)
                    out[i] = b.itemsize == 8 ? ((const int64_t *)b.buf)[i] : ((const int32_t *)b.buf)[i];
                PyBuffer_Release(&b);
                *n_out = n;
                return out;
            }
            PyBuffer_Release(&b);
        } else {
            PyErr_Clear();
        }
    }
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) { Py_DECREF(seq); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *idx = PyNumber_Index(item);
        long long v = idx ? PyLong_AsLongLong(idx) : -1;
        Py_XDECREF(idx);
        if (v == -1 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "%s: item %zd is %.100s, not an int", what, i, Py_TYPE(item)->tp_name);
            }
            PyMem_Free(out);
            Py_DECREF(seq);
            return NULL;
        }
        out[i] = v;
    }
    Py_DECREF(seq);
    *n_out = n;
    return out;
}

static double *parse_double_seq(PyObject *obj, Py_ssize_t *n_out, const char *what)
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    double *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) { Py_DECREF(seq); PyErr_NoMemory(); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) { PyMem_Free(out); Py_DECREF(seq); return NULL; }
        out[i] = v;
    }
    Py_DECREF(seq);
    *n_out = n;
    return out;
}

static int dict_set(PyObject *d, const char *key, PyObject *v)
{
    if (!v) return -1;
    int r = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return r;
}

/* ======================================================================
 * Decoder: one open video, its fixed output transform, a lock (the C
 * decoder is single-threaded; calls release the GIL), and the source kept
 * alive: a path, a buffer (memory) or a seekable file-like object.
 * ====================================================================== */

enum { SRC_PATH = 0, SRC_MEMORY = 1, SRC_FILE = 2 };

typedef struct DecoderObject {
    PyObject_HEAD
    reel_decoder *dec;
    PyThread_type_lock lock;
    pid_t pid;            /* process that opened dec */
    int need_reopen;      /* forked: reopen in this process before use */
    int closed;
    int kind;
    PyObject *source;     /* bytes path, buffer owner or file object */
    Py_buffer view;       /* SRC_MEMORY */
    int have_view;
    PyObject *name;       /* bytes: name used in messages */
    PyObject *index_path; /* bytes or NULL */
    PyObject *io_error;   /* first exception raised by a file-like callback */
    int64_t io_size;      /* cached size of a file-like source; -2 unknown */
    int64_t next_signal_check; /* reel__clock_ns() of dec_interrupt's next look */
    int use_readinto;     /* the file-like object has readinto() */
    reel_decoder_settings settings;
    reel_transform transform;
    int out_w, out_h;
    size_t frame_bytes;
    reel_decode_stats stats;
    PyObject *weakreflist;
} DecoderObject;

static const char *dec_name(DecoderObject *self)
{
    return self->name ? PyBytes_AS_STRING(self->name) : "<video>";
}

static void save_io_error(DecoderObject *self)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && tb) PyException_SetTraceback(v, tb);
    if (!self->io_error && v) self->io_error = Py_NewRef(v);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
}

/* The decoder's interrupt callback (reel_decoder_settings.interrupt): at
 * most every 0.1 s of a call, take the GIL back for a moment to run signal
 * handlers, so Ctrl-C stops a long decode with KeyboardInterrupt (kept like
 * a file-like callback's exception and re-raised as is). Runs in the thread
 * that called the decoder; handlers run only in the main thread. */
static int dec_interrupt(void *opaque)
{
    DecoderObject *self = opaque;
    int64_t now = reel__clock_ns();
    if (now < self->next_signal_check) return 0;
    self->next_signal_check = now + 100000000;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (PyErr_CheckSignals() < 0) {
        save_io_error(self);
        stop = 1;
    }
    PyGILState_Release(g);
    return stop;
}

/* reel_io callbacks for file-like sources: they run in the thread that
 * called the decoder, which released the GIL; take it back for the call. */
static int io_read(void *opaque, uint8_t *buf, int size)
{
    DecoderObject *self = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    long long n = -1;
    if (!self->io_error) {
        PyObject *res = NULL;
        if (self->use_readinto) {
            PyObject *mv = PyMemoryView_FromMemory((char *)buf, size, PyBUF_WRITE);
            if (mv) {
                res = PyObject_CallMethod(self->source, "readinto", "O", mv);
                /* Invalidate the view: the buffer is FFmpeg's. A failing
                 * release means the file object kept an export of it. */
                PyObject *et, *ev, *etb;
                PyErr_Fetch(&et, &ev, &etb);
                PyObject *rel = PyObject_CallMethod(mv, "release", NULL);
                if (!rel) {
                    PyErr_Clear();
                    if (!et) {
                        Py_CLEAR(res);
                        PyErr_SetString(PyExc_BufferError, "reel: readinto() kept a reference to the read buffer");
                        PyErr_Fetch(&et, &ev, &etb);
                    }
                }
                Py_XDECREF(rel);
                PyErr_Restore(et, ev, etb);
                Py_DECREF(mv);
            }
            if (res) {
                if (res == Py_None) {
                    PyErr_SetString(PyExc_BlockingIOError, "reel: readinto() returned None (non-blocking file without data)");
                } else {
                    n = PyLong_AsLongLong(res);
                    if (n < 0 || n > size) {
                        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "reel: readinto() returned %lld for a %d-byte buffer", n, size);
                        n = -1;
                    }
                }
            }
        } else {
            res = PyObject_CallMethod(self->source, "read", "i", size);
            if (res) {
                Py_buffer b;
                if (PyObject_GetBuffer(res, &b, PyBUF_SIMPLE) == 0) {
                    if (b.len > size) {
                        PyErr_Format(PyExc_ValueError, "reel: read(%d) returned %zd bytes", size, b.len);
                    } else {
                        memcpy(buf, b.buf, (size_t)b.len);
                        n = b.len;
                    }
                    PyBuffer_Release(&b);
                }
            }
        }
        Py_XDECREF(res);
        if (PyErr_Occurred()) {
            save_io_error(self);
            n = -1;
        }
    }
    PyGILState_Release(g);
    return (int)n;
}

static int64_t call_seek(PyObject *f, int64_t off, int whence)
{
    PyObject *res = PyObject_CallMethod(f, "seek", "Li", (long long)off, whence);
    if (!res) return -1;
    if (res == Py_None) {
        Py_DECREF(res);
        res = PyObject_CallMethod(f, "tell", NULL);
        if (!res) return -1;
    }
    long long v = PyLong_AsLongLong(res);
    Py_DECREF(res);
    return v;
}

static int64_t io_seek(void *opaque, int64_t offset, int whence)
{
    DecoderObject *self = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    int64_t r = -1;
    if (!self->io_error) {
        if (whence == REEL_SEEK_SIZE) {
            if (self->io_size >= -1) {
                r = self->io_size;
            } else {
                int64_t cur = call_seek(self->source, 0, SEEK_CUR);
                int64_t end = cur >= 0 ? call_seek(self->source, 0, SEEK_END) : -1;
                if (end >= 0 && call_seek(self->source, cur, SEEK_SET) >= 0) r = end;
                if (PyErr_Occurred()) {
                    PyErr_Clear(); /* size unknown is allowed */
                    r = -1;
                }
                self->io_size = r;
            }
        } else {
            r = call_seek(self->source, offset, whence);
            if (PyErr_Occurred()) {
                save_io_error(self);
                r = -1;
            }
        }
    }
    PyGILState_Release(g);
    return r;
}

/* Fills `err` like the library does for a file object that cannot rewind. */
static int rewind_failed(reel_error *err, const char *name)
{
    err->status = REEL_E_IO;
    snprintf(err->message, sizeof err->message, "%s: cannot seek to the start of the file object", name);
    return REEL_E_IO;
}

/* Opens self->dec from the stored source, with the GIL released. */
static int decoder_open_source(DecoderObject *self, reel_error *err)
{
    int r;
    reel_decoder *dec = NULL;
    if (self->kind == SRC_PATH) {
        const char *path = PyBytes_AS_STRING(self->source);
        Py_BEGIN_ALLOW_THREADS
        r = reel_decoder_open(&dec, path, &self->settings, err);
        Py_END_ALLOW_THREADS
    } else if (self->kind == SRC_MEMORY) {
        const void *data = self->view.buf;
        size_t size = (size_t)self->view.len;
        const char *name = dec_name(self);
        Py_BEGIN_ALLOW_THREADS
        r = reel_decoder_open_memory(&dec, data, size, name, &self->settings, err);
        Py_END_ALLOW_THREADS
    } else {
        reel_io io = { .opaque = self, .read = io_read, .seek = io_seek };
        const char *name = dec_name(self);
        self->io_size = -2;
        /* FFmpeg takes the stream to start where reading starts: rewind (a
         * reopen after fork finds the file wherever the parent left it). */
        if (call_seek(self->source, 0, SEEK_SET) < 0) {
            save_io_error(self);
            return rewind_failed(err, name);
        }
        Py_BEGIN_ALLOW_THREADS
        r = reel_decoder_open_io(&dec, &io, name, &self->settings, err);
        Py_END_ALLOW_THREADS
    }
    if (r == REEL_OK) self->dec = dec;
    return r;
}

static PyObject *take_io_error(DecoderObject *self)
{
    PyObject *e = self->io_error;
    self->io_error = NULL;
    return e;
}

static PyObject *raise_decoder(DecoderObject *self, int status, const reel_error *err)
{
    reel_state *st = state_of((PyObject *)self);
    PyObject *cause = take_io_error(self);
    if (!st) { Py_XDECREF(cause); return NULL; }
    if (cause && !PyObject_TypeCheck(cause, (PyTypeObject *)PyExc_Exception)) {
        /* KeyboardInterrupt, SystemExit... raised in a file-like callback: as is */
        PyErr_SetObject((PyObject *)Py_TYPE(cause), cause);
        Py_DECREF(cause);
        return NULL;
    }
    return raise_reel(st, status, err && err->status != REEL_OK ? err->message : NULL, dec_name(self), cause);
}

/* Takes the decoder for one call: checks the process (a forked child gets a
 * fresh decoder: the parent's FFmpeg threads and file offset are not its
 * own), then the lock (with the GIL released: a file-like callback of the
 * holder needs the GIL). On success the caller holds self->lock. */
static int decoder_acquire(DecoderObject *self)
{
    if (!self->lock) {
        PyErr_SetString(PyExc_ValueError, "reel decoder is not initialised");
        return -1;
    }
    pid_t pid = getpid();
    if (self->pid != pid) {
        /* The old lock may be held by a thread that does not exist here, and
         * the old decoder cannot be closed (its threads are gone): both are
         * left behind on purpose. */
        PyThread_type_lock lock = PyThread_allocate_lock();
        if (!lock) { PyErr_NoMemory(); return -1; }
        self->lock = lock;
        self->pid = pid;
        self->dec = NULL;
        self->need_reopen = !self->closed;
    }
    if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    if (self->need_reopen) {
        reel_error err;
        reel_error_clear(&err);
        int r = decoder_open_source(self, &err);
        if (r != REEL_OK) {
            PyThread_release_lock(self->lock);
            raise_decoder(self, r, &err);
            return -1;
        }
        self->need_reopen = 0;
    }
    if (!self->dec) {
        PyThread_release_lock(self->lock);
        PyErr_Format(PyExc_ValueError, "%s: the decoder is closed", dec_name(self));
        return -1;
    }
    Py_CLEAR(self->io_error);
    return 0;
}

static void decoder_release(DecoderObject *self)
{
    PyThread_release_lock(self->lock);
}

static int parse_floats3(PyObject *obj, float out[3], const char *what)
{
    if (obj == Py_None) return 0;
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 3) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s must have 3 values (R, G, B)", what);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        double v = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (v == -1.0 && PyErr_Occurred()) { Py_DECREF(seq); return -1; }
        out[i] = (float)v;
    }
    Py_DECREF(seq);
    return 0;
}

static int decoder_init(DecoderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "source", "kind", "name", "stream", "threads", "corrupt", "index_mode",
                              "index_path", "skip_nonref", "force_scan", "crop", "width", "height",
                              "filter", "resize_mode", "rotate", "flip", "dtype", "layout", "divisor",
                              "mean", "std", "check_keyframes", NULL };
    PyObject *source, *name = Py_None, *index_path = Py_None, *mean = Py_None, *std = Py_None;
    int kind, stream = -1, threads = 0, corrupt = REEL_CORRUPT_FAIL, index_mode = REEL_INDEX_OFF;
    int skip_nonref = 1, force_scan = 0, check_keyframes = 1;
    int cx = 0, cy = 0, cw = 0, ch = 0, width = 0, height = 0, filter = REEL_FILTER_BILINEAR;
    int resize_mode = REEL_RESIZE_FUSED, rotate = 0, flip = 0, dtype = REEL_DTYPE_UINT8, layout = REEL_LAYOUT_HWC;
    double divisor = 255.0;
    if (self->lock || self->source || self->name) {
        PyErr_SetString(PyExc_RuntimeError, "reel decoder: __init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|$OiiiiOpp(iiii)iiiipp" "iidOOp:Decoder", kwlist,
                                     &source, &kind, &name, &stream, &threads, &corrupt, &index_mode,
                                     &index_path, &skip_nonref, &force_scan, &cx, &cy, &cw, &ch,
                                     &width, &height, &filter, &resize_mode, &rotate, &flip, &dtype,
                                     &layout, &divisor, &mean, &std, &check_keyframes))
        return -1;
    if (kind < SRC_PATH || kind > SRC_FILE) {
        PyErr_SetString(PyExc_ValueError, "reel decoder: bad source kind");
        return -1;
    }
    if (dtype < 0 || dtype > REEL_DTYPE_BFLOAT16 || (layout != REEL_LAYOUT_HWC && layout != REEL_LAYOUT_CHW)) {
        PyErr_SetString(PyExc_ValueError, "reel decoder: bad dtype or layout");
        return -1;
    }
    reel_decoder_default_settings(&self->settings);
    self->settings.interrupt = dec_interrupt;
    self->settings.interrupt_opaque = self;
    self->settings.stream_index = stream;
    self->settings.threads = threads;
    self->settings.corrupt_policy = corrupt;
    self->settings.index_mode = index_mode;
    self->settings.skip_nonref = skip_nonref;
    self->settings.force_scan = force_scan;
    self->settings.check_keyframes = check_keyframes;
    if (index_path != Py_None) {
        if (!PyUnicode_FSConverter(index_path, &self->index_path)) return -1;
        self->settings.index_path = PyBytes_AS_STRING(self->index_path);
    }
    reel_transform_default(&self->transform);
    reel_transform *t = &self->transform;
    t->crop_x = cx; t->crop_y = cy; t->crop_w = cw; t->crop_h = ch;
    t->width = width; t->height = height;
    t->filter = filter; t->resize_mode = resize_mode;
    t->apply_rotation = rotate; t->flip_horizontal = flip;
    t->dtype = dtype; t->layout = layout;
    t->scale = (float)divisor;
    if (parse_floats3(mean, t->mean, "mean") < 0 || parse_floats3(std, t->std, "std") < 0) return -1;

    self->kind = kind;
    if (kind == SRC_PATH) {
        if (!PyUnicode_FSConverter(source, &self->source)) return -1;
        self->name = Py_NewRef(self->source);
    } else {
        if (name != Py_None) {
            if (!PyUnicode_FSConverter(name, &self->name)) return -1;
        } else {
            self->name = PyBytes_FromString(kind == SRC_MEMORY ? "<memory>" : "<file>");
            if (!self->name) return -1;
        }
        if (kind == SRC_MEMORY) {
            if (PyObject_GetBuffer(source, &self->view, PyBUF_SIMPLE) < 0) return -1;
            self->have_view = 1;
        } else {
            self->use_readinto = PyObject_HasAttrString(source, "readinto");
        }
        self->source = Py_NewRef(source);
    }
    self->lock = PyThread_allocate_lock();
    if (!self->lock) { PyErr_NoMemory(); return -1; }
    self->pid = getpid();

    reel_error err;
    reel_error_clear(&err);
    PyThread_acquire_lock(self->lock, WAIT_LOCK); /* new: nobody else holds it */
    int r = decoder_open_source(self, &err);
    if (r == REEL_OK) r = reel_decoder_output_size(self->dec, t, &self->out_w, &self->out_h, &self->frame_bytes, &err);
    if (r != REEL_OK) reel_decoder_close(&self->dec);
    PyThread_release_lock(self->lock);
    if (r != REEL_OK) {
        self->closed = 1;
        raise_decoder(self, r, &err);
        return -1;
    }
    return 0;
}

static void decoder_close_now(DecoderObject *self)
{
    if (self->dec && self->pid == getpid()) reel_decoder_close(&self->dec);
    self->dec = NULL;
    self->closed = 1;
    self->need_reopen = 0;
    if (self->have_view) {
        PyBuffer_Release(&self->view);
        self->have_view = 0;
    }
}

static int decoder_traverse(DecoderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->source);
    Py_VISIT(self->io_error);
    return 0;
}

static int decoder_clear(DecoderObject *self)
{
    /* The C decoder may point at the source (memory or file callbacks):
     * close it before letting the source go. */
    if (self->dec && self->pid != getpid()) self->dec = NULL; /* another process's: left behind */
    decoder_close_now(self);
    Py_CLEAR(self->source);
    Py_CLEAR(self->io_error);
    return 0;
}

static void decoder_dealloc(DecoderObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    decoder_clear(self);
    Py_CLEAR(self->name);
    Py_CLEAR(self->index_path);
    if (self->lock && self->pid == getpid()) PyThread_free_lock(self->lock);
    self->lock = NULL;
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *decoder_close(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (self->closed || !self->lock) Py_RETURN_NONE;
    if (self->pid != getpid()) {
        self->dec = NULL;
        self->closed = 1;
        self->need_reopen = 0;
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
    decoder_close_now(self);
    PyThread_release_lock(self->lock);
    Py_RETURN_NONE;
}

static PyObject *decoder_get_closed(DecoderObject *self, void *c) { (void)c; return PyBool_FromLong(self->closed); }
static PyObject *decoder_get_name(DecoderObject *self, void *c)
{
    (void)c;
    return PyUnicode_DecodeFSDefault(dec_name(self));
}

static PyObject *decoder_get_frame_shape(DecoderObject *self, void *c)
{
    (void)c;
    if (self->transform.layout == REEL_LAYOUT_CHW) return Py_BuildValue("(iii)", 3, self->out_h, self->out_w);
    return Py_BuildValue("(iii)", self->out_h, self->out_w, 3);
}

static PyObject *decoder_get_dtype(DecoderObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(dtype_table[self->transform.dtype].name);
}

static PyObject *str_or_empty(const char *s) { return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"); }

static PyObject *decoder_info(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (decoder_acquire(self) < 0) return NULL;
    const reel_video_info *i = reel_decoder_info(self->dec);
    PyObject *d = PyDict_New();
    int ok = d &&
        dict_set(d, "name", PyUnicode_DecodeFSDefault(dec_name(self))) == 0 &&
        dict_set(d, "codec", str_or_empty(i->codec)) == 0 &&
        dict_set(d, "profile", str_or_empty(i->profile)) == 0 &&
        dict_set(d, "pix_fmt", str_or_empty(i->pix_fmt)) == 0 &&
        dict_set(d, "container", str_or_empty(i->container)) == 0 &&
        dict_set(d, "color_space", str_or_empty(i->color_space)) == 0 &&
        dict_set(d, "color_range", str_or_empty(i->color_range)) == 0 &&
        dict_set(d, "color_primaries", str_or_empty(i->color_primaries)) == 0 &&
        dict_set(d, "width", PyLong_FromLong(i->width)) == 0 &&
        dict_set(d, "height", PyLong_FromLong(i->height)) == 0 &&
        dict_set(d, "bit_depth", PyLong_FromLong(i->bit_depth)) == 0 &&
        dict_set(d, "rotation", PyLong_FromLong(i->rotation)) == 0 &&
        dict_set(d, "sar", Py_BuildValue("(ii)", i->sar_num, i->sar_den)) == 0 &&
        dict_set(d, "avg_fps", Py_BuildValue("(ii)", i->avg_fps_num, i->avg_fps_den)) == 0 &&
        dict_set(d, "rate", Py_BuildValue("(ii)", i->rate_num, i->rate_den)) == 0 &&
        dict_set(d, "time_base", Py_BuildValue("(ii)", i->time_base_num, i->time_base_den)) == 0 &&
        dict_set(d, "stream_index", PyLong_FromLong(i->stream_index)) == 0 &&
        dict_set(d, "num_streams", PyLong_FromLong(i->num_streams)) == 0 &&
        dict_set(d, "has_audio", PyBool_FromLong(i->has_audio)) == 0 &&
        dict_set(d, "variable_size", PyBool_FromLong(i->variable_size)) == 0 &&
        dict_set(d, "start_pts", PyLong_FromLongLong(i->start_pts)) == 0 &&
        dict_set(d, "start_time", PyFloat_FromDouble(i->start_time)) == 0 &&
        dict_set(d, "duration", PyFloat_FromDouble(i->duration)) == 0 &&
        dict_set(d, "num_frames", PyLong_FromLongLong(i->num_frames)) == 0 &&
        dict_set(d, "num_keyframes", PyLong_FromLongLong(i->num_keyframes)) == 0 &&
        dict_set(d, "bit_rate", PyLong_FromLongLong(i->bit_rate)) == 0 &&
        dict_set(d, "file_size", PyLong_FromLongLong(i->file_size)) == 0 &&
        dict_set(d, "index_source", PyLong_FromLong(i->index_source)) == 0;
    decoder_release(self);
    if (!ok) { Py_XDECREF(d); return NULL; }
    return d;
}

static PyObject *decoder_frame_table(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (decoder_acquire(self) < 0) return NULL;
    int64_t n = 0;
    const reel_frame_entry *t = reel_decoder_frame_table(self->dec, &n);
    PyObject *lists[5] = { NULL };
    PyObject *r = NULL;
    int ok = 1;
    for (int k = 0; k < 5 && ok; k++) ok = (lists[k] = PyList_New((Py_ssize_t)n)) != NULL;
    for (int64_t i = 0; i < n && ok; i++) {
        PyObject *v[5] = { PyLong_FromLongLong(t[i].pts), PyLong_FromLongLong(t[i].duration),
                           PyLong_FromLongLong(t[i].pos), PyBool_FromLong(t[i].flags & REEL_FRAME_KEY),
                           PyLong_FromLong(t[i].decode_order) };
        for (int k = 0; k < 5; k++) {
            if (!v[k]) ok = 0;
            else PyList_SET_ITEM(lists[k], (Py_ssize_t)i, v[k]);
        }
    }
    decoder_release(self);
    if (ok) r = PyTuple_Pack(5, lists[0], lists[1], lists[2], lists[3], lists[4]);
    for (int k = 0; k < 5; k++) Py_XDECREF(lists[k]);
    return r;
}

static PyObject *decoder_keyframes(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (decoder_acquire(self) < 0) return NULL;
    int64_t n = 0;
    const int64_t *k = reel_decoder_keyframes(self->dec, &n);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        PyObject *v = PyLong_FromLongLong(k[i]);
        if (!v) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, (Py_ssize_t)i, v);
    }
    decoder_release(self);
    return l;
}

static PyObject *decoder_index_at_time(DecoderObject *self, PyObject *arg)
{
    double t = PyFloat_AsDouble(arg);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    if (decoder_acquire(self) < 0) return NULL;
    int64_t idx = 0;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_index_at_time(self->dec, t, &idx, &err);
    decoder_release(self);
    if (r != REEL_OK) return raise_decoder(self, r, &err);
    return PyLong_FromLongLong(idx);
}

static PyObject *decoder_save_index(DecoderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "path", NULL };
    PyObject *path = Py_None, *pb = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:save_index", kwlist, &path)) return NULL;
    if (path != Py_None && !PyUnicode_FSConverter(path, &pb)) return NULL;
    if (decoder_acquire(self) < 0) { Py_XDECREF(pb); return NULL; }
    reel_error err;
    reel_error_clear(&err);
    const char *p = pb ? PyBytes_AS_STRING(pb) : NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_decoder_save_index(self->dec, p, &err);
    Py_END_ALLOW_THREADS
    decoder_release(self);
    Py_XDECREF(pb);
    if (r != REEL_OK) return raise_decoder(self, r, &err);
    Py_RETURN_NONE;
}

/* Per-frame metadata lists for resolved indices (lock held). */
static int frames_fill_meta(DecoderObject *self, FramesObject *f, const int64_t *idx, Py_ssize_t n)
{
    int64_t count = 0;
    const reel_frame_entry *t = reel_decoder_frame_table(self->dec, &count);
    const reel_video_info *info = reel_decoder_info(self->dec);
    double tb = info->time_base_den ? (double)info->time_base_num / (double)info->time_base_den : 0.0;
    PyObject *li = PyTuple_New(n), *lp = PyTuple_New(n), *ld = PyTuple_New(n);
    if (!li || !lp || !ld) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = idx[i] < 0 ? idx[i] + count : idx[i];
        if (k < 0 || k >= count) k = 0; /* cannot happen after a successful decode */
        PyObject *a = PyLong_FromLongLong(k);
        PyObject *b = PyFloat_FromDouble((double)t[k].pts * tb);
        PyObject *c = PyFloat_FromDouble((double)t[k].duration * tb);
        if (!a || !b || !c) { Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(c); goto fail; }
        PyTuple_SET_ITEM(li, i, a);
        PyTuple_SET_ITEM(lp, i, b);
        PyTuple_SET_ITEM(ld, i, c);
    }
    f->indices = li;
    f->pts = lp;
    f->dur = ld;
    f->layout = PyUnicode_FromString(self->transform.layout == REEL_LAYOUT_CHW ? "NCHW" : "NHWC");
    return f->layout ? 0 : -1;
fail:
    Py_XDECREF(li);
    Py_XDECREF(lp);
    Py_XDECREF(ld);
    return -1;
}

static FramesObject *decoder_alloc_frames(DecoderObject *self, Py_ssize_t n)
{
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    int64_t shape[4];
    shape[0] = n;
    if (self->transform.layout == REEL_LAYOUT_CHW) { shape[1] = 3; shape[2] = self->out_h; shape[3] = self->out_w; }
    else { shape[1] = self->out_h; shape[2] = self->out_w; shape[3] = 3; }
    FramesObject *f = frames_alloc(st, self->transform.dtype, 4, shape);
    if (f && (size_t)n && f->nbytes / (size_t)n != self->frame_bytes) {
        Py_DECREF(f);
        PyErr_SetString(PyExc_SystemError, "reel: frame size mismatch");
        return NULL;
    }
    return f;
}

/* mode 0: indices; 1: seconds */
static PyObject *decoder_get_common(DecoderObject *self, PyObject *arg, int by_time)
{
    Py_ssize_t n = 0;
    int64_t *idx = NULL;
    double *secs = NULL;
    if (by_time) {
        secs = parse_double_seq(arg, &n, "seconds must be a sequence of numbers");
        if (!secs) return NULL;
        idx = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *idx);
        if (!idx) { PyMem_Free(secs); return PyErr_NoMemory(); }
    } else {
        idx = parse_int64_seq(arg, &n, "indices must be a sequence of ints");
        if (!idx) return NULL;
    }
    FramesObject *f = decoder_alloc_frames(self, n);
    if (!f || decoder_acquire(self) < 0) {
        Py_XDECREF(f);
        PyMem_Free(idx);
        PyMem_Free(secs);
        return NULL;
    }
    reel_error err;
    reel_error_clear(&err);
    reel_decode_stats stats;
    memset(&stats, 0, sizeof stats);
    int r;
    Py_BEGIN_ALLOW_THREADS
    if (by_time)
        r = reel_decoder_get_frames_at_times(self->dec, secs, (size_t)n, &self->transform, f->data, f->nbytes,
                                             idx, &stats, &err);
    else
        r = reel_decoder_get_frames(self->dec, idx, (size_t)n, &self->transform, f->data, f->nbytes, &stats, &err);
    Py_END_ALLOW_THREADS
    int meta = 0;
    if (r == REEL_OK) {
        self->stats = stats;
        meta = frames_fill_meta(self, f, idx, n);
    }
    decoder_release(self);
    PyMem_Free(idx);
    PyMem_Free(secs);
    if (r != REEL_OK) {
        Py_DECREF(f);
        return raise_decoder(self, r, &err);
    }
    if (meta < 0) { Py_DECREF(f); return NULL; }
    return (PyObject *)f;
}

static PyObject *decoder_get_frames(DecoderObject *self, PyObject *arg) { return decoder_get_common(self, arg, 0); }
static PyObject *decoder_get_frames_at_times(DecoderObject *self, PyObject *arg) { return decoder_get_common(self, arg, 1); }

static PyObject *decoder_stats(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    const reel_decode_stats *s = &self->stats;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:d}",
                         "frames_requested", (long long)s->frames_requested,
                         "frames_returned", (long long)s->frames_returned,
                         "frames_decoded", (long long)s->frames_decoded,
                         "frames_skipped", (long long)s->frames_skipped,
                         "packets_read", (long long)s->packets_read,
                         "seeks", (long long)s->seeks,
                         "corrupt_packets", (long long)s->corrupt_packets,
                         "key_restarts", (long long)s->key_restarts,
                         "keys_probed", (long long)s->keys_probed,
                         "amplification", s->amplification);
}

static PyObject *reduce_forbidden(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyErr_Format(PyExc_TypeError, "cannot pickle '%s' objects", Py_TYPE(self)->tp_name);
    return NULL;
}

static PyMethodDef decoder_methods[] = {
    { "info", (PyCFunction)decoder_info, METH_NOARGS, "info()\n--\n\nStream metadata as a dict." },
    { "frame_table", (PyCFunction)decoder_frame_table, METH_NOARGS,
      "frame_table()\n--\n\n(pts, duration, pos, key, decode_order): five lists, one entry per frame." },
    { "keyframes", (PyCFunction)decoder_keyframes, METH_NOARGS, "keyframes()\n--\n\nFrame indices of the keyframes." },
    { "index_at_time", (PyCFunction)decoder_index_at_time, METH_O, "index_at_time(seconds)\n--\n\nThe frame displayed at `seconds`." },
    { "save_index", (PyCFunction)(void (*)(void))decoder_save_index, METH_VARARGS | METH_KEYWORDS,
      "save_index(path=None)\n--\n\nWrites the sidecar index (default '<video>.reelidx')." },
    { "get_frames", (PyCFunction)decoder_get_frames, METH_O, "get_frames(indices)\n--\n\nFrames at indices, in request order." },
    { "get_frames_at_times", (PyCFunction)decoder_get_frames_at_times, METH_O,
      "get_frames_at_times(seconds)\n--\n\nFrames displayed at the given times." },
    { "stats", (PyCFunction)decoder_stats, METH_NOARGS, "stats()\n--\n\nDecode statistics of the last call." },
    { "close", (PyCFunction)decoder_close, METH_NOARGS, "close()\n--\n\nCloses the video; idempotent." },
    { "__reduce__", (PyCFunction)reduce_forbidden, METH_NOARGS, NULL },
    { NULL }
};

static PyGetSetDef decoder_getset[] = {
    { "closed", (getter)decoder_get_closed, NULL, "True after close().", NULL },
    { "name", (getter)decoder_get_name, NULL, "The path, or the name given for memory/file sources.", NULL },
    { "frame_shape", (getter)decoder_get_frame_shape, NULL, "Shape of one output frame.", NULL },
    { "dtype", (getter)decoder_get_dtype, NULL, "Output element type.", NULL },
    { NULL }
};

static PyMemberDef decoder_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(DecoderObject, weakreflist), READONLY, NULL },
    { NULL }
};

static PyType_Slot decoder_slots[] = {
    { Py_tp_doc, (void *)"Low-level decoder; use reel.VideoDecoder." },
    { Py_tp_new, (void *)PyType_GenericNew },
    { Py_tp_init, (void *)decoder_init },
    { Py_tp_dealloc, (void *)decoder_dealloc },
    { Py_tp_traverse, (void *)decoder_traverse },
    { Py_tp_clear, (void *)decoder_clear },
    { Py_tp_methods, decoder_methods },
    { Py_tp_getset, decoder_getset },
    { Py_tp_members, decoder_members },
    { 0, NULL }
};

static PyType_Spec decoder_spec = {
    .name = "reel._reel.Decoder",
    .basicsize = sizeof(DecoderObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = decoder_slots,
};

/* ======================================================================
 * Loader: wraps reel_loader and its dataset. Batches are handed out as
 * views whose owner, a BatchHandle, gives the buffer back to the ring when
 * the last view (torch tensor, numpy array, Frames) is freed.
 * ====================================================================== */

typedef struct LoaderObject {
    PyObject_HEAD
    reel_dataset *ds;
    reel_loader *loader;
    PyThread_type_lock lock; /* one consumer at a time */
    pid_t pid;
    Py_ssize_t outstanding;  /* live BatchHandles */
    int64_t ring_size;       /* batch buffers in the ring; 0: unknown */
    /* Mirror of the consumer's position, to tell a next() that would wait
     * forever (every buffer held) from one that ends the epoch. */
    int64_t epochs;          /* settings.epochs; 0: no limit */
    int64_t epoch;           /* current epoch */
    int64_t delivered;       /* next() results this epoch (batches and raised failures) */
    int64_t cur_batches;     /* batches in this epoch; -1: unknown (after a mid-epoch restore) */
    int closing;             /* close() called: destroy when outstanding hits 0 */
    PyObject *weakreflist;
} LoaderObject;

typedef struct BatchHandleObject {
    PyObject_HEAD
    LoaderObject *loader;
    reel_batch *batch;
    PyObject *weakreflist;
} BatchHandleObject;

/* Settings by name: a static table over reel_loader_settings, so Python
 * passes {"sampler.frames_per_clip": 8, ...} and unknown names are errors. */
typedef struct setting_field {
    const char *name;
    size_t offset;
    char type; /* i int, I int64, U uint64, d double, f float, 3 float[3], z size_t */
} setting_field;

#define SF(n, m, t) { n, offsetof(reel_loader_settings, m), t }
static const setting_field loader_fields[] = {
    SF("sampler.kind", sampler.kind, 'i'),
    SF("sampler.clips_per_video", sampler.clips_per_video, 'i'),
    SF("sampler.frames_per_clip", sampler.frames_per_clip, 'i'),
    SF("sampler.frame_stride", sampler.frame_stride, 'i'),
    SF("sampler.seconds_between_frames", sampler.seconds_between_frames, 'd'),
    SF("sampler.range_start", sampler.range_start, 'd'),
    SF("sampler.range_end", sampler.range_end, 'd'),
    SF("sampler.policy", sampler.policy, 'i'),
    SF("transform.resize", transform.resize, 'i'),
    SF("transform.short_side", transform.short_side, 'i'),
    SF("transform.resize_width", transform.resize_width, 'i'),
    SF("transform.resize_height", transform.resize_height, 'i'),
    SF("transform.crop", transform.crop, 'i'),
    SF("transform.crop_width", transform.crop_width, 'i'),
    SF("transform.crop_height", transform.crop_height, 'i'),
    SF("transform.scale_min", transform.scale_min, 'd'),
    SF("transform.scale_max", transform.scale_max, 'd'),
    SF("transform.ratio_min", transform.ratio_min, 'd'),
    SF("transform.ratio_max", transform.ratio_max, 'd'),
    SF("transform.flip", transform.flip, 'i'),
    SF("transform.flip_probability", transform.flip_probability, 'd'),
    SF("transform.filter", transform.filter, 'i'),
    SF("transform.resize_mode", transform.resize_mode, 'i'),
    SF("transform.apply_rotation", transform.apply_rotation, 'i'),
    SF("transform.dtype", transform.dtype, 'i'),
    SF("transform.layout", transform.layout, 'i'),
    SF("transform.scale", transform.scale, 'f'),
    SF("transform.mean", transform.mean, '3'),
    SF("transform.std", transform.std, '3'),
    SF("batch_size", batch_size, 'i'),
    SF("drop_last", drop_last, 'i'),
    SF("shuffle", shuffle, 'i'),
    SF("seed", seed, 'U'),
    SF("epochs", epochs, 'I'),
    SF("rank", rank, 'i'),
    SF("world_size", world_size, 'i'),
    SF("shard_mode", shard_mode, 'i'),
    SF("ordered", ordered, 'i'),
    SF("on_error", on_error, 'i'),
    SF("max_replacements", max_replacements, 'i'),
    SF("sample_time_limit", sample_time_limit, 'd'),
    SF("open_threads", open_threads, 'i'),
    SF("decode_threads", decode_threads, 'i'),
    SF("collate_threads", collate_threads, 'i'),
    SF("decoder_threads", decoder_threads, 'i'),
    SF("prefetch_batches", prefetch_batches, 'i'),
    SF("queue_capacity", queue_capacity, 'i'),
    SF("alignment", alignment, 'z'),
    SF("index_mode", index_mode, 'i'),
    SF("corrupt_policy", corrupt_policy, 'i'),
    SF("trace", trace, 'i'),
    SF("trace_capacity", trace_capacity, 'i'),
    SF("pin_memory", pin_memory, 'i'),
};
#undef SF
#define N_LOADER_FIELDS (sizeof loader_fields / sizeof loader_fields[0])

static int setting_store(reel_loader_settings *s, const setting_field *f, PyObject *v)
{
    char *p = (char *)s + f->offset;
    switch (f->type) {
    case 'i': {
        long x = PyLong_AsLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        if (x < INT32_MIN || x > INT32_MAX) { PyErr_Format(PyExc_OverflowError, "%s out of range", f->name); return -1; }
        *(int *)p = (int)x;
        return 0;
    }
    case 'I': {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        *(int64_t *)p = x;
        return 0;
    }
    case 'U': {
        unsigned long long x = PyLong_AsUnsignedLongLongMask(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *(uint64_t *)p = x;
        return 0;
    }
    case 'z': {
        size_t x = PyLong_AsSize_t(v);
        if (x == (size_t)-1 && PyErr_Occurred()) return -1;
        *(size_t *)p = x;
        return 0;
    }
    case 'd': {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        *(double *)p = x;
        return 0;
    }
    case 'f': {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        *(float *)p = (float)x;
        return 0;
    }
    case '3':
        return parse_floats3(v, (float *)p, f->name);
    }
    PyErr_SetString(PyExc_SystemError, "reel: bad settings table");
    return -1;
}

static PyObject *setting_load(const reel_loader_settings *s, const setting_field *f)
{
    const char *p = (const char *)s + f->offset;
    switch (f->type) {
    case 'i': return PyLong_FromLong(*(const int *)p);
    case 'I': return PyLong_FromLongLong(*(const int64_t *)p);
    case 'U': return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case 'z': return PyLong_FromSize_t(*(const size_t *)p);
    case 'd': return PyFloat_FromDouble(*(const double *)p);
    case 'f': return PyFloat_FromDouble(*(const float *)p);
    case '3': {
        const float *a = (const float *)p;
        return Py_BuildValue("(ddd)", (double)a[0], (double)a[1], (double)a[2]);
    }
    }
    PyErr_SetString(PyExc_SystemError, "reel: bad settings table");
    return NULL;
}

static PyObject *mod_loader_defaults(PyObject *module, PyObject *unused)
{
    (void)module; (void)unused;
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < N_LOADER_FIELDS; i++)
        if (dict_set(d, loader_fields[i].name, setting_load(&s, &loader_fields[i])) < 0) Py_CLEAR(d);
    return d;
}

static int loader_build_dataset(reel_state *st, PyObject *dataset, reel_dataset **out)
{
    reel_error err;
    reel_error_clear(&err);
    int r;
    if (PyBytes_Check(dataset) || PyUnicode_Check(dataset) || PyObject_HasAttrString(dataset, "__fspath__")) {
        PyObject *pb = NULL;
        if (!PyUnicode_FSConverter(dataset, &pb)) return -1;
        const char *path = PyBytes_AS_STRING(pb);
        Py_BEGIN_ALLOW_THREADS
        r = reel_dataset_open(out, path, &err);
        Py_END_ALLOW_THREADS
        if (r != REEL_OK) raise_err(st, r, &err, path);
        Py_DECREF(pb);
        return r == REEL_OK ? 0 : -1;
    }
    PyObject *seq = PySequence_Fast(dataset, "dataset must be a path or a sequence of entries");
    if (!seq) return -1;
    reel_dataset *ds = NULL;
    r = reel_dataset_create(&ds, &err);
    if (r != REEL_OK) { Py_DECREF(seq); raise_err(st, r, &err, NULL); return -1; }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *path_obj, *label, *cls;
        double start = 0.0, end = -1.0;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OOO|dd:dataset entry", &path_obj, &label, &cls, &start, &end))
            goto fail;
        PyObject *pb = NULL;
        if (!PyUnicode_FSConverter(path_obj, &pb)) goto fail;
        if (cls != Py_None) {
            const char *name = PyUnicode_AsUTF8(cls);
            r = name ? reel_dataset_add_named(ds, PyBytes_AS_STRING(pb), name, start, end, &err) : REEL_OK;
            if (!name) { Py_DECREF(pb); goto fail; }
        } else {
            long long lab = -1;
            if (label != Py_None) {
                lab = PyLong_AsLongLong(label);
                if (lab == -1 && PyErr_Occurred()) { Py_DECREF(pb); goto fail; }
            }
            r = reel_dataset_add(ds, PyBytes_AS_STRING(pb), lab, start, end, &err);
        }
        if (r != REEL_OK) {
            raise_err(st, r, &err, PyBytes_AS_STRING(pb));
            Py_DECREF(pb);
            goto fail;
        }
        Py_DECREF(pb);
    }
    Py_DECREF(seq);
    *out = ds;
    return 0;
fail:
    Py_DECREF(seq);
    reel_dataset_free(&ds);
    return -1;
}

static int loader_init(LoaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "dataset", "settings", NULL };
    PyObject *dataset, *settings = Py_None;
    if (self->lock) {
        PyErr_SetString(PyExc_RuntimeError, "reel loader: __init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:Loader", kwlist, &dataset, &settings)) return -1;
    reel_state *st = state_of((PyObject *)self);
    if (!st) return -1;
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    if (settings != Py_None) {
        if (!PyDict_Check(settings)) { PyErr_SetString(PyExc_TypeError, "settings must be a dict"); return -1; }
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(settings, &pos, &key, &value)) {
            const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
            if (!k) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "settings keys must be str");
                return -1;
            }
            size_t i = 0;
            while (i < N_LOADER_FIELDS && strcmp(loader_fields[i].name, k)) i++;
            if (i == N_LOADER_FIELDS) { PyErr_Format(PyExc_ValueError, "unknown loader setting '%s'", k); return -1; }
            if (setting_store(&s, &loader_fields[i], value) < 0) return -1;
        }
    }
    self->lock = PyThread_allocate_lock();
    if (!self->lock) { PyErr_NoMemory(); return -1; }
    self->pid = getpid();
    if (loader_build_dataset(st, dataset, &self->ds) < 0) return -1;
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_loader_create(&self->loader, self->ds, &s, &err);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        reel_dataset_free(&self->ds);
        raise_err(st, r, &err, NULL);
        return -1;
    }
    /* The number of ring buffers is not in the C API; the collate stage's
     * queue holds one entry per buffer (see reel_loader_create). */
    reel_loader_metrics m;
    memset(&m, 0, sizeof m);
    if (reel_loader_get_metrics(self->loader, &m) == REEL_OK) {
        int64_t n = m.stages[REEL_STAGE_COLLATE].queue_capacity;
        if (n > 0 && m.ring_bytes > 0 && m.ring_bytes % n == 0) self->ring_size = n;
    }
    self->epochs = s.epochs;
    self->epoch = 0;
    self->delivered = 0;
    self->cur_batches = reel_loader_batches_per_epoch(self->loader);
    return 0;
}

/* Stops the threads and frees the loader and dataset, unless batches are
 * still out. Takes the consumer lock (waiting for a next() in flight), then
 * detaches the pointers under the GIL, so that calls made with the GIL held
 * (metrics, failures, release) never see a freed loader; the join runs
 * without the GIL. */
static void loader_destroy_now(LoaderObject *self)
{
    if (self->pid != getpid()) { /* a forked copy: its threads are not here */
        self->loader = NULL;
        self->ds = NULL;
        return;
    }
    if (!self->loader && !self->ds) return;
    if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    if (self->outstanding == 0) {
        reel_loader *l = self->loader;
        reel_dataset *ds = self->ds;
        self->loader = NULL;
        self->ds = NULL;
        Py_BEGIN_ALLOW_THREADS
        reel_loader_destroy(&l);
        reel_dataset_free(&ds);
        Py_END_ALLOW_THREADS
    }
    PyThread_release_lock(self->lock);
}

static void loader_dealloc(LoaderObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    if (self->lock) {
        loader_destroy_now(self);
        if (self->pid == getpid()) PyThread_free_lock(self->lock);
        self->lock = NULL;
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int loader_check(LoaderObject *self)
{
    if (!self->lock) {
        PyErr_SetString(PyExc_ValueError, "reel loader is not initialised");
        return -1;
    }
    if (self->pid != getpid()) {
        PyErr_SetString(PyExc_RuntimeError,
                        "reel.Loader: this loader was created in another process (before a fork); "
                        "its threads do not exist here. Create the Loader in this process.");
        return -1;
    }
    if (self->closing || !self->loader) {
        PyErr_SetString(PyExc_ValueError, "reel.Loader is closed");
        return -1;
    }
    return 0;
}

static void batchhandle_dealloc(BatchHandleObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    LoaderObject *l = self->loader;
    if (l) {
        if (self->batch && l->loader && l->pid == getpid()) reel_loader_release(l->loader, self->batch);
        self->batch = NULL;
        l->outstanding--;
        if (l->closing && l->outstanding == 0) loader_destroy_now(l);
        self->loader = NULL;
        Py_DECREF(l);
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyMemberDef batchhandle_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(BatchHandleObject, weakreflist), READONLY, NULL },
    { NULL }
};

static PyMethodDef batchhandle_methods[] = {
    { "__reduce__", (PyCFunction)reduce_forbidden, METH_NOARGS, NULL },
    { NULL }
};

static PyType_Slot batchhandle_slots[] = {
    { Py_tp_doc, (void *)"Owner of one batch buffer: gives it back to the loader's ring when freed." },
    { Py_tp_dealloc, (void *)batchhandle_dealloc },
    { Py_tp_new, (void *)frames_new_forbidden },
    { Py_tp_members, batchhandle_members },
    { Py_tp_methods, batchhandle_methods },
    { 0, NULL }
};

static PyType_Spec batchhandle_spec = {
    .name = "reel._reel.BatchHandle",
    .basicsize = sizeof(BatchHandleObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = batchhandle_slots,
};

static const char *batch_layout_name(int layout)
{
    switch (layout) {
    case REEL_BATCH_BCTHW: return "BCTHW";
    case REEL_BATCH_BTHWC: return "BTHWC";
    default: return "BTCHW";
    }
}

static PyObject *clip_info_tuple(const reel_clip_info *c, int64_t frames_per_clip)
{
    PyObject *fi = PyList_New((Py_ssize_t)frames_per_clip), *pts = PyList_New((Py_ssize_t)frames_per_clip);
    if (!fi || !pts) goto fail;
    for (int64_t t = 0; t < frames_per_clip; t++) {
        PyObject *a = PyLong_FromLongLong(c->frame_indices ? c->frame_indices[t] : -1);
        PyObject *b = PyLong_FromLongLong(c->pts ? c->pts[t] : 0);
        if (!a || !b) { Py_XDECREF(a); Py_XDECREF(b); goto fail; }
        PyList_SET_ITEM(fi, (Py_ssize_t)t, a);
        PyList_SET_ITEM(pts, (Py_ssize_t)t, b);
    }
    PyObject *path = c->path ? PyUnicode_DecodeFSDefault(c->path) : Py_NewRef(Py_None);
    if (!path) goto fail;
    return Py_BuildValue("{s:N,s:L,s:L,s:L,s:L,s:i,s:i,s:O,s:O,s:(iiii),s:N,s:N,s:(ii)}",
                         "path", path,
                         "label", (long long)c->label,
                         "sample", (long long)c->sample,
                         "requested", (long long)c->requested,
                         "position", (long long)c->position,
                         "clip", (int)c->clip,
                         "attempt", (int)c->attempt,
                         "padded", c->padded ? Py_True : Py_False,
                         "flipped", c->flipped ? Py_True : Py_False,
                         "crop", (int)c->crop_x, (int)c->crop_y, (int)c->crop_w, (int)c->crop_h,
                         "frame_indices", fi,
                         "pts", pts,
                         "time_base", (int)c->time_base_num, (int)c->time_base_den);
fail:
    Py_XDECREF(fi);
    Py_XDECREF(pts);
    return NULL;
}

/* The path of the failure whose reason is `message`, or NULL. */
static const char *failure_path(reel_loader *l, const char *message, reel_failure *f)
{
    int64_t n = reel_loader_num_failures(l);
    for (int64_t i = n - 1; i >= 0; i--) {
        if (reel_loader_failure(l, i, f, NULL) != REEL_OK) continue;
        if (!strcmp(f->reason, message)) return f->path;
    }
    return NULL;
}


static PyObject *loader_next(LoaderObject *self, PyObject *args)
{
    double timeout = -1.0;
    if (!PyArg_ParseTuple(args, "|d:next", &timeout)) return NULL;
    if (timeout != timeout) {
        PyErr_SetString(PyExc_ValueError, "reel.Loader: timeout is NaN");
        return NULL;
    }
    if (loader_check(self) < 0) return NULL;
    int ends_epoch = self->cur_batches >= 0 && self->delivered >= self->cur_batches;
    int finished = self->epochs > 0 && self->epoch >= self->epochs;
    if (self->ring_size > 0 && self->outstanding >= self->ring_size && self->cur_batches >= 0 &&
        !ends_epoch && !finished) {
        /* reel_loader_next would wait forever for a free buffer */
        PyErr_Format(PyExc_RuntimeError,
                     "reel.Loader: all %lld batch buffers are held by live batches (or tensors and arrays "
                     "viewing them); free one before asking for the next batch, copy what you keep, or "
                     "raise prefetch_batches", (long long)self->ring_size);
        return NULL;
    }
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    reel_batch *b = NULL;
    reel_error err;
    reel_error_clear(&err);
    int r;
    /* The wait goes in slices of at most 0.1 s, with the GIL taken back in
     * between to run signal handlers: Ctrl-C stops a long wait. The lock
     * stays held from the call that returns a batch until the batch has its
     * handle (outstanding > 0), so a close() from another thread cannot free
     * it in between. */
    const int64_t t_start = reel__clock_ns();
    for (;;) {
        double slice = 0.1;
        if (timeout >= 0) {
            double left = timeout - (double)(reel__clock_ns() - t_start) / 1e9;
            slice = left < 0 ? 0 : left < slice ? left : slice;
        }
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        r = self->loader ? reel_loader_next_timed(self->loader, &b, slice, &err) : REEL_E_CANCELLED;
        if (r == REEL_E_AGAIN) PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
        if (r != REEL_E_AGAIN) break;
        if (PyErr_CheckSignals() < 0) return NULL;
        if (timeout >= 0 && (double)(reel__clock_ns() - t_start) / 1e9 >= timeout) {
            PyErr_Format(PyExc_TimeoutError, "reel.Loader: no batch within %g s", timeout);
            return NULL;
        }
    }
    BatchHandleObject *h = NULL;
    if (r == REEL_OK && b) {
        h = (BatchHandleObject *)st->BatchHandleType->tp_alloc(st->BatchHandleType, 0);
        if (h) {
            h->loader = (LoaderObject *)Py_NewRef((PyObject *)self);
            h->batch = b;
            self->outstanding++;
        } else {
            reel_loader_release(self->loader, b);
        }
    }
    if (r == REEL_OK && !b) {
        if (!finished) {
            self->epoch++;
            self->delivered = 0;
            self->cur_batches = reel_loader_batches_per_epoch(self->loader);
        }
    } else if (r != REEL_E_CANCELLED) {
        self->delivered++;
    }
    PyThread_release_lock(self->lock);
    if (r == REEL_OK && b && !h) return NULL;
    if (r != REEL_OK) {
        if (r == REEL_E_CANCELLED && !self->loader) {
            PyErr_SetString(PyExc_ValueError, "reel.Loader is closed");
            return NULL;
        }
        reel_failure f;
        const char *path = self->loader ? failure_path(self->loader, err.message, &f) : NULL;
        return raise_err(st, r, &err, path);
    }
    if (!b) Py_RETURN_NONE;

    PyObject *result = NULL, *clips = NULL, *meta = NULL;
    FramesObject *frames = NULL, *labels = NULL;
    int ndim = b->ndim;
    int64_t expect = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (b->strides[i] != expect && b->shape[i] > 1) { ndim = -1; break; }
        expect *= b->shape[i];
    }
    if (ndim < 1 || ndim > REEL_PY_MAXDIM || b->dtype < 0 || b->dtype > REEL_DTYPE_BFLOAT16) {
        PyErr_SetString(PyExc_SystemError, "reel: the loader returned a batch that is not C-contiguous");
        goto done;
    }
    frames = frames_view(st, (PyObject *)h, b->data, b->dtype, ndim, b->shape);
    if (!frames) goto done;
    if (!(frames->layout = PyUnicode_FromString(batch_layout_name(b->layout)))) goto done;
    int64_t nclips = b->num_clips;
    labels = frames_alloc(st, DT_INT64, 1, &nclips);
    if (!labels) goto done;
    if (nclips) memcpy(labels->data, b->labels, (size_t)nclips * sizeof(int64_t));
    int64_t fpc = b->layout == REEL_BATCH_BCTHW ? b->shape[2] : b->shape[1];
    clips = PyList_New((Py_ssize_t)nclips);
    if (!clips) goto done;
    for (int64_t i = 0; i < nclips; i++) {
        PyObject *c = clip_info_tuple(&b->clips[i], fpc);
        if (!c) goto done;
        PyList_SET_ITEM(clips, (Py_ssize_t)i, c);
    }
    meta = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "epoch", (long long)b->epoch, "index", (long long)b->index,
                         "position", (long long)b->position, "num_samples", (long long)b->num_samples,
                         "num_failed", (long long)b->num_failed);
    if (!meta) goto done;
    result = PyTuple_Pack(4, (PyObject *)frames, (PyObject *)labels, clips, meta);
done:
    Py_XDECREF(frames);
    Py_XDECREF(labels);
    Py_XDECREF(clips);
    Py_XDECREF(meta);
    Py_DECREF(h); /* the frames view holds it now (or the batch goes back) */
    return result;
}

static PyObject *loader_close(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->lock || self->closing) Py_RETURN_NONE;
    self->closing = 1;
    if (self->outstanding == 0) loader_destroy_now(self);
    Py_RETURN_NONE;
}

static PyObject *loader_get_state(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    reel_loader_state s;
    memset(&s, 0, sizeof s);
    int r;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    r = self->loader ? reel_loader_get_state(self->loader, &s) : REEL_E_CANCELLED;
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_reel(st, r, NULL, NULL, NULL) : NULL;
    }
    return Py_BuildValue("(LL)", (long long)s.epoch, (long long)s.position);
}

static PyObject *loader_restore(LoaderObject *self, PyObject *args)
{
    long long epoch, position;
    if (!PyArg_ParseTuple(args, "LL:restore", &epoch, &position)) return NULL;
    if (loader_check(self) < 0) return NULL;
    reel_loader_state s = { .epoch = epoch, .position = position };
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    r = self->loader ? reel_loader_restore(self->loader, &s, &err) : REEL_E_CANCELLED;
    Py_END_ALLOW_THREADS
    if (r == REEL_OK) {
        self->epoch = epoch;
        self->delivered = 0;
        self->cur_batches = position == 0 ? reel_loader_batches_per_epoch(self->loader) : -1;
    }
    PyThread_release_lock(self->lock);
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_err(st, r, &err, NULL) : NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *loader_batches_per_epoch(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    return PyLong_FromLongLong(reel_loader_batches_per_epoch(self->loader));
}

static PyObject *loader_metrics(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    reel_loader_metrics m;
    memset(&m, 0, sizeof m);
    int r = reel_loader_get_metrics(self->loader, &m); /* quick; with the GIL, see loader_destroy_now */
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_reel(st, r, NULL, NULL, NULL) : NULL;
    }
    PyObject *stages = PyList_New(REEL_STAGE_COUNT);
    for (int i = 0; stages && i < REEL_STAGE_COUNT; i++) {
        const reel_stage_metrics *s = &m.stages[i];
        PyObject *d = Py_BuildValue("{s:s,s:i,s:d,s:d,s:L,s:L,s:d,s:L}",
                                    "name", s->name ? s->name : "", "threads", s->threads,
                                    "busy_fraction", s->busy_fraction, "busy_seconds", s->busy_seconds,
                                    "items", (long long)s->items, "queue_depth", (long long)s->queue_depth,
                                    "queue_depth_avg", s->queue_depth_avg, "queue_capacity", (long long)s->queue_capacity);
        if (!d) { Py_CLEAR(stages); break; }
        PyList_SET_ITEM(stages, i, d);
    }
    if (!stages) return NULL;
    PyObject *d = Py_BuildValue(
        "{s:d,s:L,s:L,s:L,s:d,s:d,s:L,s:L,s:L,s:L,s:d,s:L,s:L,s:d,s:L,s:L,s:L,s:s,s:d,s:d,s:N,s:s}",
        "seconds", m.seconds, "frames", (long long)m.frames, "clips", (long long)m.clips,
        "batches", (long long)m.batches, "frames_per_second", m.frames_per_second,
        "clips_per_second", m.clips_per_second, "attempts", (long long)m.attempts,
        "successes", (long long)m.successes, "failures", (long long)m.failures,
        "replacements", (long long)m.replacements, "coverage", m.coverage,
        "frames_decoded", (long long)m.frames_decoded, "frames_returned", (long long)m.frames_returned,
        "amplification", m.amplification, "rss_bytes", (long long)m.rss_bytes,
        "peak_rss_bytes", (long long)m.peak_rss_bytes, "ring_bytes", (long long)m.ring_bytes,
        "ring_memory", m.ring_memory ? m.ring_memory : "plain",
        "data_time_s", m.data_time_s, "model_time_s", m.model_time_s, "stages", stages,
        "bottleneck", m.bottleneck ? m.bottleneck : "");
    return d;
}

static PyObject *loader_failures(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    int64_t n = reel_loader_num_failures(self->loader);
    PyObject *l = PyList_New(0);
    reel_failure f;
    for (int64_t i = 0; l && i < n; i++) {
        if (reel_loader_failure(self->loader, i, &f, NULL) != REEL_OK) continue;
        PyObject *path = PyUnicode_DecodeFSDefault(f.path);
        PyObject *reason = path ? PyUnicode_DecodeFSDefault(f.reason) : NULL;
        PyObject *d = reason ? Py_BuildValue("{s:N,s:N,s:i,s:L,s:L,s:L}", "path", path, "reason", reason,
                                             "status", f.status, "epoch", (long long)f.epoch,
                                             "position", (long long)f.position, "sample", (long long)f.sample)
                             : NULL;
        if (!reason) Py_XDECREF(path);
        if (!d || PyList_Append(l, d) < 0) { Py_XDECREF(d); Py_CLEAR(l); break; }
        Py_DECREF(d);
    }
    return l;
}

static PyObject *loader_write_trace(LoaderObject *self, PyObject *arg)
{
    PyObject *pb = NULL;
    if (loader_check(self) < 0 || !PyUnicode_FSConverter(arg, &pb)) return NULL;
    reel_error err;
    reel_error_clear(&err);
    const char *path = PyBytes_AS_STRING(pb);
    int r = reel_loader_write_trace(self->loader, path, &err); /* with the GIL, see loader_destroy_now */
    PyObject *res = Py_None;
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        res = st ? raise_err(st, r, &err, path) : NULL;
    } else {
        Py_INCREF(res);
    }
    Py_DECREF(pb);
    return res;
}

/* {'size', 'class_names'} of a dataset (a folder, a manifest, or C entries
 * as _loader._dataset_entries makes them), without starting a loader. */
static PyObject *dataset_info_dict(const reel_dataset *ds)
{
    size_t n = reel_dataset_size(ds), nc = reel_dataset_num_classes(ds);
    PyObject *names = PyList_New((Py_ssize_t)nc);
    for (size_t i = 0; names && i < nc; i++) {
        const char *s = reel_dataset_class_name(ds, (int64_t)i);
        PyObject *v = PyUnicode_DecodeUTF8(s ? s : "", s ? (Py_ssize_t)strlen(s) : 0, "replace");
        if (!v) { Py_CLEAR(names); break; }
        PyList_SET_ITEM(names, (Py_ssize_t)i, v);
    }
    if (!names) return NULL;
    return Py_BuildValue("{s:n,s:N}", "size", (Py_ssize_t)n, "class_names", names);
}

/* (samples per rank, batches) of one epoch: the loader's own arithmetic,
 * for callers that need the count before (or without) a loader. */
static PyObject *mod_epoch_shape(PyObject *module, PyObject *args)
{
    (void)module;
    long long n, batch;
    int world, shard_mode, drop_last;
    if (!PyArg_ParseTuple(args, "LiiLp:epoch_shape", &n, &world, &shard_mode, &batch, &drop_last)) return NULL;
    if (n < 0 || world < 1 || batch < 1 || (shard_mode != REEL_SHARD_PAD && shard_mode != REEL_SHARD_DROP)) {
        PyErr_SetString(PyExc_ValueError, "epoch_shape: need n >= 0, world_size >= 1, batch_size >= 1, a shard mode");
        return NULL;
    }
    int64_t per_rank, batches;
    reel__plan_shape(n, world, shard_mode, batch, drop_last, &per_rank, &batches);
    return Py_BuildValue("(LL)", (long long)per_rank, (long long)batches);
}

static PyObject *mod_dataset_info(PyObject *module, PyObject *source)
{
    reel_state *st = PyModule_GetState(module);
    reel_dataset *ds = NULL;
    if (loader_build_dataset(st, source, &ds) < 0) return NULL;
    PyObject *d = dataset_info_dict(ds);
    reel_dataset_free(&ds);
    return d;
}

static PyObject *loader_dataset_info(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    return dataset_info_dict(self->ds);
}

static PyObject *loader_get_closed(LoaderObject *self, void *c) { (void)c; return PyBool_FromLong(self->closing || !self->loader); }
static PyObject *loader_get_outstanding(LoaderObject *self, void *c) { (void)c; return PyLong_FromSsize_t(self->outstanding); }
static PyObject *loader_get_ring_size(LoaderObject *self, void *c) { (void)c; return PyLong_FromLongLong(self->ring_size); }

static PyMethodDef loader_methods[] = {
    { "next", (PyCFunction)loader_next, METH_VARARGS,
      "next(timeout=-1.0)\n--\n\n(frames, labels, clips, meta) for the next batch, or None at the end of an epoch;\n"
      "TimeoutError when timeout >= 0 seconds pass first." },
    { "close", (PyCFunction)loader_close, METH_NOARGS,
      "close()\n--\n\nStops the loader; it is freed once every batch handed out is freed." },
    { "get_state", (PyCFunction)loader_get_state, METH_NOARGS, "get_state()\n--\n\n(epoch, position)." },
    { "restore", (PyCFunction)loader_restore, METH_VARARGS, "restore(epoch, position)\n--\n\nRestarts at a saved state." },
    { "batches_per_epoch", (PyCFunction)loader_batches_per_epoch, METH_NOARGS, "batches_per_epoch()\n--\n\n" },
    { "metrics", (PyCFunction)loader_metrics, METH_NOARGS, "metrics()\n--\n\nA snapshot of the metrics as a dict." },
    { "failures", (PyCFunction)loader_failures, METH_NOARGS, "failures()\n--\n\nEvery failed attempt so far." },
    { "write_trace", (PyCFunction)loader_write_trace, METH_O, "write_trace(path)\n--\n\nChrome trace of the threads." },
    { "dataset_info", (PyCFunction)loader_dataset_info, METH_NOARGS, "dataset_info()\n--\n\n{'size', 'class_names'}." },
    { "__reduce__", (PyCFunction)reduce_forbidden, METH_NOARGS, NULL },
    { NULL }
};

static PyGetSetDef loader_getset[] = {
    { "closed", (getter)loader_get_closed, NULL, "True after close().", NULL },
    { "outstanding", (getter)loader_get_outstanding, NULL, "Batches handed out and not yet freed.", NULL },
    { "ring_size", (getter)loader_get_ring_size, NULL, "Batch buffers in the ring (0: unknown).", NULL },
    { NULL }
};

static PyMemberDef loader_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(LoaderObject, weakreflist), READONLY, NULL },
    { NULL }
};

static PyType_Slot loader_slots[] = {
    { Py_tp_doc, (void *)"Low-level loader; use reel.Loader." },
    { Py_tp_new, (void *)PyType_GenericNew },
    { Py_tp_init, (void *)loader_init },
    { Py_tp_dealloc, (void *)loader_dealloc },
    { Py_tp_methods, loader_methods },
    { Py_tp_getset, loader_getset },
    { Py_tp_members, loader_members },
    { 0, NULL }
};

static PyType_Spec loader_spec = {
    .name = "reel._reel.Loader",
    .basicsize = sizeof(LoaderObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = loader_slots,
};

/* ======================================================================
 * Module functions
 * ====================================================================== */

static PyObject *mod_version(PyObject *m, PyObject *u) { (void)m; (void)u; return PyUnicode_FromString(reel_version()); }
static PyObject *mod_ffmpeg_versions(PyObject *m, PyObject *u) { (void)m; (void)u; return PyUnicode_FromString(reel_ffmpeg_versions()); }

static PyObject *mod_set_log_level(PyObject *m, PyObject *arg)
{
    (void)m;
    long level = PyLong_AsLong(arg);
    if (level == -1 && PyErr_Occurred()) return NULL;
    reel_set_ffmpeg_log_level((int)level);
    Py_RETURN_NONE;
}

static PyObject *mod_strerror(PyObject *m, PyObject *arg)
{
    (void)m;
    long s = PyLong_AsLong(arg);
    if (s == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(reel_strerror((int)s));
}

/* _synth_write(path, codec="h264", width=160, height=120, frames=60, fps_num=25,
 *              fps_den=1, gop=16, bframes=2, vfr=False, ten_bit=False,
 *              yuv444=False, start=0.0, seed=1): a test video whose frames
 * carry their index (src/synth). Private, for tests and examples. */
static PyObject *mod_synth_write(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "path", "codec", "width", "height", "frames", "fps_num", "fps_den", "gop",
                              "bframes", "vfr", "ten_bit", "yuv444", "start", "seed", NULL };
    PyObject *path_obj, *pb = NULL;
    const char *codec = "h264";
    int width = 160, height = 120, frames = 60, fps_num = 25, fps_den = 1, gop = 16, bframes = 2;
    int vfr = 0, ten_bit = 0, yuv444 = 0;
    double start = 0.0;
    unsigned int seed = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$siiiiiiipppdI:_synth_write", kwlist, &path_obj, &codec,
                                     &width, &height, &frames, &fps_num, &fps_den, &gop, &bframes, &vfr,
                                     &ten_bit, &yuv444, &start, &seed))
        return NULL;
    if (!PyUnicode_FSConverter(path_obj, &pb)) return NULL;
    reel_synth_params p;
    reel_synth_default_params(&p);
    p.path = PyBytes_AS_STRING(pb);
    p.codec = codec;
    p.width = width; p.height = height; p.num_frames = frames;
    p.fps_num = fps_num; p.fps_den = fps_den; p.gop = gop; p.bframes = bframes;
    p.vfr = vfr; p.pix_fmt_10bit = ten_bit; p.yuv444 = yuv444; p.start_time = start; p.seed = seed;
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_synth_write(&p, &err);
    Py_END_ALLOW_THREADS
    PyObject *res = Py_None;
    if (r != REEL_OK) res = raise_err(PyModule_GetState(module), r, &err, p.path);
    else Py_INCREF(res);
    Py_DECREF(pb);
    return res;
}

/* _synth_read_indices(frames): the index embedded in each frame of a uint8
 * HWC Frames ([..., H, W, 3]); -1 where unreadable. */
static PyObject *mod_synth_read_indices(PyObject *module, PyObject *arg)
{
    reel_state *st = PyModule_GetState(module);
    if (!PyObject_TypeCheck(arg, st->FramesType)) {
        PyErr_SetString(PyExc_TypeError, "_synth_read_indices: expected reel.Frames");
        return NULL;
    }
    FramesObject *f = (FramesObject *)arg;
    if (f->dtype != DT_UINT8 || f->ndim < 3 || f->shape[f->ndim - 1] != 3) {
        PyErr_SetString(PyExc_ValueError, "_synth_read_indices: need uint8 frames shaped [..., H, W, 3]");
        return NULL;
    }
    int64_t h = f->shape[f->ndim - 3], w = f->shape[f->ndim - 2];
    int64_t count = 1;
    for (int i = 0; i < f->ndim - 3; i++) count *= f->shape[i];
    PyObject *l = PyList_New((Py_ssize_t)count);
    for (int64_t i = 0; l && i < count; i++) {
        const uint8_t *img = (const uint8_t *)f->data + (size_t)i * (size_t)(h * w * 3);
        PyObject *v = PyLong_FromLongLong(reel_synth_read_index(img, (int)w, (int)h, w * 3));
        if (!v) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, (Py_ssize_t)i, v);
    }
    return l;
}

static PyMethodDef module_methods[] = {
    { "version", mod_version, METH_NOARGS, "version()\n--\n\nlibreel's version." },
    { "ffmpeg_versions", mod_ffmpeg_versions, METH_NOARGS, "ffmpeg_versions()\n--\n\nFFmpeg library versions in use." },
    { "set_ffmpeg_log_level", mod_set_log_level, METH_O,
      "set_ffmpeg_log_level(level)\n--\n\n0 quiet, 1 errors, 2 warnings, 3 info (process-wide)." },
    { "strerror", mod_strerror, METH_O, "strerror(status)\n--\n\nDescription of a status code." },
    { "loader_defaults", mod_loader_defaults, METH_NOARGS, "loader_defaults()\n--\n\nThe C loader's default settings." },
    { "epoch_shape", mod_epoch_shape, METH_VARARGS,
      "epoch_shape(num_videos, world_size, shard_mode, batch_size, drop_last)\n--\n\n(samples per rank, batches) of an epoch." },
    { "dataset_info", mod_dataset_info, METH_O,
      "dataset_info(source)\n--\n\n{'size', 'class_names'} of a folder, a manifest or a list of entries." },
    { "_frames_from_bytes", mod_frames_from_bytes, METH_VARARGS, NULL },
    { "_synth_write", (PyCFunction)(void (*)(void))mod_synth_write, METH_VARARGS | METH_KEYWORDS,
      "Private: writes a test video whose frames carry their index." },
    { "_synth_read_indices", mod_synth_read_indices, METH_O,
      "Private: reads the index embedded in each synthetic frame (-1: unreadable)." },
    { NULL }
};

/* ======================================================================
 * Module: multi-phase init; every type and exception lives in module state
 * ====================================================================== */

static int add_exception(PyObject *m, PyObject **slot, const char *name, const char *doc, PyObject *bases)
{
    PyObject *dict = Py_BuildValue("{s:O,s:O}", "path", Py_None, "status", Py_None);
    if (!dict) return -1;
    char full[64];
    snprintf(full, sizeof full, "reel.%s", name);
    *slot = PyErr_NewExceptionWithDoc(full, doc, bases, dict);
    Py_DECREF(dict);
    if (!*slot) return -1;
    return PyModule_AddObjectRef(m, name, *slot);
}

static int add_subclass(PyObject *m, reel_state *st, PyObject **slot, const char *name, const char *doc,
                        PyObject *builtin)
{
    PyObject *bases = builtin ? PyTuple_Pack(2, st->ReelError, builtin) : PyTuple_Pack(1, st->ReelError);
    if (!bases) return -1;
    int r = add_exception(m, slot, name, doc, bases);
    Py_DECREF(bases);
    return r;
}

static int add_type(PyObject *m, PyTypeObject **slot, PyType_Spec *spec, const char *name)
{
    *slot = (PyTypeObject *)PyType_FromModuleAndSpec(m, spec, NULL);
    if (!*slot) return -1;
    return PyModule_AddObjectRef(m, name, (PyObject *)*slot);
}

static int module_exec(PyObject *m)
{
    reel_state *st = PyModule_GetState(m);
    if (add_type(m, &st->FramesType, &frames_spec, "Frames") < 0 ||
        add_type(m, &st->DecoderType, &decoder_spec, "Decoder") < 0 ||
        add_type(m, &st->LoaderType, &loader_spec, "Loader") < 0 ||
        add_type(m, &st->BatchHandleType, &batchhandle_spec, "BatchHandle") < 0)
        return -1;
    PyObject *base = PyTuple_Pack(1, PyExc_Exception);
    if (!base) return -1;
    int r = add_exception(m, &st->ReelError, "ReelError",
                          "A libreel error. .status is the reel status code (see reel.Status), .path the "
                          "file concerned (or None); str() is the C message '<file>: <reason>'.",
                          base);
    Py_DECREF(base);
    if (r < 0 ||
        add_subclass(m, st, &st->NotFoundError, "NotFoundError", "The file does not exist.", PyExc_FileNotFoundError) < 0 ||
        add_subclass(m, st, &st->CorruptError, "CorruptError",
                     "The file is damaged, truncated or not a video.", NULL) < 0 ||
        add_subclass(m, st, &st->UnsupportedError, "UnsupportedError", "No decoder for the stream's codec.", NULL) < 0 ||
        add_subclass(m, st, &st->OutOfRangeError, "OutOfRangeError",
                     "A frame index or timestamp outside the video.", PyExc_IndexError) < 0 ||
        add_subclass(m, st, &st->InvalidArgumentError, "InvalidArgumentError", "A bad argument.", PyExc_ValueError) < 0 ||
        add_subclass(m, st, &st->NoVideoStreamError, "NoVideoStreamError",
                     "The container has no (such) video stream.", NULL) < 0)
        return -1;
    PyObject *names = PyDict_New();
    if (!names) return -1;
    for (size_t i = 0; i < sizeof status_names / sizeof status_names[0]; i++) {
        if (dict_set(names, status_names[i].name, PyLong_FromLong(status_names[i].status)) < 0) {
            Py_DECREF(names);
            return -1;
        }
    }
    if (PyModule_AddObject(m, "STATUS", names) < 0) { Py_DECREF(names); return -1; }
    if (PyModule_AddStringConstant(m, "__version__", reel_version()) < 0) return -1;
    if (PyModule_AddIntConstant(m, "DLPACK_MAJOR", REEL_DLPACK_MAJOR) < 0) return -1;
    return 0;
}

static int module_traverse(PyObject *m, visitproc visit, void *arg)
{
    reel_state *st = PyModule_GetState(m);
    if (!st) return 0;
    Py_VISIT(st->FramesType);
    Py_VISIT(st->DecoderType);
    Py_VISIT(st->LoaderType);
    Py_VISIT(st->BatchHandleType);
    Py_VISIT(st->ReelError);
    Py_VISIT(st->NotFoundError);
    Py_VISIT(st->CorruptError);
    Py_VISIT(st->UnsupportedError);
    Py_VISIT(st->OutOfRangeError);
    Py_VISIT(st->InvalidArgumentError);
    Py_VISIT(st->NoVideoStreamError);
    return 0;
}

static int module_clear(PyObject *m)
{
    reel_state *st = PyModule_GetState(m);
    if (!st) return 0;
    Py_CLEAR(st->FramesType);
    Py_CLEAR(st->DecoderType);
    Py_CLEAR(st->LoaderType);
    Py_CLEAR(st->BatchHandleType);
    Py_CLEAR(st->ReelError);
    Py_CLEAR(st->NotFoundError);
    Py_CLEAR(st->CorruptError);
    Py_CLEAR(st->UnsupportedError);
    Py_CLEAR(st->OutOfRangeError);
    Py_CLEAR(st->InvalidArgumentError);
    Py_CLEAR(st->NoVideoStreamError);
    return 0;
}

static void module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = {
    { Py_mod_exec, (void *)module_exec },
    { 0, NULL }
};

static struct PyModuleDef reel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "reel._reel",
    .m_doc = "reel's C extension: the decoder, the loader and zero-copy frame arrays.",
    .m_size = sizeof(reel_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__reel(void)
{
    return PyModuleDef_Init(&reel_module);
}
