/* checkpoint_text.c: the elastic checkpoint's text form (the JSON object of
 * Python's Loader.state_dict()): a strict reader that checks every number
 * in its full width before it narrows it, and the writer it reads back. */
#include "core/error.h"
#include "core/json.h"
#include "reel/loader.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys, in the order the writer puts them. */
enum {
    K_VERSION,
    K_EPOCH,
    K_SEEN,
    K_SEED,
    K_RANKS,
    K_BATCH,
    K_SHUFFLE,
    K_WINDOW,
    K_SAMPLES,
    K_HASH,
    K_TOPOLOGY,
    K_COUNT
};
static const char *const k_names[K_COUNT] = { "version",         "epoch",           "samples_seen", "seed",
                                              "canonical_ranks", "canonical_batch", "shuffle",      "shuffle_window",
                                              "num_videos",      "fingerprint",     "topology" };
enum { T_WORLD, T_BATCH, T_WORKERS, T_COUNT };
static const char *const t_names[T_COUNT] = { "world_size", "batch_size", "num_workers" };

typedef struct reader {
    unsigned have; /* bit per key seen */
    int64_t i[K_COUNT];
    uint64_t u[K_COUNT];   /* seed, fingerprint */
    int32_t topo[T_COUNT]; /* 1 when absent */
    unsigned topo_have;
    reel_error *err;
    int status;
} reader;

/* A JSON integer literal (-?(0|[1-9][0-9]*)) into a sign and magnitude;
 * -1 when `s` is no integer (a fraction, an exponent, NaN, ...), -2 past
 * 2^64 - 1 in magnitude. */
static int read_integer(const char *s, int *negative, uint64_t *magnitude)
{
    *negative = *s == '-';
    if (*negative) s++;
    if (*s < '0' || *s > '9' || (*s == '0' && s[1] != '\0')) return -1;
    uint64_t m = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        const unsigned d = (unsigned)(*s - '0');
        if (m > (UINT64_MAX - d) / 10) {
            while (*s >= '0' && *s <= '9') s++;
            return *s ? -1 : -2;
        }
        m = m * 10 + d;
    }
    *magnitude = m;
    return 0;
}

static const char *type_name(const reel_json_value *v)
{
    switch (v->type) {
    case REEL_JSON_NULL: return "null";
    case REEL_JSON_BOOL: return v->boolean ? "true" : "false";
    case REEL_JSON_STRING: return "a string";
    case REEL_JSON_NUMBER: return v->text;
    default: return v->text && v->text[0] == '[' ? "a list" : "an object";
    }
}

/* The value's integer as sign and magnitude (read_integer's 0 or -2: too
 * large), or -1 with an error naming `key` when it is no integer at all. */
static int integer_of(reader *r, const char *key, const reel_json_value *v, int *neg, uint64_t *m)
{
    const int rc = v->type == REEL_JSON_NUMBER ? read_integer(v->text, neg, m) : -1;
    if (rc == -1)
        r->status = reel__error_set(r->err, REEL_E_INVALID_ARG, "checkpoint: %s must be an integer, not %.40s", key,
                                    type_name(v));
    return rc;
}

