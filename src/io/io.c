/* io.c: the byte-source front end, on top of the transports: dispatch by
 * URI scheme, exact reads, hints, listing, whole reads (also the public
 * reel_remote_read), a source's remote statistics. Transports: file.c (local), http.c (http(s), and s3 through
 * s3.c), s3_list.c (listing). */
#include "io/io_front.h"
#include "core/error.h"
#include "io/file.h"
#include "io/http.h"
#include "io/remote.h"
#include "io/s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int reel__io_open(reel__io **out, const char *uri, const reel__io_options *opt, reel_error *err)
{
    return reel__io_open_as(out, uri, uri ? reel__io_is_remote(uri) : 0, opt, err);
}

int reel__io_open_as(reel__io **out, const char *uri, int remote, const reel__io_options *opt, reel_error *err)
{
    if (!out || !uri || !uri[0])
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_io_open: %s", !out ? "out is NULL" : "empty path");
    *out = NULL;
    reel__io_options defaults;
    if (!opt) {
        reel__io_default_options(&defaults);
        opt = &defaults;
    }
    if (remote) return reel__io_open_http(out, uri, opt, err);
    return reel__io_open_file(out, uri, opt, err);
}

int reel__io_share(reel__io *io, const reel__io_options *opt, reel__io **out, reel_error *err)
{
    if (out) *out = NULL;
    if (!io || !out) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_io_share: NULL argument");
    if (!io->ops->share)
        return reel__error_set(err, REEL_E_INVALID_ARG, "%s: a %s has no bytes to share: open it again", io->name,
                               io->ops->kind);
    reel__io_options defaults;
    if (!opt) {
        reel__io_default_options(&defaults);
        opt = &defaults;
    }
    return io->ops->share(io, opt, out, err);
}

int reel__io_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err)
{
    size_t dummy;
    if (!got) got = &dummy;
    *got = 0;
    if (!io || (!buf && len)) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_io_read_at: NULL argument");
    if (off < 0) return reel__error_set(err, REEL_E_INVALID_ARG, "%s: negative offset", io->name);
    if (len == 0 || off >= io->size) return REEL_OK;
    if ((int64_t)len > io->size - off) len = (size_t)(io->size - off);
    return io->ops->read_at(io, off, buf, len, got, err);
}

int reel__io_read_exact(reel__io *io, int64_t off, void *buf, size_t len, reel_error *err)
{
    if (!io) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_io_read_exact: NULL source");
    if (off < 0 || (int64_t)len < 0 || off > io->size || (int64_t)len > io->size - off)
        return reel__error_set(err, REEL_E_CORRUPT, "%s: truncated: wanted %zu bytes at %lld, object has %lld",
                               io->name, len, (long long)off, (long long)io->size);
    size_t done = 0;
    while (done < len) {
        size_t got = 0;
        int st = io->ops->read_at(io, off + (int64_t)done, (char *)buf + done, len - done, &got, err);
        if (st != REEL_OK) return st;
        if (got == 0)
            return reel__error_set(err, REEL_E_CORRUPT, "%s: truncated: wanted %zu bytes at %lld, read %zu", io->name,
                                   len, (long long)off, done);
        done += got;
    }
    return REEL_OK;
}

int reel__io_will_read(reel__io *io, const reel__io_range *ranges, size_t n, reel_error *err)
{
    if (!io || !io->ops->will_read || n == 0) return REEL_OK;
    return io->ops->will_read(io, ranges, n, 0, err);
}

int reel__io_prefetch(reel__io *io, const reel__io_range *ranges, size_t n, reel_error *err)
{
    if (!io || !io->ops->will_read || n == 0) return REEL_OK;
    return io->ops->will_read(io, ranges, n, 1, err);
}

int reel__io_is_held(const reel__io *io, int64_t off, int64_t len)
{
    if (!io) return 0;
    return io->ops->held ? io->ops->held(io, off, len) : 1;
}

