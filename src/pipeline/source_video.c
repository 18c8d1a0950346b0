/* source_video.c: the loader's source for video files (paths or URLs):
 * stage 1 opens and indexes with reel_decoder (and, with audio, opens the
 * video's audio with reel_audio), stage 2 decodes the sampled frames with
 * one planned call, and the clips' audio windows. */
#include "pipeline/source.h"
#include "core/error.h"
#include "decoder/decoder_for_loader.h"
#include "decoder/open.h"

#include <stdlib.h>
#include <string.h>

/* A sample's handle: its decoder, and its audio when the loader asks. */
typedef struct video_sample {
    reel_decoder *dec;
    reel_audio *audio;
} video_sample;

static void video_close(void *ctx, void *handle)
{
    (void)ctx;
    video_sample *v = handle;
    if (!v) return;
    reel_decoder_close(&v->dec);
    reel_audio_close(&v->audio);
    free(v);
}

/* The sample's audio, of the file or URL its decoder opened
 * (reel_decoder_open_audio): a URL's audio reads through the decoder's
 * object (its bytes are fetched once for both: the whole of a small object,
 * the GOPs stage 1 fetched ahead, under the decoder's remote settings),
 * with the sample's interrupt and tally: its own requests count in the
 * loader's remote_stats as the video's do. */
static int open_audio(video_sample *v, const reel_source_open *o, reel_error *err)
{
    reel_audio_settings as = *o->audio;
    as.remote_stats = o->tally;
    as.interrupt = o->interrupt;
    as.interrupt_opaque = o->interrupt_opaque;
    return reel_decoder_open_audio(v->dec, &as, &v->audio, err);
}

/* A decode worker's state: its device on a GPU loader (else nothing). */
static int video_thread_init(void *ctx, const reel_source_open *o, void **tls, reel_error *err)
{
    (void)ctx;
    (void)err;
    *tls = o->device;
    return REEL_OK;
}

static int video_open(void *ctx, void *tls, const reel_dataset_entry *it, const reel_source_open *o, void **handle,
                      reel_source_info *info, reel_error *err)
{
    (void)ctx;
    (void)tls;
    reel_decoder_settings s = *o->decoder; /* the loader's, with the sample's own below */
    s.interrupt = o->interrupt;
    s.interrupt_opaque = o->interrupt_opaque;
    s.remote_stats = o->tally;
    if (it->refused) return reel__error_set(err, REEL_E_INVALID_ARG, "%s", it->refused); /* never opened */
    video_sample *sample = calloc(1, sizeof *sample);
    if (!sample) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", reel__entry_name(it));
    int st = reel__decoder_open_as(&sample->dec, it->path, it->remote, &s, o->device, err); /* the entry's answer */
    if (st == REEL_OK && o->audio) st = open_audio(sample, o, err);
    if (st != REEL_OK) {
        video_close(NULL, sample);
        return st;
    }
    reel_decoder *dec = sample->dec;
    const reel_video_info *vi = reel_decoder_get_info(dec);
    reel_sampler_video *v = &info->video;
    v->table = reel_decoder_get_frame_table(dec, &v->num_frames);
    v->time_base_num = vi->time_base_num;
    v->time_base_den = vi->time_base_den;
    v->average_fps = vi->avg_fps_den > 0 ? (double)vi->avg_fps_num / vi->avg_fps_den : 0;
    v->segment_start = it->start;
    v->segment_end = it->end;
    info->rotation = ((vi->rotation % 360) + 360) % 360; /* -90 and 270 alike */
    info->width = vi->source_width;                      /* before rotation: the loader applies info->rotation itself */
    info->height = vi->source_height;
    *handle = sample;
    return REEL_OK;
}

static int video_decode(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_frame_fn fn,
                        reel__window_fn window, void *opaque, reel_source_stats *st, reel_error *err)
{
    (void)ctx;
    (void)tls;
    (void)window; /* the decoder makes whole pictures; the converter crops them */
    reel_decode_stats ds;
    int r = reel_decoder_decode(((video_sample *)handle)->dec, indices, n, fn, opaque, &ds, err);
    st->frames_decoded += ds.frames_decoded;
    st->frames_returned += ds.frames_returned;
    /* a video at a URL reports its requests into the sample's tally when closed */
    return r;
}

/* Stage 1, after sampling: a video at a URL fetches the packets of the
 * clip's decode runs now, so stage 2 decodes without waiting on the
 * network (within the loader's bytes-in-flight budget). */
static int video_prepare(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_source_stats *st,
                         reel_error *err)
{
    (void)ctx;
    (void)tls;
    (void)st; /* its requests reach the sample's tally when the video closes */
    return reel_decoder_prefetch(((video_sample *)handle)->dec, indices, n, err);
}

/* Stage 2 of one long sample while decode threads idle: the decoder's
 * GOP-parallel get_frames (`contexts` for this call only: the loader
 * decides per sample) straight into the slot's buffer. */
static int video_decode_dense(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n,
                              const reel_transform *t, int cthw, void *dst, size_t cap, int contexts, int64_t *pts,
                              reel_source_stats *st, reel_error *err)
{
    (void)ctx;
    reel_decoder *dec = ((video_sample *)handle)->dec;
    reel_decode_stats ds;
    memset(&ds, 0, sizeof ds);
    /* tls: a GPU loader's decode worker's device (video_thread_init), NULL otherwise */
    int r = reel__decoder_get_sample(dec, indices, n, t, cthw, contexts, tls, dst, cap, &ds, err);
    st->frames_decoded += ds.frames_decoded;
    st->frames_returned += ds.frames_returned;
    st->frames_nvdec += ds.frames_nvdec;
    st->frames_uploaded += ds.frames_uploaded;
    if (r != REEL_OK) return r;
    int64_t nf = 0;
    const reel_frame_entry *table = reel_decoder_get_frame_table(dec, &nf);
    for (size_t i = 0; i < n; i++) {
        int64_t f = indices[i] < 0 ? indices[i] + nf : indices[i];
        pts[i] = f >= 0 && f < nf ? table[f].pts : 0;
    }
    return REEL_OK;
}

/* Stage 2: a clip's audio window, from the audio opened in stage 1. */
static int video_audio(void *ctx, void *tls, void *handle, int64_t t0, int64_t t1, int num, int den, float *dst,
                       size_t cap, reel_audio_window *w, int *channels, reel_error *err)
{
    (void)ctx;
    (void)tls;
    video_sample *v = handle;
    if (!v->audio) return reel__error_set(err, REEL_E_INTERNAL, "loader: a sample's audio was not opened");
    const reel_audio_info *ai = reel_audio_get_info(v->audio);
    *channels = ai->has_audio ? ai->channels : 0; /* 0: no stream, zeros asked for (any channel count) */
    if (!dst) return reel_audio_get_window(v->audio, t0, t1, num, den, w, err);
    return reel_audio_get_samples(v->audio, t0, t1, num, den, dst, cap, w, err);
}

/* Over URLs too: the decoder's I/O opens what the entry names; the loader's
 * reel_source names stage 1 "fetch" there. */
const reel_source_ops reel__source_video = {
    .kind = "video",
    .stage_names = { "open", "decode" },
    .thread_init = video_thread_init, /* nothing to free: the device is the loader's */
    .open = video_open,
    .prepare = video_prepare,
    .decode = video_decode,
    .close = video_close,
    .decode_dense = video_decode_dense,
    .audio = video_audio, /* every setting (no check); positions are source frame indices */
};
