/* _ext_store.c: the packed store in reel._reel: pack() (GIL released while
 * building, a Python progress callable called with the GIL, Ctrl-C stops a
 * build that then resumes), pack_merge(), store_verify() and store_info(). */
#include "_ext.h"

#include "reel/store.h"

typedef struct pack_call {
    PyObject *progress; /* callable or NULL */
    PyObject *error;    /* an exception raised by the callable or a signal */
    int64_t next_signal_check;
} pack_call;

static void pack_progress(void *opaque, const reel_pack_progress *p)
{
    pack_call *c = opaque;
    if (!c->progress || c->error) return;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *d = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:d}", "videos_total", (long long)p->videos_total, "videos_done",
                                (long long)p->videos_done, "videos_failed", (long long)p->videos_failed,
                                "videos_resumed", (long long)p->videos_resumed, "bytes_written",
                                (long long)p->bytes_written, "elapsed", p->elapsed);
    PyObject *r = d ? PyObject_CallFunctionObjArgs(c->progress, d, NULL) : NULL;
    Py_XDECREF(d);
    if (!r) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (v && tb) PyException_SetTraceback(v, tb);
        c->error = v ? v : Py_NewRef(Py_None);
        Py_XDECREF(t);
        Py_XDECREF(tb);
    }
    Py_XDECREF(r);
    PyGILState_Release(g);
}

/* Polled between videos: a pending signal (Ctrl-C) or a failed callable stops the build. */
static int pack_interrupt(void *opaque)
{
    pack_call *c = opaque;
    if (c->error) return 1;
    int64_t now = rx_clock_ns();
    if (now < c->next_signal_check) return 0;
    c->next_signal_check = now + 100000000;
    PyGILState_STATE g = PyGILState_Ensure();
    if (PyErr_CheckSignals() < 0) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        c->error = v ? v : Py_NewRef(Py_None);
        Py_XDECREF(t);
        Py_XDECREF(tb);
    }
    PyGILState_Release(g);
    return c->error != NULL;
}

static int format_code(const char *f)
{
    if (!strcmp(f, "jpeg")) return REEL_STORE_FORMAT_JPEG;
    if (!strcmp(f, "raw")) return REEL_STORE_FORMAT_RAW;
    if (!strcmp(f, "h264")) return REEL_STORE_FORMAT_H264;
    return -1;
}

/* reel_pack_settings.sampler from a dict named as its fields (kind, fps,
 * min_frames, max_frames, frames_per_clip, frame_factor); those left out keep
 * reel_pack_default_settings' values (kind REEL_SAMPLER_NONE). 0 or -1. */
static int sampler_from_dict(PyObject *d, reel_sampler_settings *s)
{
    static char *kw[] = { "kind", "fps", "min_frames", "max_frames", "frames_per_clip", "frame_factor", NULL };
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "pack: sampler must be a dict of reel_sampler_settings fields or None");
        return -1;
    }
    PyObject *none = PyTuple_New(0);
    if (!none) return -1;
    int kind = (int)s->kind;
    int ok = PyArg_ParseTupleAndKeywords(none, d, "|$idiiii:pack sampler", kw, &kind, &s->fps, &s->min_frames,
                                         &s->max_frames, &s->frames_per_clip, &s->frame_factor);
    Py_DECREF(none);
    s->kind = (reel_sampler_kind)kind;
    return ok ? 0 : -1;
}

/* reel_pack_settings.audio from a dict {sample_rate, channels,
 * stream_index} (reel_audio_settings; those left out keep its defaults:
 * each video's own rate and channels, the best stream). 0 or -1. */
static int audio_from_dict(PyObject *d, reel_audio_settings *a)
{
    static char *kw[] = { "sample_rate", "channels", "stream_index", NULL };
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "pack: audio must be a dict of reel_audio_settings fields or None");
        return -1;
    }
    PyObject *none = PyTuple_New(0);
    if (!none) return -1;
    int ok =
        PyArg_ParseTupleAndKeywords(none, d, "|$iii:pack audio", kw, &a->sample_rate, &a->channels, &a->stream_index);
    Py_DECREF(none);
    return ok ? 0 : -1;
}

/* pack(source, out_dir, *, short_side=256, width=0, height=0, fps=0.0, every=1,
 *      format="jpeg", quality=90, zstd_level=0, gop=8, crf=18,
 *      shard_size=1<<30, threads=0, part_index=0, part_count=1, progress=None,
 *      sampler=None, color=0, dtype=0, audio=None, corrupt_policy=0) -> dict; sampler: see
 *      sampler_from_dict; color, dtype, corrupt_policy: reel_color, reel_dtype and
 *      reel_corrupt_policy codes; audio: audio_from_dict */
