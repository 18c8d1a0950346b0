/* pipeline/fields.c: the by-name tables of reel_loader_settings,
 * reel_loader_metrics and reel_stage_metrics. Each field list is written
 * here once: the metrics JSON (metrics.c), the Python binding and the docs
 * tests read these tables. A new setting is one line below. */
#include <stddef.h>

#include "io/remote_fields.h"
#include "reel/loader.h"

/* One entry a line, as written (no reflow): */
/* clang-format off */
#define S(n, t, m) { n, t, offsetof(reel_loader_settings, m) }
static const reel_field k_settings[] = {
    S("sampler.kind", REEL_FIELD_INT, sampler.kind),
    S("sampler.clips_per_video", REEL_FIELD_INT, sampler.clips_per_video),
    S("sampler.frames_per_clip", REEL_FIELD_INT, sampler.frames_per_clip),
    S("sampler.frame_stride", REEL_FIELD_INT, sampler.frame_stride),
    S("sampler.seconds_between_frames", REEL_FIELD_DOUBLE, sampler.seconds_between_frames),
    S("sampler.range_start", REEL_FIELD_DOUBLE, sampler.range_start),
    S("sampler.range_end", REEL_FIELD_DOUBLE, sampler.range_end),
    S("sampler.policy", REEL_FIELD_INT, sampler.policy),
    S("sampler.seconds_between_clip_starts", REEL_FIELD_DOUBLE, sampler.seconds_between_clip_starts),
    S("sampler.fps", REEL_FIELD_DOUBLE, sampler.fps),
    S("sampler.min_frames", REEL_FIELD_INT, sampler.min_frames),
    S("sampler.max_frames", REEL_FIELD_INT, sampler.max_frames),
    S("sampler.frame_factor", REEL_FIELD_INT, sampler.frame_factor),
    S("transform.resize", REEL_FIELD_INT, transform.resize),
    S("transform.short_side", REEL_FIELD_INT, transform.short_side),
    S("transform.resize_width", REEL_FIELD_INT, transform.resize_width),
    S("transform.resize_height", REEL_FIELD_INT, transform.resize_height),
    S("transform.crop", REEL_FIELD_INT, transform.crop),
    S("transform.crop_width", REEL_FIELD_INT, transform.crop_width),
    S("transform.crop_height", REEL_FIELD_INT, transform.crop_height),
    S("transform.scale_min", REEL_FIELD_DOUBLE, transform.scale_min),
    S("transform.scale_max", REEL_FIELD_DOUBLE, transform.scale_max),
    S("transform.ratio_min", REEL_FIELD_DOUBLE, transform.ratio_min),
    S("transform.ratio_max", REEL_FIELD_DOUBLE, transform.ratio_max),
    S("transform.flip", REEL_FIELD_INT, transform.flip),
    S("transform.flip_probability", REEL_FIELD_DOUBLE, transform.flip_probability),
    S("transform.pixels.filter", REEL_FIELD_INT, transform.pixels.filter),
    S("transform.pixels.convert_path", REEL_FIELD_INT, transform.pixels.convert_path),
    S("transform.pixels.apply_rotation", REEL_FIELD_INT, transform.pixels.apply_rotation),
    S("transform.pixels.dtype", REEL_FIELD_INT, transform.pixels.dtype),
    S("transform.pixels.color", REEL_FIELD_INT, transform.pixels.color),
    S("transform.pixels.divisor", REEL_FIELD_FLOAT, transform.pixels.divisor),
    S("transform.pixels.mean", REEL_FIELD_FLOAT3, transform.pixels.mean),
    S("transform.pixels.std", REEL_FIELD_FLOAT3, transform.pixels.std),
    S("transform.layout", REEL_FIELD_INT, transform.layout),
    S("decoder.stream_index", REEL_FIELD_INT, decoder.stream_index),
    S("decoder.threads", REEL_FIELD_INT, decoder.threads),
    S("decoder.corrupt_policy", REEL_FIELD_INT, decoder.corrupt_policy),
    S("decoder.index_mode", REEL_FIELD_INT, decoder.index_mode),
    S("decoder.skip_nonref", REEL_FIELD_INT, decoder.skip_nonref),
    S("decoder.force_scan", REEL_FIELD_INT, decoder.force_scan),
    S("decoder.check_keyframes", REEL_FIELD_INT, decoder.check_keyframes),
    S("decoder.gop_contexts", REEL_FIELD_INT, decoder.gop_contexts),
    S("batch_size", REEL_FIELD_INT, batch_size),
    S("drop_last", REEL_FIELD_INT, drop_last),
    S("shuffle", REEL_FIELD_INT, shuffle),
    S("seed", REEL_FIELD_UINT64, seed),
    S("epochs", REEL_FIELD_INT64, epochs),
    S("rank", REEL_FIELD_INT, rank),
    S("world_size", REEL_FIELD_INT, world_size),
    S("shard_mode", REEL_FIELD_INT, shard_mode),
    S("ordered", REEL_FIELD_INT, ordered),
    S("on_error", REEL_FIELD_INT, on_error),
    S("max_replacements", REEL_FIELD_INT, max_replacements),
    S("sample_time_limit", REEL_FIELD_DOUBLE, sample_time_limit),
    S("open_threads", REEL_FIELD_INT, open_threads),
    S("decode_threads", REEL_FIELD_INT, decode_threads),
    S("collate_threads", REEL_FIELD_INT, collate_threads),
    S("prefetch_batches", REEL_FIELD_INT, prefetch_batches),
    S("queue_capacity", REEL_FIELD_INT, queue_capacity),
    S("alignment", REEL_FIELD_SIZE, alignment),
    S("trace", REEL_FIELD_INT, trace),
    S("trace_capacity", REEL_FIELD_INT, trace_capacity),
    S("pin_memory", REEL_FIELD_INT, pin_memory),
    S("min_coverage", REEL_FIELD_DOUBLE, min_coverage),
    S("failure_log_size", REEL_FIELD_INT, failure_log_size),
    S("shuffle_window", REEL_FIELD_INT64, shuffle_window),
    S("canonical_ranks", REEL_FIELD_INT, canonical_ranks),
    S("canonical_batch", REEL_FIELD_INT, canonical_batch),
    S("num_workers", REEL_FIELD_INT, num_workers),
    S("worker", REEL_FIELD_INT, worker),
    S("first_epoch", REEL_FIELD_INT64, first_epoch),
    S("size_policy.kind", REEL_FIELD_INT, size_policy.kind),
    S("size_policy.width", REEL_FIELD_INT, size_policy.width),
    S("size_policy.height", REEL_FIELD_INT, size_policy.height),
    S("size_policy.factor", REEL_FIELD_INT, size_policy.factor),
    S("size_policy.min_pixels", REEL_FIELD_DOUBLE, size_policy.min_pixels),
    S("size_policy.max_pixels", REEL_FIELD_DOUBLE, size_policy.max_pixels),
    S("size_policy.total_pixels", REEL_FIELD_DOUBLE, size_policy.total_pixels),
    S("pad", REEL_FIELD_INT, pad),
    S("ring_bytes", REEL_FIELD_INT64, ring_bytes),
    S("gop_split", REEL_FIELD_INT, gop_split),
    S("audio.enabled", REEL_FIELD_INT, audio.enabled),
    S("audio.sample_rate", REEL_FIELD_INT, audio.sample_rate),
    S("audio.channels", REEL_FIELD_INT, audio.channels),
    S("audio.stream_index", REEL_FIELD_INT, audio.stream_index),
    S("audio.missing", REEL_FIELD_INT, audio.missing),
};
#undef S

