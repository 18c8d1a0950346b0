/* clock.h: monotonic time and process memory readings (metrics, deadlines,
 * traces, timeouts). Used by every module. */
#ifndef REEL_CORE_CLOCK_H
#define REEL_CORE_CLOCK_H

#include <stdint.h>

/* Monotonic nanoseconds. */
int64_t reel__clock_ns(void);

struct timespec;
/* *ts = the CLOCK_REALTIME time `ns` from now: a deadline for
 * pthread_cond_timedwait on a default (CLOCK_REALTIME) condition variable. */
void reel__deadline_in(struct timespec *ts, int64_t ns);

/* Resident set size now and its peak (VmHWM), in bytes; -1 if unknown. */
void reel__rss(int64_t *rss, int64_t *peak);

#endif
