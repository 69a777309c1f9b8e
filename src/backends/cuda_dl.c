/* The CUDA libraries, opened on first use. dpbench is not linked against
 * cudart, cuBLAS or the driver: a process that never touches the cuda
 * backend maps none of them (mapping them costs ~70 ms and ~150 MiB of RSS
 * at start-up, for every run). This file defines each cudaXxx / cublasXxx /
 * cuXxx function that the cuda backend calls, with the headers' own
 * prototypes; the first call into a library dlopen()s it and resolves the
 * whole table, later calls jump through it. Without the library, cudart
 * calls return cudaErrorSharedObjectInitFailed, cuBLAS calls
 * CUBLAS_STATUS_NOT_INITIALIZED and driver calls
 * CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, and the error-string functions
 * return why it did not load, so the backend's own checks report it in one
 * line. The driver API serves only dpbench's own kernels (cuda_module.c).
 *
 * The sonames follow the toolkit's headers (libcudart.so.<major>,
 * libcublas.so.<major>) and the driver's (libcuda.so.1); DPBENCH_CUDART /
 * DPBENCH_CUBLAS / DPBENCH_LIBCUDA name another file to open instead (the
 * host emulation in tests/fakecuda.c, for one).
 *
 * A function the backend starts to call gets one line in its library's list
 * below; a new library gets a list, a `struct lib` and its wrappers. The
 * opening itself is dl.c's, shared with the comm engines. */
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"

#define STR_(x) #x
#define STR(x) STR_(x) // after macro expansion: cublasSgemm -> "cublasSgemm_v2"

/* X(return type, name, (parameters), (arguments)) */
#define CUDART_FUNCS(X)                                                                     \
    X(cudaError_t, cudaGetDeviceCount, (int *count), (count))                               \
    X(cudaError_t, cudaSetDevice, (int device), (device))                                   \
    X(cudaError_t, cudaSetDeviceFlags, (unsigned int flags), (flags))                       \
    X(cudaError_t, cudaGetDeviceProperties, (struct cudaDeviceProp *prop, int device),      \
      (prop, device))                                                                       \
    X(cudaError_t, cudaDriverGetVersion, (int *v), (v))                                     \
    X(cudaError_t, cudaRuntimeGetVersion, (int *v), (v))                                    \
    X(cudaError_t, cudaGetLastError, (void), ())                                            \
    X(cudaError_t, cudaMemGetInfo, (size_t *free_b, size_t *total), (free_b, total))        \
    X(cudaError_t, cudaDeviceSynchronize, (void), ())                                       \
    X(cudaError_t, cudaDeviceCanAccessPeer, (int *can, int device, int peer),               \
      (can, device, peer))                                                                  \
    X(cudaError_t, cudaDeviceEnablePeerAccess, (int peer, unsigned int flags), (peer, flags)) \
    X(cudaError_t, cudaMalloc, (void **p, size_t size), (p, size))                          \
    X(cudaError_t, cudaFree, (void *p), (p))                                                \
    X(cudaError_t, cudaHostAlloc, (void **p, size_t size, unsigned int flags),              \
      (p, size, flags))                                                                     \
    X(cudaError_t, cudaFreeHost, (void *p), (p))                                            \
    X(cudaError_t, cudaMemcpy, (void *dst, const void *src, size_t n, enum cudaMemcpyKind k), \
      (dst, src, n, k))                                                                     \
    X(cudaError_t, cudaMemcpyAsync,                                                         \
      (void *dst, const void *src, size_t n, enum cudaMemcpyKind k, cudaStream_t s),        \
      (dst, src, n, k, s))                                                                  \
    X(cudaError_t, cudaMemcpyPeerAsync,                                                     \
      (void *dst, int dst_dev, const void *src, int src_dev, size_t n, cudaStream_t s),     \
      (dst, dst_dev, src, src_dev, n, s))                                                   \
    X(cudaError_t, cudaMemsetAsync, (void *p, int value, size_t n, cudaStream_t s),         \
      (p, value, n, s))                                                                     \
    X(cudaError_t, cudaStreamCreateWithFlags, (cudaStream_t *s, unsigned int flags),        \
      (s, flags))                                                                           \
    X(cudaError_t, cudaStreamDestroy, (cudaStream_t s), (s))                                \
    X(cudaError_t, cudaStreamSynchronize, (cudaStream_t s), (s))                            \
    X(cudaError_t, cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t ev, unsigned int flags), \
      (s, ev, flags))                                                                       \
    X(cudaError_t, cudaEventCreate, (cudaEvent_t *ev), (ev))                                \
    X(cudaError_t, cudaEventCreateWithFlags, (cudaEvent_t *ev, unsigned int flags),         \
      (ev, flags))                                                                          \
    X(cudaError_t, cudaEventDestroy, (cudaEvent_t ev), (ev))                                \
    X(cudaError_t, cudaEventRecord, (cudaEvent_t ev, cudaStream_t s), (ev, s))              \
    X(cudaError_t, cudaEventSynchronize, (cudaEvent_t ev), (ev))                            \
    X(cudaError_t, cudaEventElapsedTime, (float *ms, cudaEvent_t a, cudaEvent_t b), (ms, a, b))