/* The value as an integer in [lo, hi] (signed), or an error naming `key`. */
static int int_in(reader *r, const char *key, const reel_json_value *v, int64_t lo, int64_t hi, int64_t *out)
{
    int neg = 0;
    uint64_t m = 0;
    const int rc = integer_of(r, key, v, &neg, &m);
    if (rc == -1) return -1;
    const int fits = rc == 0 && (neg ? m <= (uint64_t)INT64_MAX + 1 : m <= (uint64_t)INT64_MAX);
    const int64_t x = !fits ? 0 : neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
    if (!fits || x < lo || x > hi) {
        r->status = reel__error_set(r->err, REEL_E_INVALID_ARG, "checkpoint: %s %.40s is outside [%lld, %lld]", key,
                                    v->text, (long long)lo, (long long)hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* An unsigned 64-bit value (seed, fingerprint). */
static int u64_of(reader *r, const char *key, const reel_json_value *v, uint64_t *out)
{
    int neg = 0;
    uint64_t m = 0;
    const int rc = integer_of(r, key, v, &neg, &m);
    if (rc == -1) return -1;
    if (rc == -2 || (neg && m != 0)) {
        r->status = reel__error_set(r->err, REEL_E_INVALID_ARG,
                                    "checkpoint: %s %.40s is outside [0, 18446744073709551615]", key, v->text);
        return -1;
    }
    *out = m;
    return 0;
}

static int topology_member(void *opaque, const char *key, const reel_json_value *v)
{
    reader *r = opaque;
    for (int t = 0; t < T_COUNT; t++) {
        if (strcmp(key, t_names[t]) != 0) continue;
        char name[40];
        snprintf(name, sizeof name, "topology.%s", t_names[t]);
        if (r->topo_have & (1u << t)) {
            r->status = reel__error_set(r->err, REEL_E_INVALID_ARG, "checkpoint: %s appears twice", name);
            return 1;
        }
        r->topo_have |= 1u << t;
        int64_t x;
        if (int_in(r, name, v, 1, INT32_MAX, &x) < 0) return 1;
        r->topo[t] = (int32_t)x;
    }
    return 0;
}

static int member(void *opaque, const char *key, const reel_json_value *v)
{
    reader *r = opaque;
    int k = 0;
    while (k < K_COUNT && strcmp(key, k_names[k]) != 0) k++;
    if (k == K_COUNT) return 0; /* unknown: a newer writer's extra */
    if (r->have & (1u << k)) {
        r->status = reel__error_set(r->err, REEL_E_INVALID_ARG, "checkpoint: %s appears twice", key);
        return 1;
    }
    r->have |= 1u << k;
    switch (k) {
    case K_VERSION:
        /* any integer: the version's own check says what it is */
        return int_in(r, key, v, INT32_MIN, INT32_MAX, &r->i[k]) < 0;
    case K_EPOCH: return int_in(r, key, v, 0, REEL_EPOCH_MAX, &r->i[k]) < 0;
    case K_SEEN:
    case K_SAMPLES: return int_in(r, key, v, 0, INT64_MAX, &r->i[k]) < 0;
    case K_SEED:
    case K_HASH: return u64_of(r, key, v, &r->u[k]) < 0;
    case K_RANKS:
    case K_BATCH: return int_in(r, key, v, 1, INT32_MAX, &r->i[k]) < 0;
    case K_SHUFFLE:
        if (v->type == REEL_JSON_BOOL) {
            r->i[k] = v->boolean;
            return 0;
        }
        return int_in(r, key, v, 0, 1, &r->i[k]) < 0;
    case K_WINDOW:
        if (v->type == REEL_JSON_NULL) {
            r->i[k] = 0;
            return 0;
        }
        if (v->type == REEL_JSON_STRING && strcmp(v->text, "full") == 0) {
            r->i[k] = REEL_SHUFFLE_WINDOW_FULL;
            return 0;
        }
        if (v->type == REEL_JSON_STRING) {
            r->status = reel__error_set(r->err, REEL_E_INVALID_ARG,
                                        "checkpoint: shuffle_window must be null, \"full\" or an integer >= 0, "
                                        "not a string other than \"full\"");
            return 1;
        }
        return int_in(r, key, v, REEL_SHUFFLE_WINDOW_FULL, INT64_MAX, &r->i[k]) < 0;
    default: /* K_TOPOLOGY */
        if (v->type != REEL_JSON_OTHER || !v->text || v->text[0] != '{') {
            r->status = reel__error_set(r->err, REEL_E_INVALID_ARG, "checkpoint: topology must be an object, not %.40s",
                                        type_name(v));
            return 1;
        }
        if (reel__json_object_each(v->text, strlen(v->text), topology_member, r, NULL) != 0) {
            if (r->status == REEL_OK)
                r->status = reel__error_set(r->err, REEL_E_INVALID_ARG, "checkpoint: topology is not a JSON object");
            return 1;
        }
        return 0;
    }
}

int reel_loader_checkpoint_parse(reel_loader_checkpoint *out, const char *text, size_t len, reel_error *err)
{
    if (!out || (!text && len)) return reel__error_set(err, REEL_E_INVALID_ARG, "checkpoint: NULL argument");
    reader r;
    memset(&r, 0, sizeof r);
    r.err = err;
    r.status = REEL_OK;
    for (int t = 0; t < T_COUNT; t++) r.topo[t] = 1;
    size_t where = 0;
    const int rc = reel__json_object_each(text ? text : "", len, member, &r, &where);
    if (rc != 0) {
        if (r.status != REEL_OK) return r.status;
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "checkpoint: not a JSON object (a syntax error at byte %zu of %zu)", where, len);
    }
    /* the version first: another version's keys differ */
    if ((r.have & (1u << K_VERSION)) && r.i[K_VERSION] != REEL_CHECKPOINT_VERSION)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               r.i[K_VERSION] > REEL_CHECKPOINT_VERSION
                                   ? "checkpoint: version %lld was written by a newer reel; this one reads %d"
                                   : "checkpoint: version %lld is not the elastic checkpoint's text form (%d)",
                               (long long)r.i[K_VERSION], REEL_CHECKPOINT_VERSION);
    for (int k = 0; k < K_COUNT; k++)
        if (k != K_TOPOLOGY && !(r.have & (1u << k)))
            return reel__error_set(err, REEL_E_INVALID_ARG, "checkpoint: the key %s is missing", k_names[k]);
    if (r.i[K_SEEN] > r.i[K_SAMPLES])
        return reel__error_set(err, REEL_E_INVALID_ARG, "checkpoint: samples_seen %lld is outside [0, num_videos %lld]",
                               (long long)r.i[K_SEEN], (long long)r.i[K_SAMPLES]);
    memset(out, 0, sizeof *out);
    out->version = REEL_CHECKPOINT_VERSION;
    out->epoch = r.i[K_EPOCH];
    out->samples_seen = r.i[K_SEEN];
    out->seed = r.u[K_SEED];
    out->canonical_ranks = (int32_t)r.i[K_RANKS]; /* in [1, INT32_MAX]: checked above */
    out->canonical_batch = (int32_t)r.i[K_BATCH];
    out->shuffle = (int32_t)r.i[K_SHUFFLE];
    out->shuffle_window = r.i[K_WINDOW];
    out->num_samples = r.i[K_SAMPLES];
    out->dataset_hash = r.u[K_HASH];
    out->world_size = r.topo[T_WORLD];
    out->batch_size = r.topo[T_BATCH];
    out->num_workers = r.topo[T_WORKERS];
    return REEL_OK;
}

int reel_loader_checkpoint_format(const reel_loader_checkpoint *cp, char **text, reel_error *err)
{
    if (!cp || !text) return reel__error_set(err, REEL_E_INVALID_ARG, "checkpoint: NULL argument");
    *text = NULL;
    if (cp->version != REEL_CHECKPOINT_VERSION || cp->epoch < 0 || cp->samples_seen < 0 ||
        cp->samples_seen > cp->num_samples || cp->canonical_ranks < 1 || cp->canonical_batch < 1 ||
        (cp->shuffle != 0 && cp->shuffle != 1) || cp->shuffle_window < REEL_SHUFFLE_WINDOW_FULL || cp->world_size < 1 ||
        cp->batch_size < 1 || cp->num_workers < 1)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "checkpoint: version %d, epoch %lld, samples_seen %lld of %lld, canonical %d x %d, "
                               "shuffle %d, shuffle_window %lld, topology %d x %d x %d is not one to write",
                               (int)cp->version, (long long)cp->epoch, (long long)cp->samples_seen,
                               (long long)cp->num_samples, (int)cp->canonical_ranks, (int)cp->canonical_batch,
                               (int)cp->shuffle, (long long)cp->shuffle_window, (int)cp->world_size,
                               (int)cp->batch_size, (int)cp->num_workers);
    reel_buf b;
    reel__buf_init(&b);
    reel__buf_printf(&b,
                     "{\"version\": %d, \"epoch\": %lld, \"samples_seen\": %lld, \"seed\": %llu, "
                     "\"canonical_ranks\": %d, \"canonical_batch\": %d, \"shuffle\": %s, \"shuffle_window\": ",
                     (int)cp->version, (long long)cp->epoch, (long long)cp->samples_seen, (unsigned long long)cp->seed,
                     (int)cp->canonical_ranks, (int)cp->canonical_batch, cp->shuffle ? "true" : "false");
    if (cp->shuffle_window == REEL_SHUFFLE_WINDOW_FULL)
        reel__buf_puts(&b, "\"full\"");
    else if (cp->shuffle_window == 0)
        reel__buf_puts(&b, "null");
    else
        reel__buf_printf(&b, "%lld", (long long)cp->shuffle_window);
    reel__buf_printf(&b,
                     ", \"num_videos\": %lld, \"fingerprint\": %llu, \"topology\": {\"world_size\": %d, "
                     "\"batch_size\": %d, \"num_workers\": %d}}",
                     (long long)cp->num_samples, (unsigned long long)cp->dataset_hash, (int)cp->world_size,
                     (int)cp->batch_size, (int)cp->num_workers);
    *text = reel__buf_take(&b);
    return *text ? REEL_OK : reel__error_set(err, REEL_E_NOMEM, "checkpoint: out of memory");
}
