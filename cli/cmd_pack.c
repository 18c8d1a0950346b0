/* cmd_pack.c: `reel pack`: build a packed store from a dataset (in parts
 * across machines if wanted), merge the parts, verify a store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "reel/reel.h"
#include "reel/store.h"
#include "util.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: reel pack SOURCE OUT_DIR [options]   build a store (SOURCE: a folder or a manifest)\n"
                 "       reel pack --merge OUT_DIR            write the index of a store built in parts\n"
                 "       reel pack --verify OUT_DIR           read every record, check every checksum and that\n"
                 "                                            no shard holds bytes past its last record\n"
                 "\n"
                 "options:\n"
                 "  --size S | WxH | source stored size: short side S (aspect kept; default 256), exactly WxH,\n"
                 "                          or each video's own (what a pixel-budget size policy needs)\n"
                 "  --fps F                 keep the frames shown at 0, 1/F, 2/F, ... s of each video\n"
                 "  --every K               keep source frames 0, K, 2K, ...\n"
                 "  --sampler fps|count     keep the frames of qwen-vl-utils' whole-video sampling (reel.vlm's,\n"
                 "                          the Loader's sampler \"fps\"): fps: F frames per second of video\n"
                 "                          (--fps, default 2), --min-frames A (default 4) to --max-frames B\n"
                 "                          (default 768) of them; count: --frames N; a multiple of\n"
                 "                          --frame-factor (default 2), spread by linspace over the video\n"
                 "  --format jpeg|raw|h264  (default jpeg)\n"
                 "  --color rgb|gray        stored channels (default rgb); gray: one, ffmpeg's -pix_fmt gray\n"
                 "  --dtype uint8|uint16    stored samples (default uint8); uint16: RGB as rgb48le, gray as the\n"
                 "                          source's codes (12-bit: 0..4095); gray and uint16 need --format raw\n"
                 "  --quality Q             JPEG quality (default 90)\n"
                 "  --zstd [LEVEL]          raw: compress each frame with zstd (default level 3)\n"
                 "  --gop G                 h264: keyframe interval (default 8); --crf N (default 18)\n"
                 "  --audio                 also keep each record's audio: the samples played over its stored\n"
                 "                          frames, decoded once per video (the Loader's audio reads them)\n"
                 "  --audio-rate R          with --audio: resample to R Hz (default: each video's own rate)\n"
                 "  --audio-channels 1      with --audio: the mean of the channels (default: each video's own)\n"
                 "  --audio-stream I        with --audio: absolute audio stream index (default: the best)\n"
                 "  --skip-corrupt          a damaged packet is skipped, best effort (the audio's dropped packets\n"
                 "                          as zeros, said by the record; the Loader's corrupt_policy \"skip\");\n"
                 "                          without it a video with one is recorded as failed (its audio: the\n"
                 "                          frames kept, the audio's reason recorded)\n"
                 "  --shard-size BYTES      bytes per shard file (default 1073741824; K, M, G suffixes)\n"
                 "  --threads N             decode/encode threads (default: cores)\n"
                 "  --part I/N | auto       build part I of N (auto: RANK and WORLD_SIZE from the environment)\n"
                 "  --ray [ADDRESS]         build on a Ray cluster (ADDRESS, e.g. 10.0.0.1:6379; default: RAY_ADDRESS\n"
                 "                          or a local one): parts as Ray tasks writing into OUT_DIR, which every\n"
                 "                          node must share; --parts N sets their number (python3 -m reel.ray pack)\n"
                 "  --json                  print the report as JSON\n"
                 "  --progress/--no-progress  the live progress bar (default: when stderr is a terminal)\n"
                 "\n"
                 "A killed build resumes when run again with the same options. A video that\n"
                 "cannot be decoded (or whose audio cannot be) is recorded in the store with\n"
                 "its reason, and named on stderr.\n"
                 "exit status: 0 ok, 1 runtime error (or damage found by --verify), 2 bad usage\n");
}

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "reel pack: %s '%s'\nrun 'reel pack --help' for the options\n", what, arg ? arg : "");
    return 2;
}

static int parse_bytes(const char *s, int64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return -1;
    double m = 1;
    if (*end == 'K' || *end == 'k')
        m = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        m = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        m = 1024.0 * 1024 * 1024, end++;
    if (*end) return -1;
    *out = (int64_t)(v * m);
    return 0;
}

static void progress_bar(void *opaque, const reel_pack_progress *p)
{
    (void)opaque;
    double frac = p->videos_total ? (double)p->videos_done / (double)p->videos_total : 1;
    double fresh = (double)(p->videos_done - p->videos_resumed);
    double rate = p->elapsed > 0 ? fresh / p->elapsed : 0;
    double eta = rate > 0 ? (double)(p->videos_total - p->videos_done) / rate : 0;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r[%s] %3.0f%% %lld/%lld videos  %.1f videos/s  %lld failed  ETA %.0f s ", bar, frac * 100,
            (long long)p->videos_done, (long long)p->videos_total, rate, (long long)p->videos_failed, eta);
    fflush(stderr);
}

static const char *format_name(reel_store_format f)
{
    return f == REEL_STORE_FORMAT_JPEG ? "jpeg" : f == REEL_STORE_FORMAT_RAW ? "raw" : "h264";
}

static int run_verify(const char *dir, int json)
{
    reel_store_verify_report rep;
    reel_error err;
    reel_error_clear(&err);
    int st = reel_store_verify(dir, &rep, &err);
    if (json) {
        printf("{\"store\": ");
        cli_json_str(stdout, dir);
        printf(", \"ok\": %s, \"records\": %lld, \"frames\": %lld, \"bytes\": %lld, \"bad\": %lld, "
               "\"failed_to_pack\": %lld, \"shards\": %lld, \"bad_shards\": %lld, \"bytes_past_records\": %lld, "
               "\"first_problem\": ",
               st == REEL_OK ? "true" : "false", (long long)rep.records, (long long)rep.frames, (long long)rep.bytes,
               (long long)rep.bad, (long long)rep.failed_to_pack, (long long)rep.shards, (long long)rep.bad_shards,
               (long long)rep.bytes_past_records);
        cli_json_str(stdout, st == REEL_OK ? "" : err.message);
        printf("}\n");
    } else if (st == REEL_OK) {
        printf("%s: ok: %lld records (%lld failed to pack), %lld frames, %lld bytes in %lld shards checked\n", dir,
               (long long)rep.records, (long long)rep.failed_to_pack, (long long)rep.frames, (long long)rep.bytes,
               (long long)rep.shards);
    }
    if (st != REEL_OK) fprintf(stderr, "reel pack --verify: %s\n", err.message);
    return st == REEL_OK ? 0 : 1;
}

/* `--ray [ADDRESS]`: the build runs as Ray tasks, driven by the Python
 * package (`python3 -m reel.ray pack ...`, run as its module reel._ray_pack,
 * which does not import Ray Data; $REEL_PYTHON names another interpreter).
 * The other options pass through unchanged. Returns only on failure. */
