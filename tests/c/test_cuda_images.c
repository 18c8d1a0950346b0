/* test_cuda_images.c: which embedded kernel image a GPU loads
 * (reel__cuda_image_choice, src/cuda/device.c): the SASS of its major
 * version with the highest minor not above its own, then the newest PTX not
 * above it; nothing for a GPU older than every image. No GPU needed. */
#include "harness.h"

#include "cuda/kernels.h"

static const unsigned char dummy[1];

/* The default images (CMake's REEL_CUDA_IMAGES), listed out of order on
 * purpose, with an sm_86 and a compute_80 besides. */
static const reel__cuda_image images[] = {
    { "compute_90", 90, 1, dummy, 1 }, { "sm_90", 90, 0, dummy, 1 },      { "sm_80", 80, 0, dummy, 1 },
    { "sm_86", 86, 0, dummy, 1 },      { "compute_80", 80, 1, dummy, 1 }, { "sm_75", 75, 0, dummy, 1 },
    { "sm_70", 70, 0, dummy, 1 },      { "sm_60", 60, 0, dummy, 1 },
};

static int choose(const reel__cuda_image *im, int n, int capability, const char **first, const char **second)
{
    int order[2] = { -1, -1 };
    int k = reel__cuda_image_choice(im, n, capability, order);
    *first = k > 0 ? im[order[0]].name : "";
    *second = k > 1 ? im[order[1]].name : "";
    return k;
}

TEST(the_gpu_gets_its_sass_then_the_newest_ptx_it_can_run)
{
    const char *a, *b;
    int n = (int)(sizeof images / sizeof images[0]);
    CHECK_EQ_INT(choose(images, n, 80, &a, &b), 2); /* A100 */
    CHECK_EQ_STR(a, "sm_80");
    CHECK_EQ_STR(b, "compute_80");
    CHECK_EQ_INT(choose(images, n, 86, &a, &b), 2); /* A10, RTX 30xx */
    CHECK_EQ_STR(a, "sm_86");
    CHECK_EQ_INT(choose(images, n, 89, &a, &b), 2); /* L4, L40S: sm_86 SASS runs on 8.9 */
    CHECK_EQ_STR(a, "sm_86");
    CHECK_EQ_STR(b, "compute_80");
    CHECK_EQ_INT(choose(images, n, 90, &a, &b), 2); /* H100, H200 */
    CHECK_EQ_STR(a, "sm_90");
    CHECK_EQ_STR(b, "compute_90");
    CHECK_EQ_INT(choose(images, n, 100, &a, &b), 1); /* B200: no SASS of major 10, PTX */
    CHECK_EQ_STR(a, "compute_90");
    CHECK_EQ_INT(choose(images, n, 120, &a, &b), 1); /* RTX 50xx */
    CHECK_EQ_STR(a, "compute_90");
    CHECK_EQ_INT(choose(images, n, 75, &a, &b), 1); /* T4: its SASS; no PTX at or below 7.5 */
    CHECK_EQ_STR(a, "sm_75");
    CHECK_EQ_INT(choose(images, n, 70, &a, &b), 1); /* V100 */
    CHECK_EQ_STR(a, "sm_70");
    CHECK_EQ_INT(choose(images, n, 72, &a, &b), 1); /* Xavier: sm_70 SASS runs on 7.2 */
    CHECK_EQ_STR(a, "sm_70");
    CHECK_EQ_INT(choose(images, n, 60, &a, &b), 1); /* P100 */
    CHECK_EQ_STR(a, "sm_60");
    CHECK_EQ_INT(choose(images, n, 61, &a, &b), 1); /* P4, P40, GTX 10xx */
    CHECK_EQ_STR(a, "sm_60");
    CHECK_EQ_INT(choose(images, n, 52, &a, &b), 0); /* Maxwell: older than every image */
    CHECK_EQ_INT(choose(images, 0, 90, &a, &b), 0);
}

TEST(without_ptx_a_newer_gpu_gets_nothing)
{
    const char *a, *b;
    /* sm_90 and sm_80 only: SASS never runs on another major version */
    CHECK_EQ_INT(choose(images + 1, 2, 90, &a, &b), 1);
    CHECK_EQ_STR(a, "sm_90");
    CHECK_EQ_INT(choose(images + 1, 2, 87, &a, &b), 1);
    CHECK_EQ_STR(a, "sm_80");
    CHECK_EQ_INT(choose(images + 1, 2, 100, &a, &b), 0);
}
