/* test_gpu_loader.c: the Loader with decoder.device "cuda" against the
 * emulated driver (tests/cuda/fake_cuda.c through REEL_LIBCUDA): batches in
 * device memory equal to the CPU Loader's batch for batch, bit for bit,
 * under several transforms; uploads from pinned staging (plain memory when
 * the driver will not pin); one stream per decode worker; every device and
 * pinned byte in the metrics, equal to the driver's live allocations; the
 * pool flat over many batches; faults in a worker following the error
 * policy with a named REEL_E_CUDA and nothing leaked; variable batches
 * (fps sampler, pixel budget) in per-sample device buffers equal to the
 * CPU's; the fallback and the refusals by name. */
#include "harness.h"
#include "fake_cuda_client.h"
#include "real_common.h"

#include "reel/device_buffer.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static void reset_work(void)
{
    void (*fn)(void) = (void (*)(void))dlsym(g_fake, "reel_fake_cuda_reset_work");
    CHECK(fn != NULL);
    fn();
}

static const char *const g_videos[] = { "carphone_pristine.mp4", "foreman_hevc.mp4", "karma.mp4", "nasa_13013.mp4" };

static reel_dataset *shared_dataset(int copies)
{
    reel_dataset *ds = NULL;
    reel_error err;
    CHECK_OK(reel_dataset_create(&ds, &err));
    for (int c = 0; c < copies; c++)
        for (size_t i = 0; i < sizeof g_videos / sizeof g_videos[0]; i++) {
            char path[4200];
            vpath(path, sizeof path, g_videos[i]);
            CHECK_OK(reel_dataset_add(ds, path, (int64_t)i, 0, -1, &err));
        }
    return ds;
}

static reel_loader_settings small_settings(void)
{
    reel_loader_settings s;
    reel_loader_default_settings(&s);
    s.sampler.frames_per_clip = 4;
    s.transform.short_side = 40;
    s.transform.crop = REEL_CROP_RANDOM;
    s.transform.crop_width = 36;
    s.transform.crop_height = 30;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.batch_size = 3;
    s.seed = 7;
    s.open_threads = 1;
    s.decode_threads = 2;
    return s;
}

/* Every batch of an epoch: data (downloaded from the device), labels and
 * shapes, concatenated. */
typedef struct run_out {
    uint8_t *data;
    size_t bytes;
    int64_t labels[256], clips, batches;
    reel_loader_metrics m;
    /* the emulated driver's counters at the end, the loader still open */
    long long live_bytes, live_host_bytes, streams, modules;
} run_out;

static void run(reel_dataset *ds, const reel_loader_settings *s, run_out *o)
{
    memset(o, 0, sizeof *o);
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, s, &err));
    for (;;) {
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
            CHECK(reel_device_buffer_get_address(b->device_buffer) == (uint64_t)(uintptr_t)b->data);
            CHECK_OK(reel_device_buffer_download(b->device_buffer, 0, o->data + o->bytes, b->bytes, &err));
        }
        o->bytes += b->bytes;
        for (int64_t i = 0; i < b->num_clips && o->clips < 256; i++) o->labels[o->clips++] = b->labels[i];
        o->batches++;
        reel_loader_release(l, b);
    }
    CHECK_OK(reel_loader_get_metrics(l, &o->m, &err)); /* every worker idle: the epochs are done */
    if (g_fake) {
        o->live_bytes = counter("live_bytes");
        o->live_host_bytes = counter("live_host_bytes");
        o->streams = counter("streams");
        o->modules = counter("modules");
    }
    reel_loader_destroy(&l);
}

