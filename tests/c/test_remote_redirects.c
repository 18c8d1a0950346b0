/* test_remote_redirects.c: redirects (issue 25, defect 3), against
 * tests/python/serve_hostile.py on 127.0.0.1 and its second port (another
 * origin that records the heads it receives): a 302 to ftp:// is refused by
 * name; an s3:// object redirected to another origin fails naming the
 * redirect and its session token never reaches that origin, while a
 * same-origin redirect is followed, signed; plain http follows a redirect
 * to another origin without the bearer token, and refuses it when the
 * request carries extra headers. */
#define _GNU_SOURCE /* setenv, unsetenv */
#include "harness.h"
#include "server_common.h"
#include "testgen.h"
#include "io/http.h"

#include <stdlib.h>
#include <string.h>

typedef test_server server;

static char g_video[1024];

/* A small video and the server over it; skips without python3. */
static void server_start(server *s)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0) harness_skip_needed("python3 is needed");
    if (!g_video[0]) {
        snprintf(g_video, sizeof g_video, "%s/redirects.mp4", harness_tmpdir());
        reel_synth_params p;
        reel_synth_default_params(&p);
        p.path = g_video;
        p.width = 96;
        p.height = 64;
        p.num_frames = 12;
        p.gop = 6;
        p.seed = 7;
        tg_synth(&p);
    }
    test_server_start(s, "serve_hostile.py", g_video);
}

/* Opens url with no retry (and, when given, a bearer token and extra
 * headers): the status, the message in msg. */
static int open_url(const char *url, const char *bearer, const char *const *headers, char *msg, size_t size)
{
    reel_remote_settings rs;
    reel_remote_default_settings(&rs);
    rs.max_retries = 0;
    rs.bearer_token = bearer;
    rs.headers = headers;
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

/* The heads the server's other origin received so far, into out. */
static void seen(const server *s, char *out, size_t size)
{
    char url[512];
    snprintf(url, sizeof url, "%s/seen/", s->base);
    uint8_t *body = NULL;
    size_t len = 0;
    reel_error err;
    memset(&err, 0, sizeof err);
    int st = reel__http_get(url, NULL, NULL, &body, &len, &err);
    snprintf(out, size, "%s", st == REEL_OK && body ? (const char *)body : "(no answer)");
    free(body);
}

static void s3_env(const char *endpoint)
{
    setenv("AWS_ENDPOINT_URL", endpoint, 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDREDIRECT", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secretredirect", 1);
    setenv("AWS_SESSION_TOKEN", "SESSIONTOKENREDIRECT", 1);
    setenv("AWS_REGION", "us-east-1", 1);
}

static void s3_env_clear(void)
{
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_REGION");
}

TEST(a_redirect_to_ftp_is_refused_by_name)
{
    server s;
    server_start(&s);
    char url[512], msg[1024];
    snprintf(url, sizeof url, "%s/to-ftp/v.mp4?X-Amz-Signature=SIGFTP", s.base);
    int st = open_url(url, NULL, NULL, msg, sizeof msg);
    test_server_stop(&s);
    CHECK_EQ_INT(st, REEL_E_IO);
    CHECK_MSG(strstr(msg, "/to-ftp/v.mp4?***: redirect to ftp://127.0.0.1:") &&
                  strstr(msg, "/v.mp4 refused (only http and https are followed)"),
              "%s", msg);
    CHECK_MSG(!strstr(msg, "SIGFTP"), "%s", msg);
}

TEST(an_s3_redirect_to_another_origin_is_refused_and_sends_no_session_token)
{
    server s;
    server_start(&s);
    char endpoint[512], msg[1024], heads[16384];
    snprintf(endpoint, sizeof endpoint, "%s/to-other", s.base);
    s3_env(endpoint);
    int st = open_url("s3://bucket/v.mp4", NULL, NULL, msg, sizeof msg);
    s3_env_clear();
    seen(&s, heads, sizeof heads);
    test_server_stop(&s);
    CHECK_MSG(!strstr(heads, "SESSIONTOKENREDIRECT"), "the session token reached another origin: %s", heads);
    CHECK_MSG(!strstr(heads, "AKIDREDIRECT"), "the key id reached another origin: %s", heads);
    CHECK_EQ_INT(st, REEL_E_IO);
    CHECK_MSG(strstr(msg, "s3://bucket/v.mp4: redirect to http://127.0.0.1:") &&
                  strstr(msg, "/good/v.mp4 refused (another origin; the request's credentials are not sent there)"),
              "%s", msg);
    CHECK_MSG(!strstr(msg, "SESSIONTOKENREDIRECT") && !strstr(msg, "secretredirect"), "%s", msg);
}

TEST(an_s3_redirect_within_its_origin_is_followed)
{
    server s;
    server_start(&s);
    char endpoint[512], msg[1024];
    snprintf(endpoint, sizeof endpoint, "%s/to-same", s.base);
    s3_env(endpoint);
    int st = open_url("s3://bucket/v.mp4", NULL, NULL, msg, sizeof msg);
    s3_env_clear();
    test_server_stop(&s);
    CHECK_MSG(st == REEL_OK, "%s", msg);
}

TEST(http_follows_another_origin_without_the_bearer_token_and_refuses_it_with_extra_headers)
{
    server s;
    server_start(&s);
    char url[512], plain[1024], bearer[1024], extra[1024], heads[16384];
    snprintf(url, sizeof url, "%s/to-other/v.mp4", s.base);
    int st_plain = open_url(url, NULL, NULL, plain, sizeof plain);
    int st_bearer = open_url(url, "BEARERREDIRECT", NULL, bearer, sizeof bearer);
    const char *const headers[] = { "X-Api-Key: APIKEYREDIRECT", NULL };
    int st_extra = open_url(url, NULL, headers, extra, sizeof extra);
    seen(&s, heads, sizeof heads);
    test_server_stop(&s);
    CHECK_MSG(st_plain == REEL_OK, "%s", plain);
    CHECK_MSG(st_bearer == REEL_OK, "%s", bearer);
    CHECK_MSG(strstr(heads, "GET /good/v.mp4"), "the other origin saw no request: %s", heads);
    CHECK_MSG(!strstr(heads, "BEARERREDIRECT"), "the bearer token reached another origin: %s", heads);
    CHECK_MSG(!strstr(heads, "APIKEYREDIRECT"), "an extra header reached another origin: %s", heads);
    CHECK_EQ_INT(st_extra, REEL_E_IO);
    CHECK_MSG(strstr(extra, "/to-other/v.mp4: redirect to http://127.0.0.1:") &&
                  strstr(extra, "refused (another origin"),
              "%s", extra);
}
