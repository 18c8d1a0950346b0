/* dataset_scan.c: a dataset from a folder in the Kinetics layout (the first
 * folder level names the class; videos found by extension, sorted). Each
 * folder is scanned once (by device and inode), however many links lead to
 * it; the links not followed are the dataset's skipped notes. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline/dataset_internal.h"
#include "core/error.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct scan_item {
    char *path;
    char *cls; /* first folder below the root, or NULL */
} scan_item;

typedef struct scan {
    scan_item *items;
    size_t n, alloc;
    char exts[64][16];
    int next;
    /* folders scanned, by (device, inode): an open-addressing set */
    struct seen_dir {
        dev_t dev;
        ino_t ino;
        int used;
    } * seen;
    size_t nseen, seen_cap;
    char **skipped; /* "<path>: ..." for each folder link not followed */
    size_t nskipped;
} scan;

/* 1 if the folder was scanned already, else records it (0); -1: no memory. */
static int seen_before(scan *sc, const struct stat *sb)
{
    if (2 * (sc->nseen + 1) > sc->seen_cap) {
        size_t nc = sc->seen_cap ? 2 * sc->seen_cap : 256;
        struct seen_dir *nt = calloc(nc, sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < sc->seen_cap; i++) {
            if (!sc->seen[i].used) continue;
            size_t h = ((uint64_t)sc->seen[i].dev * 0x9E3779B97F4A7C15ull ^ (uint64_t)sc->seen[i].ino) % nc;
            while (nt[h].used) h = (h + 1) % nc;
            nt[h] = sc->seen[i];
        }
        free(sc->seen);
        sc->seen = nt;
        sc->seen_cap = nc;
    }
    size_t h = ((uint64_t)sb->st_dev * 0x9E3779B97F4A7C15ull ^ (uint64_t)sb->st_ino) % sc->seen_cap;
    for (; sc->seen[h].used; h = (h + 1) % sc->seen_cap)
        if (sc->seen[h].dev == sb->st_dev && sc->seen[h].ino == sb->st_ino) return 1;
    sc->seen[h] = (struct seen_dir){ sb->st_dev, sb->st_ino, 1 };
    sc->nseen++;
    return 0;
}

static int note_skipped(scan *sc, const char *path, const char *why)
{
    char **ns = realloc(sc->skipped, (sc->nskipped + 1) * sizeof *ns);
    if (!ns) return -1;
    sc->skipped = ns;
    size_t need = strlen(path) + strlen(why) + 3;
    if (!(ns[sc->nskipped] = malloc(need))) return -1;
    snprintf(ns[sc->nskipped++], need, "%s: %s", path, why);
    return 0;
}

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
    if (depth > 64) /* folders nested this deep on purpose: say so rather than go on */
        return note_skipped(sc, dir, "skipped: folders nested more than 64 deep")
                   ? reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir)
                   : REEL_OK;
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
            int again = seen_before(sc, &sb);
            if (again) { /* a link back to a folder scanned already (a loop, or two ways in) */
                if (again < 0 || note_skipped(sc, p,
                                              "skipped: a link to a folder scanned already (a symlink loop, "
                                              "or a second way to the same folder)") < 0)
                    st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
                free(p);
                if (st < 0) break;
                continue;
            }
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

/* Reads the comma-separated extension list into sc. */
static int parse_exts(scan *sc, const char *list, const char *name, reel_error *err)
{
    for (const char *p = list; *p && sc->next < 64;) {
        while (*p == ',' || *p == ' ' || *p == '.') p++;
        size_t n = strcspn(p, ", ");
        if (n == 0) break;
        if (n >= sizeof sc->exts[0])
            return reel__error_set(err, REEL_E_INVALID_ARG, "%s: extension too long in \"%s\"", name, list);
        memcpy(sc->exts[sc->next], p, n);
        sc->exts[sc->next][n] = '\0';
        sc->next++;
        p += n;
    }
    if (sc->next == 0) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: no extensions given", name);
    return REEL_OK;
}

/* Sorts the items found into a dataset (labelled by class folder; files at
 * the root get -1), and frees them. */
