/* sampler.c: the four clip samplers and the past-the-end policies
 * (repeat_last, wrap, drop, error), following torchcodec's definitions; the
 * whole-video fps and count samplers, following qwen-vl-utils 0.0.14; the
 * public reel_sampler_run / _describe and the loader's reel__sampler_run. */
#include "pipeline/sampler_internal.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

int reel__sampler_check(const reel_sampler_settings *s, reel_error *err)
{
    if (s->kind == REEL_SAMPLER_NONE)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "sampler: kind NONE (%d) is no sampler: it says a store was packed without one",
                               (int)REEL_SAMPLER_NONE);
    if (s->kind < REEL_SAMPLER_RANDOM_INDICES || s->kind > REEL_SAMPLER_COUNT)
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: unknown kind %d", s->kind);
    if (s->clips_per_video < 1 || s->clips_per_video > 4096)
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: clips_per_video %d not in [1, 4096]",
                               s->clips_per_video);
    if (s->frames_per_clip < 1 || s->frames_per_clip > 65536)
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: frames_per_clip %d not in [1, 65536]",
                               s->frames_per_clip);
    if (s->frame_stride < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: frame_stride %d must be >= 1", s->frame_stride);
    if (s->seconds_between_frames < 0 || !isfinite(s->seconds_between_frames))
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: seconds_between_frames must be >= 0");
    if (!isfinite(s->range_start) || !isfinite(s->range_end))
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: range must be finite");
    if (s->policy < REEL_CLIP_REPEAT_LAST || s->policy > REEL_CLIP_ERROR)
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: unknown policy %d", s->policy);
    if (!(s->seconds_between_clip_starts >= 0) || !isfinite(s->seconds_between_clip_starts))
        return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: seconds_between_clip_starts must be >= 0");
    if (s->kind == REEL_SAMPLER_FPS || s->kind == REEL_SAMPLER_COUNT) {
        if (s->clips_per_video != 1)
            return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: the fps and count samplers give one clip, not %d",
                                   s->clips_per_video);
        if (s->frame_factor < 1 || s->frame_factor > 4096)
            return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: frame_factor %d not in [1, 4096]",
                                   s->frame_factor);
        if (s->range_start < 0 || s->range_end < 0)
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "sampler: the fps and count samplers take a range in "
                                   "seconds >= 0");
    }
    if (s->kind == REEL_SAMPLER_FPS) {
        if (!(s->fps > 0) || !isfinite(s->fps))
            return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: fps must be > 0");
        if (s->min_frames < 0 || s->max_frames < 0 || s->max_frames > (1 << 24))
            return reel__error_set(err, REEL_E_INVALID_ARG, "sampler: min_frames %d / max_frames %d out of range",
                                   s->min_frames, s->max_frames);
    }
    return REEL_OK;
}

int64_t reel__sampler_fixed_count(const reel_sampler_settings *s)
{
    if (s->kind == REEL_SAMPLER_FPS) return -1;
    if (s->kind == REEL_SAMPLER_COUNT)
        return (int64_t)nearbyint((double)s->frames_per_clip / s->frame_factor) * s->frame_factor;
    return (int64_t)s->clips_per_video * s->frames_per_clip;
}

void reel_sampler_default_settings(reel_sampler_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->kind = REEL_SAMPLER_RANDOM_INDICES;
    s->clips_per_video = 1;
    s->frames_per_clip = 8;
    s->frame_stride = 1;
    s->policy = REEL_CLIP_REPEAT_LAST;
    s->fps = 2.0;
    s->min_frames = 4;
    s->max_frames = 768;
    s->frame_factor = 2;
}

/* torch.linspace(start, end, steps, dtype=torch.int), computed as torch does:
 * the first half forward from start, the second half back from end. */
static int64_t linspace_at(int64_t start, int64_t end, int steps, int i)
{
    if (steps == 1) return start;
    double step = (double)(end - start) / (double)(steps - 1);
    return i < steps / 2 ? (int64_t)((double)start + step * i) : (int64_t)((double)end - step * (steps - i - 1));
}

static int64_t to_pts(const reel_sampler_video *in, double seconds)
{
    return llround(seconds * (double)in->time_base_den / (double)in->time_base_num);
}

static double to_seconds(const reel_sampler_video *in, int64_t pts)
{
    return (double)pts * (double)in->time_base_num / (double)in->time_base_den;
}

