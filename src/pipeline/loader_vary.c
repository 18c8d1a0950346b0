/* loader_vary.c: variable batches, whose samples have their own frame count
 * (the fps sampler) and output size (a pixel-budget size policy): stage 1
 * decides both with the one sampler and size policy and reserves the slot's
 * buffer in the ring; stage 3 lays the clips out, padded on request. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/loader_internal.h"
#include "core/error.h"
#include "pipeline/dataset_internal.h"
#include "pipeline/geometry.h"
#include "pipeline/sampler_internal.h"

#include <string.h>

void reel__loader_slot_transform(const reel_loader *l, const reel_slot *s, reel_clip_transform *ct)
{
    *ct = l->s.transform;
    if (l->sizes_vary) {
        ct->resize = REEL_RESIZE_EXACT;
        ct->resize_width = s->width;
        ct->resize_height = s->height;
    }
}

int reel__loader_take_all(const reel_source_info *info, int64_t *out, size_t n, reel_error *e)
{
    if ((int64_t)n != info->video.num_frames)
        return reel__error_set(e, REEL_E_CORRUPT, "%s: holds %lld frames where its sampler gives %zu", info->video.name,
                               (long long)info->video.num_frames, n);
    for (size_t i = 0; i < n; i++) out[i] = (int64_t)i;
    return REEL_OK;
}

int reel__loader_vary_sample(reel_loader *l, reel_slot *s, const reel_source_info *info, const reel_rng_key *key,
                             reel_error *e)
{
    reel_sampler_result res;
    int st = REEL_OK;
    if (info->presampled)
        res.num_frames = info->video.num_frames;
    else
        st = reel__sampler_describe(&l->s.sampler, &info->video, &res, e);
    if (st != REEL_OK) return st;
    if (res.num_frames < 1 || res.num_frames > (int64_t)1 << 24)
        return reel__error_set(e, REEL_E_OUT_OF_RANGE, "%s: %lld frames sampled", info->video.name,
                               (long long)res.num_frames);
    s->num_frames = (int)res.num_frames;
    s->width = l->clip_width;
    s->height = l->clip_height;
    int dw = info->width, dh = info->height;
    if (l->s.transform.pixels.apply_rotation && (info->rotation == 90 || info->rotation == 270)) {
        dw = info->height;
        dh = info->width;
    }
    s->display_width = dw;
    s->display_height = dh;
    if (l->sizes_vary) {
        reel_error pe;
        st = reel_size_policy_apply(&l->s.size_policy, dw, dh, res.num_frames, l->s.sampler.frame_factor, &s->width,
                                    &s->height, &pe);
        if (st != REEL_OK) return reel__error_set(e, st, "%s: %s", info->video.name, pe.message);
    }
    const size_t bytes =
        (size_t)s->num_frames * (size_t)l->channels * (size_t)s->width * (size_t)s->height * l->element_bytes;
    st = reel__ring_slot_reserve(&l->ring, s, s->num_frames, bytes, e);
    if (st != REEL_OK) return st;
    if (info->presampled) return reel__loader_take_all(info, s->indices, (size_t)s->num_frames, e);
    return reel__sampler_run(&l->s.sampler, &info->video, key, s->indices, e);
}

int reel__loader_vary_contexts(reel_loader *l, const reel_slot *s)
{
    if (!l->s.gop_split || !l->src.ops->decode_dense || s->num_frames < 2 || s->display_width < 1) return 1;
    int64_t depth = 0;
    double avg = 0;
    reel__queue_depth(&l->st[REEL_STAGE_DECODE].q, &depth, &avg);
    int64_t idle = (int64_t)l->s.decode_threads - atomic_load(&l->decoding) - depth;
    if (idle < 1) return 1;
    int64_t k = 1 + idle;
    return k > 64 ? 64 : (int)k;
}

int reel__loader_vary_decode_split(reel_loader *l, worker *w, reel_slot *s, int contexts, reel_source_stats *stats,
                                   reel_error *e)
{
    reel_clip_transform ct;
    reel__loader_slot_transform(l, s, &ct);
    reel_rng_key key = { l->s.seed, (uint64_t)s->bb->epoch, (uint64_t)s->sample, REEL_RNG_CROP, (uint32_t)s->attempt };
    reel_transform t;
    int st = reel__geometry_frame(&ct, s->display_width, s->display_height, &key, 0, &t, e);
    if (st != REEL_OK) return st;
    t.layout = l->s.transform.layout == REEL_BATCH_BTHWC ? REEL_LAYOUT_HWC : REEL_LAYOUT_CHW;
    const int cthw = l->s.transform.layout == REEL_BATCH_BCTHW;    /* a sample's [C, T, H, W]: channel after channel */
    if (contexts >= 2) atomic_fetch_add(&l->gop_split_samples, 1); /* (1: a sample on a GPU, in one go) */
    /* the slot's own buffer: no other slot's rows move under it (collate
     * reads only finished slots), and the ring reuses it only once this
     * worker lets go, so an abandoned sample needs no lock here */
    st = l->src.ops->decode_dense(l->src.ctx, w->tls, s->handle, s->indices, (size_t)s->num_frames, &t, cthw, s->data,
                                  s->data_cap, contexts, s->pts, stats, e);
    if (st != REEL_OK) return st;
    reel__geometry_clip_info(&t, s->display_width, s->display_height, &s->bb->rows[s->index]);
    return REEL_OK;
}

