/* test_gpu_loader_store.c: the Loader with decoder.device "cuda" over a
 * packed store (JPEG, raw and H.264 records), against the emulated driver
 * (tests/cuda/fake_cuda.c through REEL_LIBCUDA): batches in device memory
 * equal to the CPU Loader's over the same store, bit for bit, under
 * several transforms, resumed and on several ranks; every frame counted as
 * uploaded with its bytes; device memory and host staging flat over epochs;
 * a failing upload following the error policy with nothing leaked;
 * variable batches (fps sampler) in per-sample device buffers. */
#include "harness.h"
#include "fake_cuda_client.h"
#include "store_common.h"
#include "testgen.h"

#include "reel/device_buffer.h"
#include "reel/store.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

enum { NV = 6, SS = 40 };

/* The emulated driver, with plain staging (it has no CUDA runtime). */
static void use_fake_plain(void)
{
    setenv("REEL_CUDART", "none", 1);
    use_fake();
}

/* A store of NV generated videos (64x48, short side SS) packed as fmt. */
static reel_dataset *store(reel_store_format fmt)
{
    static const sc_videos v = { "gpuds", NV, 64, 48, 12, 2, 6, 1, 21 };
    const char *name = fmt == REEL_STORE_FORMAT_JPEG  ? "gpu-jpeg"
                       : fmt == REEL_STORE_FORMAT_RAW ? "gpu-raw"
                                                      : "gpu-h264";
    const char *dir = sc_tmp(name);
    struct stat st;
    if (stat(dir, &st) != 0) {
        reel_pack_settings p;
        reel_pack_default_settings(&p);
        p.format = fmt;
        p.short_side = SS;
        p.threads = 2;
        sc_pack(sc_dataset(&v), dir, &p);
    }
    reel_dataset *ds = NULL;
    CHECK_OK(reel_dataset_create_from_path(&ds, dir, NULL));
    return ds;
}

static reel_loader_settings small_settings(void)
{
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.sampler.frames_per_clip = 4;
    s.transform.short_side = 36;
    s.transform.crop = REEL_CROP_RANDOM;
    s.transform.crop_width = 32;
    s.transform.crop_height = 28;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.batch_size = 2;
    s.seed = 7;
    s.open_threads = 1;
    s.decode_threads = 2;
    return s;
}

/* Every batch of a run: data (downloaded from the device), labels,
 * concatenated; stops after `stop` batches (-1: the epoch) and then saves
 * the checkpoint into *cp. */
typedef struct run_out {
    uint8_t *data;
    size_t bytes;
    int64_t labels[256], clips, batches;
    reel_loader_metrics m;
} run_out;

static void run(reel_dataset *ds, const reel_loader_settings *s, const reel_loader_checkpoint *from, int stop,
                reel_loader_checkpoint *cp, run_out *o)
{
    memset(o, 0, sizeof *o);
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, s, &err));
    if (from) CHECK_OK(reel_loader_restore_checkpoint(l, from, &err));
    for (;;) {
        if (stop >= 0 && o->batches == stop) break;
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) break;
        o->data = realloc(o->data, o->bytes + b->bytes);
        CHECK(o->data != NULL);
        if (!strcmp(b->device, "cpu")) {
            memcpy(o->data + o->bytes, b->data, b->bytes);
        } else {
            CHECK_EQ_STR(b->device, "cuda:0");
            CHECK(b->device_buffer != NULL);
            CHECK_OK(reel_device_buffer_download(b->device_buffer, 0, o->data + o->bytes, b->bytes, &err));
        }
        o->bytes += b->bytes;
        for (int64_t i = 0; i < b->num_clips && o->clips < 256; i++) o->labels[o->clips++] = b->labels[i];
        o->batches++;
        reel_loader_release(l, b);
    }
    if (cp) CHECK_OK(reel_loader_get_checkpoint(l, cp, &err));
    CHECK_OK(reel_loader_get_metrics(l, &o->m, &err));
    reel_loader_destroy(&l);
}

static void same(const run_out *cpu, const run_out *gpu, const char *what)
{
    CHECK_MSG(cpu->batches > 0 && cpu->batches == gpu->batches && cpu->clips == gpu->clips, "%s: %lld/%lld batches",
              what, (long long)cpu->batches, (long long)gpu->batches);
    CHECK_MSG(cpu->bytes == gpu->bytes && !memcmp(cpu->data, gpu->data, cpu->bytes), "%s: batches differ", what);
    CHECK_MSG(!memcmp(cpu->labels, gpu->labels, sizeof cpu->labels), "%s: labels differ", what);
}