#define CUBLAS_FUNCS(X)                                                                     \
    X(cublasStatus_t, cublasCreate, (cublasHandle_t *h), (h))                               \
    X(cublasStatus_t, cublasDestroy, (cublasHandle_t h), (h))                               \
    X(cublasStatus_t, cublasSetStream, (cublasHandle_t h, cudaStream_t s), (h, s))          \
    X(cublasStatus_t, cublasSetMathMode, (cublasHandle_t h, cublasMath_t mode), (h, mode))  \
    X(cublasStatus_t, cublasSgemm,                                                          \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,   \
       const float *alpha, const float *A, int lda, const float *B, int ldb,                \
       const float *beta, float *C, int ldc),                                               \
      (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))                            \
    X(cublasStatus_t, cublasSgemv,                                                          \
      (cublasHandle_t h, cublasOperation_t t, int m, int n, const float *alpha,             \
       const float *A, int lda, const float *x, int incx, const float *beta, float *y,      \
       int incy),                                                                           \
      (h, t, m, n, alpha, A, lda, x, incx, beta, y, incy))                                  \
    X(cublasStatus_t, cublasSger,                                                           \
      (cublasHandle_t h, int m, int n, const float *alpha, const float *x, int incx,        \
       const float *y, int incy, float *A, int lda),                                        \
      (h, m, n, alpha, x, incx, y, incy, A, lda))                                           \
    X(cublasStatus_t, cublasSaxpy,                                                          \
      (cublasHandle_t h, int n, const float *alpha, const float *x, int incx, float *y,     \
       int incy),                                                                           \
      (h, n, alpha, x, incx, y, incy))                                                      \
    X(cublasStatus_t, cublasSscal,                                                          \
      (cublasHandle_t h, int n, const float *alpha, float *x, int incx), (h, n, alpha, x, incx))

#define DRIVER_FUNCS(X)                                                                     \
    X(CUresult, cuInit, (unsigned int flags), (flags))                                      \
    X(CUresult, cuModuleLoadData, (CUmodule * mod, const void *image), (mod, image))        \
    X(CUresult, cuModuleUnload, (CUmodule mod), (mod))                                      \
    X(CUresult, cuModuleGetFunction, (CUfunction * f, CUmodule mod, const char *name),      \
      (f, mod, name))                                                                       \
    X(CUresult, cuLaunchKernel,                                                             \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,    \
       unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,     \
       void **extra),                                                                       \
      (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra))


/* One library: where to find it, and whether it opened. */
struct lib {
    const char *env;     // names another file to open instead of the soname
    const char *base;    // "cudart": opens lib<base>.so.<major>
    int major;
    pthread_once_t once;
    void *handle;        // NULL until opened, and when opening failed
    char why[512];       // why it did not open
};

static struct lib cudart = {"DPBENCH_CUDART", "cudart", CUDART_VERSION / 1000, PTHREAD_ONCE_INIT,
                            NULL, ""};
static struct lib cublas = {"DPBENCH_CUBLAS", "cublas", CUBLAS_VER_MAJOR, PTHREAD_ONCE_INIT,
                            NULL, ""};
static struct lib driver = {"DPBENCH_LIBCUDA", "cuda", 1, PTHREAD_ONCE_INIT, NULL, ""};

#define MEMBER(ret, name, params, args) ret (*name) params;
static struct {
    CUDART_FUNCS(MEMBER)
    const char *(*cudaGetErrorString)(cudaError_t err);
    const char *(*cudaGetErrorName)(cudaError_t err);
} cudart_fn;
static struct {
    CUBLAS_FUNCS(MEMBER)
    const char *(*cublasGetStatusString)(cublasStatus_t st);
} cublas_fn;
static struct {
    DRIVER_FUNCS(MEMBER)
    CUresult (*cuGetErrorString)(CUresult err, const char **s);
} driver_fn;

/* Opens lib (dl.c) and resolves its table; on failure lib->why says which
 * file or symbol was missing. */
