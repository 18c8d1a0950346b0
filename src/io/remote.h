/* remote.h: the statistics of remote sources: a source's own (io.c asks
 * its transport), and the difference of two (remote_stats.c, with the public
 * reel_remote_stats functions of reel/io.h). No libcurl here. */
#ifndef REEL_IO_REMOTE_H
#define REEL_IO_REMOTE_H

#include "io/io_common.h"
#include "reel/io.h"

/* The statistics of a remote source (zeros for a local one). */
void reel__remote_stats(const reel__io *io, reel_remote_stats *out);

/* acc += after - before. */
void reel__remote_stats_delta(reel_remote_stats *acc, const reel_remote_stats *after, const reel_remote_stats *before);

/* The latency bucket of a request of `ns` nanoseconds (see REEL_LATENCY_BUCKETS). */
int reel__remote_latency_bucket(int64_t ns);

#endif
