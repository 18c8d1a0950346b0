/* dataset.c: datasets from a directory scan (Kinetics layout), from CSV, TSV
 * and JSONL manifests, or built through the C API; class names to indices. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/dataset.h"
#include "core/json.h"
#include "core/error.h"
#include "store/store.h"
#include "io/io.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int reel_dataset_create(reel_dataset **out, reel_error *err)
{
    if (!out) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: out is NULL");
    *out = calloc(1, sizeof **out);
    if (!*out) return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
    return REEL_OK;
}

void reel_dataset_destroy(reel_dataset **pds)
{
    if (!pds || !*pds) return;
    reel_dataset *ds = *pds;
    for (size_t i = 0; i < ds->n; i++) free(ds->items[i].path);
    for (size_t i = 0; i < ds->nclasses; i++) free(ds->classes[i]);
    free(ds->items);
    free(ds->classes);
    free(ds->hash);
    free(ds->rank_of_id);
    free(ds->id_of_rank);
    reel_store_close(&ds->store);
    free(ds);
    *pds = NULL;
}

size_t reel_dataset_get_size(const reel_dataset *ds)
{
    return ds ? ds->n : 0;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int rehash(reel_dataset *ds, size_t size)
{
    int64_t *h = calloc(size, sizeof *h);
    if (!h) return REEL_E_NOMEM;
    for (size_t id = 0; id < ds->nclasses; id++) {
        size_t j = hash_str(ds->classes[id]) & (size - 1);
        while (h[j]) j = (j + 1) & (size - 1);
        h[j] = (int64_t)id + 1;
    }
    free(ds->hash);
    ds->hash = h;
    ds->hash_size = size;
    return 0;
}

/* Class id for name, adding it if new. */
static int class_id(reel_dataset *ds, const char *name, int64_t *id)
{
    if (ds->hash_size) {
        size_t j = hash_str(name) & (ds->hash_size - 1);
        while (ds->hash[j]) {
            if (strcmp(ds->classes[ds->hash[j] - 1], name) == 0) {
                *id = ds->hash[j] - 1;
                return 0;
            }
            j = (j + 1) & (ds->hash_size - 1);
        }
    }
    if (ds->nclasses == ds->classes_alloc) {
        size_t na = ds->classes_alloc ? ds->classes_alloc * 2 : 64;
        char **nc = realloc(ds->classes, na * sizeof *nc);
        if (!nc) return REEL_E_NOMEM;
        ds->classes = nc;
        ds->classes_alloc = na;
    }
    char *copy = strdup(name);
    if (!copy) return REEL_E_NOMEM;
    ds->classes[ds->nclasses++] = copy;
    if ((ds->nclasses + 1) * 2 > ds->hash_size) {
        size_t ns = ds->hash_size ? ds->hash_size * 2 : 128;
        while ((ds->nclasses + 1) * 2 > ns) ns *= 2;
        if (rehash(ds, ns) < 0) {
            free(copy);
            ds->nclasses--;
            return REEL_E_NOMEM;
        }
    } else {
        size_t j = hash_str(name) & (ds->hash_size - 1);
        while (ds->hash[j]) j = (j + 1) & (ds->hash_size - 1);
        ds->hash[j] = (int64_t)ds->nclasses;
    }
    ds->ranks_dirty = 1;
    *id = (int64_t)ds->nclasses - 1;
    return 0;
}