/* First row with pts >= p. */
static int64_t lower_bound(const reel_sampler_video *in, int64_t p)
{
    int64_t lo = 0, hi = in->num_frames;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (in->table[mid].pts < p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void reel__sampler_segment(const reel_sampler_video *in, int64_t *first, int64_t *count)
{
    int64_t a = 0, b = in->num_frames;
    if (in->segment_start > 0) a = lower_bound(in, to_pts(in, in->segment_start));
    if (in->segment_end >= 0) b = lower_bound(in, to_pts(in, in->segment_end));
    if (b < a) b = a;
    *first = a;
    *count = b - a;
}

int64_t reel__sampler_frame_at(const reel_sampler_video *in, double seconds, int64_t lo, int64_t hi)
{
    int64_t p = to_pts(in, seconds);
    /* last row with pts <= p = first row with pts > p, minus one */
    int64_t l = 0, h = in->num_frames;
    while (l < h) {
        int64_t mid = l + (h - l) / 2;
        if (in->table[mid].pts <= p)
            l = mid + 1;
        else
            h = mid;
    }
    int64_t i = l - 1;
    if (i < lo) i = lo;
    if (i > hi) i = hi;
    return i;
}

/* Completes a clip of `have` valid entries to `want` per the policy.
 * Returns 0, -1 when the clip is dropped, -2 when it is an error. */
static int apply_policy(int policy, int64_t *clip, int have, int want)
{
    if (have >= want) return 0;
    if (policy == REEL_CLIP_ERROR) return -2;
    if (policy == REEL_CLIP_DROP || have == 0) return -1;
    for (int j = have; j < want; j++) clip[j] = policy == REEL_CLIP_WRAP ? clip[j % have] : clip[have - 1];
    return 0;
}

static int run_index(const reel_sampler_settings *s, const reel_sampler_video *in, const reel_rng_key *key,
                     const char *name, int64_t *out, reel_error *err)
{
    int64_t first, n;
    reel__sampler_segment(in, &first, &n);
    if (n <= 0) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: no frames in the sampled segment", name);
    const int K = s->clips_per_video, T = s->frames_per_clip;
    const int64_t stride = s->frame_stride;
    const int64_t span = stride * (T - 1) + 1;

    int64_t rs = (int64_t)floor(s->range_start);
    if (rs < 0) rs += n;
    if (rs < 0 || rs >= n)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: sampling range start %g outside the video's %lld frames",
                               name, s->range_start, (long long)n);
    int64_t re;
    if (s->range_end == 0) {
        re = n - span + 1;
        if (re <= rs) re = rs + 1; /* too short for a whole clip: start at rs, policy fills */
    } else {
        re = (int64_t)floor(s->range_end);
        if (re < 0) re += n;
        if (re > n) re = n;
        if (re <= rs)
            return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: empty sampling range [%g, %g) for %lld frames", name,
                                   s->range_start, s->range_end, (long long)n);
    }

    int kept = 0;
    for (int k = 0; k < K; k++) {
        int64_t start;
        if (s->kind == REEL_SAMPLER_RANDOM_INDICES)
            start = rs + (int64_t)reel__rng_below(key, (uint64_t)k, (uint64_t)(re - rs));
        else
            start = linspace_at(rs, re - 1, K, k);
        int64_t *clip = out + (size_t)kept * T;
        int have = 0;
        for (int j = 0; j < T; j++) {
            int64_t f = start + stride * j;
            if (f >= n) break;
            clip[have++] = first + f;
        }
        int p = apply_policy(s->policy, clip, have, T);
        if (p == -2)
            return reel__error_set(
                err, REEL_E_OUT_OF_RANGE,
                "%s: the clip starting at frame %lld runs past the video's %lld frames (policy error)", name,
                (long long)start, (long long)n);
        if (p == 0) kept++;
    }
    if (kept < K)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                               "%s: %lld frames are too few for %d clip(s) spanning %lld frames (policy drop)", name,
                               (long long)n, K, (long long)span);
    return REEL_OK;
}

