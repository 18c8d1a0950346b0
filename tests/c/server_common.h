/* server_common.h: header-only helper shared by the C tests that need
 * servers on 127.0.0.1 (test_remote_faults.c, test_remote_hostile.c,
 * test_remote_read.c): a
 * Python helper script from tests/python started with its stdin and stdout
 * on pipes, waited for until it prints "READY <base url>", and stopped at the
 * end of its stdin (killed if it lingers). Static, like testgen.h. */
#ifndef REEL_TEST_SERVER_COMMON_H
#define REEL_TEST_SERVER_COMMON_H

#include "harness.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct test_server {
    pid_t pid;
    int to_fd, from_fd; /* the helper's stdin and stdout */
    char base[256];     /* the base URL it printed */
} test_server;

/* One line from the helper within `secs`, into buf (no newline): 0, or -1. */
static inline int test_server_read_line(test_server *s, char *buf, size_t size, double secs)
{
    size_t n = 0;
    const int64_t end = (int64_t)(secs * 1000);
    int64_t waited = 0;
    buf[0] = '\0';
    while (n + 1 < size) {
        struct pollfd pf = { s->from_fd, POLLIN, 0 };
        int r = poll(&pf, 1, 100);
        if (r == 0) {
            if ((waited += 100) >= end) return -1;
            continue;
        }
        if (r < 0) return -1;
        char c;
        if (read(s->from_fd, &c, 1) != 1) return -1;
        if (c == '\n') break;
        buf[n++] = c;
        buf[n] = '\0';
    }
    buf[n] = '\0';
    return 0;
}

/* Closes its stdin (the helper stops then), waits up to 5 s, then kills it. */
static inline void test_server_stop(test_server *s)
{
    if (s->to_fd >= 0) close(s->to_fd);
    if (s->from_fd >= 0) close(s->from_fd);
    s->to_fd = s->from_fd = -1;
    if (s->pid > 0) {
        int status;
        for (int i = 0; i < 100 && waitpid(s->pid, &status, WNOHANG) == 0; i++) usleep(50000);
        if (waitpid(s->pid, &status, WNOHANG) == 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
    }
    s->pid = 0;
}

/* Starts `python3 tests/python/<script> <arg>` and waits (60 s at most) for
 * its "READY <url>" line; s->base gets the URL. A helper that does not start
 * fails the test (after it is stopped). */
static inline void test_server_start(test_server *s, const char *script, const char *arg)
{
    memset(s, 0, sizeof *s);
    s->to_fd = s->from_fd = -1;
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    char path[1200];
    snprintf(path, sizeof path, "%s/tests/python/%s", REEL_SOURCE_DIR, script);
    char *argv[] = { "python3", path, (char *)arg, NULL };
    int r = posix_spawnp(&s->pid, "python3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    s->to_fd = in[1];
    s->from_fd = out[0];
    CHECK_MSG(r == 0, "cannot start %s", path);
    char line[512];
    if (test_server_read_line(s, line, sizeof line, 60) != 0 || strncmp(line, "READY ", 6) != 0) {
        test_server_stop(s);
        CHECK_MSG(0, "%s did not start: '%s'", script, line);
    }
    snprintf(s->base, sizeof s->base, "%.200s", line + 6);
}

/* nginx over the test's folder and the fault proxy in front of it
 * (tests/python/serve_faults.py); skips when python3 or nginx is missing
 * (make test installs both). */
static inline void test_server_start_faults(test_server *s)
{
    if (system("command -v python3 >/dev/null 2>&1 && { command -v nginx || test -x /usr/sbin/nginx; } "
               ">/dev/null 2>&1") != 0)
        harness_skip_needed("python3 and nginx are needed (make test installs nginx)");
    test_server_start(s, "serve_faults.py", harness_tmpdir());
}

/* Sends one command to the helper and checks its "ok"; the answer goes to
 * reply (NULL: dropped). */
static inline void test_server_command(test_server *s, const char *cmd, char *reply, size_t size)
{
    char line[512], own[512];
    if (!reply) {
        reply = own;
        size = sizeof own;
    }
    snprintf(line, sizeof line, "%s\n", cmd);
    CHECK(write(s->to_fd, line, strlen(line)) == (ssize_t)strlen(line));
    CHECK(test_server_read_line(s, reply, size, 10) == 0);
    CHECK_MSG(strncmp(reply, "ok", 2) == 0, "%s: %s", cmd, reply);
}

#endif
