/* dataset_internal.h: the dataset's private layout, read by the loader. */
#ifndef REEL_PIPELINE_DATASET_INTERNAL_H
#define REEL_PIPELINE_DATASET_INTERNAL_H

#include "reel/pipeline.h"
#include "pipeline/entry.h"

enum { REEL_LABELS_NONE = 0, REEL_LABELS_INT = 1, REEL_LABELS_NAMED = 2 };

struct reel_dataset {
    reel_dataset_entry *items;
    size_t n, alloc;
    int label_kind;
    /* class names, by id (insertion order), with a hash index id lookup */
    char **classes;
    size_t nclasses, classes_alloc;
    int64_t *hash; /* open addressing: id + 1, 0 empty */
    size_t hash_size;
    int64_t *rank_of_id; /* id -> sorted label */
    int64_t *id_of_rank; /* sorted label -> id */
    int ranks_dirty;
    int frozen;
    struct reel_store *store; /* owned: the dataset is a packed store's records */
    char *store_shown;        /* the store's folder for messages (a URL redacted) */
    int store_remote;         /* the store is at a URL */
    size_t nremote;           /* entries at URLs */
    char **skipped;           /* a folder scan's notes: "<path>: skipped: <why>" */
    size_t nskipped;
};

/* Sorts class names (if needed) and forbids further additions. */
int reel__dataset_freeze(reel_dataset *ds, reel_error *err);

/* The dataset of a packed store in `dir` (its index exists). */
int reel__dataset_open_store(reel_dataset **out, const char *dir, reel_error *err);

/* Sorts the class names and maps ids to sorted labels (after additions). */
int reel__dataset_update_ranks(reel_dataset *ds);

/* A dataset from the names of a remote folder's objects (relative to
 * `root`, as a listing gives them): the rules of a local scan (video
 * extensions, hidden names skipped, the first folder is the class, sorted
 * by path). `name` (redacted) is for messages. */
int reel__dataset_from_names(reel_dataset **out, const char *root, const char *name, char *const *rel, size_t n,
                             reel_error *err);

/* The manifest kind a path names by its extension (a URL's query ignored):
 * 0 csv, 1 tsv/txt, 2 jsonl/ndjson/json, -1 none. */
int reel__manifest_kind(const char *path);

/* 1 when some entry (or the store) is at an http(s)/s3 URL: counted as
 * entries are made, never asked again. */
int reel__dataset_is_remote(const reel_dataset *ds);

/* Label of entry i (dataset frozen or ranks fresh). */
int64_t reel__dataset_label(const reel_dataset *ds, size_t i);

#endif