/* pinned: 1 when the driver pins the staging, 0 when every cuMemHostAlloc fails */
static void check_equal_staged(reel_dataset *ds, reel_loader_settings s, const char *what, int pinned)
{
    static run_out cpu, gpu;
    s.decoder.device = NULL;
    run(ds, &s, &cpu);
    s.decoder.device = "cuda";
    reset_work();
    if (!pinned) fail_call("cuMemHostAlloc", -1);
    run(ds, &s, &gpu);
    fail_call(NULL, 0);
    CHECK_MSG(cpu.batches > 0 && cpu.batches == gpu.batches && cpu.clips == gpu.clips, "%s: %lld/%lld batches", what,
              (long long)cpu.batches, (long long)gpu.batches);
    CHECK_MSG(cpu.bytes == gpu.bytes && !memcmp(cpu.data, gpu.data, cpu.bytes), "%s: batches differ", what);
    CHECK(!memcmp(cpu.labels, gpu.labels, sizeof cpu.labels));
    /* no libnvcuvid here: every frame decoded on the CPU and uploaded */
    CHECK_EQ_INT(gpu.m.frames_nvdec, 0);
    CHECK_MSG(gpu.m.frames_uploaded >= gpu.m.frames && gpu.m.frames > 0, "%s: %lld uploaded, %lld delivered", what,
              (long long)gpu.m.frames_uploaded, (long long)gpu.m.frames);
    CHECK_EQ_INT(cpu.m.frames_uploaded, 0);
    CHECK_EQ_INT(cpu.m.device_bytes, 0);
    CHECK_MSG(gpu.m.device_bytes >= gpu.m.ring_bytes + (s.sample_time_limit > 0 ? 1 : 0) &&
                  gpu.m.device_bytes_peak >= gpu.m.device_bytes,
              "%s: device %lld peak %lld ring %lld", what, (long long)gpu.m.device_bytes,
              (long long)gpu.m.device_bytes_peak, (long long)gpu.m.ring_bytes);
    CHECK_EQ_STR(gpu.m.ring_memory, "device");
    /* every device and pinned byte the loader holds is in its metrics: the
     * ring, the workers' pools, staging and clip buffers */
    CHECK_MSG(gpu.m.device_bytes == gpu.live_bytes && gpu.m.pinned_bytes == gpu.live_host_bytes,
              "%s: metrics %lld device, %lld pinned; driver %lld, %lld", what, (long long)gpu.m.device_bytes,
              (long long)gpu.m.pinned_bytes, gpu.live_bytes, gpu.live_host_bytes);
    CHECK_MSG(gpu.m.pinned_bytes_peak >= gpu.m.pinned_bytes, "%s", what);
    /* one stream and one module per decode worker, and the loader's own */
    CHECK_MSG(gpu.streams == 1 + s.decode_threads && gpu.modules == 1 + s.decode_threads,
              "%s: %lld streams, %lld modules for %d decode workers", what, gpu.streams, gpu.modules, s.decode_threads);
    /* each worker's launches and uploads on its own stream, always the same */
    CHECK_MSG(counter("work_streams") >= 1 && counter("work_streams") <= s.decode_threads &&
                  counter("stream_switches") == 0 && counter("stream_shared") == 0,
              "%s: %lld streams at work, %lld switches, %lld shared", what, counter("work_streams"),
              counter("stream_switches"), counter("stream_shared"));
    CHECK_EQ_INT(counter("streams"), 0);
    if (pinned) { /* every upload from page-locked staging */
        CHECK_MSG(counter("htod_pinned") > 0 && counter("htod_plain") == 0 && gpu.m.pinned_bytes > 0 &&
                      gpu.m.pinned_failures == 0,
                  "%s: %lld pinned uploads, %lld plain; %lld pinned bytes, %lld refusals", what, counter("htod_pinned"),
                  counter("htod_plain"), (long long)gpu.m.pinned_bytes, (long long)gpu.m.pinned_failures);
    } else { /* the driver refused: plain staging, counted, the same batches */
        CHECK_MSG(counter("htod_pinned") == 0 && counter("htod_plain") > 0 && gpu.m.pinned_bytes == 0 &&
                      gpu.m.pinned_bytes_peak == 0 && gpu.m.pinned_failures > 0,
                  "%s: %lld pinned uploads, %lld plain; %lld pinned bytes, %lld refusals", what, counter("htod_pinned"),
                  counter("htod_plain"), (long long)gpu.m.pinned_bytes, (long long)gpu.m.pinned_failures);
    }
    CHECK_EQ_INT(cpu.m.pinned_bytes, 0);
    CHECK_EQ_INT(counter("live_host_allocs"), 0);
    free(cpu.data);
    free(gpu.data);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
}

static void check_equal(reel_dataset *ds, reel_loader_settings s, const char *what)
{
    check_equal_staged(ds, s, what, 1);
}

TEST(gpu_batches_equal_cpu_batches)
{
    use_fake();
    reel_dataset *ds = shared_dataset(1);
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
    s.batch_size = 2;
    check_equal(ds, s, "exact resize, centre crop, BTHWC, 2 clips per video");
    s.sample_time_limit = 60; /* each clip through the worker's buffer, copied under the slot's lock */
    check_equal(ds, s, "with a per-sample time limit");
    reel_dataset_destroy(&ds);
}