static void check_equal(reel_dataset *ds, reel_loader_settings s, const char *what)
{
    static run_out cpu, gpu;
    s.decoder.device = NULL;
    run(ds, &s, NULL, -1, NULL, &cpu);
    s.decoder.device = "cuda";
    run(ds, &s, NULL, -1, NULL, &gpu);
    same(&cpu, &gpu, what);
    /* every delivered frame decoded on the CPU and uploaded, with its bytes */
    CHECK_EQ_INT(gpu.m.frames_nvdec, 0);
    CHECK_MSG(gpu.m.frames_uploaded == gpu.m.frames && gpu.m.frames > 0, "%s: %lld uploaded, %lld delivered", what,
              (long long)gpu.m.frames_uploaded, (long long)gpu.m.frames);
    CHECK_MSG(gpu.m.upload_bytes == (int64_t)gpu.bytes, "%s: %lld bytes uploaded, %zu delivered", what,
              (long long)gpu.m.upload_bytes, gpu.bytes);
    /* one sample's rows per decode worker at most */
    const int64_t sample = (int64_t)gpu.bytes / gpu.clips * s.sampler.clips_per_video;
    CHECK_MSG(gpu.m.staging_bytes >= sample && gpu.m.staging_bytes <= s.decode_threads * (sample + 64),
              "%s: staging %lld for samples of %lld bytes", what, (long long)gpu.m.staging_bytes, (long long)sample);
    CHECK_EQ_STR(gpu.m.ring_memory, "device");
    CHECK(gpu.m.device_bytes >= gpu.m.ring_bytes);
    CHECK_EQ_INT(cpu.m.frames_uploaded, 0);
    CHECK_EQ_INT(cpu.m.upload_bytes, 0);
    CHECK_EQ_INT(cpu.m.staging_bytes, 0);
    free(cpu.data);
    free(gpu.data);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
}

/* Variable batches over a store (the fps sampler: each sample its own
 * frame count; a pixel budget needs a store packed at the source size): each
 * sample's records converted on the CPU and uploaded into its own device
 * buffer, equal to the CPU Loader's sample for sample, over 2 epochs;
 * device bytes flat and equal to the driver's; nothing left after close. */
static int g_counts_differ; /* samples of different frame counts seen in one batch */

static void run_vary(reel_dataset *ds, const reel_loader_settings *s, run_out *o, int64_t device_bytes[2])
{
    memset(o, 0, sizeof *o);
    reel_loader *l = NULL;
    reel_error err;
    CHECK_MSG(reel_loader_create(&l, ds, s, &err) == REEL_OK, "%s", err.message);
    for (int epoch = 0; epoch < 2; epoch++) {
        for (;;) {
            reel_batch *b = NULL;
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            CHECK(b->variable && b->data == NULL);
            for (int64_t i = 0; i < b->num_clips; i++) {
                const reel_clip_info *c = &b->clips[i];
                o->data = realloc(o->data, o->bytes + c->bytes + 12);
                CHECK(o->data != NULL);
                const int32_t shape[3] = { c->num_frames, c->height, c->width };
                memcpy(o->data + o->bytes, shape, sizeof shape); /* the shape, then the pixels */
                o->bytes += sizeof shape;
                if (!strcmp(b->device, "cpu"))
                    memcpy(o->data + o->bytes, c->data, c->bytes);
                else
                    CHECK_OK(reel_device_buffer_download(c->device_buffer, 0, o->data + o->bytes, c->bytes, &err));
                o->bytes += c->bytes;
                if (o->clips < 256) o->labels[o->clips++] = c->label;
                if (c->num_frames != b->clips[0].num_frames) g_counts_differ = 1;
            }
            o->batches++;
            reel_loader_release(l, b);
        }
        CHECK_OK(reel_loader_get_metrics(l, &o->m, &err));
        device_bytes[epoch] = o->m.device_bytes;
        if (strcmp(s->decoder.device ? s->decoder.device : "cpu", "cpu"))
            CHECK_EQ_INT(o->m.device_bytes, counter("live_bytes"));
    }
    reel_loader_destroy(&l);
}

