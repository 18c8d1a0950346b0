/* io_common.h: what every byte source of src/io shares, and nothing else:
 * the source's head and its table of operations, the options and ranges
 * they take, and the URL questions asked everywhere (is it remote? its
 * redacted form for messages). The leaf of src/io: the transports (file.c,
 * http*.c, s3*.c) include this, never io.h, and io.c sits on top of them. */
#ifndef REEL_IO_IO_COMMON_H
#define REEL_IO_IO_COMMON_H

#include "reel/common.h"

#include <stddef.h>
#include <stdint.h>

struct reel_remote_stats;

/* Thread-safety: one reel__io is used by one thread at a time; different
 * objects are independent. Opening is thread-safe. A remote object and its
 * shares (reel__io_share) are different handles: each may be used on its
 * own thread at once (their common state is under the object's lock). */
typedef struct reel__io reel__io;

/* Options for reel__io_open. Zero-initialise, or call reel__io_default_options. */
typedef struct reel__io_options {
    /* Polled during long operations (connects, transfers, retries); a
     * non-zero return stops the operation with REEL_E_CANCELLED. NULL: none. */
    int (*interrupt)(void *opaque);
    void *interrupt_opaque;
    const void *remote; /* a reel_remote_settings (reel/io.h) for remote objects; NULL: defaults */
    /* A reel_remote_stats that a remote object adds its requests to when it
     * is closed, also when its open failed (NULL: none). */
    void *tally;
} reel__io_options;

/* One byte range [offset, offset + length). */
typedef struct reel__io_range {
    int64_t offset;
    int64_t length;
} reel__io_range;

/* The operations one kind of source implements. */
typedef struct reel__io_ops {
    const char *kind; /* "file", "http", "s3" */
    /* Reads up to len bytes at off into buf; *got = bytes read (0 at the end).
     * A short read is not an error; failures fill err and return a status. */
    int (*read_at)(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err);
    /* Optional (NULL: ignored): the caller will read these ranges, in this
     * order; a remote source fetches them, coalesced. `ahead`: soon, on
     * another thread's time (kept aside within the pool's byte budget);
     * 0: now (into the current cache, no budget: the reader waits for it). */
    int (*will_read)(reel__io *io, const reel__io_range *ranges, size_t n, int ahead, reel_error *err);
    void (*close)(reel__io *io);
    /* Optional (NULL: always 1, a local file): 1 when [off, off + len) is
     * in memory already, so reading it makes no request. */
    int (*held)(const reel__io *io, int64_t off, int64_t len);
    /* Optional (NULL: zeros, a local file): the requests a remote source
     * made so far (a reel_remote_stats, reel/io.h). */
    void (*stats)(const reel__io *io, struct reel_remote_stats *out);
    /* Optional (NULL: a local file, nothing to share): a second handle on
     * the same object (see reel__io_share). */
    int (*share)(reel__io *io, const reel__io_options *opt, reel__io **out, reel_error *err);
} reel__io_ops;

/* The common head of every source; backends embed it first. */
struct reel__io {
    const reel__io_ops *ops;
    int64_t size;     /* object size in bytes, known after open */
    uint64_t version; /* remote: a hash of the object's ETag (or Last-Modified) from the
                         first answer, 0 when the server gave neither */
    char name[512];   /* display name for messages: the path, or the URL
                              with credentials and query strings redacted */
    reel__io_options opt;
};

/* Fills *o with defaults (no interrupt, default remote settings). */
void reel__io_default_options(reel__io_options *o);

/* 1 when `uri` names a remote object (http://, https://, s3://), else 0. */
int reel__io_is_remote(const char *uri);

/* Copies `uri` into out with user info, query strings and fragments
 * replaced by "***" where present and a URL's control bytes (CR, LF, ...)
 * as %XX, so it can go into messages, one line each. */
void reel__io_redact(const char *uri, char *out, size_t size);

#endif
