/* reel/deprecated.h: the names of reel 0.1 that the API pass before 1.0
 * renamed (one verb pair per kind of object, `get_` on getters,
 * `*_default_settings`, distinct enum prefixes). They keep working for one
 * release and warn when used; reel.h includes this header. Define
 * REEL_NO_DEPRECATED to leave them out. */
#ifndef REEL_DEPRECATED_H
#define REEL_DEPRECATED_H

#ifndef REEL_NO_DEPRECATED

#include "convert.h"
#include "decoder.h"
#include "io.h"
#include "pipeline.h"

#ifdef __cplusplus
extern "C" {
#endif

REEL_DEPRECATED("use reel_dataset_destroy")
static inline void reel_dataset_free(reel_dataset **ds)
{
    reel_dataset_destroy(ds);
}
REEL_DEPRECATED("use reel_dataset_create_from_dir")
static inline int reel_dataset_open_dir(reel_dataset **out, const char *dir, const char *extensions, reel_error *err)
{
    return reel_dataset_create_from_dir(out, dir, extensions, err);
}
REEL_DEPRECATED("use reel_dataset_create_from_manifest")
static inline int reel_dataset_open_manifest(reel_dataset **out, const char *path, reel_error *err)
{
    return reel_dataset_create_from_manifest(out, path, err);
}
REEL_DEPRECATED("use reel_dataset_create_from_path")
static inline int reel_dataset_open(reel_dataset **out, const char *path, reel_error *err)
{
    return reel_dataset_create_from_path(out, path, err);
}
REEL_DEPRECATED("use reel_dataset_get_size")
static inline size_t reel_dataset_size(const reel_dataset *ds)
{
    return reel_dataset_get_size(ds);
}
REEL_DEPRECATED("use reel_dataset_get_num_classes")
static inline size_t reel_dataset_num_classes(const reel_dataset *ds)
{
    return reel_dataset_get_num_classes(ds);
}
REEL_DEPRECATED("use reel_dataset_get_class_name")
static inline const char *reel_dataset_class_name(const reel_dataset *ds, int64_t label)
{
    return reel_dataset_get_class_name(ds, label);
}
REEL_DEPRECATED("use reel_decoder_get_frame_table")
static inline const reel_frame_entry *reel_decoder_frame_table(const reel_decoder *dec, int64_t *count)
{
    return reel_decoder_get_frame_table(dec, count);
}
REEL_DEPRECATED("use reel_decoder_get_info")
static inline const reel_video_info *reel_decoder_info(const reel_decoder *dec)
{
    return reel_decoder_get_info(dec);
}
REEL_DEPRECATED("use reel_decoder_get_keyframes")
static inline const int64_t *reel_decoder_keyframes(const reel_decoder *dec, int64_t *count)
{
    return reel_decoder_get_keyframes(dec, count);
}
REEL_DEPRECATED("use reel_decoder_get_name")
static inline const char *reel_decoder_name(const reel_decoder *dec)
{
    return reel_decoder_get_name(dec);
}
REEL_DEPRECATED("use reel_decoder_get_output_size")
static inline int reel_decoder_output_size(const reel_decoder *dec, const reel_transform *t, int *width, int *height,
                                           size_t *frame_bytes, reel_error *err)
{
    return reel_decoder_get_output_size(dec, t, width, height, frame_bytes, err);
}
REEL_DEPRECATED("use reel_frame_get_index")
static inline int64_t reel_frame_index(const reel_frame *f)
{
    return reel_frame_get_index(f);
}
REEL_DEPRECATED("use reel_frame_get_pts")
static inline int64_t reel_frame_pts(const reel_frame *f)
{
    return reel_frame_get_pts(f);
}
REEL_DEPRECATED("use reel_frame_get_size")
static inline void reel_frame_size(const reel_frame *f, int *width, int *height)
{
    reel_frame_get_size(f, width, height);
}
REEL_DEPRECATED("use reel_loader_get_batches_per_epoch")
static inline int64_t reel_loader_batches_per_epoch(const reel_loader *l)
{
    return reel_loader_get_batches_per_epoch(l);
}
REEL_DEPRECATED("use reel_loader_get_num_failures")
static inline int64_t reel_loader_num_failures(reel_loader *l)
{
    return reel_loader_get_num_failures(l);
}
REEL_DEPRECATED("use reel_loader_get_failure")
static inline int reel_loader_failure(reel_loader *l, int64_t i, reel_failure *out, reel_error *err)
{
    return reel_loader_get_failure(l, i, out, err);
}
REEL_DEPRECATED("use reel_loader_get_metrics_json")
static inline int reel_loader_metrics_json(reel_loader *l, char **json, reel_error *err)
{
    return reel_loader_get_metrics_json(l, json, err);
}
REEL_DEPRECATED("use reel_transform_default_settings")
static inline void reel_transform_default(reel_transform *t)
{
    reel_transform_default_settings(t);
}

REEL_DEPRECATED("use reel_loader_get_failures_by_cause")
static inline int64_t reel_loader_failures_by_cause(const reel_loader *l, int status)
{
    return reel_loader_get_failures_by_cause(l, status);
}
REEL_DEPRECATED("use reel_transform_get_output_size")
static inline int reel_transform_output_size(const reel_transform *t, int src_w, int src_h, int *out_w, int *out_h,
                                             size_t *bytes, reel_error *err)
{
    return reel_transform_get_output_size(t, src_w, src_h, out_w, out_h, bytes, err);
}

REEL_DEPRECATED("use reel_decoder_get_index_at_time")
static inline int reel_decoder_index_at_time(const reel_decoder *dec, double seconds, int64_t *index, reel_error *err)
{
    return reel_decoder_get_index_at_time(dec, seconds, index, err);
}
REEL_DEPRECATED("use reel_remote_stats_get_quantile")
static inline double reel_remote_stats_quantile(const reel_remote_stats *s, double q)
{
    return reel_remote_stats_get_quantile(s, q);
}
REEL_DEPRECATED("use reel_dataset_get_read_blocks")
static inline int reel_loader_read_blocks(const reel_dataset *ds, int64_t **starts, size_t *nblocks, reel_error *err)
{
    return reel_dataset_get_read_blocks(ds, starts, nblocks, err);
}
REEL_DEPRECATED("use reel_loader_settings_get_fields")
static inline const reel_field *reel_loader_settings_fields(size_t *count)
{
    return reel_loader_settings_get_fields(count);
}
REEL_DEPRECATED("use reel_loader_metrics_get_fields")
static inline const reel_field *reel_loader_metrics_fields(size_t *count)
{
    return reel_loader_metrics_get_fields(count);
}
REEL_DEPRECATED("use reel_stage_metrics_get_fields")
static inline const reel_field *reel_stage_metrics_fields(size_t *count)
{
    return reel_stage_metrics_get_fields(count);
}
REEL_DEPRECATED("use reel_remote_settings_get_fields")
static inline const reel_field *reel_remote_settings_fields(size_t *count)
{
    return reel_remote_settings_get_fields(count);
}
REEL_DEPRECATED("use reel_remote_stats_get_fields")
static inline const reel_field *reel_remote_stats_fields(size_t *count)
{
    return reel_remote_stats_get_fields(count);
}

/* Where the resize runs against the colour conversion was reel_resize_mode
 * (REEL_RESIZE_MODE_*, and before that REEL_RESIZE_FUSED/AFTER_RGB), a prefix
 * it shared with reel_resize_kind (REEL_RESIZE_KEEP/SHORT_SIDE/EXACT: what the
 * resize is); it is reel_convert_path now, and the fields `resize_mode` are
 * `convert_path` (REEL_FIELD_RENAMED in common.h keeps the old field name).
 * The old type is a deprecated typedef; the old values are deprecated
 * enumerators of reel_convert_path itself (in reel/convert.h, so that they
 * assign to the field without an enum conversion), not macros: using any of
 * them warns like the functions. */
typedef reel_convert_path reel_resize_mode REEL_DEPRECATED("use reel_convert_path");

#ifdef __cplusplus
}
#endif

#endif /* REEL_NO_DEPRECATED */
#endif /* REEL_DEPRECATED_H */
