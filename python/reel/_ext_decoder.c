/* _ext_decoder.c: reel._reel.Decoder, one open video with a fixed output
 * transform; every decode releases the GIL (file-like sources re-take it). */
#include "_ext_decoder.h"

PyObject *rx_dec_raise(DecoderObject *self, int status, const reel_error *err)
{
    reel_state *st = state_of((PyObject *)self);
    PyObject *cause = rx_dec_take_io_error(self);
    if (!st) {
        Py_XDECREF(cause);
        return NULL;
    }
    if (cause && !PyObject_TypeCheck(cause, (PyTypeObject *)PyExc_Exception)) {
        /* KeyboardInterrupt, SystemExit... raised in a file-like callback: as is */
        PyErr_SetObject((PyObject *)Py_TYPE(cause), cause);
        Py_DECREF(cause);
        return NULL;
    }
    return raise_reel(st, status, err && err->status != REEL_OK ? err->message : NULL, rx_dec_name(self), cause);
}

/* Takes the decoder for one call: checks the process (a forked child gets a
 * fresh decoder: the parent's FFmpeg threads and file offset are not its
 * own), then the lock (with the GIL released: a file-like callback of the
 * holder needs the GIL). On success the caller holds self->lock. */
int rx_dec_acquire(DecoderObject *self)
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
        if (!lock) {
            PyErr_NoMemory();
            return -1;
        }
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
        int r = rx_decoder_open_source(self, &err);
        if (r != REEL_OK) {
            PyThread_release_lock(self->lock);
            rx_dec_raise(self, r, &err);
            return -1;
        }
        self->need_reopen = 0;
    }
    if (!self->dec) {
        PyThread_release_lock(self->lock);
        PyErr_Format(PyExc_ValueError, "%s: the decoder is closed", rx_dec_name(self));
        return -1;
    }
    Py_CLEAR(self->io_error);
    self->interrupted = 0;
    return 0;
}

void rx_dec_release(DecoderObject *self)
{
    PyThread_release_lock(self->lock);
}

int parse_floats3(PyObject *obj, float out[3], const char *what)
{
    if (obj == Py_None) return 0;
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq) return -1;
    if (rx_fast_size(seq) != 3) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s must have 3 values (R, G, B)", what);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        double v = PyFloat_AsDouble(rx_fast_item(seq, i));
        if (v == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[i] = (float)v;
    }
    Py_DECREF(seq);
    return 0;
}

/* The integer codes Decoder() takes from reel/_decoder.py: 0, or -1 with a
 * ValueError naming the bad one. */
static int check_codes(int kind, int dtype, int layout, int color)
{
    const char *bad = kind < SRC_PATH || kind > SRC_FILE                       ? "source kind"
                      : dtype < 0 || dtype > REEL_DTYPE_UINT16                 ? "dtype"
                      : layout != REEL_LAYOUT_HWC && layout != REEL_LAYOUT_CHW ? "layout"
                      : color != REEL_COLOR_RGB && color != REEL_COLOR_GRAY    ? "color"
                                                                               : NULL;
    if (bad) PyErr_Format(PyExc_ValueError, "reel decoder: bad %s", bad);
    return bad ? -1 : 0;
}

/* Decoder()'s keywords as reel/_decoder.py passes them (parse_init_args). */
typedef struct init_args {
    PyObject *source, *name, *index_path, *mean, *std, *remote;
    const char *device, *device_fallback;
    int kind, stream, threads, corrupt, index_mode, skip_nonref, force_scan, check_keyframes, gop_contexts;
    int cx, cy, cw, ch, width, height, filter, convert_path, rotate, flip, dtype, layout, color;
    double divisor;
} init_args;

/* Parses Decoder()'s arguments into *a (the keywords left out keep the
 * defaults of reel_decoder_settings and reel_transform); 0, or -1 with the
 * exception set. */
