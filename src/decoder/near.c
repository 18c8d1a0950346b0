/* near.c: frames by timestamp with a tolerance: the frame whose pts is
 * nearest to a time (exact comparisons, ties to the earlier frame), the
 * tolerance check, and reel_decode_near, several decoders' nearest frames
 * in one call on reel's threads. */
#include "decoder/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void reel_near_default_settings(reel_near_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->tolerance_s = 1e-4;
    s->on_violation = REEL_NEAR_RAISE;
    s->threads = 0;
}

/* ---- exact comparisons ---------------------------------------------------
 * A double is m * 2^e exactly (m an integer below 2^53), and a time in the
 * stream's time base is pts * num / den: both sides are rationals, so
 * "which frame is nearer" is decided without rounding. */

typedef unsigned __int128 u128;

/* The sign of x - a / b, exactly: x finite, b > 0, |a| < 2^127. */
static int cmp_exact(double x, __int128 a, int64_t b)
{
    int sx = (x > 0) - (x < 0), sa = (a > 0) - (a < 0);
    if (sx != sa) return sx > sa ? 1 : -1;
    if (sx == 0) return 0;
    int e;
    double f = frexp(fabs(x), &e);       /* |x| = f * 2^e, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53); /* exact: 53 bits */
    e -= 53;                             /* |x| = m * 2^e */
    u128 lhs = (u128)m * (u128)b;        /* |x| * b = lhs * 2^e, lhs < 2^117 */
    u128 rhs = (u128)(a < 0 ? -a : a);   /* compare lhs * 2^e with rhs */
    int mag;                             /* sign of |x| - |a / b| */
    if (e >= 0) {
        if (e >= 127 || lhs > (~(u128)0 >> e))
            mag = 1; /* lhs * 2^e >= 2^127 > rhs */
        else {
            u128 l = lhs << e;
            mag = (l > rhs) - (l < rhs);
        }
    } else {
        int sh = -e;
        if (sh >= 127 || rhs > (~(u128)0 >> sh))
            mag = -1; /* rhs * 2^sh >= 2^127 > lhs (rhs >= 1) */
        else {
            u128 r = rhs << sh;
            mag = (lhs > r) - (lhs < r);
        }
    }
    return sx > 0 ? mag : -mag;
}

/* |t - pts * num / den| in seconds (long double arithmetic: the exact
 * comparisons above decide the frame; this is only the reported size). */
static double distance_of(double t, int64_t pts, AVRational tb)
{
    long double d = (long double)t - (long double)pts * tb.num / tb.den;
    return (double)(d < 0 ? -d : d);
}

int reel_decoder_get_index_near_time(const reel_decoder *dec, double seconds, int64_t *index, double *distance,
                                     reel_error *err)
{
    if (!dec || !index)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_index_near_time: NULL argument");
    const reel_table *t = &dec->table;
    AVRational tb = dec->st->time_base;
    if (!isfinite(seconds))
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: timestamp %f is not a finite number", dec->name, seconds);
    if (t->n == 0) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "%s: the video has no frames", dec->name);
    const reel_frame_entry *f = t->frames;
    int64_t k;
    if (cmp_exact(seconds, (__int128)f[0].pts * tb.num, tb.den) <= 0) {
        k = 0; /* at or before the first frame */
    } else {
        int64_t lo = 0, hi = t->n; /* lo: the last frame with pts < seconds */
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            if (cmp_exact(seconds, (__int128)f[mid].pts * tb.num, tb.den) > 0)
                lo = mid;
            else
                hi = mid;
        }
        k = lo;
        /* nearer to the next frame only when past the midpoint of the two:
         * 2 t > (pts_lo + pts_hi) * num / den; at it, the earlier one */
        if (lo + 1 < t->n &&
            cmp_exact(seconds, ((__int128)f[lo].pts + f[lo + 1].pts) * tb.num, (int64_t)2 * tb.den) > 0)
            k = lo + 1;
        /* frames that share a pts: the earlier one */
        while (k > 0 && f[k - 1].pts == f[k].pts) k--;
    }
    *index = k;
    if (distance) *distance = distance_of(seconds, f[k].pts, tb);
    return REEL_OK;
}

