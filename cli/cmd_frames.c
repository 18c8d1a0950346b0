/* cmd_frames.c: `reel frames FILE (--at LIST | --times LIST) ... (-o DIR |
 * --raw FILE) [--audio FILE]`: exact frames as PNG files or concatenated raw
 * RGB24, and the audio played while they are shown (reel/audio.h). */
#include "cli.h"
#include "util.h"
#include "reel/reel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libavcodec/avcodec.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: reel frames FILE (--at 0,10,-1 | --times 1.5,3.0) [options] (-o DIR | --raw FILE)\n"
                "  --at LIST        frame indices (negative: from the end), any order, repeats allowed\n"
                "  --times LIST     seconds; each selects the frame displayed at that time\n"
                "  --stream N       decode stream N instead of the best video stream\n"
                "  --size WxH       output size (0 for one side keeps the aspect)\n"
                "  --crop x,y,w,h   crop before resizing\n"
                "  --filter F       bilinear (default), area, bicubic, nearest\n"
                "  --convert-path P fused (default: one pass from YUV) or after_rgb (resize full-size\n"
                "                   RGB, as torchvision)\n"
                "  --no-rotate      the pixels as stored, without the display rotation (applied by default)\n"
                "  --chw            --raw output planar (C,H,W) instead of interleaved\n"
                "  --threads N      decoder threads (0: all cores)\n"
                "  --skip-corrupt   skip corrupt packets instead of failing (audio too: zeros, said by --stats)\n"
                "  --stats          print decode statistics to stderr\n"
                "  -o DIR           write one PNG per requested frame\n"
                "  --raw FILE       write RGB24 bytes, frames concatenated in request order ('-' for stdout)\n"
                "  --audio FILE     also write the audio of [min pts, max(pts + duration)) of the frames:\n"
                "                   float32 little-endian, channels interleaved (as ffmpeg -f f32le; '-': stdout)\n"
                "  --audio-rate N   its sample rate (default: the stream's)\n"
                "  --audio-channels 1  the mean of the channels (default: the stream's channels)\n"
                "  --audio-missing zeros  a video without audio gives zeros (needs --audio-rate) instead of failing\n");
}

/* Writes one RGB24 image as PNG with FFmpeg's PNG encoder. */
static int write_png(const char *path, const uint8_t *rgb, int w, int h)
{
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
    AVCodecContext *c = codec ? avcodec_alloc_context3(codec) : NULL;
    AVFrame *f = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    int ok = 0;
    FILE *fp = NULL;
    if (!c || !f || !pkt) goto done;
    c->width = w;
    c->height = h;
    c->pix_fmt = AV_PIX_FMT_RGB24;
    c->time_base = (AVRational){ 1, 25 };
    if (avcodec_open2(c, codec, NULL) < 0) goto done;
    f->format = AV_PIX_FMT_RGB24;
    f->width = w;
    f->height = h;
    f->data[0] = (uint8_t *)rgb;
    f->linesize[0] = w * 3;
    if (avcodec_send_frame(c, f) < 0 || avcodec_receive_packet(c, pkt) < 0) goto done;
    fp = fopen(path, "wb");
    if (!fp) goto done;
    ok = fwrite(pkt->data, 1, (size_t)pkt->size, fp) == (size_t)pkt->size;
    ok = (fclose(fp) == 0) && ok;
done:
    av_packet_free(&pkt);
    av_frame_free(&f);
    avcodec_free_context(&c);
    return ok ? 0 : -1;
}

/* The command line of `reel frames`. */
typedef struct frames_args {
    const char *file, *at, *times, *outdir, *raw, *audio;
    int stats;
    reel_audio_settings as;
    reel_decoder_settings s;
    reel_transform t;
} frames_args;

