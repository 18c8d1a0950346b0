/* cmd_index.c: `reel index FILE... [-o PATH] [--check] [--cache DIR]`: builds
 * the exact frame table and saves it as a sidecar index next to each video,
 * or, for videos at URLs (an s3:// prefix expands to its videos), in a local
 * index cache that later opens (REEL_INDEX_CACHE=DIR) use. */
#include "cli.h"
#include "util.h"
#include "reel/reel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: reel index FILE|URL|s3://BUCKET/PREFIX/... [-o PATH] [--check] [--cache DIR]\n"
                "  writes FILE.reelidx (the exact frame table) so later opens skip the scan\n"
                "  -o PATH      index path (one FILE only)\n"
                "  --check      only report whether each existing index is valid (exit 1 if any is not)\n"
                "  --cache DIR  videos at URLs: keep their indexes in DIR (an s3 prefix: every video\n"
                "               under it); opens with REEL_INDEX_CACHE=DIR then use them\n");
}

/* Indexes (or with check, checks the index of) one video: 0, or 1 after
 * saying why on stderr. */
static int index_one(const char *file, const char *out, const char *cache, int check)
{
    const int remote = strstr(file, "://") != NULL;
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 1;
    s.index_path = out;
    s.index_cache_dir = cache;
    s.index_mode = check || (cache && remote) ? REEL_INDEX_READ : REEL_INDEX_OFF;
    reel_decoder *dec = NULL;
    reel_error err;
    reel_error_clear(&err);
    if (reel_decoder_open(&dec, file, &s, &err) != REEL_OK) {
        fprintf(stderr, "reel index: %s\n", err.message);
        return 1;
    }
    const reel_video_info *in = reel_decoder_get_info(dec);
    int failed = 0;
    if (check) {
        int valid = in->index_source == REEL_INDEX_FROM_SIDECAR;
        printf("%s: index %s\n", reel_decoder_get_name(dec), valid ? "valid" : "missing or stale");
        failed = !valid;
    } else if (reel_decoder_save_index(dec, out, &err) != REEL_OK) {
        fprintf(stderr, "reel index: %s\n", err.message);
        failed = 1;
    } else if (cache && remote) {
        printf("%s: %lld frames, %lld keyframes -> %s/\n", reel_decoder_get_name(dec), /* the URL redacted */
               (long long)in->num_frames, (long long)in->num_keyframes, cache);
    } else {
        printf("%s: %lld frames, %lld keyframes -> %s%s\n", file, (long long)in->num_frames,
               (long long)in->num_keyframes, out ? out : file, out ? "" : ".reelidx");
    }
    reel_decoder_close(&dec);
    return failed;
}

int reel_cli_index(int argc, char **argv)
{
    const char *out = NULL, *cache = NULL;
    int check = 0, nfiles = 0;
    char **files = calloc((size_t)argc, sizeof *files);
    if (!files) return 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            free(files);
            return 0;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--cache") && i + 1 < argc)
            cache = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "reel index: unknown option '%s'\n", argv[i]);
            usage(stderr);
            free(files);
            return 2;
        } else
            files[nfiles++] = argv[i];
    }
    if (!nfiles || (out && nfiles > 1)) {
        usage(stderr);
        free(files);
        return 2;
    }
    reel_set_ffmpeg_log_level(getenv("REEL_FFMPEG_LOG") ? atoi(getenv("REEL_FFMPEG_LOG")) : 0);
    int failed = 0;
    for (int i = 0; i < nfiles; i++) {
        size_t l = strlen(files[i]);
        if (!strstr(files[i], "://") || !l || files[i][l - 1] != '/') {
            failed += index_one(files[i], out, cache, check);
            continue;
        }
        /* a remote folder (an s3 prefix) stands for the videos under it */
        reel_dataset *ds = NULL;
        reel_error e;
        if (reel_dataset_create_from_path(&ds, files[i], &e) != REEL_OK) {
            fprintf(stderr, "reel index: %s\n", e.message);
            failed++;
            continue;
        }
        for (size_t k = 0; k < reel_dataset_get_size(ds); k++) {
            reel_sample smp;
            if (reel_dataset_get(ds, k, &smp, NULL) == REEL_OK) failed += index_one(smp.path, out, cache, check);
        }
        reel_dataset_destroy(&ds);
    }
    free(files);
    return failed ? 1 : 0;
}
