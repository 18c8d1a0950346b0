/* harness.c: the runner behind harness.h. See harness.h for the interface. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw, mkdtemp, setenv */
#endif

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef HARNESS_DEFAULT_SHARED_VIDEOS
#define HARNESS_DEFAULT_SHARED_VIDEOS ""
#endif
#ifndef HARNESS_DEFAULT_TESTDATA
#define HARNESS_DEFAULT_TESTDATA ""
#endif
#ifndef HARNESS_DEFAULT_CLI
#define HARNESS_DEFAULT_CLI ""
#endif
#ifndef HARNESS_ALLOWED_SKIPS
#define HARNESS_ALLOWED_SKIPS ""
#endif

#define HARNESS_MSG_SIZE 4096

typedef struct harness_test {
    const char *name;
    harness_test_fn fn;
    const char *file;
    int line;
} harness_test;

static harness_test *g_tests;
static size_t g_ntests, g_cap;

/* State of the test body now running. */
static jmp_buf g_jmp;
static int g_in_test;
static int g_result;
static char g_msg[HARNESS_MSG_SIZE];
static const char *volatile g_current; /* read by the crash handler */

static char g_tmpdir[4096];
static pid_t g_tmpdir_owner;

/* Skips recorded inside the running test (harness_nested_skip). */
static size_t g_nested_skips;
static const char *g_progname = "test";

/* ---------------------------------------------------------------- registry */

void harness_register(const char *name, harness_test_fn fn, const char *file, int line)
{
    if (g_ntests == g_cap) {
        size_t cap = g_cap ? 2 * g_cap : 64;
        harness_test *t = realloc(g_tests, cap * sizeof *t);
        if (!t) {
            fputs("harness: out of memory registering tests\n", stderr);
            exit(1);
        }
        g_tests = t;
        g_cap = cap;
    }
    g_tests[g_ntests].name = name;
    g_tests[g_ntests].fn = fn;
    g_tests[g_ntests].file = file;
    g_tests[g_ntests].line = line;
    g_ntests++;
}

size_t harness_test_count(void)
{
    return g_ntests;
}

/* Source order: by file, then line (constructor order is not guaranteed). */
static int cmp_tests(const void *pa, const void *pb)
{
    const harness_test *a = pa, *b = pb;
    int c = strcmp(a->file, b->file);
    if (c) return c;
    return (a->line > b->line) - (a->line < b->line);
}

/* ---------------------------------------------------------------- failing */

static HARNESS_NORETURN void leave_test(int result)
{
    g_result = result;
    if (g_in_test) longjmp(g_jmp, 1);
    /* A check outside any test (e.g. in a constructor): report and stop. */
    fprintf(stdout, "%s outside a test: %s\n", result == HARNESS_SKIP ? "skip" : "check failed", g_msg);
    fflush(stdout);
    exit(result == HARNESS_SKIP ? 0 : 1);
}

void harness_fail(const char *file, int line, const char *fmt, ...)
{
    int n = snprintf(g_msg, sizeof g_msg, "%s:%d: ", file, line);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof g_msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_msg + n, sizeof g_msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    leave_test(HARNESS_FAIL);
}

void harness_fail_status(const char *file, int line, const char *expr, int status, int expected)
{
    if (expected == 0)
        harness_fail(file, line, "%s returned %d (%s), expected REEL_OK", expr, status, reel_strerror(status));
    harness_fail(file, line, "%s returned %d (%s), expected %d (%s)", expr, status, reel_strerror(status), expected,
                 reel_strerror(expected));
}

int harness_str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

void harness_skip(const char *why)
{
    snprintf(g_msg, sizeof g_msg, "%s", why ? why : "(no reason given)");
    leave_test(HARNESS_SKIP);
}

int harness_strict(void)
{
    const char *v = getenv("REEL_STRICT");
    return v && strcmp(v, "1") == 0;
}

/* ---------------------------------------------------------------- allowed skips */

/* The strict-mode skip list (tests/allowed_skips.txt, or $REEL_ALLOWED_SKIPS):
 * lines "WHERE | MESSAGE | WHY", WHERE and MESSAGE fnmatch patterns. Read once;
 * a missing or malformed file allows nothing (and says so). */
typedef struct skip_rule {
    char *where, *message;
} skip_rule;

static skip_rule *g_rules;
static size_t g_nrules;
static int g_rules_loaded;
static char g_rules_error[512];

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