TEST(variable_store_batches_on_the_gpu_equal_the_cpu_loaders)
{
    use_fake_plain();
    reel_dataset *ds = store(REEL_STORE_FORMAT_JPEG);
    reel_loader_settings s = small_settings(); /* random crop and flip */
    s.sampler.kind = REEL_SAMPLER_FPS;
    s.sampler.fps = 20; /* videos of 12..18 frames: samples of different counts */
    s.sampler.frame_factor = 1;
    s.sampler.min_frames = 2;
    s.sampler.max_frames = 32;
    s.shuffle = 0;
    static run_out cpu, gpu;
    int64_t cdev[2], gdev[2];
    s.decoder.device = NULL;
    run_vary(ds, &s, &cpu, cdev);
    s.decoder.device = "cuda";
    run_vary(ds, &s, &gpu, gdev);
    same(&cpu, &gpu, "variable JPEG store");
    CHECK_MSG(g_counts_differ, "every sample of the same frame count: not a variable run");
    CHECK(gpu.m.frames_uploaded == gpu.m.frames && gpu.m.frames > 0);
    CHECK_EQ_STR(gpu.m.ring_memory, "device");
    CHECK(gdev[0] > 0 && gdev[0] == gdev[1]);
    CHECK(cdev[0] == 0 && cdev[1] == 0);
    free(cpu.data);
    free(gpu.data);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
    reel_dataset_destroy(&ds);
}

static void equal_under_transforms(reel_store_format fmt)
{
    use_fake_plain();
    reel_dataset *ds = store(fmt);
    reel_loader_settings s = small_settings();
    check_equal(ds, s, "uint8 BTCHW random crop and flip");
    s.transform.pixels.dtype = REEL_DTYPE_FLOAT32;
    const float mean[3] = { 0.485f, 0.456f, 0.406f }, sd[3] = { 0.229f, 0.224f, 0.225f };
    memcpy(s.transform.pixels.mean, mean, sizeof mean);
    memcpy(s.transform.pixels.std, sd, sizeof sd);
    s.transform.layout = REEL_BATCH_BCTHW;
    check_equal(ds, s, "float32 normalised BCTHW");
    s = small_settings();
    s.transform.resize = REEL_RESIZE_EXACT;
    s.transform.resize_width = 30;
    s.transform.resize_height = 22;
    s.transform.crop = REEL_CROP_CENTER;
    s.transform.crop_width = 24;
    s.transform.crop_height = 18;
    s.transform.layout = REEL_BATCH_BTHWC;
    s.sampler.clips_per_video = 2;
    check_equal(ds, s, "exact resize, centre crop, BTHWC, 2 clips per video");
    s.sample_time_limit = 60; /* the upload under the slot's lock */
    s.decode_threads = 1;
    check_equal(ds, s, "with a per-sample time limit, one worker");
    reel_dataset_destroy(&ds);
}

TEST(jpeg_store_batches_on_the_gpu_equal_the_cpu_loaders)
{
    equal_under_transforms(REEL_STORE_FORMAT_JPEG);
}

TEST(raw_store_batches_on_the_gpu_equal_the_cpu_loaders)
{
    equal_under_transforms(REEL_STORE_FORMAT_RAW);
}

TEST(h264_store_batches_on_the_gpu_equal_the_cpu_loaders)
{
    use_fake_plain();
    reel_dataset *ds = store(REEL_STORE_FORMAT_H264);
    reel_loader_settings s = small_settings();
    check_equal(ds, s, "h264 records, uint8 BTCHW random crop and flip");
    s.transform.pixels.dtype = REEL_DTYPE_FLOAT32;
    s.transform.layout = REEL_BATCH_BTHWC;
    check_equal(ds, s, "h264 records, float32 BTHWC");
    reel_dataset_destroy(&ds);
}

/* Resume and elastic positions are the loader's, unchanged on the GPU: a
 * GPU run stopped and restored continues the CPU's epoch, and each rank's
 * share equals the CPU's for that rank. */
