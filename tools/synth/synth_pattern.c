/* synth_pattern.c: the pixels of a synthetic frame: the index pattern (drawing
 * and reading it back, CRC-8 check) and the moving, textured content. No
 * FFmpeg here; integer and double arithmetic only, no libm. */
#include "synth.h"
#include "synth_internal.h"

#include <string.h>

#define ROWS REEL_SYNTH_PATTERN_ROWS
#define COLS REEL_SYNTH_PATTERN_COLS
/* The band is ROWS cell rows of height/BAND_DIV each: the top quarter. */
#define BAND_DIV 8
/* A cell's mean must be at least this far from 128 to count. */
#define READ_MARGIN 40

/* CRC-8, polynomial x^8+x^2+x+1 (0x07), over the REEL_SYNTH_INDEX_BITS bits of
 * the index, MSB first. Hamming distance 4 at this length: any 1..3 wrong cells
 * are detected. Init and final xor make the all-black and all-white images
 * invalid codewords (checked by the tests). */
static unsigned crc8_index(uint32_t index)
{
    unsigned crc = 0xFF;
    for (int i = REEL_SYNTH_INDEX_BITS - 1; i >= 0; i--) {
        unsigned fb = ((crc >> 7) ^ (index >> i)) & 1u;
        crc = (crc << 1) & 0xFFu;
        if (fb) crc ^= 0x07u;
    }
    return crc ^ 0xA5u;
}

/* The 28-bit codeword for an index: bits 0..19 the index, 20..27 the CRC. */
static uint32_t codeword(int64_t index)
{
    uint32_t idx = (uint32_t)((uint64_t)index & REEL_SYNTH_MAX_INDEX);
    return idx | ((uint32_t)crc8_index(idx) << REEL_SYNTH_INDEX_BITS);
}

uint64_t reel__synth_mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int cell_x(int c, int width)
{
    return (int)((int64_t)c * width / COLS);
}
static int cell_y(int r, int height)
{
    return (int)((int64_t)r * height / BAND_DIV);
}

static void fill_rect(uint8_t *rgb, int64_t stride, int x0, int y0, int x1, int y1, uint8_t r, uint8_t g, uint8_t b)
{
    for (int y = y0; y < y1; y++) {
        uint8_t *p = rgb + (int64_t)y * stride + (int64_t)x0 * 3;
        for (int x = x0; x < x1; x++, p += 3) {
            p[0] = r;
            p[1] = g;
            p[2] = b;
        }
    }
}

static void draw_band(uint8_t *rgb, int width, int height, int64_t stride, int64_t index)
{
    uint32_t cw = codeword(index);
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) {
            uint8_t v = ((cw >> (r * COLS + c)) & 1u) ? 255 : 0;
            fill_rect(rgb, stride, cell_x(c, width), cell_y(r, height), cell_x(c + 1, width), cell_y(r + 1, height), v,
                      v, v);
        }
    }
}

void reel_synth_draw_pattern(uint8_t *rgb, int width, int height, int64_t row_stride, int64_t index)
{
    if (!rgb || width <= 0 || height <= 0 || row_stride < 3 * (int64_t)width) return;
    int band = cell_y(ROWS, height);
    for (int y = band; y < height; y++) memset(rgb + (int64_t)y * row_stride, 128, (size_t)width * 3);
    draw_band(rgb, width, height, row_stride, index);
}

/* Triangle wave over [0, 255] with period 512. */
static int tri256(int v)
{
    v &= 511;
    return v < 256 ? v : 511 - v;
}

/* Bounces v back and forth over [0, span]. */
static int bounce(int64_t v, int span)
{
    if (span <= 0) return 0;
    int64_t m = v % (2 * (int64_t)span);
    if (m < 0) m += 2 * (int64_t)span;
    return (int)(m <= span ? m : 2 * (int64_t)span - m);
}

