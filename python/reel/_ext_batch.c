/* _ext_batch.c: a loader batch as Python objects: its frames (and audio) as
 * zero-copy views of the ring (one Frames, or for variable batches a list
 * of one Frames per clip), owned by the batch's handle so the buffer goes
 * back when the last view is freed; labels, clip records and batch
 * metadata. */
#include "_ext.h"

static const char *batch_layout_name(int layout)
{
    switch (layout) {
    case REEL_BATCH_BCTHW: return "BCTHW";
    case REEL_BATCH_BTHWC: return "BTHWC";
    default: return "BTCHW";
    }
}

static PyObject *clip_info_tuple(const reel_clip_info *c)
{
    const int64_t frames_per_clip = c->num_frames;
    PyObject *fi = PyList_New((Py_ssize_t)frames_per_clip), *pts = PyList_New((Py_ssize_t)frames_per_clip);
    if (!fi || !pts) goto fail;
    for (int64_t t = 0; t < frames_per_clip; t++) {
        PyObject *a = PyLong_FromLongLong(c->frame_indices ? c->frame_indices[t] : -1);
        PyObject *b = PyLong_FromLongLong(c->pts ? c->pts[t] : 0);
        if (!a || !b) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            goto fail;
        }
        PyList_SetItem(fi, (Py_ssize_t)t, a);
        PyList_SetItem(pts, (Py_ssize_t)t, b);
    }
    PyObject *path = c->path ? PyUnicode_DecodeFSDefault(c->path) : Py_NewRef(Py_None);
    if (!path) goto fail;
    return Py_BuildValue("{s:N,s:L,s:L,s:L,s:L,s:i,s:i,s:O,s:O,s:(iiii),s:N,s:N,s:(ii),s:i,s:(ii),s:L,s:L,s:(LL),s:L}",
                         "path", path, "label", (long long)c->label, "sample", (long long)c->sample, "requested",
                         (long long)c->requested, "position", (long long)c->position, "clip", (int)c->clip, "attempt",
                         (int)c->attempt, "padded", c->padded ? Py_True : Py_False, "flipped",
                         c->flipped ? Py_True : Py_False, "crop", (int)c->crop_x, (int)c->crop_y, (int)c->crop_w,
                         (int)c->crop_h, "frame_indices", fi, "pts", pts, "time_base", (int)c->time_base_num,
                         (int)c->time_base_den, "num_frames", (int)c->num_frames, "size", (int)c->height, (int)c->width,
                         "audio_first_sample", (long long)c->audio_first_sample, "audio_missing",
                         (long long)c->audio_missing, "audio_missing_span", (long long)c->audio_missing_lo,
                         (long long)c->audio_missing_hi, "audio_corrupt_packets", (long long)c->audio_corrupt_packets);
fail:
    Py_XDECREF(fi);
    Py_XDECREF(pts);
    return NULL;
}

/* The clip views of a variable batch: [T, C, H, W] (or the layout's order)
 * each, viewing the clip's own buffer. */
static PyObject *clip_views(reel_state *st, PyObject *owner, const reel_batch *b)
{
    static const char *const names[] = { "TCHW", "CTHW", "THWC" };
    PyObject *list = PyList_New((Py_ssize_t)b->num_clips);
    for (int64_t i = 0; list && i < b->num_clips; i++) {
        const reel_clip_info *c = &b->clips[i];
        /* the channels: the batch's channel axis (1 gray, 3 RGB) */
        const int64_t nc = b->shape[b->layout == REEL_BATCH_BCTHW ? 1 : b->layout == REEL_BATCH_BTHWC ? 4 : 2];
        int64_t shape[4];
        if (b->layout == REEL_BATCH_BCTHW) {
            shape[0] = nc, shape[1] = c->num_frames, shape[2] = c->height, shape[3] = c->width;
        } else if (b->layout == REEL_BATCH_BTHWC) {
            shape[0] = c->num_frames, shape[1] = c->height, shape[2] = c->width, shape[3] = nc;
        } else {
            shape[0] = c->num_frames, shape[1] = nc, shape[2] = c->height, shape[3] = c->width;
        }
        FramesObject *f = c->device_buffer ? rx_gpu_clip_frames(st, owner, b, c, shape) /* on a GPU */
                                           : frames_view(st, owner, c->data, b->dtype, 4, shape);
        if (f && !(f->layout = PyUnicode_FromString(names[b->layout == REEL_BATCH_BCTHW   ? 1
                                                          : b->layout == REEL_BATCH_BTHWC ? 2
                                                                                          : 0]))) {
            Py_CLEAR(f);
        }
        if (!f) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, (Py_ssize_t)i, (PyObject *)f);
    }
    return list;
}

/* The batch's audio as (audio, lengths, valid): one Frames [B, C, S_max]
 * viewing the ring (zero-padded), or a list of [C, S_i] views for a
 * variable batch without pad; int64 [B] and [B, 2]. None without audio. */
