/* Test double, never linked into dpbench: a host-only emulation of the CUDA
 * runtime + cuBLAS subset backend_cuda.c uses, so that the CUDA backend's
 * logic (DataParallel step, copy ring, event ordering, teardown) is tested on
 * machines without a GPU (`make test-cuda-emulated`). It says nothing about
 * real GPU numbers or real-driver behaviour. Streams are real threads
 * running their ops in order with random delays; events are counters; memory
 * is malloc, tracked so that host/device/device-id mix-ups are reported.
 * Missing stream dependencies become data races between stream threads, so
 * TSan (or wrong results) reveal them. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_dev = -1;
static __thread int cur_dev;
static __thread cudaError_t last_err;
static int delay_us = 20;
static long errors_reported;

static void fake_init(void)
{
    pthread_mutex_lock(&g_mu);
    if (n_dev < 0) {
        const char *s = getenv("FAKE_CUDA_DEVICES");
        n_dev = s ? atoi(s) : 1;
        const char *d = getenv("FAKE_DELAY_US");
        delay_us = d ? atoi(d) : 20;
    }
    pthread_mutex_unlock(&g_mu);
}

/* FAKE_CUDA_LOADED=FILE: the library creates FILE when it is loaded, so a
 * test can tell whether dpbench opened "cudart" at all. */
__attribute__((constructor)) static void fake_loaded(void)
{
    const char *mark = getenv("FAKE_CUDA_LOADED");
    FILE *f = mark ? fopen(mark, "w") : NULL;
    if (f)
        fclose(f);
}

static void complain(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAKECUDA MISUSE: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    __atomic_add_fetch(&errors_reported, 1, __ATOMIC_SEQ_CST);
    if (getenv("FAKE_ABORT"))
        abort();
}

static cudaError_t fail(cudaError_t e)
{
    last_err = e;
    return e;
}

/* ---- memory tracking ---- */
struct alloc {
    char *p;
    size_t n;
    int dev; // -1 = pinned host
    struct alloc *next;
};
static struct alloc *allocs;
static size_t used[64];

static struct alloc *find(const void *p)
{
    pthread_mutex_lock(&g_mu);
    struct alloc *a = allocs;
    for (; a; a = a->next)
        if ((const char *)p >= a->p && (const char *)p < a->p + a->n)
            break;
    pthread_mutex_unlock(&g_mu);
    return a;
}

/* device buffer of dev holding [p, p+n) */
static bool is_dev(const void *p, size_t n, int dev)
{
    struct alloc *a = find(p);
    return a && a->dev == dev && (const char *)p + n <= a->p + a->n;
}

static bool is_host(const void *p)
{
    struct alloc *a = find(p);
    return !a || a->dev == -1;
}

static void track(void *p, size_t n, int dev)
{
    struct alloc *a = malloc(sizeof *a);
    *a = (struct alloc){p, n, dev, NULL};
    pthread_mutex_lock(&g_mu);
    a->next = allocs;
    allocs = a;
    if (dev >= 0)
        used[dev] += n;
    pthread_mutex_unlock(&g_mu);
}

static int untrack(void *p, int want_dev_kind) // 1 device, 0 host
{
    pthread_mutex_lock(&g_mu);
    for (struct alloc **pp = &allocs; *pp; pp = &(*pp)->next)
        if ((*pp)->p == p) {
            struct alloc *a = *pp;
            if ((a->dev >= 0) != want_dev_kind) {
                pthread_mutex_unlock(&g_mu);
                return -1;
            }
            if (a->dev >= 0)
                used[a->dev] -= a->n;
            *pp = a->next;
            free(a);
            pthread_mutex_unlock(&g_mu);
            return 0;
        }
    pthread_mutex_unlock(&g_mu);
    return -1;
}

/* ---- streams and events ---- */
struct op {
    void (*fn)(struct op *);
    struct op *next;
    void *p[4];
    size_t n[4];
    long l[2];
    float f[2];
    int i[8];
    struct CUevent_st *ev;
};

struct CUstream_st {
    int dev;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op *head, *tail;
    long pending;
    bool quit;
    unsigned seed;
    struct CUstream_st *next_all;
};
static struct CUstream_st *streams;

