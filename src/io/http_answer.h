/* http_answer.h: what a server's answer to one GET says (its head, read line
 * by line) and whether it answers the request that was made: the range asked
 * for, a body no longer than asked, no content encoding, a whole object
 * within the limit. Pure (no libcurl): the fuzz target drives it whole. */
#ifndef REEL_IO_HTTP_ANSWER_H
#define REEL_IO_HTTP_ANSWER_H

#include <stddef.h>
#include <stdint.h>

/* Bytes a 206 may claim past the range asked for (its Content-Range says
 * so): kept, as a server that rounds ranges up is harmless; more is refused. */
#define REEL_HTTP_BODY_SLACK ((int64_t)64 << 10)

/* The request one answer is checked against. */
typedef struct reel__http_ask {
    int64_t off;       /* first byte asked for; < 0: the whole object (no Range header) */
    int64_t len;       /* bytes asked for from off; 0: to the end of the object */
    int64_t whole_max; /* the most bytes a whole object (a 200) may hold */
} reel__http_ask;

/* The head of the last answer seen (a redirect or a 1xx starts a new one). */
typedef struct reel__http_head {
    long status;                /* of the status line; 0: none yet */
    int64_t first, last, total; /* Content-Range "bytes FIRST-LAST/TOTAL"; -1: absent (total: also '*') */
    int64_t length;             /* Content-Length; -1: absent */
    char encoding[32];          /* a Content-Encoding (or Transfer-Encoding) other than identity and
                                   chunked, cut to fit; "": none */
    uint64_t etag, modified;    /* hashes of the ETag and Last-Modified values (0: none) */
    int complete;               /* the blank line that ends the head was seen */
} reel__http_head;

/* Why an answer is refused. */
typedef enum reel__http_verdict {
    REEL_HTTP_OK = 0,
    REEL_HTTP_ENCODED,        /* "encoded body refused": reel asks for identity and decodes nothing */
    REEL_HTTP_TOO_LONG,       /* "body longer than the requested range" (or than the limit, for a whole GET) */
    REEL_HTTP_WHOLE_TOO_BIG,  /* "200 for a range request on an object over the whole-object limit" */
    REEL_HTTP_RANGE_MISMATCH, /* a 206 for other bytes than asked: retried like a short body */
} reel__http_verdict;

/* The total size from a "Content-Range: bytes A-B/TOTAL" header line of n
 * bytes (not NUL-terminated): 1 and *total, or 0 (another header, '*', or
 * garbage). */
int reel__http_content_range(const char *line, size_t n, int64_t *total);

/* Empties h (every field unknown). */
void reel__http_head_reset(reel__http_head *h);

/* Reads one line of a head as libcurl hands them over (status lines,
 * headers, the blank line; not NUL-terminated, n bytes). */
void reel__http_head_line(reel__http_head *h, const char *line, size_t n);

/* 1 for a status whose body is the object's bytes (200, 206), else 0. */
int reel__http_is_data(long status);

/* The verdict on a complete data head (200 or 206) for the request q:
 * refused before any byte of the body is taken when it can be. */
reel__http_verdict reel__http_check_head(const reel__http_head *h, const reel__http_ask *q);

/* The most body bytes a data answer with head h may deliver for q; a body
 * that grows past it is stopped (see reel__http_overflow). */
int64_t reel__http_body_max(const reel__http_head *h, const reel__http_ask *q);

/* The verdict on a body that grew past reel__http_body_max. */
reel__http_verdict reel__http_overflow(const reel__http_head *h, const reel__http_ask *q);

/* Writes the reason for v into out ("encoded body refused (Content-Encoding:
 * gzip)", "range mismatch: asked for bytes 0-99, got bytes 5-104/2000", ...). */
void reel__http_verdict_text(reel__http_verdict v, const reel__http_head *h, const reel__http_ask *q, char *out,
                             size_t size);

#endif
