/* _ext_loader.c: reel._reel.Loader and BatchHandle: the C loader and its
 * dataset, batches handed out as zero-copy Frames views of the ring. */
#include "_ext.h"

/* ======================================================================
 * Loader: wraps reel_loader and its dataset. Batches are handed out as
 * views whose owner, a BatchHandle, gives the buffer back to the ring when
 * the last view (torch tensor, numpy array, Frames) is freed.
 * ====================================================================== */

typedef struct LoaderObject {
    PyObject_HEAD reel_dataset *ds;
    reel_loader *loader;
    PyThread_type_lock lock; /* one consumer at a time */
    pid_t pid;
    Py_ssize_t outstanding;               /* live BatchHandles */
    int closing;                          /* close() called: destroy when outstanding hits 0 */
    int pad;                              /* settings.pad: variable batches come padded */
    char *ca_bundle, *bearer_token;       /* strings of the remote settings (the loader keeps pointers) */
    char device[64], device_fallback[64]; /* decoder.device, .device_fallback point here */
    PyObject *weakreflist;
} LoaderObject;

typedef struct BatchHandleObject {
    PyObject_HEAD LoaderObject *loader;
    reel_batch *batch;
    PyObject *weakreflist;
} BatchHandleObject;

/* Settings by name come from the C table (reel_loader_settings_get_fields), so
 * Python passes {"sampler.frames_per_clip": 8, ...} and unknown names are
 * errors; a new setting needs no line here. */

PyObject *mod_loader_defaults(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    size_t n = 0;
    const reel_field *t = reel_loader_settings_get_fields(&n);
    return rx_fields_dict(t, n, &s, 0);
}

