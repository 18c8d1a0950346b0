/* dataset_manifest.c: a dataset from a CSV, TSV or JSONL manifest (path,
 * label or class name, optional segment), parsed with line numbers in every
 * error; relative paths resolve against the manifest's folder. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/dataset_internal.h"
#include "core/error.h"
#include "core/json.h"
#include "io/io_front.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct row {
    char *path, *label;
    double start, end;
    int line;
} row;

typedef struct rows {
    row *v;
    size_t n, alloc;
} rows;

static int rows_push(rows *r, row x)
{
    if (r->n == r->alloc) {
        size_t na = r->alloc ? r->alloc * 2 : 256;
        row *nv = realloc(r->v, na * sizeof *nv);
        if (!nv) return REEL_E_NOMEM;
        r->v = nv;
        r->alloc = na;
    }
    r->v[r->n++] = x;
    return 0;
}

static void rows_free(rows *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].path);
        free(r->v[i].label);
    }
    free(r->v);
}

static char *read_file(const char *path, size_t *len, reel_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    reel_buf b;
    reel__buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) reel__buf_put(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        reel__buf_free(&b);
        reel__error_set(err, REEL_E_IO, "%s: read error", path);
        return NULL;
    }
    *len = b.len;
    char *d = reel__buf_take(&b);
    if (!d) reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    return d;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    size_t i = 0;
    while (s[i] && isspace((unsigned char)s[i])) i++;
    if (i) memmove(s, s + i, n - i + 1);
}

static int name_is(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcasecmp(s, *names) == 0) return 1;
    return 0;
}

static const char *const k_path[] = { "path", "video", "file", "filename", "video_path", "filepath", NULL };
static const char *const k_label[] = { "label", "class", "category", "class_name", "label_name", "target", NULL };
static const char *const k_start[] = { "start", "start_time", "time_start", "start_sec", "start_seconds", NULL };
static const char *const k_end[] = { "end", "end_time", "time_end", "end_sec", "end_seconds", NULL };

static int parse_time(const char *s, double *out, double dflt)
{
    if (!s || !*s) {
        *out = dflt;
        return 0;
    }
    char *end;
    double v = strtod(s, &end);
    while (*end && isspace((unsigned char)*end)) end++;
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* Splits the next CSV/TSV record at *pos into fields (malloc'ed, in f[]).
 * Returns the field count, 0 at end of input, -1 on a quoting error. */
static int next_record(const char *s, size_t len, size_t *pos, char delim, char **f, int maxf, int *line)
{
    if (*pos >= len) return 0;
    int nf = 0;
    reel_buf cur;
    reel__buf_init(&cur);
    reel__buf_put(&cur, "", 0);
    int quoted = 0, was_quoted = 0;
    size_t i = *pos;
    for (;;) {
        if (i >= len) {
            if (quoted) {
                reel__buf_free(&cur);
                goto bad;
            }
            break;
        }
        char c = s[i++];
        if (quoted) {
            if (c == '"') {
                if (i < len && s[i] == '"') {
                    reel__buf_put(&cur, "\"", 1);
                    i++;
                } else
                    quoted = 0;
            } else {
                if (c == '\n') (*line)++;
                reel__buf_put(&cur, &c, 1);
            }
            continue;
        }
        if (c == '"' && (cur.len == 0 || (!was_quoted && strspn(cur.data, " \t") == cur.len))) {
            cur.len = 0;
            cur.data[0] = '\0';
            quoted = was_quoted = 1;
            continue;
        }
        if (c == delim || c == '\n' || c == '\r') {
            if (nf < maxf)
                f[nf++] = reel__buf_take(&cur);
            else
                reel__buf_free(&cur);
            reel__buf_put(&cur, "", 0);
            was_quoted = 0;
            if (c == delim) continue;
            if (c == '\r' && i < len && s[i] == '\n') i++;
            (*line)++;
            reel__buf_free(&cur);
            *pos = i;
            return nf;
        }
        reel__buf_put(&cur, &c, 1);
    }
    if (nf < maxf)
        f[nf++] = reel__buf_take(&cur);
    else
        reel__buf_free(&cur);
    (*line)++;
    *pos = i;
    return nf;
bad:
    for (int k = 0; k < nf; k++) free(f[k]);
    return -1;
}

