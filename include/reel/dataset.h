/* reel/dataset.h: a dataset of videos (or of a packed store's records):
 * paths, labels (integers or class names), optional segments; built by hand,
 * from a folder in the Kinetics layout, from a CSV/TSV/JSONL manifest, or
 * from a packed store. The loader (reel/loader.h) reads it. */
#ifndef REEL_DATASET_H
#define REEL_DATASET_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
 * Dataset
 * ====================================================================== */

/** A list of videos with labels and optional segments.
 *  Thread-safety: building (add) is single-threaded; once a loader uses the
 *  dataset it is frozen (further adds fail) and every read call is safe from
 *  any thread. The dataset must outlive every loader created from it. */
typedef struct reel_dataset reel_dataset;

/** One dataset entry, as returned by reel_dataset_get(). */
typedef struct reel_sample {
    const char *path;     /**< returned (common.h): lives as long as the dataset */
    int64_t label;        /**< class index; -1 if the sample has no label */
    double start;         /**< segment start, seconds of stream time (pts x time base); 0: from the first frame */
    double end;           /**< segment end (exclusive), same clock; < 0: to the last frame */
    uint8_t reserved[32]; /**< zero; room to grow (common.h) */
} reel_sample;

/** Creates an empty dataset, filled with reel_dataset_add*(). */
REEL_API int reel_dataset_create(reel_dataset **out, reel_error *err);

/** Appends a video with an integer label (-1: none) and a segment
 *  [start, end) in seconds of stream time (start 0, end -1: whole video).
 *  The path is copied. Fails with REEL_E_INVALID_ARG on a NULL/empty path,
 *  a bad segment, a frozen dataset, or when the dataset already uses class
 *  names (the two kinds of label do not mix). */
REEL_API int reel_dataset_add(reel_dataset *ds, const char *path, int64_t label, double start, double end,
                              reel_error *err);

/** Appends a video labelled by class name. Class names are mapped to
 *  indices 0..C-1 in sorted (strcmp) order of all names in the dataset, so
 *  labels do not depend on the order of the entries. NULL or "" name: no
 *  label (-1). */
REEL_API int reel_dataset_add_named(reel_dataset *ds, const char *path, const char *class_name, double start,
                                    double end, reel_error *err);

/** Scans `dir` recursively for files whose extension is in `extensions`
 *  (comma-separated, case-insensitive, without dots, e.g. "mp4,mkv"; NULL:
 *  mp4,mkv,webm,avi,mov,m4v,ivf,mpg,mpeg,ts,flv,wmv). Entries are sorted by
 *  path. Kinetics layout: the first folder below `dir` is the class name;
 *  files directly inside `dir` get label -1. Hidden files and folders are
 *  ignored. An empty result is REEL_E_EMPTY. */
REEL_API int reel_dataset_create_from_dir(reel_dataset **out, const char *dir, const char *extensions, reel_error *err);

/** Reads a manifest. The format comes from the extension: .csv (comma),
 *  .tsv/.txt (tab), .jsonl/.ndjson (one JSON object per line).
 *  CSV/TSV: an optional header row names the columns (path|video|file|
 *  filename, label|class|category, start|start_time|time_start,
 *  end|end_time|time_end; other columns are ignored); without a header the
 *  columns are path, label, start, end (label, start, end optional).
 *  Fields may be double-quoted (RFC 4180). JSONL: keys as above; a label may
 *  be a number or a string. Labels that are all integers are used as is;
 *  otherwise they are class names (see reel_dataset_add_named). Relative
 *  paths are relative to the manifest's folder. Empty lines and lines
 *  starting with '#' are skipped. Errors name the manifest and line. */
REEL_API int reel_dataset_create_from_manifest(reel_dataset **out, const char *path, reel_error *err);

/** reel_dataset_create_from_dir() if `path` is a directory (a packed store
 *  if it holds store.idx), else reel_dataset_create_from_manifest().
 *  Remote paths (reel/io.h): a URL ending in a manifest extension is fetched
 *  and parsed like a local manifest (relative entries resolve against the
 *  URL's folder, absolute URLs are kept); else URL/store.idx opens a packed
 *  store; else an s3://bucket/prefix/ is listed (ListObjectsV2, every page,
 *  at most 100,000) and read as a local folder would be (same extensions,
 *  hidden names skipped, first folder = class, sorted). An http(s) folder
 *  without a store is REEL_E_NOT_FOUND (HTTP cannot list); a prefix without
 *  videos REEL_E_EMPTY; a refused request REEL_E_PERMISSION. Messages name
 *  the URL redacted, never a credential. */
REEL_API int reel_dataset_create_from_path(reel_dataset **out, const char *path, reel_error *err);

/** Frees the dataset; sets *ds to NULL. NULL is fine. */
REEL_API void reel_dataset_destroy(reel_dataset **ds);

/** Number of entries. */
REEL_API size_t reel_dataset_get_size(const reel_dataset *ds);

/** What a checkpoint knows the dataset by: a 64-bit hash (FNV-1a) of its
 *  entries in order: the last two parts of each path ("class/video.mp4",
 *  without a URL's query) and its segment. The same dataset mounted or
 *  served elsewhere keeps it; another list, order or segment changes it.
 *  0 for NULL. */
REEL_API uint64_t reel_dataset_get_fingerprint(const reel_dataset *ds);

/** What a folder scan (reel_dataset_create_from_dir) did not follow, each
 *  as "<path>: skipped: <why>": a link to a folder scanned already (a
 *  symlink loop, or a second way to the same folder: each folder is
 *  scanned once, by device and inode), folders nested past 64: a count (0
 *  for other datasets) and note i (0 <= i < the count; REEL_E_OUT_OF_RANGE
 *  for another i). The strings live as long as the dataset. A loader made
 *  from the dataset puts them in its failure log (sample -1, epoch -1,
 *  REEL_E_INVALID_ARG). */
REEL_API size_t reel_dataset_get_num_skipped(const reel_dataset *ds);
REEL_API int reel_dataset_get_skipped(const reel_dataset *ds, size_t i, const char **note, reel_error *err);

/** Entry i, or REEL_E_INVALID_ARG with the reason for an entry refused when
 *  the dataset was made (a manifest read from a URL that names a local
 *  path). The path pointer lives as long as the dataset. */
REEL_API int reel_dataset_get(const reel_dataset *ds, size_t i, reel_sample *out, reel_error *err);

/** Number of class names (0 with integer labels). */
REEL_API size_t reel_dataset_get_num_classes(const reel_dataset *ds);

/** Class name of a label index (0 <= label < reel_dataset_get_num_classes;
 *  REEL_E_OUT_OF_RANGE for another). Lives as long as the dataset. */
REEL_API int reel_dataset_get_class_name(const reel_dataset *ds, int64_t label, const char **name, reel_error *err);

/** The runs of consecutive samples of `ds` that its source reads best
 *  together, for a caller that splits the work itself (a Ray read task per
 *  run): a packed store's shards, one run each; videos: one run, the whole
 *  dataset. *starts gets *nblocks + 1 entries, from 0 to the dataset size
 *  (free it with reel_free). REEL_E_EMPTY for an empty dataset. */
REEL_API int reel_dataset_get_read_blocks(const reel_dataset *ds, int64_t **starts, size_t *nblocks, reel_error *err);

#ifdef __cplusplus
}
#endif
#endif /* REEL_DATASET_H */
