/* _ext_gpu.c: Frames on a GPU (device="cuda"): their device buffer, DLPack
 * as kDLCUDA with the consumer's stream made to wait, the copy to the host
 * (.cpu()), and a GPU decoder's get_frames calls, device and upload reason. */
#include "_ext.h"
#include "_ext_decoder.h"

FramesObject *rx_gpu_frames(reel_state *st, reel_device_buffer *b, int dtype, int ndim, const int64_t *shape)
{
    FramesObject *f = (FramesObject *)rx_type_alloc(st->FramesType);
    if (!f) {
        reel_device_buffer_free(&b);
        return NULL;
    }
    f->dev = b; /* freed with f */
    f->gpu = 1;
    f->gpu_index = atoi(reel_device_buffer_get_device(b) + 5); /* "cuda:N" */
    f->data = (char *)(uintptr_t)reel_device_buffer_get_address(b);
    f->dtype = dtype;
    if (rx_frames_set_shape(f, ndim, shape) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return f;
}

FramesObject *rx_gpu_batch_frames(reel_state *st, PyObject *owner, const reel_batch *b, int ndim)
{
    FramesObject *f = (FramesObject *)rx_type_alloc(st->FramesType);
    if (!f) return NULL;
    f->dev = b->device_buffer; /* the loader's: the batch handle (base) keeps it until released */
    f->dev_borrowed = 1;
    f->base = Py_NewRef(owner);
    f->gpu = 1;
    f->gpu_index = atoi(b->device + 5); /* "cuda:N" */
    f->data = (char *)b->data;
    f->dtype = b->dtype;
    if (rx_frames_set_shape(f, ndim, b->shape) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return f;
}

FramesObject *rx_gpu_clip_frames(reel_state *st, PyObject *owner, const reel_batch *b, const reel_clip_info *c,
                                 const int64_t *shape)
{
    FramesObject *f = (FramesObject *)rx_type_alloc(st->FramesType);
    if (!f) return NULL;
    f->dev = c->device_buffer; /* the loader's: the batch handle (base) keeps it until released */
    f->dev_borrowed = 1;
    f->base = Py_NewRef(owner);
    f->gpu = 1;
    f->gpu_index = atoi(b->device + 5); /* "cuda:N" */
    f->data = (char *)c->data;
    f->dtype = b->dtype;
    if (rx_frames_set_shape(f, 4, shape) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return f;
}

PyObject *rx_gpu_refuse(FramesObject *f, const char *what)
{
    PyErr_Format(PyExc_TypeError,
                 "reel.Frames on cuda:%d live in device memory: %s needs CPU frames (.cpu() copies them to the host; "
                 "torch.from_dlpack takes them as they are)",
                 f->gpu_index, what);
    return NULL;
}

static FramesObject *root_of(FramesObject *f)
{
    return f->dev ? f : (FramesObject *)f->base;
}

int rx_gpu_wait(FramesObject *f, PyObject *stream)
{
    long long s = 1; /* None: the legacy default stream */
    if (stream != Py_None) {
        s = PyLong_AsLongLong(stream);
        if (s == -1 && PyErr_Occurred()) return -1;
    }
    if (s == -1) return 0; /* the consumer synchronises itself */
    if (s == 0) {
        PyErr_SetString(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous for CUDA (DLPack): use 1 for the legacy "
                                          "default stream, 2 for the per-thread one, or a stream's handle");
        return -1;
    }
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_device_buffer_wait(root_of(f)->dev, (uintptr_t)s, &err);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        raise_err(state_of((PyObject *)f), r, &err, NULL);
        return -1;
    }
    return 0;
}

PyObject *rx_gpu_cpu(FramesObject *f)
{
    if (!f->gpu) return Py_NewRef((PyObject *)f);
    reel_state *st = state_of((PyObject *)f);
    if (!st) return NULL;
    FramesObject *root = root_of(f);
    FramesObject *c = frames_alloc(st, f->dtype, f->ndim, f->shape);
    if (!c) return NULL;
    reel_error err;
    reel_error_clear(&err);
    int r;
    size_t offset = (size_t)(f->data - root->data);
    Py_BEGIN_ALLOW_THREADS
    r = reel_device_buffer_download(root->dev, offset, c->data, f->nbytes, &err);
    Py_END_ALLOW_THREADS
    if (r != REEL_OK) {
        Py_DECREF(c);
        return raise_err(st, r, &err, NULL);
    }
    c->indices = Py_XNewRef(f->indices);
    c->pts = Py_XNewRef(f->pts);
    c->dur = Py_XNewRef(f->dur);
    c->layout = Py_XNewRef(f->layout);
    c->dist = Py_XNewRef(f->dist);
    c->within = Py_XNewRef(f->within);
    return (PyObject *)c;
}

PyObject *rx_gpu_dec_frames(DecoderObject *self, int64_t *idx, double *secs, Py_ssize_t n)
{
    reel_state *st = state_of((PyObject *)self);
    if (!st || rx_dec_acquire(self) < 0) {
        PyMem_Free(idx);
        PyMem_Free(secs);
        return NULL;
    }
    reel_error err;
    reel_error_clear(&err);
    reel_decode_stats stats;
    memset(&stats, 0, sizeof stats);
    reel_device_buffer *b = NULL;
    int r = REEL_OK;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; secs && i < n && r == REEL_OK; i++)
        r = reel_decoder_get_index_at_time(self->dec, secs[i], &idx[i], &err);
    if (r == REEL_OK) r = reel_decoder_get_frames_device(self->dec, idx, (size_t)n, &self->transform, &b, &stats, &err);
    Py_END_ALLOW_THREADS
    PyObject *out = NULL;
    if (r != REEL_OK) {
        out = rx_dec_raise(self, r, &err);
    } else {
        const int chw = self->transform.layout == REEL_LAYOUT_CHW;
        const int nc = self->transform.pixels.color == REEL_COLOR_GRAY ? 1 : 3;
        int64_t shape[4] = { n, chw ? nc : self->out_h, chw ? self->out_h : self->out_w, chw ? self->out_w : nc };
        FramesObject *f = rx_gpu_frames(st, b, self->transform.pixels.dtype, 4, shape);
        self->stats = stats;
        if (f && rx_dec_fill_meta(self, f, idx, n, chw) < 0) Py_CLEAR(f);
        out = (PyObject *)f;
    }
    rx_dec_release(self);
    PyMem_Free(idx);
    PyMem_Free(secs);
    return out;
}

FramesObject *rx_gpu_new_frames(reel_state *st, const char *device, size_t bytes, int dtype, int ndim,
                                const int64_t *shape, DecoderObject *dec)
{
    reel_error err;
    reel_error_clear(&err);
    reel_device_buffer *b = NULL;
    int r = reel_device_buffer_alloc(device, bytes, &b, &err);
    if (r != REEL_OK) return (FramesObject *)rx_dec_raise(dec, r, &err);
    return rx_gpu_frames(st, b, dtype, ndim, shape); /* frees b on failure */
}

FramesObject *rx_gpu_dec_alloc_frames(DecoderObject *self, Py_ssize_t n)
{
    reel_state *st = state_of((PyObject *)self);
    if (!st) return NULL;
    const int chw = self->transform.layout == REEL_LAYOUT_CHW;
    const int nc = self->transform.pixels.color == REEL_COLOR_GRAY ? 1 : 3;
    int64_t shape[4] = { n, chw ? nc : self->out_h, chw ? self->out_h : self->out_w, chw ? self->out_w : nc };
    return rx_gpu_new_frames(st, reel_decoder_get_device(self->dec), self->frame_bytes * (size_t)(n ? n : 1),
                             self->transform.pixels.dtype, 4, shape, self);
}

PyObject *rx_gpu_dec_device(DecoderObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->dec ? reel_decoder_get_device(self->dec) : "cpu");
}

PyObject *rx_gpu_dec_upload_reason(DecoderObject *self, void *c)
{
    (void)c;
    const char *why = self->dec ? reel_decoder_get_upload_reason(self->dec) : NULL;
    if (!why || !*why) Py_RETURN_NONE;
    return PyUnicode_FromString(why);
}
