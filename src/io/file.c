/* file.c: the local-file byte source: open checks (missing, directory, FIFO),
 * size from fstat, positioned reads with pread so readers share no offset. */
#define _POSIX_C_SOURCE 200809L
#include "io/file.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct file_io {
    reel__io base;
    int fd;
} file_io;

static int file_read_at(reel__io *io, int64_t off, void *buf, size_t len, size_t *got, reel_error *err)
{
    file_io *f = (file_io *)io;
    for (;;) {
        ssize_t n = pread(f->fd, buf, len, (off_t)off);
        if (n >= 0) {
            *got = (size_t)n;
            return REEL_OK;
        }
        if (errno == EINTR) {
            if (io->opt.interrupt && io->opt.interrupt(io->opt.interrupt_opaque))
                return reel__error_set(err, REEL_E_CANCELLED, "%s: cancelled", io->name);
            continue;
        }
        return reel__error_set(err, REEL_E_IO, "%s: read failed at %lld: %s", io->name, (long long)off,
                               strerror(errno));
    }
}

static void file_close(reel__io *io)
{
    file_io *f = (file_io *)io;
    if (f->fd >= 0) close(f->fd);
    free(f);
}

static const reel__io_ops file_ops = { "file", file_read_at, NULL, file_close, NULL, NULL, NULL };

int reel__io_open_file(reel__io **out, const char *path, const reel__io_options *opt, reel_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        return reel__error_set(err, e == ENOENT || e == ENOTDIR ? REEL_E_NOT_FOUND : REEL_E_IO, "%s: %s", path,
                               e == ENOENT || e == ENOTDIR ? "no such file" : strerror(e));
    }
    if (S_ISDIR(st.st_mode)) return reel__error_set(err, REEL_E_IO, "%s: is a directory", path);
    if (!S_ISREG(st.st_mode)) return reel__error_set(err, REEL_E_IO, "%s: not a regular file", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return reel__error_set(err, REEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
    file_io *f = calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        return reel__error_set(err, REEL_E_NOMEM, "%s: out of memory", path);
    }
    f->fd = fd;
    f->base.ops = &file_ops;
    f->base.size = (int64_t)st.st_size;
    f->base.opt = *opt;
    snprintf(f->base.name, sizeof f->base.name, "%s", path);
    *out = &f->base;
    return REEL_OK;
}
