/* harness.h: reel's tiny C test framework.
 *
 *   #include "harness.h"
 *
 *   TEST(opens_a_file) {
 *       reel_decoder *dec = NULL;
 *       reel_error err;
 *       if (!harness_have_ffmpeg()) harness_skip("no ffmpeg CLI");
 *       CHECK_OK(reel_decoder_open(&dec, path, NULL, &err));
 *       CHECK_EQ_INT(reel_decoder_get_info(dec)->num_frames, 120);
 *       reel_decoder_close(&dec);
 *   }
 *
 * TEST() defines a test and registers it before main() runs. A failed check
 * records "file:line: message" and leaves the test at once (longjmp); the
 * next test then runs. Anything the test allocated before the failure is
 * leaked, which only matters under LeakSanitizer and only for a test that
 * fails anyway; call harness_skip() before allocating.
 *
 * The test binary: `test_foo [SUBSTRING | --list]` runs every test (or those
 * whose name contains SUBSTRING), prints one line per test
 *   PASS  name (0.012 s)
 *   FAIL  name (0.003 s)
 *         tests/c/test_foo.c:42: CHECK_EQ_INT(n, 3) failed: 2 != 3
 *   SKIP  name (0.000 s): no ffmpeg CLI
 * and, as its last line, "N passed, N failed, N skipped" (skips nested inside
 * a test that ran, harness_nested_skip(), count too). Exit status 0 iff
 * nothing failed.
 *
 * Strict mode (REEL_STRICT=1, which .ci/run sets): a skip fails the test
 * unless tests/allowed_skips.txt (or $REEL_ALLOWED_SKIPS) lists it with a
 * reason; ids are "c/<binary>/<test>" and, nested, "c/<binary>/<test>/<sub>".
 *
 * Environment: REEL_SHARED_VIDEOS, REEL_TESTDATA and REEL_CLI get the build's
 * defaults when unset; REEL_KEEP_TMP=1 keeps harness_tmpdir();
 * REEL_TEST_SUMMARY_FILE=<path> appends "binary<TAB>passed<TAB>failed<TAB>skipped"
 * to that file (used by scripts/run_tests.sh). */
#ifndef REEL_TEST_HARNESS_H
#define REEL_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 in an ASan or TSan build (the tests that scale their work by it). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#ifndef UNDER_SANITIZER
#define UNDER_SANITIZER 0
#endif

#if defined(__GNUC__)
#define HARNESS_NORETURN     __attribute__((noreturn))
#define HARNESS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HARNESS_NORETURN
#define HARNESS_PRINTF(f, a)
#endif

typedef void (*harness_test_fn)(void);

/* ---------------------------------------------------------------- defining tests */

/** Defines and registers test `name` (a C identifier, unique per binary). */
#define TEST(name)                                                         \
    static void harness_test_##name(void);                                 \
    __attribute__((constructor)) static void harness_register_##name(void) \
    {                                                                      \
        harness_register(#name, harness_test_##name, __FILE__, __LINE__);  \
    }                                                                      \
    static void harness_test_##name(void)

/* ---------------------------------------------------------------- checks */

/** Fails unless cond is true. */
#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) harness_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond); \
    } while (0)

