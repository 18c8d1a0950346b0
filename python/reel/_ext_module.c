/* _ext_module.c: the module reel._reel itself: status names and the ReelError
 * hierarchy, small argument helpers, module-level functions and the
 * multi-phase init that creates every type and exception in module state. */
#include "_ext.h"


/* The module state of one of the module's objects. Its types are final (no
 * Py_TPFLAGS_BASETYPE), so the object's type is the one made from the spec
 * and PyType_GetModule finds the module (PyType_GetModuleByDef, which
 * would also walk subclasses, is not in the stable ABI of 3.10). */
reel_state *state_of(PyObject *obj)
{
    PyObject *m = PyType_GetModule(Py_TYPE(obj));
    return m ? (reel_state *)PyModule_GetState(m) : NULL;
}

/* ======================================================================
 * Errors: reel statuses -> ReelError and its subclasses
 * ====================================================================== */

static const struct {
    int status;
    const char *name;
} status_names[] = {
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
    { REEL_E_NO_AUDIO_STREAM, "NO_AUDIO_STREAM" },
    { REEL_E_FRAME_TIMESTAMP, "FRAME_TIMESTAMP" },
    { REEL_E_CUDA, "CUDA" },
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
    case REEL_E_PERMISSION: return st->PermissionDeniedError;
    case REEL_E_FRAME_TIMESTAMP: return st->FrameTimestampError;
    default: return st->ReelError;
    }
}

/* `s` as reel shows it: a URL redacted as messages show it (reel_url_redact:
 * no user info, query string or fragment; control bytes as %XX), anything
 * else as it is. Every path-like value the binding shows goes through it;
 * the raw URL stays only where the source is opened again (the decoder's
 * source, pickling). A new bytes object, or NULL with an exception set. */
PyObject *shown_bytes(const char *s)
{
    if (!strstr(s, "://")) return PyBytes_FromString(s);
    size_t n = 3 * strlen(s) + 8; /* each control byte may become %XX */
    char *out = PyMem_Malloc(n);
    if (!out) return PyErr_NoMemory();
    reel_url_redact(s, out, n);
    PyObject *r = PyBytes_FromString(out);
    PyMem_Free(out);
    return r;
}

/* Raises the exception for `status` with `message` ("<file>: <reason>"; empty:
 * reel_strerror), .path = path as reel shows it (a URL redacted; may be
 * NULL: None) and .status. `cause` (a
 * reference that is stolen, may be NULL) becomes __cause__. Returns NULL. */