static int run_on_ray(int argc, char **argv)
{
    const char *py = getenv("REEL_PYTHON");
    if (!py || !py[0]) py = "python3";
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) return bad("out of memory for", "--ray");
    int n = 0;
    args[n++] = (char *)py;
    args[n++] = "-m";
    args[n++] = "reel._ray_pack";
    args[n++] = "pack";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ray") != 0) {
            args[n++] = argv[i];
            continue;
        }
        if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0 && strstr(argv[i + 1], ":")) {
            args[n++] = "--address";
            args[n++] = argv[++i];
        }
    }
    args[n] = NULL;
    fflush(stdout);
    execvp(py, args);
    fprintf(stderr, "reel pack --ray: cannot run %s (set REEL_PYTHON to a Python with reel[ray] installed)\n", py);
    free(args);
    return 1;
}

/* Applies one "--name value" option to *s (*whole_opt: the last option only
 * the whole-video samplers take): -1, or the exit code of a bad one. */
static int set_option(reel_pack_settings *s, const char *a, const char *v, const char **whole_opt)
{
    if (!strcmp(a, "--size")) {
        if (strchr(v, 'x') || strchr(v, 'X')) {
            if (cli_parse_size(v, &s->width, &s->height) != 0 || s->width < 1 || s->height < 1)
                return bad("bad --size (want S, WxH or source)", v);
        } else if (!strcmp(v, "source")) {
            s->short_side = 0; /* each video at its own size */
        } else if (cli_parse_int(v, &s->short_side) != 0 || s->short_side < 1) {
            return bad("bad --size (want S, WxH or source)", v);
        }
    } else if (!strcmp(a, "--fps")) {
        char *end;
        s->fps = strtod(v, &end);
        if (end == v || *end || !(s->fps > 0)) return bad("bad --fps", v);
    } else if (!strcmp(a, "--sampler")) {
        if (!strcmp(v, "fps"))
            s->sampler.kind = REEL_SAMPLER_FPS;
        else if (!strcmp(v, "count"))
            s->sampler.kind = REEL_SAMPLER_COUNT;
        else
            return bad("bad --sampler (fps or count)", v);
    } else if (!strcmp(a, "--min-frames")) {
        if (cli_parse_int(v, &s->sampler.min_frames) != 0 || s->sampler.min_frames < 0)
            return bad("bad --min-frames", v);
        *whole_opt = a;
    } else if (!strcmp(a, "--max-frames")) {
        if (cli_parse_int(v, &s->sampler.max_frames) != 0 || s->sampler.max_frames < 1)
            return bad("bad --max-frames", v);
        *whole_opt = a;
    } else if (!strcmp(a, "--frames")) {
        if (cli_parse_int(v, &s->sampler.frames_per_clip) != 0 || s->sampler.frames_per_clip < 1)
            return bad("bad --frames", v);
        *whole_opt = a;
    } else if (!strcmp(a, "--frame-factor")) {
        if (cli_parse_int(v, &s->sampler.frame_factor) != 0 || s->sampler.frame_factor < 1)
            return bad("bad --frame-factor", v);
        *whole_opt = a;
    } else if (!strcmp(a, "--every")) {
        if (cli_parse_int(v, &s->every) != 0 || s->every < 1) return bad("bad --every", v);
    } else if (!strcmp(a, "--format")) {
        if (!strcmp(v, "jpeg"))
            s->format = REEL_STORE_FORMAT_JPEG;
        else if (!strcmp(v, "raw"))
            s->format = REEL_STORE_FORMAT_RAW;
        else if (!strcmp(v, "h264"))
            s->format = REEL_STORE_FORMAT_H264;
        else
            return bad("bad --format (jpeg, raw or h264)", v);
    } else if (!strcmp(a, "--color")) {
        if (!strcmp(v, "rgb"))
            s->color = REEL_COLOR_RGB;
        else if (!strcmp(v, "gray"))
            s->color = REEL_COLOR_GRAY;
        else
            return bad("bad --color (rgb or gray)", v);
    } else if (!strcmp(a, "--dtype")) {
        if (!strcmp(v, "uint8"))
            s->dtype = REEL_DTYPE_UINT8;
        else if (!strcmp(v, "uint16"))
            s->dtype = REEL_DTYPE_UINT16;
        else
            return bad("bad --dtype (uint8 or uint16)", v);
    } else if (!strcmp(a, "--quality")) {
        if (cli_parse_int(v, &s->quality) != 0 || s->quality < 1 || s->quality > 100) return bad("bad --quality", v);
    } else if (!strcmp(a, "--gop")) {
        if (cli_parse_int(v, &s->gop) != 0 || s->gop < 1) return bad("bad --gop", v);
    } else if (!strcmp(a, "--crf")) {
        if (cli_parse_int(v, &s->crf) != 0 || s->crf > 51) return bad("bad --crf", v);
    } else if (!strcmp(a, "--shard-size")) {
        if (parse_bytes(v, &s->shard_size) != 0) return bad("bad --shard-size", v);
    } else if (!strcmp(a, "--threads")) {
        if (cli_parse_int(v, &s->threads) != 0) return bad("bad --threads", v);
    } else if (!strcmp(a, "--part")) {
        if (!strcmp(v, "auto")) {
            const char *r = getenv("RANK"), *w = getenv("WORLD_SIZE");
            if (!r || !w || cli_parse_int(r, &s->part_index) != 0 || cli_parse_int(w, &s->part_count) != 0)
                return bad("--part auto needs RANK and WORLD_SIZE in the environment; got", r ? r : "none");
        } else if (sscanf(v, "%d/%d", &s->part_index, &s->part_count) != 2 || s->part_count < 1 || s->part_index < 0 ||
                   s->part_index >= s->part_count) {
            return bad("bad --part (want I/N with 0 <= I < N)", v);
        }
    } else {
        return bad("unknown option", a);
    }
    return -1;
}

