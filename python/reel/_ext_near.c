/* _ext_near.c: frames by timestamp with a tolerance: Decoder.get_frames_near
 * (reel_decoder_get_frames_near), Decoder.memory, and decode_near: several
 * decoders' jobs in one reel_decode_near call with the GIL released, each
 * into new Frames or into the caller's array. */
#include "_ext_decoder.h"

/* f.distance_seconds and f.within_tolerance from the call's outputs. */
static int near_meta(FramesObject *f, const double *dist, const uint8_t *within, Py_ssize_t n)
{
    PyObject *d = PyTuple_New(n), *w = PyTuple_New(n);
    if (!d || !w) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyFloat_FromDouble(dist[i]);
        if (!x) goto fail;
        PyTuple_SetItem(d, i, x);
        PyTuple_SetItem(w, i, PyBool_FromLong(within[i]));
    }
    f->dist = d;
    f->within = w;
    return 0;
fail:
    Py_XDECREF(d);
    Py_XDECREF(w);
    return -1;
}

static void near_settings(reel_near_settings *s, double tolerance_s, int on_violation, int threads)
{
    reel_near_default_settings(s);
    s->tolerance_s = tolerance_s;
    s->on_violation = (reel_near_violation)on_violation;
    s->threads = threads;
}

PyObject *rx_dec_get_frames_near(DecoderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "seconds", "tolerance_s", "on_violation", NULL };
    PyObject *seconds;
    double tolerance_s;
    int on_violation;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Odi:get_frames_near", kw, &seconds, &tolerance_s, &on_violation))
        return NULL;
    Py_ssize_t n = 0;
    double *secs = parse_double_seq(seconds, &n, "seconds must be a sequence of numbers");
    if (!secs) return NULL;
    size_t m = (size_t)(n ? n : 1);
    int64_t *idx = PyMem_Malloc(m * sizeof *idx);
    double *dist = PyMem_Malloc(m * sizeof *dist);
    uint8_t *within = PyMem_Malloc(m);
    FramesObject *f = NULL;
    PyObject *r = NULL;
    if (!idx || !dist || !within) {
        PyErr_NoMemory();
        goto out;
    }
    /* on a GPU: the frames in device memory (the call waits for their write) */
    f = rx_dec_on_gpu(self->dec) ? rx_gpu_dec_alloc_frames(self, n) : rx_dec_alloc_frames(self, n);
    if (!f || rx_dec_acquire(self) < 0) goto out;
    reel_near_settings s;
    near_settings(&s, tolerance_s, on_violation, 0);
    reel_error err;
    reel_error_clear(&err);
    reel_decode_stats stats;
    memset(&stats, 0, sizeof stats);
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = reel_decoder_get_frames_near(self->dec, secs, (size_t)n, &s, &self->transform, f->data, f->nbytes, idx, dist,
                                      within, &stats, &err);
    Py_END_ALLOW_THREADS
    int meta = 0;
    if (st == REEL_OK) {
        self->stats = stats;
        meta = rx_dec_fill_meta(self, f, idx, n, self->transform.layout == REEL_LAYOUT_CHW);
        if (meta == 0) meta = near_meta(f, dist, within, n);
    }
    rx_dec_release(self);
    if (st != REEL_OK)
        rx_dec_raise(self, st, &err);
    else if (meta == 0)
        r = Py_NewRef((PyObject *)f);
out:
    Py_XDECREF(f);
    PyMem_Free(secs);
    PyMem_Free(idx);
    PyMem_Free(dist);
    PyMem_Free(within);
    return r;
}

PyObject *rx_dec_memory(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (rx_dec_acquire(self) < 0) return NULL;
    int64_t bytes = reel_decoder_get_memory(self->dec);
    rx_dec_release(self);
    return PyLong_FromLongLong(bytes);
}

/* ---- decode_near ---------------------------------------------------------- */

typedef struct near_job_py {
    const char *name;   /* the job's name (a camera), for messages; borrowed from its tuple */
    DecoderObject *dec; /* borrowed from its tuple */
    double *secs;       /* PyMem */
    Py_ssize_t n;
    reel_transform t;
    PyObject *out;  /* the caller's array, or None */
    rx_buffer view; /* of out, while the call writes it */
    int have_view;
    FramesObject *frames; /* the result: new, or a view of out */
    int64_t *idx;         /* PyMem, n each */
    double *dist;
    uint8_t *within;
} near_job_py;

