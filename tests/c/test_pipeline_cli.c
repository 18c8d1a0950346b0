/* test_pipeline_cli.c: `reel bench` end to end through the CLI binary
 * ($REEL_CLI): the JSON report's fields, a bad file that lowers the
 * coverage without failing the run, and the exit status for bad arguments
 * and an empty dataset. */
#define _GNU_SOURCE
#include "harness.h"

#include "core/json.h"
#include "testgen.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *cli_or_skip(void)
{
    const char *cli = harness_env("REEL_CLI", NULL);
    if (!cli) harness_skip("REEL_CLI is not set");
    if (access(cli, X_OK) != 0) harness_skip("the reel CLI is not built");
    return cli;
}

/* Runs a shell command; returns its exit status and (if out) its stdout. */
static int run(const char *cmd, char *out, size_t out_size)
{
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    size_t n = 0;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0) {
        if (out && n + 1 < out_size) {
            size_t k = got < out_size - 1 - n ? got : out_size - 1 - n;
            memcpy(out + n, buf, k);
            n += k;
        }
    }
    if (out) out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef struct fields {
    double frames, clips, coverage;
    int have[8];
    int failed_is_list;
} fields;

static int grab(void *op, const char *key, const reel_json_value *v)
{
    fields *f = op;
    static const char *names[8] = { "frames",   "clips",       "seconds",        "frames_per_second",
                                    "coverage", "data_time_s", "peak_rss_bytes", "failures" };
    for (int i = 0; i < 8; i++)
        if (strcmp(key, names[i]) == 0) f->have[i] = 1;
    if (strcmp(key, "frames") == 0) f->frames = v->number;
    if (strcmp(key, "clips") == 0) f->clips = v->number;
    if (strcmp(key, "coverage") == 0) f->coverage = v->number;
    if (strcmp(key, "failures") == 0) f->failed_is_list = v->type == REEL_JSON_OTHER;
    return 0;
}

TEST(bench_json_report_with_a_bad_file)
{
    const char *cli = cli_or_skip();
    char root[1024];
    snprintf(root, sizeof root, "%s/benchset", harness_tmpdir());
    mkdir(root, 0755);
    const char *classes[2] = { "archery", "bowling" };
    for (int i = 0; i < 6; i++) {
        char dir[1100], path[1200];
        snprintf(dir, sizeof dir, "%s/%s", root, classes[i % 2]);
        mkdir(dir, 0755);
        snprintf(path, sizeof path, "%s/v%d.mp4", dir, i);
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = path;
        p.width = 96;
        p.height = 64;
        p.num_frames = 30;
        p.seed = (unsigned)i + 3;
        tg_synth(&p); /* skips when this FFmpeg cannot encode it */
    }
    char bad[1200];
    snprintf(bad, sizeof bad, "%s/bowling/broken.mp4", root);
    FILE *f = fopen(bad, "w");
    CHECK(f != NULL);
    fputs("this is not a video", f);
    fclose(f);

    char cmd[4096], out[1 << 16];
    snprintf(cmd, sizeof cmd,
             "'%s' bench '%s' --frames-per-clip 4 --size 32 --batch 4 --decode-threads 2 --json 2>/dev/null", cli,
             root);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0); /* a bad file never fails the run */
    fields fl;
    memset(&fl, 0, sizeof fl);
    CHECK_MSG(reel__json_object_each(out, strlen(out), grab, &fl, NULL) == 0, "not one JSON object: %s", out);
    for (int i = 0; i < 8; i++) CHECK_MSG(fl.have[i], "field %d missing in %s", i, out);
    CHECK_EQ_INT((int64_t)fl.clips, 6);
    CHECK_EQ_INT((int64_t)fl.frames, 24);
    CHECK_NEAR(fl.coverage, 6.0 / 7.0, 1e-6);
    CHECK(fl.failed_is_list);
    CHECK(strstr(out, "broken.mp4") != NULL);
    CHECK(strstr(out, "\"reason\":") != NULL);
    CHECK_MSG(strstr(out, "\"decode_threads\":2,") != NULL, "--decode-threads 2 not in %s", out);

    /* the human report names the bottleneck */
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --frames-per-clip 2 --size 32 --batch 3 --no-progress 2>/dev/null", cli,
             root);
    CHECK_EQ_INT(run(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "bottleneck") != NULL);
    CHECK(strstr(out, "coverage") != NULL);

    /* a trace file opens as JSON */
    char trace[1200];
    snprintf(trace, sizeof trace, "%s/bench-trace.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd,
             "'%s' bench '%s' --frames-per-clip 2 --size 32 --batch 3 --json --trace '%s' >/dev/null 2>&1", cli, root,
             trace);
    CHECK_EQ_INT(run(cmd, NULL, 0), 0);
    struct stat sb;
    CHECK(stat(trace, &sb) == 0 && sb.st_size > 100);
}

TEST(bench_exit_status_for_bad_arguments_and_empty_datasets)
{
    const char *cli = cli_or_skip();
    char empty[1024], cmd[4096];
    snprintf(empty, sizeof empty, "%s/empty-dataset", harness_tmpdir());
    mkdir(empty, 0755);
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' >/dev/null 2>&1", cli, empty);
    CHECK(run(cmd, NULL, 0) != 0);
    snprintf(cmd, sizeof cmd, "'%s' bench '%s/missing-manifest.csv' >/dev/null 2>&1", cli, harness_tmpdir());
    CHECK(run(cmd, NULL, 0) != 0);
    snprintf(cmd, sizeof cmd, "'%s' bench >/dev/null 2>&1", cli);
    CHECK_EQ_INT(run(cmd, NULL, 0), 2);
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --batch 0 >/dev/null 2>&1", cli, empty);
    CHECK_EQ_INT(run(cmd, NULL, 0), 2);
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --dtype int7 >/dev/null 2>&1", cli, empty);
    CHECK_EQ_INT(run(cmd, NULL, 0), 2);
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --frobnicate >/dev/null 2>&1", cli, empty);
    CHECK_EQ_INT(run(cmd, NULL, 0), 2);
    /* one name per concept: the stage-2 pool is --decode-threads (C decode_threads) */
    snprintf(cmd, sizeof cmd, "'%s' bench '%s' --threads 2 >/dev/null 2>&1", cli, empty);
    CHECK_EQ_INT(run(cmd, NULL, 0), 2);
    snprintf(cmd, sizeof cmd, "'%s' bench --help >/dev/null 2>&1", cli);
    CHECK_EQ_INT(run(cmd, NULL, 0), 0);
}