/* Applies one of --audio-rate, --audio-channels, --audio-stream (value v)
 * to *as: -1, or the exit code of a bad one. */
static int set_audio_option(reel_audio_settings *as, const char *a, const char *v)
{
    if (!v) return bad("missing value for", a);
    int x = 0;
    if (cli_parse_int(v, &x) != 0) return bad("bad value for", a);
    if (!strcmp(a, "--audio-rate") && (x < 1 || x > 1000000)) return bad("bad --audio-rate (1..1000000)", v);
    if (!strcmp(a, "--audio-channels") && x != 1) return bad("bad --audio-channels (1: their mean)", v);
    if (!strcmp(a, "--audio-stream") && x < 0) return bad("bad --audio-stream", v);
    *(!strcmp(a, "--audio-rate")       ? &as->sample_rate
      : !strcmp(a, "--audio-channels") ? &as->channels
                                       : &as->stream_index) = x;
    return -1;
}

/* `--merge OUT_DIR`: writes the index of a store built in parts. */
static int run_merge(const char *dir, int json)
{
    reel_error err;
    reel_error_clear(&err);
    if (reel_pack_merge(dir, &err) != REEL_OK) {
        fprintf(stderr, "reel pack --merge: %s\n", err.message);
        return 1;
    }
    if (json) {
        printf("{\"merged\": ");
        cli_json_str(stdout, dir);
        printf("}\n");
    } else {
        printf("%s: index written\n", dir);
    }
    return 0;
}