/* Every clip of two epochs of variable batches (its own frame count and
 * size): data (downloaded from its own device buffer), shape, label and
 * frame indices, concatenated; the device metrics after each epoch. */
typedef struct vary_out {
    uint8_t *data;
    size_t bytes;
    int64_t clips, shapes[256][3], labels[256], first_index[256];
    int64_t device_bytes[2], live_bytes[2];
} vary_out;

static void run_vary(reel_dataset *ds, const reel_loader_settings *s, vary_out *o)
{
    memset(o, 0, sizeof *o);
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, s, &err));
    for (int epoch = 0; epoch < 2; epoch++) {
        for (;;) {
            reel_batch *b = NULL;
            CHECK_OK(reel_loader_next(l, &b, &err));
            if (!b) break;
            CHECK(b->variable);
            CHECK(b->data == NULL);
            for (int64_t i = 0; i < b->num_clips; i++) {
                const reel_clip_info *c = &b->clips[i];
                o->data = realloc(o->data, o->bytes + c->bytes);
                CHECK(o->data != NULL);
                if (!strcmp(b->device, "cpu")) {
                    CHECK(c->device_buffer == NULL);
                    memcpy(o->data + o->bytes, c->data, c->bytes);
                } else {
                    CHECK_EQ_STR(b->device, "cuda:0");
                    CHECK(b->device_buffer == NULL && c->device_buffer != NULL);
                    CHECK(reel_device_buffer_get_address(c->device_buffer) == (uint64_t)(uintptr_t)c->data);
                    CHECK(reel_device_buffer_get_size(c->device_buffer) >= c->bytes);
                    CHECK_OK(reel_device_buffer_download(c->device_buffer, 0, o->data + o->bytes, c->bytes, &err));
                }
                o->bytes += c->bytes;
                if (o->clips < 256) {
                    o->shapes[o->clips][0] = c->num_frames;
                    o->shapes[o->clips][1] = c->height;
                    o->shapes[o->clips][2] = c->width;
                    o->labels[o->clips] = c->label;
                    o->first_index[o->clips] = c->frame_indices[0];
                    o->clips++;
                }
            }
            reel_loader_release(l, b);
        }
        reel_loader_metrics m;
        CHECK_OK(reel_loader_get_metrics(l, &m, &err));
        o->device_bytes[epoch] = m.device_bytes;
        o->live_bytes[epoch] =
            g_fake && strcmp(s->decoder.device ? s->decoder.device : "cpu", "cpu") ? counter("live_bytes") : 0;
    }
    reel_loader_destroy(&l);
}

static void check_vary(reel_dataset *ds, reel_loader_settings s, const char *what)
{
    static vary_out cpu, gpu;
    s.decoder.device = NULL;
    run_vary(ds, &s, &cpu);
    s.decoder.device = "cuda:0";
    run_vary(ds, &s, &gpu);
    CHECK_MSG(cpu.clips > 0 && cpu.clips == gpu.clips, "%s: %lld clips on the CPU, %lld on the GPU", what,
              (long long)cpu.clips, (long long)gpu.clips);
    int sizes_differ = 0;
    for (int64_t i = 0; i < cpu.clips; i++) {
        CHECK_MSG(!memcmp(cpu.shapes[i], gpu.shapes[i], sizeof cpu.shapes[i]), "%s: clip %lld's shape", what,
                  (long long)i);
        CHECK_EQ_INT(cpu.labels[i], gpu.labels[i]);
        CHECK_EQ_INT(cpu.first_index[i], gpu.first_index[i]);
        if (memcmp(cpu.shapes[i], cpu.shapes[0], sizeof cpu.shapes[0])) sizes_differ = 1;
    }
    CHECK_MSG(sizes_differ, "%s: every clip has the same shape: not a variable run", what);
    CHECK_EQ_INT((long long)cpu.bytes, (long long)gpu.bytes);
    CHECK_MSG(!memcmp(cpu.data, gpu.data, cpu.bytes), "%s: the GPU's clips differ from the CPU's", what);
    /* the samples' device buffers counted, equal to the driver's live
     * bytes, and flat from the first epoch to the second */
    CHECK(gpu.device_bytes[0] > 0);
    CHECK_EQ_INT(gpu.device_bytes[0], gpu.live_bytes[0]);
    CHECK_EQ_INT(gpu.device_bytes[1], gpu.live_bytes[1]);
    CHECK_EQ_INT(gpu.device_bytes[1], gpu.device_bytes[0]);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
    free(cpu.data);
    free(gpu.data);
    cpu.data = gpu.data = NULL;
}