static int parse_init_args(PyObject *args, PyObject *kwargs, init_args *a)
{
    static char *kwlist[] = { "source",
                              "kind",
                              "name",
                              "stream",
                              "threads",
                              "corrupt",
                              "index_mode",
                              "index_path",
                              "skip_nonref",
                              "force_scan",
                              "crop",
                              "width",
                              "height",
                              "filter",
                              "convert_path",
                              "rotate",
                              "flip",
                              "dtype",
                              "layout",
                              "divisor",
                              "mean",
                              "std",
                              "check_keyframes",
                              "remote",
                              "gop_contexts",
                              "color",
                              "device",
                              "device_fallback",
                              NULL };
    reel_transform def; /* the keywords left out keep its values */
    reel_transform_default_settings(&def);
    memset(a, 0, sizeof *a);
    a->name = a->index_path = a->mean = a->std = a->remote = Py_None;
    a->stream = -1;
    a->corrupt = REEL_CORRUPT_FAIL;
    a->index_mode = REEL_INDEX_OFF;
    a->skip_nonref = 1;
    a->check_keyframes = 1;
    a->gop_contexts = REEL_GOP_CONTEXTS_AUTO;
    a->filter = def.pixels.filter;
    a->convert_path = def.pixels.convert_path;
    a->rotate = def.pixels.apply_rotation;
    a->flip = def.flip_horizontal;
    a->dtype = def.pixels.dtype;
    a->layout = def.layout;
    a->color = def.pixels.color;
    a->divisor = def.pixels.divisor;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs,
            "Oi|$OiiiiOpp(iiii)iiiipp"
            "iidOOpOiizz:Decoder",
            kwlist, &a->source, &a->kind, &a->name, &a->stream, &a->threads, &a->corrupt, &a->index_mode,
            &a->index_path, &a->skip_nonref, &a->force_scan, &a->cx, &a->cy, &a->cw, &a->ch, &a->width, &a->height,
            &a->filter, &a->convert_path, &a->rotate, &a->flip, &a->dtype, &a->layout, &a->divisor, &a->mean, &a->std,
            &a->check_keyframes, &a->remote, &a->gop_contexts, &a->color, &a->device, &a->device_fallback))
        return -1;
    return check_codes(a->kind, a->dtype, a->layout, a->color);
}

/* self->settings (and the remote settings, device names and index path it
 * points at) from the arguments; 0, or -1 with the exception set. */
static int init_settings(DecoderObject *self, const init_args *a)
{
    reel_decoder_default_settings(&self->settings);
    if (a->remote != Py_None) {
        if (rx_remote_from_dict(a->remote, &self->remote, &self->ca_bundle, &self->bearer_token) < 0) return -1;
        self->settings.remote = &self->remote;
    }
    self->settings.interrupt = rx_dec_interrupt;
    self->settings.interrupt_opaque = self;
    self->settings.stream_index = a->stream;
    self->settings.threads = a->threads;
    self->settings.corrupt_policy = a->corrupt;
    self->settings.index_mode = a->index_mode;
    self->settings.skip_nonref = a->skip_nonref;
    self->settings.force_scan = a->force_scan;
    self->settings.check_keyframes = a->check_keyframes;
    self->settings.gop_contexts = a->gop_contexts;
    if (a->device) {
        snprintf(self->device, sizeof self->device, "%s", a->device);
        self->settings.device = self->device;
    }
    if (a->device_fallback) {
        snprintf(self->device_fallback, sizeof self->device_fallback, "%s", a->device_fallback);
        self->settings.device_fallback = self->device_fallback;
    }
    if (a->index_path != Py_None) {
        if (!PyUnicode_FSConverter(a->index_path, &self->index_path)) return -1;
        self->settings.index_path = PyBytes_AsString(self->index_path);
    }
    return 0;
}

/* self->transform, the fixed output transform, from the arguments; 0, or -1
 * with the exception set. */