struct CUevent_st {
    int dev;
    bool timing;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long recorded, completed;
    double t;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *stream_main(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head && s->quit)
            break;
        struct op *o = s->head;
        s->head = o->next;
        if (!s->head)
            s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        if (delay_us > 0)
            usleep((useconds_t)(rand_r(&s->seed) % (unsigned)delay_us));
        o->fn(o);
        free(o);
        pthread_mutex_lock(&s->mu);
        s->pending--;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void enqueue(struct CUstream_st *s, struct op *o)
{
    if (!s) { // default stream: run now
        o->fn(o);
        free(o);
        return;
    }
    pthread_mutex_lock(&s->mu);
    o->next = NULL;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    s->pending++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static struct op *op_new(void (*fn)(struct op *))
{
    struct op *o = calloc(1, sizeof *o);
    o->fn = fn;
    return o;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    fake_init();
    if (n_dev <= 0) {
        *count = 0;
        return fail(cudaErrorNoDevice);
    }
    *count = n_dev;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev)
{
    fake_init();
    if (dev < 0 || dev >= n_dev)
        return fail(cudaErrorInvalidDevice);
    cur_dev = dev;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_err;
    last_err = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e) { return e ? "fake error" : "no error"; }
const char *cudaGetErrorName(cudaError_t e)
{
    static __thread char buf[32];
    snprintf(buf, sizeof buf, "fakeError%d", (int)e);
    return buf;
}

cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    fake_init();
    if (dev < 0 || dev >= n_dev)
        return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Fake GPU");
    p->major = 9;
    p->totalGlobalMem = (size_t)80 << 30;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    *t = (size_t)80 << 30;
    pthread_mutex_lock(&g_mu);
    *f = *t - used[cur_dev];
    pthread_mutex_unlock(&g_mu);
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int a, int b)
{
    *can = a != b && !getenv("FAKE_NO_PEER");
    return cudaSuccess;
}

static bool peer_on[64][64];
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
    (void)flags;
    if (peer_on[cur_dev][peer])
        return fail(cudaErrorPeerAccessAlreadyEnabled);
    peer_on[cur_dev][peer] = true;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = malloc(n ? n : 1);
    memset(*p, 0xff, n); // NaN garbage: uninitialised reads show
    track(*p, n ? n : 1, cur_dev);
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    if (untrack(p, 1)) {
        complain("cudaFree of %p, not a device allocation", p);
        return fail(cudaErrorInvalidValue);
    }
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    (void)flags;
    fake_init();
    if (n_dev <= 0)
        return fail(cudaErrorNoDevice);
    *p = malloc(n);
    track(*p, n, -1);
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    if (untrack(p, 0)) {
        complain("cudaFreeHost of %p, not pinned", p);
        return fail(cudaErrorInvalidValue);
    }
    free(p);
    return cudaSuccess;
}

static void op_copy(struct op *o) { memcpy(o->p[0], o->p[1], o->n[0]); }

static bool check_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int dev)
{
    bool ok = true;
    if (kind == cudaMemcpyHostToDevice)
        ok = is_host(src) && is_dev(dst, n, dev);
    else if (kind == cudaMemcpyDeviceToHost)
        ok = is_dev(src, n, dev) && is_host(dst);
    else if (kind == cudaMemcpyDeviceToDevice)
        ok = is_dev(src, n, dev) && is_dev(dst, n, dev);
    if (!ok)
        complain("memcpy kind %d dst %p src %p n %zu on device %d", kind, dst, src, n, dev);
    return ok;
}

/* Copies from pageable memory go through a staging buffer: the host data is
 * taken now, the transfer lands later, as a real driver may do. */
static void op_staged(struct op *o)
{
    memcpy(o->p[0], o->p[1], o->n[0]);
    free(o->p[1]);
}

static void op_sleep(struct op *o) { usleep((useconds_t)o->i[0]); }

/* Queues an n-byte copy on stream s. A host-to-device copy from pageable
 * memory first waits for s to drain, takes the host bytes into staging and
 * returns before they land, `lag_us` later (the driver's behaviour for
 * pageable memory); everything else is queued as is. */
static cudaError_t enqueue_copy(cudaStream_t s, void *dst, const void *src, size_t n,
                                enum cudaMemcpyKind kind, int lag_us)
{
    bool staged = kind == cudaMemcpyHostToDevice && !find(src);
    struct op *o = op_new(staged ? op_staged : op_copy);
    o->p[0] = dst;
    o->p[1] = (void *)src;
    o->n[0] = n;
    if (staged) {
        cudaStreamSynchronize(s);
        o->p[1] = malloc(n ? n : 1);
        memcpy(o->p[1], src, n);
        if (lag_us > 0) {
            struct op *lag = op_new(op_sleep);
            lag->i[0] = lag_us;
            enqueue(s, lag);
        }
    }
    enqueue(s, o);
    return cudaSuccess;
}

