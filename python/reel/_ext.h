/* _ext.h: what the files of the extension reel._reel share: CPython
 * compatibility shims (the stable ABI of 3.10), the module state, the Frames
 * object layout and the functions one file calls in another. */
#ifndef REEL_PY_EXT_H
#define REEL_PY_EXT_H

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
#include <time.h>
#include <unistd.h>

#include "reel/reel.h"
#include "reel/pipeline.h"

/* ======================================================================
 * Compatibility. The extension is built against the stable ABI of CPython
 * 3.10 (Py_LIMITED_API=0x030A0000, set by CMakeLists.txt for the abi3
 * wheel) and must also build without it. What that ABI lacks:
 * - the buffer protocol (Py_buffer, PyObject_GetBuffer, the getbuffer slot)
 *   arrived in the stable ABI of 3.11: rx_buffer below, _ext_buffer.c;
 * - PyType_GetModuleByDef (3.13): state_of uses PyType_GetModule, the
 *   types being final (no Py_TPFLAGS_BASETYPE);
 * - _Py_IsFinalizing: rx_py_exiting(), set by an atexit hook;
 * - tp_alloc, tp_free, tp_name as struct fields: PyType_GetSlot, rx_type_name.
 * ====================================================================== */

/* PyBUF_WRITE (PyMemoryView_FromMemory, stable ABI since 3.3): declared by
 * the limited headers only from 3.11. */
#ifndef PyBUF_WRITE
#define PyBUF_WRITE 0x200
#endif

/* Borrowed item i of a PySequence_Fast result (a list or a tuple); the
 * PySequence_Fast_GET_* macros are not in the limited API. */
static inline PyObject *rx_fast_item(PyObject *seq, Py_ssize_t i)
{
    return PyList_Check(seq) ? PyList_GetItem(seq, i) : PyTuple_GetItem(seq, i);
}
static inline Py_ssize_t rx_fast_size(PyObject *seq)
{
    return PyList_Check(seq) ? PyList_Size(seq) : PyTuple_Size(seq);
}

/* A new object of a heap type, and its release (dealloc's last steps). */
static inline PyObject *rx_type_alloc(PyTypeObject *tp)
{
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    return alloc(tp, 0);
}
static inline void rx_type_free(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    freefunc free_fn = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    free_fn(self);
    Py_DECREF(tp);
}

/* The name of a type as tp_name has it ("reel.Frames", "int"; tp_name is
 * not readable in the limited API): a new str, or NULL with the exception set. */
static inline PyObject *rx_type_name_of(PyTypeObject *tp)
{
    PyObject *mod = PyObject_GetAttrString((PyObject *)tp, "__module__");
    PyObject *name = mod ? PyObject_GetAttrString((PyObject *)tp, "__qualname__") : NULL;
    PyObject *r = NULL;
    if (name) {
        if (PyUnicode_Check(mod) && PyUnicode_CompareWithASCIIString(mod, "builtins") != 0)
            r = PyUnicode_FromFormat("%U.%U", mod, name);
        else
            r = Py_NewRef(name);
    }
    Py_XDECREF(mod);
    Py_XDECREF(name);
    return r;
}
static inline PyObject *rx_type_name(PyObject *obj)
{
    return rx_type_name_of(Py_TYPE(obj));
}

/* Set once the interpreter runs its atexit hooks (see _ext_buffer.c): from
 * then on a DLPack deleter called from another thread leaves its reference
 * (a leak at exit beats a crash). */
int rx_py_exiting(void);

/* ----------------------------------------------------------------------
 * rx_buffer: a read-only view of a bytes-like object's memory, kept valid
 * until rx_buffer_release. On CPython >= 3.11 the buffer protocol (the
 * object is pinned: a bytearray cannot resize); on 3.10, whose stable ABI
 * has no buffer protocol, bytes are read in place and any other bytes-like
 * object is copied once into bytes, and typed arrays are read through
 * numpy's __array_interface__ (a reference to the object is kept).
 * ---------------------------------------------------------------------- */

/* Py_buffer's layout and flags as the stable ABI fixed them in 3.11 (the
 * same since 3.3); used only where rx_buffer_api() says the running
 * interpreter has them. _ext_buffer.c checks them against Python.h when
 * the headers declare Py_buffer. */