/* Copies clip `src` (T x h x w x nc in `layout`) into row `row` of a batch
 * padded to Tm x hm x wm. */
static void pad_copy(int layout, size_t es, int nc, const uint8_t *src, int T, int h, int w, uint8_t *dst, int Tm,
                     int hm, int wm)
{
    for (int t = 0; t < T; t++) {
        int64_t so, sc, sy, sx, d0, dc, dy, dx;
        reel__layout_frame(layout, T, h, w, nc, 0, t, &so, &sc, &sy, &sx);
        reel__layout_frame(layout, Tm, hm, wm, nc, 0, t, &d0, &dc, &dy, &dx);
        if (sc == 1) { /* HWC: a row is w * nc elements */
            for (int y = 0; y < h; y++)
                memcpy(dst + (size_t)(d0 + y * dy) * es, src + (size_t)(so + y * sy) * es, (size_t)w * nc * es);
            continue;
        }
        for (int c = 0; c < nc; c++)
            for (int y = 0; y < h; y++)
                memcpy(dst + (size_t)(d0 + c * dc + y * dy) * es, src + (size_t)(so + c * sc + y * sy) * es,
                       (size_t)w * es);
    }
}

/* With settings.pad: the clips into one zero-padded tensor of the batch's
 * shape (0: done, else the failure, which fails the batch). */
static int collate_padded(reel_loader *l, reel_batchbuf *bb)
{
    reel_batch *b = &bb->batch;
    const size_t row = (size_t)b->strides[0] * l->element_bytes, bytes = (size_t)b->num_clips * row;
    int st = reel__ring_batch_reserve(&l->ring, bb, bytes, &bb->err);
    if (st != REEL_OK) return st;
    uint8_t *dst = bb->data;
    memset(dst, 0, bytes);
    const int Tm = (int)(b->layout == REEL_BATCH_BCTHW ? b->shape[2] : b->shape[1]);
    const int hm = (int)(b->layout == REEL_BATCH_BTHWC ? b->shape[2] : b->shape[3]);
    const int wm = (int)(b->layout == REEL_BATCH_BTHWC ? b->shape[3] : b->shape[4]);
    for (int64_t i = 0; i < b->num_clips; i++) {
        const reel_clip_info *ci = &bb->clips[i];
        pad_copy(b->layout, l->element_bytes, l->channels, ci->data, ci->num_frames, ci->height, ci->width,
                 dst + (size_t)i * row, Tm, hm, wm);
    }
    b->data = dst;
    b->bytes = bytes;
    return REEL_OK;
}

void reel__loader_collate_variable(reel_loader *l, reel_batchbuf *bb)
{
    int64_t out = 0, failed = 0;
    int Tm = 0, hm = 0, wm = 0;
    bb->status = REEL_OK;
    bb->err_sample = bb->err_position = -1;
    for (int64_t j = 0; j < bb->nsamples; j++) {
        reel_slot *s = &bb->slots[j];
        if (s->status != REEL_OK) {
            failed++;
            reel__batchbuf_note_failure(bb, s);
            continue;
        }
        reel_clip_info *ci = &bb->clips[out];
        *ci = bb->rows[j];
        ci->sample = s->sample;
        ci->requested = s->requested;
        ci->position = s->position;
        ci->path = sample_name(l, s->sample); /* a URL redacted: the clip shows it */
        ci->label = reel__dataset_label(l->ds, (size_t)s->sample);
        ci->clip = 0;
        ci->attempt = s->attempt;
        ci->padded = s->padded;
        ci->frame_indices = s->indices;
        ci->pts = s->pts;
        ci->time_base_num = s->tb_num;
        ci->time_base_den = s->tb_den;
        ci->data = s->data;
        ci->device_buffer = s->data_dev; /* on a GPU; NULL on the CPU */
        ci->num_frames = s->num_frames;
        ci->width = s->width;
        ci->height = s->height;
        ci->bytes =
            (size_t)s->num_frames * (size_t)l->channels * (size_t)s->width * (size_t)s->height * l->element_bytes;
        bb->labels[out] = ci->label;
        if (s->num_frames > Tm) Tm = s->num_frames;
        if (s->height > hm) hm = s->height;
        if (s->width > wm) wm = s->width;
        out++;
    }
    reel_batch *b = &bb->batch;
    reel__layout_shape(b->layout, out, Tm, hm, wm, l->channels, b->shape, b->strides);
    b->num_clips = out;
    b->data = NULL;
    b->bytes = 0;
    b->epoch = bb->epoch;
    b->index = bb->index;
    b->position = bb->position;
    b->num_samples = bb->nsamples;
    b->num_failed = failed;
    b->samples_seen = bb->samples_seen;
    /* (a failure to pad fails the batch: raised under RAISE, else handed out with data NULL) */
    if (l->s.pad && out > 0 && bb->status != REEL_E_CANCELLED && collate_padded(l, bb) != REEL_OK)
        bb->status = REEL_E_NOMEM;
}