static PyObject *mod_pack(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = { "source",     "out_dir", "short_side", "width",          "height",   "fps",
                              "every",      "format",  "quality",    "zstd_level",     "gop",      "crf",
                              "shard_size", "threads", "part_index", "part_count",     "progress", "sampler",
                              "color",      "dtype",   "audio",      "corrupt_policy", NULL };
    reel_state *st = PyModule_GetState(module);
    PyObject *src_obj, *out_obj, *progress = Py_None, *sampler = Py_None, *audio = Py_None, *sb = NULL, *ob = NULL;
    const char *format = "jpeg";
    long long shard_size = (long long)1 << 30;
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    int color = (int)s.color, dtype = (int)s.dtype, corrupt = (int)s.corrupt_policy;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$iiidisiiiiLiiiOOiiOi:pack", kwlist, &src_obj, &out_obj,
                                     &s.short_side, &s.width, &s.height, &s.fps, &s.every, &format, &s.quality,
                                     &s.zstd_level, &s.gop, &s.crf, &shard_size, &s.threads, &s.part_index,
                                     &s.part_count, &progress, &sampler, &color, &dtype, &audio, &corrupt))
        return NULL;
    s.corrupt_policy = (reel_corrupt_policy)corrupt; /* reel_pack judges it */
    s.color = (reel_color)color;                     /* reel_pack judges both */
    s.dtype = (reel_dtype)dtype;
    if (sampler != Py_None && sampler_from_dict(sampler, &s.sampler) < 0) return NULL;
    reel_audio_settings as;
    reel_audio_default_settings(&as);
    if (audio != Py_None) {
        if (audio_from_dict(audio, &as) < 0) return NULL;
        s.audio = &as;
    }
    int fc = format_code(format);
    if (fc < 0) {
        PyErr_Format(PyExc_ValueError, "format=%s: expected 'jpeg', 'raw' or 'h264'", format);
        return NULL;
    }
    if (progress != Py_None && !PyCallable_Check(progress)) {
        PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
        return NULL;
    }
    s.format = (reel_store_format)fc;
    s.shard_size = shard_size;
    if (!PyUnicode_FSConverter(src_obj, &sb)) return NULL;
    if (!PyUnicode_FSConverter(out_obj, &ob)) {
        Py_DECREF(sb);
        return NULL;
    }
    pack_call call = { progress != Py_None ? progress : NULL, NULL, 0 };
    s.progress = pack_progress;
    s.progress_opaque = &call;
    s.interrupt = pack_interrupt;
    s.interrupt_opaque = &call;
    reel_pack_report rep;
    memset(&rep, 0, sizeof rep);
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_pack(PyBytes_AsString(sb), PyBytes_AsString(ob), &s, &rep, &err);
    Py_END_ALLOW_THREADS
    PyObject *res = NULL;
    if (call.error && call.error != Py_None) {
        PyErr_SetObject((PyObject *)Py_TYPE(call.error), call.error);
    } else if (r != REEL_OK) {
        raise_err(st, r, &err, PyBytes_AsString(ob));
    } else {
        res = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:d,s:O}", "videos", (long long)rep.videos, "packed",
                            (long long)rep.packed, "failed", (long long)rep.failed, "resumed", (long long)rep.resumed,
                            "frames", (long long)rep.frames, "bytes", (long long)rep.bytes, "seconds", rep.seconds,
                            "merged", rep.merged ? Py_True : Py_False);
    }
    Py_XDECREF(call.error);
    Py_DECREF(sb);
    Py_DECREF(ob);
    return res;
}

static PyObject *mod_pack_merge(PyObject *module, PyObject *arg)
{
    reel_state *st = PyModule_GetState(module);
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(arg, &b)) return NULL;
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_pack_merge(PyBytes_AsString(b), &err);
    Py_END_ALLOW_THREADS
    PyObject *res = r == REEL_OK ? Py_NewRef(Py_None) : raise_err(st, r, &err, PyBytes_AsString(b));
    Py_DECREF(b);
    return res;
}

