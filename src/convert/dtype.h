/* dtype.h: the size of an output element, for the modules above the
 * converter that size buffers by it or check a transform's dtype (the
 * pipeline's geometry, loader and ring). */
#ifndef REEL_CONVERT_DTYPE_H
#define REEL_CONVERT_DTYPE_H

#include <stddef.h>

/* Bytes per element of a reel_dtype (0 for an unknown dtype). */
size_t reel__dtype_size(int dtype);

#endif