int rx_build_dataset(reel_state *st, PyObject *dataset, reel_dataset **out)
{
    reel_error err;
    reel_error_clear(&err);
    int r;
    if (PyBytes_Check(dataset) || PyUnicode_Check(dataset) || PyObject_HasAttrString(dataset, "__fspath__")) {
        PyObject *pb = NULL;
        if (!PyUnicode_FSConverter(dataset, &pb)) return -1;
        const char *path = PyBytes_AsString(pb);
        Py_BEGIN_ALLOW_THREADS
        r = reel_dataset_create_from_path(out, path, &err);
        Py_END_ALLOW_THREADS
        if (r != REEL_OK) raise_err(st, r, &err, path);
        Py_DECREF(pb);
        return r == REEL_OK ? 0 : -1;
    }
    PyObject *seq = PySequence_Fast(dataset, "dataset must be a path or a sequence of entries");
    if (!seq) return -1;
    reel_dataset *ds = NULL;
    r = reel_dataset_create(&ds, &err);
    if (r != REEL_OK) {
        Py_DECREF(seq);
        raise_err(st, r, &err, NULL);
        return -1;
    }
    Py_ssize_t n = rx_fast_size(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *path_obj, *label, *cls;
        double start = 0.0, end = -1.0;
        if (!PyArg_ParseTuple(rx_fast_item(seq, i), "OOO|dd:dataset entry", &path_obj, &label, &cls, &start, &end))
            goto fail;
        PyObject *pb = NULL;
        if (!PyUnicode_FSConverter(path_obj, &pb)) goto fail;
        if (cls != Py_None) {
            const char *name = PyUnicode_AsUTF8AndSize(cls, NULL);
            r = name ? reel_dataset_add_named(ds, PyBytes_AsString(pb), name, start, end, &err) : REEL_OK;
            if (!name) {
                Py_DECREF(pb);
                goto fail;
            }
        } else {
            long long lab = -1;
            if (label != Py_None) {
                lab = PyLong_AsLongLong(label);
                if (lab == -1 && PyErr_Occurred()) {
                    Py_DECREF(pb);
                    goto fail;
                }
            }
            r = reel_dataset_add(ds, PyBytes_AsString(pb), lab, start, end, &err);
        }
        if (r != REEL_OK) {
            raise_err(st, r, &err, PyBytes_AsString(pb));
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
    reel_dataset_destroy(&ds);
    return -1;
}

/* settings["samples"]: a sequence of dataset indices into a new int64 array
 * (PyMem_Free it; reel_loader_create copies it). */
static int samples_from_seq(PyObject *v, int64_t **out, int64_t *n)
{
    PyObject *seq = PySequence_Fast(v, "samples must be a sequence of dataset indices");
    if (!seq) return -1;
    Py_ssize_t len = rx_fast_size(seq);
    int64_t *a = PyMem_Malloc((size_t)(len > 0 ? len : 1) * sizeof *a);
    if (!a) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        long long x = PyLong_AsLongLong(rx_fast_item(seq, i));
        if (x == -1 && PyErr_Occurred()) {
            PyMem_Free(a);
            Py_DECREF(seq);
            return -1;
        }
        a[i] = x;
    }
    Py_DECREF(seq);
    *out = a;
    *n = len;
    return 0;
}

/* The settings keys that are no plain field of reel_loader_settings:
 * "decoder.remote" (a dict of reel_remote_settings), "samples" (the sample
 * indices, owned here until the loader has copied them) and the strings
 * "decoder.device" and "decoder.device_fallback" (kept in the object). */
typedef struct special_keys {
    LoaderObject *self;
    reel_loader_settings *s;
    reel_remote_settings *remote;
    int64_t *samples; /* PyMem_Free */
} special_keys;

static int take_special_key(const char *k, PyObject *value, void *opaque)
{
    special_keys *c = opaque;
    if (!strcmp(k, "decoder.remote")) {
        if (rx_remote_from_dict(value, c->remote, &c->self->ca_bundle, &c->self->bearer_token) < 0) return -1;
        c->s->decoder.remote = c->remote;
        return 1;
    }
    int fallback = !strcmp(k, "decoder.device_fallback");
    if (fallback || !strcmp(k, "decoder.device")) {
        const char *v = value == Py_None ? NULL : PyUnicode_AsUTF8AndSize(value, NULL);
        if (value != Py_None && !v) return -1;
        char *own = fallback ? c->self->device_fallback : c->self->device;
        if (v) snprintf(own, sizeof c->self->device, "%s", v);
        if (fallback)
            c->s->decoder.device_fallback = v ? own : NULL;
        else
            c->s->decoder.device = v ? own : NULL;
        return 1;
    }
    if (!strcmp(k, "samples")) {
        PyMem_Free(c->samples);
        c->samples = NULL;
        if (value != Py_None && samples_from_seq(value, &c->samples, &c->s->num_samples) < 0) return -1;
        c->s->samples = c->samples;
        return 1;
    }
    return 0;
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
    reel_remote_settings remote;
    reel_remote_default_settings(&remote);
    int64_t *samples = NULL; /* settings["samples"], until the loader has copied it */
    if (settings != Py_None) {
        if (!PyDict_Check(settings)) {
            PyErr_SetString(PyExc_TypeError, "settings must be a dict");
            return -1;
        }
        size_t n = 0;
        const reel_field *table = reel_loader_settings_get_fields(&n);
        special_keys sk = { self, &s, &remote, NULL };
        int bad = rx_fields_from_dict(settings, table, n, &s, "loader", take_special_key, &sk) < 0;
        samples = sk.samples;
        if (bad) {
            PyMem_Free(samples);
            return -1;
        }
    }
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        PyMem_Free(samples);
        PyErr_NoMemory();
        return -1;
    }
    self->pid = getpid();
    if (rx_build_dataset(st, dataset, &self->ds) < 0) {
        PyMem_Free(samples);
        return -1;
    }
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_loader_create(&self->loader, self->ds, &s, &err);
    Py_END_ALLOW_THREADS
    PyMem_Free(samples);
    if (r != REEL_OK) {
        reel_dataset_destroy(&self->ds);
        raise_err(st, r, &err, NULL);
        return -1;
    }
    self->pad = s.pad;
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
        reel_dataset_destroy(&ds);
        Py_END_ALLOW_THREADS
    }
    PyThread_release_lock(self->lock);
}

static void loader_dealloc(LoaderObject *self)
{
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    if (self->lock) {
        loader_destroy_now(self);
        if (self->pid == getpid()) PyThread_free_lock(self->lock);
        self->lock = NULL;
    }
    free(self->ca_bundle); /* after the loader: it held pointers to them */
    if (self->bearer_token) memset(self->bearer_token, 0, strlen(self->bearer_token));
    free(self->bearer_token);
    rx_type_free((PyObject *)self);
}

