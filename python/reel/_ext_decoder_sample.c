/* _ext_decoder_sample.c: the C sampler over a Decoder's video: Decoder.sample_clips
 * (clips of frame indices, reel_sampler_run) and Decoder.sample_video (the
 * whole-video fps and count samplers, with reel_sampler_describe's numbers). */
#include "_ext_decoder.h"

/* Takes the decoder (rx_dec_acquire) and describes its whole video for the
 * C sampler: frame table, time base, average fps (valid while it is held). */
static int acquire_video(DecoderObject *self, reel_sampler_video *v)
{
    if (rx_dec_acquire(self) < 0) return -1;
    memset(v, 0, sizeof *v);
    const reel_video_info *info = reel_decoder_get_info(self->dec);
    v->table = reel_decoder_get_frame_table(self->dec, &v->num_frames);
    v->time_base_num = info->time_base_num;
    v->time_base_den = info->time_base_den;
    v->average_fps = info->avg_fps_den > 0 ? (double)info->avg_fps_num / info->avg_fps_den : 0;
    v->segment_end = -1;
    v->name = rx_dec_name(self);
    return 0;
}

/* The C sampler (reel_sampler_run) over this video: the flat frame indices
 * of the clips, clip after clip. */
PyObject *rx_dec_sample_clips(DecoderObject *self, PyObject *args, PyObject *kwds)
{
    static char *kw[] = { "kind",
                          "num_clips",
                          "frames_per_clip",
                          "stride",
                          "seconds_between_frames",
                          "range_start",
                          "range_end",
                          "policy",
                          "seconds_between_clip_starts",
                          "seed",
                          NULL };
    reel_sampler_settings s;
    reel_sampler_default_settings(&s);
    int kind = 0, policy = 0;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iiiidddidK:sample_clips", kw, &kind, &s.clips_per_video,
                                     &s.frames_per_clip, &s.frame_stride, &s.seconds_between_frames, &s.range_start,
                                     &s.range_end, &policy, &s.seconds_between_clip_starts, &seed))
        return NULL;
    s.kind = (reel_sampler_kind)kind;
    s.policy = (reel_clip_policy)policy;
    if (s.clips_per_video < 1 || s.frames_per_clip < 1 || s.clips_per_video > 4096 || s.frames_per_clip > 65536) {
        PyErr_SetString(PyExc_ValueError, "sample_clips: num_clips and frames_per_clip must be in range");
        return NULL;
    }
    reel_sampler_video v;
    if (acquire_video(self, &v) < 0) return NULL;
    size_t n = (size_t)s.clips_per_video * (size_t)s.frames_per_clip;
    int64_t *out = PyMem_Malloc(n * sizeof *out);
    if (!out) {
        rx_dec_release(self);
        return PyErr_NoMemory();
    }
    reel_error err;
    reel_error_clear(&err);
    int st = reel_sampler_run(&s, &v, (uint64_t)seed, 0, 0, out, n, &err);
    rx_dec_release(self);
    PyObject *r = NULL;
    if (st != REEL_OK) {
        /* the caller's arguments do not fit this video: a ValueError, as torchcodec */
        PyErr_SetString(PyExc_ValueError, err.message);
    } else {
        PyObject *l = int64_list(out, (int64_t)n);
        r = l ? PyList_AsTuple(l) : NULL;
        Py_XDECREF(l);
    }
    PyMem_Free(out);
    return r;
}

/* The whole-video samplers (REEL_SAMPLER_FPS / _COUNT): the indices and
 * what reel_sampler_describe says of them, as (indices, info dict). */
PyObject *rx_dec_sample_video(DecoderObject *self, PyObject *args, PyObject *kwds)
{
    static char *kw[] = { "kind",       "fps",         "min_frames", "max_frames", "frame_factor",
                          "num_frames", "range_start", "range_end",  NULL };
    reel_sampler_settings s;
    reel_sampler_default_settings(&s);
    int kind = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "idiiiidd:sample_video", kw, &kind, &s.fps, &s.min_frames,
                                     &s.max_frames, &s.frame_factor, &s.frames_per_clip, &s.range_start, &s.range_end))
        return NULL;
    if (kind != REEL_SAMPLER_FPS && kind != REEL_SAMPLER_COUNT) {
        PyErr_SetString(PyExc_ValueError, "sample_video: kind must be the fps or the count sampler");
        return NULL;
    }
    s.kind = (reel_sampler_kind)kind;
    reel_sampler_video v;
    if (acquire_video(self, &v) < 0) return NULL;
    reel_error err;
    reel_error_clear(&err);
    reel_sampler_result res;
    int64_t *out = NULL;
    int st = reel_sampler_describe(&s, &v, &res, &err);
    if (st == REEL_OK) {
        out = PyMem_Malloc((size_t)res.num_frames * sizeof *out + 1);
        if (!out) {
            rx_dec_release(self);
            return PyErr_NoMemory();
        }
        st = reel_sampler_run(&s, &v, 0, 0, 0, out, (size_t)res.num_frames, &err);
    }
    rx_dec_release(self);
    if (st != REEL_OK) {
        PyMem_Free(out);
        PyErr_SetString(PyExc_ValueError, err.message); /* as qwen-vl-utils raises */
        return NULL;
    }
    PyObject *idx = int64_list(out, res.num_frames);
    PyMem_Free(out);
    if (!idx) return NULL;
    return Py_BuildValue("(N{s:L,s:L,s:d,s:d})", idx, "range_first", (long long)res.range_first, "range_frames",
                         (long long)res.range_frames, "video_fps", res.video_fps, "sample_fps", res.sample_fps);
}