static PyObject *mod_store_verify(PyObject *module, PyObject *arg)
{
    reel_state *st = PyModule_GetState(module);
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(arg, &b)) return NULL;
    reel_store_verify_report rep;
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_store_verify(PyBytes_AsString(b), &rep, &err);
    Py_END_ALLOW_THREADS
    PyObject *res = NULL;
    if (r != REEL_OK && r != REEL_E_CORRUPT)
        res = raise_err(st, r, &err, PyBytes_AsString(b));
    else
        res = Py_BuildValue("{s:O,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:s}", "ok", r == REEL_OK ? Py_True : Py_False,
                            "records", (long long)rep.records, "frames", (long long)rep.frames, "bytes",
                            (long long)rep.bytes, "bad", (long long)rep.bad, "failed_to_pack",
                            (long long)rep.failed_to_pack, "shards", (long long)rep.shards, "bad_shards",
                            (long long)rep.bad_shards, "bytes_past_records", (long long)rep.bytes_past_records,
                            "first_problem", rep.first_problem);
    Py_DECREF(b);
    return res;
}

/* Opens the store at the path `arg` (str or os.PathLike); NULL with the
 * Python error set (naming the path and the cause) when it cannot. */
static reel_store *open_store_arg(PyObject *module, PyObject *arg)
{
    reel_state *st = PyModule_GetState(module);
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(arg, &b)) return NULL;
    reel_store *s = NULL;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_store_open(&s, PyBytes_AsString(b), &err);
    if (r != REEL_OK) raise_err(st, r, &err, PyBytes_AsString(b));
    Py_DECREF(b);
    return r == REEL_OK ? s : NULL;
}

static PyObject *mod_store_info(PyObject *module, PyObject *arg)
{
    reel_store *s = open_store_arg(module, arg);
    if (!s) return NULL;
    reel_store_info i;
    reel_store_get_info(s, &i, NULL);
    static const char *const fmts[] = { "", "jpeg", "raw", "h264" };
    PyObject *classes = PyList_New(0);
    reel_error err;
    reel_error_clear(&err);
    for (int64_t k = 0; classes && k < i.num_classes; k++) {
        const char *name = NULL;
        int r = reel_store_get_class_name(s, k, &name, &err);
        PyObject *n =
            r == REEL_OK ? PyUnicode_DecodeFSDefault(name) : raise_err(PyModule_GetState(module), r, &err, NULL);
        if (!n || PyList_Append(classes, n) < 0) Py_CLEAR(classes);
        Py_XDECREF(n);
    }
    PyObject *sampler = Py_None; /* reel_store_info.sampler: what the store records of it */
    Py_INCREF(sampler);
    if (classes && i.sampler.kind == REEL_SAMPLER_FPS) {
        Py_DECREF(sampler);
        sampler = Py_BuildValue("{s:s,s:d,s:i,s:i,s:i}", "kind", "fps", "fps", i.sampler.fps, "min_frames",
                                i.sampler.min_frames, "max_frames", i.sampler.max_frames, "frame_factor",
                                i.sampler.frame_factor);
    } else if (classes && i.sampler.kind == REEL_SAMPLER_COUNT) {
        Py_DECREF(sampler);
        sampler = Py_BuildValue("{s:s,s:i,s:i}", "kind", "count", "frames_per_clip", i.sampler.frames_per_clip,
                                "frame_factor", i.sampler.frame_factor);
    }
    if (!sampler) Py_CLEAR(classes);
    PyObject *audio = Py_None; /* reel_store_info.audio*: the settings it was packed with, or None */
    Py_INCREF(audio);
    if (classes && i.audio) {
        Py_DECREF(audio);
        audio = Py_BuildValue("{s:i,s:i,s:i}", "sample_rate", i.audio_sample_rate, "channels", i.audio_channels,
                              "stream_index", i.audio_stream_index);
        if (!audio) Py_CLEAR(classes);
    }
    PyObject *res =
        classes
            ? Py_BuildValue("{s:s,s:i,s:L,s:L,s:L,s:L,s:i,s:i,s:i,s:i,s:i,s:i,s:d,s:i,s:O,s:s,s:s,s:O,s:N}", "format",
                            fmts[i.format >= 1 && i.format <= 3 ? i.format : 0], "version", i.version, "records",
                            (long long)i.num_records, "frames", (long long)i.num_frames, "failed",
                            (long long)i.num_failed, "bytes", (long long)i.bytes, "shards", i.num_shards, "short_side",
                            i.short_side, "width", i.width, "height", i.height, "quality", i.quality, "gop", i.gop,
                            "fps", i.fps, "every", i.every, "sampler", sampler, "color",
                            i.color == REEL_COLOR_GRAY ? "gray" : "rgb", "dtype",
                            i.dtype == REEL_DTYPE_UINT16 ? "uint16" : "uint8", "audio", audio, "class_names", classes)
            : NULL;
    Py_XDECREF(sampler);
    Py_XDECREF(audio);
    reel_store_close(&s);
    return res;
}