/* Builds the store at out from src under *s (show: the progress bar) and
 * prints its report. */
/* Names on stderr each video of a written store that could not be packed,
 * or whose audio could not be (the build went on: their records say why). */
static void name_failures(const char *out)
{
    reel_store *st = NULL;
    reel_store_info info;
    reel_error err;
    if (reel_store_open(&st, out, &err) != REEL_OK || reel_store_get_info(st, &info, &err) != REEL_OK) {
        reel_store_close(&st);
        return;
    }
    for (int64_t i = 0; i < info.num_records; i++) {
        reel_store_record r;
        if (reel_store_get_record(st, i, &r, &err) != REEL_OK) break;
        if (r.status != REEL_OK)
            fprintf(stderr, "reel pack: not packed: %s\n", r.reason);
        else if (info.audio && r.audio_status != REEL_OK && r.audio_status != REEL_E_NO_AUDIO_STREAM)
            fprintf(stderr, "reel pack: frames packed, audio not: %s\n", r.reason);
    }
    reel_store_close(&st);
}

static int run_pack(const char *src, const char *out, reel_pack_settings *s, int show, int json)
{
    if (show) s->progress = progress_bar;
    reel_set_ffmpeg_log_level(0);
    reel_pack_report rep;
    reel_error err;
    reel_error_clear(&err);
    int st = reel_pack(src, out, s, &rep, &err);
    if (show) fputc('\n', stderr);
    if (st != REEL_OK) {
        fprintf(stderr, "reel pack: %s\n", err.message);
        return 1;
    }
    if (rep.merged) name_failures(out);
    if (json) {
        printf("{\"store\": ");
        cli_json_str(stdout, out);
        printf(", \"format\": \"%s\", \"part\": %d, \"parts\": %d, \"videos\": %lld, \"packed\": %lld, "
               "\"failed\": %lld, \"resumed\": %lld, \"frames\": %lld, \"bytes\": %lld, \"seconds\": %.3f, "
               "\"merged\": %s}\n",
               format_name(s->format), s->part_index, s->part_count, (long long)rep.videos, (long long)rep.packed,
               (long long)rep.failed, (long long)rep.resumed, (long long)rep.frames, (long long)rep.bytes, rep.seconds,
               rep.merged ? "true" : "false");
    } else {
        printf("%s: %lld videos (%lld packed, %lld failed, %lld already done), %lld frames, %.1f MB in %.1f s%s\n", out,
               (long long)rep.videos, (long long)rep.packed, (long long)rep.failed, (long long)rep.resumed,
               (long long)rep.frames, (double)rep.bytes / 1e6, rep.seconds,
               rep.merged ? "" : "; run `reel pack --merge` once every part is done");
    }
    return 0;
}