static void load_rules(void)
{
    if (g_rules_loaded) return;
    g_rules_loaded = 1;
    const char *path = harness_env("REEL_ALLOWED_SKIPS", HARNESS_ALLOWED_SKIPS);
    FILE *f = *path ? fopen(path, "r") : NULL;
    if (!f) {
        snprintf(g_rules_error, sizeof g_rules_error, " (the list %s could not be read)", *path ? path : "(unset)");
        return;
    }
    char line[2048];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *l = trim(line);
        if (!*l || *l == '#') continue;
        char *bar1 = strstr(l, " | ");
        char *bar2 = bar1 ? strstr(bar1 + 3, " | ") : NULL;
        if (!bar2 || !*trim(bar2 + 3)) {
            snprintf(g_rules_error, sizeof g_rules_error, " (%s:%d is not \"WHERE | MESSAGE | WHY\")", path, lineno);
            continue;
        }
        *bar1 = '\0';
        *bar2 = '\0';
        skip_rule *r = realloc(g_rules, (g_nrules + 1) * sizeof *r);
        if (!r) break;
        g_rules = r;
        g_rules[g_nrules].where = strdup(trim(l));
        g_rules[g_nrules].message = strdup(trim(bar1 + 3));
        if (g_rules[g_nrules].where && g_rules[g_nrules].message) g_nrules++;
    }
    fclose(f);
}

int harness_skip_allowed(const char *id, const char *message)
{
    load_rules();
    for (size_t i = 0; i < g_nrules; i++)
        if (fnmatch(g_rules[i].where, id, 0) == 0 && fnmatch(g_rules[i].message, message ? message : "", 0) == 0)
            return 1;
    return 0;
}

/* Strict mode turns a skip that the list does not allow into this failure message. */
static void strict_skip_message(char *out, size_t size, const char *id, const char *why)
{
    snprintf(out, size,
             "strict mode (REEL_STRICT=1): skip not allowed by tests/allowed_skips.txt%.400s: %.400s: %.3000s",
             g_rules_error, id, why);
}

int harness_nested_skip(const char *sub, const char *why)
{
    char id[1024];
    snprintf(id, sizeof id, "c/%s/%s/%s", g_progname, g_current ? g_current : "?", sub ? sub : "?");
    if (!why) why = "(no reason given)";
    if (harness_strict() && !harness_skip_allowed(id, why)) {
        char msg[HARNESS_MSG_SIZE];
        strict_skip_message(msg, sizeof msg, id, why);
        printf("FAIL  %s: %s\n", id, msg);
        return 0;
    }
    printf("SKIP  %s: %s\n", id, why);
    g_nested_skips++;
    return 1;
}

void harness_skip_needed(const char *why)
{
    if (!harness_strict()) harness_skip(why);
    snprintf(g_msg, sizeof g_msg, "strict mode (REEL_STRICT=1): a required comparison cannot run: %s",
             why ? why : "(no reason given)");
    leave_test(HARNESS_FAIL);
}

/* Runs one body under a fresh jump buffer; returns HARNESS_PASS/FAIL/SKIP. */
static int run_body(harness_test_fn fn)
{
    g_result = HARNESS_PASS;
    g_msg[0] = '\0';
    g_in_test = 1;
    if (setjmp(g_jmp) == 0) fn();
    g_in_test = 0;
    return g_result;
}

int harness_run_nested(harness_test_fn fn, char *msg, size_t msg_size)
{
    jmp_buf saved;
    char saved_msg[HARNESS_MSG_SIZE];
    int saved_in = g_in_test, saved_result = g_result, r;

    memcpy(saved, g_jmp, sizeof saved);
    memcpy(saved_msg, g_msg, sizeof saved_msg);
    r = run_body(fn);
    if (msg && msg_size) snprintf(msg, msg_size, "%s", g_msg);
    memcpy(g_jmp, saved, sizeof saved);
    memcpy(g_msg, saved_msg, sizeof saved_msg);
    g_in_test = saved_in;
    g_result = saved_result;
    return r;
}

/* ---------------------------------------------------------------- helpers */

const char *harness_env(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return (v && *v) ? v : fallback;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0; /* best effort: keep going */
}

static void remove_tmpdir(void)
{
    if (!g_tmpdir[0] || getpid() != g_tmpdir_owner) return; /* not in forked children */
    if (strcmp(harness_env("REEL_KEEP_TMP", "0"), "1") == 0) {
        fprintf(stderr, "harness: kept temporary directory %s\n", g_tmpdir);
        return;
    }
    nftw(g_tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void mkdir_p(const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) return;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0777);
            *p = '/';
        }
    }
    mkdir(buf, 0777);
}

const char *harness_tmpdir(void)
{
    if (g_tmpdir[0]) return g_tmpdir;
    const char *base = harness_env("REEL_TESTDATA", NULL);
    if (base) mkdir_p(base);
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *root = (attempt == 0 && base) ? base : harness_env("TMPDIR", "/tmp");
        snprintf(g_tmpdir, sizeof g_tmpdir, "%s/tmp-%s-XXXXXX", root, g_progname);
        if (mkdtemp(g_tmpdir)) {
            g_tmpdir_owner = getpid();
            atexit(remove_tmpdir);
            return g_tmpdir;
        }
    }
    g_tmpdir[0] = '\0';
    harness_fail(__FILE__, __LINE__, "cannot create a temporary directory: %s", strerror(errno));
}

int harness_have_ffmpeg(void)
{
    static int cached = -1;
    if (cached < 0) {
        cached = system("ffmpeg -hide_banner -version >/dev/null 2>&1") == 0 &&
                 system("ffprobe -hide_banner -version >/dev/null 2>&1") == 0;
    }
    return cached;
}