/* Sorts ids by name with a merge sort (no global state). */
static void sort_ids(char **names, int64_t *ids, int64_t *tmp, size_t n)
{
    if (n < 2) return;
    size_t h = n / 2;
    sort_ids(names, ids, tmp, h);
    sort_ids(names, ids + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = strcmp(names[ids[j]], names[ids[i]]) < 0 ? ids[j++] : ids[i++];
    while (i < h) tmp[k++] = ids[i++];
    while (j < n) tmp[k++] = ids[j++];
    memcpy(ids, tmp, n * sizeof *ids);
}

static int update_ranks(reel_dataset *ds)
{
    if (!ds->ranks_dirty) return 0;
    size_t n = ds->nclasses;
    int64_t *r = malloc((n ? n : 1) * sizeof *r);
    int64_t *o = malloc((n ? n : 1) * sizeof *o);
    int64_t *t = malloc((n ? n : 1) * sizeof *t);
    if (!r || !o || !t) {
        free(r);
        free(o);
        free(t);
        return REEL_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) o[i] = (int64_t)i;
    sort_ids(ds->classes, o, t, n);
    for (size_t i = 0; i < n; i++) r[o[i]] = (int64_t)i;
    free(t);
    free(ds->rank_of_id);
    free(ds->id_of_rank);
    ds->rank_of_id = r;
    ds->id_of_rank = o;
    ds->ranks_dirty = 0;
    return 0;
}

int reel__dataset_freeze(reel_dataset *ds, reel_error *err)
{
    if (update_ranks(ds) < 0) return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
    ds->frozen = 1;
    return REEL_OK;
}

int64_t reel__dataset_label(const reel_dataset *ds, size_t i)
{
    int64_t l = ds->items[i].label;
    if (ds->label_kind != REEL_LABELS_NAMED || l < 0) return l;
    return ds->rank_of_id[l];
}

static int check_entry(const reel_dataset *ds, const char *path, double start, double end, reel_error *err)
{
    if (!path || !*path) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: empty path");
    if (ds->frozen)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: the dataset is in use by a loader and frozen", path);
    if (!isfinite(start) || start < 0 || isnan(end) || (end >= 0 && end <= start) || isinf(end))
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: bad segment [%g, %g)", path, start, end);
    return REEL_OK;
}

static int add_entry(reel_dataset *ds, const char *path, int64_t label, double start, double end, reel_error *err)
{
    int st = check_entry(ds, path, start, end, err);
    if (st != REEL_OK) return st;
    if (ds->n == ds->alloc) {
        size_t na = ds->alloc ? ds->alloc * 2 : 256;
        reel_dataset_entry *ni = realloc(ds->items, na * sizeof *ni);
        if (!ni) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
        ds->items = ni;
        ds->alloc = na;
    }
    char *copy = strdup(path);
    if (!copy) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    reel_dataset_entry *e = &ds->items[ds->n++];
    e->path = copy;
    e->label = label;
    e->start = start;
    e->end = end < 0 ? -1 : end;
    e->record = -1;
    return REEL_OK;
}

int reel_dataset_add(reel_dataset *ds, const char *path, int64_t label, double start, double end, reel_error *err)
{
    if (!ds) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: NULL");
    if (label < -1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: label %lld < -1", path ? path : "dataset",
                               (long long)label);
    if (label >= 0 && ds->label_kind == REEL_LABELS_NAMED)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: integer label in a dataset labelled by class names",
                               path ? path : "dataset");
    int st = add_entry(ds, path, label, start, end, err);
    if (st == REEL_OK && label >= 0) ds->label_kind = REEL_LABELS_INT;
    return st;
}

int reel_dataset_add_named(reel_dataset *ds, const char *path, const char *class_name, double start, double end,
                           reel_error *err)
{
    if (!ds) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: NULL");
    if (!class_name || !*class_name) return reel_dataset_add(ds, path, -1, start, end, err);
    if (ds->label_kind == REEL_LABELS_INT)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: class name in a dataset with integer labels",
                               path ? path : "dataset");
    int st = check_entry(ds, path, start, end, err); /* before the class is registered */
    if (st != REEL_OK) return st;
    int64_t id;
    if (class_id(ds, class_name, &id) < 0) return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
    st = add_entry(ds, path, id, start, end, err);
    if (st == REEL_OK) ds->label_kind = REEL_LABELS_NAMED;
    return st;
}