/* Reads the command line into *a: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, frames_args *a)
{
    memset(a, 0, sizeof *a);
    reel_decoder_default_settings(&a->s);
    reel_transform_default_settings(&a->t);
    reel_audio_default_settings(&a->as);
    a->as.cache_bytes = 0; /* one window: nothing to serve again */
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(o, "--at") && v) {
            a->at = v;
            i++;
        } else if (!strcmp(o, "--times") && v) {
            a->times = v;
            i++;
        } else if (!strcmp(o, "--stream") && v) {
            bad = cli_parse_int(v, &a->s.stream_index);
            i++;
        } else if (!strcmp(o, "--threads") && v) {
            bad = cli_parse_int(v, &a->s.threads);
            i++;
        } else if (!strcmp(o, "--size") && v) {
            bad = cli_parse_size(v, &a->t.width, &a->t.height);
            i++;
        } else if (!strcmp(o, "--crop") && v) {
            bad = cli_parse_crop(v, &a->t.crop_x, &a->t.crop_y, &a->t.crop_w, &a->t.crop_h);
            i++;
        } else if (!strcmp(o, "--filter") && v) {
            i++;
            if (!strcmp(v, "bilinear"))
                a->t.pixels.filter = REEL_FILTER_BILINEAR;
            else if (!strcmp(v, "area"))
                a->t.pixels.filter = REEL_FILTER_AREA;
            else if (!strcmp(v, "bicubic"))
                a->t.pixels.filter = REEL_FILTER_BICUBIC;
            else if (!strcmp(v, "nearest"))
                a->t.pixels.filter = REEL_FILTER_NEAREST;
            else
                bad = 1;
        } else if (!strcmp(o, "--convert-path") && v) {
            i++;
            if (!strcmp(v, "fused"))
                a->t.pixels.convert_path = REEL_CONVERT_PATH_FUSED;
            else if (!strcmp(v, "after_rgb"))
                a->t.pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;
            else
                bad = 1;
        } else if (!strcmp(o, "--no-rotate"))
            a->t.pixels.apply_rotation = 0;
        else if (!strcmp(o, "--chw"))
            a->t.layout = REEL_LAYOUT_CHW;
        else if (!strcmp(o, "--skip-corrupt"))
            a->s.corrupt_policy = REEL_CORRUPT_SKIP;
        else if (!strcmp(o, "--stats"))
            a->stats = 1;
        else if (!strcmp(o, "-o") && v) {
            a->outdir = v;
            i++;
        } else if (!strcmp(o, "--raw") && v) {
            a->raw = v;
            i++;
        } else if (!strcmp(o, "--audio") && v) {
            a->audio = v;
            i++;
        } else if (!strcmp(o, "--audio-rate") && v) {
            bad = cli_parse_int(v, &a->as.sample_rate) != 0;
            i++;
        } else if (!strcmp(o, "--audio-channels") && v) {
            bad = cli_parse_int(v, &a->as.channels) != 0;
            i++;
        } else if (!strcmp(o, "--audio-missing") && v) {
            bad = strcmp(v, "zeros") != 0 && strcmp(v, "raise") != 0;
            a->as.missing = strcmp(v, "zeros") ? REEL_AUDIO_MISSING_RAISE : REEL_AUDIO_MISSING_ZEROS;
            i++;
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "reel frames: unknown or incomplete option '%s'\n", o);
            usage(stderr);
            return 2;
        } else if (!a->file)
            a->file = o;
        else {
            fprintf(stderr, "reel frames: only one FILE (got '%s' too)\n", o);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "reel frames: bad value for %s: '%s'\n", o, v);
            return 2;
        }
    }
    if (!a->file || (!a->at == !a->times) || (!a->outdir == !a->raw)) {
        fprintf(stderr, "reel frames: need FILE, exactly one of --at/--times, and exactly one of -o/--raw\n");
        usage(stderr);
        return 2;
    }
    if (a->audio && a->raw && !strcmp(a->audio, "-") && !strcmp(a->raw, "-")) {
        fprintf(stderr, "reel frames: --raw and --audio cannot both go to stdout\n");
        return 2;
    }
    if (a->outdir && a->t.layout == REEL_LAYOUT_CHW) {
        fprintf(stderr, "reel frames: --chw is for --raw output\n");
        return 2;
    }
    return -1;
}

