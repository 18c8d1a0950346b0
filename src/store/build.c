/* build.c: a store's files as a build writes them: one part's journal and
 * shard files (4 KiB-aligned records, each synced before its journal entry,
 * so a killed build resumes after its last journaled record), the part's
 * done marker, and the merge of the parts' journals into the index. What
 * goes into a record is the builder's (src/pack); this file knows only the
 * byte formats (docs/STORE.md). */
#define _GNU_SOURCE
#include "store/store_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void journal_name(char *out, size_t size, int part, int count)
{
    snprintf(out, size, "part-%05d-of-%05d.journal", part, count);
}

static void done_name(char *out, size_t size, int part, int count)
{
    snprintf(out, size, "part-%05d-of-%05d.done", part, count);
}

static int write_all(int fd, const void *buf, size_t n, int64_t off)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

static uint8_t *read_whole(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= 0 && (buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
        size_t done = 0;
        while (done < (size_t)st.st_size) {
            ssize_t r = pread(fd, buf + done, (size_t)st.st_size - done, (off_t)done);
            if (r <= 0) {
                if (r < 0 && errno == EINTR) continue;
                break;
            }
            done += (size_t)r;
        }
        *n = done;
    }
    close(fd);
    return buf;
}

/* ---------------------------------------------------------------- a part's shards */

/* Opens shard o->seq of the part as the current one, its data ending at
 * `len` (truncated there when `truncate_to`). */