int reel_dataset_get(const reel_dataset *ds, size_t i, reel_sample *out, reel_error *err)
{
    if (!ds || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: NULL argument");
    if (i >= ds->n) return reel__error_set(err, REEL_E_OUT_OF_RANGE, "dataset: index %zu >= size %zu", i, ds->n);
    if (ds->ranks_dirty && update_ranks((reel_dataset *)ds) < 0) /* building is single-threaded */
        return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
    const reel_dataset_entry *e = &ds->items[i];
    out->path = e->path;
    out->label = reel__dataset_label(ds, i);
    out->start = e->start;
    out->end = e->end;
    return REEL_OK;
}

size_t reel_dataset_get_num_classes(const reel_dataset *ds)
{
    return ds ? ds->nclasses : 0;
}

const char *reel_dataset_get_class_name(const reel_dataset *ds, int64_t label)
{
    if (!ds || label < 0 || (size_t)label >= ds->nclasses) return NULL;
    if (ds->ranks_dirty && update_ranks((reel_dataset *)ds) < 0) return NULL;
    return ds->classes[ds->id_of_rank[label]];
}

/* ---------------- directory scan ---------------- */

typedef struct scan_item {
    char *path;
    char *cls; /* first folder below the root, or NULL */
} scan_item;

typedef struct scan {
    scan_item *items;
    size_t n, alloc;
    char exts[64][16];
    int next;
} scan;

static int ext_wanted(const scan *sc, const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    for (int i = 0; i < sc->next; i++)
        if (strcasecmp(dot + 1, sc->exts[i]) == 0) return 1;
    return 0;
}

static int scan_dir(scan *sc, const char *dir, const char *cls, int depth, reel_error *err)
{
    if (depth > 32) return REEL_OK; /* symlink loops */
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return reel__error_set(err, e == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", dir, strerror(e));
    }
    int st = REEL_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        size_t need = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(need);
        if (!p) {
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        snprintf(p, need, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) != 0) {
            free(p);
            continue;
        }
        if (S_ISDIR(sb.st_mode)) {
            st = scan_dir(sc, p, cls ? cls : de->d_name, depth + 1, err);
            free(p);
            if (st < 0) break;
            continue;
        }
        if (!S_ISREG(sb.st_mode) || !ext_wanted(sc, de->d_name)) {
            free(p);
            continue;
        }
        if (sc->n == sc->alloc) {
            size_t na = sc->alloc ? sc->alloc * 2 : 1024;
            scan_item *ni = realloc(sc->items, na * sizeof *ni);
            if (!ni) {
                free(p);
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
                break;
            }
            sc->items = ni;
            sc->alloc = na;
        }
        char *c = cls ? strdup(cls) : NULL;
        if (cls && !c) {
            free(p);
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
            break;
        }
        sc->items[sc->n].path = p;
        sc->items[sc->n].cls = c;
        sc->n++;
    }
    closedir(d);
    return st;
}

static int cmp_scan(const void *a, const void *b)
{
    return strcmp(((const scan_item *)a)->path, ((const scan_item *)b)->path);
}

int reel_dataset_create_from_dir(reel_dataset **out, const char *dir, const char *extensions, reel_error *err)
{
    if (!out || !dir || !*dir) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: no directory");
    *out = NULL;
    scan sc;
    memset(&sc, 0, sizeof sc);
    const char *list = extensions ? extensions : "mp4,mkv,webm,avi,mov,m4v,ivf,mpg,mpeg,ts,flv,wmv";
    for (const char *p = list; *p && sc.next < 64;) {
        while (*p == ',' || *p == ' ' || *p == '.') p++;
        size_t n = strcspn(p, ", ");
        if (n == 0) break;
        if (n >= sizeof sc.exts[0])
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: extension too long in \"%s\"", dir, list);
        memcpy(sc.exts[sc.next], p, n);
        sc.exts[sc.next][n] = '\0';
        sc.next++;
        p += n;
    }
    if (sc.next == 0) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: no extensions given", dir);

    /* strip trailing slashes so paths read "dir/class/file" */
    size_t dl = strlen(dir);
    char *root = strdup(dir);
    if (!root) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
    while (dl > 1 && root[dl - 1] == '/') root[--dl] = '\0';

    struct stat sb;
    int st;
    if (stat(root, &sb) != 0) {
        st = reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", dir, strerror(errno));
        free(root);
        return st;
    }
    if (!S_ISDIR(sb.st_mode)) {
        free(root);
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: not a directory", dir);
    }
    st = scan_dir(&sc, root, NULL, 0, err);
    reel_dataset *ds = NULL;
    if (st == REEL_OK && sc.n == 0) st = reel__error_set(err, REEL_E_EMPTY, "%s: no video files (%s) found", dir, list);
    if (st == REEL_OK) {
        qsort(sc.items, sc.n, sizeof *sc.items, cmp_scan);
        st = reel_dataset_create(&ds, err);
        /* If every file sits in a class folder, label by class; files at the root get -1. */
        for (size_t i = 0; st == REEL_OK && i < sc.n; i++)
            st = reel_dataset_add_named(ds, sc.items[i].path, sc.items[i].cls, 0, -1, err);
    }
    for (size_t i = 0; i < sc.n; i++) {
        free(sc.items[i].path);
        free(sc.items[i].cls);
    }
    free(sc.items);
    free(root);
    if (st != REEL_OK) {
        reel_dataset_destroy(&ds);
        return st;
    }
    update_ranks(ds);
    *out = ds;
    return REEL_OK;
}