/* One PNG per requested frame in outdir: frame_<index>.png, and
 * frame_<index>_<position>.png for an index asked for more than once.
 * 0, or -1 after saying why. */
static int write_pngs(const char *outdir, const reel_decoder *dec, const int64_t *idx, long n, const uint8_t *buf,
                      size_t fb, int w, int h)
{
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "reel frames: %s: cannot create directory: %s\n", outdir, strerror(errno));
        return -1;
    }
    int64_t nf = reel_decoder_get_info(dec)->num_frames;
    for (long i = 0; i < n; i++) {
        int64_t fi = idx[i] < 0 ? idx[i] + nf : idx[i];
        int dup = 0;
        for (long j = 0; j < n; j++) {
            int64_t fj = idx[j] < 0 ? idx[j] + nf : idx[j];
            if (j != i && fj == fi) dup = 1;
        }
        char path[4096];
        if (dup)
            snprintf(path, sizeof path, "%s/frame_%06lld_%ld.png", outdir, (long long)fi, i);
        else
            snprintf(path, sizeof path, "%s/frame_%06lld.png", outdir, (long long)fi);
        if (write_png(path, buf + (size_t)i * fb, w, h) != 0) {
            fprintf(stderr, "reel frames: %s: cannot write PNG\n", path);
            return -1;
        }
    }
    return 0;
}

/* The audio of the frames' window [min p_i, max(p_i + d_i)) into `path`:
 * float32 interleaved. 0, or -1 after saying why. */
static int write_audio(const char *path, const char *file, const reel_audio_settings *as, const reel_decoder *dec,
                       const int64_t *idx, long n, int stats)
{
    int64_t nf = 0;
    const reel_frame_entry *tab = reel_decoder_get_frame_table(dec, &nf);
    const reel_video_info *vi = reel_decoder_get_info(dec);
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (long i = 0; i < n && tab; i++) {
        int64_t k = idx[i] < 0 ? idx[i] + nf : idx[i];
        if (k < 0 || k >= nf) continue; /* get_frames said so already */
        if (tab[k].pts < t0) t0 = tab[k].pts;
        if (tab[k].pts + tab[k].duration > t1) t1 = tab[k].pts + tab[k].duration;
    }
    reel_error err;
    reel_error_clear(&err);
    reel_audio *a = NULL;
    reel_audio_window w;
    float *buf = NULL, *il = NULL;
    FILE *out = NULL;
    int rc = -1;
    if (!tab || t0 > t1) {
        fprintf(stderr, "reel frames: %s: no frame table for the audio's window\n", file);
        return -1;
    }
    if (reel_decoder_open_audio(dec, as, &a, &err) != REEL_OK || /* a URL: the decoder's bytes */
        reel_audio_get_window(a, t0, t1, vi->time_base_num, vi->time_base_den, &w, &err) != REEL_OK)
        goto fail;
    const int ch = reel_audio_get_info(a)->channels;
    const size_t cnt = (size_t)w.num_samples * (size_t)ch;
    buf = malloc(cnt * sizeof(float) + 1);
    il = malloc(cnt * sizeof(float) + 1);
    if (!buf || !il) {
        fprintf(stderr, "reel frames: %s: out of memory for the audio\n", file);
        goto done;
    }
    if (reel_audio_get_samples(a, t0, t1, vi->time_base_num, vi->time_base_den, buf, cnt, &w, &err) != REEL_OK)
        goto fail;
    for (int64_t i = 0; i < w.num_samples; i++)
        for (int c = 0; c < ch; c++)
            il[(size_t)i * (size_t)ch + (size_t)c] = buf[(size_t)c * (size_t)w.num_samples + (size_t)i];
    out = strcmp(path, "-") ? fopen(path, "wb") : stdout;
    if (!out || fwrite(il, sizeof(float), cnt, out) != cnt || fflush(out) != 0) {
        fprintf(stderr, "reel frames: %s: cannot write: %s\n", path, strerror(errno));
        goto done;
    }
    if (stats)
        fprintf(stderr,
                "audio: %d Hz, %d channels, first sample %lld, %lld samples, valid [%lld, %lld), missing %lld in "
                "[%lld, %lld), %lld corrupt packets\n",
                reel_audio_get_info(a)->sample_rate, ch, (long long)w.first_sample, (long long)w.num_samples,
                (long long)w.valid_lo, (long long)w.valid_hi, (long long)w.missing, (long long)w.missing_lo,
                (long long)w.missing_hi, (long long)w.corrupt_packets);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "reel frames: %s\n", err.message[0] ? err.message : "audio failed");