/* The legacy default stream of each device, where cudaMemcpy runs. Streams
 * created with cudaStreamNonBlocking (all of dpbench's) do not wait for it. */
static struct CUstream_st *legacy[64];

static struct CUstream_st *stream_new(int dev);

static struct CUstream_st *legacy_stream(int dev)
{
    pthread_mutex_lock(&g_mu);
    struct CUstream_st *s = legacy[dev];
    pthread_mutex_unlock(&g_mu);
    if (s)
        return s;
    s = stream_new(dev);
    pthread_mutex_lock(&g_mu);
    if (legacy[dev]) { // another thread made it first; this one stays unused
        pthread_mutex_unlock(&g_mu);
        return legacy[dev];
    }
    legacy[dev] = s;
    pthread_mutex_unlock(&g_mu);
    return s;
}

/* cudaMemcpy on the current device's legacy stream: host-to-device from
 * pageable memory returns once the bytes are staged and lands 2 ms later, so
 * that work which reads the destination on another stream without a device
 * synchronisation reads garbage; every other kind returns when the copy is
 * done. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    fake_init();
    struct alloc *a = find(kind == cudaMemcpyHostToDevice ? dst : src);
    if (!check_copy(dst, src, n, kind, a ? a->dev : cur_dev))
        return fail(cudaErrorInvalidValue);
    struct CUstream_st *s = legacy_stream(cur_dev);
    enqueue_copy(s, dst, src, n, kind, 2000);
    if (kind != cudaMemcpyHostToDevice || find(src))
        cudaStreamSynchronize(s);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (!check_copy(dst, src, n, kind, s ? s->dev : cur_dev))
        return fail(cudaErrorInvalidValue);
    return enqueue_copy(s, dst, src, n, kind, 0);
}

static void op_memset(struct op *o) { memset(o->p[0], o->i[0], o->n[0]); }

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
    if (!is_dev(p, n, s ? s->dev : cur_dev)) {
        complain("memset of %p (%zu bytes), not on the stream's device", p, n);
        return fail(cudaErrorInvalidValue);
    }
    struct op *o = op_new(op_memset);
    o->p[0] = p, o->n[0] = n, o->i[0] = value;
    enqueue(s, o);
    return cudaSuccess;
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n,
                                cudaStream_t s)
{
    if (!is_dev(dst, n, dd) || !is_dev(src, n, sd) || (s && s->dev != dd && s->dev != sd)) {
        complain("peer copy %p@%d <- %p@%d on stream of device %d", dst, dd, src, sd,
                 s ? s->dev : -1);
        return fail(cudaErrorInvalidValue);
    }
    return enqueue_copy(s, dst, src, n, cudaMemcpyDeviceToDevice, 0);
}

static struct CUstream_st *stream_new(int dev)
{
    struct CUstream_st *s = calloc(1, sizeof *s);
    s->dev = dev;
    s->seed = (unsigned)(uintptr_t)s;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_create(&s->th, NULL, stream_main, s);
    pthread_mutex_lock(&g_mu);
    s->next_all = streams;
    streams = s;
    pthread_mutex_unlock(&g_mu);
    return s;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned flags)
{
    (void)flags;
    *ps = stream_new(cur_dev);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (!s)
        return cudaSuccess;
    pthread_mutex_lock(&s->mu);
    while (s->pending)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    pthread_mutex_lock(&g_mu);
    struct CUstream_st *list = streams;
    pthread_mutex_unlock(&g_mu);
    for (struct CUstream_st *s = list; s; s = s->next_all)
        if (s->dev == cur_dev)
            cudaStreamSynchronize(s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    cudaStreamSynchronize(s);
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    pthread_mutex_lock(&g_mu);
    for (struct CUstream_st **pp = &streams; *pp; pp = &(*pp)->next_all)
        if (*pp == s) {
            *pp = s->next_all;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned flags)
{
    struct CUevent_st *e = calloc(1, sizeof *e);
    e->dev = cur_dev;
    e->timing = !(flags & cudaEventDisableTiming);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    *pe = e;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *pe) { return cudaEventCreateWithFlags(pe, 0); }

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
    return cudaSuccess;
}

static void op_complete(struct op *o)
{
    struct CUevent_st *e = o->ev;
    pthread_mutex_lock(&e->mu);
    if (o->l[0] > e->completed) {
        e->completed = o->l[0];
        e->t = now();
    }
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!s || e->dev != s->dev) {
        complain("event of device %d recorded on stream of device %d", e->dev, s ? s->dev : -1);
        return fail(cudaErrorInvalidResourceHandle);
    }
    pthread_mutex_lock(&e->mu);
    long target = ++e->recorded;
    pthread_mutex_unlock(&e->mu);
    struct op *o = op_new(op_complete);
    o->ev = e;
    o->l[0] = target;
    enqueue(s, o);
    return cudaSuccess;
}

static void op_wait(struct op *o)
{
    struct CUevent_st *e = o->ev;
    pthread_mutex_lock(&e->mu);
    while (e->completed < o->l[0])
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    pthread_mutex_lock(&e->mu);
    long target = e->recorded;
    pthread_mutex_unlock(&e->mu);
    if (target == 0)
        return cudaSuccess;
    struct op *o = op_new(op_wait);
    o->ev = e;
    o->l[0] = target;
    enqueue(s, o);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    pthread_mutex_lock(&e->mu);
    long target = e->recorded;
    while (e->completed < target)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    pthread_mutex_lock(&a->mu);
    pthread_mutex_lock(&b->mu);
    cudaError_t rc = cudaSuccess;
    if (!a->recorded || !b->recorded || !a->timing || !b->timing || a->dev != b->dev) {
        complain("elapsed time: recorded %ld %ld timing %d %d devices %d %d", a->recorded,
                 b->recorded, a->timing, b->timing, a->dev, b->dev);
        rc = cudaErrorInvalidResourceHandle;
    } else if (a->completed < a->recorded || b->completed < b->recorded) {
        complain("elapsed time of an event not yet complete");
        rc = cudaErrorNotReady;
    } else {
        *ms = (float)((b->t - a->t) * 1e3);
    }
    pthread_mutex_unlock(&b->mu);
    pthread_mutex_unlock(&a->mu);
    return rc ? fail(rc) : rc;
}

/* ---- cuBLAS ---- */
struct cublasContext {
    int dev;
    cudaStream_t s;
    cublasPointerMode_t mode;
};

