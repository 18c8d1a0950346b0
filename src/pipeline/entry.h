/* entry.h: one dataset entry as the dataset stores it and a source gets it.
 * Whether it is remote and the name it shows in messages are decided once,
 * when the entry is made, and carried from there. */
#ifndef REEL_PIPELINE_ENTRY_H
#define REEL_PIPELINE_ENTRY_H

#include <stdint.h>

typedef struct reel_dataset_entry {
    char *path;    /* as given: a path, or a URL with whatever it needs to open */
    char *shown;   /* NULL: show `path`; else the URL redacted (credentials and query) */
    int64_t label; /* integer label, or class id (insertion order) when named */
    double start, end;
    int64_t record; /* a store's record number (the dataset of a store), else -1 */
    int remote;     /* at an http(s)/s3 URL */
    char *refused;  /* NULL, or why the entry is never opened ("<path>: ... (<manifest>, line N ...)"):
                     * a remote manifest's absolute local path; every reader fails it with this */
} reel_dataset_entry;

/* The entry's name for messages, failure records and the trace: never a secret. */
static inline const char *reel__entry_name(const reel_dataset_entry *e)
{
    return e->shown ? e->shown : e->path;
}

#endif
