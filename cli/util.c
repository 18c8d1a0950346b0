/* util.c: JSON string output (through core/json.c) and argument parsing
 * for the CLI. */
#include "util.h"
#include "core/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cli_json_str(FILE *fp, const char *s)
{
    /* one JSON escaper for the library and the CLI: core/json.c's */
    reel_buf b;
    reel__buf_init(&b);
    reel__buf_json_string(&b, s ? s : "");
    if (b.data && !b.oom)
        fputs(b.data, fp);
    else
        fputs("\"\"", fp);
    reel__buf_free(&b);
}

static long parse_list(const char *s, void **out, int is_float)
{
    size_t n = 1;
    for (const char *p = s; *p; p++)
        if (*p == ',') n++;
    void *arr = malloc(n * (is_float ? sizeof(double) : sizeof(int64_t)));
    if (!arr) return -1;
    const char *p = s;
    for (size_t i = 0; i < n; i++) {
        char *end;
        errno = 0;
        if (is_float)
            ((double *)arr)[i] = strtod(p, &end);
        else
            ((int64_t *)arr)[i] = strtoll(p, &end, 10);
        if (end == p || errno || (*end != ',' && *end != '\0')) {
            free(arr);
            return -1;
        }
        p = end + 1;
    }
    *out = arr;
    return (long)n;
}

long cli_parse_i64_list(const char *s, int64_t **out)
{
    return parse_list(s, (void **)out, 0);
}
long cli_parse_f64_list(const char *s, double **out)
{
    return parse_list(s, (void **)out, 1);
}

int cli_parse_size(const char *s, int *w, int *h)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X')) return -1;
    const char *q = end + 1;
    long b = strtol(q, &end, 10);
    if (end == q || *end || a < 0 || b < 0 || a > 16384 || b > 16384 || (a == 0 && b == 0)) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int cli_parse_crop(const char *s, int *x, int *y, int *w, int *h)
{
    int64_t *v = NULL;
    long n = cli_parse_i64_list(s, &v);
    if (n != 4) {
        free(v);
        return -1;
    }
    int ok =
        v[0] >= 0 && v[1] >= 0 && v[2] > 0 && v[3] > 0 && v[0] < 65536 && v[1] < 65536 && v[2] < 65536 && v[3] < 65536;
    if (ok) {
        *x = (int)v[0];
        *y = (int)v[1];
        *w = (int)v[2];
        *h = (int)v[3];
    }
    free(v);
    return ok ? 0 : -1;
}

int cli_parse_int(const char *s, int *v)
{
    char *end;
    errno = 0;
    long a = strtol(s, &end, 10);
    if (end == s || *end || errno || a < 0 || a > 1000000000) return -1;
    *v = (int)a;
    return 0;
}
