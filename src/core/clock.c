/* clock.c: monotonic clock and RSS readings (/proc/self/status, falling back
 * to getrusage for the peak). */
#define _POSIX_C_SOURCE 200809L
#include "core/clock.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

int64_t reel__clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void reel__deadline_in(struct timespec *ts, int64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    int64_t t = (int64_t)ts->tv_nsec + ns % 1000000000;
    ts->tv_sec += (time_t)(ns / 1000000000 + t / 1000000000);
    ts->tv_nsec = (long)(t % 1000000000);
}

void reel__rss(int64_t *rss, int64_t *peak)
{
    int64_t r = -1, p = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            long long kb;
            if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
                r = (int64_t)kb * 1024;
            else if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
                p = (int64_t)kb * 1024;
        }
        fclose(f);
    }
    if (p < 0) {
        struct rusage ru;
        if (getrusage(RUSAGE_SELF, &ru) == 0) p = (int64_t)ru.ru_maxrss * 1024;
    }
    if (rss) *rss = r;
    if (peak) *peak = p;
}
