/* dtype.h: the size of an output element and the channels of an output
 * pixel, for the modules above the converter that size buffers by them or
 * check a transform's dtype and color (the pipeline's geometry, loader and
 * ring). */
#ifndef REEL_CONVERT_DTYPE_H
#define REEL_CONVERT_DTYPE_H

#include <stddef.h>

/* Bytes per element of a reel_dtype (0 for an unknown dtype). */
size_t reel__dtype_size(int dtype);
/* Channels of a reel_color: 3 (RGB), 1 (GRAY), 0 for an unknown color. */
int reel__color_channels(int color);

#endif