static int parse_delimited(const char *path, const char *s, size_t len, char delim, rows *out, reel_error *err)
{
    enum { MAXF = 64 };
    char *f[MAXF];
    size_t pos = 0;
    int line = 1;
    int col_path = 0, col_label = 1, col_start = 2, col_end = 3;
    int first = 1;
    for (;;) {
        int rec_line = line;
        int nf = next_record(s, len, &pos, delim, f, MAXF, &line);
        if (nf == 0) break;
        if (nf < 0)
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: unterminated quoted field", path, rec_line);
        for (int k = 0; k < nf; k++) trim(f[k]);
        int blank = nf == 1 && f[0][0] == '\0';
        int comment = f[0][0] == '#';
        if (blank || comment) {
            for (int k = 0; k < nf; k++) free(f[k]);
            continue;
        }
        if (first) {
            first = 0;
            int is_header = 0;
            for (int k = 0; k < nf; k++)
                if (name_is(f[k], k_path)) is_header = 1;
            if (is_header) {
                col_path = col_label = col_start = col_end = -1;
                for (int k = 0; k < nf; k++) {
                    if (col_path < 0 && name_is(f[k], k_path))
                        col_path = k;
                    else if (col_label < 0 && name_is(f[k], k_label))
                        col_label = k;
                    else if (col_start < 0 && name_is(f[k], k_start))
                        col_start = k;
                    else if (col_end < 0 && name_is(f[k], k_end))
                        col_end = k;
                }
                for (int k = 0; k < nf; k++) free(f[k]);
                continue;
            }
        }
        row r = { NULL, NULL, 0, -1, rec_line };
        int st = REEL_OK;
        if (col_path >= nf || f[col_path][0] == '\0')
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: no path", path, rec_line);
        else if (col_start >= 0 && col_start < nf && parse_time(f[col_start], &r.start, 0) < 0)
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: bad start time \"%s\"", path, rec_line,
                                 f[col_start]);
        else if (col_end >= 0 && col_end < nf && parse_time(f[col_end], &r.end, -1) < 0)
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: bad end time \"%s\"", path, rec_line,
                                 f[col_end]);
        if (st == REEL_OK) {
            r.path = f[col_path];
            f[col_path] = NULL;
            if (col_label >= 0 && col_label < nf && f[col_label][0]) {
                r.label = f[col_label];
                f[col_label] = NULL;
            }
            if (rows_push(out, r) < 0) {
                free(r.path);
                free(r.label);
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
            }
        }
        for (int k = 0; k < nf; k++) free(f[k]);
        if (st != REEL_OK) return st;
    }
    return REEL_OK;
}

typedef struct jsonl_ctx {
    row r;
    int bad_time;
    int oom;
} jsonl_ctx;

static int jsonl_member(void *opaque, const char *key, const reel_json_value *v)
{
    jsonl_ctx *c = opaque;
    if (name_is(key, k_path) && !c->r.path) {
        if (v->type == REEL_JSON_STRING) {
            c->r.path = strdup(v->text);
            if (!c->r.path) c->oom = 1;
        }
    } else if (name_is(key, k_label) && !c->r.label) {
        if (v->type == REEL_JSON_STRING || v->type == REEL_JSON_NUMBER) {
            if (v->type == REEL_JSON_STRING && !v->text[0]) return 0;
            c->r.label = strdup(v->text);
            if (!c->r.label) c->oom = 1;
        }
    } else if (name_is(key, k_start) || name_is(key, k_end)) {
        double *dst = name_is(key, k_start) ? &c->r.start : &c->r.end;
        if (v->type == REEL_JSON_NUMBER)
            *dst = v->number;
        else if (v->type == REEL_JSON_STRING) {
            if (parse_time(v->text, dst, *dst) < 0) c->bad_time = 1;
        } else if (v->type != REEL_JSON_NULL)
            c->bad_time = 1;
    }
    return 0;
}

static int parse_jsonl(const char *path, const char *s, size_t len, rows *out, reel_error *err)
{
    size_t pos = 0;
    int line = 0;
    while (pos < len) {
        line++;
        size_t e = pos;
        while (e < len && s[e] != '\n') e++;
        size_t a = pos, b = e;
        pos = e + 1;
        while (a < b && isspace((unsigned char)s[a])) a++;
        while (b > a && isspace((unsigned char)s[b - 1])) b--;
        if (a == b || s[a] == '#') continue;
        jsonl_ctx c;
        memset(&c, 0, sizeof c);
        c.r.end = -1;
        c.r.line = line;
        size_t where = 0;
        int rc = reel__json_object_each(s + a, b - a, jsonl_member, &c, &where);
        int st = REEL_OK;
        if (rc != 0)
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: invalid JSON object near byte %zu", path, line,
                                 where + 1);
        else if (c.oom)
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
        else if (!c.r.path || !c.r.path[0])
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: no \"path\"", path, line);
        else if (c.bad_time)
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: line %d: bad start or end time", path, line);
        else if (rows_push(out, c.r) < 0)
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
        if (st != REEL_OK) {
            free(c.r.path);
            free(c.r.label);
            return st;
        }
    }
    return REEL_OK;
}

static int parse_int_label(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (end == s || *end || errno) return 0;
    *v = x;
    return 1;
}

static int has_ext(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) && strcasecmp(dot + 1, ext) == 0;
}