static int parse_job(reel_state *st, PyObject *item, int dtype, int layout, int color, near_job_py *j)
{
    PyObject *dec, *seconds, *out;
    int w, h;
    if (!PyTuple_Check(item) ||
        !PyArg_ParseTuple(item, "sOOiiO:decode_near job", &j->name, &dec, &seconds, &w, &h, &out)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "decode_near: a job is (name, Decoder, seconds, width, height, out)");
        return -1;
    }
    if (!PyObject_TypeCheck(dec, st->DecoderType)) {
        PyErr_Format(PyExc_TypeError, "decode_near: %s: not a reel Decoder", j->name);
        return -1;
    }
    j->dec = (DecoderObject *)dec;
    j->out = out;
    j->secs = parse_double_seq(seconds, &j->n, "seconds must be a sequence of numbers");
    if (!j->secs) return -1;
    size_t m = (size_t)(j->n ? j->n : 1);
    j->idx = PyMem_Malloc(m * sizeof *j->idx);
    j->dist = PyMem_Malloc(m * sizeof *j->dist);
    j->within = PyMem_Malloc(m);
    if (!j->idx || !j->dist || !j->within) {
        PyErr_NoMemory();
        return -1;
    }
    reel_transform_default_settings(&j->t);
    j->t.width = w;
    j->t.height = h;
    j->t.pixels.dtype = (reel_dtype)dtype;
    j->t.pixels.color = (reel_color)color;
    j->t.layout = (reel_layout)layout;
    return 0;
}

/* The element format a buffer of `dtype` may have (struct module codes). */
static int format_fits(const char *format, int dtype)
{
    const char *f = format ? format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    if (!f[0] || f[1]) return 0;
    switch (dtype) {
    case DT_UINT8: return f[0] == 'B';
    case DT_FLOAT32: return f[0] == 'f';
    case DT_FLOAT16: return f[0] == 'e';
    case DT_BFLOAT16: return f[0] == 'e' || f[0] == 'h' || f[0] == 'H'; /* numpy has no bfloat16: 2-byte views */
    case DT_UINT16: return f[0] == 'H';
    default: return 0;
    }
}

/* The job's result: new Frames, or a view of its `out` after checking that
 * `out` is a writable C-contiguous array of the shape and element type the
 * job makes (decoder lock held: the output size is the decoder's). */
static int job_output(reel_state *st, near_job_py *j)
{
    int w = 0, h = 0;
    size_t fb = 0;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_get_output_size(j->dec->dec, &j->t, &w, &h, &fb, &err);
    if (r != REEL_OK) {
        rx_dec_raise(j->dec, r, &err);
        return -1;
    }
    int chw = j->t.layout == REEL_LAYOUT_CHW;
    const int64_t c = j->t.pixels.color == REEL_COLOR_GRAY ? 1 : 3;
    int64_t shape[4] = { j->n, chw ? c : h, chw ? h : w, chw ? w : c };
    int dt = (int)j->t.pixels.dtype;
    if (rx_dec_on_gpu(j->dec->dec)) { /* new Frames in the decoder's device memory */
        if (j->out != Py_None) {
            PyErr_Format(PyExc_ValueError,
                         "decode_near: out['%s']: the decoders are on %s, where reel writes new Frames (out= is "
                         "for CPU arrays)",
                         j->name, reel_decoder_get_device(j->dec->dec));
            return -1;
        }
        j->frames = rx_gpu_new_frames(st, reel_decoder_get_device(j->dec->dec), fb * (size_t)(j->n ? j->n : 1), dt, 4,
                                      shape, j->dec);
        return j->frames ? 0 : -1;
    }
    if (j->out == Py_None) {
        j->frames = frames_alloc(st, dt, 4, shape);
        return j->frames ? 0 : -1;
    }
    if (rx_buffer_get(j->out, &j->view, RX_BUF_WRITABLE) <= 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError,
                     "decode_near: out['%s'] must be a writable C-contiguous array (numpy, or a CPU tensor)", j->name);
        return -1;
    }
    j->have_view = 1;
    int ok = j->view.ndim == 4 && j->view.itemsize == dtype_table[dt].itemsize && format_fits(j->view.format, dt);
    for (int i = 0; ok && i < 4; i++) ok = j->view.shape[i] == shape[i];
    if (!ok) {
        PyErr_Format(PyExc_ValueError,
                     "decode_near: out['%s'] must be %s [%lld, %lld, %lld, %lld] (%s), C-contiguous and writable",
                     j->name, dtype_table[dt].name, (long long)shape[0], (long long)shape[1], (long long)shape[2],
                     (long long)shape[3], chw ? "N, C, H, W" : "N, H, W, C");
        return -1;
    }
    j->frames = frames_view(st, j->out, (void *)j->view.buf, dt, 4, shape);
    return j->frames ? 0 : -1;
}

static int ptr_order(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (DecoderObject *const *)a, y = (uintptr_t) * (DecoderObject *const *)b;
    return (x > y) - (x < y);
}

