/* _ext_audio.c: reel/audio.h for Python: a window's samples as Frames
 * (float32 [C, S], zero-copy to torch and numpy) with where they sit, and
 * the audio's facts. C validates; this file converts. */
#include "_ext.h"

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

/* audio_samples(path, t0, t1, num, den, sample_rate=0, channels=0, missing=0)
 * -> (Frames [C, S] float32, first_sample, valid_lo, valid_hi, info) */
PyObject *mod_audio_samples(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "path", "t0", "t1", "num", "den", "sample_rate", "channels", "missing", NULL };
    PyObject *path = NULL;
    long long t0, t1;
    int num, den, rate = 0, channels = 0, missing = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&LLii|iii:audio_samples", kw, PyUnicode_FSConverter, &path, &t0,
                                     &t1, &num, &den, &rate, &channels, &missing))
        return NULL;
    reel_state *st = PyModule_GetState(module);
    reel_audio_settings s;
    reel_audio_default_settings(&s);
    s.sample_rate = rate;
    s.channels = channels;
    s.missing = (reel_audio_missing)missing;
    const char *p = PyBytes_AsString(path);
    reel_error err;
    reel_error_clear(&err);
    reel_audio *a = NULL;
    reel_audio_window w;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_audio_open(&a, p, &s, &err);
    if (r == REEL_OK) r = reel_audio_get_window(a, t0, t1, num, den, &w, &err);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        reel_audio_close(&a);
        PyObject *res = raise_err(st, r, &err, p);
        Py_DECREF(path);
        return res;
    }
    const reel_audio_info *info = reel_audio_get_info(a);
    int64_t shape[2] = { info->channels, w.num_samples };
    FramesObject *f = frames_alloc(st, DT_FLOAT32, 2, shape);
    if (!f) {
        reel_audio_close(&a);
        Py_DECREF(path);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    r = reel_audio_get_samples(a, t0, t1, num, den, (float *)f->data, (size_t)(shape[0] * shape[1]), &w, &err);
    Py_END_ALLOW_THREADS
    PyObject *res = NULL;
    if (r != REEL_OK) {
        raise_err(st, r, &err, p);
    } else {
        PyObject *d = info_dict(info);
        if (d)
            res = Py_BuildValue("(NLLLN)", (PyObject *)f, (long long)w.first_sample, (long long)w.valid_lo,
                                (long long)w.valid_hi, d);
        if (res) f = NULL; /* the tuple took it */
    }
    Py_XDECREF(f);
    reel_audio_close(&a);
    Py_DECREF(path);
    return res;
}
