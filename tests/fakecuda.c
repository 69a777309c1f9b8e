/* Test double, never linked into dpbench: a host-only emulation of the CUDA
 * runtime calls dpbench makes (devices, contexts, memory, streams, events,
 * waits), with cuBLAS in fakecublas.c, the driver's modules and dpbench's
 * kernels in fakedriver.c and NCCL in fakenccl.c, so that the CUDA backend's
 * logic (DataParallel step, copy ring, event ordering, teardown, the DDP
 * engine) is tested on machines without a GPU (`make test-cuda-emulated`).
 * What it models and why: fakecuda.h. Missing stream dependencies become
 * data races between stream threads, so wrong results reveal them.
 *
 * Knobs (environment, read once): FAKE_CUDA_DEVICES (1), FAKE_DELAY_US (20:
 * random delay before each op), FAKE_KERNEL_US (0: fixed time of each
 * compute op), FAKE_ABORT (abort on misuse), FAKE_NO_PEER,
 * FAKE_EXCLUSIVE_DIR (contexts exclusive per process, lock files there),
 * FAKE_DRIVER_VERSION / FAKE_RUNTIME_VERSION (what the version calls say),
 * FAKE_REPORT=FILE (the counters, written at exit), FAKE_CUDA_LOADED=FILE
 * (created when the library is loaded). fake_set / fake_stat change and read
 * them from a test that dlopen()s this library. */
#include "fakecuda.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
int n_dev = -1;
__thread int cur_dev;
long kernel_us;
static __thread cudaError_t last_err;
static int delay_us = 20;
static long errors_reported;

void fake_init(void)
{
    pthread_mutex_lock(&g_mu);
    if (n_dev < 0) {
        const char *s = getenv("FAKE_CUDA_DEVICES");
        n_dev = s ? atoi(s) : 1;
        const char *d = getenv("FAKE_DELAY_US");
        delay_us = d ? atoi(d) : 20;
        const char *k = getenv("FAKE_KERNEL_US");
        kernel_us = k ? atol(k) : 0;
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

void complain(const char *fmt, ...)
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

cudaError_t fail(cudaError_t e)
{
    last_err = e;
    return e;
}

double fake_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- counters, for tests (fake_stat) and FAKE_REPORT ---- */
static struct {
    char name[32];
    long v;
} stats[48];

static long *stat_slot(const char *name)
{
    for (size_t i = 0; i < sizeof stats / sizeof stats[0]; i++)
        if (!stats[i].name[0] || strcmp(stats[i].name, name) == 0) {
            snprintf(stats[i].name, sizeof stats[i].name, "%s", name);
            return &stats[i].v;
        }
    return NULL;
}

void stat_add(const char *name, long v)
{
    pthread_mutex_lock(&g_mu);
    long *s = stat_slot(name);
    if (s)
        *s += v;
    pthread_mutex_unlock(&g_mu);
}

void stat_max(const char *name, long v)
{
    pthread_mutex_lock(&g_mu);
    long *s = stat_slot(name);
    if (s && v > *s)
        *s = v;
    pthread_mutex_unlock(&g_mu);
}

/* A counter's value (0 if it never counted). */
long fake_stat(const char *name)
{
    pthread_mutex_lock(&g_mu);
    long v = 0;
    for (size_t i = 0; i < sizeof stats / sizeof stats[0] && stats[i].name[0]; i++)
        if (strcmp(stats[i].name, name) == 0)
            v = stats[i].v;
    pthread_mutex_unlock(&g_mu);
    return v;
}

/* Counters back to 0 (contexts stay open: "ctx<N>" keeps counting them). */
void fake_stat_reset(void)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < sizeof stats / sizeof stats[0] && stats[i].name[0]; i++)
        if (strncmp(stats[i].name, "ctx", 3) != 0)
            stats[i].v = 0;
    pthread_mutex_unlock(&g_mu);
}

/* "kernel_us", "delay_us": the knobs of the same names. */
void fake_set(const char *name, long v)
{
    fake_init();
    if (strcmp(name, "kernel_us") == 0)
        kernel_us = v;
    else if (strcmp(name, "delay_us") == 0)
        delay_us = (int)v;
}

/* ---- devices and contexts ---- */
static bool ctx_open[FAKE_MAX_DEV];
static unsigned dev_flags[FAKE_MAX_DEV];

