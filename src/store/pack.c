/* pack.c: building a store: one part of a dataset decoded with the fused
 * resize, encoded by worker threads, written in dataset order into 4 KiB-
 * aligned records of shard files with a journal that makes a killed build
 * resumable; and the merge of the parts' journals into the index. */
#define _GNU_SOURCE
#include "store/store_internal.h"
#include "core/clock.h"
#include "pipeline/dataset_internal.h"
#include "pipeline/sampler_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void reel_pack_default_settings(reel_pack_settings *s)
{
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->format = REEL_STORE_FORMAT_JPEG;
    s->short_side = 256;
    s->every = 1;
    s->quality = 90;
    s->gop = 8;
    s->crf = 18;
    s->shard_size = (int64_t)1 << 30;
    s->part_count = 1;
}

static int check_settings(const reel_pack_settings *s, reel_error *err)
{
    if (s->format < REEL_STORE_FORMAT_JPEG || s->format > REEL_STORE_FORMAT_H264)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: unknown format %d", (int)s->format);
    if ((s->width > 0) != (s->height > 0) || s->width < 0 || s->height < 0 || s->width > 16384 || s->height > 16384)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: give both width and height (1..16384), or neither");
    if (s->width <= 0 && (s->short_side < 1 || s->short_side > 16384))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: short_side %d not in [1, 16384]", s->short_side);
    if (!(s->fps >= 0 && s->fps <= 1000))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: fps must be in [0, 1000]");
    if (s->fps > 0 && s->every > 1)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: give fps or every, not both");
    if (s->every < 0 || s->every > 1000000)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: bad every %d", s->every);
    if (s->format == REEL_STORE_FORMAT_JPEG && (s->quality < 1 || s->quality > 100))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: quality %d not in [1, 100]", s->quality);
    if (s->format == REEL_STORE_FORMAT_RAW && (s->zstd_level < 0 || s->zstd_level > 19))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: zstd level %d not in [0, 19]", s->zstd_level);
    if (s->format == REEL_STORE_FORMAT_H264 && (s->gop < 1 || s->gop > 1000 || s->crf < 0 || s->crf > 51))
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: gop must be in [1, 1000] and crf in [0, 51]");
    if (s->shard_size < REEL_STORE_ALIGN)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: shard_size must be at least %d", REEL_STORE_ALIGN);
    if (s->part_count < 1 || s->part_index < 0 || s->part_index >= s->part_count)
        return reel__error_set(err, REEL_E_INVALID_ARG, "pack: part %d of %d does not exist", s->part_index,
                               s->part_count);
    if (s->threads < 0 || s->threads > 1024) return reel__error_set(err, REEL_E_INVALID_ARG, "pack: bad thread count");
    if (s->format == REEL_STORE_FORMAT_H264) return reel__encoder_h264_check("pack", err);
    return REEL_OK;
}

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

/* ---------------------------------------------------------------- one video */

typedef struct pack_ctx {
    const reel_pack_settings *s;
    reel__store_params params;
    reel_dataset *ds;
    const int64_t *list; /* dataset indices of this part */
    int64_t n;
} pack_ctx;

static int stored_size(const reel_pack_settings *s, int w, int h, int *ow, int *oh)
{
    if (s->width > 0 && s->height > 0) {
        *ow = s->width;
        *oh = s->height;
    } else if (w <= h) {
        *ow = s->short_side;
        *oh = (int)floor((double)s->short_side * h / w);
    } else {
        *oh = s->short_side;
        *ow = (int)floor((double)s->short_side * w / h);
    }
    if (*ow < 1) *ow = 1;
    if (*oh < 1) *oh = 1;
    return 0;
}

