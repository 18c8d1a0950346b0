/* tests/wheel/stub_cuda.c: a libcuda.so.1 with one GPU of compute capability $STUB_CAPABILITY (e.g. 86)
 * whose cuModuleLoadData refuses every image, writing to $STUB_LOG which it was
 * given: "sm_NN" (a cubin: the sm in a CUDA 12 ELF's e_flags) or "ptx". Built by
 * scripts/test_wheel.sh for check_wheel.py's each_gpu_gets_its_kernel_image. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int CUresult;
CUresult cuInit(unsigned f)
{
    (void)f;
    return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = r == 209 ? "CUDA_ERROR_NO_BINARY_FOR_GPU" : "?";
    return 0;
}
CUresult cuDriverGetVersion(int *v)
{
    *v = 12020;
    return 0;
}
CUresult cuDeviceGetCount(int *n)
{
    *n = 1;
    return 0;
}
CUresult cuDeviceGet(int *d, int i)
{
    *d = i;
    return 0;
}
CUresult cuDeviceGetName(char *s, int n, int d)
{
    (void)d;
    snprintf(s, (size_t)n, "Stub GPU");
    return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d)
{
    (void)d;
    int cap = atoi(getenv("STUB_CAPABILITY"));
    *v = attr == 75 ? cap / 10 : cap % 10;
    return 0;
}
static int ctx;
CUresult cuDevicePrimaryCtxRetain(void **c, int d)
{
    (void)d;
    *c = &ctx;
    return 0;
}
CUresult cuModuleLoadData(void **m, const unsigned char *image)
{
    (void)m;
    FILE *f = fopen(getenv("STUB_LOG"), "a");
    if (image[0] == 0x7f && !memcmp(image + 1, "ELF", 3))
        fprintf(f, "sm_%d\n", image[48]);
    else if (strstr((const char *)image, ".target sm_"))
        fprintf(f, "ptx\n");
    fclose(f);
    return 209;
}
/* the other calls reel resolves: success (each use ends in a typedef, for its ';') */
#define OK(name)        \
    CUresult name(void) \
    {                   \
        return 0;       \
    }                   \
    typedef int stub_##name
OK(cuDevicePrimaryCtxRelease_v2);
OK(cuCtxPushCurrent_v2);
OK(cuCtxPopCurrent_v2);
OK(cuModuleUnload);
OK(cuModuleGetFunction);
OK(cuStreamCreate);
OK(cuStreamDestroy_v2);
OK(cuStreamSynchronize);
OK(cuStreamWaitEvent);
OK(cuEventCreate);
OK(cuEventRecord);
OK(cuEventDestroy_v2);
OK(cuMemAlloc_v2);
OK(cuMemFree_v2);
OK(cuMemGetInfo_v2);
OK(cuMemcpyHtoDAsync_v2);
OK(cuMemcpyDtoHAsync_v2);
OK(cuMemcpyDtoDAsync_v2);
OK(cuEventSynchronize);
OK(cuLaunchKernel);