int64_t reel__io_size(const reel__io *io)
{
    return io ? io->size : -1;
}

const char *reel__io_name(const reel__io *io)
{
    return io ? io->name : "";
}

void reel__io_close(reel__io **io)
{
    if (!io || !*io) return;
    (*io)->ops->close(*io);
    *io = NULL;
}

int reel__io_list(const char *uri, const reel__io_options *opt, char ***names, size_t *count, reel_error *err)
{
    if (!uri || !names || !count) return reel__error_set(err, REEL_E_INVALID_ARG, "reel_io_list: NULL argument");
    *names = NULL;
    *count = 0;
    char name[512];
    reel__io_redact(uri, name, sizeof name);
    if (strncasecmp(uri, "s3://", 5) == 0) return reel__s3_list(uri, opt, names, count, err);
    return reel__error_set(err, REEL_E_INVALID_ARG,
                           "%s: cannot list a folder over http(s) (HTTP has no listing): use s3:// or a manifest",
                           name);
}

/* Reads [0, size) of io into b in pieces of the remote settings'
 * readahead_max (at least 64 KiB): each request of a large object stays
 * bounded (its timeout, a retry re-fetches one piece) and the source holds
 * one piece, not a second copy of the object. */
static int read_pieces(reel__io *io, char *b, size_t size, const reel__io_options *opt, reel_error *err)
{
    reel_remote_settings defaults;
    const reel_remote_settings *rs = opt ? opt->remote : NULL;
    if (!rs) {
        reel_remote_default_settings(&defaults);
        rs = &defaults;
    }
    const size_t piece = rs->readahead_max > ((size_t)64 << 10) ? rs->readahead_max : ((size_t)64 << 10);
    for (size_t off = 0; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        int st = reel__io_read_exact(io, (int64_t)off, b + off, n, err);
        if (st != REEL_OK) return st;
    }
    return REEL_OK;
}

int reel__io_read_all(const char *uri, const reel__io_options *opt, size_t max_bytes, char **data, size_t *len,
                      reel_error *err)
{
    *data = NULL;
    *len = 0;
    reel__io *io = NULL;
    int st = reel__io_open(&io, uri, opt, err);
    if (st != REEL_OK) return st;
    int64_t size = reel__io_size(io);
    if (size < 0 || (uint64_t)size > (uint64_t)max_bytes || (uint64_t)size >= (uint64_t)SIZE_MAX) {
        st = reel__error_set(err, REEL_E_INVALID_ARG, "%s: %lld bytes, more than the %zu bytes this reads whole",
                             reel__io_name(io), (long long)size, max_bytes);
    } else {
        char *b = malloc((size_t)size + 1);
        if (!b)
            st = reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", reel__io_name(io));
        else if ((st = read_pieces(io, b, (size_t)size, opt, err)) != REEL_OK)
            free(b);
        else {
            b[size] = '\0';
            *data = b;
            *len = (size_t)size;
        }
    }
    reel__io_close(&io);
    return st;
}

void reel__remote_stats(const reel__io *io, reel_remote_stats *out)
{
    memset(out, 0, sizeof *out);
    if (io && io->ops->stats) io->ops->stats(io, out);
}

int reel_remote_read(const char *uri, const reel_remote_settings *settings, size_t max_bytes, void **data, size_t *size,
                     reel_error *err)
{
    if (data) *data = NULL;
    if (size) *size = 0;
    if (!uri || !uri[0] || !data || !size)
        return reel__error_set(err, REEL_E_INVALID_ARG, "reel_remote_read: %s",
                               !uri || !uri[0] ? "empty path" : "data or size is NULL");
    reel__io_options o;
    reel__io_default_options(&o);
    o.remote = settings;
    char *text = NULL;
    int st = reel__io_read_all(uri, &o, max_bytes, &text, size, err);
    if (st == REEL_OK) *data = text;
    return st;
}