PyObject *raise_reel(reel_state *st, int status, const char *message, const char *path, PyObject *cause)
{
    PyObject *cls = error_class(st, status);
    const char *text = message && *message ? message : reel_strerror(status);
    PyObject *msg = PyUnicode_DecodeFSDefault(text);
    PyObject *exc = msg ? PyObject_CallFunctionObjArgs(cls, msg, NULL) : NULL;
    Py_XDECREF(msg);
    if (!exc) {
        Py_XDECREF(cause);
        return NULL;
    }
    PyObject *shown = path ? shown_bytes(path) : NULL;
    PyObject *p = shown ? PyUnicode_DecodeFSDefault(PyBytes_AsString(shown)) : path ? NULL : Py_NewRef(Py_None);
    Py_XDECREF(shown);
    PyObject *s = PyLong_FromLong(status);
    if (!p || !s || PyObject_SetAttrString(exc, "path", p) < 0 || PyObject_SetAttrString(exc, "status", s) < 0) {
        Py_XDECREF(p);
        Py_XDECREF(s);
        Py_DECREF(exc);
        Py_XDECREF(cause);
        return NULL;
    }
    Py_DECREF(p);
    Py_DECREF(s);
    if (cause) PyException_SetCause(exc, cause); /* steals */
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *raise_err(reel_state *st, int status, const reel_error *err, const char *path)
{
    return raise_reel(st, status, err && err->status != REEL_OK ? err->message : NULL, path, NULL);
}

/* ======================================================================
 * Helpers: sequences of ints / floats -> C arrays (PyMem; free with PyMem_Free)
 * ====================================================================== */

int64_t *parse_int64_seq(PyObject *obj, Py_ssize_t *n_out, const char *what)
{
    if (!PyBytes_Check(obj) && !PyByteArray_Check(obj)) {
        rx_buffer b; /* a typed array (numpy), where the buffer protocol is (>= 3.11) */
        int got = rx_buffer_get(obj, &b, RX_BUF_TYPED);
        if (got < 0) return NULL;
        if (got) {
            const char *f = b.format;
            if (*f == '<' || *f == '=' || *f == '@') f++;
            int ok = b.ndim <= 1 && f[0] && !f[1] && (f[0] == 'q' || f[0] == 'l' || f[0] == 'i') &&
                     (b.itemsize == 8 || b.itemsize == 4);
            if (ok) {
                Py_ssize_t n = b.len / b.itemsize;
                int64_t *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *out);
                if (!out) {
                    rx_buffer_release(&b);
                    PyErr_NoMemory();
                    return NULL;
                }
                for (Py_ssize_t i = 0; i < n; i++)
                    out[i] = b.itemsize == 8 ? ((const int64_t *)b.buf)[i] : ((const int32_t *)b.buf)[i];
                rx_buffer_release(&b);
                *n_out = n;
                return out;
            }
            rx_buffer_release(&b);
        }
    }
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return NULL;
    Py_ssize_t n = rx_fast_size(seq);
    int64_t *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = rx_fast_item(seq, i);
        PyObject *idx = PyNumber_Index(item);
        long long v = idx ? PyLong_AsLongLong(idx) : -1;
        Py_XDECREF(idx);
        if (v == -1 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) {
                PyErr_Clear();
                PyObject *tn = rx_type_name(item);
                if (tn) PyErr_Format(PyExc_TypeError, "%s: item %zd is %U, not an int", what, i, tn);
                Py_XDECREF(tn);
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

double *parse_double_seq(PyObject *obj, Py_ssize_t *n_out, const char *what)
{
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return NULL;
    Py_ssize_t n = rx_fast_size(seq);
    double *out = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = PyFloat_AsDouble(rx_fast_item(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
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

PyObject *int64_list(const int64_t *values, int64_t n)
{
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; l && i < n; i++) {
        PyObject *x = PyLong_FromLongLong(values[i]);
        if (!x) {
            Py_CLEAR(l);
            break;
        }
        PyList_SetItem(l, (Py_ssize_t)i, x);
    }
    return l;
}

int dict_set(PyObject *d, const char *key, PyObject *v)
{
    if (!v) return -1;
    int r = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return r;
}

/* ======================================================================
 * Module functions
 * ====================================================================== */

static PyObject *mod_version(PyObject *m, PyObject *u)
{
    (void)m;
    (void)u;
    return PyUnicode_FromString(reel_version());
}
static PyObject *mod_version_api(PyObject *m, PyObject *u)
{
    (void)m;
    (void)u;
    return PyLong_FromUnsignedLong(reel_version_api());
}

static PyObject *mod_ffmpeg_versions(PyObject *m, PyObject *u)
{
    (void)m;
    (void)u;
    return PyUnicode_FromString(reel_ffmpeg_versions());
}

static PyObject *mod_build_info(PyObject *m, PyObject *u)
{
    (void)m;
    (void)u;
    char *info = reel_build_info();
    if (!info) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(info);
    reel_free(info);
    return r;
}

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

/* reel_size_policy_apply with the pixel budget: (height, width). */
static PyObject *mod_size_policy(PyObject *m, PyObject *args, PyObject *kwds)
{
    static char *kw[] = { "width",         "height",         "num_frames", "factor",
                          "frame_factor",  "min_pixels",     "max_pixels", "total_pixels",
                          "resized_width", "resized_height", NULL };
    reel_size_policy p;
    reel_size_policy_default_settings(&p);
    int w, h, frame_factor;
    long long n;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiLiidddii:size_policy", kw, &w, &h, &n, &p.factor, &frame_factor,
                                     &p.min_pixels, &p.max_pixels, &p.total_pixels, &p.width, &p.height))
        return NULL;
    reel_error err;
    reel_error_clear(&err);
    int ow = 0, oh = 0;
    if (reel_size_policy_apply(&p, w, h, (int64_t)n, frame_factor, &ow, &oh, &err) != REEL_OK) {
        PyErr_SetString(PyExc_ValueError, err.message);
        return NULL;
    }
    (void)m;
    return Py_BuildValue("(ii)", oh, ow);
}

/* reel_size_smart_resize, in qwen-vl-utils' order: (height, width) in and out. */
static PyObject *mod_smart_resize(PyObject *m, PyObject *args)
{
    int h, w, factor;
    double min_px, max_px;
    if (!PyArg_ParseTuple(args, "iiidd:smart_resize", &h, &w, &factor, &min_px, &max_px)) return NULL;
    reel_error err;
    reel_error_clear(&err);
    int oh = 0, ow = 0;
    if (reel_size_smart_resize(w, h, factor, min_px, max_px, &ow, &oh, &err) != REEL_OK) {
        PyErr_SetString(PyExc_ValueError, err.message);
        return NULL;
    }
    (void)m;
    return Py_BuildValue("(ii)", oh, ow);
}

static PyObject *mod_redact_url(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *u = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!u) return NULL;
    size_t n = 3 * strlen(u) + 8; /* each control byte may become %XX */
    char *out = PyMem_Malloc(n);
    if (!out) return PyErr_NoMemory();
    reel_url_redact(u, out, n);
    PyObject *r = PyUnicode_FromString(out);
    PyMem_Free(out);
    return r;
}

/* Loader settings by C field name (keys that are no plain field, like
 * "samples" or "decoder.remote", are ignored) over the defaults. */
int rx_loader_settings_of(PyObject *settings, reel_loader_settings *s)
{
    reel_loader_default_settings(s);
    size_t n = 0;
    const reel_field *table = reel_loader_settings_get_fields(&n);
    return rx_fields_from_dict(settings, table, n, s, NULL, NULL, NULL);
}

/* loader_settings_is_variable(settings): reel_loader_settings_is_variable of
 * Loader settings by C field name (as clip_geometry takes them): whether its
 * batches are variable, decided by C alone. */
static PyObject *mod_loader_settings_is_variable(PyObject *module, PyObject *settings)
{
    (void)module;
    if (!PyDict_Check(settings)) {
        PyErr_SetString(PyExc_TypeError, "loader_settings_is_variable: settings must be a dict");
        return NULL;
    }
    reel_loader_settings s;
    if (rx_loader_settings_of(settings, &s) < 0) return NULL;
    return PyBool_FromLong(reel_loader_settings_is_variable(&s));
}

/* clip_geometry(settings, epoch, sample, clip, width, height): the crop
 * (x, y, w, h), output (w, h) and flip the loader gives that clip
 * (reel_loader_settings_get_clip_geometry); settings: Loader settings by C
 * field name (keys that are no plain field, like "samples" or "decoder.remote", are
 * ignored). */
static PyObject *mod_clip_geometry(PyObject *module, PyObject *args)
{
    PyObject *settings;
    long long epoch, sample;
    int clip, w, h;
    if (!PyArg_ParseTuple(args, "O!LLiii:clip_geometry", &PyDict_Type, &settings, &epoch, &sample, &clip, &w, &h))
        return NULL;
    reel_loader_settings s;
    if (rx_loader_settings_of(settings, &s) < 0) return NULL;
    int32_t crop[4], out[2];
    int flipped = 0;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_loader_settings_get_clip_geometry(&s, epoch, sample, clip, w, h, crop, out, &flipped, &err);
    if (r != REEL_OK) return raise_err(PyModule_GetState(module), r, &err, NULL);
    return Py_BuildValue("((iiii)(ii)O)", crop[0], crop[1], crop[2], crop[3], out[0], out[1],
                         flipped ? Py_True : Py_False);
}

static PyMethodDef module_methods[] = {
    { "version", mod_version, METH_NOARGS, "version()\n--\n\nlibreel's version." },
    { "version_api", mod_version_api, METH_NOARGS,
      "version_api()\n--\n\nlibreel's API version: (major << 16) | (minor << 8) | patch (REEL_API_VERSION)." },
    { "ffmpeg_versions", mod_ffmpeg_versions, METH_NOARGS, "ffmpeg_versions()\n--\n\nFFmpeg library versions in use." },
    { "build_info", mod_build_info, METH_NOARGS,
      "build_info()\n--\n\nJSON: FFmpeg's version and configure line, library versions." },
    { "set_ffmpeg_log_level", mod_set_log_level, METH_O,
      "set_ffmpeg_log_level(level)\n--\n\n0 quiet, 1 errors, 2 warnings, 3 info (process-wide)." },
    { "size_policy", (PyCFunction)(void (*)(void))mod_size_policy, METH_VARARGS | METH_KEYWORDS,
      "size_policy(width, height, num_frames, factor, frame_factor, min_pixels, max_pixels, total_pixels, "
      "resized_width, resized_height)\n--\n\nThe pixel-budget size policy: (height, width)." },
    { "smart_resize", mod_smart_resize, METH_VARARGS,
      "smart_resize(height, width, factor, min_pixels, max_pixels)\n--\n\nqwen-vl-utils' smart_resize, in C." },
    { "strerror", mod_strerror, METH_O, "strerror(status)\n--\n\nDescription of a status code." },
    { "fields", mod_fields, METH_O,
      "fields(table)\n--\n\n[(name, type)] of a C field table: 'loader_settings', 'loader_metrics', "
      "'stage_metrics', 'remote_settings' or 'remote_stats'." },
    { "remote_defaults", mod_remote_defaults, METH_NOARGS,
      "remote_defaults()\n--\n\nThe remote settings' defaults, by name (reel_remote_settings_get_fields)." },
    { "remote_read", (PyCFunction)(void (*)(void))mod_remote_read, METH_VARARGS | METH_KEYWORDS,
      "remote_read(uri, remote=None, max_bytes=1073741824)\n--\n\nA whole object's bytes: a path, or an http(s):// or "
      "s3:// "
      "URL through reel's remote input (reel_remote_read), the GIL released." },
    { "redact_url", mod_redact_url, METH_O,
      "redact_url(url)\n--\n\nThe URL as reel's messages show it: user info and query string replaced by ***." },
    { "loader_defaults", mod_loader_defaults, METH_NOARGS,
      "loader_defaults()\n--\n\nThe C loader's default settings." },
    { "epoch_shape", mod_epoch_shape, METH_VARARGS,
      "epoch_shape(num_videos, world_size, shard_mode, batch_size, drop_last)\n--\n\n(samples per rank, batches) of an "
      "epoch." },
    { "read_blocks", mod_read_blocks, METH_O,
      "read_blocks(source)\n--\n\n[0, ..., N]: starts of the runs of samples read best together (a store's shards)." },
    { "loader_settings_is_variable", mod_loader_settings_is_variable, METH_O,
      "loader_settings_is_variable(settings)\n--\n\nWhether a loader with these settings (by C field name) gives "
      "variable batches (reel_loader_settings_is_variable)." },
    { "checkpoint_init", mod_checkpoint_init, METH_VARARGS,
      "checkpoint_init(settings, num_samples, fingerprint, epoch, samples_seen)\n--\n\n"
      "The checkpoint text a loader of these settings (by C field name) over that dataset gives at that position "
      "(reel_loader_checkpoint_init, _format)." },
    { "checkpoint_check", mod_checkpoint_check, METH_VARARGS,
      "checkpoint_check(text, settings, num_samples, fingerprint)\n--\n\n"
      "Raises unless the checkpoint text fits a loader of these settings over that dataset "
      "(reel_loader_checkpoint_parse, _check)." },
    { "clip_geometry", mod_clip_geometry, METH_VARARGS,
      "clip_geometry(settings, epoch, sample, clip, width, height)\n--\n\n"
      "((x, y, w, h) source crop, (w, h) output, flipped) the loader gives that clip." },
    { "epoch_order", mod_epoch_order, METH_VARARGS,
      "epoch_order(source, epoch, seed, shuffle, shuffle_window, canonical_ranks, canonical_batch)\n--\n\n"
      "The dataset indices of an epoch's global order." },
    { "stripe", mod_stripe, METH_VARARGS,
      "stripe(num_samples, samples_seen, world_size, rank, batch_size, shard_mode, drop_last, num_workers, worker)"
      "\n--\n\nA rank's batches: (first position, count, samples_seen after)." },
    { "dataset_info", mod_dataset_info, METH_O,
      "dataset_info(source)\n--\n\n{'size', 'class_names'} of a folder, a manifest or a list of entries." },
    { "_frames_from_bytes", mod_frames_from_bytes, METH_VARARGS, NULL },
    { "decode_near", (PyCFunction)(void (*)(void))mod_decode_near, METH_VARARGS | METH_KEYWORDS,
      "decode_near(jobs, tolerance_s, on_violation, threads, dtype, layout, color=0)\n--\n\n"
      "jobs: [(Decoder, seconds, width, height, out or None)]; the frames nearest to each job's times, every job in "
      "one call with the GIL released (reel_decode_near): [Frames]." },
    { "audio_open", (PyCFunction)(void (*)(void))mod_audio_open, METH_VARARGS | METH_KEYWORDS,
      "audio_open(path, sample_rate=0, channels=0, missing=0, remote=None, corrupt=0, cache_bytes=None, "
      "decoder=None)\n--\n\n"
      "A video's audio (reel/audio.h), a file or a URL, a damaged packet under the corrupt policy `corrupt`: a "
      "handle for audio_samples, audio_info, audio_stats. decoder: the open Decoder of `path`, whose bytes the "
      "audio shares (reel_decoder_open_audio; its remote settings apply)." },
    { "audio_samples", mod_audio_samples, METH_VARARGS,
      "audio_samples(handle, t0, t1, num, den)\n--\n\n"
      "The audio of [t0, t1) x num/den s: (Frames float32 [C, S], first_sample, valid_lo, valid_hi, missing, "
      "missing_lo, missing_hi, corrupt_packets)." },
    { "audio_info", mod_audio_info, METH_O, "audio_info(handle)\n--\n\nThe audio's facts (a dict)." },
    { "audio_stats", mod_audio_stats, METH_O,
      "audio_stats(handle)\n--\n\nWhat the audio object did so far: windows, decodes, the cache's bytes (a dict)." },

    { NULL }
};

/* The C API's enum values, by their C names less REEL_, as module constants:
 * the Python layer's option tables are built from these, never copied. */
static const struct {
    const char *name;
    int value;
} enum_values[] = {
#define E(x)         \
    {                \
#x, REEL_##x \
    }
    E(DTYPE_UINT8),
    E(DTYPE_FLOAT32),
    E(DTYPE_FLOAT16),
    E(DTYPE_BFLOAT16),
    E(DTYPE_UINT16),
    E(COLOR_RGB),
    E(COLOR_GRAY),
    E(FILTER_BILINEAR),
    E(FILTER_AREA),
    E(FILTER_BICUBIC),
    E(FILTER_NEAREST),
    E(CONVERT_PATH_FUSED),
    E(CONVERT_PATH_AFTER_RGB),
    E(LAYOUT_HWC),
    E(LAYOUT_CHW),
    E(INDEX_OFF),
    E(INDEX_READ),
    E(INDEX_READ_WRITE),
    E(CORRUPT_FAIL),
    E(CORRUPT_SKIP),
    E(SAMPLER_NONE),
    E(SAMPLER_RANDOM_INDICES),
    E(SAMPLER_REGULAR_INDICES),
    E(SAMPLER_RANDOM_TIMES),
    E(SAMPLER_REGULAR_TIMES),
    E(SAMPLER_FPS),
    E(SAMPLER_COUNT),
    E(SIZE_FIXED),
    E(SIZE_PIXEL_BUDGET),
    E(CLIP_REPEAT_LAST),
    E(CLIP_WRAP),
    E(CLIP_DROP),
    E(CLIP_ERROR),
    E(RESIZE_KEEP),
    E(RESIZE_SHORT_SIDE),
    E(RESIZE_EXACT),
    E(CROP_NONE),
    E(CROP_CENTER),
    E(CROP_RANDOM),
    E(CROP_RANDOM_RESIZED),
    E(FLIP_NONE),
    E(FLIP_ALWAYS),
    E(FLIP_RANDOM),
    E(BATCH_BTCHW),
    E(BATCH_BCTHW),
    E(BATCH_BTHWC),
    E(ON_ERROR_SKIP),
    E(ON_ERROR_REPLACE),
    E(ON_ERROR_RAISE),
    E(SHARD_PAD),
    E(SHARD_DROP),
    E(AUDIO_MISSING_RAISE),
    E(AUDIO_MISSING_ZEROS),
    E(INDEX_FROM_CONTAINER),
    E(INDEX_FROM_SCAN),
    E(INDEX_FROM_SIDECAR),
    E(NEAR_RAISE),
    E(NEAR_FLAG),
    E(E_LAST),
#undef E
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

static int add_double(PyObject *m, const char *name, double v)
{
    PyObject *o = PyFloat_FromDouble(v);
    if (!o || PyModule_AddObject(m, name, o) < 0) {
        Py_XDECREF(o);
        return -1;
    }
    return 0;
}

/* qwen-vl-utils' defaults and the loader state's version, as C defines them
 * (reel_sampler_default_settings, reel_size_policy_default_settings,
 * REEL_QWEN_*, REEL_CHECKPOINT_VERSION): reel.vlm and reel._loader read
 * them from here and write no number of their own. */
static int add_defaults(PyObject *m)
{
    reel_sampler_settings sd;
    reel_sampler_default_settings(&sd);
    reel_size_policy sp;
    reel_size_policy_default_settings(&sp);
    const struct {
        const char *name;
        long value;
    } ints[] = {
        { "CHECKPOINT_VERSION", REEL_CHECKPOINT_VERSION },
        { "QWEN_FPS_MIN_FRAMES", sd.min_frames },
        { "QWEN_FPS_MAX_FRAMES", sd.max_frames },
        { "QWEN_FRAME_FACTOR", sd.frame_factor },
        { "QWEN_FACTOR", sp.factor },
        { "QWEN_SPATIAL_MERGE_SIZE", REEL_QWEN_SPATIAL_MERGE_SIZE },
        { "QWEN_IMAGE_MIN_TOKENS", REEL_QWEN_IMAGE_MIN_TOKENS },
        { "QWEN_IMAGE_MAX_TOKENS", REEL_QWEN_IMAGE_MAX_TOKENS },
        { "QWEN_MODEL_SEQ_LEN", REEL_QWEN_MODEL_SEQ_LEN },
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (PyModule_AddIntConstant(m, ints[i].name, ints[i].value) < 0) return -1;
    if (add_double(m, "QWEN_FPS", sd.fps) < 0) return -1;
    return add_double(m, "QWEN_TOTAL_PIXELS_SHARE", REEL_QWEN_TOTAL_PIXELS_SHARE);
}

static int module_exec(PyObject *m)
{
    reel_state *st = PyModule_GetState(m);
    if (rx_buffer_init(m) < 0) return -1;
    PyType_Spec *frames = rx_buffer_api() ? &frames_spec : &frames_spec_nobuffer;
    if (add_type(m, &st->FramesType, frames, "Frames") < 0 ||
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
        add_subclass(m, st, &st->NotFoundError, "NotFoundError", "The file does not exist.", PyExc_FileNotFoundError) <
            0 ||
        add_subclass(m, st, &st->CorruptError, "CorruptError", "The file is damaged, truncated or not a video.", NULL) <
            0 ||
        add_subclass(m, st, &st->UnsupportedError, "UnsupportedError", "No decoder for the stream's codec.", NULL) <
            0 ||
        add_subclass(m, st, &st->OutOfRangeError, "OutOfRangeError", "A frame index or timestamp outside the video.",
                     PyExc_IndexError) < 0 ||
        add_subclass(m, st, &st->InvalidArgumentError, "InvalidArgumentError", "A bad argument.", PyExc_ValueError) <
            0 ||
        add_subclass(m, st, &st->NoVideoStreamError, "NoVideoStreamError", "The container has no (such) video stream.",
                     NULL) < 0 ||
        add_subclass(m, st, &st->PermissionDeniedError, "PermissionDeniedError",
                     "Access denied (HTTP 401/403, an S3 signature or credential refused).",
                     PyExc_PermissionError) < 0 ||
        add_subclass(m, st, &st->FrameTimestampError, "FrameTimestampError",
                     "No frame within the tolerance of a time asked for (get_frames_near, decode_near); the message "
                     "names the file, the time and the nearest frame's pts.",
                     PyExc_ValueError) < 0)
        return -1;
    PyObject *names = PyDict_New();
    if (!names) return -1;
    for (size_t i = 0; i < sizeof status_names / sizeof status_names[0]; i++) {
        if (dict_set(names, status_names[i].name, PyLong_FromLong(status_names[i].status)) < 0) {
            Py_DECREF(names);
            return -1;
        }
    }
    if (PyModule_AddObject(m, "STATUS", names) < 0) {
        Py_DECREF(names);
        return -1;
    }
    for (size_t i = 0; i < sizeof enum_values / sizeof enum_values[0]; i++)
        if (PyModule_AddIntConstant(m, enum_values[i].name, enum_values[i].value) < 0) return -1;
    if (PyModule_AddStringConstant(m, "__version__", reel_version()) < 0) return -1;
    if (PyModule_AddFunctions(m, reel_store_methods) < 0) return -1;
    if (PyModule_AddIntConstant(m, "DLPACK_MAJOR", REEL_DLPACK_MAJOR) < 0) return -1;
    if (PyModule_AddIntConstant(m, "GOP_CONTEXTS_AUTO", REEL_GOP_CONTEXTS_AUTO) < 0) return -1;
    return add_defaults(m);
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
    Py_VISIT(st->PermissionDeniedError);
    Py_VISIT(st->FrameTimestampError);
    return 0;
}

static int module_clear(PyObject *m)
{
    reel_state *st = PyModule_GetState(m);
    if (!st) return 0;
    rx_pool_clear(&st->pool);
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
    Py_CLEAR(st->PermissionDeniedError);
    Py_CLEAR(st->FrameTimestampError);
    return 0;
}

static void module_free(void *m)
{
    module_clear((PyObject *)m);
}

static PyModuleDef_Slot module_slots[] = { { Py_mod_exec, (void *)module_exec }, { 0, NULL } };

struct PyModuleDef reel_module = {
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

PyMODINIT_FUNC PyInit__reel(void); /* the module's one export (a prototype for -Wmissing-prototypes) */
PyMODINIT_FUNC PyInit__reel(void)
{
    return PyModuleDef_Init(&reel_module);
}

/* ---------------------------------------------------------------- remote settings */

PyObject *rx_remote_stats_dict(const reel_remote_stats *s)
{
    size_t n = 0;
    const reel_field *t = reel_remote_stats_get_fields(&n);
    PyObject *d = rx_fields_dict(t, n, s, 0);
    double p50 = 0, p99 = 0; /* q in range: cannot fail */
    reel_remote_stats_get_quantile(s, 0.5, &p50, NULL);
    reel_remote_stats_get_quantile(s, 0.99, &p99, NULL);
    if (d && (dict_set(d, "request_p50_s", PyFloat_FromDouble(p50)) < 0 ||
              dict_set(d, "request_p99_s", PyFloat_FromDouble(p99)) < 0))
        Py_CLEAR(d);
    return d;
}

/* rx_remote_from_dict's keys: None (the default), the two strings, and the
 * numbers >= 0 of any type (floats truncate to the integer fields). */
typedef struct remote_keys {
    reel_remote_settings *s;
    char **ca_bundle, **bearer_token;
} remote_keys;

static int take_remote_key(const char *k, PyObject *v, void *opaque)
{
    remote_keys *c = opaque;
    if (v == Py_None) return 1;
    if (!strcmp(k, "ca_bundle") || !strcmp(k, "bearer_token")) {
        const char *str = PyUnicode_AsUTF8AndSize(v, NULL);
        if (!str) return -1;
        char **slot = k[0] == 'c' ? c->ca_bundle : c->bearer_token;
        free(*slot);
        if (!(*slot = strdup(str))) {
            PyErr_NoMemory();
            return -1;
        }
        return 1;
    }
    size_t n = 0;
    const reel_field *t = reel_remote_settings_get_fields(&n); /* before n is read */
    const reel_field *f = rx_field_find(t, n, k);
    if (!f) return 0; /* unknown: rx_fields_from_dict says so */
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    if (!(x >= 0) || x > 1e15) {
        PyErr_Format(PyExc_ValueError, "remote setting '%s' must be a number >= 0", k);
        return -1;
    }
    PyObject *num = f->type == REEL_FIELD_DOUBLE ? PyFloat_FromDouble(x) : PyLong_FromDouble(x);
    int r = num ? rx_field_store(c->s, f, num) : -1;
    Py_XDECREF(num);
    if (r < 0) return -1;
    if (!strcmp(k, "verify_tls")) c->s->verify_tls = x != 0;
    return 1;
}

int rx_remote_from_dict(PyObject *d, reel_remote_settings *s, char **ca_bundle, char **bearer_token)
{
    reel_remote_default_settings(s);
    if (d == Py_None) return 0;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "remote settings must be a dict");
        return -1;
    }
    size_t n = 0;
    const reel_field *t = reel_remote_settings_get_fields(&n);
    remote_keys rk = { s, ca_bundle, bearer_token };
    if (rx_fields_from_dict(d, t, n, s, "remote", take_remote_key, &rk) < 0) return -1;
    s->ca_bundle = *ca_bundle;
    s->bearer_token = *bearer_token;
    return 0;
}
