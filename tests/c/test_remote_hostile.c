/* test_remote_hostile.c: servers that answer wrongly (issue 20, sections 3
 * and 4), from tests/python/serve_hostile.py on 127.0.0.1: a gzip bomb, an
 * endless 206 body, a 200 with a 53 MB object for a range request, a 206 for
 * other bytes than asked. For each, `reel frames URL --at 0,5 --raw
 * /dev/null` (the CLI of the plain build) must fail naming the cause with
 * its peak RSS (wait4) under 512 MB, and the library in this process (under
 * ASan in the sanitizer tree) must fail the same way. */
#define _GNU_SOURCE
#include "harness.h"
#include "server_common.h"
#include "testgen.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define RSS_MAX_KB (512L * 1024)

typedef test_server server;

static char g_video[1024];

/* A 640x480 video of 120 frames (larger than the first range GET of 256
 * KiB) and the server over it; skips without python3. */
static void server_start(server *s)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) harness_skip_needed("python3 is needed");
    if (!g_video[0]) {
        snprintf(g_video, sizeof g_video, "%s/hostile.mp4", harness_tmpdir());
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = g_video;
        p.width = 640;
        p.height = 480;
        p.num_frames = 120;
        p.gop = 30;
        p.seed = 5;
        tg_synth(&p);
    }
    test_server_start(s, "serve_hostile.py", g_video);
}

typedef struct cli_run {
    int exited, code; /* exited normally, with this code */
    long rss_kb;      /* peak RSS of the reel process */
    char err[4096];   /* its stderr (the start) */
} cli_run;

/* Runs `reel frames URL --at 0,5 --raw /dev/null` with its address space
 * capped at 3 GB (a regression fails here instead of taking the shared
 * machine's memory), for at most 120 s; its peak RSS from wait4. */
static void run_cli(const char *url, cli_run *out)
{
    memset(out, 0, sizeof *out);
    const char *cli = harness_env("REEL_CLI", NULL);
    if (!cli || access(cli, X_OK) != 0) harness_skip_needed("REEL_CLI (the reel CLI of the plain build) is needed");
    char errpath[1200];
    snprintf(errpath, sizeof errpath, "%s/cli.err", harness_tmpdir());
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 2);
        struct rlimit rl = { (rlim_t)3 << 30, (rlim_t)3 << 30 };
        setrlimit(RLIMIT_AS, &rl);
        execl(cli, cli, "frames", url, "--at", "0,5", "--raw", "/dev/null", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t got = 0;
    for (int i = 0; i < 1200 && (got = wait4(pid, &status, WNOHANG, &ru)) == 0; i++) usleep(100000);
    if (got == 0) {
        kill(pid, SIGKILL);
        wait4(pid, &status, 0, &ru);
        CHECK_MSG(0, "reel frames %s did not end within 120 s", url);
    }
    out->exited = WIFEXITED(status);
    out->code = out->exited ? WEXITSTATUS(status) : -1;
    out->rss_kb = ru.ru_maxrss;
    FILE *f = fopen(errpath, "r");
    if (f) {
        size_t n = fread(out->err, 1, sizeof out->err - 1, f);
        out->err[n] = '\0';
        fclose(f);
    }
}

/* Opens url in this process with max_retries retries; the status, and the
 * message in msg. */
static int open_here(const char *url, int max_retries, char *msg, size_t size)
{
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.max_retries = max_retries;
    reel_decoder_settings ds;
    reel_decoder_default_settings(&ds);
    ds.remote = &rs;
    reel_decoder *dec = NULL;
    reel_error err;
    memset(&err, 0, sizeof err);
    int st = reel_decoder_open(&dec, url, &ds, &err);
    snprintf(msg, size, "%s", st == REEL_OK ? "" : err.message);
    reel_decoder_close(&dec);
    return st;
}

/* The CLI fails naming `cause`, under 512 MB; then the library here. */
static void check_refused(const char *mode, const char *cause)
{
    server s;
    server_start(&s);
    char url[512];
    snprintf(url, sizeof url, "%s/%s/v.mp4", s.base, mode);
    cli_run r;
    run_cli(url, &r);
    char msg[1024];
    int st = REEL_OK;
    if (r.exited && r.code != 0 && strstr(r.err, cause) && r.rss_kb < RSS_MAX_KB)
        st = open_here(url, 0, msg, sizeof msg);
    test_server_stop(&s);
    CHECK_MSG(r.exited && r.code != 0, "reel frames %s: exit %d (normal: %d)", url, r.code, r.exited);
    CHECK_MSG(strstr(r.err, cause), "the failure does not name '%s': %s", cause, r.err);
    CHECK_MSG(strstr(r.err, url), "the failure does not name the URL: %s", r.err);
    CHECK_MSG(r.rss_kb < RSS_MAX_KB, "peak RSS %ld kB (limit %ld kB)", r.rss_kb, RSS_MAX_KB);
    CHECK_EQ_INT(st, REEL_E_IO);
    CHECK_MSG(strstr(msg, cause), "the library's message does not name '%s': %s", cause, msg);
    printf("      note: %s: peak RSS %ld kB; %s", mode, r.rss_kb, r.err);
}

TEST(a_gzip_bomb_is_refused_as_an_encoded_body)
{
    check_refused("gzip", "encoded body refused");
}

TEST(an_endless_206_body_stops_past_the_requested_range)
{
    check_refused("endless", "body longer than the requested range");
}

TEST(a_200_for_a_range_request_over_the_whole_object_limit_is_refused_at_its_head)
{
    check_refused("whole", "200 for a range request on an object over the whole-object limit");
}

TEST(a_206_for_other_bytes_is_a_range_mismatch_retried_and_named)
{
    server s;
    server_start(&s);
    char url[512], good[512];
    snprintf(url, sizeof url, "%s/shifted/v.mp4?X-Amz-Signature=SECRET123", s.base);
    snprintf(good, sizeof good, "%s/good/v.mp4", s.base);
    cli_run r;
    run_cli(url, &r);
    char msg[1024], ok_msg[1024];
    int st = open_here(url, 2, msg, sizeof msg);
    int st_good = open_here(good, 0, ok_msg, sizeof ok_msg); /* the same server answering right: fine */
    test_server_stop(&s);
    CHECK_MSG(r.exited && r.code != 0, "reel frames: exit %d", r.code);
    CHECK_MSG(r.rss_kb < RSS_MAX_KB, "peak RSS %ld kB", r.rss_kb);
    CHECK_MSG(strstr(r.err, "range mismatch: asked for bytes 0-262143, got bytes 4096-266239/"), "%s", r.err);
    printf("      note: shifted: peak RSS %ld kB; %s", r.rss_kb, r.err);
    CHECK_MSG(!strstr(r.err, "not a video") && !strstr(r.err, "corrupt"), "the video is blamed: %s", r.err);
    /* the server's fault, retried like a short body: 1 + 2 tries here */
    CHECK_EQ_INT(st, REEL_E_IO);
    CHECK_MSG(strstr(msg, "range mismatch: asked for bytes 0-262143, got bytes 4096-266239/") &&
                  strstr(msg, "after 3 tries"),
              "%s", msg);
    /* the URL redacted: the query string never shows */
    CHECK_MSG(strstr(msg, "/shifted/v.mp4?***") && !strstr(msg, "SECRET123"), "%s", msg);
    CHECK_MSG(!strstr(r.err, "SECRET123"), "%s", r.err);
    CHECK_MSG(st_good == REEL_OK, "the good answer failed: %s", ok_msg);
}
