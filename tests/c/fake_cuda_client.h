/* fake_cuda_client.h: a Loader test's handle on the emulated CUDA driver
 * (tests/cuda/fake_cuda.c, REEL_FAKE_CUDA): opening it as the driver reel
 * loads, and its counters, fault injection and work log. */
#ifndef REEL_TEST_FAKE_CUDA_CLIENT_H
#define REEL_TEST_FAKE_CUDA_CLIENT_H

#include "harness.h"

#include <dlfcn.h>
#include <stdlib.h>

static void *g_fake;

/* The emulated driver as reel's libcuda (once per process). */
static void use_fake(void)
{
    if (!g_fake) {
        setenv("REEL_LIBCUDA", REEL_FAKE_CUDA, 1);
        g_fake = dlopen(REEL_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
        CHECK_MSG(g_fake != NULL, "the emulated driver %s: %s", REEL_FAKE_CUDA, dlerror());
    }
}

static long long counter(const char *name)
{
    long long (*fn)(const char *) = (long long (*)(const char *))dlsym(g_fake, "reel_fake_cuda_counter");
    CHECK(fn != NULL);
    return fn(name);
}

/* The nth call of `name` (and, per the fake's rules, later ones) fails; NULL: none. */
static void fail_call(const char *name, long long nth)
{
    void (*fn)(const char *, long long) = (void (*)(const char *, long long))dlsym(g_fake, "reel_fake_cuda_fail");
    CHECK(fn != NULL);
    fn(name, nth);
}

#endif