static int open_shard(reel__store_part *o, int truncate_to, int64_t len, reel_error *err)
{
    char name[64], path[4200];
    reel__store_shard_name(name, sizeof name, (uint32_t)o->part, o->seq);
    if (reel__store_join(path, sizeof path, o->dir, name) != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", o->dir);
    if (o->sfd >= 0) close(o->sfd);
    o->sfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (o->sfd < 0) return reel__error_set(err, REEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
    if (truncate_to && ftruncate(o->sfd, (off_t)len) != 0)
        return reel__error_set(err, REEL_E_IO, "%s: cannot truncate: %s", path, strerror(errno));
    o->off = len;
    return REEL_OK;
}

/* Removes this part's shards with a sequence number above `keep`. */
static void remove_shards_after(const reel__store_part *o, int64_t keep)
{
    DIR *d = opendir(o->dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        unsigned p, s;
        char tail[8];
        if (sscanf(de->d_name, "shard-%5u-%5u.bi%1s", &p, &s, tail) == 3 && (int)p == o->part && (int64_t)s > keep) {
            char path[4200];
            if (reel__store_join(path, sizeof path, o->dir, de->d_name) == 0) unlink(path);
        }
    }
    closedir(d);
}

int reel__store_part_write(reel__store_part *o, reel__store_rec *rec, const reel__bytes *b, reel_error *err)
{
    if (b->len > 0) {
        int64_t at = (o->off + REEL_STORE_ALIGN - 1) / REEL_STORE_ALIGN * REEL_STORE_ALIGN;
        if (o->off > 0 && (uint64_t)at + b->len > o->shard_size) {
            o->seq++;
            int st = open_shard(o, 1, 0, err);
            if (st != REEL_OK) return st;
            at = 0;
        }
        static const uint8_t zeros[REEL_STORE_ALIGN];
        if (at > o->off && write_all(o->sfd, zeros, (size_t)(at - o->off), o->off) != 0)
            return reel__error_set(err, REEL_E_IO, "%s: cannot write a shard: %s", o->dir, strerror(errno));
        if (write_all(o->sfd, b->data, b->len, at) != 0 || fdatasync(o->sfd) != 0)
            return reel__error_set(err, REEL_E_IO, "%s: cannot write a shard: %s", o->dir, strerror(errno));
        rec->offset = (uint64_t)at;
        o->off = at + (int64_t)b->len;
    } else {
        rec->offset = 0;
    }
    rec->part = (uint32_t)o->part;
    rec->shard_seq = o->seq;
    size_t n = reel__store_rec_size(rec);
    uint8_t *e = malloc(n);
    if (!e) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    reel__store_rec_write(e, rec);
    int bad = write_all(o->jfd, e, n, o->jlen) != 0 || fdatasync(o->jfd) != 0;
    free(e);
    if (bad) return reel__error_set(err, REEL_E_IO, "%s: cannot write the journal: %s", o->dir, strerror(errno));
    o->jlen += (int64_t)n;
    return REEL_OK;
}

/* Reads a part's journal: header params and the valid entries (a torn last
 * entry is dropped; *valid_len is where the valid part ends). */
static int read_journal(const char *path, reel__store_params *p, reel__store_rec **recs, int64_t *nrec,
                        int64_t *valid_len, int tolerate_tail, reel_error *err)
{
    size_t n = 0;
    uint8_t *buf = read_whole(path, &n);
    *recs = NULL;
    *nrec = 0;
    if (!buf) return reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: cannot read", path);
    uint64_t dummy;
    int st = reel__store_header_parse(buf, n, REEL_STORE_JOURNAL_MAGIC, path, p, &dummy, err);
    if (st != REEL_OK) {
        free(buf);
        return st;
    }
    size_t off = REEL_STORE_HEADER_BYTES, alloc = 0;
    reel__store_rec *r = NULL;
    int64_t k = 0;
    while (off < n) {
        reel__store_rec one;
        size_t used = 0;
        reel_error perr;
        if (reel__store_rec_parse(buf + off, n - off, path, p->audio, &one, &used, &perr) != REEL_OK) {
            if (tolerate_tail) break;
            for (int64_t i = 0; i < k; i++) reel__store_rec_free(&r[i]);
            free(r);
            free(buf);
            if (err) *err = perr;
            return perr.status;
        }
        if ((size_t)k == alloc) {
            alloc = alloc ? alloc * 2 : 256;
            reel__store_rec *nr = realloc(r, alloc * sizeof *nr);
            if (!nr) {
                reel__store_rec_free(&one);
                for (int64_t i = 0; i < k; i++) reel__store_rec_free(&r[i]);
                free(r);
                free(buf);
                return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
            }
            r = nr;
        }
        r[k++] = one;
        off += used;
    }
    free(buf);
    *recs = r;
    *nrec = k;
    *valid_len = (int64_t)off;
    return REEL_OK;
}

static int params_equal(const reel__store_params *a, const reel__store_params *b)
{
    return a->format == b->format && a->zstd_level == b->zstd_level && a->short_side == b->short_side &&
           a->width == b->width && a->height == b->height && a->quality == b->quality && a->gop == b->gop &&
           a->crf == b->crf && a->every == b->every && a->part_count == b->part_count && a->fps == b->fps &&
           a->shard_size == b->shard_size && a->sampler == b->sampler && a->min_frames == b->min_frames &&
           a->max_frames == b->max_frames && a->frames == b->frames && a->frame_factor == b->frame_factor &&
           a->color == b->color && a->dtype == b->dtype && a->audio == b->audio && a->audio_rate == b->audio_rate &&
           a->audio_channels == b->audio_channels && a->audio_stream == b->audio_stream;
}

/* Opens (or resumes) the part's journal and shard; *done = entries found. */
static int open_part(reel__store_part *o, const reel__store_params *params, const int64_t *list, int64_t n,
                     int64_t *done, reel_error *err)
{
    char jname[64], jpath[4200];
    journal_name(jname, sizeof jname, o->part, o->count);
    if (reel__store_join(jpath, sizeof jpath, o->dir, jname) != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", o->dir);
    *done = 0;
    struct stat st;
    if (stat(jpath, &st) == 0 && st.st_size >= REEL_STORE_HEADER_BYTES) {
        reel__store_params jp;
        reel__store_rec *recs = NULL;
        int64_t nrec = 0, valid = 0;
        int r = read_journal(jpath, &jp, &recs, &nrec, &valid, 1, err);
        if (r != REEL_OK) return r;
        int same = params_equal(&jp, params);
        int64_t k = 0;
        while (same && k < nrec && k < n && recs[k].sample == list[k]) k++;
        int64_t last_seq = 0, last_end = 0;
        if (k > 0) {
            last_seq = recs[k - 1].shard_seq;
            for (int64_t i = 0; i < k; i++)
                if (recs[i].shard_seq == (uint32_t)last_seq && recs[i].length > 0)
                    last_end = (int64_t)(recs[i].offset + recs[i].length);
        }
        for (int64_t i = 0; i < nrec; i++) reel__store_rec_free(&recs[i]);
        free(recs);
        if (!same)
            return reel__error_set(err, REEL_E_INVALID_ARG,
                                   "%s: a build with other settings (or another dataset split) is in this folder; "
                                   "use the same options, or another output folder",
                                   jpath);
        if (k != nrec) valid = -1; /* entries that do not follow the list: start over from k */
        o->jfd = open(jpath, O_RDWR | O_CLOEXEC);
        if (o->jfd < 0) return reel__error_set(err, REEL_E_IO, "%s: cannot open: %s", jpath, strerror(errno));
        if (valid < 0) {
            /* re-derive the valid length of the first k entries */
            size_t nb = 0;
            uint8_t *buf = read_whole(jpath, &nb);
            size_t off = REEL_STORE_HEADER_BYTES;
            for (int64_t i = 0; buf && i < k; i++) {
                reel__store_rec one;
                size_t used = 0;
                if (reel__store_rec_parse(buf + off, nb - off, jpath, params->audio, &one, &used, NULL) != REEL_OK)
                    break;
                reel__store_rec_free(&one);
                off += used;
            }
            free(buf);
            valid = (int64_t)off;
        }
        if (ftruncate(o->jfd, (off_t)valid) != 0)
            return reel__error_set(err, REEL_E_IO, "%s: cannot truncate: %s", jpath, strerror(errno));
        o->jlen = valid;
        o->seq = (uint32_t)last_seq;
        remove_shards_after(o, last_seq);
        *done = k;
        return open_shard(o, 1, last_end, err);
    }
    o->jfd = open(jpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->jfd < 0) return reel__error_set(err, REEL_E_IO, "%s: cannot create: %s", jpath, strerror(errno));
    uint8_t hdr[REEL_STORE_HEADER_BYTES];
    reel__store_header_write(hdr, REEL_STORE_JOURNAL_MAGIC, params, 0);
    if (write_all(o->jfd, hdr, sizeof hdr, 0) != 0 || fdatasync(o->jfd) != 0)
        return reel__error_set(err, REEL_E_IO, "%s: cannot write: %s", jpath, strerror(errno));
    o->jlen = REEL_STORE_HEADER_BYTES;
    o->seq = 0;
    remove_shards_after(o, -1);
    return open_shard(o, 1, 0, err);
}

static int mkdir_p(const char *dir, reel_error *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return reel__error_set(err, REEL_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return reel__error_set(err, REEL_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return reel__error_set(err, REEL_E_IO, "%s: not a directory", dir);
    return REEL_OK;
}

int reel__store_part_open(reel__store_part *o, const char *dir, int part, int count, const reel__store_params *p,
                          const int64_t *list, int64_t n, int64_t *done, reel_error *err)
{
    memset(o, 0, sizeof *o);
    o->dir = dir;
    o->part = part;
    o->count = count;
    o->jfd = o->sfd = -1;
    o->shard_size = p->shard_size;
    *done = 0;
    int st = mkdir_p(dir, err);
    return st != REEL_OK ? st : open_part(o, p, list, n, done, err);
}

int reel__store_part_close(reel__store_part *o, int64_t records, reel_error *err)
{
    if (o->jfd >= 0) close(o->jfd);
    if (o->sfd >= 0) close(o->sfd);
    o->jfd = o->sfd = -1;
    if (records < 0) return REEL_OK;
    char dname[64], dpath[4200];
    done_name(dname, sizeof dname, o->part, o->count);
    if (reel__store_join(dpath, sizeof dpath, o->dir, dname) != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", o->dir);
    FILE *f = fopen(dpath, "w");
    int bad = !f || fprintf(f, "%lld\n", (long long)records) < 0;
    if (f && fclose(f) != 0) bad = 1;
    return bad ? reel__error_set(err, REEL_E_IO, "%s: cannot write: %s", dpath, strerror(errno)) : REEL_OK;
}

/* ---------------------------------------------------------------- merge */

static int cmp_rec(const void *a, const void *b)
{
    const reel__store_rec *x = a, *y = b;
    return x->sample < y->sample ? -1 : x->sample > y->sample;
}

/* The part count of the journals in out_dir (all must agree). */
static int part_count(const char *out_dir, int *count, reel_error *err)
{
    DIR *d = opendir(out_dir);
    if (!d)
        return reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: cannot open: %s", out_dir,
                               strerror(errno));
    *count = 0;
    struct dirent *de;
    int mixed = 0;
    while ((de = readdir(d))) {
        int p, n;
        char tail[16];
        if (sscanf(de->d_name, "part-%5d-of-%5d.%15s", &p, &n, tail) == 3 && !strcmp(tail, "journal")) {
            if (*count && n != *count) mixed = 1;
            *count = n;
        }
    }
    closedir(d);
    if (mixed)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: journals of builds with different part counts", out_dir);
    if (*count < 1)
        return reel__error_set(err, REEL_E_NOT_FOUND, "%s: no build journal (nothing was packed here)", out_dir);
    return REEL_OK;
}

/* The record count written in part p's done marker, or -1 when the part is
 * not complete (no marker) or -2 when the marker says nothing readable. */
static long long done_count(const char *out_dir, int p, int count)
{
    char name[64], path[4200];
    done_name(name, sizeof name, p, count);
    if (reel__store_join(path, sizeof path, out_dir, name) != 0) return -1;
    size_t dn = 0;
    uint8_t *db = read_whole(path, &dn);
    if (!db) return -1;
    long long expect = -2;
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%.*s", (int)(dn < 31 ? dn : 31), (const char *)db);
    free(db);
    if (sscanf(tmp, "%lld", &expect) != 1) expect = -2;
    return expect;
}

typedef struct merged {
    reel__store_rec *all;
    int64_t n, alloc;
    reel__store_params params;
} merged;

/* Adds part p's journal to m (its count checked against the marker's). */
static int add_part(const char *out_dir, int p, int count, long long expect, merged *m, reel_error *err)
{
    char name[64], path[4200];
    journal_name(name, sizeof name, p, count);
    if (reel__store_join(path, sizeof path, out_dir, name) != 0)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", out_dir);
    reel__store_params params;
    reel__store_rec *recs = NULL;
    int64_t nrec = 0, valid = 0;
    int st = read_journal(path, &params, &recs, &nrec, &valid, 0, err);
    if (st != REEL_OK) return st;
    if (p == 0)
        m->params = params;
    else if (!params_equal(&m->params, &params))
        st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: parts were built with different settings", out_dir);
    if (st == REEL_OK && expect < 0)
        st = reel__error_set(err, REEL_E_CORRUPT, "%s: part %d's done marker holds no record count", out_dir, p);
    else if (st == REEL_OK && nrec != expect)
        st = reel__error_set(err, REEL_E_CORRUPT, "%s: part %d has %lld records, its marker says %lld", out_dir, p,
                             (long long)nrec, expect);
    if (st == REEL_OK && m->n + nrec > m->alloc) {
        int64_t alloc = (m->n + nrec) * 2;
        reel__store_rec *na = realloc(m->all, (size_t)alloc * sizeof *na);
        if (!na)
            st = reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
        else {
            m->all = na;
            m->alloc = alloc;
        }
    }
    for (int64_t i = 0; i < nrec; i++) {
        if (st == REEL_OK)
            m->all[m->n++] = recs[i];
        else
            reel__store_rec_free(&recs[i]);
    }
    free(recs);
    return st;
}

/* Writes the index of m's records (sorted) atomically: .tmp, fsync, rename. */
static int write_index(const char *out_dir, const merged *m, reel_error *err)
{
    size_t total = REEL_STORE_HEADER_BYTES + 4;
    for (int64_t i = 0; i < m->n; i++) total += reel__store_rec_size(&m->all[i]);
    uint8_t *buf = malloc(total);
    if (!buf) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    reel__store_header_write(buf, REEL_STORE_MAGIC, &m->params, (uint64_t)m->n);
    size_t off = REEL_STORE_HEADER_BYTES;
    for (int64_t i = 0; i < m->n; i++) {
        reel__store_rec_write(buf + off, &m->all[i]);
        off += reel__store_rec_size(&m->all[i]);
    }
    uint32_t crc = reel__crc32(0, buf, off);
    for (int i = 0; i < 4; i++) buf[off + (size_t)i] = (uint8_t)(crc >> (8 * i));
    char tmp[4300], path[4200];
    int st = REEL_OK;
    if (reel__store_join(path, sizeof path, out_dir, REEL_STORE_INDEX_NAME) != 0)
        st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: path too long", out_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = st == REEL_OK ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (st == REEL_OK && (fd < 0 || write_all(fd, buf, total, 0) != 0 || fsync(fd) != 0))
        st = reel__error_set(err, REEL_E_IO, "%s: cannot write: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
    if (st == REEL_OK && rename(tmp, path) != 0)
        st = reel__error_set(err, REEL_E_IO, "%s: cannot rename: %s", path, strerror(errno));
    free(buf);
    return st;
}

int reel_pack_merge(const char *out_dir, reel_error *err)
{
    if (!out_dir || !*out_dir) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_pack_merge: out_dir is required");
    int count = 0;
    int st = part_count(out_dir, &count, err);
    if (st != REEL_OK) return st;
    char missing[512] = "";
    merged m;
    memset(&m, 0, sizeof m);
    for (int p = 0; p < count && st == REEL_OK; p++) {
        long long expect = done_count(out_dir, p, count);
        if (expect == -1) {
            size_t l = strlen(missing);
            snprintf(missing + l, sizeof missing - l, "%s%d", l ? ", " : "", p);
            continue;
        }
        st = add_part(out_dir, p, count, expect, &m, err);
    }
    if (st == REEL_OK && missing[0])
        st = reel__error_set(err, REEL_E_NOT_FOUND, "%s: parts not complete (of %d): %s", out_dir, count, missing);
    if (st == REEL_OK) {
        qsort(m.all, (size_t)m.n, sizeof *m.all, cmp_rec);
        for (int64_t i = 1; i < m.n && st == REEL_OK; i++)
            if (m.all[i].sample == m.all[i - 1].sample)
                st = reel__error_set(err, REEL_E_CORRUPT, "%s: video %lld was built by two parts", out_dir,
                                     (long long)m.all[i].sample);
    }
    if (st == REEL_OK) st = write_index(out_dir, &m, err);
    for (int64_t i = 0; i < m.n; i++) reel__store_rec_free(&m.all[i]);
    free(m.all);
    return st;
}
