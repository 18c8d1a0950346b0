/* io_front.h: the front end of src/io (io.c), the one header the modules
 * above read bytes through (decoder, store, pipeline): random-access byte
 * sources named by a URI, local files (file.c) and http(s):// and s3://
 * objects (http.c, s3.c) behind one table of operations (io_common.h), so the
 * decoder (through an AVIOContext) and the packed store read either.
 * Dispatch by scheme, exact reads, listing. */
#ifndef REEL_IO_IO_FRONT_H
#define REEL_IO_IO_FRONT_H

#include "io/io_common.h"

/* Opens a byte source. Local paths: REEL_E_NOT_FOUND when missing, REEL_E_IO
 * for a directory, a FIFO or any other non-regular file, or a read error.
 * The message names the source (redacted for URLs). */
int reel__io_open(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err);

/* reel__io_open for a caller that has already asked reel__io_is_remote (a
 * dataset entry carries the answer, reel_decoder_open asks it once): opens
 * `uri` as a remote object (remote != 0) or a local file, without asking
 * again. */
int reel__io_open_as(reel__io **out, const char *uri, int remote, const reel__io_options *opt, reel_error *err);

/* A second, read-only handle on the remote object `io` (the video's bytes
 * for its audio): its reads take the bytes `io` holds already (the whole
 * object when it was fetched whole, its current, saved and fetched-ahead
 * spans) without taking them from it, and fetch only what neither holds,
 * into a cache of its own, over the object's connection. `opt`: its
 * interrupt, and its tally, which gets the share's own requests when it is
 * closed (`opt->remote` is ignored: the share's is the object's, which it
 * outlives, reel_remote_settings). The
 * share hints nothing ahead (reel__io_prefetch does nothing on it).
 * Ownership: the object lives until its last handle is closed, in any
 * order. Thread-safety: the handles may be used on different threads at
 * once; a request of one waits for the other's to end. REEL_E_INVALID_ARG
 * for a local file (open its path again: nothing to share). */
int reel__io_share(reel__io *io, const reel__io_options *opt, reel__io **out, reel_error *err);

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

#endif
