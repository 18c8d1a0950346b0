/* dataset.c: the dataset itself: entries added through the C API, class
 * names to sorted indices, a packed store's records as a dataset, and
 * reel_dataset_create_from_path choosing among folder, manifest and store.
 * The folder scan is dataset_scan.c, the manifest parsers dataset_manifest.c. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/dataset_internal.h"
#include "core/error.h"
#include "core/hash.h"
#include "store/store_for_pipeline.h"
#include "io/io_front.h"

#include <errno.h>
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
    for (size_t i = 0; i < ds->n; i++) {
        free(ds->items[i].path);
        free(ds->items[i].shown);
        free(ds->items[i].refused);
    }
    for (size_t i = 0; i < ds->nclasses; i++) free(ds->classes[i]);
    for (size_t i = 0; i < ds->nskipped; i++) free(ds->skipped[i]);
    free(ds->skipped);
    free(ds->items);
    free(ds->classes);
    free(ds->hash);
    free(ds->rank_of_id);
    free(ds->id_of_rank);
    reel_store_close(&ds->store);
    free(ds->store_shown);
    free(ds);
    *pds = NULL;
}

size_t reel_dataset_get_size(const reel_dataset *ds)
{
    return ds ? ds->n : 0;
}

uint64_t reel_dataset_get_fingerprint(const reel_dataset *ds)
{
    if (!ds) return 0;
    uint64_t h = REEL_FNV_OFFSET;
    for (size_t i = 0; i < ds->n; i++) {
        const reel_dataset_entry *e = &ds->items[i];
        size_t end = strcspn(e->path, "?"), start = end, slashes = 0;
        while (start > 0 && !(e->path[start - 1] == '/' && ++slashes == 2)) start--;
        h = reel__fnv1a(h, e->path + start, end - start);
        h = reel__fnv1a(h, "", 1);
        h = reel__fnv1a(h, &e->start, sizeof e->start);
        h = reel__fnv1a(h, &e->end, sizeof e->end);
    }
    return h;
}

static uint64_t hash_str(const char *s)
{
    return reel__fnv1a(REEL_FNV_OFFSET, s, strlen(s));
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

int reel__dataset_update_ranks(reel_dataset *ds)
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
    if (reel__dataset_update_ranks(ds) < 0) return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
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
    const int remote = reel__io_is_remote(path);
    char *copy = strdup(path), *shown = NULL;
    if (copy && remote) {
        /* decided here, once: the name the entry shows in messages */
        char name[1024];
        reel__io_redact(path, name, sizeof name);
        if (strcmp(name, path) != 0 && !(shown = strdup(name))) {
            free(copy);
            copy = NULL;
        }
    }
    if (!copy) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    reel_dataset_entry *e = &ds->items[ds->n++];
    e->path = copy;
    e->shown = shown;
    e->label = label;
    e->start = start;
    e->end = end < 0 ? -1 : end;
    e->record = -1;
    e->remote = remote;
    e->refused = NULL;
    ds->nremote += (size_t)remote;
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
    if (ds->ranks_dirty && reel__dataset_update_ranks((reel_dataset *)ds) < 0) /* building is single-threaded */
        return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
    const reel_dataset_entry *e = &ds->items[i];
    if (e->refused) return reel__error_set(err, REEL_E_INVALID_ARG, "%s", e->refused);
    memset(out, 0, sizeof *out); /* reserved too (common.h) */
    out->path = e->path;
    out->label = reel__dataset_label(ds, i);
    out->start = e->start;
    out->end = e->end;
    return REEL_OK;
}

size_t reel_dataset_get_num_skipped(const reel_dataset *ds)
{
    return ds ? ds->nskipped : 0;
}

int reel_dataset_get_skipped(const reel_dataset *ds, size_t i, const char **note, reel_error *err)
{
    if (!ds || !note) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_dataset_get_skipped: NULL argument");
    if (i >= ds->nskipped)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "dataset: skipped note %zu of %zu", i, ds->nskipped);
    *note = ds->skipped[i];
    return REEL_OK;
}

size_t reel_dataset_get_num_classes(const reel_dataset *ds)
{
    return ds ? ds->nclasses : 0;
}

int reel_dataset_get_class_name(const reel_dataset *ds, int64_t label, const char **name, reel_error *err)
{
    if (!ds || !name) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_dataset_get_class_name: NULL argument");
    if (label < 0 || (size_t)label >= ds->nclasses)
        return reel__error_set(err, REEL_E_OUT_OF_RANGE, "dataset: label %lld of %zu class names", (long long)label,
                               ds->nclasses);
    if (ds->ranks_dirty && reel__dataset_update_ranks((reel_dataset *)ds) < 0) /* building is single-threaded */
        return reel__error_set(err, REEL_E_NOMEM, "dataset: out of memory");
    *name = ds->classes[ds->id_of_rank[label]];
    return REEL_OK;
}

int reel_dataset_create_from_path(reel_dataset **out, const char *path, reel_error *err)
{
    if (!out || !path || !*path) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: no path");
    if (reel__io_is_remote(path)) {
        /* a manifest by URL; else a packed store on a server or in a bucket
         * (its index is URL/store.idx, its shards read with range
         * requests); else an s3:// prefix, listed, as a local folder */
        if (reel__manifest_kind(path) >= 0) return reel_dataset_create_from_manifest(out, path, err);
        reel_error e;
        int st = reel__dataset_open_store(out, path, &e);
        if (st != REEL_E_NOT_FOUND) {
            if (st != REEL_OK && err) *err = e;
            return st;
        }
        char name[512];
        reel__io_redact(path, name, sizeof name);
        if (strncasecmp(path, "s3://", 5) != 0)
            return reel__error_set(err, st,
                                   "%s: no packed store there (no store.idx); an http(s) dataset is a store or a "
                                   "manifest (.csv, .tsv, .jsonl): HTTP cannot list a folder",
                                   name);
        char **names = NULL;
        size_t n = 0;
        st = reel__io_list(path, NULL, &names, &n, err);
        if (st != REEL_OK) return st;
        st = reel__dataset_from_names(out, path, name, names, n, err);
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
        return st;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        if (reel__store_dir_has_index(path)) return reel__dataset_open_store(out, path, err);
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
    reel_store_get_info(store, &info, NULL);
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
    char shown[1024];
    reel__io_redact(dir, shown, sizeof shown);
    if (!(ds->store_shown = strdup(shown))) {
        reel_dataset_destroy(&ds);
        reel_store_close(&store);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", shown);
    }
    ds->store = store;
    ds->store_remote = reel__io_is_remote(dir);
    *out = ds;
    return REEL_OK;
}

int reel__dataset_is_remote(const reel_dataset *ds)
{
    return ds->store ? ds->store_remote : ds->nremote > 0;
}