static int check_settings(const reel_near_settings *s, const char *who, reel_error *err)
{
    if (isnan(s->tolerance_s) || s->tolerance_s < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: settings.tolerance_s is %g: it must be >= 0", who,
                               s->tolerance_s);
    if (s->on_violation != REEL_NEAR_RAISE && s->on_violation != REEL_NEAR_FLAG)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: settings.on_violation is %d: REEL_NEAR_RAISE or "
                               "REEL_NEAR_FLAG",
                               who, (int)s->on_violation);
    if (s->threads < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: settings.threads is %d: it must be >= 0", who, s->threads);
    return REEL_OK;
}

/* The nearest frames of n times into idx (n long), with their distances and
 * flags (each may be NULL), checked against the tolerance. */
static int resolve(const reel_decoder *dec, const double *seconds, size_t n, const reel_near_settings *s, int64_t *idx,
                   double *dist, uint8_t *within, reel_error *err)
{
    AVRational tb = dec->st->time_base;
    for (size_t i = 0; i < n; i++) {
        double d = 0;
        int r = reel_decoder_get_index_near_time(dec, seconds[i], &idx[i], &d, err);
        if (r != REEL_OK) {
            if (err && r == REEL_E_INVALID_ARG) {
                char msg[REEL_ERROR_MSG_SIZE];
                memcpy(msg, err->message, sizeof msg);
                snprintf(err->message, sizeof err->message, "%.400s (time %zu of %zu)", msg, i, n);
            }
            return r;
        }
        int ok = d <= s->tolerance_s;
        if (!ok && s->on_violation == REEL_NEAR_RAISE) {
            const reel_frame_entry *f = &dec->table.frames[idx[i]];
            return reel__error_set(err, REEL_E_FRAME_TIMESTAMP,
                                   "%s: no frame within %g s of %.9f s (time %zu of %zu): the nearest is frame "
                                   "%lld at %.9f s (pts %lld), %.9f s away",
                                   dec->name, s->tolerance_s, seconds[i], i, n, (long long)idx[i],
                                   (double)f->pts * av_q2d(tb), (long long)f->pts, d);
        }
        if (dist) dist[i] = d;
        if (within) within[i] = (uint8_t)ok;
    }
    return REEL_OK;
}

int reel_decoder_get_frames_near(reel_decoder *dec, const double *seconds, size_t n, const reel_near_settings *s,
                                 const reel_transform *t, void *dst, size_t dst_size, int64_t *indices_out,
                                 double *distance_out, uint8_t *within_out, reel_decode_stats *stats, reel_error *err)
{
    if (!dec || (n && !seconds))
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decoder_get_frames_near: NULL argument");
    reel_near_settings def;
    if (!s) {
        reel_near_default_settings(&def);
        s = &def;
    }
    int r = check_settings(s, dec->name, err);
    if (r != REEL_OK) return r;
    int64_t *idx = indices_out ? indices_out : malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dec->name);
    r = resolve(dec, seconds, n, s, idx, distance_out, within_out, err);
    if (r == REEL_OK) r = reel_decoder_get_frames(dec, idx, n, t, dst, dst_size, stats, err);
    if (idx != indices_out) free(idx);
    return r;
}

/* ---- reel_decode_near ------------------------------------------------------
 * A group is the jobs of one decoder with one transform: one request (their
 * times one after another), one plan, each frame written straight into its
 * job's output through a table of slots. Groups of the same decoder run on
 * the same thread, one after another; different decoders side by side. */

typedef struct near_group {
    reel_decoder *dec;
    const reel_transform *t; /* of its first job */
    size_t first_job;        /* jobs[first_job] is its first */
    size_t n;                /* requests */
    int64_t *idx;            /* n frame indices, job after job */
    uint8_t **slots;         /* n output addresses */
    int contexts;            /* GOP-parallel contexts it may use */
    int status;
    reel_error err;
    struct near_group *next_of_dec; /* the next group of the same decoder, or NULL */
    int lead;                       /* 1: the first group of its decoder (a thread takes the chain) */
} near_group;