static int init_transform(DecoderObject *self, const init_args *a)
{
    reel_transform *t = &self->transform;
    reel_transform_default_settings(t);
    t->crop_x = a->cx;
    t->crop_y = a->cy;
    t->crop_w = a->cw;
    t->crop_h = a->ch;
    t->width = a->width;
    t->height = a->height;
    t->pixels.filter = a->filter;
    t->pixels.convert_path = a->convert_path;
    t->pixels.apply_rotation = a->rotate;
    t->flip_horizontal = a->flip;
    t->pixels.dtype = a->dtype;
    t->pixels.color = a->color;
    t->layout = a->layout;
    t->pixels.divisor = (float)a->divisor;
    if (parse_floats3(a->mean, t->pixels.mean, "mean") < 0 || parse_floats3(a->std, t->pixels.std, "std") < 0)
        return -1;
    return 0;
}

/* The source kept (a path, a pinned buffer or a file-like object) and the
 * name shown; 0, or -1 with the exception set. */
static int init_source(DecoderObject *self, const init_args *a)
{
    PyObject *source = a->source, *name = a->name;
    const int kind = a->kind;
    self->kind = kind;
    /* the name shown (errors, .name, repr, metadata.path): a URL redacted;
     * the source keeps it as given, to open it (again, when unpickled) */
    if (kind == SRC_PATH) {
        if (!PyUnicode_FSConverter(source, &self->source)) return -1;
        if (!(self->name = shown_bytes(PyBytes_AsString(self->source)))) return -1;
    } else {
        if (name != Py_None) {
            PyObject *given = NULL;
            if (!PyUnicode_FSConverter(name, &given)) return -1;
            self->name = shown_bytes(PyBytes_AsString(given));
            Py_DECREF(given);
            if (!self->name) return -1;
        } else {
            self->name = PyBytes_FromString(kind == SRC_MEMORY ? "<memory>" : "<file>");
            if (!self->name) return -1;
        }
        if (kind == SRC_MEMORY) {
            if (rx_buffer_get(source, &self->view, RX_BUF_BYTES) < 0) return -1;
            self->have_view = 1;
        } else {
            self->use_readinto = PyObject_HasAttrString(source, "readinto");
        }
        self->source = Py_NewRef(source);
    }
    return 0;
}

/* Makes the lock and opens the video under the transform (its output size);
 * 0, or -1 with the exception set (the decoder then closed). */
static int init_open(DecoderObject *self)
{
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        PyErr_NoMemory();
        return -1;
    }
    self->pid = getpid();

    reel_error err;
    reel_error_clear(&err);
    PyThread_acquire_lock(self->lock, WAIT_LOCK); /* new: nobody else holds it */
    int r = rx_decoder_open_source(self, &err);
    if (r == REEL_OK)
        r = reel_decoder_get_output_size(self->dec, &self->transform, &self->out_w, &self->out_h, &self->frame_bytes,
                                         &err);
    if (r != REEL_OK) reel_decoder_close(&self->dec);
    PyThread_release_lock(self->lock);
    if (r != REEL_OK) {
        self->closed = 1;
        rx_dec_raise(self, r, &err);
        return -1;
    }
    return 0;
}

static int decoder_init(DecoderObject *self, PyObject *args, PyObject *kwargs)
{
    if (self->lock || self->source || self->name) {
        PyErr_SetString(PyExc_RuntimeError, "reel decoder: __init__ called twice");
        return -1;
    }
    init_args a;
    if (parse_init_args(args, kwargs, &a) < 0) return -1;
    if (init_settings(self, &a) < 0 || init_transform(self, &a) < 0 || init_source(self, &a) < 0) return -1;
    return init_open(self);
}