const char *cublasGetStatusString(cublasStatus_t st) { return st ? "fake cublas error" : "ok"; }

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    fake_init();
    if (n_dev <= 0)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *h = calloc(1, sizeof **h);
    (*h)->dev = cur_dev;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    if (s && s->dev != h->dev)
        complain("cublas handle of device %d given a stream of device %d", h->dev, s->dev);
    h->s = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m)
{
    (void)h, (void)m;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m)
{
    h->mode = m;
    return CUBLAS_STATUS_SUCCESS;
}

/* checks common to every call; `arrays` pairs (pointer, floats) */
static bool blas_ok(cublasHandle_t h, const char *what, int n_arrays, ...)
{
    bool ok = true;
    if (cur_dev != h->dev) {
        complain("%s: current device %d, handle's %d", what, cur_dev, h->dev);
        ok = false;
    }
    if (!h->s) {
        complain("%s: handle without stream", what);
        ok = false;
    }
    va_list ap;
    va_start(ap, n_arrays);
    for (int i = 0; i < n_arrays; i++) {
        const float *p = va_arg(ap, const float *);
        long n = va_arg(ap, long);
        if (n > 0 && !is_dev(p, (size_t)n * sizeof(float), h->dev)) {
            complain("%s: array %d (%p, %ld floats) is not on device %d", what, i, (void *)p, n,
                     h->dev);
            ok = false;
        }
    }
    va_end(ap);
    return ok;
}

static float scalar(cublasHandle_t h, const float *p)
{
    if (h->mode == CUBLAS_POINTER_MODE_DEVICE)
        complain("scalar in device pointer mode (unexpected here)");
    return *p;
}