static PyObject *batch_audio(reel_state *st, PyObject *owner, const reel_batch *b)
{
    if (b->audio_channels < 1) return Py_NewRef(Py_None);
    const int64_t B = b->num_clips;
    PyObject *audio = NULL, *result = NULL;
    int64_t lshape[1] = { B }, vshape[2] = { B, 2 };
    FramesObject *lengths = frames_alloc(st, DT_INT64, 1, lshape), *valid = frames_alloc(st, DT_INT64, 2, vshape);
    if (!lengths || !valid) goto done;
    for (int64_t i = 0; i < B; i++) {
        const reel_clip_info *c = &b->clips[i];
        ((int64_t *)lengths->data)[i] = c->audio_samples;
        ((int64_t *)valid->data)[2 * i] = c->audio_valid_lo;
        ((int64_t *)valid->data)[2 * i + 1] = c->audio_valid_hi;
    }
    if (b->audio || B == 0) {
        int64_t shape[3] = { B, b->audio_channels, b->audio_samples };
        audio = (PyObject *)(b->audio ? frames_view(st, owner, b->audio, DT_FLOAT32, 3, shape)
                                      : frames_alloc(st, DT_FLOAT32, 3, shape));
    } else if (b->variable) {
        audio = PyList_New((Py_ssize_t)B);
        for (int64_t i = 0; audio && i < B; i++) {
            const reel_clip_info *c = &b->clips[i];
            int64_t shape[2] = { b->audio_channels, c->audio_samples };
            PyObject *v = (PyObject *)frames_view(st, owner, (void *)c->audio, DT_FLOAT32, 2, shape);
            if (!v) {
                Py_CLEAR(audio);
                break;
            }
            PyList_SetItem(audio, (Py_ssize_t)i, v);
        }
    } else {
        PyErr_SetString(PyExc_MemoryError, "reel.Loader: out of memory for the batch's audio");
    }
    if (audio) result = PyTuple_Pack(3, audio, (PyObject *)lengths, (PyObject *)valid);
done:
    Py_XDECREF(audio);
    Py_XDECREF(lengths);
    Py_XDECREF(valid);
    return result;
}

/* (frames, labels, clips, meta) of a batch; `owner` (its handle) is
 * referenced by every view. want_pad: the loader pads variable batches. */
PyObject *rx_batch_result(reel_state *st, PyObject *owner, const reel_batch *b, int want_pad)
{
    PyObject *result = NULL, *clips = NULL, *meta = NULL, *frames_list = NULL;
    FramesObject *frames = NULL, *labels = NULL;
    int ndim = b->ndim;
    int64_t expect = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (b->strides[i] != expect && b->shape[i] > 1) {
            ndim = -1;
            break;
        }
        expect *= b->shape[i];
    }
    if (b->variable && b->data == NULL && b->num_clips > 0 && want_pad) {
        PyErr_SetString(PyExc_MemoryError, "reel.Loader: out of memory for the padded batch");
        goto done;
    }
    if (ndim < 1 || ndim > REEL_PY_MAXDIM || b->dtype < 0 || b->dtype > REEL_DTYPE_UINT16) {
        PyErr_SetString(PyExc_SystemError, "reel: the loader returned a batch that is not C-contiguous");
        goto done;
    }
    if (b->variable && !want_pad) {
        if (!(frames_list = clip_views(st, owner, b))) goto done;
    } else {
        if (b->device_buffer) /* on a GPU: Frames over the batch's device buffer */
            frames = rx_gpu_batch_frames(st, owner, b, ndim);
        else
            frames = b->data || b->num_clips ? frames_view(st, owner, b->data, b->dtype, ndim, b->shape)
                                             : frames_alloc(st, b->dtype, ndim, b->shape);
        if (!frames) goto done;
        if (!(frames->layout = PyUnicode_FromString(batch_layout_name(b->layout)))) goto done;
    }
    int64_t nclips = b->num_clips;
    labels = frames_alloc(st, DT_INT64, 1, &nclips);
    if (!labels) goto done;
    if (nclips) memcpy(labels->data, b->labels, (size_t)nclips * sizeof(int64_t));
    clips = PyList_New((Py_ssize_t)nclips);
    if (!clips) goto done;
    for (int64_t i = 0; i < nclips; i++) {
        PyObject *c = clip_info_tuple(&b->clips[i]);
        if (!c) goto done;
        PyList_SetItem(clips, (Py_ssize_t)i, c);
    }
    PyObject *audio = batch_audio(st, owner, b);
    if (!audio) goto done;
    meta = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:N,s:i}", "epoch", (long long)b->epoch, "index",
                         (long long)b->index, "position", (long long)b->position, "num_samples",
                         (long long)b->num_samples, "num_failed", (long long)b->num_failed, "samples_seen",
                         (long long)b->samples_seen, "audio", audio, "audio_sample_rate", b->audio_sample_rate);
    if (!meta) goto done;
    result = PyTuple_Pack(4, frames_list ? frames_list : (PyObject *)frames, (PyObject *)labels, clips, meta);
done:
    Py_XDECREF(frames_list);
    Py_XDECREF(frames);
    Py_XDECREF(labels);
    Py_XDECREF(clips);
    Py_XDECREF(meta);
    return result;
}