/* ---------------- manifests ---------------- */

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

int reel_dataset_create_from_manifest(reel_dataset **out, const char *path, reel_error *err)
{
    if (!out || !path || !*path) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: no manifest path");
    *out = NULL;
    int kind; /* 0 csv, 1 tsv, 2 jsonl */
    if (has_ext(path, "csv"))
        kind = 0;
    else if (has_ext(path, "tsv") || has_ext(path, "txt"))
        kind = 1;
    else if (has_ext(path, "jsonl") || has_ext(path, "ndjson") || has_ext(path, "json"))
        kind = 2;
    else
        return reel__error_set(err, REEL_E_INVALID_ARG,
                               "%s: unknown manifest type (expected .csv, .tsv, .txt, .jsonl or .ndjson)", path);
    size_t len = 0;
    char *text = read_file(path, &len, err);
    if (!text) return err ? err->status : REEL_E_IO;
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
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;

    reel_dataset *ds = NULL;
    st = reel_dataset_create(&ds, err);
    reel_buf full;
    reel__buf_init(&full);
    for (size_t i = 0; st == REEL_OK && i < r.n; i++) {
        const row *x = &r.v[i];
        const char *p = x->path;
        if (p[0] != '/' && slash) {
            full.len = 0;
            reel__buf_put(&full, path, dirlen + 1);
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
    }
    reel__buf_free(&full);
    rows_free(&r);
    if (st != REEL_OK) {
        reel_dataset_destroy(&ds);
        return st;
    }
    update_ranks(ds);
    *out = ds;
    return REEL_OK;
}

int reel_dataset_create_from_path(reel_dataset **out, const char *path, reel_error *err)
{
    if (!out || !path || !*path) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: no path");
    if (reel__io_is_remote(path)) {
        /* a packed store on a server or in a bucket: its index is
         * URL/store.idx, its shards are read with range requests */
        int st = reel__dataset_open_store(out, path, err);
        if (st == REEL_E_NOT_FOUND) {
            char name[512];
            reel__io_redact(path, name, sizeof name);
            return reel__error_set(err, st,
                                   "%s: no packed store there (no store.idx); remote datasets are packed "
                                   "stores for now (remote folders and manifests are not supported yet)",
                                   name);
        }
        return st;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        char idx[4200];
        struct stat ib;
        if (reel__store_join(idx, sizeof idx, path, REEL_STORE_INDEX_NAME) == 0 && stat(idx, &ib) == 0)
            return reel__dataset_open_store(out, path, err);
        return reel_dataset_create_from_dir(out, path, NULL, err);
    }
    return reel_dataset_create_from_manifest(out, path, err);
}

/* A packed store's records as a dataset: the same order, labels and class
 * names as the dataset it was built from; the loader reads them through the
 * store source (pipeline/source_store.c). */
int reel__dataset_open_store(reel_dataset **out, const char *dir, reel_error *err)
{
    *out = NULL;
    reel_store *store = NULL;
    int st = reel_store_open(&store, dir, err);
    if (st != REEL_OK) return st;
    reel_store_info info;
    reel_store_get_info(store, &info);
    reel_dataset *ds = NULL;
    st = reel_dataset_create(&ds, err);
    for (int64_t i = 0; st == REEL_OK && i < info.num_records; i++) {
        reel_store_record r;
        st = reel_store_get_record(store, i, &r, err);
        if (st != REEL_OK) break;
        if (r.class_name[0])
            st = reel_dataset_add_named(ds, r.source_path, r.class_name, 0, -1, err);
        else
            st = reel_dataset_add(ds, r.source_path, r.label, 0, -1, err);
        if (st == REEL_OK) ds->items[ds->n - 1].record = i;
    }
    if (st == REEL_OK && ds->n == 0) st = reel__error_set(err, REEL_E_EMPTY, "%s: the store has no records", dir);
    if (st != REEL_OK) {
        reel_dataset_destroy(&ds);
        reel_store_close(&store);
        return st;
    }
    ds->store = store;
    *out = ds;
    return REEL_OK;
}