static uint8_t clamp255(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* A disc, clipped to rows [ymin, height). */
static void fill_disc(uint8_t *rgb, int width, int height, int64_t stride, int ymin, int cx, int cy, int rad,
                      const uint8_t col[3])
{
    for (int y = cy - rad; y <= cy + rad; y++) {
        if (y < ymin || y >= height) continue;
        int dy = y - cy;
        for (int x = cx - rad; x <= cx + rad; x++) {
            int dx = x - cx;
            if (x < 0 || x >= width || dx * dx + dy * dy > rad * rad) continue;
            uint8_t *p = rgb + (int64_t)y * stride + (int64_t)x * 3;
            p[0] = col[0];
            p[1] = col[1];
            p[2] = col[2];
        }
    }
}

void reel__synth_render(uint8_t *rgb, int width, int height, int64_t stride, int64_t index, unsigned seed, int *scratch)
{
    const int band = cell_y(ROWS, height);
    const int ch = height - band; /* content height */
    const uint64_t sd = reel__synth_mix64(seed);
    const int a = (int)(sd & 511), b = (int)((sd >> 9) & 511), c = (int)((sd >> 18) & 511);
    const int t = (int)(index & 0x3FFFFFF);
    const int speed = width / 80 + 1;               /* pixels per frame, scales with the frame */
    const int bs = width / 32 > 4 ? width / 32 : 4; /* texture block size */
    const int64_t scroll = (int64_t)t * speed;

    draw_band(rgb, width, height, stride, index);

    /* Background: three moving triangle-wave gradients (per column, per row
     * and per diagonal; tabulated once per frame) plus a blocky, scrolling
     * seeded texture that gives the encoder motion to find. */
    int *gx = scratch, *gd = scratch + width; /* width + (width + height) ints */
    for (int x = 0; x < width; x++) gx[x] = tri256((int)((int64_t)x * 512 / width) + 4 * t + a) * 3 / 4 + 24;
    for (int s = 0; s < width + height; s++)
        gd[s] = tri256((int)((int64_t)s * 512 / (width + height)) + 5 * t + c) * 3 / 4 + 24;
    const int64_t bx0 = scroll / bs;
    const int off0 = (int)(scroll % bs);
    for (int y = band; y < height; y++) {
        uint8_t *p = rgb + (int64_t)y * stride;
        const int gy = tri256((int)((int64_t)y * 512 / height) + 3 * t + b) * 3 / 4 + 24;
        const uint64_t row_key = reel__synth_mix64(((uint64_t)seed << 32) ^ (uint64_t)(y / bs));
        uint64_t bx = (uint64_t)bx0;
        int off = off0;
        int n = (int)(reel__synth_mix64(row_key + bx) & 63) - 32;
        const int *gdy = gd + y;
        for (int x = 0; x < width; x++, p += 3) {
            p[0] = clamp255(gx[x] + n);
            p[1] = clamp255(gy + n);
            p[2] = clamp255(gdy[x] + n);
            if (++off == bs) {
                off = 0;
                bx++;
                n = (int)(reel__synth_mix64(row_key + bx) & 63) - 32;
            }
        }
    }
    if (ch <= 0) return;

    /* A bouncing disc and a bouncing rectangle in seeded colours. */
    const uint8_t disc_col[3] = { (uint8_t)(200 + (sd >> 27) % 56), (uint8_t)(20 + (sd >> 35) % 60),
                                  (uint8_t)(40 + (sd >> 43) % 80) };
    const uint8_t rect_col[3] = { (uint8_t)(20 + (sd >> 51) % 60), (uint8_t)(160 + (sd >> 57) % 60),
                                  (uint8_t)(220 + (sd >> 29) % 36) };
    int minwh = width < ch ? width : ch;
    int rad = minwh / 6 > 2 ? minwh / 6 : 2;
    int dcx = rad + bounce((int64_t)t * speed * 3 + a, width - 2 * rad);
    int dcy = band + rad + bounce((int64_t)t * speed * 2 + b, ch - 2 * rad);
    fill_disc(rgb, width, height, stride, band, dcx, dcy, rad, disc_col);

    int rw = width / 5 > 2 ? width / 5 : 2, rh = ch / 4 > 2 ? ch / 4 : 2;
    int rx = bounce((int64_t)t * speed * 2 + c, width - rw);
    int ry = band + bounce((int64_t)t * speed + a, ch - rh);
    if (rx + rw > width) rw = width - rx;
    if (ry + rh > height) rh = height - ry;
    fill_rect(rgb, stride, rx, ry, rx + rw, ry + rh, rect_col[0], rect_col[1], rect_col[2]);
}

/* ceil/floor for the non-negative values used here, without libm. */
static int floor_pos(double v)
{
    return v <= 0 ? 0 : (int)v;
}
static int ceil_pos(double v)
{
    if (v <= 0) return 0;
    int i = (int)v;
    return (double)i < v ? i + 1 : i;
}

int64_t reel_synth_read_index(const uint8_t *rgb, int width, int height, int64_t row_stride)
{
    if (!rgb || width < 2 * COLS || height < 2 * BAND_DIV || row_stride < 3 * (int64_t)width) return -1;
    const double cw = (double)width / COLS, chh = (double)height / BAND_DIV;
    const double hw = cw * 0.2, hh = chh * 0.2; /* half-size of the sampled box */
    uint32_t bits = 0;
    for (int r = 0; r < ROWS; r++) {
        for (int c = 0; c < COLS; c++) {
            double cx = (c + 0.5) * cw, cy = (r + 0.5) * chh;
            /* pixels whose centres lie within the box; at least the centre one */
            int x0 = ceil_pos(cx - hw - 0.5), x1 = floor_pos(cx + hw - 0.5);
            int y0 = ceil_pos(cy - hh - 0.5), y1 = floor_pos(cy + hh - 0.5);
            if (x1 < x0) x0 = x1 = floor_pos(cx);
            if (y1 < y0) y0 = y1 = floor_pos(cy);
            if (x1 >= width) x1 = width - 1;
            if (y1 >= height) y1 = height - 1;
            int64_t sum = 0, n = 0;
            for (int y = y0; y <= y1; y++) {
                const uint8_t *p = rgb + (int64_t)y * row_stride + (int64_t)x0 * 3;
                for (int x = x0; x <= x1; x++, p += 3) {
                    sum += (int64_t)p[0] + p[1] + p[2];
                    n += 3;
                }
            }
            if (n == 0) return -1;
            if (sum >= n * (128 + READ_MARGIN))
                bits |= 1u << (r * COLS + c);
            else if (sum > n * (128 - READ_MARGIN))
                return -1; /* undecided cell: not our pattern */
        }
    }
    uint32_t idx = bits & REEL_SYNTH_MAX_INDEX;
    if ((bits >> REEL_SYNTH_INDEX_BITS) != crc8_index(idx)) return -1;
    return (int64_t)idx;
}
