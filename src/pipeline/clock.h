/* clock.h: monotonic time and process memory readings for the loader's
 * metrics, deadlines and trace. */
#ifndef REEL_PIPELINE_CLOCK_H
#define REEL_PIPELINE_CLOCK_H

#include <stdint.h>

/* Monotonic nanoseconds. */
int64_t reel__clock_ns(void);

/* Resident set size now and its peak (VmHWM), in bytes; -1 if unknown. */
void reel__rss(int64_t *rss, int64_t *peak);

#endif