/* ---------------------------------------------------------------- crashes */

/* On a fatal signal, name the test that was running, then hand the signal to
 * whoever handled it before us (a sanitizer, or the default action). */
static const int k_fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
static struct sigaction g_old_action[sizeof k_fatal / sizeof k_fatal[0]];

static void write_str(const char *s)
{
    ssize_t r = write(1, s, strlen(s));
    (void)r;
}

static void crash_handler(int sig)
{
    const char *name = g_current;
    write_str("\nCRASH ");
    write_str(name ? name : "(between tests)");
    write_str(sig == SIGSEGV  ? " (SIGSEGV)\n"
              : sig == SIGBUS ? " (SIGBUS)\n"
              : sig == SIGFPE ? " (SIGFPE)\n"
              : sig == SIGILL ? " (SIGILL)\n"
                              : " (SIGABRT)\n");
    for (size_t i = 0; i < sizeof k_fatal / sizeof k_fatal[0]; i++)
        if (k_fatal[i] == sig) sigaction(sig, &g_old_action[i], NULL);
    /* Returning re-executes the faulting instruction (or abort() re-raises),
     * now under the previous handler. */
}

static void install_crash_handlers(void)
{
    for (size_t i = 0; i < sizeof k_fatal / sizeof k_fatal[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = crash_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(k_fatal[i], &sa, &g_old_action[i]);
    }
}

/* ---------------------------------------------------------------- main */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void set_default_env(const char *name, const char *value)
{
    const char *v = getenv(name);
    if ((!v || !*v) && value && *value) setenv(name, value, 1);
}

static void write_summary_file(size_t passed, size_t failed, size_t skipped)
{
    const char *path = harness_env("REEL_TEST_SUMMARY_FILE", NULL);
    if (!path) return;
    char line[512];
    int n = snprintf(line, sizeof line, "%s\t%zu\t%zu\t%zu\n", g_progname, passed, failed, skipped);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    if (n > 0) {
        ssize_t w = write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)w;
    }
    close(fd);
}

int main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    size_t passed = 0, failed = 0, skipped = 0, matched = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* SVT-AV1 (used by the test-video generator) prints a banner otherwise */
    setenv("SVT_LOG", "1", 0);
    if (argc > 0 && argv[0]) {
        const char *slash = strrchr(argv[0], '/');
        g_progname = slash ? slash + 1 : argv[0];
    }
    set_default_env("REEL_SHARED_VIDEOS", HARNESS_DEFAULT_SHARED_VIDEOS);
    set_default_env("REEL_TESTDATA", HARNESS_DEFAULT_TESTDATA);
    set_default_env("REEL_CLI", HARNESS_DEFAULT_CLI);

    if (g_ntests > 1) qsort(g_tests, g_ntests, sizeof *g_tests, cmp_tests);

    if (filter && (strcmp(filter, "--list") == 0 || strcmp(filter, "-l") == 0)) {
        for (size_t i = 0; i < g_ntests; i++) printf("%s\n", g_tests[i].name);
        return 0;
    }
    if (filter && (strcmp(filter, "--help") == 0 || strcmp(filter, "-h") == 0)) {
        printf("usage: %s [SUBSTRING | --list]\n", g_progname);
        return 0;
    }

    install_crash_handlers();
    for (size_t i = 0; i < g_ntests; i++) {
        const harness_test *t = &g_tests[i];
        if (filter && !strstr(t->name, filter)) continue;
        matched++;
        g_current = t->name;
        g_nested_skips = 0;
        double t0 = now_seconds();
        int r = run_body(t->fn);
        double dt = now_seconds() - t0;
        if (r == HARNESS_SKIP && harness_strict()) {
            char id[1024], why[HARNESS_MSG_SIZE];
            snprintf(id, sizeof id, "c/%s/%s", g_progname, t->name);
            snprintf(why, sizeof why, "%s", g_msg);
            if (!harness_skip_allowed(id, why)) {
                strict_skip_message(g_msg, sizeof g_msg, id, why);
                r = HARNESS_FAIL;
            }
        }
        /* Skips inside a test that ran count too (a skipped test is one skip). */
        if (r != HARNESS_SKIP) skipped += g_nested_skips;
        g_current = NULL;
        fflush(stderr);
        if (r == HARNESS_PASS) {
            passed++;
            printf("PASS  %s (%.3f s)\n", t->name, dt);
        } else if (r == HARNESS_SKIP) {
            skipped++;
            printf("SKIP  %s (%.3f s): %s\n", t->name, dt, g_msg);
        } else {
            failed++;
            printf("FAIL  %s (%.3f s)\n      %s\n", t->name, dt, g_msg);
        }
    }
    if (filter && matched == 0) fprintf(stderr, "%s: no test name contains \"%s\"\n", g_progname, filter);

    write_summary_file(passed, failed, skipped);
    printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
    fflush(stdout);
    return failed ? 1 : 0;
}