typedef struct near_pool {
    pthread_mutex_t mu;
    near_group *groups;
    size_t ng;
    size_t next;
} near_pool;

static void run_chain(near_group *g)
{
    for (; g; g = g->next_of_dec) {
        reel_error_clear(&g->err);
        g->status = reel__decoder_get_frames_to(g->dec, g->idx, g->n, g->t, g->contexts, g->slots, NULL, &g->err);
    }
}

static void *near_worker(void *arg)
{
    near_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->next < p->ng && !p->groups[p->next].lead) p->next++;
        size_t i = p->next < p->ng ? p->next++ : p->ng;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->ng) return NULL;
        run_chain(&p->groups[i]);
    }
}

static int same_transform(const reel_transform *a, const reel_transform *b)
{
    if (a == b) return 1;
    reel_transform da, db;
    if (!a) reel_transform_default_settings(&da);
    if (!b) reel_transform_default_settings(&db);
    return !memcmp(a ? a : &da, b ? b : &db, sizeof da);
}

/* Checks every job and resolves its times (into the job's indices_out or
 * idx_all + offset): the call's first pass, before anything is decoded. */
static int check_jobs(const reel_near_job *jobs, size_t n_jobs, const reel_near_settings *s, int64_t **idx_of,
                      int64_t *idx_all, size_t *fb_of, size_t *failed_job, reel_error *err)
{
    size_t off = 0;
    for (size_t j = 0; j < n_jobs; j++) {
        *failed_job = j;
        const reel_near_job *jb = &jobs[j];
        if (!jb->decoder || (jb->n && (!jb->seconds || !jb->dst)))
            return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decode_near: job %zu: NULL decoder, times or output",
                                   j);
        reel_decoder *dec = jb->decoder;
        int r = reel_decoder_get_output_size(dec, jb->transform, NULL, NULL, &fb_of[j], err);
        if (r != REEL_OK) return r;
        if (jb->transform && (jb->transform->stride_c || jb->transform->stride_y || jb->transform->stride_x))
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "%s: reel_decode_near writes dense frames; explicit strides are for "
                                   "reel_converter_run",
                                   dec->name);
        if (jb->n && jb->dst_size / jb->n < fb_of[j])
            return reel__error_set(err, REEL_E_BUFFER_TOO_SMALL,
                                   "%s: output buffer holds %zu bytes, %zu frames need %zu", dec->name, jb->dst_size,
                                   jb->n, jb->n * fb_of[j]);
        idx_of[j] = jb->indices_out ? jb->indices_out : idx_all + off;
        off += jb->n;
        r = resolve(dec, jb->seconds, jb->n, s, idx_of[j], jb->distance_out, jb->within_out, err);
        if (r != REEL_OK) return r;
    }
    *failed_job = n_jobs;
    return REEL_OK;
}