#define REEL_PY_BUF_MAXDIM 8 /* the array-interface path's dimensions */

typedef struct rx_pybuffer {
    void *buf;
    PyObject *obj;
    Py_ssize_t len;
    Py_ssize_t itemsize;
    int readonly;
    int ndim;
    char *format;
    Py_ssize_t *shape;
    Py_ssize_t *strides;
    Py_ssize_t *suboffsets;
    void *internal;
} rx_pybuffer;
enum {
    RX_PYBUF_SIMPLE = 0,
    RX_PYBUF_WRITABLE = 0x0001,
    RX_PYBUF_FORMAT = 0x0004,
    RX_PYBUF_ND = 0x0008,
    RX_PYBUF_STRIDES = 0x0018,
    RX_PYBUF_C_CONTIGUOUS = 0x0038,
    RX_PYBUF_F_CONTIGUOUS = 0x0058
};

typedef struct rx_buffer {
    const char *buf;
    Py_ssize_t len;
    Py_ssize_t itemsize;     /* typed modes: bytes per element */
    int ndim;                /* typed modes */
    const char *format;      /* typed modes: the struct-module format, never NULL */
    const Py_ssize_t *shape; /* typed modes: ndim sizes (C-contiguous) */
    PyObject *owner;         /* keeps buf alive (3.10): the bytes read, or the array */
    Py_ssize_t shape_buf[REEL_PY_BUF_MAXDIM];
    int have_view; /* view holds a Py_buffer to release */
    rx_pybuffer view;
} rx_buffer;

enum {
    RX_BUF_BYTES = 0,   /* any bytes-like object, as bytes */
    RX_BUF_TYPED = 1,   /* a C-contiguous typed array (numpy), read */
    RX_BUF_WRITABLE = 2 /* a C-contiguous typed array, written in place */
};

/* 1: filled (release it); 0: a typed mode and the object is no such array
 * (no exception: the caller falls back or raises its own); -1: an
 * exception is set (RX_BUF_BYTES only). */
int rx_buffer_get(PyObject *obj, rx_buffer *b, int mode);
void rx_buffer_release(rx_buffer *b);
/* 1 when this interpreter has the buffer protocol in its stable ABI (>= 3.11). */
int rx_buffer_api(void);
/* Module exec: finds the buffer functions (>= 3.11) and installs the atexit hook. */
int rx_buffer_init(PyObject *module);

/* Monotonic clock in nanoseconds, for the extension's own waits. */
static inline int64_t rx_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define REEL_DLPACK_MAJOR 1
#define REEL_DLPACK_MINOR 0

/* DLPack element type codes (the full DLPack structs live in _ext_frames.c). */
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 };
/* ======================================================================
 * Module state
 * ====================================================================== */

/* Freed Frames buffers kept for the next array of their size (_ext_pool.c). */
#define RX_POOL_KEEP 4
typedef struct rx_pool {
    void *p[RX_POOL_KEEP]; /* oldest first */
    size_t n[RX_POOL_KEEP];
    int count;
    size_t bytes;
} rx_pool;

typedef struct reel_state {
    rx_pool pool; /* the module's, so no C global holds it */
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
    PyObject *PermissionDeniedError;
    PyObject *FrameTimestampError;
} reel_state;

extern struct PyModuleDef reel_module;

/* ======================================================================
 * Frames: an n-dimensional, C-contiguous CPU array (own memory, or a view
 * of memory kept alive by `base`), with optional per-frame metadata.
 * ====================================================================== */

#define REEL_PY_MAXDIM 8
#define REEL_PY_ALIGN  64

/* Element types: the first five equal reel_dtype values. */
enum {
    DT_UINT8 = REEL_DTYPE_UINT8,
    DT_FLOAT32 = REEL_DTYPE_FLOAT32,
    DT_FLOAT16 = REEL_DTYPE_FLOAT16,
    DT_BFLOAT16 = REEL_DTYPE_BFLOAT16,
    DT_UINT16 = REEL_DTYPE_UINT16,
    DT_INT64 = 5,
    DT_COUNT = 6
};

