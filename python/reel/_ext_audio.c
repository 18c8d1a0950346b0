/* _ext_audio.c: reel/audio.h for Python: one audio object per VideoDecoder
 * (a capsule, its calls one at a time under a lock, the GIL released while
 * it decodes), a window's samples as Frames (float32 [C, S], zero-copy to
 * torch and numpy) with where they sit, and the audio's facts. C validates;
 * this file converts. */
#include "_ext.h"
#include "_ext_decoder.h"

#include <pythread.h>

#define CAPSULE "reel.audio"

typedef struct rx_audio {
    reel_audio *a;
    PyThread_type_lock lock;
    reel_remote_settings remote;
    char *ca_bundle, *bearer_token;
    PyObject *decoder; /* the Decoder whose bytes the audio shares (its remote settings live there), or NULL */
} rx_audio;

static void rx_audio_free(rx_audio *h)
{
    if (!h) return;
    reel_audio_close(&h->a);
    if (h->lock) PyThread_free_lock(h->lock);
    free(h->ca_bundle);
    if (h->bearer_token) memset(h->bearer_token, 0, strlen(h->bearer_token));
    free(h->bearer_token);
    Py_XDECREF(h->decoder);
    PyMem_Free(h);
}

static void capsule_free(PyObject *cap)
{
    rx_audio_free(PyCapsule_GetPointer(cap, CAPSULE));
}

static rx_audio *handle_of(PyObject *cap)
{
    return PyCapsule_GetPointer(cap, CAPSULE); /* NULL with TypeError/ValueError set */
}

static PyObject *info_dict(const reel_audio_info *i)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (dict_set(d, "has_audio", PyBool_FromLong(i->has_audio)) < 0 ||
        dict_set(d, "stream_index", i->stream_index >= 0 ? PyLong_FromLong(i->stream_index) : Py_NewRef(Py_None)) < 0 ||
        dict_set(d, "native_sample_rate", PyLong_FromLong(i->native_sample_rate)) < 0 ||
        dict_set(d, "native_channels", PyLong_FromLong(i->native_channels)) < 0 ||
        dict_set(d, "sample_rate", PyLong_FromLong(i->sample_rate)) < 0 ||
        dict_set(d, "channels", PyLong_FromLong(i->channels)) < 0 ||
        dict_set(d, "codec", i->has_audio ? PyUnicode_FromString(i->codec) : Py_NewRef(Py_None)) < 0 ||
        dict_set(d, "start_seconds", PyFloat_FromDouble(i->start_seconds)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* The audio of the video `d` reads, sharing its bytes (reel_decoder_open_audio):
 * 0 with *status set, or -1 with the decoder's exception (closed, or its
 * reopen in a forked child failed). */
static int open_shared(rx_audio *h, DecoderObject *d, const reel_audio_settings *s, int *status, reel_error *err)
{
    if (rx_dec_acquire(d) < 0) return -1;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_decoder_open_audio(d->dec, s, &h->a, err);
    Py_END_ALLOW_THREADS
    rx_dec_release(d);
    Py_INCREF(d);
    h->decoder = (PyObject *)d;
    *status = r;
    return 0;
}

/* audio_open(path, sample_rate=0, channels=0, missing=0, remote=None, corrupt=0,
 * cache_bytes=None, decoder=None) -> handle (cache_bytes None:
 * reel_audio_settings' default; decoder: the open Decoder of `path`, whose
 * bytes the audio shares, its remote settings then used) */
PyObject *mod_audio_open(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "path",    "sample_rate", "channels", "missing", "remote",
                          "corrupt", "cache_bytes", "decoder",  NULL };
    PyObject *path = NULL, *remote = Py_None, *cache = Py_None, *decoder = Py_None;
    int rate = 0, channels = 0, missing = 0, corrupt = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|iiiOiOO:audio_open", kw, PyUnicode_FSConverter, &path, &rate,
                                     &channels, &missing, &remote, &corrupt, &cache, &decoder))
        return NULL;
    reel_state *st = PyModule_GetState(module);
    if (decoder != Py_None && !PyObject_TypeCheck(decoder, st->DecoderType)) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_TypeError, "audio_open: decoder must be a reel Decoder or None");
        return NULL;
    }
    rx_audio *h = PyMem_Calloc(1, sizeof *h);
    if (!h || !(h->lock = PyThread_allocate_lock())) {
        rx_audio_free(h);
        Py_DECREF(path);
        return PyErr_NoMemory();
    }
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.sample_rate = rate;
    s.channels = channels;
    s.missing = (reel_audio_missing)missing;
    s.corrupt_policy = (reel_corrupt_policy)corrupt;
    if (cache != Py_None) {
        s.cache_bytes = PyLong_AsLongLong(cache);
        if (s.cache_bytes == -1 && PyErr_Occurred()) {
            rx_audio_free(h);
            Py_DECREF(path);
            return NULL;
        }
    }
    if (remote != Py_None) {
        if (rx_remote_from_dict(remote, &h->remote, &h->ca_bundle, &h->bearer_token) < 0) {
            rx_audio_free(h);
            Py_DECREF(path);
            return NULL;
        }
        s.remote = &h->remote;
    }
    const char *p = PyBytes_AsString(path);
    reel_error err;
    reel_error_clear(&err);
    int r;
    if (decoder != Py_None) {
        if (open_shared(h, (DecoderObject *)decoder, &s, &r, &err) < 0) {
            rx_audio_free(h);
            Py_DECREF(path);
            return NULL;
        }
    } else {
        Py_BEGIN_ALLOW_THREADS
        r = reel_audio_open(&h->a, p, &s, &err);
        Py_END_ALLOW_THREADS
    }
    if (r != REEL_OK) {
        rx_audio_free(h);
        PyObject *res = raise_err(st, r, &err, p);
        Py_DECREF(path);
        return res;
    }
    Py_DECREF(path);
    PyObject *cap = PyCapsule_New(h, CAPSULE, capsule_free);
    if (!cap) rx_audio_free(h);
    return cap;
}

