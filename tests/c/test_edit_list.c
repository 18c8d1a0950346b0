/* test_edit_list.c: an MP4 whose edit list trims the first packets, a
 * keyframe among them (what `ffmpeg -ss T -c copy` writes): the frames shown
 * before the next keyframe are decoded from the trimmed one. Every frame
 * shown is a frame of the table, from the container index, the packet scan
 * and the sidecar alike, and decodes to itself. */
#include "test_api_common.h"

#include <libavformat/avformat.h>

/* The cut: the source (synth, 25 fps, GOP 16, 2 B-frames) is shown from
 * frame CUT on; its decode starts at keyframe 16, which the edit list trims
 * with the three frames after it. */
enum { SRC_FRAMES = 64, CUT = 19, SHOWN = SRC_FRAMES - CUT };

/* Copies src's video to dst (mp4) from the last keyframe at or before
 * presentation time `cut_pts` on, every timestamp shifted by -cut_pts: the
 * packets shown before the cut get negative times, which the mov muxer
 * trims with an edit list (as the ffmpeg CLI's -ss with -c copy does). */
static void cut_copy(const char *src, const char *dst, int64_t cut_pts)
{
    AVFormatContext *in = NULL, *out = NULL;
    CHECK_MSG(avformat_open_input(&in, src, NULL, NULL) == 0, "cannot open %s", src);
    CHECK(avformat_find_stream_info(in, NULL) >= 0 && in->nb_streams == 1);
    AVStream *ist = in->streams[0];
    /* the packets in decode order, and the keyframe to start from */
    AVPacket *pk[SRC_FRAMES];
    int np = 0, from = 0;
    AVPacket *p = av_packet_alloc();
    CHECK(p != NULL);
    while (np < SRC_FRAMES && av_read_frame(in, p) >= 0) {
        if ((p->flags & AV_PKT_FLAG_KEY) && p->pts <= cut_pts) from = np;
        pk[np++] = av_packet_clone(p);
        av_packet_unref(p);
    }
    av_packet_free(&p);
    CHECK_EQ_INT(np, SRC_FRAMES);
    CHECK(avformat_alloc_output_context2(&out, NULL, "mp4", dst) >= 0 && out);
    AVStream *ost = avformat_new_stream(out, NULL);
    CHECK(ost != NULL && avcodec_parameters_copy(ost->codecpar, ist->codecpar) >= 0);
    ost->codecpar->codec_tag = 0;
    ost->time_base = ist->time_base;
    CHECK(avio_open(&out->pb, dst, AVIO_FLAG_WRITE) >= 0);
    CHECK(avformat_write_header(out, NULL) >= 0);
    for (int i = 0; i < np; i++) {
        if (i >= from) {
            pk[i]->pts -= cut_pts;
            pk[i]->dts -= cut_pts;
            pk[i]->stream_index = 0;
            pk[i]->pos = -1;
            av_packet_rescale_ts(pk[i], ist->time_base, ost->time_base);
            CHECK(av_write_frame(out, pk[i]) >= 0);
        }
        av_packet_free(&pk[i]);
    }
    CHECK(av_write_trailer(out) >= 0);
    avio_closep(&out->pb);
    avformat_free_context(out);
    avformat_close_input(&in);
}

/* The cut video (made once): frame i shows source frame CUT + i. */
static const char *cut_video(void)
{
    static char path[4096];
    if (path[0] && tg_file_exists(path)) return path;
    char src[4096];
    reel_synth_params sp;
    tg_path(src, sizeof src, "el_src.mp4");
    tg_params(&sp, src, "h264", 96, 64, SRC_FRAMES, 16, 2);
    tg_synth(&sp);
    reel_decoder *d = tg_open(src, NULL);
    int64_t n = 0;
    const reel_frame_entry *t = reel_decoder_get_frame_table(d, &n);
    CHECK_EQ_INT(n, SRC_FRAMES);
    const int64_t cut_pts = t[CUT].pts;
    reel_decoder_close(&d);
    tg_path(path, sizeof path, "el_cut.mp4");
    cut_copy(src, path, cut_pts);
    return path;
}

static reel_decoder *open_with(const char *path, int threads, int force_scan, int index_mode)
{
    reel_decoder_settings s;
    reel_decoder_default_settings(&s);
    s.threads = threads;
    s.force_scan = force_scan;
    s.index_mode = index_mode;
    return tg_open(path, &s);
}

/* What every table of the cut video must say: SHOWN frames from pts 0 one
 * frame apart, the keyframes shown (source 32 and 48), frame 0 none. */
static void check_table(reel_decoder *d, int source)
{
    const reel_video_info *in = reel_decoder_get_info(d);
    CHECK_EQ_INT(in->index_source, source);
    CHECK_EQ_INT(in->num_frames, SHOWN);
    CHECK_EQ_INT(in->start_pts, 0);
    int64_t n = 0, nk = 0;
    const reel_frame_entry *t = reel_decoder_get_frame_table(d, &n);
    CHECK_EQ_INT(n, SHOWN);
    const int64_t step = t[1].pts - t[0].pts;
    CHECK(step > 0);
    for (int64_t i = 0; i < n; i++) {
        CHECK_MSG(t[i].pts == i * step, "frame %lld at pts %lld, want %lld", (long long)i, (long long)t[i].pts,
                  (long long)(i * step));
        CHECK_EQ_INT(t[i].flags & REEL_FRAME_KEY, (CUT + i) % 16 == 0 ? REEL_FRAME_KEY : 0);
    }
    const int64_t *k = reel_decoder_get_keyframes(d, &nk);
    CHECK_EQ_INT(nk, 2);
    CHECK_EQ_INT(k[0], 32 - CUT);
    CHECK_EQ_INT(k[1], 48 - CUT);
    int64_t at0 = -1;
    reel_error err;
    reel_error_clear(&err);
    CHECK_OK(reel_decoder_get_index_at_time(d, 0.0, &at0, &err));
    CHECK_EQ_INT(at0, 0);
}

