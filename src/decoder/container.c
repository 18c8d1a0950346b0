/* container.c: the frame table from the container's own index (mp4/mov
 * sample tables) so that opening costs no packet scan. */
#include "decoder/internal.h"

int reel__table_from_container(reel_decoder *dec)
{
    (void)dec;
    return REEL_E_INDEX_STALE; /* not yet: the packet scan is used */
}
