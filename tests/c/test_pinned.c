/* test_pinned.c: the loader's pin_memory option. The CUDA runtime is looked
 * up with dlopen at run time. Without one (forced with REEL_CUDART=none), or
 * with one but no driver or device (a CPU machine with the toolkit), the
 * ring is plain aligned memory, reported as "plain", and the batches are the
 * same bytes as without the option. Where pinning works, "pinned" is fine
 * too, and the batches must still match. */
#define _GNU_SOURCE
#include "harness.h"

#include "reel/pipeline.h"
#include "pipeline/ring.h"
#include "testgen.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_videos(char paths[][1024], int n)
{
    for (int i = 0; i < n; i++) {
        snprintf(paths[i], 1024, "%s/pin%02d.mp4", harness_tmpdir(), i);
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = paths[i];
        p.width = 96;
        p.height = 64;
        p.num_frames = 24 + i;
        p.gop = 8;
        p.seed = (unsigned)i + 3;
        tg_synth(&p); /* skips when this FFmpeg cannot encode it */
    }
}

/* Runs one epoch and returns a checksum of every batch's bytes and labels,
 * plus the metrics' ring_memory. */
static uint64_t run_epoch(reel_dataset *ds, int pin, const char **ring_memory, int64_t *clips)
{
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.sampler.frames_per_clip = 3;
    s.transform.short_side = 48;
    s.transform.crop_width = s.transform.crop_height = 32;
    s.transform.pixels.dtype = REEL_DTYPE_FLOAT32;
    s.batch_size = 2;
    s.decode_threads = 2;
    s.seed = 11;
    s.pin_memory = pin;
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    *clips = 0;
    for (;;) {
        reel_batch *b;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        CHECK_EQ_INT((uintptr_t)b->data % s.alignment, 0);
        const unsigned char *p = b->data;
        for (size_t i = 0; i < b->bytes; i++) h = (h ^ p[i]) * 1099511628211ull;
        for (int64_t i = 0; i < b->num_clips; i++) h = (h ^ (uint64_t)b->labels[i]) * 1099511628211ull;
        *clips += b->num_clips;
        CHECK_OK(reel_loader_release(l, b));
    }
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, NULL));
    CHECK(m.ring_memory != NULL);
    *ring_memory = m.ring_memory; /* a string literal: lives past the loader */
    char *json = NULL;
    CHECK_OK(reel_loader_get_metrics_json(l, &json, &err));
    char want[64];
    snprintf(want, sizeof want, "\"ring_memory\":\"%s\"", m.ring_memory);
    CHECK_MSG(strstr(json, want) != NULL, "metrics JSON lacks %s: %s", want, json);
    reel_free(json);
    reel_loader_destroy(&l);
    return h;
}

TEST(pin_memory_falls_back_to_plain_memory)
{
    enum { NV = 5 };
    char paths[NV][1024];
    write_videos(paths, NV);
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int i = 0; i < NV; i++) CHECK_OK(reel_dataset_add(ds, paths[i], i, 0, -1, &err));

    const char *plain_mem = NULL, *pin_mem = NULL;
    int64_t plain_clips = 0, pin_clips = 0;
    uint64_t plain = run_epoch(ds, 0, &plain_mem, &plain_clips);
    uint64_t pinned = run_epoch(ds, 1, &pin_mem, &pin_clips);
    CHECK_EQ_STR(plain_mem, "plain");
    CHECK_EQ_INT(plain_clips, NV);
    CHECK_EQ_INT(pin_clips, NV);
    CHECK_MSG(plain == pinned, "pin_memory changed the batches");
    if (!reel__pinned_available())
        CHECK_EQ_STR(pin_mem, "plain"); /* no CUDA runtime here */
    else
        CHECK_MSG(!strcmp(pin_mem, "pinned") || !strcmp(pin_mem, "plain"), "ring_memory %s", pin_mem);
    if (harness_env("REEL_TEST_VERBOSE", NULL))
        fprintf(stderr, "cuda runtime %s, ring_memory with pin_memory=1: %s\n",
                reel__pinned_available() ? "found" : "not found", pin_mem);
    reel_dataset_destroy(&ds);
}

/* Without any CUDA runtime. This machine may have one (a toolkit without a
 * driver, say), so the test runs itself again in a child process with
 * REEL_CUDART=none, which makes the lookup find nothing. */
TEST(no_cuda_runtime_means_plain_memory)
{
    const char *env = getenv("REEL_CUDART");
    if (!env || strcmp(env, "none")) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            setenv("REEL_CUDART", "none", 1);
            unsetenv("REEL_TEST_SUMMARY_FILE"); /* the child's results are not counted twice */
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0 && !harness_env("REEL_TEST_VERBOSE", NULL)) {
                dup2(devnull, 1); /* one summary line: the parent's */
                dup2(devnull, 2);
            }
            execl("/proc/self/exe", "test_pinned", "no_cuda_runtime_means_plain_memory", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "the child run with REEL_CUDART=none failed (status %d)", status);
        return;
    }
    CHECK(!reel__pinned_available());
    CHECK(reel__pinned_alloc(1 << 16, 4096) == NULL);
    reel__pinned_free(NULL); /* a no-op */

    /* the ring itself: every buffer plain, aligned, usable and freed */
    reel_ring r;
    reel_ring_config c;
    memset(&c, 0, sizeof c);
    c.count = 3;
    c.batch_size = 2;
    c.clips_per_video = 1;
    c.frames_per_clip = 2;
    c.width = 16;
    c.height = 8;
    c.layout = REEL_BATCH_BTCHW;
    c.dtype = REEL_DTYPE_UINT8;
    c.channels = 3;
    c.alignment = 4096;
    c.pin_memory = 1;
    reel_error err;
    CHECK_OK(reel__ring_init(&r, &c, &err));
    CHECK_EQ_INT(r.pinned, 0);
    CHECK_EQ_STR(reel__ring_memory(&r), "plain");
    for (int i = 0; i < r.count; i++) {
        CHECK(r.bufs[i].data != NULL);
        CHECK_EQ_INT(r.bufs[i].pinned, 0);
        CHECK_EQ_INT((uintptr_t)r.bufs[i].data % 4096, 0);
        memset(r.bufs[i].data, 7, r.bufs[i].bytes_cap);
    }
    reel__ring_free(&r);

    /* and a whole loader: same batches, reported as plain */
    enum { NV = 3 };
    char paths[NV][1024];
    write_videos(paths, NV);
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int i = 0; i < NV; i++) CHECK_OK(reel_dataset_add(ds, paths[i], i, 0, -1, &err));
    const char *mem0 = NULL, *mem1 = NULL;
    int64_t n0 = 0, n1 = 0;
    uint64_t h0 = run_epoch(ds, 0, &mem0, &n0), h1 = run_epoch(ds, 1, &mem1, &n1);
    CHECK_EQ_STR(mem1, "plain");
    CHECK_EQ_INT(n1, NV);
    CHECK(h0 == h1 && n0 == n1);
    reel_dataset_destroy(&ds);
}

TEST(pin_memory_setting_is_checked)
{
    char path[1][1024];
    write_videos(path, 1);
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    CHECK_OK(reel_dataset_add(ds, path[0], 0, 0, -1, &err));
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    CHECK_EQ_INT(s.pin_memory, 0);
    s.pin_memory = 2;
    reel_loader *l = NULL;
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_INVALID_ARG);
    CHECK(strstr(err.message, "pin_memory") != NULL);
    CHECK(l == NULL);
    reel_dataset_destroy(&ds);
}