static int finish(scan *sc, int st, const char *name, const char *list, reel_dataset **out, reel_error *err)
{
    reel_dataset *ds = NULL;
    if (st == REEL_OK && sc->n == 0)
        st = reel__error_set(err, REEL_E_EMPTY, "%s: no video files (%s) found", name, list);
    if (st == REEL_OK) {
        qsort(sc->items, sc->n, sizeof *sc->items, cmp_scan);
        st = reel_dataset_create(&ds, err);
        for (size_t i = 0; st == REEL_OK && i < sc->n; i++)
            st = reel_dataset_add_named(ds, sc->items[i].path, sc->items[i].cls, 0, -1, err);
    }
    for (size_t i = 0; i < sc->n; i++) {
        free(sc->items[i].path);
        free(sc->items[i].cls);
    }
    free(sc->items);
    free(sc->seen);
    if (ds) { /* the dataset keeps the notes of what the scan did not follow */
        ds->skipped = sc->skipped;
        ds->nskipped = sc->nskipped;
    } else {
        for (size_t i = 0; i < sc->nskipped; i++) free(sc->skipped[i]);
        free(sc->skipped);
    }
    if (st != REEL_OK) {
        reel_dataset_destroy(&ds);
        return st;
    }
    reel__dataset_update_ranks(ds);
    *out = ds;
    return REEL_OK;
}

static const char *const k_default_exts = "mp4,mkv,webm,avi,mov,m4v,ivf,mpg,mpeg,ts,flv,wmv";

int reel_dataset_create_from_dir(reel_dataset **out, const char *dir, const char *extensions, reel_error *err)
{
    if (!out || !dir || !*dir) return reel__error_set(err, REEL_E_INVALID_ARG, "dataset: no directory");
    *out = NULL;
    scan sc;
    memset(&sc, 0, sizeof sc);
    const char *list = extensions ? extensions : k_default_exts;
    int st = parse_exts(&sc, list, dir, err);
    if (st != REEL_OK) return st;

    /* strip trailing slashes so paths read "dir/class/file" */
    size_t dl = strlen(dir);
    char *root = strdup(dir);
    if (!root) return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir);
    while (dl > 1 && root[dl - 1] == '/') root[--dl] = '\0';

    struct stat sb;
    if (stat(root, &sb) != 0) {
        st = reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", dir, strerror(errno));
        free(root);
        return st;
    }
    if (!S_ISDIR(sb.st_mode)) {
        free(root);
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: not a directory", dir);
    }
    st = seen_before(&sc, &sb) < 0 ? reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", dir)
                                   : scan_dir(&sc, root, NULL, 0, err);
    free(root);
    return finish(&sc, st, dir, list, out, err);
}

int reel__dataset_from_names(reel_dataset **out, const char *root, const char *name, char *const *rel, size_t n,
                             reel_error *err)
{
    *out = NULL;
    scan sc;
    memset(&sc, 0, sizeof sc);
    int st = parse_exts(&sc, k_default_exts, name, err);
    if (st != REEL_OK) return st;
    size_t rl = strlen(root);
    while (rl > 0 && root[rl - 1] == '/') rl--;
    for (size_t i = 0; st == REEL_OK && i < n; i++) {
        const char *r = rel[i];
        /* hidden files and folders are skipped, as in a local scan */
        int hidden = r[0] == '.' || strstr(r, "/.") != NULL;
        const char *base = strrchr(r, '/');
        if (hidden || !ext_wanted(&sc, base ? base + 1 : r)) continue;
        if (sc.n == sc.alloc) {
            size_t na = sc.alloc ? sc.alloc * 2 : 1024;
            scan_item *ni = realloc(sc.items, na * sizeof *ni);
            if (!ni) {
                st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
                break;
            }
            sc.items = ni;
            sc.alloc = na;
        }
        size_t need = rl + strlen(r) + 2;
        char *p = malloc(need);
        const char *cs = strchr(r, '/');
        char *c = cs ? strndup(r, (size_t)(cs - r)) : NULL;
        if (!p || (cs && !c)) {
            free(p);
            free(c);
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", name);
            break;
        }
        snprintf(p, need, "%.*s/%s", (int)rl, root, r);
        sc.items[sc.n].path = p;
        sc.items[sc.n].cls = c;
        sc.n++;
    }
    return finish(&sc, st, name, k_default_exts, out, err);
}
