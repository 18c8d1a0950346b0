/* source.c: the one place that reads a dataset to choose its source (video
 * files or a packed store's records), name the stages and size stage 1 by
 * whether the input is at URLs, and make the shared connection pool then. */
#include "pipeline/source.h"
#include "pipeline/dataset_internal.h"

#include <string.h>

int reel__source_init(reel_source *src, const reel_dataset *ds, reel_remote_settings *remote, reel_error *err)
{
    memset(src, 0, sizeof *src);
    if (ds->store) {
        src->store.store = ds->store;
        src->store.name = ds->store_shown;
        src->ops = &reel__source_store;
        src->ctx = &src->store;
    } else {
        src->ops = &reel__source_video;
    }
    src->network = reel__dataset_is_remote(ds);
    src->stage_names[0] = src->network ? "fetch" : src->ops->stage_names[0];
    src->stage_names[1] = src->ops->stage_names[1];
    if (src->network && !remote->pool) {
        int st = reel_remote_pool_create(&src->own_pool, remote->max_bytes_in_flight, err);
        if (st != REEL_OK) return st;
        remote->pool = src->own_pool;
    }
    return REEL_OK;
}

void reel__source_free(reel_source *src)
{
    reel_remote_pool_destroy(&src->own_pool);
}

int reel__source_open_threads(const reel_source *src, int cores)
{
    if (src->network) return 2 * cores > 8 ? 2 * cores : 8;
    return cores / 4 > 1 ? cores / 4 : 1;
}