typedef struct rx_dtype_info {
    const char *name;
    int itemsize;
    uint8_t dl_code;
    const char *format; /* buffer protocol; NULL: none (bfloat16) */
} rx_dtype_info;
extern const rx_dtype_info dtype_table[DT_COUNT];

typedef struct FramesObject {
    PyObject_HEAD char *data;
    void *alloc;    /* owned allocation (free()), or NULL for a view */
    PyObject *base; /* keeps `data` alive for a view */
    int dtype;
    int ndim;
    int64_t shape[REEL_PY_MAXDIM];
    Py_ssize_t bshape[REEL_PY_MAXDIM];   /* for the buffer protocol */
    Py_ssize_t bstrides[REEL_PY_MAXDIM]; /* bytes */
    size_t nbytes;
    PyObject *indices; /* metadata, NULL: None */
    PyObject *pts;
    PyObject *dur;
    PyObject *layout;
    PyObject *dist;   /* frames by timestamp (get_frames_near): |t - pts| in seconds, NULL: None */
    PyObject *within; /* and whether each is within the tolerance, NULL: None */
    PyObject *weakreflist;
    /* frames on a GPU (_ext_gpu.c): data is a device address; the first
     * object owns the buffer, its views keep it as base */
    reel_device_buffer *dev;
    int dev_borrowed; /* dev is a loader batch's (base, its BatchHandle, keeps it): not freed here */
    int gpu;          /* 1: on cuda:gpu_index */
    int gpu_index;
} FramesObject;


/* ---------------------------------------------------------------- shared between the files */
/* _ext_module.c: state, errors, helpers */
reel_state *state_of(PyObject *obj);
PyObject *raise_reel(reel_state *st, int status, const char *message, const char *path, PyObject *cause);
PyObject *raise_err(reel_state *st, int status, const reel_error *err, const char *path);
/* `s` as reel shows it (a URL redacted, see shown_bytes in _ext_module.c): new bytes, or NULL (an exception) */
PyObject *shown_bytes(const char *s);
int dict_set(PyObject *d, const char *key, PyObject *v);
double *parse_double_seq(PyObject *obj, Py_ssize_t *n_out, const char *what); /* PyMem_Free */
int64_t *parse_int64_seq(PyObject *obj, Py_ssize_t *n_out, const char *what); /* PyMem_Free */
PyObject *int64_list(const int64_t *values, int64_t n); /* a list of ints; NULL with the exception set */
/* _ext_fields.c: structs by their reel_field tables */
PyObject *rx_field_load(const void *base, const reel_field *f);
int rx_field_store(void *base, const reel_field *f, PyObject *v); /* not strings */
const reel_field *rx_field_find(const reel_field *t, size_t n, const char *name);
/* Stores dict {name: value} into base (the struct of table t). Each key goes
 * first to `special` (NULL: none), which returns 1 if it took it, 0 if not,
 * -1 on error. what != NULL: a key naming no field is a ValueError ("unknown
 * <what> setting"); NULL: such keys and string fields are ignored. 0, or -1
 * with the exception set. */
int rx_fields_from_dict(PyObject *dict, const reel_field *t, size_t n, void *base, const char *what,
                        int (*special)(const char *key, PyObject *value, void *opaque), void *opaque);
/* {name: value}; nested: "group.key" names go into a dict d["group"] */
PyObject *rx_fields_dict(const reel_field *t, size_t n, const void *base, int nested);
PyObject *mod_fields(PyObject *module, PyObject *arg);
PyObject *mod_remote_defaults(PyObject *module, PyObject *unused);
/* _ext_near.c: frames by timestamp with a tolerance, several cameras in one call */
PyObject *mod_decode_near(PyObject *module, PyObject *args, PyObject *kwargs);
/* _ext_pool.c: a Frames array's memory (aligned to REEL_PY_ALIGN; a few
 * large freed ones kept for the next of the same size). */
void *rx_pool_alloc(rx_pool *pool, size_t n);
void rx_pool_free(rx_pool *pool, void *p, size_t n);
void rx_pool_clear(rx_pool *pool);