/* decode_near(jobs, tolerance_s, on_violation, threads, dtype, layout, color) */
PyObject *mod_decode_near(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "jobs", "tolerance_s", "on_violation", "threads", "dtype", "layout", "color", NULL };
    PyObject *list;
    double tolerance_s;
    int on_violation, threads, dtype, layout, color = REEL_COLOR_RGB;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!diiii|i:decode_near", kw, &PyList_Type, &list, &tolerance_s,
                                     &on_violation, &threads, &dtype, &layout, &color))
        return NULL;
    if (dtype < 0 || dtype > REEL_DTYPE_UINT16 || (layout != REEL_LAYOUT_HWC && layout != REEL_LAYOUT_CHW) ||
        (color != REEL_COLOR_RGB && color != REEL_COLOR_GRAY)) {
        PyErr_SetString(PyExc_ValueError, "decode_near: bad dtype, layout or color");
        return NULL;
    }
    reel_state *st = PyModule_GetState(module);
    Py_ssize_t nj = PyList_Size(list);
    size_t m = (size_t)(nj ? nj : 1);
    near_job_py *jobs = PyMem_Calloc(m, sizeof *jobs);
    DecoderObject **held = PyMem_Calloc(m, sizeof *held);
    reel_near_job *cj = PyMem_Calloc(m, sizeof *cj);
    Py_ssize_t nheld = 0, ndec = 0;
    PyObject *result = NULL, *keep = NULL;
    if (!jobs || !held || !cj) {
        PyErr_NoMemory();
        goto out;
    }
    keep = PyList_GetSlice(list, 0, nj); /* the tuples stay alive while their strings are used */
    if (!keep) goto out;
    for (Py_ssize_t i = 0; i < nj; i++)
        if (parse_job(st, PyList_GetItem(keep, i), dtype, layout, color, &jobs[i]) < 0) goto out;
    /* each decoder once, in address order: two calls that share decoders
     * take their locks in the same order */
    for (Py_ssize_t i = 0; i < nj; i++) held[ndec++] = jobs[i].dec;
    qsort(held, (size_t)ndec, sizeof *held, ptr_order);
    Py_ssize_t u = 0;
    for (Py_ssize_t i = 0; i < ndec; i++)
        if (!u || held[u - 1] != held[i]) held[u++] = held[i];
    ndec = u;
    for (; nheld < ndec; nheld++)
        if (rx_dec_acquire(held[nheld]) < 0) goto out;
    for (Py_ssize_t i = 0; i < nj; i++) {
        if (job_output(st, &jobs[i]) < 0) goto out;
        cj[i].decoder = jobs[i].dec->dec;
        cj[i].seconds = jobs[i].secs;
        cj[i].n = (size_t)jobs[i].n;
        cj[i].transform = &jobs[i].t;
        cj[i].dst = jobs[i].frames->data;
        cj[i].dst_size = jobs[i].frames->nbytes;
        cj[i].indices_out = jobs[i].idx;
        cj[i].distance_out = jobs[i].dist;
        cj[i].within_out = jobs[i].within;
    }
    reel_near_settings s;
    near_settings(&s, tolerance_s, on_violation, threads);
    reel_error err;
    reel_error_clear(&err);
    size_t failed = (size_t)nj;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_decode_near(cj, (size_t)nj, &s, &failed, &err);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        if (failed < (size_t)nj)
            rx_dec_raise(jobs[failed].dec, r, &err);
        else
            raise_err(st, r, &err, NULL);
        goto out;
    }
    result = PyList_New(nj);
    for (Py_ssize_t i = 0; result && i < nj; i++) {
        near_job_py *j = &jobs[i];
        if (rx_dec_fill_meta(j->dec, j->frames, j->idx, j->n, layout == REEL_LAYOUT_CHW) < 0 ||
            near_meta(j->frames, j->dist, j->within, j->n) < 0) {
            Py_CLEAR(result);
            break;
        }
        PyList_SetItem(result, i, Py_NewRef((PyObject *)j->frames));
    }
out:
    for (Py_ssize_t i = 0; i < nheld; i++) rx_dec_release(held[i]);
    for (Py_ssize_t i = 0; jobs && i < nj; i++) {
        if (jobs[i].have_view) rx_buffer_release(&jobs[i].view);
        Py_XDECREF(jobs[i].frames);
        PyMem_Free(jobs[i].secs);
        PyMem_Free(jobs[i].idx);
        PyMem_Free(jobs[i].dist);
        PyMem_Free(jobs[i].within);
    }
    Py_XDECREF(keep);
    PyMem_Free(jobs);
    PyMem_Free(held);
    PyMem_Free(cj);
    return result;
}