static void op_gemm(struct op *o)
{
    int ta = o->i[0], tb = o->i[1], m = o->i[2], n = o->i[3], k = o->i[4];
    int lda = o->i[5], ldb = o->i[6], ldc = o->i[7];
    const float *A = o->p[0], *B = o->p[1];
    float *C = o->p[2], alpha = o->f[0], beta = o->f[1];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int l = 0; l < k; l++) {
                float a = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                float b = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                acc += (double)a * b;
            }
            float *c = &C[i + (size_t)j * ldc];
            *c = (float)(alpha * acc + (beta != 0 ? beta * *c : 0));
        }
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                              int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc)
{
    long asz = ta == CUBLAS_OP_N ? (long)lda * (k - 1) + m : (long)lda * (m - 1) + k;
    long bsz = tb == CUBLAS_OP_N ? (long)ldb * (n - 1) + k : (long)ldb * (k - 1) + n;
    if (lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m)
        complain("gemm: bad leading dimensions");
    if (!blas_ok(h, "gemm", 3, A, asz, B, bsz, C, (long)ldc * (n - 1) + m))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = op_new(op_gemm);
    o->i[0] = ta, o->i[1] = tb, o->i[2] = m, o->i[3] = n, o->i[4] = k;
    o->i[5] = lda, o->i[6] = ldb, o->i[7] = ldc;
    o->p[0] = (void *)A, o->p[1] = (void *)B, o->p[2] = C;
    o->f[0] = scalar(h, alpha), o->f[1] = scalar(h, beta);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_gemv(struct op *o)
{
    int t = o->i[0], m = o->i[1], n = o->i[2], lda = o->i[3], incx = o->i[4], incy = o->i[5];
    const float *A = o->p[0], *x = o->p[1];
    float *y = o->p[2];
    int ny = t == CUBLAS_OP_N ? m : n, nx = t == CUBLAS_OP_N ? n : m;
    for (int i = 0; i < ny; i++) {
        double acc = 0;
        for (int j = 0; j < nx; j++)
            acc += (double)(t == CUBLAS_OP_N ? A[i + (size_t)j * lda] : A[j + (size_t)i * lda]) *
                   x[j * incx];
        float *yi = &y[i * incy];
        *yi = (float)(o->f[0] * acc + (o->f[1] != 0 ? o->f[1] * *yi : 0));
    }
}

cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t t, int m, int n,
                              const float *alpha, const float *A, int lda, const float *x,
                              int incx, const float *beta, float *y, int incy)
{
    int ny = t == CUBLAS_OP_N ? m : n, nx = t == CUBLAS_OP_N ? n : m;
    if (!blas_ok(h, "gemv", 3, A, (long)lda * (n - 1) + m, x, (long)(nx - 1) * incx + 1, y,
                 (long)(ny - 1) * incy + 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = op_new(op_gemv);
    o->i[0] = t, o->i[1] = m, o->i[2] = n, o->i[3] = lda, o->i[4] = incx, o->i[5] = incy;
    o->p[0] = (void *)A, o->p[1] = (void *)x, o->p[2] = y;
    o->f[0] = scalar(h, alpha), o->f[1] = scalar(h, beta);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_ger(struct op *o)
{
    int m = o->i[0], n = o->i[1], incx = o->i[2], incy = o->i[3], lda = o->i[4];
    const float *x = o->p[0], *y = o->p[1];
    float *A = o->p[2];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            A[i + (size_t)j * lda] += o->f[0] * x[i * incx] * y[j * incy];
}

cublasStatus_t cublasSger_v2(cublasHandle_t h, int m, int n, const float *alpha, const float *x,
                             int incx, const float *y, int incy, float *A, int lda)
{
    if (!blas_ok(h, "ger", 3, x, (long)(m - 1) * incx + 1, y, (long)(n - 1) * incy + 1, A,
                 (long)lda * (n - 1) + m))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = op_new(op_ger);
    o->i[0] = m, o->i[1] = n, o->i[2] = incx, o->i[3] = incy, o->i[4] = lda;
    o->p[0] = (void *)x, o->p[1] = (void *)y, o->p[2] = A;
    o->f[0] = scalar(h, alpha);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_axpy(struct op *o) // y (i[0] floats) += alpha (f[0]) x
{
    const float *x = o->p[0];
    float *y = o->p[1];
    for (int i = 0; i < o->i[0]; i++)
        y[i] += o->f[0] * x[i];
}

cublasStatus_t cublasSaxpy_v2(cublasHandle_t h, int n, const float *alpha, const float *x,
                              int incx, float *y, int incy)
{
    if (incx != 1 || incy != 1 || !blas_ok(h, "axpy", 2, x, (long)n, y, (long)n))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = op_new(op_axpy);
    o->i[0] = n, o->p[0] = (void *)x, o->p[1] = y, o->f[0] = scalar(h, alpha);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_scal(struct op *o) // x (i[0] floats) *= alpha (f[0])
{
    float *x = o->p[0];
    for (int i = 0; i < o->i[0]; i++)
        x[i] *= o->f[0];
}

cublasStatus_t cublasSscal_v2(cublasHandle_t h, int n, const float *alpha, float *x, int incx)
{
    if (incx != 1 || !blas_ok(h, "scal", 1, x, (long)n))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = op_new(op_scal);
    o->i[0] = n, o->p[0] = x, o->f[0] = scalar(h, alpha);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_geam(struct op *o) // C = alpha A + beta B, no transposes
{
    int m = o->i[0], n = o->i[1], lda = o->i[2], ldb = o->i[3], ldc = o->i[4];
    const float *A = o->p[0], *B = o->p[1];
    float *C = o->p[2];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            C[i + (size_t)j * ldc] = o->f[0] * A[i + (size_t)j * lda] +
                                     o->f[1] * B[i + (size_t)j * ldb];
}

cublasStatus_t cublasSgeam(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, const float *alpha, const float *A, int lda, const float *beta,
                           const float *B, int ldb, float *C, int ldc)
{
    if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N || lda < m || ldb < m || ldc < m) {
        complain("geam: only untransposed operands with leading dimensions >= m are emulated");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (!blas_ok(h, "geam", 3, A, (long)lda * (n - 1) + m, B, (long)ldb * (n - 1) + m, C,
                 (long)ldc * (n - 1) + m))
        return CUBLAS_STATUS_INVALID_VALUE;
    struct op *o = op_new(op_geam);
    o->i[0] = m, o->i[1] = n, o->i[2] = lda, o->i[3] = ldb, o->i[4] = ldc;
    o->p[0] = (void *)A, o->p[1] = (void *)B, o->p[2] = C;
    o->f[0] = scalar(h, alpha), o->f[1] = scalar(h, beta);
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

static void op_dot(struct op *o)
{
    const float *x = o->p[0], *y = o->p[1];
    double acc = 0;
    for (int i = 0; i < o->i[0]; i++)
        acc += (double)x[i] * y[i];
    *(float *)o->p[2] = (float)acc;
}

cublasStatus_t cublasSdot_v2(cublasHandle_t h, int n, const float *x, int incx, const float *y,
                             int incy, float *result)
{
    if (incx != 1 || incy != 1 || !blas_ok(h, "dot", 2, x, (long)n, y, (long)n))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (h->mode != CUBLAS_POINTER_MODE_DEVICE || !is_dev(result, sizeof(float), h->dev)) {
        complain("dot: result must be a device pointer in device mode here");
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    struct op *o = op_new(op_dot);
    o->i[0] = n, o->p[0] = (void *)x, o->p[1] = (void *)y, o->p[2] = result;
    enqueue(h->s, o);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- NCCL, over MPI (only with -DFAKE_NCCL) ------------------------------
 * The subset comm_nccl.c calls, for ranks started by mpirun: the
 * communicator checks its rank and size against MPI's; ncclAllReduce waits
 * for the stream's earlier work, then sums the (host-backed) device buffers
 * with MPI_Allreduce, so it is ordered on the stream like the real one. */
#ifdef FAKE_NCCL
#include <mpi.h>
#include <nccl.h>

struct ncclComm {
    int rank, nranks, dev;
};

const char *ncclGetErrorString(ncclResult_t r) { return r ? "fake nccl error" : "no error"; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "fake-nccl-%d", (int)getpid());
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    int mpi_rank = -1, mpi_size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    if (rank != mpi_rank || nranks != mpi_size || strncmp(id.internal, "fake-nccl-", 10) != 0) {
        complain("ncclCommInitRank: rank %d of %d (MPI: %d of %d), id '%.16s'", rank, nranks,
                 mpi_rank, mpi_size, id.internal);
        return ncclInvalidArgument;
    }
    struct ncclComm *c = malloc(sizeof *c);
    c->rank = rank, c->nranks = nranks, c->dev = cur_dev;
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    if (type != ncclFloat || op != ncclSum || !s || !is_dev(recv, count * sizeof(float), comm->dev) ||
        !is_dev(send, count * sizeof(float), comm->dev)) {
        complain("ncclAllReduce: float sums of device %d memory on a stream only", comm->dev);
        return ncclInvalidArgument;
    }
    cudaStreamSynchronize(s);
    MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    free(comm);
    return ncclSuccess;
}
#endif

__attribute__((destructor)) static void report(void)
{
    if (errors_reported)
        fprintf(stderr, "FAKECUDA: %ld misuse reports\n", errors_reported);
}