/* Source frame indices to store: the segment, subsampled by every or fps. */
static int select_frames(const pack_ctx *c, const reel_video_info *info, const reel_frame_entry *tab, int64_t n,
                         double seg_start, double seg_end, int64_t **out, int64_t *count)
{
    reel_sampler_input in;
    memset(&in, 0, sizeof in);
    in.table = tab;
    in.n = n;
    in.tb_num = info->time_base_num;
    in.tb_den = info->time_base_den;
    in.seg_start = seg_start;
    in.seg_end = seg_end;
    int64_t first = 0, len = 0;
    reel__sampler_segment(&in, &first, &len);
    int64_t *sel = malloc((size_t)(len > 0 ? len : 1) * sizeof *sel);
    if (!sel) return REEL_E_NOMEM;
    int64_t k = 0;
    if (c->s->fps > 0 && len > 0) {
        /* keep the frame shown at t0 + j/fps for j = 0, 1, ... (each once) */
        const double tb = (double)info->time_base_num / info->time_base_den;
        const double t0 = (double)tab[first].pts * tb;
        const int64_t last = first + len - 1;
        const double t_end = (double)(tab[last].pts + (tab[last].duration > 0 ? tab[last].duration : 1)) * tb;
        int64_t i = first;
        for (int64_t j = 0; j < (int64_t)1 << 40; j++) {
            double t = t0 + (double)j / c->s->fps;
            if (t >= t_end - 1e-9) break;
            while (i < last && (double)tab[i + 1].pts * tb <= t + 1e-9) i++;
            if (k == 0 || sel[k - 1] != i) sel[k++] = i;
        }
    } else {
        int every = c->s->every > 1 ? c->s->every : 1;
        for (int64_t i = first; i < first + len; i += every) sel[k++] = i;
    }
    *out = sel;
    *count = k;
    return REEL_OK;
}

/* Decodes and encodes dataset sample `sample` into rec + bytes. Failures of
 * the video become the record's status; only internal errors return != OK. */