/** Fails unless cond is true, with a printf-style message. */
#define CHECK_MSG(cond, ...)                                        \
    do {                                                            \
        if (!(cond)) harness_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/** Fails now with a printf-style message. */
#define FAIL(...) harness_fail(__FILE__, __LINE__, __VA_ARGS__)

/** Integers compared as int64_t; both values printed on failure. */
#define CHECK_EQ_INT(a, b)                                                                        \
    do {                                                                                          \
        int64_t harness_a_ = (int64_t)(a), harness_b_ = (int64_t)(b);                             \
        if (harness_a_ != harness_b_)                                                             \
            harness_fail(__FILE__, __LINE__, "CHECK_EQ_INT(%s, %s) failed: %lld != %lld", #a, #b, \
                         (long long)harness_a_, (long long)harness_b_);                           \
    } while (0)

/** Strings compared with strcmp (two NULLs are equal); both printed. */
#define CHECK_EQ_STR(a, b)                                                                                  \
    do {                                                                                                    \
        const char *harness_a_ = (a), *harness_b_ = (b);                                                    \
        if (!harness_str_eq(harness_a_, harness_b_))                                                        \
            harness_fail(__FILE__, __LINE__, "CHECK_EQ_STR(%s, %s) failed: %s%s%s != %s%s%s", #a, #b,       \
                         harness_a_ ? "\"" : "", harness_a_ ? harness_a_ : "NULL", harness_a_ ? "\"" : "",  \
                         harness_b_ ? "\"" : "", harness_b_ ? harness_b_ : "NULL", harness_b_ ? "\"" : ""); \
    } while (0)

/** Doubles within an absolute tolerance. */
#define CHECK_NEAR(a, b, tol)                                                                               \
    do {                                                                                                    \
        double harness_a_ = (double)(a), harness_b_ = (double)(b);                                          \
        double harness_d_ = harness_a_ - harness_b_;                                                        \
        if (!(harness_d_ <= (tol) && -harness_d_ <= (tol)))                                                 \
            harness_fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s, %s) failed: %.17g vs %.17g", #a, #b, #tol, \
                         harness_a_, harness_b_);                                                           \
    } while (0)

/** expr is a reel status; fails unless it is REEL_OK, printing reel_strerror. */
#define CHECK_OK(expr)                                                                      \
    do {                                                                                    \
        int harness_s_ = (int)(expr);                                                       \
        if (harness_s_ != 0) harness_fail_status(__FILE__, __LINE__, #expr, harness_s_, 0); \
    } while (0)

/** expr is a reel status; fails unless it equals `expected`. */
#define CHECK_STATUS(expr, expected)                                                                          \
    do {                                                                                                      \
        int harness_s_ = (int)(expr), harness_e_ = (int)(expected);                                           \
        if (harness_s_ != harness_e_) harness_fail_status(__FILE__, __LINE__, #expr, harness_s_, harness_e_); \
    } while (0)

/* ---------------------------------------------------------------- helpers */

/** A directory private to this process, created on first use under
 *  $REEL_TESTDATA (else /tmp) and removed at exit unless REEL_KEEP_TMP=1. */
const char *harness_tmpdir(void);

/** getenv(name), or `fallback` when unset or empty. */
const char *harness_env(const char *name, const char *fallback);

/** 1 if the ffmpeg and ffprobe command-line tools run, else 0 (cached). */
int harness_have_ffmpeg(void);

/** Marks the running test skipped with `why` and leaves it. */
HARNESS_NORETURN void harness_skip(const char *why);

/** For a missing resource that a real comparison needs (the shared videos,
 *  the ffmpeg CLI): skips like harness_skip(), except in strict mode
 *  (REEL_STRICT=1, which `make test` sets when CI=true), where the test
 *  fails instead, so a comparison cannot silently stop running. */
HARNESS_NORETURN void harness_skip_needed(const char *why);

/** 1 in strict mode (REEL_STRICT=1). */
int harness_strict(void);

/** Records that part `sub` of the running test (e.g. one video of a loop run
 *  with harness_run_nested) was skipped for `why`, so that it is counted and
 *  printed. Returns 1 when the skip is accepted; 0 in strict mode when
 *  tests/allowed_skips.txt does not allow it (the caller then fails). */
int harness_nested_skip(const char *sub, const char *why);

/** 1 if the strict-mode skip list allows a skip of test `id` with `message`. */
int harness_skip_allowed(const char *id, const char *message);

/** Number of registered tests. */
size_t harness_test_count(void);

/* ---------------------------------------------------------------- internals */

void harness_register(const char *name, harness_test_fn fn, const char *file, int line);
HARNESS_NORETURN HARNESS_PRINTF(3, 4) void harness_fail(const char *file, int line, const char *fmt, ...);
HARNESS_NORETURN
void harness_fail_status(const char *file, int line, const char *expr, int status, int expected);
int harness_str_eq(const char *a, const char *b);

/** Results of harness_run_nested(). */
enum { HARNESS_PASS = 0, HARNESS_FAIL = 1, HARNESS_SKIP = 2 };

/** Runs fn as if it were a test body, without counting it, and returns
 *  HARNESS_PASS/FAIL/SKIP; the failure or skip message goes to msg (may be
 *  NULL). For testing helpers that are expected to fail. */
int harness_run_nested(harness_test_fn fn, char *msg, size_t msg_size);

#ifdef __cplusplus
}
#endif
#endif /* REEL_TEST_HARNESS_H */
