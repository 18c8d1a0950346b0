/* io_internal.h: random-access byte sources named by a URI: local files (file.c),
 * http(s):// and s3:// objects (http.c, s3.c) behind one table of operations,
 * so the decoder (through an AVIOContext) and the packed store read either. */
#ifndef REEL_IO_IO_INTERNAL_H
#define REEL_IO_IO_INTERNAL_H

#include "reel/common.h"

#include <stddef.h>
#include <stdint.h>

/* Thread-safety: one reel__io is used by one thread at a time; different
 * objects are independent. Opening is thread-safe. */
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

/* Opens a byte source. Local paths: REEL_E_NOT_FOUND when missing, REEL_E_IO
 * for a directory, a FIFO or any other non-regular file, or a read error.
 * The message names the source (redacted for URLs). */
int reel__io_open(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err);

/* Reads exactly len bytes at off; reading past the end is REEL_E_CORRUPT
 * ("<name>: truncated: wanted N bytes at OFF, object has SIZE"). */
int reel__io_read_exact(reel__io *io, int64_t off, void *buf, size_t len, reel_error *err);

/* Reads up to len bytes at off (fewer only at the end of the object). */
int reel__io_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err);

/* The objects under a remote folder (s3://bucket/prefix/: ListObjectsV2),
 * relative to it; REEL_E_INVALID_ARG for http(s) (no listing there).
 * *names: free() each, then the array. */
int reel__io_list(const char *uri, const reel__io_options *opt, char ***names, size_t *count, reel_error *err);

/* Reads a whole object (local or remote, up to max_bytes) into *data
 * (free(), NUL-terminated). */
int reel__io_read_all(const char *uri, const reel__io_options *opt, size_t max_bytes, char **data, size_t *len,
                      reel_error *err);

/* Hints the ranges that will be read next (see reel__io_ops.will_read). */
int reel__io_will_read(reel__io *io, const reel__io_range *ranges, size_t n, reel_error *err);

/* Fetches ranges ahead of their reads, within the remote pool's budget
 * (see reel__io_ops.will_read, ahead). */
int reel__io_prefetch(reel__io *io, const reel__io_range *ranges, size_t n, reel_error *err);

/* 1 when reading [off, off + len) makes no request (a local file, or bytes
 * a remote source holds already), else 0. */
int reel__io_is_held(const reel__io *io, int64_t off, int64_t len);

/* Object size in bytes. */
int64_t reel__io_size(const reel__io *io);

/* Display name (redacted). */
const char *reel__io_name(const reel__io *io);

/* Closes and sets *io to NULL. NULL and *io == NULL are fine. */
void reel__io_close(reel__io **io);

/* Copies `uri` into out with user info, query strings and fragments
 * replaced by "***" where present, so it can go into messages. */
void reel__io_redact(const char *uri, char *out, size_t size);

/* Backend entry points (one per kind). Remote ones live in their own files. */
int reel__io_open_file(reel__io **out, const char *path, const reel__io_options *opt, reel_error *err);

#endif