static int run_time(const reel_sampler_settings *s, const reel_sampler_video *in, const reel_rng_key *key,
                    const char *name, int64_t *out, reel_error *err)
{
    int64_t first, n;
    reel__sampler_segment(in, &first, &n);
    if (n <= 0) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: no frames in the sampled segment", name);
    const int K = s->clips_per_video, T = s->frames_per_clip;
    const int64_t last = first + n - 1;
    const reel_frame_entry *lf = &in->table[in->num_frames - 1];
    double stream_begin = to_seconds(in, in->table[0].pts);
    double stream_end = to_seconds(in, lf->pts + (lf->duration > 0 ? lf->duration : 0));
    double begin = stream_begin, end = stream_end;
    if (in->segment_start > begin) begin = in->segment_start;
    if (in->segment_end >= 0 && in->segment_end < end) end = in->segment_end;
    if (!(end > begin)) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: empty time segment", name);

    double step = s->seconds_between_frames;
    if (step <= 0) {
        double fps = in->average_fps;
        if (!(fps > 0)) fps = (stream_end > stream_begin) ? (double)in->num_frames / (stream_end - stream_begin) : 0;
        if (!(fps > 0)) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: cannot infer the frame rate", name);
        step = 1.0 / fps;
    }
    const double width = end - begin;
    double rs = s->range_start < 0 ? width + s->range_start : s->range_start;
    if (rs < 0 || rs >= width)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: sampling range start %g s outside the video's %g s", name,
                               s->range_start, width);
    double a = begin + rs, b;
    if (s->range_end == 0) {
        b = end - (T - 1) * step;
        if (b <= a) b = a; /* too short: every clip starts at a */
    } else {
        b = s->range_end < 0 ? end + s->range_end : begin + s->range_end;
        if (b > end) b = end;
        if (b <= a)
            return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: empty sampling range [%g, %g) s for %g s", name,
                                   s->range_start, s->range_end, width);
    }

    int kept = 0;
    for (int k = 0; k < K; k++) {
        double start;
        if (s->kind == REEL_SAMPLER_RANDOM_TIMES)
            start = a + reel__rng_double(key, (uint64_t)k) * (b - a);
        else if (s->seconds_between_clip_starts > 0)
            start = a + k * s->seconds_between_clip_starts;
        else
            start = a + (b - a) * k / K;
        int64_t *clip = out + (size_t)kept * T;
        int have = 0;
        for (int j = 0; j < T; j++) {
            double t = start + j * step;
            if (t >= end) break;
            clip[have++] = reel__sampler_frame_at(in, t, first, last);
        }
        int p = apply_policy(s->policy, clip, have, T);
        if (p == -2)
            return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                                   "%s: the clip starting at %g s runs past the video's end at %g s (policy error)",
                                   name, start, end);
        if (p == 0) kept++;
    }
    if (kept < K)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                               "%s: %g s is too short for %d clip(s) of %d frames %g s apart (policy drop)", name,
                               width, K, T, step);
    return REEL_OK;
}

/* round(num / den) half to even, den > 0 (Python's round, exactly) */
static int64_t div_round_half_even(int64_t num, int64_t den)
{
    int64_t q = num / den, r = num % den;
    if (r < 0) {
        q -= 1;
        r += den;
    }
    if (2 * r > den || (2 * r == den && (q & 1))) q += 1;
    return q;
}

/* The range and count of the whole-video kinds, as qwen-vl-utils 0.0.14's
 * calculate_video_frame_range and smart_nframes compute them (the same
 * double operations in the same order, so the same roundings). */
static int whole_video(const reel_sampler_settings *s, const reel_sampler_video *in, const char *name,
                       reel_sampler_result *r, reel_error *err)
{
    int64_t first, total;
    reel__sampler_segment(in, &first, &total);
    if (total <= 0) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: no frames in the sampled segment", name);
    double fps = in->average_fps;
    if (!(fps > 0)) {
        double span = to_seconds(in, in->table[first + total - 1].pts + in->table[first + total - 1].duration -
                                         in->table[first].pts);
        fps = span > 0 ? (double)total / span : 0;
    }
    if (!(fps > 0) || !isfinite(fps))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: cannot infer the frame rate", name);
    int64_t start = 0, end = total - 1;
    if (s->range_start > 0 || s->range_end > 0) {
        double max_duration = (double)total / fps;
        if (s->range_start > 0) start = (int64_t)ceil(fmin(s->range_start, max_duration) * fps);
        if (s->range_end > 0) {
            end = (int64_t)floor(fmin(s->range_end, max_duration) * fps);
            if (end > total - 1) end = total - 1;
        }
        if (start >= end)
            return reel__error_set(err, REEL_E_OUT_OF_RANGE,
                                   "%s: empty time range: start frame %lld (at %g s) is not before end frame %lld "
                                   "(at %g s) of %lld frames at %g fps",
                                   name, (long long)start, s->range_start, (long long)end,
                                   s->range_end > 0 ? s->range_end : max_duration, (long long)total, fps);
    }
    const int64_t N = end - start + 1, ff = s->frame_factor;
    double n;
    if (s->kind == REEL_SAMPLER_COUNT) {
        n = (double)reel__sampler_fixed_count(s);
    } else {
        double min_f = ceil((double)s->min_frames / (double)ff) * (double)ff;
        double max_f = floor((double)s->max_frames / (double)ff) * (double)ff;
        double x = (double)N / fps * s->fps;
        if (x < min_f) x = min_f;
        if (x > max_f) x = max_f;
        if (x > (double)N) x = (double)N;
        n = floor(x / (double)ff) * (double)ff;
    }
    if (!(n >= (double)ff && n <= (double)N))
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: %g frames not in [%lld, %lld], the frames in its range",
                               name, n, (long long)ff, (long long)N);
    r->num_frames = (int64_t)n;
    r->range_first = first + start;
    r->range_frames = N;
    r->video_fps = fps;
    r->sample_fps = n / (double)N * fps;
    return REEL_OK;
}

