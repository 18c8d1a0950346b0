/* source_video.c: the loader's source for video files (paths or URLs):
 * stage 1 opens and indexes with reel_decoder, stage 2 decodes the sampled
 * frames with one planned call. */
#include "pipeline/source.h"
#include "core/error.h"
#include "decoder/decoder_for_loader.h"
#include "decoder/open.h"

#include <string.h>

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
    reel_decoder *dec = NULL;
    int st = reel__decoder_open_as(&dec, it->path, it->remote, &s, err); /* the entry's answer */
    if (st != REEL_OK) return st;
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
    *handle = dec;
    return REEL_OK;
}

static int video_decode(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n, reel_frame_fn fn,
                        reel__window_fn window, void *opaque, reel_source_stats *st, reel_error *err)
{
    (void)ctx;
    (void)tls;
    (void)window; /* the decoder makes whole pictures; the converter crops them */
    reel_decode_stats ds;
    int r = reel_decoder_decode(handle, indices, n, fn, opaque, &ds, err);
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
    return reel_decoder_prefetch(handle, indices, n, err);
}

static void video_close(void *ctx, void *handle)
{
    (void)ctx;
    reel_decoder *dec = handle;
    reel_decoder_close(&dec);
}

/* Stage 2 of one long sample while decode threads idle: the decoder's
 * GOP-parallel get_frames (`contexts` for this call only: the loader
 * decides per sample) straight into the slot's buffer. */
static int video_decode_dense(void *ctx, void *tls, void *handle, const int64_t *indices, size_t n,
                              const reel_transform *t, int cthw, void *dst, size_t cap, int contexts, int64_t *pts,
                              reel_source_stats *st, reel_error *err)
{
    (void)ctx;
    (void)tls;
    reel_decoder *dec = handle;
    reel_decode_stats ds;
    memset(&ds, 0, sizeof ds);
    int r = reel__decoder_get_sample(dec, indices, n, t, cthw, contexts, dst, cap, &ds, err);
    st->frames_decoded += ds.frames_decoded;
    st->frames_returned += ds.frames_returned;
    if (r != REEL_OK) return r;
    int64_t nf = 0;
    const reel_frame_entry *table = reel_decoder_get_frame_table(dec, &nf);
    for (size_t i = 0; i < n; i++) {
        int64_t f = indices[i] < 0 ? indices[i] + nf : indices[i];
        pts[i] = f >= 0 && f < nf ? table[f].pts : 0;
    }
    return REEL_OK;
}

/* Over URLs too: the decoder's I/O opens what the entry names; the loader's
 * reel_source names stage 1 "fetch" there. */
const reel_source_ops reel__source_video = {
    "video", { "open", "decode" }, NULL, NULL, video_open, video_prepare, video_decode, video_close,
    NULL,    video_decode_dense,   NULL, NULL, /* every setting; positions are source frame indices */
};