static int loader_check(LoaderObject *self)
{
    if (!self->lock) {
        PyErr_SetString(PyExc_ValueError, "reel loader is not initialised");
        return -1;
    }
    if (self->pid != getpid()) {
        PyErr_SetString(PyExc_RuntimeError, "reel.Loader: this loader was created in another process (before a fork); "
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
    rx_type_free((PyObject *)self);
}

static PyMemberDef batchhandle_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(BatchHandleObject, weakreflist), READONLY, NULL }, { NULL }
};

static PyMethodDef batchhandle_methods[] = { { "__reduce__", (PyCFunction)reduce_forbidden, METH_NOARGS, NULL },
                                             { NULL } };

static PyType_Slot batchhandle_slots[] = {
    { Py_tp_doc, (void *)"Owner of one batch buffer: gives it back to the loader's ring when freed." },
    { Py_tp_dealloc, (void *)batchhandle_dealloc },
    { Py_tp_new, (void *)frames_new_forbidden },
    { Py_tp_members, batchhandle_members },
    { Py_tp_methods, batchhandle_methods },
    { 0, NULL }
};

PyType_Spec batchhandle_spec = {
    .name = "reel._reel.BatchHandle",
    .basicsize = sizeof(BatchHandleObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = batchhandle_slots,
};

static PyObject *loader_next(LoaderObject *self, PyObject *args)
{
    double timeout = -1.0; /* none given: wait as long as it takes */
    if (!PyArg_ParseTuple(args, "|d:next", &timeout)) return NULL;
    if (loader_check(self) < 0) return NULL;
    if (PyTuple_Size(args) > 0 && !(timeout >= 0)) { /* C judges a timeout: its refusal, with its message */
        reel_batch *none = NULL;
        reel_error e;
        reel_error_clear(&e);
        int r0 = reel_loader_next_timed(self->loader, &none, timeout, &e);
        if (r0 == REEL_OK && none) reel_loader_release(self->loader, none); /* not reached: C refuses it */
        return raise_err(state_of((PyObject *)self), r0 != REEL_OK ? r0 : REEL_E_INTERNAL, &e, NULL);
    }
    /* Every ring buffer held here while the epoch still has batches to hand
     * out: reel_loader_next would wait forever for a free one. The consumer's
     * position is C's (read under the consumer lock). */
    int ring_size = 0;
    int64_t left = 0;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
    if (self->loader) {
        ring_size = (int)reel_loader_get_ring_size(self->loader);
        left = reel_loader_get_batches_left(self->loader);
    }
    PyThread_release_lock(self->lock);
    if (ring_size > 0 && self->outstanding >= ring_size && left > 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "reel.Loader: all %d batch buffers are held by live batches (or tensors and arrays "
                     "viewing them); free one before asking for the next batch, copy what you keep, or "
                     "raise prefetch_batches",
                     ring_size);
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
    const int64_t t_start = rx_clock_ns();
    for (;;) {
        double slice = 0.1;
        if (timeout >= 0) {
            double remaining = timeout - (double)(rx_clock_ns() - t_start) / 1e9;
            slice = remaining < 0 ? 0 : remaining < slice ? remaining : slice;
        }
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        r = self->loader ? reel_loader_next_timed(self->loader, &b, slice, &err) : REEL_E_CANCELLED;
        if (r == REEL_E_AGAIN) PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
        if (r != REEL_E_AGAIN) break;
        if (PyErr_CheckSignals() < 0) return NULL;
        if (timeout >= 0 && (double)(rx_clock_ns() - t_start) / 1e9 >= timeout) {
            char msg[80]; /* PyErr_Format has no %g */
            snprintf(msg, sizeof msg, "reel.Loader: no batch within %g s", timeout);
            PyErr_SetString(PyExc_TimeoutError, msg);
            return NULL;
        }
    }
    BatchHandleObject *h = NULL;
    if (r == REEL_OK && b) {
        h = (BatchHandleObject *)rx_type_alloc(st->BatchHandleType);
        if (h) {
            h->loader = (LoaderObject *)Py_NewRef((PyObject *)self);
            h->batch = b;
            self->outstanding++;
        } else {
            reel_loader_release(self->loader, b);
        }
    }
    PyThread_release_lock(self->lock);
    if (r == REEL_OK && b && !h) return NULL;
    if (r != REEL_OK) {
        if (r == REEL_E_CANCELLED && !self->loader) {
            PyErr_SetString(PyExc_ValueError, "reel.Loader is closed");
            return NULL;
        }
        reel_failure f; /* under on_error="raise": the sample that failed */
        const char *path =
            self->loader && reel_loader_get_raised_failure(self->loader, &f, NULL) == REEL_OK ? f.path : NULL;
        return raise_err(st, r, &err, path);
    }
    if (!b) Py_RETURN_NONE;

    PyObject *result = rx_batch_result(st, (PyObject *)h, b, self->pad);
    Py_DECREF(h); /* the frames views hold it now (or the batch goes back) */
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

/* The checkpoint after the last batch handed out, as its text form
 * (reel_loader_get_checkpoint, reel_loader_checkpoint_format): the JSON
 * object Loader.state_dict() returns. */
static PyObject *loader_get_checkpoint(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    reel_loader_checkpoint c;
    memset(&c, 0, sizeof c);
    reel_error err;
    reel_error_clear(&err);
    char *text = NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    r = self->loader ? reel_loader_get_checkpoint(self->loader, &c, &err) : REEL_E_CANCELLED;
    PyThread_release_lock(self->lock);
    if (r == REEL_OK) r = reel_loader_checkpoint_format(&c, &text, &err);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_err(st, r, &err, NULL) : NULL;
    }
    PyObject *out = PyUnicode_FromString(text);
    reel_free(text);
    return out;
}

/* checkpoint_init(settings, num_samples, fingerprint, epoch, samples_seen):
 * the checkpoint text a loader of these settings (by C field name) over that
 * dataset gives at that position, without a loader (a DataLoader's parent
 * saves it for workers that hold the loaders). */
PyObject *mod_checkpoint_init(PyObject *module, PyObject *args)
{
    PyObject *settings;
    long long n, epoch, seen;
    unsigned long long hash;
    if (!PyArg_ParseTuple(args, "O!LKLL:checkpoint_init", &PyDict_Type, &settings, &n, &hash, &epoch, &seen))
        return NULL;
    reel_loader_settings s;
    if (rx_loader_settings_of(settings, &s) < 0) return NULL;
    reel_loader_checkpoint c;
    reel_error err;
    reel_error_clear(&err);
    char *text = NULL;
    int r = reel_loader_checkpoint_init(&c, &s, n, hash, epoch, seen, &err);
    if (r == REEL_OK) r = reel_loader_checkpoint_format(&c, &text, &err);
    if (r != REEL_OK) return raise_err(PyModule_GetState(module), r, &err, NULL);
    PyObject *out = PyUnicode_FromString(text);
    reel_free(text);
    return out;
}

/* checkpoint_check(text, settings, num_samples, fingerprint): raises the
 * parser's or the fit check's error unless the checkpoint text fits a loader
 * of these settings over that dataset, without a loader. */
PyObject *mod_checkpoint_check(PyObject *module, PyObject *args)
{
    const char *text;
    Py_ssize_t len;
    PyObject *settings;
    long long n;
    unsigned long long hash;
    if (!PyArg_ParseTuple(args, "y#O!LK:checkpoint_check", &text, &len, &PyDict_Type, &settings, &n, &hash))
        return NULL;
    reel_loader_settings s;
    if (rx_loader_settings_of(settings, &s) < 0) return NULL;
    reel_loader_checkpoint c;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_loader_checkpoint_parse(&c, text, (size_t)len, &err);
    if (r == REEL_OK) r = reel_loader_checkpoint_check(&c, &s, n, hash, &err);
    if (r != REEL_OK) return raise_err(PyModule_GetState(module), r, &err, NULL);
    Py_RETURN_NONE;
}

/* Continues a checkpoint's epoch from its samples_seen on this loader; the
 * checkpoint comes as its text form (bytes, reel_loader_checkpoint_parse:
 * every value checked in C in its full width before it narrows). */
static PyObject *loader_restore_checkpoint(LoaderObject *self, PyObject *args)
{
    const char *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#:restore_checkpoint", &text, &len)) return NULL;
    if (loader_check(self) < 0) return NULL;
    reel_loader_checkpoint c;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_loader_checkpoint_parse(&c, text, (size_t)len, &err);
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_err(st, r, &err, NULL) : NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    r = self->loader ? reel_loader_restore_checkpoint(self->loader, &c, &err) : REEL_E_CANCELLED;
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
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
    return PyLong_FromLongLong(reel_loader_get_batches_per_epoch(self->loader));
}

static PyObject *loader_metrics(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    reel_loader_metrics m;
    memset(&m, 0, sizeof m);
    int r = reel_loader_get_metrics(self->loader, &m, NULL); /* quick; with the GIL, see loader_destroy_now */
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_reel(st, r, NULL, NULL, NULL) : NULL;
    }
    /* the scalars and "remote" from the metrics table, "stages" from the
     * stage table: the keys of reel_loader_get_metrics_json */
    size_t nm = 0, ns = 0;
    const reel_field *tm = reel_loader_metrics_get_fields(&nm), *ts = reel_stage_metrics_get_fields(&ns);
    PyObject *d = rx_fields_dict(tm, nm, &m, 1);
    PyObject *stages = d ? PyList_New(REEL_STAGE_COUNT) : NULL;
    for (int i = 0; stages && i < REEL_STAGE_COUNT; i++) {
        PyObject *sd = rx_fields_dict(ts, ns, &m.stages[i], 1);
        if (!sd) {
            Py_CLEAR(stages);
            break;
        }
        PyList_SetItem(stages, i, sd);
    }
    if (!stages || dict_set(d, "stages", stages) < 0) {
        Py_XDECREF(d);
        return NULL;
    }
    /* counts per cause for the whole run (the failure list is bounded) */
    PyObject *causes = PyDict_New();
    for (int status = -1; causes && status >= REEL_E_LAST; status--) {
        int64_t c = 0;
        reel_loader_get_failures_by_cause(self->loader, status, &c, NULL); /* a failure status: cannot fail */
        if (c && dict_set(causes, reel_strerror(status), PyLong_FromLongLong(c)) < 0) Py_CLEAR(causes);
    }
    if (!causes || dict_set(d, "failures_by_cause", causes) < 0) Py_CLEAR(d);
    return d;
}