done:
    if (out && out != stdout) fclose(out);
    free(buf);
    free(il);
    reel_audio_close(&a);
    return rc;
}

int reel_cli_frames(int argc, char **argv)
{
    frames_args a;
    int code = parse_args(argc, argv, &a);
    if (code >= 0) return code;
    const char *file = a.file, *at = a.at, *times = a.times, *outdir = a.outdir, *raw = a.raw;
    reel_decoder_settings s = a.s;
    reel_transform t = a.t;
    const int stats = a.stats;

    int64_t *idx = NULL;
    double *secs = NULL;
    long n = at ? cli_parse_i64_list(at, &idx) : cli_parse_f64_list(times, &secs);
    if (n <= 0) {
        fprintf(stderr, "reel frames: bad list '%s'\n", at ? at : times);
        return 2;
    }

    reel_set_ffmpeg_log_level(getenv("REEL_FFMPEG_LOG") ? atoi(getenv("REEL_FFMPEG_LOG")) : 0);
    reel_error err;
    reel_error_clear(&err);
    reel_decoder *dec = NULL;
    int rc = 1, w = 0, h = 0;
    size_t fb = 0;
    uint8_t *buf = NULL;
    FILE *out = NULL;
    reel_decode_stats st;
    if (reel_decoder_open(&dec, file, &s, &err) != REEL_OK) goto fail;
    if (reel_decoder_get_output_size(dec, &t, &w, &h, &fb, &err) != REEL_OK) goto fail;
    if (!idx) {
        idx = malloc((size_t)n * sizeof *idx);
        if (!idx) goto fail;
        for (long i = 0; i < n; i++)
            if (reel_decoder_get_index_at_time(dec, secs[i], &idx[i], &err) != REEL_OK) goto fail;
    }
    buf = malloc(fb * (size_t)n);
    if (!buf) {
        fprintf(stderr, "reel frames: %s: out of memory for %ld frames\n", file, n);
        goto done;
    }
    if (reel_decoder_get_frames(dec, idx, (size_t)n, &t, buf, fb * (size_t)n, &st, &err) != REEL_OK) goto fail;
    if (stats)
        fprintf(stderr,
                "requested %lld, returned %lld distinct, decoded %lld, skipped %lld, packets %lld, seeks %lld, "
                "amplification %.2f\n",
                (long long)st.frames_requested, (long long)st.frames_returned, (long long)st.frames_decoded,
                (long long)st.frames_skipped, (long long)st.packets_read, (long long)st.seeks, st.amplification);
    if (raw) {
        out = strcmp(raw, "-") ? fopen(raw, "wb") : stdout;
        if (!out) {
            fprintf(stderr, "reel frames: %s: cannot write: %s\n", raw, strerror(errno));
            goto done;
        }
        if (fwrite(buf, fb, (size_t)n, out) != (size_t)n || fflush(out) != 0) {
            fprintf(stderr, "reel frames: %s: write failed: %s\n", raw, strerror(errno));
            goto done;
        }
    } else {
        if (write_pngs(outdir, dec, idx, n, buf, fb, w, h) != 0) goto done;
    }
    a.as.corrupt_policy = a.s.corrupt_policy; /* the audio follows --skip-corrupt as the frames do */
    if (a.audio && write_audio(a.audio, file, &a.as, dec, idx, n, stats) != 0) goto done;
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "reel frames: %s\n", err.message[0] ? err.message : "failed");
done:
    if (out && out != stdout) fclose(out);
    free(buf);
    free(idx);
    free(secs);
    reel_decoder_close(&dec);
    return rc;
}
