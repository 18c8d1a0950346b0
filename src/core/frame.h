/* frame.h: the layout of reel_frame, the decoded picture a visitor is handed:
 * made by the decoder and by the packed store's reader, read by convert. */
#ifndef REEL_CORE_FRAME_H
#define REEL_CORE_FRAME_H

#include <stdint.h>

#include <libavutil/frame.h>

#include "reel/convert.h"

struct reel_frame {
    const AVFrame *av;
    int64_t index;
    int64_t pts;
    int rotation; /* clockwise degrees for display */
};

/* Fills *f; `av` must outlive every use of f. */
static inline void reel__frame_wrap(reel_frame *f, const AVFrame *av, int64_t index, int64_t pts, int rotation)
{
    f->av = av;
    f->index = index;
    f->pts = pts;
    f->rotation = rotation;
}

#endif