/* The metrics: the scalars, then the remote counters as "remote.<name>". */
#define M(n, t, m) { n, t, offsetof(reel_loader_metrics, m) }
#define R(n, t, m) { "remote." n, t, offsetof(reel_loader_metrics, remote.m) },
static const reel_field k_metrics[] = {
    M("frames", REEL_FIELD_INT64, frames),
    M("clips", REEL_FIELD_INT64, clips),
    M("batches", REEL_FIELD_INT64, batches),
    M("seconds", REEL_FIELD_DOUBLE, seconds),
    M("frames_per_second", REEL_FIELD_DOUBLE, frames_per_second),
    M("clips_per_second", REEL_FIELD_DOUBLE, clips_per_second),
    M("coverage", REEL_FIELD_DOUBLE, coverage),
    M("attempts", REEL_FIELD_INT64, attempts),
    M("successes", REEL_FIELD_INT64, successes),
    M("failure_count", REEL_FIELD_INT64, failures),
    M("replacements", REEL_FIELD_INT64, replacements),
    M("frames_decoded", REEL_FIELD_INT64, frames_decoded),
    M("frames_returned", REEL_FIELD_INT64, frames_returned),
    M("decode_amplification", REEL_FIELD_DOUBLE, amplification),
    M("data_time_s", REEL_FIELD_DOUBLE, data_time_s),
    M("model_time_s", REEL_FIELD_DOUBLE, model_time_s),
    M("rss_bytes", REEL_FIELD_INT64, rss_bytes),
    M("peak_rss_bytes", REEL_FIELD_INT64, peak_rss_bytes),
    M("ring_bytes", REEL_FIELD_INT64, ring_bytes),
    M("ring_memory", REEL_FIELD_STRING, ring_memory),
    M("gop_split_samples", REEL_FIELD_INT64, gop_split_samples),
    M("audio_samples", REEL_FIELD_INT64, audio_samples),
    M("audio_decode_seconds", REEL_FIELD_DOUBLE, audio_decode_seconds),
    M("audio_corrupt_packets", REEL_FIELD_INT64, audio_corrupt_packets),
    M("frames_nvdec", REEL_FIELD_INT64, frames_nvdec),
    M("frames_uploaded", REEL_FIELD_INT64, frames_uploaded),
    M("device_bytes", REEL_FIELD_INT64, device_bytes),
    M("device_bytes_peak", REEL_FIELD_INT64, device_bytes_peak),
    M("staging_bytes", REEL_FIELD_INT64, staging_bytes),
    M("upload_bytes", REEL_FIELD_INT64, upload_bytes),
    M("pinned_bytes", REEL_FIELD_INT64, pinned_bytes),
    M("pinned_bytes_peak", REEL_FIELD_INT64, pinned_bytes_peak),
    M("pinned_failures", REEL_FIELD_INT64, pinned_failures),
    M("bottleneck", REEL_FIELD_STRING, bottleneck),
    REEL__REMOTE_STATS_FIELDS(R)
    M("remote.request_p50_s", REEL_FIELD_DOUBLE, request_p50_s),
    M("remote.request_p99_s", REEL_FIELD_DOUBLE, request_p99_s),
    M("remote.bytes_in_flight_peak", REEL_FIELD_INT64, bytes_in_flight_peak),
};
#undef R
#undef M

#define T(n, t, m) { n, t, offsetof(reel_stage_metrics, m) }
static const reel_field k_stage[] = {
    T("name", REEL_FIELD_STRING, name),
    T("threads", REEL_FIELD_INT, threads),
    T("busy_fraction", REEL_FIELD_DOUBLE, busy_fraction),
    T("busy_seconds", REEL_FIELD_DOUBLE, busy_seconds),
    T("items", REEL_FIELD_INT64, items),
    T("queue_depth", REEL_FIELD_INT64, queue_depth),
    T("queue_depth_avg", REEL_FIELD_DOUBLE, queue_depth_avg),
    T("queue_capacity", REEL_FIELD_INT64, queue_capacity),
};
#undef T
/* clang-format on */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const reel_field *reel_loader_settings_get_fields(size_t *count)
{
    if (count) *count = COUNT(k_settings);
    return k_settings;
}

const reel_field *reel_loader_metrics_get_fields(size_t *count)
{
    if (count) *count = COUNT(k_metrics);
    return k_metrics;
}

const reel_field *reel_stage_metrics_get_fields(size_t *count)
{
    if (count) *count = COUNT(k_stage);
    return k_stage;
}