static int make_record(const pack_ctx *c, int64_t sample, reel__encoder *enc, reel__store_rec *rec, reel__bytes *bytes,
                       reel_error *err)
{
    const reel_dataset_entry *it = &c->ds->items[sample];
    memset(rec, 0, sizeof *rec);
    rec->sample = sample;
    rec->label = reel__dataset_label(c->ds, (size_t)sample);
    rec->seg_start = it->start;
    rec->seg_end = it->end;
    const char *cls = c->ds->label_kind == REEL_LABELS_NAMED ? reel_dataset_get_class_name(c->ds, rec->label) : NULL;
    rec->path = strdup(it->path);
    rec->class_name = strdup(cls ? cls : "");
    if (!rec->path || !rec->class_name) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    struct stat st;
    if (stat(it->path, &st) == 0) {
        rec->source_size = (int64_t)st.st_size;
        rec->source_mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    bytes->len = 0;

    reel_error verr;
    reel_error_clear(&verr);
    reel_decoder *dec = NULL;
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.threads = 1; /* the build runs videos in parallel instead */
    int64_t *sel = NULL, nsel = 0;
    uint8_t *rgb = NULL;
    int vst = reel_decoder_open(&dec, it->path, &ds, &verr);
    const reel_video_info *info = NULL;
    int64_t n = 0;
    const reel_frame_entry *tab = NULL;
    int w = 0, h = 0;
    if (vst == REEL_OK) {
        info = reel_decoder_get_info(dec);
        tab = reel_decoder_get_frame_table(dec, &n);
        rec->tb_num = info->time_base_num;
        rec->tb_den = info->time_base_den;
        rec->fps_num = info->avg_fps_num;
        rec->fps_den = info->avg_fps_den;
        rec->source_num_frames = info->num_frames;
        int dw = info->width, dh = info->height;
        int rot = ((info->rotation % 360) + 360) % 360;
        if (rot == 90 || rot == 270) {
            int t = dw;
            dw = dh;
            dh = t;
        }
        stored_size(c->s, dw, dh, &w, &h);
        rec->width = (uint32_t)w;
        rec->height = (uint32_t)h;
        int sst = select_frames(c, info, tab, n, it->start, it->end, &sel, &nsel);
        if (sst != REEL_OK)
            vst = reel__error_set(&verr, sst, "%s: out of memory", it->path);
        else if (nsel == 0)
            vst = reel__error_set(&verr, REEL_E_OUT_OF_RANGE, "%s: no frame in the segment", it->path);
    }
    if (vst == REEL_OK) {
        rec->num_frames = (uint32_t)nsel;
        rec->frames = calloc((size_t)nsel, sizeof *rec->frames);
        if (!rec->frames) vst = reel__error_set(&verr, REEL_E_NOMEM, "%s: out of memory", it->path);
        for (int64_t i = 0; vst == REEL_OK && i < nsel; i++) {
            rec->frames[i].source_index = sel[i];
            rec->frames[i].pts = tab[sel[i]].pts;
            rec->frames[i].duration = tab[sel[i]].duration;
        }
    }
    if (vst == REEL_OK) vst = reel__encoder_begin(enc, w, h, it->path, &verr);
    enum { CHUNK = 16 };
    reel_transform t;
    reel_transform_default_settings(&t);
    t.width = w;
    t.height = h;
    t.apply_rotation = 1;
    const size_t fb = (size_t)w * (size_t)h * 3;
    /* + padding: swscale's SIMD reads a little past the last row it converts */
    if (vst == REEL_OK && !(rgb = malloc(fb * CHUNK + 256)))
        vst = reel__error_set(&verr, REEL_E_NOMEM, "%s: out of memory", it->path);
    for (int64_t i = 0; vst == REEL_OK && i < nsel; i += CHUNK) {
        int k = (int)(nsel - i < CHUNK ? nsel - i : CHUNK);
        if (c->s->interrupt && c->s->interrupt(c->s->interrupt_opaque)) {
            vst = reel__error_set(err, REEL_E_CANCELLED, "pack: cancelled");
            break;
        }
        vst = reel_decoder_get_frames(dec, sel + i, (size_t)k, &t, rgb, fb * CHUNK, NULL, &verr);
        if (vst == REEL_OK) vst = reel__encoder_add(enc, rgb, fb, i, k, rec->frames, bytes, it->path, &verr);
    }
    if (vst == REEL_OK) vst = reel__encoder_end(enc, rec->frames, nsel, bytes, it->path, &verr);
    free(rgb);
    free(sel);
    reel_decoder_close(&dec);
    if (vst == REEL_E_CANCELLED) return vst;
    if (vst == REEL_E_NOMEM || vst == REEL_E_INTERNAL) {
        if (err) *err = verr;
        return vst;
    }
    if (vst != REEL_OK) {
        /* the video is recorded as a failure, with its reason */
        rec->status = vst;
        rec->reason = strdup(verr.message[0] ? verr.message : reel_strerror(vst));
        free(rec->frames);
        rec->frames = NULL;
        rec->num_frames = 0;
        bytes->len = 0;
        if (!rec->reason) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
    } else {
        rec->reason = strdup("");
        if (!rec->reason) return reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
        rec->length = bytes->len;
        rec->crc = reel__crc32(0, bytes->data, bytes->len);
    }
    return REEL_OK;
}

/* ---------------------------------------------------------------- the part's workers */

typedef struct result {
    int ready;
    int status;
    reel_error err;
    reel__store_rec rec;
    reel__bytes bytes;
} result;

typedef struct workers {
    pack_ctx *c;
    int64_t begin;  /* first list position to build */
    int64_t window; /* results in flight */
    result *res;    /* window slots, position % window */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int64_t next;    /* next position to claim */
    int64_t written; /* positions < written are consumed */
    int stop;
} workers;

static void *worker_main(void *arg)
{
    workers *w = arg;
    reel__encoder *enc = NULL;
    reel_error eerr;
    int est = reel__encoder_create(&enc, &w->c->params, &eerr);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stop && w->next < w->c->n && w->next >= w->written + w->window) pthread_cond_wait(&w->cond, &w->mu);
        if (w->stop || w->next >= w->c->n) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        int64_t k = w->next++;
        pthread_mutex_unlock(&w->mu);
        result *r = &w->res[k % w->window];
        reel_error_clear(&r->err);
        r->status = est != REEL_OK ? est : make_record(w->c, w->c->list[k], enc, &r->rec, &r->bytes, &r->err);
        if (est != REEL_OK) r->err = eerr;
        pthread_mutex_lock(&w->mu);
        r->ready = 1;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->mu);
    }
    reel__encoder_destroy(&enc);
    return NULL;
}

/* ---------------------------------------------------------------- journal and shards */

typedef struct part_out {
    const char *dir;
    int part, count;
    int jfd; /* journal */
    int64_t jlen;
    int sfd; /* current shard */
    uint32_t seq;
    int64_t off; /* end of the current shard's data */
} part_out;