int reel__sampler_describe(const reel_sampler_settings *s, const reel_sampler_video *in, reel_sampler_result *r,
                           reel_error *err)
{
    const char *name = in->name ? in->name : "video";
    memset(r, 0, sizeof *r);
    if (!in->table || in->num_frames <= 0)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: the video has no frames", name);
    if (in->time_base_num <= 0 || in->time_base_den <= 0)
        return reel__error_set(err, REEL_E_INTERNAL, "%s: invalid time base", name);
    if (s->kind == REEL_SAMPLER_FPS || s->kind == REEL_SAMPLER_COUNT) return whole_video(s, in, name, r, err);
    int64_t first, count;
    reel__sampler_segment(in, &first, &count);
    r->num_frames = reel__sampler_fixed_count(s);
    r->range_first = first;
    r->range_frames = count;
    r->video_fps = in->average_fps;
    return REEL_OK;
}

/* linspace(first, first + N - 1, n) rounded half to even: torch.linspace in
 * float32 then .round(), which equals the exact quotient rounded half to
 * even (checked against torch over 26,000 (start, N, n) triples). */
static int run_whole_video(const reel_sampler_settings *s, const reel_sampler_video *in, const char *name, int64_t *out,
                           reel_error *err)
{
    reel_sampler_result r;
    int st = whole_video(s, in, name, &r, err);
    if (st != REEL_OK) return st;
    const int64_t n = r.num_frames, span = r.range_frames - 1;
    for (int64_t i = 0; i < n; i++) out[i] = r.range_first + (n == 1 ? 0 : div_round_half_even(span * i, n - 1));
    return REEL_OK;
}

int reel__sampler_run(const reel_sampler_settings *s, const reel_sampler_video *in, const reel_rng_key *key,
                      int64_t *out, reel_error *err)
{
    const char *name = in->name ? in->name : "video";
    if (!in->table || in->num_frames <= 0)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: the video has no frames", name);
    if (in->time_base_num <= 0 || in->time_base_den <= 0)
        return reel__error_set(err, REEL_E_INTERNAL, "%s: invalid time base", name);
    if (s->kind == REEL_SAMPLER_RANDOM_INDICES || s->kind == REEL_SAMPLER_REGULAR_INDICES)
        return run_index(s, in, key, name, out, err);
    if (s->kind == REEL_SAMPLER_FPS || s->kind == REEL_SAMPLER_COUNT) return run_whole_video(s, in, name, out, err);
    return run_time(s, in, key, name, out, err);
}

/* The checks the public calls share. */
static int public_check(const char *what, const reel_sampler_settings *s, const reel_sampler_video *v, reel_error *err)
{
    if (!s || !v) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: NULL argument", what);
    int st = reel__sampler_check(s, err);
    if (st != REEL_OK) return st;
    if (v->time_base_num <= 0 || v->time_base_den <= 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: invalid time base %d/%d", v->name ? v->name : "video",
                               v->time_base_num, v->time_base_den);
    return REEL_OK;
}

int reel_sampler_describe(const reel_sampler_settings *s, const reel_sampler_video *v, reel_sampler_result *out,
                          reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_sampler_describe: NULL argument");
    int st = public_check("reel_sampler_describe", s, v, err);
    if (st != REEL_OK) return st;
    return reel__sampler_describe(s, v, out, err);
}

int reel_sampler_run(const reel_sampler_settings *s, const reel_sampler_video *v, uint64_t seed, uint64_t epoch,
                     uint64_t sample, int64_t *out, size_t out_len, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_sampler_run: NULL argument");
    int st = public_check("reel_sampler_run", s, v, err);
    if (st != REEL_OK) return st;
    int64_t need = reel__sampler_fixed_count(s);
    if (need < 0) {
        reel_sampler_result r;
        st = reel__sampler_describe(s, v, &r, err);
        if (st != REEL_OK) return st;
        need = r.num_frames;
    }
    if (out_len < (size_t)need)
        return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL, "reel_sampler_run: room for %zu indices, %lld needed",
                               out_len, (long long)need);
    reel_rng_key key = { seed, epoch, sample, REEL_RNG_SAMPLER, 0 };
    return reel__sampler_run(s, v, &key, out, err);
}