static void decoder_close_now(DecoderObject *self)
{
    if (self->dec && self->pid == getpid()) reel_decoder_close(&self->dec);
    self->dec = NULL;
    self->closed = 1;
    self->need_reopen = 0;
    if (self->have_view) {
        rx_buffer_release(&self->view);
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
    PyObject_GC_UnTrack(self);
    if (self->weakreflist) PyObject_ClearWeakRefs((PyObject *)self);
    decoder_clear(self);
    Py_CLEAR(self->name);
    Py_CLEAR(self->index_path);
    if (self->lock && self->pid == getpid()) PyThread_free_lock(self->lock);
    self->lock = NULL;
    free(self->ca_bundle);
    if (self->bearer_token) memset(self->bearer_token, 0, strlen(self->bearer_token));
    free(self->bearer_token);
    rx_type_free((PyObject *)self);
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

static PyObject *decoder_get_closed(DecoderObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->closed);
}
static PyObject *decoder_get_name(DecoderObject *self, void *c)
{
    (void)c;
    return PyUnicode_DecodeFSDefault(rx_dec_name(self));
}

static PyObject *decoder_get_frame_shape(DecoderObject *self, void *c)
{
    (void)c;
    const int nc = self->transform.pixels.color == REEL_COLOR_GRAY ? 1 : 3;
    if (self->transform.layout == REEL_LAYOUT_CHW) return Py_BuildValue("(iii)", nc, self->out_h, self->out_w);
    return Py_BuildValue("(iii)", self->out_h, self->out_w, nc);
}

static PyObject *decoder_get_dtype(DecoderObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(dtype_table[self->transform.pixels.dtype].name);
}

static PyObject *str_or_empty(const char *s)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

static PyObject *decoder_info(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (rx_dec_acquire(self) < 0) return NULL;
    const reel_video_info *i = reel_decoder_get_info(self->dec);
    PyObject *d = PyDict_New();
    int ok = d && dict_set(d, "name", PyUnicode_DecodeFSDefault(rx_dec_name(self))) == 0 &&
             dict_set(d, "codec", str_or_empty(i->codec)) == 0 &&
             dict_set(d, "profile", str_or_empty(i->profile)) == 0 &&
             dict_set(d, "pix_fmt", str_or_empty(i->pix_fmt)) == 0 &&
             dict_set(d, "container", str_or_empty(i->container)) == 0 &&
             dict_set(d, "color_space", str_or_empty(i->color_space)) == 0 &&
             dict_set(d, "color_range", str_or_empty(i->color_range)) == 0 &&
             dict_set(d, "color_primaries", str_or_empty(i->color_primaries)) == 0 &&
             dict_set(d, "width", PyLong_FromLong(i->width)) == 0 &&
             dict_set(d, "height", PyLong_FromLong(i->height)) == 0 &&
             dict_set(d, "source_width", PyLong_FromLong(i->source_width)) == 0 &&
             dict_set(d, "source_height", PyLong_FromLong(i->source_height)) == 0 &&
             dict_set(d, "has_rotation", PyBool_FromLong(i->has_rotation)) == 0 &&
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
             dict_set(d, "container_bit_rate", PyLong_FromLongLong(i->container_bit_rate)) == 0 &&
             dict_set(d, "file_size", PyLong_FromLongLong(i->file_size)) == 0 &&
             dict_set(d, "index_source", PyLong_FromLong(i->index_source)) == 0;
    rx_dec_release(self);
    if (!ok) {
        Py_XDECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *decoder_frame_table(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (rx_dec_acquire(self) < 0) return NULL;
    int64_t n = 0;
    const reel_frame_entry *t = reel_decoder_get_frame_table(self->dec, &n);
    PyObject *lists[5] = { NULL };
    PyObject *r = NULL;
    int ok = 1;
    for (int k = 0; k < 5 && ok; k++) ok = (lists[k] = PyList_New((Py_ssize_t)n)) != NULL;
    for (int64_t i = 0; i < n && ok; i++) {
        PyObject *v[5] = { PyLong_FromLongLong(t[i].pts), PyLong_FromLongLong(t[i].duration),
                           PyLong_FromLongLong(t[i].pos), PyBool_FromLong(t[i].flags & REEL_FRAME_KEY),
                           PyLong_FromLong(t[i].decode_order) };
        for (int k = 0; k < 5; k++) {
            if (!v[k])
                ok = 0;
            else
                PyList_SetItem(lists[k], (Py_ssize_t)i, v[k]);
        }
    }
    rx_dec_release(self);
    if (ok) r = PyTuple_Pack(5, lists[0], lists[1], lists[2], lists[3], lists[4]);
    for (int k = 0; k < 5; k++) Py_XDECREF(lists[k]);
    return r;
}

/* Changes the output size of later calls (the rest of the transform stays). */
static PyObject *decoder_set_size(DecoderObject *self, PyObject *args)
{
    int w = 0, h = 0;
    if (!PyArg_ParseTuple(args, "ii:set_size", &w, &h)) return NULL;
    if (w < 1 || h < 1) {
        PyErr_SetString(PyExc_ValueError, "set_size: width and height must be positive");
        return NULL;
    }
    if (rx_dec_acquire(self) < 0) return NULL;
    reel_transform t = self->transform;
    t.width = w;
    t.height = h;
    reel_error err;
    reel_error_clear(&err);
    int ow, oh;
    size_t fb;
    int r = reel_decoder_get_output_size(self->dec, &t, &ow, &oh, &fb, &err);
    if (r == REEL_OK) {
        self->transform = t;
        self->out_w = ow;
        self->out_h = oh;
        self->frame_bytes = fb;
    }
    rx_dec_release(self);
    if (r != REEL_OK) return rx_dec_raise(self, r, &err);
    Py_RETURN_NONE;
}

/* remote_stats(audio=None): the decoder's requests, and those of an audio
 * handle (reel._reel.audio_open) reading the same video. */
static PyObject *decoder_remote_stats(DecoderObject *self, PyObject *args)
{
    PyObject *audio = Py_None;
    if (!PyArg_ParseTuple(args, "|O:remote_stats", &audio)) return NULL;
    reel_remote_stats s, more;
    if (audio != Py_None && rx_audio_remote_stats(audio, &more) < 0) return NULL;
    if (rx_dec_acquire(self) < 0) return NULL;
    reel_decoder_get_remote_stats(self->dec, &s, NULL);
    rx_dec_release(self);
    if (audio != Py_None) reel_remote_stats_add(&s, &more);
    return rx_remote_stats_dict(&s);
}

static PyObject *decoder_keyframes(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    if (rx_dec_acquire(self) < 0) return NULL;
    int64_t n = 0;
    const int64_t *k = reel_decoder_get_keyframes(self->dec, &n);
    PyObject *l = int64_list(k, n);
    rx_dec_release(self);
    return l;
}

static PyObject *decoder_index_at_time(DecoderObject *self, PyObject *arg)
{
    double t = PyFloat_AsDouble(arg);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    if (rx_dec_acquire(self) < 0) return NULL;
    int64_t idx = 0;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_decoder_get_index_at_time(self->dec, t, &idx, &err);
    rx_dec_release(self);
    if (r != REEL_OK) return rx_dec_raise(self, r, &err);
    return PyLong_FromLongLong(idx);
}

static PyObject *decoder_save_index(DecoderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "path", NULL };
    PyObject *path = Py_None, *pb = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:save_index", kwlist, &path)) return NULL;
    if (path != Py_None && !PyUnicode_FSConverter(path, &pb)) return NULL;
    if (rx_dec_acquire(self) < 0) {
        Py_XDECREF(pb);
        return NULL;
    }
    reel_error err;
    reel_error_clear(&err);
    const char *p = pb ? PyBytes_AsString(pb) : NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_decoder_save_index(self->dec, p, &err);
    Py_END_ALLOW_THREADS
    rx_dec_release(self);
    Py_XDECREF(pb);
    if (r != REEL_OK) return rx_dec_raise(self, r, &err);
    Py_RETURN_NONE;
}

/* Per-frame metadata lists for resolved indices (lock held). */
int rx_dec_fill_meta(DecoderObject *self, FramesObject *f, const int64_t *idx, Py_ssize_t n, int layout_chw)
{
    int64_t count = 0;
    const reel_frame_entry *t = reel_decoder_get_frame_table(self->dec, &count);
    const reel_video_info *info = reel_decoder_get_info(self->dec);
    /* pts * num / den in this order: the product is exact below 2^53, so the
     * seconds are correctly rounded (as torchcodec's are) */
    const double num = info->time_base_den ? (double)info->time_base_num : 0.0;
    const double den = info->time_base_den ? (double)info->time_base_den : 1.0;
    PyObject *li = PyTuple_New(n), *lp = PyTuple_New(n), *ld = PyTuple_New(n);
    if (!li || !lp || !ld) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k = idx[i] < 0 ? idx[i] + count : idx[i];
        if (k < 0 || k >= count) k = 0; /* cannot happen after a successful decode */
        PyObject *a = PyLong_FromLongLong(k);
        PyObject *b = PyFloat_FromDouble((double)t[k].pts * num / den);
        PyObject *c = PyFloat_FromDouble((double)t[k].duration * num / den);
        if (!a || !b || !c) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_XDECREF(c);
            goto fail;
        }
        PyTuple_SetItem(li, i, a);
        PyTuple_SetItem(lp, i, b);
        PyTuple_SetItem(ld, i, c);
    }
    f->indices = li;
    f->pts = lp;
    f->dur = ld;
    f->layout = PyUnicode_FromString(layout_chw ? "NCHW" : "NHWC");
    return f->layout ? 0 : -1;
fail:
    Py_XDECREF(li);
    Py_XDECREF(lp);
    Py_XDECREF(ld);
    return -1;
}