static int open_shard(part_out *o, int truncate_to, int64_t len, reel_error *err)
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
static void remove_shards_after(const part_out *o, int64_t keep)
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

static int write_record(part_out *o, const reel_pack_settings *s, reel__store_rec *rec, const reel__bytes *b,
                        reel_error *err)
{
    if (b->len > 0) {
        int64_t at = (o->off + REEL_STORE_ALIGN - 1) / REEL_STORE_ALIGN * REEL_STORE_ALIGN;
        if (o->off > 0 && at + (int64_t)b->len > s->shard_size) {
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
        if (reel__store_rec_parse(buf + off, n - off, path, &one, &used, &perr) != REEL_OK) {
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
           a->shard_size == b->shard_size;
}

/* Opens (or resumes) the part's journal and shard; *done = entries found. */
static int open_part(part_out *o, const reel__store_params *params, const int64_t *list, int64_t n, int64_t *done,
                     reel_error *err)
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
                if (reel__store_rec_parse(buf + off, nb - off, jpath, &one, &used, NULL) != REEL_OK) break;
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

int reel_pack(const char *source, const char *out_dir, const reel_pack_settings *settings, reel_pack_report *report,
              reel_error *err)
{
    if (!source || !out_dir || !*source || !*out_dir)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_pack: source and out_dir are required");
    reel_pack_settings defaults;
    if (!settings) {
        reel_pack_default_settings(&defaults);
        settings = &defaults;
    }
    int st = check_settings(settings, err);
    if (st != REEL_OK) return st;
    if (report) memset(report, 0, sizeof *report);
    const int64_t t0 = reel__clock_ns();
    reel_dataset *ds = NULL;
    st = reel_dataset_create_from_path(&ds, source, err);
    if (st != REEL_OK) return st;
    st = reel__dataset_freeze(ds, err);
    if (st == REEL_OK) st = mkdir_p(out_dir, err);
    pack_ctx c;
    memset(&c, 0, sizeof c);
    c.s = settings;
    c.ds = ds;
    reel__store_params_from(&c.params, settings);
    int64_t *list = NULL;
    if (st == REEL_OK) {
        list = malloc((ds->n ? ds->n : 1) * sizeof *list);
        if (!list) st = reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
        for (size_t i = 0; list && i < ds->n; i++)
            if ((int64_t)(i % (size_t)settings->part_count) == settings->part_index) list[c.n++] = (int64_t)i;
        c.list = list;
    }
    part_out o = { out_dir, settings->part_index, settings->part_count, -1, 0, -1, 0, 0 };
    int64_t begin = 0;
    if (st == REEL_OK) st = open_part(&o, &c.params, list, c.n, &begin, err);

    reel_pack_progress prog;
    memset(&prog, 0, sizeof prog);
    prog.videos_total = c.n;
    prog.videos_done = prog.videos_resumed = begin;
    int64_t frames = 0, failed = 0;
    if (st == REEL_OK && begin < c.n) {
        workers w;
        memset(&w, 0, sizeof w);
        w.c = &c;
        w.begin = w.next = w.written = begin;
        int nt = settings->threads > 0 ? settings->threads : reel__cpu_count();
        if (nt > c.n - begin) nt = (int)(c.n - begin);
        w.window = 2 * (int64_t)nt;
        w.res = calloc((size_t)w.window, sizeof *w.res);
        pthread_t *tids = calloc((size_t)nt, sizeof *tids);
        int started = 0;
        if (!w.res || !tids) st = reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
        pthread_mutex_init(&w.mu, NULL);
        pthread_cond_init(&w.cond, NULL);
        for (; st == REEL_OK && started < nt; started++)
            if (pthread_create(&tids[started], NULL, worker_main, &w) != 0) {
                st = reel__error_set(err, REEL_E_INTERNAL, "pack: cannot start a thread");
                break;
            }
        for (int64_t k = begin; st == REEL_OK && k < c.n; k++) {
            result *r = &w.res[k % w.window];
            pthread_mutex_lock(&w.mu);
            while (!r->ready) pthread_cond_wait(&w.cond, &w.mu);
            pthread_mutex_unlock(&w.mu);
            if (r->status != REEL_OK) {
                st = r->status;
                if (err) *err = r->err;
            } else {
                st = write_record(&o, settings, &r->rec, &r->bytes, err);
                frames += r->rec.num_frames;
                if (r->rec.status != REEL_OK) failed++;
                prog.bytes_written += (int64_t)r->rec.length;
            }
            reel__store_rec_free(&r->rec);
            pthread_mutex_lock(&w.mu);
            r->ready = 0;
            w.written = k + 1;
            pthread_cond_broadcast(&w.cond);
            pthread_mutex_unlock(&w.mu);
            prog.videos_done = k + 1;
            prog.videos_failed = failed;
            prog.elapsed = (double)(reel__clock_ns() - t0) / 1e9;
            if (st == REEL_OK && settings->progress) settings->progress(settings->progress_opaque, &prog);
            if (st == REEL_OK && settings->interrupt && settings->interrupt(settings->interrupt_opaque))
                st = reel__error_set(err, REEL_E_CANCELLED, "%s: build stopped; run again to resume", out_dir);
        }
        pthread_mutex_lock(&w.mu);
        w.stop = 1;
        pthread_cond_broadcast(&w.cond);
        pthread_mutex_unlock(&w.mu);
        for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
        for (int64_t i = 0; w.res && i < w.window; i++) {
            reel__store_rec_free(&w.res[i].rec);
            reel__bytes_free(&w.res[i].bytes);
        }
        pthread_mutex_destroy(&w.mu);
        pthread_cond_destroy(&w.cond);
        free(w.res);
        free(tids);
    }
    if (o.jfd >= 0) close(o.jfd);
    if (o.sfd >= 0) close(o.sfd);
    if (st == REEL_OK) {
        char dname[64], dpath[4200];
        done_name(dname, sizeof dname, o.part, o.count);
        reel__store_join(dpath, sizeof dpath, out_dir, dname);
        FILE *f = fopen(dpath, "w");
        if (!f || fprintf(f, "%lld\n", (long long)c.n) < 0 || fclose(f) != 0)
            st = reel__error_set(err, REEL_E_IO, "%s: cannot write: %s", dpath, strerror(errno));
    }
    if (st == REEL_OK && settings->progress && begin == c.n) {
        prog.elapsed = (double)(reel__clock_ns() - t0) / 1e9;
        settings->progress(settings->progress_opaque, &prog);
    }
    int merged = 0;
    if (st == REEL_OK && settings->part_count == 1) {
        st = reel_pack_merge(out_dir, err);
        merged = st == REEL_OK;
    }
    if (report) {
        report->videos = c.n;
        report->resumed = begin;
        report->failed = failed;
        report->packed = prog.videos_done - begin - failed;
        report->frames = frames;
        report->bytes = prog.bytes_written;
        report->seconds = (double)(reel__clock_ns() - t0) / 1e9;
        report->merged = merged;
    }
    free(list);
    reel_dataset_destroy(&ds);
    return st;
}

/* ---------------------------------------------------------------- merge */

static int cmp_rec(const void *a, const void *b)
{
    const reel__store_rec *x = a, *y = b;
    return x->sample < y->sample ? -1 : x->sample > y->sample;
}

int reel_pack_merge(const char *out_dir, reel_error *err)
{
    if (!out_dir || !*out_dir) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_pack_merge: out_dir is required");
    DIR *d = opendir(out_dir);
    if (!d)
        return reel__error_set(err, errno == ENOENT ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: cannot open: %s", out_dir,
                               strerror(errno));
    int count = 0;
    struct dirent *de;
    int mixed = 0;
    while ((de = readdir(d))) {
        int p, n;
        char tail[16];
        if (sscanf(de->d_name, "part-%5d-of-%5d.%15s", &p, &n, tail) == 3 && !strcmp(tail, "journal")) {
            if (count && n != count) mixed = 1;
            count = n;
        }
    }
    closedir(d);
    if (mixed)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: journals of builds with different part counts", out_dir);
    if (count < 1)
        return reel__error_set(err, REEL_E_NOT_FOUND, "%s: no build journal (nothing was packed here)", out_dir);
    char missing[512] = "";
    reel__store_rec *all = NULL;
    int64_t nall = 0, alloc = 0;
    reel__store_params params, first;
    int st = REEL_OK;
    for (int p = 0; p < count && st == REEL_OK; p++) {
        char name[64], path[4200];
        done_name(name, sizeof name, p, count);
        reel__store_join(path, sizeof path, out_dir, name);
        size_t dn = 0;
        uint8_t *db = read_whole(path, &dn);
        if (!db) {
            size_t l = strlen(missing);
            snprintf(missing + l, sizeof missing - l, "%s%d", l ? ", " : "", p);
            continue;
        }
        long long expect = -1;
        char tmp[32];
        snprintf(tmp, sizeof tmp, "%.*s", (int)(dn < 31 ? dn : 31), (const char *)db);
        free(db);
        if (sscanf(tmp, "%lld", &expect) != 1) expect = -1;
        journal_name(name, sizeof name, p, count);
        reel__store_join(path, sizeof path, out_dir, name);
        reel__store_rec *recs = NULL;
        int64_t nrec = 0, valid = 0;
        st = read_journal(path, &params, &recs, &nrec, &valid, 0, err);
        if (st != REEL_OK) break;
        if (p == 0)
            first = params;
        else if (!params_equal(&first, &params))
            st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: parts were built with different settings", out_dir);
        if (st == REEL_OK && nrec != expect)
            st = reel__error_set(err, REEL_E_CORRUPT, "%s: part %d has %lld records, its marker says %lld", out_dir, p,
                                 (long long)nrec, expect);
        if (st == REEL_OK && nall + nrec > alloc) {
            alloc = (nall + nrec) * 2;
            reel__store_rec *na = realloc(all, (size_t)alloc * sizeof *na);
            if (!na)
                st = reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
            else
                all = na;
        }
        for (int64_t i = 0; i < nrec; i++) {
            if (st == REEL_OK)
                all[nall++] = recs[i];
            else
                reel__store_rec_free(&recs[i]);
        }
        free(recs);
    }
    if (st == REEL_OK && missing[0])
        st = reel__error_set(err, REEL_E_NOT_FOUND, "%s: parts not complete (of %d): %s", out_dir, count, missing);
    if (st == REEL_OK) {
        qsort(all, (size_t)nall, sizeof *all, cmp_rec);
        for (int64_t i = 1; i < nall && st == REEL_OK; i++)
            if (all[i].sample == all[i - 1].sample)
                st = reel__error_set(err, REEL_E_CORRUPT, "%s: video %lld was built by two parts", out_dir,
                                     (long long)all[i].sample);
    }
    if (st == REEL_OK) {
        size_t total = REEL_STORE_HEADER_BYTES + 4;
        for (int64_t i = 0; i < nall; i++) total += reel__store_rec_size(&all[i]);
        uint8_t *buf = malloc(total);
        if (!buf) st = reel__error_set(err, REEL_E_NOMEM, "pack: out of memory");
        if (buf) {
            reel__store_header_write(buf, REEL_STORE_MAGIC, &first, (uint64_t)nall);
            size_t off = REEL_STORE_HEADER_BYTES;
            for (int64_t i = 0; i < nall; i++) {
                reel__store_rec_write(buf + off, &all[i]);
                off += reel__store_rec_size(&all[i]);
            }
            uint32_t crc = reel__crc32(0, buf, off);
            for (int i = 0; i < 4; i++) buf[off + (size_t)i] = (uint8_t)(crc >> (8 * i));
            char tmp[4300], path[4200];
            reel__store_join(path, sizeof path, out_dir, REEL_STORE_INDEX_NAME);
            snprintf(tmp, sizeof tmp, "%s.tmp", path);
            int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || write_all(fd, buf, total, 0) != 0 || fsync(fd) != 0)
                st = reel__error_set(err, REEL_E_IO, "%s: cannot write: %s", tmp, strerror(errno));
            if (fd >= 0) close(fd);
            if (st == REEL_OK && rename(tmp, path) != 0)
                st = reel__error_set(err, REEL_E_IO, "%s: cannot rename: %s", path, strerror(errno));
            free(buf);
        }
    }
    for (int64_t i = 0; i < nall; i++) reel__store_rec_free(&all[i]);
    free(all);
    return st;
}