/* _ext_audio.c */
PyObject *mod_audio_open(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *mod_audio_info(PyObject *module, PyObject *cap);
PyObject *mod_audio_stats(PyObject *module, PyObject *cap);
/* The requests made for an audio handle's bytes; 0, or -1 with the exception set. */
int rx_audio_remote_stats(PyObject *cap, reel_remote_stats *out);
PyObject *mod_audio_samples(PyObject *module, PyObject *args);
/* _ext_remote.c: a whole object by path or URL (reel_remote_read) */
PyObject *mod_remote_read(PyObject *module, PyObject *args, PyObject *kwargs);
/* _ext_frames.c */
FramesObject *frames_alloc(reel_state *st, int dtype, int ndim, const int64_t *shape);
FramesObject *frames_view(reel_state *st, PyObject *base, void *data, int dtype, int ndim, const int64_t *shape);
PyObject *frames_new_forbidden(PyTypeObject *t, PyObject *a, PyObject *k);
PyObject *mod_frames_from_bytes(PyObject *module, PyObject *args);
extern PyType_Spec frames_spec;          /* with the buffer protocol (>= 3.11) */
extern PyType_Spec frames_spec_nobuffer; /* without it (3.10) */
/* _ext_gpu.c: Frames on a GPU (kDLCUDA) and a GPU decoder's frames */
int rx_frames_set_shape(FramesObject *f, int ndim, const int64_t *shape); /* _ext_frames.c; 0 or -1 */
FramesObject *rx_gpu_frames(reel_state *st, reel_device_buffer *b, int dtype, int ndim, const int64_t *shape);
PyObject *rx_gpu_refuse(FramesObject *f, const char *what); /* TypeError naming the device */
/* A loader batch on a GPU as Frames over its device buffer, kept by `owner` */
FramesObject *rx_gpu_batch_frames(reel_state *st, PyObject *owner, const reel_batch *b, int ndim);
/* A clip of a variable batch on a GPU: 4-d Frames over its own device buffer. */
FramesObject *rx_gpu_clip_frames(reel_state *st, PyObject *owner, const reel_batch *b, const reel_clip_info *c,
                                 const int64_t *shape);
PyObject *rx_gpu_cpu(FramesObject *f);              /* host Frames: a copy */
int rx_gpu_wait(FramesObject *f, PyObject *stream); /* the consumer's stream waits; -1 with the exception */
/* _ext_decoder.c */
int parse_floats3(PyObject *obj, float out[3], const char *what);
PyObject *reduce_forbidden(PyObject *self, PyObject *unused);
/* reel_remote_settings from a dict of its fields (None: defaults); the
 * strings are strdup'd into *ca_bundle / *bearer_token (the caller frees). */
int rx_remote_from_dict(PyObject *d, reel_remote_settings *s, char **ca_bundle, char **bearer_token);

/* A reel_remote_stats as the dict of metrics()["remote"] and remote_stats(). */
PyObject *rx_remote_stats_dict(const reel_remote_stats *s);
extern PyType_Spec decoder_spec;
/* _ext_loader.c */
PyObject *mod_loader_defaults(PyObject *m, PyObject *u);
/* Loader settings from a dict by C field name (the rest at their defaults); -1 with the exception set */
int rx_loader_settings_of(PyObject *settings, reel_loader_settings *s);
PyObject *mod_checkpoint_init(PyObject *module, PyObject *args);
PyObject *mod_checkpoint_check(PyObject *module, PyObject *args);
/* A reel_dataset from a folder, a manifest, or _loader._dataset_entries' list. */
int rx_build_dataset(reel_state *st, PyObject *dataset, reel_dataset **out);
/* _ext_batch.c */
PyObject *rx_batch_result(reel_state *st, PyObject *owner, const reel_batch *b, int want_pad);
/* _ext_order.c */
PyObject *rx_dataset_info_dict(reel_state *st, const reel_dataset *ds);
PyObject *mod_epoch_shape(PyObject *module, PyObject *args);
PyObject *mod_dataset_info(PyObject *module, PyObject *source);
PyObject *mod_read_blocks(PyObject *module, PyObject *source);
PyObject *mod_epoch_order(PyObject *module, PyObject *args);
PyObject *mod_stripe(PyObject *module, PyObject *args);
extern PyType_Spec loader_spec;
/* _ext_store.c */
extern PyMethodDef reel_store_methods[];
extern PyType_Spec batchhandle_spec;

#endif /* REEL_PY_EXT_H */