FramesObject *rx_dec_alloc_frames(DecoderObject *self, Py_ssize_t n)
{
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    int64_t shape[4];
    shape[0] = n;
    const int nc = self->transform.pixels.color == REEL_COLOR_GRAY ? 1 : 3;
    if (self->transform.layout == REEL_LAYOUT_CHW) {
        shape[1] = nc;
        shape[2] = self->out_h;
        shape[3] = self->out_w;
    } else {
        shape[1] = self->out_h;
        shape[2] = self->out_w;
        shape[3] = nc;
    }
    FramesObject *f = frames_alloc(st, self->transform.pixels.dtype, 4, shape);
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
        if (!idx) {
            PyMem_Free(secs);
            return PyErr_NoMemory();
        }
    } else {
        idx = parse_int64_seq(arg, &n, "indices must be a sequence of ints");
        if (!idx) return NULL;
    }
    if (rx_dec_on_gpu(self->dec)) return rx_gpu_dec_frames(self, idx, secs, n);
    FramesObject *f = rx_dec_alloc_frames(self, n);
    if (!f || rx_dec_acquire(self) < 0) {
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
        r = reel_decoder_get_frames_at_times(self->dec, secs, (size_t)n, &self->transform, f->data, f->nbytes, idx,
                                             &stats, &err);
    else
        r = reel_decoder_get_frames(self->dec, idx, (size_t)n, &self->transform, f->data, f->nbytes, &stats, &err);
    Py_END_ALLOW_THREADS
    int meta = 0;
    if (r == REEL_OK) {
        self->stats = stats;
        meta = rx_dec_fill_meta(self, f, idx, n, self->transform.layout == REEL_LAYOUT_CHW);
    }
    rx_dec_release(self);
    PyMem_Free(idx);
    PyMem_Free(secs);
    if (r != REEL_OK) {
        Py_DECREF(f);
        return rx_dec_raise(self, r, &err);
    }
    if (meta < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return (PyObject *)f;
}

static PyObject *decoder_prefetch(DecoderObject *self, PyObject *arg)
{
    Py_ssize_t n = 0;
    int64_t *idx = parse_int64_seq(arg, &n, "indices must be a sequence of ints");
    if (!idx) return NULL;
    if (rx_dec_acquire(self) < 0) {
        PyMem_Free(idx);
        return NULL;
    }
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_decoder_prefetch(self->dec, idx, (size_t)n, &err);
    Py_END_ALLOW_THREADS
    rx_dec_release(self);
    PyMem_Free(idx);
    if (r != REEL_OK) return rx_dec_raise(self, r, &err);
    Py_RETURN_NONE;
}

static PyObject *decoder_get_frames(DecoderObject *self, PyObject *arg)
{
    return decoder_get_common(self, arg, 0);
}
static PyObject *decoder_get_frames_at_times(DecoderObject *self, PyObject *arg)
{
    return decoder_get_common(self, arg, 1);
}

static PyObject *decoder_stats(DecoderObject *self, PyObject *unused)
{
    (void)unused;
    const reel_decode_stats *s = &self->stats;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:d,s:L,s:L,s:L}", "frames_requested",
                         (long long)s->frames_requested, "frames_returned", (long long)s->frames_returned,
                         "frames_decoded", (long long)s->frames_decoded, "frames_skipped", (long long)s->frames_skipped,
                         "packets_read", (long long)s->packets_read, "seeks", (long long)s->seeks, "corrupt_packets",
                         (long long)s->corrupt_packets, "key_restarts", (long long)s->key_restarts, "keys_probed",
                         (long long)s->keys_probed, "thread_fallbacks", (long long)s->thread_fallbacks, "amplification",
                         s->amplification, "gop_contexts", (long long)s->gop_contexts, "frames_nvdec",
                         (long long)s->frames_nvdec, "frames_uploaded", (long long)s->frames_uploaded);
}