/* Variable batches on the GPU (fps sampler, pixel-budget size policy):
 * each sample's frames in a device buffer of its own shape, equal to the
 * CPU Loader's sample for sample, bit for bit. */
TEST(gpu_variable_batches_equal_cpu_batches)
{
    use_fake();
    reel_dataset *ds = shared_dataset(1);
    reel_loader_settings s = small_settings();
    s.transform.crop = REEL_CROP_NONE;
    s.transform.flip = REEL_FLIP_RANDOM;
    s.sampler.kind = REEL_SAMPLER_FPS;
    s.sampler.fps = 2;
    s.sampler.min_frames = 2;
    s.sampler.max_frames = 12;
    s.size_policy.kind = REEL_SIZE_PIXEL_BUDGET;
    s.size_policy.factor = 8;
    s.size_policy.min_pixels = 8 * 8 * 4;
    s.size_policy.total_pixels = 8 * 8 * 6 * 40;
    s.shuffle = 0;
    s.decode_threads = 1;
    check_vary(ds, s, "fps sampler, pixel budget, BTCHW uint8");
    s.transform.layout = REEL_BATCH_BTHWC;
    s.sample_time_limit = 60;
    check_vary(ds, s, "BTHWC with a per-sample time limit");
    reel_dataset_destroy(&ds);
}

/* The driver refusing to pin (every cuMemHostAlloc fails): plain staging,
 * counted, never a failure; the batches are the CPU Loader's. Three decode
 * workers: three streams at work, each only its own worker's. */
TEST(uploads_fall_back_to_plain_staging)
{
    use_fake();
    reel_dataset *ds = shared_dataset(2);
    reel_loader_settings s = small_settings();
    s.decode_threads = 3;
    check_equal_staged(ds, s, "pinning refused, 3 decode workers", 0);
    check_equal_staged(ds, s, "pinned, 3 decode workers", 1);
    reel_dataset_destroy(&ds);
}

/* One decode worker, the same samples each epoch: after the first epoch
 * the worker's pool and staging hold what the epoch needs, and the
 * metrics stay the same batch after batch; at the end they equal the
 * driver's live allocations, and after close nothing is left. */
