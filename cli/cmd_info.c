/* cmd_info.c: `reel info FILE... [--json] [--table] [--stream N]`: stream
 * metadata, the exact frame count and the keyframes, as a table or JSON. */
#include "cli.h"
#include "util.h"
#include "reel/reel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: reel info FILE... [--json] [--table] [--stream N] [--index] [--scan]\n"
                "  --json      one JSON object per file and line\n"
                "  --table     with --json: include the frame table (pts, duration, key)\n"
                "  --stream N  use stream N instead of the best video stream\n"
                "  --index     use (and write) the sidecar index FILE.reelidx\n"
                "  --scan      build the frame table by a packet scan, ignoring the container index\n");
}

static double q2d(int num, int den)
{
    return den ? (double)num / den : 0.0;
}

/* The audio stream reel/audio.h would give a local file's frames (NULL
 * with a note in `why` when there is none or it cannot be read). */
static reel_audio *open_audio(const char *path, int has_audio, char *why, size_t cap)
{
    reel_audio *a = NULL;
    reel_error err;
    reel_error_clear(&err);
    snprintf(why, cap, "%s", has_audio ? "" : "no audio stream");
    if (!has_audio) return NULL;
    if (strstr(path, "://")) {
        snprintf(why, cap, "audio over URLs: not in this version");
        return NULL;
    }
    if (reel_audio_open(&a, path, NULL, &err) != REEL_OK) snprintf(why, cap, "%s", err.message);
    return a;
}

static void print_json_audio(reel_audio *a, const char *why)
{
    if (!a) {
        printf(", \"audio\": null, \"audio_note\": ");
        cli_json_str(stdout, why);
        return;
    }
    const reel_audio_info *ai = reel_audio_get_info(a);
    printf(", \"audio\": {\"stream_index\": %d, \"codec\": ", ai->stream_index);
    cli_json_str(stdout, ai->codec);
    printf(", \"sample_rate\": %d, \"channels\": %d, \"start_time\": %.6f}", ai->native_sample_rate,
           ai->native_channels, ai->start_seconds);
}

static void print_json(reel_decoder *dec, int with_table)
{
    const reel_video_info *in = reel_decoder_get_info(dec);
    int64_t nk, nf;
    const int64_t *keys = reel_decoder_get_keyframes(dec, &nk);
    const reel_frame_entry *fr = reel_decoder_get_frame_table(dec, &nf);
    static const char *src[] = { "container", "scan", "sidecar" };
    double tb = q2d(in->time_base_num, in->time_base_den);
    printf("{\"path\": ");
    cli_json_str(stdout, reel_decoder_get_name(dec));
    printf(", \"container\": ");
    cli_json_str(stdout, in->container);
    printf(", \"stream_index\": %d, \"codec\": ", in->stream_index);
    cli_json_str(stdout, in->codec);
    printf(", \"profile\": ");
    cli_json_str(stdout, in->profile);
    printf(", \"width\": %d, \"height\": %d, \"source_width\": %d, \"source_height\": %d, \"pix_fmt\": ", in->width,
           in->height, in->source_width, in->source_height);
    cli_json_str(stdout, in->pix_fmt);
    printf(", \"bit_depth\": %d, \"color_space\": ", in->bit_depth);
    cli_json_str(stdout, in->color_space);
    printf(", \"color_range\": ");
    cli_json_str(stdout, in->color_range);
    printf(", \"color_primaries\": ");
    cli_json_str(stdout, in->color_primaries);
    if (in->has_rotation)
        printf(", \"rotation\": %d", in->rotation);
    else
        printf(", \"rotation\": null"); /* no display matrix, as Python's None */
    printf(", \"sample_aspect_ratio\": \"%d:%d\"", in->sar_num, in->sar_den);
    printf(", \"fps\": %.6f, \"avg_frame_rate\": \"%d/%d\", \"r_frame_rate\": \"%d/%d\"",
           q2d(in->avg_fps_num, in->avg_fps_den), in->avg_fps_num, in->avg_fps_den, in->rate_num, in->rate_den);
    printf(", \"time_base\": \"%d/%d\", \"start_pts\": %lld, \"start_time\": %.6f, \"duration\": %.6f",
           in->time_base_num, in->time_base_den, (long long)in->start_pts, in->start_time, in->duration);
    printf(", \"num_frames\": %lld, \"num_keyframes\": %lld, \"bit_rate\": %lld, \"container_bit_rate\": %lld",
           (long long)in->num_frames, (long long)in->num_keyframes, (long long)in->bit_rate,
           (long long)in->container_bit_rate);
    printf(", \"has_audio\": %s", in->has_audio ? "true" : "false");
    {
        char why[REEL_ERROR_MSG_SIZE];
        reel_audio *a = open_audio(reel_decoder_get_name(dec), in->has_audio, why, sizeof why);
        print_json_audio(a, why);
        reel_audio_close(&a);
    }
    printf(", \"num_streams\": %d, \"file_size\": %lld, \"index_source\": \"%s\"", in->num_streams,
           (long long)in->file_size, src[in->index_source >= 0 && in->index_source <= 2 ? in->index_source : 1]);
    printf(", \"keyframes\": [");
    for (int64_t i = 0; i < nk; i++) printf(i ? ", %lld" : "%lld", (long long)keys[i]);
    printf("]");
    if (with_table) {
        printf(", \"frames\": [");
        for (int64_t i = 0; i < nf; i++)
            printf("%s{\"pts\": %lld, \"pts_time\": %.6f, \"duration\": %lld, \"duration_time\": %.6f, \"key\": %s, "
                   "\"pos\": %lld}",
                   i ? ", " : "", (long long)fr[i].pts, fr[i].pts * tb, (long long)fr[i].duration, fr[i].duration * tb,
                   (fr[i].flags & REEL_FRAME_KEY) ? "true" : "false", (long long)fr[i].pos);
        printf("]");
    }
    printf("}\n");
}