PyObject *reduce_forbidden(PyObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *name = rx_type_name(self);
    if (name) PyErr_Format(PyExc_TypeError, "cannot pickle '%U' objects", name);
    Py_XDECREF(name);
    return NULL;
}

static PyMethodDef decoder_methods[] = {
    { "info", (PyCFunction)decoder_info, METH_NOARGS, "info($self)\n--\n\nStream metadata as a dict." },
    { "frame_table", (PyCFunction)decoder_frame_table, METH_NOARGS,
      "frame_table($self)\n--\n\n(pts, duration, pos, key, decode_order): five lists, one entry per frame." },
    { "sample_clips", (PyCFunction)(void (*)(void))rx_dec_sample_clips, METH_VARARGS | METH_KEYWORDS,
      "sample_clips($self, kind, num_clips, frames_per_clip, stride, seconds_between_frames, range_start, range_end, "
      "policy, seconds_between_clip_starts, seed)\n--\n\nThe C sampler's frame indices for this video, clip after "
      "clip." },
    { "sample_video", (PyCFunction)(void (*)(void))rx_dec_sample_video, METH_VARARGS | METH_KEYWORDS,
      "sample_video($self, kind, fps, min_frames, max_frames, frame_factor, num_frames, range_start, range_end)\n--\n\n"
      "The whole-video samplers (fps, count): (indices, {range_first, range_frames, video_fps, sample_fps})." },
    { "set_size", (PyCFunction)decoder_set_size, METH_VARARGS,
      "set_size($self, width, height)\n--\n\nThe output size of later calls." },
    { "remote_stats", (PyCFunction)decoder_remote_stats, METH_VARARGS,
      "remote_stats($self, audio=None)\n--\n\nRequests made for a video at a URL (zeros for a local one), with "
      "those of an audio handle reading it." },
    { "keyframes", (PyCFunction)decoder_keyframes, METH_NOARGS,
      "keyframes($self)\n--\n\nFrame indices of the keyframes." },
    { "index_at_time", (PyCFunction)decoder_index_at_time, METH_O,
      "index_at_time($self, seconds)\n--\n\nThe frame displayed at `seconds`." },
    { "save_index", (PyCFunction)(void (*)(void))decoder_save_index, METH_VARARGS | METH_KEYWORDS,
      "save_index($self, path=None)\n--\n\nWrites the sidecar index (default '<video>.reelidx')." },
    { "prefetch", (PyCFunction)decoder_prefetch, METH_O,
      "prefetch($self, indices)\n--\n\nFetches ahead the bytes that decoding indices needs (URLs)." },
    { "get_frames", (PyCFunction)decoder_get_frames, METH_O,
      "get_frames($self, indices)\n--\n\nFrames at indices, in request order." },
    { "get_frames_at_times", (PyCFunction)decoder_get_frames_at_times, METH_O,
      "get_frames_at_times($self, seconds)\n--\n\nFrames displayed at the given times." },
    { "get_frames_near", (PyCFunction)(void (*)(void))rx_dec_get_frames_near, METH_VARARGS | METH_KEYWORDS,
      "get_frames_near($self, seconds, tolerance_s, on_violation)\n--\n\nThe frames nearest to the given times "
      "(reel_decoder_get_frames_near), with distance_seconds and within_tolerance." },
    { "memory", (PyCFunction)rx_dec_memory, METH_NOARGS,
      "memory($self)\n--\n\nAn estimate of the bytes the decoder holds (reel_decoder_get_memory)." },
    { "stats", (PyCFunction)decoder_stats, METH_NOARGS, "stats($self)\n--\n\nDecode statistics of the last call." },
    { "close", (PyCFunction)decoder_close, METH_NOARGS, "close($self)\n--\n\nCloses the video; idempotent." },
    { "__reduce__", (PyCFunction)reduce_forbidden, METH_NOARGS, NULL },
    { NULL }
};