cudaError_t need_ctx(void)
{
    fake_init();
    int dev = cur_dev;
    pthread_mutex_lock(&g_mu);
    bool opened = ctx_open[dev];
    pthread_mutex_unlock(&g_mu);
    if (opened)
        return cudaSuccess;
    const char *dir = getenv("FAKE_EXCLUSIVE_DIR");
    if (dir) { // EXCLUSIVE_PROCESS: one process's context per device (the lock stays held)
        char path[4200];
        snprintf(path, sizeof path, "%s/dev%d", dir, dev);
        int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (fd >= 0)
                close(fd);
            return fail(cudaErrorDevicesUnavailable);
        }
    }
    char name[16];
    snprintf(name, sizeof name, "ctx%d", dev);
    pthread_mutex_lock(&g_mu);
    ctx_open[dev] = true;
    pthread_mutex_unlock(&g_mu);
    stat_add(name, 1);
    stat_add("contexts", 1);
    return cudaSuccess;
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

/* CUDA 12 and later: setting a device opens its context. */
cudaError_t cudaSetDevice(int dev)
{
    fake_init();
    if (dev < 0 || dev >= n_dev)
        return fail(cudaErrorInvalidDevice);
    cur_dev = dev;
    cudaError_t rc = need_ctx();
    return rc ? fail(rc) : rc;
}

cudaError_t cudaSetDeviceFlags(unsigned flags)
{
    cudaError_t rc = need_ctx();
    if (rc)
        return fail(rc);
    pthread_mutex_lock(&g_mu);
    dev_flags[cur_dev] = flags;
    pthread_mutex_unlock(&g_mu);
    return cudaSuccess;
}

static bool dev_blocks(int dev)
{
    pthread_mutex_lock(&g_mu);
    bool b = (dev_flags[dev] & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync;
    pthread_mutex_unlock(&g_mu);
    return b;
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

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s ? atoi(s) : dflt;
}

/* 0 without a driver, as the real one */
cudaError_t cudaDriverGetVersion(int *v)
{
    *v = env_int("FAKE_DRIVER_VERSION", 13000);
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = env_int("FAKE_RUNTIME_VERSION", CUDART_VERSION);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    fake_init();
    if (dev < 0 || dev >= n_dev)
        return fail(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Fake GPU");
    p->major = 9;
    p->pciBusID = fake_bus(dev);
    p->totalGlobalMem = (size_t)80 << 30;
    return cudaSuccess;
}

int fake_bus(int dev)
{
    const char *r = getenv("FAKE_BUS_PER_RANK") ? getenv("OMPI_COMM_WORLD_LOCAL_RANK") : NULL;
    return 1 + dev + (r ? FAKE_MAX_DEV * atoi(r) : 0);
}

cudaError_t cudaDeviceCanAccessPeer(int *can, int a, int b)
{
    *can = a != b && !getenv("FAKE_NO_PEER");
    return cudaSuccess;
}

static bool peer_on[FAKE_MAX_DEV][FAKE_MAX_DEV];
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
    (void)flags;
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    if (peer_on[cur_dev][peer])
        return fail(cudaErrorPeerAccessAlreadyEnabled);
    peer_on[cur_dev][peer] = true;
    return cudaSuccess;
}

/* ---- memory ---- */
struct alloc {
    char *p;     // what the caller holds
    char *twin;  // where the emulation reads and writes it (p for host memory)
    size_t n, mapped;
    int dev;     // -1: pinned host memory
    struct alloc *next;
};
static struct alloc *allocs;
static size_t used[FAKE_MAX_DEV];

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

int mem_dev(const void *p, size_t n)
{
    struct alloc *a = find(p);
    if (!a || a->dev < 0)
        return -1;
    return (const char *)p + n <= a->p + a->n ? a->dev : -2;
}

bool is_dev(const void *p, size_t n, int dev) { return mem_dev(p, n) == dev; }

bool is_pinned(const void *p)
{
    struct alloc *a = find(p);
    return a && a->dev == -1;
}

void *dmem(const void *p)
{
    struct alloc *a = find(p);
    return a ? a->twin + ((const char *)p - a->p) : (void *)p;
}

static void track(struct alloc *a)
{
    pthread_mutex_lock(&g_mu);
    a->next = allocs;
    allocs = a;
    if (a->dev >= 0)
        used[a->dev] += a->n;
    pthread_mutex_unlock(&g_mu);
}

/* Unlinks p's allocation if it is of the kind wanted (device or pinned). */
static struct alloc *untrack(void *p, bool device)
{
    pthread_mutex_lock(&g_mu);
    for (struct alloc **pp = &allocs; *pp; pp = &(*pp)->next)
        if ((*pp)->p == p) {
            struct alloc *a = *pp;
            if ((a->dev >= 0) != device)
                break;
            if (a->dev >= 0)
                used[a->dev] -= a->n;
            *pp = a->next;
            pthread_mutex_unlock(&g_mu);
            return a;
        }
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* Device memory: one memfd mapped twice, with no access where the caller
 * gets it and read-write for the emulation. Filled with 0xff bytes (NaN
 * floats), so that reading what nothing wrote shows. */
cudaError_t cudaMalloc(void **p, size_t n)
{
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), mapped = ((n ? n : 1) + page - 1) / page * page;
    int fd = memfd_create("fakecuda-device", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)mapped) != 0) {
        if (fd >= 0)
            close(fd);
        return fail(cudaErrorMemoryAllocation);
    }
    char *dev = mmap(NULL, mapped, PROT_NONE, MAP_SHARED, fd, 0);
    char *twin = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (dev == MAP_FAILED || twin == MAP_FAILED)
        return fail(cudaErrorMemoryAllocation);
    memset(twin, 0xff, n);
    struct alloc *a = malloc(sizeof *a);
    *a = (struct alloc){dev, twin, n ? n : 1, mapped, cur_dev, NULL};
    track(a);
    *p = dev;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (need_ctx()) // cudaFree(NULL) is the usual way to open a context
        return fail(cudaErrorDevicesUnavailable);
    if (!p)
        return cudaSuccess;
    struct alloc *a = untrack(p, true);
    if (!a) {
        complain("cudaFree of %p, not a device allocation", p);
        return fail(cudaErrorInvalidValue);
    }
    munmap(a->p, a->mapped);
    munmap(a->twin, a->mapped);
    free(a);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    *t = (size_t)80 << 30;
    pthread_mutex_lock(&g_mu);
    *f = *t - used[cur_dev];
    pthread_mutex_unlock(&g_mu);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    (void)flags;
    fake_init();
    if (n_dev <= 0)
        return fail(cudaErrorNoDevice);
    if (need_ctx()) // pinning goes through the current device's context
        return fail(cudaErrorDevicesUnavailable);
    *p = malloc(n ? n : 1);
    struct alloc *a = malloc(sizeof *a);
    *a = (struct alloc){*p, *p, n ? n : 1, 0, -1, NULL};
    track(a);
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    struct alloc *a = untrack(p, false);
    if (!a) {
        complain("cudaFreeHost of %p, not pinned", p);
        return fail(cudaErrorInvalidValue);
    }
    free(a->p);
    free(a);
    return cudaSuccess;
}

