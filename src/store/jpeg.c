/* jpeg.c: decoding a window of a stored JPEG with libjpeg-turbo's scanline
 * API: only the iMCU columns that hold the window (jpeg_crop_scanline) and
 * only the rows down to its bottom, so a 224 crop of a 340x256 frame does
 * about 60% of a whole decode. The pixels equal the whole decode's. */
#include "store/store_internal.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

typedef struct jpeg_err {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
} jpeg_err;

struct reel__jpeg {
    struct jpeg_decompress_struct c;
    jpeg_err e;
    uint8_t *pix; /* the window, RGB24 rows of `stride` bytes, padded */
    size_t cap;
    JSAMPROW *rows; /* pointers to its rows */
    size_t nrows;
};

static void on_error(j_common_ptr c)
{
    jpeg_err *e = (jpeg_err *)c->err;
    longjmp(e->jb, 1);
}

/* Warnings (corrupt data libjpeg can decode past) are not printed: a stored
 * frame's checksum has already been checked, and the whole decode
 * (TurboJPEG) ignores them in the same way. */
static void no_output(j_common_ptr c)
{
    (void)c;
}

int reel__jpeg_create(reel__jpeg **out)
{
    reel__jpeg *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->c.err = jpeg_std_error(&j->e.pub);
    j->e.pub.error_exit = on_error;
    j->e.pub.output_message = no_output;
    if (setjmp(j->e.jb)) {
        free(j);
        return -1;
    }
    jpeg_create_decompress(&j->c);
    *out = j;
    return 0;
}

void reel__jpeg_destroy(reel__jpeg **pj)
{
    if (!pj || !*pj) return;
    jpeg_destroy_decompress(&(*pj)->c);
    free((*pj)->pix);
    free((*pj)->rows);
    free(*pj);
    *pj = NULL;
}

int reel__jpeg_decode_window(reel__jpeg *j, const uint8_t *src, size_t n, int w, int h, int d, int win[4],
                             const uint8_t **pix, int *stride, char *why, size_t why_size)
{
    struct jpeg_decompress_struct *c = &j->c;
    if (setjmp(j->e.jb)) {
        char msg[JMSG_LENGTH_MAX];
        j->e.pub.format_message((j_common_ptr)c, msg);
        snprintf(why, why_size, "%s", msg);
        jpeg_abort_decompress(c);
        return -1;
    }
    jpeg_mem_src(c, src, (unsigned long)n);
    jpeg_read_header(c, TRUE);
    if ((int)c->image_width != w || (int)c->image_height != h || c->num_components != 3) {
        snprintf(why, why_size, "not a %dx%d colour JPEG", w, h);
        jpeg_abort_decompress(c);
        return -1;
    }
    c->out_color_space = JCS_RGB; /* the defaults otherwise: islow DCT, fancy upsampling, as TurboJPEG */
    c->scale_num = 1;
    c->scale_denom = (unsigned)d; /* 1, 2, 4, 8: the IDCT itself scales (SIMD for 1/2 and 1/4) */
    jpeg_start_decompress(c);
    /* the window in the scaled picture's coordinates, outward */
    const int sw = (int)c->output_width, sh = (int)c->output_height;
    {
        int x0 = win[0] / d, y0 = win[1] / d;
        int x1 = (win[0] + win[2] + d - 1) / d, y1 = (win[1] + win[3] + d - 1) / d;
        win[0] = x0;
        win[1] = y0;
        win[2] = (x1 < sw ? x1 : sw) - x0;
        win[3] = (y1 < sh ? y1 : sh) - y0;
    }
    w = sw;
    /* One column more on each side: the fancy upsampler treats the edges of
     * a cropped decode as picture edges, so the window's own edge columns
     * would differ from the whole decode; with the margin they are inside. */
    int l = win[0] > 0 ? win[0] - 1 : 0, r = win[0] + win[2] < w ? win[0] + win[2] + 1 : w;
    JDIMENSION x0 = (JDIMENSION)l, cw = (JDIMENSION)(r - l);
    if (cw < (JDIMENSION)w) jpeg_crop_scanline(c, &x0, &cw); /* widened to whole iMCU columns */
    const size_t st = ((size_t)cw * 3 + 63) & ~(size_t)63;
    const size_t need = st * ((size_t)win[3] + 1) + 64; /* a spare row: swscale may read past the last */
    if (need > j->cap) {
        uint8_t *p = realloc(j->pix, need);
        if (!p) {
            snprintf(why, why_size, "out of memory");
            jpeg_abort_decompress(c);
            return -1;
        }
        j->pix = p;
        j->cap = need;
    }
    if ((size_t)win[3] > j->nrows) {
        JSAMPROW *rows = realloc(j->rows, (size_t)win[3] * sizeof *rows);
        if (!rows) {
            snprintf(why, why_size, "out of memory");
            jpeg_abort_decompress(c);
            return -1;
        }
        j->rows = rows;
        j->nrows = (size_t)win[3];
    }
    for (int y = 0; y < win[3]; y++) j->rows[y] = j->pix + (size_t)y * st;
    /* rows above the window: decoded into the window's rows and dropped
     * (exact with fancy upsampling, which needs its neighbours anyway);
     * several rows a call, as libjpeg then upsamples in place */
    while ((int)c->output_scanline < win[1]) {
        JDIMENSION left = (JDIMENSION)win[1] - c->output_scanline;
        if (jpeg_read_scanlines(c, j->rows, left < (JDIMENSION)win[3] ? left : (JDIMENSION)win[3]) == 0) break;
    }
    for (int y = 0; y < win[3];) {
        JDIMENSION got =
            (int)c->output_scanline == win[1] + y ? jpeg_read_scanlines(c, j->rows + y, (JDIMENSION)(win[3] - y)) : 0;
        if (got == 0) {
            snprintf(why, why_size, "the JPEG ended at row %d", win[1] + y);
            jpeg_abort_decompress(c);
            return -1;
        }
        y += (int)got;
    }
    jpeg_abort_decompress(c); /* the rows below are not needed */
    win[0] = (int)x0;
    win[2] = (int)cw;
    *pix = j->pix;
    *stride = (int)st;
    return 0;
}
