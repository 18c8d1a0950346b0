/* audio_damage_common.h: what test_audio.c and test_loader_audio.c share:
 * corrupt bytes inside one audio packet of a file, found by ffprobe.
 * Header-only, static. */
#ifndef REEL_TEST_AUDIO_DAMAGE_COMMON_H
#define REEL_TEST_AUDIO_DAMAGE_COMMON_H

#include <stdio.h>

#include "harness.h"

typedef struct packet_at {
    long long pos, size, pts;
} packet_at;

/* Packet n * num / den of the first audio stream of `path` (ffprobe; n the
 * packets), its bytes after the first two overwritten by a fixed
 * pseudo-random sequence, in place (mp4: ffprobe's pos is the packet's
 * first byte; in Matroska it is the block's header, whose damage the
 * demuxer drops without a word). */
__attribute__((unused)) static packet_at damage_audio_packet(const char *path, int num, int den)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ffprobe -v error -select_streams a:0 -show_entries packet=pts,pos,size -of csv=p=0 '%s'",
             path);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    packet_at all[4096];
    int n = 0;
    char line[256];
    while (n < 4096 && fgets(line, sizeof line, p)) { /* pts,size,pos (ffprobe's order) */
        packet_at k;
        if (sscanf(line, "%lld,%lld,%lld", &k.pts, &k.size, &k.pos) == 3) all[n++] = k;
    }
    CHECK(pclose(p) == 0);
    CHECK_MSG(n > 10, "%s: %d audio packets", path, n);
    packet_at k = all[(long long)n * num / den];
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    CHECK(fseek(f, (long)k.pos + 2, SEEK_SET) == 0);
    unsigned x = 12345;
    for (long long i = 2; i < k.size; i++) {
        x = x * 1103515245u + 12345u;
        CHECK(fputc((int)(x >> 16) & 0xff, f) != EOF);
    }
    CHECK(fclose(f) == 0);
    return k;
}

#endif
