/* bench_store_floor.c: the libjpeg-turbo floor for the store benchmark:
 * the same JPEGs the loader decodes (one clip of F consecutive frames per
 * record, the start drawn from a seed), loaded into memory first, then
 * decoded in a tight loop by T threads with no pipeline and no conversion.
 *
 *   bench_store_floor STORE_DIR [--frames F] [--threads T] [--repeat R] [--seed S]
 *
 * Prints one JSON line: frames, seconds, frames_per_second, cpu_seconds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <turbojpeg.h>

#include "reel/store.h"

typedef struct jpg {
    unsigned char *data;
    unsigned long len;
    int w, h;
} jpg;
typedef struct job {
    jpg *j;
    size_t n, from, step;
    int repeat;
    long done;
} job;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    job *b = arg;
    tjhandle tj = tjInitDecompress();
    size_t cap = 0;
    unsigned char *out = NULL;
    for (int r = 0; r < b->repeat; r++)
        for (size_t i = b->from; i < b->n; i += b->step) {
            size_t need = (size_t)b->j[i].w * (size_t)b->j[i].h * 3;
            if (need > cap) {
                free(out);
                out = malloc(need);
                cap = need;
            }
            if (tjDecompress2(tj, b->j[i].data, b->j[i].len, out, b->j[i].w, b->j[i].w * 3, b->j[i].h, TJPF_RGB, 0) ==
                0)
                b->done++;
        }
    free(out);
    tjDestroy(tj);
    return NULL;
}

typedef struct grab {
    jpg *out;
    size_t n, cap;
    tjhandle tj;
} grab;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_store_floor STORE_DIR [--frames F] [--threads T] [--repeat R] [--seed S]\n");
        return 2;
    }
    int frames = 8, threads = 1, repeat = 1;
    unsigned seed = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--frames"))
            frames = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat"))
            repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = (unsigned)atoi(argv[i + 1]);
    }
    reel_store *s = NULL;
    reel_error err;
    if (reel_store_open(&s, argv[1], &err) != REEL_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    reel_store_info info;
    reel_store_get_info(s, &info, NULL);
    if (info.format != REEL_STORE_FORMAT_JPEG) {
        fprintf(stderr, "%s: not a jpeg store\n", argv[1]);
        return 1;
    }
    /* the JPEG bytes, read straight from the shards */
    jpg *js = calloc((size_t)(info.num_records * frames + 1), sizeof *js);
    size_t nj = 0;
    srand(seed);
    for (int64_t r = 0; r < info.num_records; r++) {
        reel_store_record rec;
        if (reel_store_get_record(s, r, &rec, NULL) != REEL_OK || rec.status != REEL_OK) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", argv[1], rec.shard);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        unsigned char *blob = malloc((size_t)rec.length);
        if (fseeko(f, rec.offset, SEEK_SET) != 0 || fread(blob, 1, (size_t)rec.length, f) != (size_t)rec.length) {
            fclose(f);
            free(blob);
            continue;
        }
        fclose(f);
        int64_t n = rec.num_frames;
        int64_t start = n > frames ? rand() % (n - frames + 1) : 0;
        tjhandle tj = tjInitDecompress();
        for (int64_t k = start; k < start + frames && k < n; k++) {
            int64_t off = 0, len = 0;
            if (reel_store_get_frame_bytes(s, r, k, &off, &len, NULL) != REEL_OK) continue;
            jpg *j = &js[nj++];
            j->len = (unsigned long)len;
            j->data = malloc((size_t)len);
            memcpy(j->data, blob + (off - rec.offset), (size_t)len);
            int sub, cs;
            tjDecompressHeader3(tj, j->data, j->len, &j->w, &j->h, &sub, &cs);
        }
        tjDestroy(tj);
        free(blob);
    }
    job *jobs = calloc((size_t)threads, sizeof *jobs);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now();
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){ js, nj, (size_t)t, (size_t)threads, repeat, 0 };
        pthread_create(&tid[t], NULL, run, &jobs[t]);
    }
    long done = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        done += jobs[t].done;
    }
    double secs = now() - t0;
    getrusage(RUSAGE_SELF, &r1);
    double cpu =
        (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
        (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
    printf(
        "{\"frames\": %ld, \"seconds\": %.4f, \"frames_per_second\": %.1f, \"cpu_seconds\": %.4f, \"threads\": %d}\n",
        done, secs, secs > 0 ? (double)done / secs : 0, cpu, threads);
    for (size_t i = 0; i < nj; i++) free(js[i].data);
    free(js);
    free(jobs);
    free(tid);
    reel_store_close(&s);
    return 0;
}
