/* pinned.c: page-locked host memory through the CUDA runtime found at run
 * time (dlopen), or nothing; no link-time CUDA dependency. */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include "pipeline/pinned.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* cudaHostAlloc/cudaFreeHost are looked up with dlopen, so libreel neither
 * links nor needs CUDA: without a runtime (or driver, or device) the ring is
 * plain aligned memory. The library handle is kept for the life of the
 * process. Process-wide state: the two function pointers below, written once
 * under pthread_once and only read afterwards (a cache of what dlopen found,
 * which is itself process-wide). */

typedef int (*cuda_host_alloc_fn)(void **p, size_t bytes, unsigned int flags);
typedef int (*cuda_free_host_fn)(void *p);
enum { CUDA_HOST_ALLOC_PORTABLE = 1 }; /* cudaHostAllocPortable: pinned for every context */

static pthread_once_t cudart_once = PTHREAD_ONCE_INIT;
static cuda_host_alloc_fn cuda_host_alloc;
static cuda_free_host_fn cuda_free_host;

static int cudart_try(const char *name, int flags)
{
    void *h = dlopen(name, flags);
    if (!h) return 0;
    void *a = dlsym(h, "cudaHostAlloc"), *f = dlsym(h, "cudaFreeHost");
    if (!a || !f) {
        dlclose(h);
        return 0;
    }
    /* object to function pointer: memcpy, as POSIX's dlsym allows */
    memcpy(&cuda_host_alloc, &a, sizeof a);
    memcpy(&cuda_free_host, &f, sizeof f);
    return 1;
}

static void cudart_load(void)
{
    static const char *const names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0" };
    const size_t n = sizeof names / sizeof names[0];
    const char *env = getenv("REEL_CUDART");
    if (env && !strcmp(env, "none")) return; /* pinning disabled */
    if (env && *env && cudart_try(env, RTLD_NOW | RTLD_LOCAL)) return;
#ifdef RTLD_NOLOAD /* prefer a runtime already in the process (torch's) */
    for (size_t i = 0; i < n; i++)
        if (cudart_try(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return;
#endif
    for (size_t i = 0; i < n; i++)
        if (cudart_try(names[i], RTLD_NOW | RTLD_LOCAL)) return;
}

int reel__pinned_available(void)
{
    pthread_once(&cudart_once, cudart_load);
    return cuda_host_alloc != NULL;
}

void *reel__pinned_alloc(size_t bytes, size_t alignment)
{
    if (!reel__pinned_available() || bytes == 0) return NULL;
    void *p = NULL;
    if (cuda_host_alloc(&p, bytes, CUDA_HOST_ALLOC_PORTABLE) != 0 || !p) return NULL;
    if (alignment && (uintptr_t)p % alignment != 0) { /* pinned memory is page-aligned; more is not promised */
        cuda_free_host(p);
        return NULL;
    }
    return p;
}

void reel__pinned_free(void *p)
{
    /* errors (e.g. the runtime already shut down at exit) leave nothing to do */
    if (p && reel__pinned_available()) cuda_free_host(p);
}
