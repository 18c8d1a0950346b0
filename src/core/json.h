/* json.h: the small JSON the loader needs: a growable text buffer with JSON
 * string escaping (metrics, trace, CLI report) and a reader for the flat
 * objects of a JSONL manifest. Not thread-safe per object. */
#ifndef REEL_CORE_JSON_H
#define REEL_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

typedef struct reel_buf {
    char *data; /* NUL-terminated when not NULL */
    size_t len, cap;
    int oom; /* an append failed; the text is incomplete */
} reel_buf;

void reel__buf_init(reel_buf *b);
void reel__buf_free(reel_buf *b);
void reel__buf_put(reel_buf *b, const char *s, size_t n);
void reel__buf_puts(reel_buf *b, const char *s);
void reel__buf_printf(reel_buf *b, const char *fmt, ...) REEL_PRINTF(2, 3);
/* Appends s as a quoted JSON string (NULL: null). The text is always valid
 * UTF-8 JSON (RFC 8259): quotes, backslashes and control characters are
 * escaped, well-formed UTF-8 is kept, and each byte that is not part of
 * well-formed UTF-8 (a Linux file name is bytes) becomes \u00XX, the code
 * point of that byte's value: "bad\xff.mp4" is written "bad\u00ff.mp4". */
void reel__buf_json_string(reel_buf *b, const char *s);
/* Appends a JSON number; non-finite values become null. */
void reel__buf_json_double(reel_buf *b, double v);
/* Hands the text to the caller (malloc'ed), leaving b empty; NULL on oom. */
char *reel__buf_take(reel_buf *b);

/* A member value of a flat object. */
enum { REEL_JSON_NULL, REEL_JSON_BOOL, REEL_JSON_NUMBER, REEL_JSON_STRING, REEL_JSON_OTHER };
typedef struct reel_json_value {
    int type;
    const char *text; /* STRING: decoded; NUMBER, OTHER (an object or array): its source text; NUL-terminated */
    double number;
    int boolean;
} reel_json_value;

/* Parses one JSON object in text[0..len) and calls fn for each member
 * (nested objects and arrays are reported as OTHER). fn returns 0 to go on.
 * Returns 0, fn's non-zero result, or -1 on a syntax error (with *where set
 * to the byte offset). */
int reel__json_object_each(const char *text, size_t len,
                           int (*fn)(void *opaque, const char *key, const reel_json_value *v), void *opaque,
                           size_t *where);

#endif