TEST(device_pool_is_flat_over_many_batches)
{
    use_fake();
    reel_dataset *ds = shared_dataset(3);
    reel_loader_settings s = small_settings();
    s.transform.short_side = 24;
    s.transform.crop_width = s.transform.crop_height = 16;
    s.sampler.frames_per_clip = 2;
    s.batch_size = 2;
    s.epochs = 4;
    s.decode_threads = 1;
    s.shuffle = 0;
    s.decoder.device = "cuda";
    reel_loader *l = NULL;
    reel_error err;
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_loader_metrics first;
    memset(&first, 0, sizeof first);
    int64_t batches = 0, checked = 0;
    for (;;) {
        reel_batch *b = NULL;
        CHECK_OK(reel_loader_next(l, &b, &err));
        if (!b) {
            if (reel_loader_get_batches_left(l) == 0 && reel_loader_get_epoch(l) >= 4) break;
            continue;
        }
        batches++;
        reel_loader_metrics m;
        CHECK_OK(reel_loader_get_metrics(l, &m, &err));
        if (reel_loader_get_epoch(l) >= 2) { /* the first epoch warms the pool up */
            if (!checked++) first = m;
            CHECK_EQ_INT(m.device_bytes, first.device_bytes);
            CHECK_EQ_INT(m.device_bytes_peak, first.device_bytes_peak);
            CHECK_EQ_INT(m.pinned_bytes, first.pinned_bytes);
            CHECK_EQ_INT(m.pinned_bytes_peak, first.pinned_bytes_peak);
        }
        reel_loader_release(l, b);
    }
    CHECK_MSG(batches >= 24 && checked >= 12, "%lld batches, %lld checked", (long long)batches, (long long)checked);
    reel_loader_metrics m;
    CHECK_OK(reel_loader_get_metrics(l, &m, &err));
    CHECK_EQ_INT(m.device_bytes, counter("live_bytes"));
    CHECK_EQ_INT(m.pinned_bytes, counter("live_host_bytes"));
    CHECK(m.pinned_bytes > 0 && m.device_bytes > m.ring_bytes);
    reel_loader_destroy(&l);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("live_bytes"), 0);
    CHECK_EQ_INT(counter("live_host_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
    CHECK_EQ_INT(counter("streams"), 0);
    reel_dataset_destroy(&ds);
}

/* A fault in a worker's CUDA call fails that sample under the error policy:
 * skipped (a batch with one sample fewer) or raised with a named REEL_E_CUDA;
 * nothing is left allocated after close. */
TEST(worker_faults_follow_the_error_policy)
{
    use_fake();
    reel_dataset *ds = shared_dataset(1);
    const char *calls[] = { "cuMemAlloc_v2", "cuLaunchKernel", "cuMemcpyHtoDAsync_v2" };
    for (int k = 0; k < 3; k++)
        for (int policy = 0; policy < 2; policy++) {
            reel_loader_settings s = small_settings();
            s.decoder.device = "cuda";
            s.decode_threads = 1;
            s.shuffle = 0;
            s.prefetch_batches = 1;
            s.on_error = policy ? REEL_ON_ERROR_RAISE : REEL_ON_ERROR_SKIP;
            /* the loader's own ring allocation is made at create: the
             * fault comes later, in a worker's decode */
            reel_loader *l = NULL;
            reel_error err;
            fail_call(calls[k], k == 0 ? 2 : 1);
            int r = reel_loader_create(&l, ds, &s, &err);
            CHECK_MSG(r == REEL_OK, "%s: create %d (%s)", calls[k], r, err.message);
            int raised = 0;
            int64_t clips = 0, failed = 0;
            for (;;) {
                reel_batch *b = NULL;
                r = reel_loader_next(l, &b, &err);
                if (r != REEL_OK) {
                    CHECK_MSG(r == REEL_E_CUDA && strstr(err.message, "CUDA") && strstr(err.message, ".mp4"),
                              "%s: %d \"%s\"", calls[k], r, err.message);
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
                CHECK_MSG(raised == 1, "%s: raised %d", calls[k], raised);
            else
                CHECK_MSG(failed == 1 && clips == 3 && !raised, "%s: %lld clips, %lld failed", calls[k],
                          (long long)clips, (long long)failed);
            reel_loader_destroy(&l);
            CHECK_EQ_INT(counter("live_allocs"), 0);
            CHECK_EQ_INT(counter("live_host_allocs"), 0);
            CHECK_EQ_INT(counter("streams"), 0);
            CHECK_EQ_INT(counter("retained"), 0);
        }
    reel_dataset_destroy(&ds);
}

TEST(fallback_and_refusals)
{
    use_fake();
    reel_dataset *ds = shared_dataset(1);
    reel_loader_settings s = small_settings();
    reel_loader *l = NULL;
    reel_error err;
    /* a device past the last: named, or the CPU when asked */
    s.decoder.device = "cuda:3";
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "cuda:3") && strstr(err.message, "device_fallback"), "%s", err.message);
    s.decoder.device_fallback = "cpu";
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    reel_batch *b = NULL;
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b != NULL);
    CHECK_EQ_STR(b->device, "cpu");
    reel_loader_release(l, b);
    reel_loader_destroy(&l);
    /* with a GPU there, the fallback is not used: the batches are on it */
    s.decoder.device = "cuda:0";
    CHECK_OK(reel_loader_create(&l, ds, &s, &err));
    CHECK_OK(reel_loader_next(l, &b, &err));
    CHECK(b != NULL && b->device_buffer != NULL);
    CHECK_EQ_STR(b->device, "cuda:0");
    reel_loader_release(l, b);
    reel_loader_destroy(&l);
    /* what the GPU Loader does not do yet */
    s = small_settings();
    s.decoder.device = "cuda";
    s.ring_bytes = 1000; /* the bound on the ring's device memory */
    CHECK_STATUS(reel_loader_create(&l, ds, &s, &err), REEL_E_CUDA);
    CHECK_MSG(strstr(err.message, "bound of 1000 bytes") && strstr(err.message, "cuda:0"), "%s", err.message);
    s.ring_bytes = 0;
    s.sampler.kind = REEL_SAMPLER_FPS;
    s.sampler.fps = 2;
    s.sampler.clips_per_video = 1;
    s.pad = 1;
    int r = reel_loader_create(&l, ds, &s, &err);
    reel_loader_destroy(&l);
    CHECK_MSG(r == REEL_E_CUDA && strstr(err.message, "padding variable batches") &&
                  strstr(err.message, "not done on the GPU"),
              "%d %s", r, err.message);
    CHECK_EQ_INT(counter("live_allocs"), 0);
    CHECK_EQ_INT(counter("retained"), 0);
    reel_dataset_destroy(&ds);
}