/* Frames idx[0..n) of d each show source frame CUT + idx. */
static void check_frames(reel_decoder *d, const int64_t *idx, size_t n, reel_decode_stats *st)
{
    int w = 0, h = 0;
    size_t fb = tg_frame_bytes(d, NULL, &w, &h);
    uint8_t *got = tg_get(d, idx, n, NULL, st);
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(tg_read_idx(got + i * fb, w, h) == CUT + idx[i], "frame %lld shows source frame %lld, want %lld",
                  (long long)idx[i], (long long)tg_read_idx(got + i * fb, w, h), (long long)(CUT + idx[i]));
    free(got);
}

TEST(frames_shown_before_the_first_keyframe_shown_are_frames)
{
    const char *path = cut_video();
    for (int scan = 0; scan <= 1; scan++) {
        reel_decoder *d = open_with(path, 1, scan, REEL_INDEX_OFF);
        check_table(d, scan ? REEL_INDEX_FROM_SCAN : REEL_INDEX_FROM_CONTAINER);
        int64_t all[SHOWN];
        for (int i = 0; i < SHOWN; i++) all[i] = i;
        check_frames(d, all, SHOWN, NULL);
        reel_decoder_close(&d);
    }
    /* the container's table is the scan's, hidden packets included: same
     * decode order */
    reel_decoder *a = open_with(path, 1, 0, REEL_INDEX_OFF), *b = open_with(path, 1, 1, REEL_INDEX_OFF);
    check_same_table(a, b);
    reel_decoder_close(&a);
    reel_decoder_close(&b);
}

TEST(each_frame_before_the_keyframe_decodes_cold_from_the_trimmed_one)
{
    const char *path = cut_video();
    for (int threads = 1; threads <= 2; threads++)
        for (int64_t i = 0; i < 16 - CUT % 16 + 2; i++) {
            reel_decoder *d = open_with(path, threads, 0, REEL_INDEX_OFF);
            reel_decode_stats st;
            const int64_t want[] = { i, SHOWN - 1 - i }; /* and one from the end, in a second run */
            check_frames(d, want, 2, &st);
            /* the trimmed keyframe is a clean start: its probe (frame
             * threads) decodes it, though the codec never shows it */
            CHECK_MSG(st.key_restarts == 0 && st.thread_fallbacks == 0,
                      "frame %lld, %d thread(s): %lld key restarts, %lld thread fallbacks", (long long)i, threads,
                      (long long)st.key_restarts, (long long)st.thread_fallbacks);
            reel_decoder_close(&d);
        }
    /* random access in any order, with repeats, through one decoder */
    reel_decoder *d = open_with(path, 2, 0, REEL_INDEX_OFF);
    const int64_t mix[] = { 40, 0, 13, 2, 0, 1, 29, 12, 3, 44, 4 };
    check_frames(d, mix, sizeof mix / sizeof mix[0], NULL);
    const int64_t again[] = { 0, 1, 2 };
    check_frames(d, again, 3, NULL);
    reel_decoder_close(&d);
}

TEST(the_sidecar_keeps_the_trimmed_packets_and_older_versions_are_rebuilt)
{
    const char *path = cut_video();
    char idx[4200];
    snprintf(idx, sizeof idx, "%s.reelidx", path);
    unlink(idx);
    reel_decoder *built = open_with(path, 1, 0, REEL_INDEX_READ_WRITE);
    CHECK(tg_file_exists(idx));
    reel_decoder *loaded = open_with(path, 1, 0, REEL_INDEX_READ);
    check_table(loaded, REEL_INDEX_FROM_SIDECAR);
    check_same_table(built, loaded);
    const int64_t some[] = { 0, 3, 4, 20, 44 };
    check_frames(loaded, some, 5, NULL);
    reel_decoder_close(&loaded);

    /* a version 1 sidecar (its table left the trimmed packets out) is
     * stale: the video is indexed again, and the file rewritten */
    size_t size = 0;
    uint8_t *b = tg_read_file(idx, &size);
    uint32_t v;
    memcpy(&v, b + 8, 4);
    CHECK_EQ_INT(v, 2);
    v = 1;
    memcpy(b + 8, &v, 4);
    tg_write_file(idx, b, size);
    reel_decoder *old = open_with(path, 1, 0, REEL_INDEX_READ);
    check_table(old, REEL_INDEX_FROM_CONTAINER);
    reel_decoder_close(&old);
    reel_decoder *rw = open_with(path, 1, 0, REEL_INDEX_READ_WRITE);
    check_table(rw, REEL_INDEX_FROM_CONTAINER);
    reel_decoder_close(&rw);
    reel_decoder *again = open_with(path, 1, 0, REEL_INDEX_READ);
    check_table(again, REEL_INDEX_FROM_SIDECAR);
    check_same_table(built, again);
    reel_decoder_close(&again);
    reel_decoder_close(&built);
    free(b);
}