static void lib_open(struct lib *lib, const struct dl_sym *syms, size_t n)
{
    char soname[64];
    snprintf(soname, sizeof soname, "lib%s.so.%d", lib->base, lib->major);
    struct dl_error err;
    lib->handle = dl_open(lib->env, soname, RTLD_LOCAL, syms, n, &err);
    if (lib->handle)
        return;
    if (err.missing)
        snprintf(lib->why, sizeof lib->why, "%s has no %s: is it the right version?", err.path,
                 err.missing);
    else if (lib == &driver)
        snprintf(lib->why, sizeof lib->why, "cannot load %s, the NVIDIA driver's library (is "
                 "the driver installed? %s names another file): %s", err.path, lib->env,
                 err.reason);
    else if (strcmp(err.path, soname) == 0) // the toolkit's major: a machine with another lacks it
        snprintf(lib->why, sizeof lib->why, "cannot load %s: this dpbench was built with CUDA "
                 "%d.%d's headers and needs its runtime (and a driver for CUDA %d); rebuild it "
                 "here against this machine's toolkit, or install CUDA %d (%s names another "
                 "file): %s", soname, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
                 CUDART_VERSION / 1000, CUDART_VERSION / 1000, lib->env, err.reason);
    else
        snprintf(lib->why, sizeof lib->why, "cannot load %s (%s names another file): %s",
                 err.path, lib->env, err.reason);
}

/* {"cudaMalloc", &cudart_fn.cudaMalloc}: STR expands cuBLAS' _v2 macros */
#define SYM(ret, name, params, args) {STR(name), (void **)&TABLE.name},

#define TABLE cudart_fn
static const struct dl_sym cudart_syms[] = {
    CUDART_FUNCS(SYM) SYM(, cudaGetErrorString, , ) SYM(, cudaGetErrorName, , )
};
#undef TABLE
#define TABLE cublas_fn
static const struct dl_sym cublas_syms[] = {
    CUBLAS_FUNCS(SYM) SYM(, cublasGetStatusString, , )
};
#undef TABLE
#define TABLE driver_fn
static const struct dl_sym driver_syms[] = {
    DRIVER_FUNCS(SYM) SYM(, cuGetErrorString, , )
};
#undef TABLE

static void cudart_open(void)
{
    lib_open(&cudart, cudart_syms, sizeof cudart_syms / sizeof cudart_syms[0]);
}

static void cublas_open(void)
{
    lib_open(&cublas, cublas_syms, sizeof cublas_syms / sizeof cublas_syms[0]);
}

static void driver_open(void)
{
    lib_open(&driver, driver_syms, sizeof driver_syms / sizeof driver_syms[0]);
}

static int cudart_ready(void)
{
    pthread_once(&cudart.once, cudart_open);
    return cudart.handle != NULL;
}

static int cublas_ready(void)
{
    pthread_once(&cublas.once, cublas_open);
    return cublas.handle != NULL;
}

static int driver_ready(void)
{
    pthread_once(&driver.once, driver_open);
    return driver.handle != NULL;
}

/* The wrappers: the same prototypes as the headers, so a mismatch does not
 * compile. */
#define CUDART_WRAP(ret, name, params, args)                                                \
    ret name params                                                                         \
    {                                                                                       \
        return cudart_ready() ? cudart_fn.name args : cudaErrorSharedObjectInitFailed;      \
    }
#define CUBLAS_WRAP(ret, name, params, args)                                                \
    ret name params                                                                         \
    {                                                                                       \
        return cublas_ready() ? cublas_fn.name args : CUBLAS_STATUS_NOT_INITIALIZED;        \
    }
#define DRIVER_WRAP(ret, name, params, args)                                                \
    ret name params                                                                         \
    {                                                                                       \
        return driver_ready() ? driver_fn.name args : CUDA_ERROR_SHARED_OBJECT_INIT_FAILED; \
    }
CUDART_FUNCS(CUDART_WRAP)
CUBLAS_FUNCS(CUBLAS_WRAP)
DRIVER_FUNCS(DRIVER_WRAP)

/* Without the library, the error strings say why it did not load. */
const char *cudaGetErrorString(cudaError_t err)
{
    return cudart_ready() ? cudart_fn.cudaGetErrorString(err) : cudart.why;
}

const char *cudaGetErrorName(cudaError_t err)
{
    return cudart_ready() ? cudart_fn.cudaGetErrorName(err) : "cudaErrorSharedObjectInitFailed";
}

const char *cublasGetStatusString(cublasStatus_t st)
{
    return cublas_ready() ? cublas_fn.cublasGetStatusString(st) : cublas.why;
}

CUresult cuGetErrorString(CUresult err, const char **s)
{
    if (driver_ready())
        return driver_fn.cuGetErrorString(err, s);
    *s = driver.why;
    return CUDA_SUCCESS;
}