int reel__manifest_kind(const char *path)
{
    /* a URL's query string and fragment are not part of its name */
    char clean[4096];
    snprintf(clean, sizeof clean, "%s", path);
    if (reel__io_is_remote(path)) clean[strcspn(clean, "?#")] = '\0';
    if (has_ext(clean, "csv")) return 0;
    if (has_ext(clean, "tsv") || has_ext(clean, "txt")) return 1;
    if (has_ext(clean, "jsonl") || has_ext(clean, "ndjson") || has_ext(clean, "json")) return 2;
    return -1;
}

int reel_dataset_create_from_manifest(reel_dataset **out, const char *path_in, reel_error *err)
{
    if (!out || !path_in || !*path_in) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: no manifest path");
    *out = NULL;
    const int remote = reel__io_is_remote(path_in);
    /* `path`: what messages show (a URL redacted); `base`: what relative
     * entries resolve against (a URL without its query string) */
    char shown[1024], base[4096];
    const char *path = path_in;
    if (remote) {
        reel__io_redact(path_in, shown, sizeof shown);
        path = shown;
    }
    snprintf(base, sizeof base, "%s", path_in);
    if (remote) base[strcspn(base, "?#")] = '\0';
    int kind = reel__manifest_kind(path_in); /* 0 csv, 1 tsv, 2 jsonl */
    if (kind < 0)
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: unknown manifest type (expected .csv, .tsv, .txt, .jsonl or .ndjson)", path);
    size_t len = 0;
    char *text = NULL;
    if (remote) {
        int rs = reel__io_read_all(path_in, NULL, (size_t)1 << 30, &text, &len, err);
        if (rs != REEL_OK) return rs;
    } else if (!(text = read_file(path, &len, err))) {
        return err ? err->status : REEL_E_IO;
    }
    /* skip a UTF-8 byte order mark */
    const char *s = text;
    if (len >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB && (unsigned char)s[2] == 0xBF) {
        s += 3;
        len -= 3;
    }
    rows r = { NULL, 0, 0 };
    int st =
        kind == 2 ? parse_jsonl(path, s, len, &r, err) : parse_delimited(path, s, len, kind == 0 ? ',' : '\t', &r, err);
    free(text);
    if (st != REEL_OK) {
        rows_free(&r);
        return st;
    }
    if (r.n == 0) {
        rows_free(&r);
        return reel__error_set(err, REEL_E_EMPTY, "%s: no entries", path);
    }

    int all_int = 1;
    for (size_t i = 0; i < r.n && all_int; i++) {
        int64_t v;
        if (r.v[i].label && (!parse_int_label(r.v[i].label, &v) || v < 0)) all_int = 0;
    }
    /* folder of the manifest, for relative paths */
    const char *slash = strrchr(base, '/');
    if (remote && slash && slash - base < (ptrdiff_t)(strstr(base, "://") - base) + 3) slash = NULL;
    size_t dirlen = slash ? (size_t)(slash - base) : 0;

    reel_dataset *ds = NULL;
    st = reel_dataset_create(&ds, err);
    reel_buf full;
    reel__buf_init(&full);
    for (size_t i = 0; st == REEL_OK && i < r.n; i++) {
        const row *x = &r.v[i];
        const char *p = x->path;
        if (p[0] != '/' && slash && !reel__io_is_remote(p)) {
            full.len = 0;
            reel__buf_put(&full, base, dirlen + 1);
            reel__buf_puts(&full, p);
            if (full.oom) {
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
                break;
            }
            p = full.data;
        }
        reel_error e2;
        if (!x->label)
            st = reel_dataset_add(ds, p, -1, x->start, x->end, &e2);
        else if (all_int) {
            int64_t v = 0;
            parse_int_label(x->label, &v);
            st = reel_dataset_add(ds, p, v, x->start, x->end, &e2);
        } else
            st = reel_dataset_add_named(ds, p, x->label, x->start, x->end, &e2);
        if (st != REEL_OK) reel__error_set(err, st, "%s: line %d: %s", path, x->line, e2.message);
        if (st == REEL_OK && remote && !reel__io_is_remote(p)) {
            /* a manifest from a URL names URLs, or paths relative to it (made
             * URLs above); a local path would let its sender read the
             * trainer's files, or learn whether they exist. The entry stays
             * (the rows keep their places) and fails by name, never opened. */
            reel_buf why;
            reel__buf_init(&why);
            reel__buf_printf(&why,
                             "%s: a local path in a manifest read from a URL is refused (%s, line %d: its entries "
                             "must be URLs or paths relative to it)",
                             p, path, x->line);
            if (why.oom || !(ds->items[ds->n - 1].refused = strdup(why.data)))
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
            reel__buf_free(&why);
        }
    }
    reel__buf_free(&full);
    rows_free(&r);
    if (st != REEL_OK) {
        reel_dataset_destroy(&ds);
        return st;
    }
    reel__dataset_update_ranks(ds);
    *out = ds;
    return REEL_OK;
}
