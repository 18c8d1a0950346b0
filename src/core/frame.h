/* frame.h: the layout of reel_frame, the decoded picture a visitor is handed:
 * made by the decoder and by the packed store's reader, read by convert. */
#ifndef REEL_CORE_FRAME_H
#define REEL_CORE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <libavutil/frame.h>

#include "reel/common.h"

struct reel_frame {
    const AVFrame *av;
    int64_t index;
    int64_t pts;
    int rotation; /* clockwise degrees for display */
    /* A window: `av` holds only the part of a full_w x full_h picture
     * whose top-left corner is (win_x, win_y). full_w == 0: the whole. */
    int win_x, win_y, full_w, full_h;
    /* The window is of the picture scaled by 1/scale (JPEG DCT scaling), in
     * scaled coordinates; 0 or 1: unscaled. */
    int scale;
};

/* Asks the consumer of a frame which part of a w x h picture request
 * position `pos` needs: fills win = {x, y, w, h, out_w, out_h} (the crop,
 * and the size it is resized to) and returns 1, or returns 0 when it needs
 * the whole picture. A producer that can decode part of a picture (the
 * store's JPEG reader) then decodes only that window, and may decode it
 * scaled down by 1/2, 1/4 or 1/8 while that stays at least the output size. */
typedef int (*reel__window_fn)(void *opaque, size_t pos, int w, int h, int win[6]);

/* Fills *f; `av` must outlive every use of f. */
static inline void reel__frame_wrap(reel_frame *f, const AVFrame *av, int64_t index, int64_t pts, int rotation)
{
    f->av = av;
    f->index = index;
    f->pts = pts;
    f->rotation = rotation;
    f->win_x = f->win_y = f->full_w = f->full_h = f->scale = 0;
}

#endif
