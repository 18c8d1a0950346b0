/* _ext.h: what the files of the extension reel._reel share: CPython
 * compatibility shims, the module state, the Frames object layout and the
 * functions one file calls in another. Only the public reel headers. */
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
 * Compatibility (the oldest supported CPython is 3.9)
 * ====================================================================== */

#if PY_VERSION_HEX < 0x030A00F0
static inline PyObject *Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
static inline PyObject *Py_XNewRef(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}
#endif

#if PY_VERSION_HEX < 0x030A0000
static inline int PyModule_AddObjectRef(PyObject *m, const char *name, PyObject *v)
{
    Py_INCREF(v);
    if (PyModule_AddObject(m, name, v) < 0) {
        Py_DECREF(v);
        return -1;
    }
    return 0;
}
#endif

#if PY_VERSION_HEX < 0x030B0000
/* PyType_GetModuleByDef() arrived in 3.11; this is the same walk over the MRO. */
static inline PyObject *reel_type_module_by_def(PyTypeObject *type, struct PyModuleDef *def)
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
    PyObject *PermissionDeniedError;
} reel_state;

extern struct PyModuleDef reel_module;

/* ======================================================================
 * Frames: an n-dimensional, C-contiguous CPU array (own memory, or a view
 * of memory kept alive by `base`), with optional per-frame metadata.
 * ====================================================================== */

#define REEL_PY_MAXDIM 8
#define REEL_PY_ALIGN  64

/* Element types: the first four equal reel_dtype values. */
enum {
    DT_UINT8 = REEL_DTYPE_UINT8,
    DT_FLOAT32 = REEL_DTYPE_FLOAT32,
    DT_FLOAT16 = REEL_DTYPE_FLOAT16,
    DT_BFLOAT16 = REEL_DTYPE_BFLOAT16,
    DT_INT64 = 4,
    DT_COUNT = 5
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
    PyObject *weakreflist;
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
/* _ext_audio.c */
PyObject *mod_audio_open(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *mod_audio_info(PyObject *module, PyObject *cap);
/* The requests made for an audio handle's bytes; 0, or -1 with the exception set. */
int rx_audio_remote_stats(PyObject *cap, reel_remote_stats *out);
PyObject *mod_audio_samples(PyObject *module, PyObject *args);
/* _ext_frames.c */
FramesObject *frames_alloc(reel_state *st, int dtype, int ndim, const int64_t *shape);
FramesObject *frames_view(reel_state *st, PyObject *base, void *data, int dtype, int ndim, const int64_t *shape);
PyObject *frames_new_forbidden(PyTypeObject *t, PyObject *a, PyObject *k);
PyObject *mod_frames_from_bytes(PyObject *module, PyObject *args);
extern PyType_Spec frames_spec;
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
