/* file.h: the local-file transport (file.c). */
#ifndef REEL_IO_FILE_H
#define REEL_IO_FILE_H

#include "io/io_common.h"

/* Opens a local file: REEL_E_NOT_FOUND when missing, REEL_E_IO for a
 * directory, a FIFO or any other non-regular file. */
int reel__io_open_file(reel__io **out, const char *path, const reel__io_options *opt, reel_error *err);

#endif