TEST(store_on_the_gpu_resumes_and_shards_as_on_the_cpu)
{
    use_fake_plain();
    reel_dataset *ds = store(REEL_STORE_FORMAT_JPEG);
    reel_loader_settings s = small_settings();
    s.shuffle_window = 4;
    run_out cpu, head, tail;
    reel_loader_checkpoint cp;
    run(ds, &s, NULL, -1, NULL, &cpu);
    s.decoder.device = "cuda";
    run(ds, &s, NULL, 1, &cp, &head);
    CHECK_EQ_INT(cp.samples_seen, 2);
    run(ds, &s, &cp, -1, NULL, &tail);
    CHECK_EQ_INT(head.batches + tail.batches, cpu.batches);
    CHECK_EQ_INT(head.bytes + tail.bytes, cpu.bytes);
    CHECK(!memcmp(head.data, cpu.data, head.bytes));
    CHECK_MSG(!memcmp(tail.data, cpu.data + head.bytes, tail.bytes), "resumed batches differ");
    free(head.data);
    free(tail.data);
    free(cpu.data);
    for (int r = 0; r < 2; r++) {
        reel_loader_settings lr = s;
        lr.rank = r;
        lr.world_size = 2;
        run_out c, g;
        lr.decoder.device = NULL;
        run(ds, &lr, NULL, -1, NULL, &c);
        lr.decoder.device = "cuda";
        run(ds, &lr, NULL, -1, NULL, &g);
        same(&c, &g, r ? "rank 1 of 2" : "rank 0 of 2");
        free(c.data);
        free(g.data);
    }
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
    reel_dataset_destroy(&ds);
}

TEST(device_memory_and_staging_are_flat_over_epochs)
{
    use_fake_plain();
    reel_dataset *ds = store(REEL_STORE_FORMAT_JPEG);
    reel_loader_settings s = small_settings();
    s.epochs = 3;
    s.decoder.device = "cuda";
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    long long held = -1, one = 0; /* one: a worker's staging (one sample's rows: every sample's shape here) */
    int64_t batches = 0;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) {
            if (reel_loader_get_batches_left(l) == 0 && reel_loader_get_epoch(l) >= 3) break;
            continue;
        }
        batches++;
        reel_loader_metrics m;
        CHECK_OK(reel_loader_get_metrics(l, &m, &err));
        if (batches == 3) held = m.device_bytes; /* the ring and the workers' devices */
        if (batches > 3) {
            CHECK_EQ_INT(m.device_bytes, held);
            CHECK_EQ_INT(m.device_bytes_peak, held);
        }
        /* each decode worker stages one sample, grown once and kept: which
         * workers have staged by now is the scheduler's, how much is not */
        if (!one) one = m.staging_bytes;
        CHECK_MSG(one > 0 && m.staging_bytes % one == 0 && m.staging_bytes <= s.decode_threads * one,
                  "staging %lld with one sample's %lld and %d workers", (long long)m.staging_bytes, one,
                  s.decode_threads);
        reel_loader_release(l, b);
    }
    CHECK_MSG(batches == 9, "%lld batches", (long long)batches);
    reel_loader_destroy(&l);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("live_bytes"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
    reel_dataset_destroy(&ds);
}

/* A failing upload fails that sample under the error policy: skipped (a
 * batch with one sample fewer) or raised as a named REEL_E_CUDA; nothing
 * left allocated after close. */
TEST(a_failing_upload_follows_the_error_policy)
{
    use_fake_plain();
    reel_dataset *ds = store(REEL_STORE_FORMAT_JPEG);
    for (int policy = 0; policy < 2; policy++) {
        reel_loader_settings s = small_settings();
        s.decoder.device = "cuda";
        s.decode_threads = 1;
        s.shuffle = 0;
        s.prefetch_batches = 1;
        s.on_error = policy ? REEL_ON_ERROR_RAISE : REEL_ON_ERROR_SKIP;
        reel_loader *l = NULL;
        reel_error err;
        fail_call("cuMemcpyHtoDAsync_v2", 2); /* the second sample's upload */
        CHECK_OK(reel_loader_create(&l, ds, &s, &err));
        int raised = 0;
        int64_t clips = 0, failed = 0;
        for (;;) {
            reel_batch *b = NULL;
            int r = reel_loader_next(l, &b, &err);
            if (r != REEL_OK) {
                CHECK_MSG(r == REEL_E_CUDA && strstr(err.message, "CUDA") && strstr(err.message, ".mp4") &&
                              strstr(err.message, "uploading"),
                          "%d \"%s\"", r, err.message);
                raised++;
                continue;
            }
            if (!b) break;
            clips += b->num_clips;
            failed += b->num_failed;
            reel_loader_release(l, b);
        }
        fail_call(NULL, 0);
        if (policy)
            CHECK_MSG(raised == 1, "raised %d", raised);
        else
            CHECK_MSG(failed == 1 && clips == NV - 1 && !raised, "%lld clips, %lld failed", (long long)clips,
                      (long long)failed);
        reel_loader_destroy(&l);
        CHECK_EQ_INT(counter("live_allocs"), 0);
        CHECK_EQ_INT(counter("retained"), 0);
    }
    reel_dataset_destroy(&ds);
}