/* audio_info(handle) -> dict */
PyObject *mod_audio_info(PyObject *module, PyObject *cap)
{
    (void)module;
    rx_audio *h = handle_of(cap);
    return h ? info_dict(reel_audio_get_info(h->a)) : NULL;
}

/* audio_stats(handle) -> dict (reel_audio_stats) */
PyObject *mod_audio_stats(PyObject *module, PyObject *cap)
{
    (void)module;
    rx_audio *h = handle_of(cap);
    if (!h) return NULL;
    reel_audio_stats s;
    PyThread_acquire_lock(h->lock, WAIT_LOCK);
    reel_audio_get_stats(h->a, &s, NULL);
    PyThread_release_lock(h->lock);
    return Py_BuildValue("{sLsLsLsLsLsL}", "windows", (long long)s.windows, "windows_cached",
                         (long long)s.windows_cached, "runs_from_a0", (long long)s.runs_from_a0, "runs_from_mark",
                         (long long)s.runs_from_mark, "cache_bytes", (long long)s.cache_bytes, "cache_peak_bytes",
                         (long long)s.cache_peak_bytes);
}

int rx_audio_remote_stats(PyObject *cap, reel_remote_stats *out)
{
    rx_audio *h = handle_of(cap);
    if (!h) return -1;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(h->lock, WAIT_LOCK);
    reel_audio_get_remote_stats(h->a, out, NULL);
    PyThread_release_lock(h->lock);
    Py_END_ALLOW_THREADS
    return 0;
}

/* audio_samples(handle, t0, t1, num, den) -> (Frames [C, S] float32,
 * first_sample, valid_lo, valid_hi, missing, missing_lo, missing_hi,
 * corrupt_packets) */
PyObject *mod_audio_samples(PyObject *module, PyObject *args)
{
    PyObject *cap;
    long long t0, t1;
    int num, den;
    if (!PyArg_ParseTuple(args, "OLLii:audio_samples", &cap, &t0, &t1, &num, &den)) return NULL;
    rx_audio *h = handle_of(cap);
    if (!h) return NULL;
    reel_state *st = PyModule_GetState(module);
    const reel_audio_info *info = reel_audio_get_info(h->a);
    reel_error err;
    reel_error_clear(&err);
    reel_audio_window w;
    int r = reel_audio_get_window(h->a, t0, t1, num, den, &w, &err);
    if (r != REEL_OK) return raise_err(st, r, &err, NULL);
    int64_t shape[2] = { info->channels, w.num_samples };
    FramesObject *f = frames_alloc(st, DT_FLOAT32, 2, shape);
    if (!f) return NULL;
    Py_INCREF(cap); /* the handle outlives this call whatever another thread drops */
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(h->lock, WAIT_LOCK);
    r = reel_audio_get_samples(h->a, t0, t1, num, den, (float *)f->data, (size_t)(shape[0] * shape[1]), &w, &err);
    PyThread_release_lock(h->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(cap);
    if (r != REEL_OK) {
        Py_DECREF(f);
        return raise_err(st, r, &err, NULL);
    }
    return Py_BuildValue("(NLLLLLLL)", (PyObject *)f, (long long)w.first_sample, (long long)w.valid_lo,
                         (long long)w.valid_hi, (long long)w.missing, (long long)w.missing_lo, (long long)w.missing_hi,
                         (long long)w.corrupt_packets);
}