/* reel_loader_get_metrics_json as a str (for tests that compare it with metrics()). */
static PyObject *loader_metrics_json(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    char *json = NULL;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_loader_get_metrics_json(self->loader, &json, &err); /* with the GIL, see loader_destroy_now */
    if (r != REEL_OK) {
        reel_state *st = state_of((PyObject *)self);
        return st ? raise_err(st, r, &err, NULL) : NULL;
    }
    PyObject *res = PyUnicode_FromString(json);
    reel_free(json);
    return res;
}

static PyObject *loader_failures(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    int64_t n = reel_loader_get_num_failures(self->loader);
    PyObject *l = PyList_New(0);
    reel_failure f;
    for (int64_t i = 0; l && i < n; i++) {
        if (reel_loader_get_failure(self->loader, i, &f, NULL) != REEL_OK) continue;
        PyObject *path = PyUnicode_DecodeFSDefault(f.path);
        PyObject *reason = path ? PyUnicode_DecodeFSDefault(f.reason) : NULL;
        PyObject *d = reason ? Py_BuildValue("{s:N,s:N,s:i,s:s,s:L,s:L,s:L}", "path", path, "reason", reason, "status",
                                             f.status, "cause", reel_strerror(f.status), "epoch", (long long)f.epoch,
                                             "position", (long long)f.position, "sample", (long long)f.sample)
                             : NULL;
        if (!reason) Py_XDECREF(path);
        if (!d || PyList_Append(l, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(l);
            break;
        }
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
    const char *path = PyBytes_AsString(pb);
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

static PyObject *loader_dataset_info(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    return rx_dataset_info_dict(state_of((PyObject *)self), self->ds);
}

static PyObject *loader_get_closed(LoaderObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->closing || !self->loader);
}
static PyObject *loader_get_outstanding(LoaderObject *self, void *c)
{
    (void)c;
    return PyLong_FromSsize_t(self->outstanding);
}
static PyObject *loader_get_ring_size(LoaderObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(self->loader ? reel_loader_get_ring_size(self->loader) : 0);
}

/* The consumer's epoch and the batches left in it (C's, under the consumer lock). */
static PyObject *loader_position(LoaderObject *self, PyObject *unused)
{
    (void)unused;
    if (loader_check(self) < 0) return NULL;
    long long epoch = 0, left = 0;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    if (self->loader) {
        epoch = reel_loader_get_epoch(self->loader);
        left = reel_loader_get_batches_left(self->loader);
    }
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(LL)", epoch, left);
}

static PyMethodDef loader_methods[] = {
    { "next", (PyCFunction)loader_next, METH_VARARGS,
      "next($self, timeout=-1.0)\n--\n\n(frames, labels, clips, meta) for the next batch, or None at the end of an "
      "epoch;\n"
      "TimeoutError when timeout >= 0 seconds pass first." },
    { "close", (PyCFunction)loader_close, METH_NOARGS,
      "close($self)\n--\n\nStops the loader; it is freed once every batch handed out is freed." },
    { "get_checkpoint", (PyCFunction)loader_get_checkpoint, METH_NOARGS,
      "get_checkpoint($self)\n--\n\nThe checkpoint after the last batch handed out, as its JSON text "
      "(reel_loader_get_checkpoint, reel_loader_checkpoint_format)." },
    { "restore_checkpoint", (PyCFunction)loader_restore_checkpoint, METH_VARARGS,
      "restore_checkpoint($self, text)\n--\n\nContinues a checkpoint's epoch on this loader; `text`: its JSON "
      "form (bytes)." },
    { "batches_per_epoch", (PyCFunction)loader_batches_per_epoch, METH_NOARGS, "batches_per_epoch($self)\n--\n\n" },
    { "position", (PyCFunction)loader_position, METH_NOARGS,
      "position($self)\n--\n\n(epoch, batches_left): the consumer's epoch and the batches next() still hands "
      "out in it (reel_loader_get_epoch, reel_loader_get_batches_left)." },
    { "metrics_json", (PyCFunction)loader_metrics_json, METH_NOARGS,
      "metrics_json($self)\n--\n\nThe metrics as the C library writes them (JSON)." },
    { "metrics", (PyCFunction)loader_metrics, METH_NOARGS,
      "metrics($self)\n--\n\nA snapshot of the metrics as a dict." },
    { "failures", (PyCFunction)loader_failures, METH_NOARGS,
      "failures($self)\n--\n\nThe most recent failed attempts (failure_log_size of them)." },
    { "write_trace", (PyCFunction)loader_write_trace, METH_O,
      "write_trace($self, path)\n--\n\nChrome trace of the threads." },
    { "dataset_info", (PyCFunction)loader_dataset_info, METH_NOARGS,
      "dataset_info($self)\n--\n\n{'size', 'class_names'}." },
    { "__reduce__", (PyCFunction)reduce_forbidden, METH_NOARGS, NULL },
    { NULL }
};

static PyGetSetDef loader_getset[] = {
    { "closed", (getter)loader_get_closed, NULL, "True after close().", NULL },
    { "outstanding", (getter)loader_get_outstanding, NULL, "Batches handed out and not yet freed.", NULL },
    { "ring_size", (getter)loader_get_ring_size, NULL, "Batch buffers in the ring (0 once closed).", NULL },
    { NULL }
};

static PyMemberDef loader_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(LoaderObject, weakreflist), READONLY, NULL }, { NULL }
};

static PyType_Slot loader_slots[] = { { Py_tp_doc, (void *)"Low-level loader; use reel.Loader." },
                                      { Py_tp_new, (void *)PyType_GenericNew },
                                      { Py_tp_init, (void *)loader_init },
                                      { Py_tp_dealloc, (void *)loader_dealloc },
                                      { Py_tp_methods, loader_methods },
                                      { Py_tp_getset, loader_getset },
                                      { Py_tp_members, loader_members },
                                      { 0, NULL } };

PyType_Spec loader_spec = {
    .name = "reel._reel.Loader",
    .basicsize = sizeof(LoaderObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = loader_slots,
};