static PyGetSetDef decoder_getset[] = {
    { "closed", (getter)decoder_get_closed, NULL, "True after close().", NULL },
    { "name", (getter)decoder_get_name, NULL,
      "The path (a URL redacted: no user info or query string), or the name given for memory/file sources.", NULL },
    { "frame_shape", (getter)decoder_get_frame_shape, NULL, "Shape of one output frame.", NULL },
    { "dtype", (getter)decoder_get_dtype, NULL, "Output element type.", NULL },
    { "device", (getter)rx_gpu_dec_device, NULL, "'cpu', or 'cuda:N' for a decoder on a GPU.", NULL },
    { "upload_reason", (getter)rx_gpu_dec_upload_reason, NULL,
      "A GPU decoder's frames decoded on the CPU and uploaded: why (NVDEC not used); None otherwise.", NULL },
    { NULL }
};

static PyMemberDef decoder_members[] = {
    { "__weaklistoffset__", T_PYSSIZET, offsetof(DecoderObject, weakreflist), READONLY, NULL }, { NULL }
};

static PyType_Slot decoder_slots[] = { { Py_tp_doc, (void *)"Low-level decoder; use reel.VideoDecoder." },
                                       { Py_tp_new, (void *)PyType_GenericNew },
                                       { Py_tp_init, (void *)decoder_init },
                                       { Py_tp_dealloc, (void *)decoder_dealloc },
                                       { Py_tp_traverse, (void *)decoder_traverse },
                                       { Py_tp_clear, (void *)decoder_clear },
                                       { Py_tp_methods, decoder_methods },
                                       { Py_tp_getset, decoder_getset },
                                       { Py_tp_members, decoder_members },
                                       { 0, NULL } };

PyType_Spec decoder_spec = {
    .name = "reel._reel.Decoder",
    .basicsize = sizeof(DecoderObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = decoder_slots,
};
