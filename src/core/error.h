/* error.h: internal helpers to fill a reel_error with "<file>: <reason>"
 * and to map FFmpeg error codes to reel statuses. */
#ifndef REEL_CORE_ERROR_H
#define REEL_CORE_ERROR_H

#include "reel/common.h"

#if defined(__GNUC__)
#define REEL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define REEL_PRINTF(a, b)
#endif

/* Fills err (if not NULL) and returns status, so callers can
 * `return reel__error_set(err, REEL_E_IO, "%s: cannot read", path);` */
int reel__error_set(reel_error *err, int status, const char *fmt, ...) REEL_PRINTF(3, 4);

/* Maps an AVERROR code to the closest reel status. */
int reel__status_from_av(int averr);

/* av_strerror into a caller buffer; returns buf. */
const char *reel__av_err(int averr, char *buf, size_t size);

/* Number of online CPU cores (>= 1). */
int reel__cpu_count(void);

#endif
