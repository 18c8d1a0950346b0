/* reel/pipeline.h: the dataset and the batch loader, as one include (kept
 * from reel 0.1, when both lived here): reel/dataset.h and reel/loader.h. */
#ifndef REEL_PIPELINE_H
#define REEL_PIPELINE_H

#include "dataset.h"
#include "loader.h"

#endif /* REEL_PIPELINE_H */