static void print_human(reel_decoder *dec)
{
    const reel_video_info *in = reel_decoder_get_info(dec);
    static const char *src[] = { "container index", "packet scan", "sidecar index" };
    printf("%s\n", reel_decoder_get_name(dec));
    printf("  container    %s (stream %d of %d%s)\n", in->container, in->stream_index, in->num_streams,
           in->has_audio ? ", has audio" : "");
    printf("  codec        %s%s%s%s\n", in->codec, in->profile[0] ? " (" : "", in->profile, in->profile[0] ? ")" : "");
    printf("  size         %dx%d (source %dx%d)  sar %d:%d  rotation ", in->width, in->height, in->source_width,
           in->source_height, in->sar_num, in->sar_den);
    if (in->has_rotation)
        printf("%d\n", in->rotation);
    else
        printf("none\n");
    printf("  pixels       %s, %d-bit, matrix %s, range %s, primaries %s\n", in->pix_fmt, in->bit_depth,
           in->color_space, in->color_range, in->color_primaries);
    printf("  frame rate   %.3f avg (%d/%d), nominal %d/%d\n", q2d(in->avg_fps_num, in->avg_fps_den), in->avg_fps_num,
           in->avg_fps_den, in->rate_num, in->rate_den);
    printf("  time         start %.6f s, duration %.6f s, time base %d/%d\n", in->start_time, in->duration,
           in->time_base_num, in->time_base_den);
    printf("  frames       %lld exact, %lld keyframes (from the %s)\n", (long long)in->num_frames,
           (long long)in->num_keyframes, src[in->index_source >= 0 && in->index_source <= 2 ? in->index_source : 1]);
    if (in->bit_rate > 0)
        printf("  bit rate     %.1f kb/s (stream), container %.1f kb/s\n", in->bit_rate / 1000.0,
               in->container_bit_rate / 1000.0);
    char why[REEL_ERROR_MSG_SIZE];
    reel_audio *a = open_audio(reel_decoder_get_name(dec), in->has_audio, why, sizeof why);
    if (a) {
        const reel_audio_info *ai = reel_audio_get_info(a);
        printf("  audio        stream %d, %s, %d Hz, %d channel%s, first sample at %.6f s\n", ai->stream_index,
               ai->codec, ai->native_sample_rate, ai->native_channels, ai->native_channels == 1 ? "" : "s",
               ai->start_seconds);
    } else {
        printf("  audio        none (%s)\n", why);
    }
    reel_audio_close(&a);
}

int reel_cli_info(int argc, char **argv)
{
    int json = 0, table = 0, use_index = 0, nfiles = 0, failed = 0;
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = 1;
    char **files = calloc((size_t)argc, sizeof *files);
    if (!files) return 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--table"))
            table = 1;
        else if (!strcmp(argv[i], "--index"))
            use_index = 1;
        else if (!strcmp(argv[i], "--scan"))
            s.force_scan = 1;
        else if (!strcmp(argv[i], "--stream") && i + 1 < argc) {
            if (cli_parse_int(argv[++i], &s.stream_index)) {
                fprintf(stderr, "reel info: bad --stream '%s'\n", argv[i]);
                free(files);
                return 2;
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            free(files);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "reel info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            free(files);
            return 2;
        } else
            files[nfiles++] = argv[i];
    }
    if (!nfiles) {
        usage(stderr);
        free(files);
        return 2;
    }
    if (use_index) s.index_mode = REEL_INDEX_READ_WRITE;
    reel_set_ffmpeg_log_level(getenv("REEL_FFMPEG_LOG") ? atoi(getenv("REEL_FFMPEG_LOG")) : 0);
    for (int i = 0; i < nfiles; i++) {
        reel_decoder *dec = NULL;
        reel_error err;
        reel_error_clear(&err);
        if (reel_decoder_open(&dec, files[i], &s, &err) != REEL_OK) {
            fprintf(stderr, "reel info: %s\n", err.message);
            failed++;
            continue;
        }
        if (json)
            print_json(dec, table);
        else {
            if (i) printf("\n");
            print_human(dec);
        }
        reel_decoder_close(&dec);
    }
    free(files);
    return failed ? 1 : 0;
}