int reel_decode_near(const reel_near_job *jobs, size_t n_jobs, const reel_near_settings *s, size_t *failed_job,
                     reel_error *err)
{
    size_t failed_local;
    if (!failed_job) failed_job = &failed_local;
    *failed_job = n_jobs;
    if (n_jobs && !jobs) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decode_near: NULL jobs");
    reel_near_settings def;
    if (!s) {
        reel_near_default_settings(&def);
        s = &def;
    }
    int r = check_settings(s, "reel_decode_near", err);
    if (r != REEL_OK || n_jobs == 0) return r;
    size_t total = 0;
    for (size_t j = 0; j < n_jobs; j++) {
        if (jobs[j].n > SIZE_MAX / 2 - total)
            return reel__error_set(err, REEL_E_INVALID_ARG, "reel_decode_near: too many times");
        total += jobs[j].n;
    }
    int64_t **idx_of = calloc(n_jobs, sizeof *idx_of);
    size_t *fb_of = calloc(n_jobs, sizeof *fb_of);
    size_t *group_of = calloc(n_jobs, sizeof *group_of);
    int64_t *idx_all = malloc((total ? total : 1) * sizeof *idx_all);
    int64_t *req = malloc((total ? total : 1) * sizeof *req);
    uint8_t **slots = malloc((total ? total : 1) * sizeof *slots);
    near_group *g = calloc(n_jobs, sizeof *g);
    pthread_t *th = calloc(n_jobs, sizeof *th);
    size_t ng = 0;
    if (!idx_of || !fb_of || !group_of || !idx_all || !req || !slots || !g || !th) {
        r = reel__error_set(err, REEL_E_NOMEM, "reel_decode_near: out of memory for %zu jobs", n_jobs);
        goto out;
    }
    r = check_jobs(jobs, n_jobs, s, idx_of, idx_all, fb_of, failed_job, err);
    if (r != REEL_OK) goto out;
    /* the groups, in the order of their first job */
    for (size_t j = 0; j < n_jobs; j++) {
        size_t k = 0;
        while (k < ng && !(g[k].dec == jobs[j].decoder && same_transform(g[k].t, jobs[j].transform))) k++;
        if (k == ng) {
            g[ng].dec = jobs[j].decoder;
            g[ng].t = jobs[j].transform;
            g[ng].first_job = j;
            ng++;
        }
        group_of[j] = k;
        g[k].n += jobs[j].n;
    }
    /* each group's requests and slots, job after job */
    size_t off = 0;
    for (size_t k = 0; k < ng; k++) {
        g[k].idx = req + off;
        g[k].slots = slots + off;
        off += g[k].n;
        g[k].n = 0;
    }
    for (size_t j = 0; j < n_jobs; j++) {
        near_group *q = &g[group_of[j]];
        for (size_t i = 0; i < jobs[j].n; i++) {
            q->idx[q->n] = idx_of[j][i];
            q->slots[q->n] = (uint8_t *)jobs[j].dst + i * fb_of[j];
            q->n++;
        }
    }
    /* chains of one decoder's groups; the threads and each one's contexts */
    size_t decoders = 0;
    for (size_t k = 0; k < ng; k++) {
        int lead = 1;
        for (size_t q = 0; q < k && lead; q++)
            if (g[q].dec == g[k].dec) lead = 0;
        g[k].lead = lead;
        decoders += (size_t)lead;
        for (size_t q = k + 1; q < ng; q++)
            if (g[q].dec == g[k].dec) {
                g[k].next_of_dec = &g[q];
                break;
            }
    }
    size_t threads = s->threads > 0 ? (size_t)s->threads : (size_t)reel__cpu_count();
    if (threads < 1) threads = 1;
    size_t workers = decoders < threads ? decoders : threads;
    size_t lead_no = 0;
    for (size_t k = 0; k < ng; k++) {
        if (!g[k].lead) continue; /* its decoder's first group set it */
        size_t share = threads / decoders + (lead_no++ < threads % decoders ? 1 : 0);
        int contexts = share < 1 ? 1 : share > REEL_GOP_CONTEXTS ? REEL_GOP_CONTEXTS : (int)share;
        for (near_group *c = &g[k]; c; c = c->next_of_dec) c->contexts = contexts;
    }
    near_pool pool = { .groups = g, .ng = ng, .next = 0 };
    if (pthread_mutex_init(&pool.mu, NULL) != 0) {
        r = reel__error_set(err, REEL_E_NOMEM, "reel_decode_near: cannot make a lock");
        goto out;
    }
    size_t started = 0;
    for (size_t w = 1; w < workers; w++) {
        if (pthread_create(&th[started], NULL, near_worker, &pool) != 0) break; /* the others take its share */
        started++;
    }
    near_worker(&pool);
    for (size_t w = 0; w < started; w++) pthread_join(th[w], NULL);
    pthread_mutex_destroy(&pool.mu);
    /* the first failure in job order */
    for (size_t j = 0; j < n_jobs && r == REEL_OK; j++) {
        near_group *q = &g[group_of[j]];
        if (q->status != REEL_OK) {
            r = q->status;
            *failed_job = j;
            if (err) *err = q->err;
        }
    }
out:
    free(idx_of);
    free(fb_of);
    free(group_of);
    free(idx_all);
    free(req);
    free(slots);
    free(g);
    free(th);
    return r;
}