/* One dict per record: where it came from, whether it packed (and why not),
 * and where its bytes lie: {'path', 'label', 'status', 'reason', 'frames',
 * 'shard', 'offset', 'length'}, and in a store with audio 'audio': {'status',
 * 'sample_rate', 'channels', 'first_sample', 'samples', 'valid', 'missing', 'missing_span',
 * 'corrupt_packets'}. */
static PyObject *mod_store_records(PyObject *module, PyObject *arg)
{
    reel_state *st = PyModule_GetState(module);
    reel_error err;
    reel_error_clear(&err);
    reel_store *s = open_store_arg(module, arg);
    if (!s) return NULL;
    reel_store_info info;
    reel_store_get_info(s, &info, NULL);
    PyObject *list = PyList_New(0);
    for (int64_t k = 0; list && k < info.num_records; k++) {
        reel_store_record rec;
        if (reel_store_get_record(s, k, &rec, &err) != REEL_OK) {
            Py_CLEAR(list);
            raise_err(st, REEL_E_CORRUPT, &err, NULL);
            break;
        }
        PyObject *d = Py_BuildValue(
            "{s:N,s:L,s:i,s:N,s:L,s:N,s:L,s:L,s:i,s:i}", "path", PyUnicode_DecodeFSDefault(rec.source_path), "label",
            (long long)rec.label, "status", rec.status, "reason",
            PyUnicode_DecodeUTF8(rec.reason ? rec.reason : "", rec.reason ? (Py_ssize_t)strlen(rec.reason) : 0,
                                 "replace"),
            "frames", (long long)rec.num_frames, "shard", PyUnicode_DecodeFSDefault(rec.shard ? rec.shard : ""),
            "offset", (long long)rec.offset, "length", (long long)rec.length, "channels", rec.channels, "bit_depth",
            rec.bit_depth);
        if (d && info.audio) { /* what the record keeps of the audio (reel_store_record.audio_*) */
            PyObject *a =
                Py_BuildValue("{s:i,s:i,s:i,s:L,s:L,s:(LL),s:L,s:(LL),s:L}", "status", (int)rec.audio_status,
                              "sample_rate", rec.audio_sample_rate, "channels", rec.audio_channels, "first_sample",
                              (long long)rec.audio_first_sample, "samples", (long long)rec.audio_samples, "valid",
                              (long long)rec.audio_valid_lo, (long long)rec.audio_valid_hi, "missing",
                              (long long)rec.audio_missing, "missing_span", (long long)rec.audio_missing_lo,
                              (long long)rec.audio_missing_hi, "corrupt_packets", (long long)rec.audio_corrupt_packets);
            if (!a || PyDict_SetItemString(d, "audio", a) < 0) Py_CLEAR(d);
            Py_XDECREF(a);
        }
        if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
        Py_XDECREF(d);
    }
    reel_store_close(&s);
    return list;
}

PyMethodDef reel_store_methods[] = {
    { "pack", (PyCFunction)(void (*)(void))mod_pack, METH_VARARGS | METH_KEYWORDS,
      "pack(source, out_dir, *, short_side=256, width=0, height=0, fps=0.0, every=1, format='jpeg', quality=90, "
      "zstd_level=0, gop=8, crf=18, shard_size=1073741824, threads=0, part_index=0, part_count=1, progress=None, "
      "sampler=None, color=0, dtype=0, audio=None, corrupt_policy=0)\n"
      "--\n\nBuilds (a part of) a packed store; returns the report as a dict." },
    { "pack_merge", mod_pack_merge, METH_O, "pack_merge(out_dir)\n--\n\nWrites the index of a store built in parts." },
    { "store_verify", mod_store_verify, METH_O,
      "store_verify(store_dir)\n--\n\nReads every record and checks every checksum; a report dict." },
    { "store_info", mod_store_info, METH_O, "store_info(store_dir)\n--\n\nThe store's build settings and counts." },
    { "store_records", mod_store_records, METH_O,
      "store_records(store_dir)\n--\n\nEvery record: path, label, status, reason, frames, shard, offset, length." },
    { NULL, NULL, 0, NULL }
};