/* ---- streams ---- */
static struct CUstream_st *streams;

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
        long us = delay_us > 0 ? (long)(rand_r(&s->seed) % (unsigned)delay_us) : 0;
        us += o->compute ? kernel_us : 0;
        if (us > 0)
            usleep((useconds_t)us);
        o->fn(o);
        if (o->free_arg)
            free(o->arg);
        free(o);
        pthread_mutex_lock(&s->mu);
        s->pending--;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

void enqueue(struct CUstream_st *s, struct op *o)
{
    if (!s) { // the legacy stream of old: run now
        o->fn(o);
        if (o->free_arg)
            free(o->arg);
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

struct op *op_new(void (*fn)(struct op *))
{
    struct op *o = calloc(1, sizeof *o);
    o->fn = fn;
    return o;
}

/* A host thread's wait for `done` under mu: asleep on cv when it blocks,
 * else spinning, the microseconds spun counted (a spin of 1 us being one
 * busy-wait iteration of the real driver's loop, give or take). */
static void host_wait(pthread_mutex_t *mu, pthread_cond_t *cv, bool block,
                      bool (*done)(void *), void *arg)
{
    pthread_mutex_lock(mu);
    if (done(arg)) {
        pthread_mutex_unlock(mu);
        return;
    }
    if (block) {
        while (!done(arg))
            pthread_cond_wait(cv, mu);
        pthread_mutex_unlock(mu);
        return;
    }
    double t0 = fake_now();
    while (!done(arg)) {
        pthread_mutex_unlock(mu);
        sched_yield();
        pthread_mutex_lock(mu);
    }
    pthread_mutex_unlock(mu);
    long us = (long)((fake_now() - t0) * 1e6) + 1;
    stat_max("max_spin_us", us);
    stat_add("spin_waits", 1);
}

static bool stream_idle(void *arg) { return ((struct CUstream_st *)arg)->pending == 0; }

void stream_drain(struct CUstream_st *s)
{
    if (s)
        host_wait(&s->mu, &s->cv, dev_blocks(s->dev), stream_idle, s);
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
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    *ps = stream_new(cur_dev);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    stat_add("stream_syncs", 1);
    stream_drain(s);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    stat_add("stream_syncs", 1);
    pthread_mutex_lock(&g_mu);
    struct CUstream_st *list = streams;
    pthread_mutex_unlock(&g_mu);
    for (struct CUstream_st *s = list; s; s = s->next_all)
        if (s->dev == cur_dev)
            stream_drain(s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    stream_drain(s);
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

/* ---- copies ---- */
static void op_copy(struct op *o) { memcpy(o->p[0], o->p[1], o->n[0]); }

static bool check_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, int dev)
{
    bool ok = true;
    if (kind == cudaMemcpyHostToDevice)
        ok = mem_dev(src, n) == -1 && is_dev(dst, n, dev);
    else if (kind == cudaMemcpyDeviceToHost)
        ok = is_dev(src, n, dev) && mem_dev(dst, n) == -1;
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
 * memory first waits for s to drain (the driver stages it in order), takes
 * the host bytes into staging and returns before they land, `lag_us` later;
 * everything else is queued as is. */
static cudaError_t enqueue_copy(cudaStream_t s, void *dst, const void *src, size_t n,
                                enum cudaMemcpyKind kind, int lag_us)
{
    bool staged = kind == cudaMemcpyHostToDevice && !is_pinned(src);
    struct op *o = op_new(staged ? op_staged : op_copy);
    o->p[0] = dmem(dst);
    o->p[1] = dmem(src);
    o->n[0] = n;
    if (staged) {
        stream_drain(s);
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
static struct CUstream_st *legacy[FAKE_MAX_DEV];

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
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    int dev = mem_dev(kind == cudaMemcpyHostToDevice ? dst : src, n);
    if (!check_copy(dst, src, n, kind, dev >= 0 ? dev : cur_dev))
        return fail(cudaErrorInvalidValue);
    struct CUstream_st *s = legacy_stream(cur_dev);
    enqueue_copy(s, dst, src, n, kind, 2000);
    if (kind != cudaMemcpyHostToDevice || is_pinned(src))
        stream_drain(s);
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
    o->p[0] = dmem(p), o->n[0] = n, o->i[0] = value;
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

/* ---- events ---- */
struct CUevent_st {
    int dev;
    unsigned flags;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long recorded, completed;
    double t;
};

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *pe, unsigned flags)
{
    if (need_ctx())
        return fail(cudaErrorDevicesUnavailable);
    struct CUevent_st *e = calloc(1, sizeof *e);
    e->dev = cur_dev;
    e->flags = flags;
    stat_add("events_created", 1);
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
        e->t = fake_now();
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

struct event_target {
    struct CUevent_st *e;
    long target;
};

static bool event_done(void *arg)
{
    struct event_target *t = arg;
    return t->e->completed >= t->target;
}

/* Blocks with cudaEventBlockingSync or a blocking device, else spins. */
cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    pthread_mutex_lock(&e->mu);
    struct event_target t = {e, e->recorded};
    pthread_mutex_unlock(&e->mu);
    bool block = (e->flags & cudaEventBlockingSync) || dev_blocks(e->dev);
    host_wait(&e->mu, &e->cv, block, event_done, &t);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    pthread_mutex_lock(&a->mu);
    pthread_mutex_lock(&b->mu);
    cudaError_t rc = cudaSuccess;
    bool timing = !(a->flags & cudaEventDisableTiming) && !(b->flags & cudaEventDisableTiming);
    if (!a->recorded || !b->recorded || !timing || a->dev != b->dev) {
        complain("elapsed time: recorded %ld %ld timing %d devices %d %d", a->recorded,
                 b->recorded, timing, a->dev, b->dev);
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

/* FAKE_REPORT=FILE: the counters, one "name value" per line, at exit. */
__attribute__((destructor)) static void report(void)
{
    if (errors_reported)
        fprintf(stderr, "FAKECUDA: %ld misuse reports\n", errors_reported);
    const char *path = getenv("FAKE_REPORT");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "pid %d\n", (int)getpid());
    for (size_t i = 0; i < sizeof stats / sizeof stats[0] && stats[i].name[0]; i++)
        fprintf(f, "%s %ld\n", stats[i].name, stats[i].v);
    fclose(f);
}