int reel_cli_pack(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--ray")) return run_on_ray(argc, argv);
    reel_pack_settings s;
    reel_pack_default_settings(&s);
    s.sampler.frames_per_clip = 0; /* --frames: none given */
    const char *pos[2] = { NULL, NULL };
    int npos = 0, json = 0, merge = 0, verify = 0, show = -1;
    const char *whole_opt = NULL; /* an option only the whole-video samplers take */
    const char *audio_opt = NULL; /* an option only --audio takes */
    int audio = 0;
    reel_audio_settings as;
    reel_audio_default_settings(&as);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(a, "--merge")) {
            merge = 1;
            continue;
        }
        if (!strcmp(a, "--verify")) {
            verify = 1;
            continue;
        }
        if (!strcmp(a, "--progress")) {
            show = 1;
            continue;
        }
        if (!strcmp(a, "--no-progress")) {
            show = 0;
            continue;
        }
        if (!strcmp(a, "--audio")) {
            audio = 1;
            continue;
        }
        if (!strcmp(a, "--skip-corrupt")) { /* the name reel frames gives it */
            s.corrupt_policy = REEL_CORRUPT_SKIP;
            continue;
        }
        if (!strcmp(a, "--audio-rate") || !strcmp(a, "--audio-channels") || !strcmp(a, "--audio-stream")) {
            int code = set_audio_option(&as, a, v);
            if (code >= 0) return code;
            audio_opt = a;
            i++;
            continue;
        }
        if (!strcmp(a, "--zstd")) {
            s.zstd_level = 3;
            if (v && v[0] >= '0' && v[0] <= '9') {
                if (cli_parse_int(v, &s.zstd_level) != 0 || s.zstd_level > 19) return bad("bad --zstd level", v);
                i++;
            }
            continue;
        }
        if (a[0] == '-' && a[1] == '-') {
            if (!v) return bad("missing value for", a);
            i++;
            int code = set_option(&s, a, v, &whole_opt);
            if (code >= 0) return code;
            continue;
        }
        if (npos == 2) return bad("unexpected argument", a);
        pos[npos++] = a;
    }
    if (merge || verify) {
        if (npos != 1 || (merge && verify)) return bad("--merge and --verify take one OUT_DIR", npos ? pos[0] : "");
        return verify ? run_verify(pos[0], json) : run_merge(pos[0], json);
    }
    if (npos != 2) {
        usage(stderr);
        return 2;
    }
    if (audio_opt && !audio) return bad("this option needs --audio:", audio_opt);
    if (audio) s.audio = &as;
    if (whole_opt && s.sampler.kind == REEL_SAMPLER_NONE)
        return bad("this option needs --sampler fps or --sampler count:", whole_opt);
    if (s.sampler.kind == REEL_SAMPLER_COUNT && s.sampler.frames_per_clip < 1)
        return bad("--sampler count needs", "--frames N");
    if (s.sampler.frames_per_clip < 1) { /* no --frames: the default the other kinds keep */
        reel_sampler_settings d;
        reel_sampler_default_settings(&d);
        s.sampler.frames_per_clip = d.frames_per_clip;
    }
    if (s.sampler.kind == REEL_SAMPLER_FPS && s.fps > 0) { /* --fps is the fps sampler's rate */
        s.sampler.fps = s.fps;
        s.fps = 0;
    }
    if (show < 0) show = isatty(2);
    return run_pack(pos[0], pos[1], &s, show, json);
}
