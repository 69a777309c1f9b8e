/* nn.DataParallel on CUDA devices: the primitives of step.c's steps (each
 * replica's queue is a stream of its own, fork and join are events, so a
 * whole step is queued without the host stopping; math is cuBLAS, there is
 * no kernel of our own), the host batch's scatter by torch.chunk onto the
 * devices, and the timing of steps and copies on the devices' clocks.
 *
 * A device id may repeat: each replica has its own stream, cuBLAS handle and
 * buffers, so N "virtual replicas" on one GPU take the N-GPU code path.
 *
 * Batches reach the devices through devpipe.c's ring of device buffers
 * (slots), which this file's primitives serve: a slot's copies go on a copy
 * stream per device between two events; the step waits on those events on
 * the GPU, and the slot's "consumed" event, which release records after the
 * step, gates the copy that reuses it. With or without async_copy the host
 * queues at most `depth` steps ahead of the GPU, and waits for that inside
 * step, so back-pressure from the GPU never passes for waiting on data.
 *
 * Time comes from CUDA events: per batch a copy interval per device and a
 * step interval on replica 0's stream, each read against a base event
 * recorded on every device at epoch start (all streams idle), so that the
 * intervals share one timeline and their overlap is the hidden copy time. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "chunk.h"
#include "devpipe.h"
#include "emulate_profile.h"
#include "loss.h"

/* ---- error checks ------------------------------------------------------- */

static int cuda_fail(struct error *e, cudaError_t err, const char *call, const char *file,
                     int line)
{
    return error_set(e, "%s:%d: %s: %s (%s)", file, line, call, cudaGetErrorString(err),
                     cudaGetErrorName(err));
}

static int cublas_fail(struct error *e, cublasStatus_t st, const char *call, const char *file,
                       int line)
{
    return error_set(e, "%s:%d: %s: %s", file, line, call, cublasGetStatusString(st));
}

/* In functions that return int and have `struct error *e` in scope. */
#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess)                                                             \
            return cuda_fail(e, err_, #call, __FILE__, __LINE__);                           \
    } while (0)

#define CUBLAS_CHECK(call)                                                                   \
    do {                                                                                     \
        cublasStatus_t st_ = (call);                                                         \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                    \
            return cublas_fail(e, st_, #call, __FILE__, __LINE__);                          \
    } while (0)

/* In teardown, where nothing can be returned: say so on stderr and go on. */
#define CUDA_WARN(call)                                                                      \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess)                                                             \
            fprintf(stderr, "dpbench: warning: %s:%d: %s: %s (%s)\n", __FILE__, __LINE__,   \
                    #call, cudaGetErrorString(err_), cudaGetErrorName(err_));               \
    } while (0)

/* ---- state -------------------------------------------------------------- */

/* The device buffers of one slot of devpipe's ring: a batch's chunks on
 * their replicas' devices and its targets on the output device. */
struct slot {
    float **x;             // (n) x[r]: (chunk_max, F) replica r's chunk, on its device
    float *y;              // (batch_max, O) targets, on device 0
    cudaEvent_t consumed;  // device 0: the step that read this slot is done
};

/* One distinct device among the replicas'. */
struct gpu {
    int id;
    cudaStream_t copy;     // host-to-device copies to this device
    cudaEvent_t base;      // epoch start: zero of this device's timeline
    bool begun;            // slot_fill: the batch's copies to this device have begun
};

struct replica {
    int dev;               // CUDA device id
    int g;                 // index of dev in cuda_dp.gpus
    cudaStream_t stream;   // this replica's compute
    cublasHandle_t blas;   // bound to `stream`
    float *ones;           // (batch_max) all 1: bias add and bias gradient
    cudaEvent_t joined;    // join: this stream's work so far
};

/* Per-batch events of one epoch, created once and reused every epoch. */
struct timeline {
    long cap;                           // batches the arrays hold
    cudaEvent_t *start, *end;           // (cap) step k on replica 0's stream
    cudaEvent_t *copy_begin, *copy_end; // (cap, G) copies of batch k to device g
    float *loss;                        // (cap) device 0: sum of squared errors of batch k
    float *loss_host;                   // (cap)
    double *t;                          // (2 * cap) host scratch: interval ends, ms
};

struct cuda_dp {
    int F, O, n, G;        // features, out_features, replicas, distinct devices
    long batch_max, chunk_max;
    size_t P;              // O * F + O parameters
    struct replica *reps;  // (n)
    struct gpu *gpus;      // (G) gpus[0] is replica 0's device, the output device
    cudaEvent_t forked;    // fork: replica 0's stream's work so far
    const struct loss_fn *loss; // the loss of this epoch's steps (for epoch_end)
    float *scratch;        // (3 batch_max O) host: losses without a device path
    bool classify;         // count correct predictions (labelled data): loss on the host
    long correct;          // this epoch's correct predictions so far
    double step_t0;        // begin: host clock, waits excluded
    struct timeline tl;
    /* the copy ring */
    struct devpipe pipe;   // slots' host side, copy thread, run-ahead
    struct slot *slots;    // (pipe.depth) device buffers of slot k
    long stepped;          // batches stepped this epoch (in order)
    double host_s;         // this epoch's host time issuing steps (epoch_stats.host_s)
};

/* ---- host memory -------------------------------------------------------- */

static void *cuda_host_alloc(size_t bytes, bool pinned, struct error *e)
{
    void *p = NULL;
    if (!pinned) {
        if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
            error_set(e, "out of memory (%zu bytes)", bytes);
            return NULL;
        }
        return p;
    }
    /* Runs before init (the loader's pool comes first) and creates the
     * context itself. Portable: page-locked for every device, not only the
     * current one. */
    cudaError_t err = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        cuda_fail(e, err, "cudaHostAlloc(&p, bytes, cudaHostAllocPortable)", __FILE__, __LINE__);
        error_wrap(e, "pinned host memory (%zu bytes)", bytes);
        return NULL;
    }
    return p;
}

static void cuda_host_free(void *p, bool pinned)
{
    if (!pinned)
        free(p);
    else if (p)
        CUDA_WARN(cudaFreeHost(p));
}

/* ---- setup -------------------------------------------------------------- */

/* Device memory on device `dev` for setup s: buffers, the slot ring and an
 * allowance for each cuBLAS handle's workspace (32 MiB on Hopper). */
static size_t bytes_on(const struct backend_setup *s, long dev)
{
    size_t F = (size_t)s->features, O = (size_t)s->out_features, n = (size_t)s->replicas;
    size_t B = (size_t)s->batch_size, C = (B + n - 1) / n, P = O * F + O;
    size_t depth = s->async_copy ? (size_t)s->copy_depth : 1, floats = 0, handles = 0;
    for (size_t i = 0; i < n; i++) {
        if (s->device_ids[i] == dev) {
            floats += 2 * P + B + depth * C * F + (i > 0 ? 2 * C * O : 0);
            handles++;
        } else if (dev == s->device_ids[0]) {
            floats += P; // gradients staged for the reduce
        }
    }
    if (dev == s->device_ids[0])
        floats += 2 * B * O + depth * B * O;
    return floats * sizeof(float) + handles * ((size_t)36 << 20);
}

/* Device ids exist, and each device has the memory its replicas need. */
static int check_devices(const struct backend_setup *s, struct error *e)
{
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    for (int i = 0; i < s->replicas; i++) {
        long id = s->device_ids[i];
        if (id < 0 || id >= count)
            return error_set(e, "replica %d: CUDA device %ld does not exist (this machine has "
                                "%d device%s, ids 0..%d); parallel.devices: [0, 0, ...] runs "
                                "several replicas on one device",
                             i, id, count, count == 1 ? "" : "s", count - 1);
    }
    for (int i = 0; i < s->replicas; i++) {
        size_t free_b = 0, total = 0, need = bytes_on(s, s->device_ids[i]);
        CUDA_CHECK(cudaSetDevice((int)s->device_ids[i]));
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total));
        if (need > free_b)
            return error_set(e, "device %ld: the run needs about %.2f GiB of device memory, "
                                "%.2f GiB of %.2f GiB are free",
                             s->device_ids[i], (double)need / (1 << 30),
                             (double)free_b / (1 << 30), (double)total / (1 << 30));
    }
    return 0;
}

/* Lets device g read device 0 and back directly (NVLink / PCIe P2P) where
 * the hardware allows. Copies use cudaMemcpyPeerAsync either way: without
 * peer access the driver stages them through host memory. */
static int enable_peer(int a, int b, struct error *e)
{
    int can = 0;
    CUDA_CHECK(cudaDeviceCanAccessPeer(&can, a, b));
    if (!can)
        return 0;
    CUDA_CHECK(cudaSetDevice(a));
    cudaError_t err = cudaDeviceEnablePeerAccess(b, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) // from an earlier run in this process
        cudaGetLastError();                      // clears it
    else if (err != cudaSuccess)
        return cuda_fail(e, err, "cudaDeviceEnablePeerAccess(b, 0)", __FILE__, __LINE__);
    return 0;
}

static int replica_setup(struct cuda_dp *dp, struct replica *r, const float *ones_host,
                         struct error *e)
{
    size_t B = (size_t)dp->batch_max;
    CUDA_CHECK(cudaSetDevice(r->dev));
    CUDA_CHECK(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&r->blas));
    CUBLAS_CHECK(cublasSetStream(r->blas, r->stream));
    /* FP32 math throughout (cuBLAS' default: no TF32), as PyTorch's default
     * matmul, so that CPU and GPU agree closely. */
    CUBLAS_CHECK(cublasSetMathMode(r->blas, CUBLAS_DEFAULT_MATH));
    CUDA_CHECK(cudaEventCreateWithFlags(&r->joined, cudaEventDisableTiming));
    /* batch_max, not chunk_max: replica 0 runs whole batches in a DDP step */
    CUDA_CHECK(cudaMalloc((void **)&r->ones, B * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(r->ones, ones_host, B * sizeof(float), cudaMemcpyHostToDevice));
    return 0;
}

/* Each replica's device (s->device_ids), the distinct devices in order of
 * first use, and peer access between replica 0's device and each other. */
static int place_replicas(struct cuda_dp *dp, const struct backend_setup *s, struct error *e)
{
    for (int i = 0; i < dp->n; i++) {
        struct replica *r = &dp->reps[i];
        r->dev = (int)s->device_ids[i];
        for (r->g = 0; r->g < dp->G && dp->gpus[r->g].id != r->dev; r->g++)
            ;
        if (r->g == dp->G)
            dp->gpus[dp->G++].id = r->dev;
    }
    int dev0 = dp->reps[0].dev;
    for (int g = 1; g < dp->G; g++)
        if (enable_peer(dp->gpus[g].id, dev0, e) || enable_peer(dev0, dp->gpus[g].id, e))
            return -1;
    return 0;
}

/* The copy ring's device side: per slot each replica's chunk and replica
 * 0's targets, and the event that says the step is done with them. */
static int ring_setup(struct cuda_dp *dp, struct error *e)
{
    size_t BO = (size_t)dp->batch_max * (size_t)dp->O;
    int dev0 = dp->reps[0].dev;
    CUDA_CHECK(cudaSetDevice(dev0));
    CUDA_CHECK(cudaEventCreateWithFlags(&dp->forked, cudaEventDisableTiming));
    for (int k = 0; k < dp->pipe.depth; k++) {
        struct slot *sl = &dp->slots[k];
        sl->x = calloc((size_t)dp->n, sizeof *sl->x);
        if (!sl->x)
            return error_set(e, "out of memory");
        for (int i = 0; i < dp->n; i++) {
            CUDA_CHECK(cudaSetDevice(dp->reps[i].dev));
            CUDA_CHECK(cudaMalloc((void **)&sl->x[i],
                                  (size_t)dp->chunk_max * (size_t)dp->F * sizeof(float)));
        }
        CUDA_CHECK(cudaSetDevice(dev0));
        CUDA_CHECK(cudaMalloc((void **)&sl->y, BO * sizeof(float)));
        CUDA_CHECK(cudaEventCreateWithFlags(&sl->consumed, cudaEventDisableTiming));
    }
    /* cudaMemcpy from pageable memory may return before the bytes land, and
     * the non-blocking streams do not wait for the legacy stream it runs on:
     * wait here, once, before any stream reads them */
    for (int g = 0; g < dp->G; g++) {
        CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    return 0;
}

static int dp_setup(struct cuda_dp *dp, const struct backend_setup *s, struct error *e)
{
    if (check_devices(s, e))
        return -1;
    dp->F = s->features;
    dp->O = s->out_features;
    dp->n = s->replicas;
    dp->batch_max = s->batch_size;
    dp->chunk_max = (s->batch_size + dp->n - 1) / dp->n;
    dp->P = (size_t)dp->O * (size_t)dp->F + (size_t)dp->O;
    dp->classify = s->classify;
    /* cuBLAS' sizes and strides are int: the biggest are the batch's outputs
     * (loss, gradient), a chunk's inputs and the parameter vector */
    double biggest = (double)dp->batch_max * dp->O;
    if ((double)dp->chunk_max * dp->F > biggest)
        biggest = (double)dp->chunk_max * dp->F;
    if ((double)dp->P > biggest)
        biggest = (double)dp->P;
    if (biggest > INT_MAX)
        return error_set(e, "batch %ld x %d -> %d needs arrays of %.0f floats, more than "
                            "cuBLAS' int sizes allow (%d)",
                         dp->batch_max, dp->F, dp->O, biggest, INT_MAX);
    dp->reps = calloc((size_t)dp->n, sizeof *dp->reps);
    dp->gpus = calloc((size_t)dp->n, sizeof *dp->gpus);
    dp->slots = calloc((size_t)dp->pipe.depth, sizeof *dp->slots);
    float *ones = malloc((size_t)dp->batch_max * sizeof(float));
    if (!dp->reps || !dp->gpus || !dp->slots || !ones) {
        free(ones);
        return error_set(e, "out of memory");
    }
    for (long i = 0; i < dp->batch_max; i++)
        ones[i] = 1.0f;
    int rc = place_replicas(dp, s, e);
    for (int i = 0; i < dp->n && rc == 0; i++)
        if (replica_setup(dp, &dp->reps[i], ones, e))
            rc = error_wrap(e, "replica %d (device %d)", i, dp->reps[i].dev);
    free(ones);
    if (rc)
        return -1;
    for (int g = 0; g < dp->G; g++) {
        struct gpu *d = &dp->gpus[g];
        CUDA_CHECK(cudaSetDevice(d->id));
        CUDA_CHECK(cudaStreamCreateWithFlags(&d->copy, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreate(&d->base));
    }
    return ring_setup(dp, e);
}

static void timeline_free(struct cuda_dp *dp)
{
    struct timeline *t = &dp->tl;
    for (long k = 0; k < t->cap; k++) {
        if (t->start && t->start[k])
            CUDA_WARN(cudaEventDestroy(t->start[k]));
        if (t->end && t->end[k])
            CUDA_WARN(cudaEventDestroy(t->end[k]));
        for (int g = 0; g < dp->G; g++) {
            if (t->copy_begin && t->copy_begin[k * dp->G + g])
                CUDA_WARN(cudaEventDestroy(t->copy_begin[k * dp->G + g]));
            if (t->copy_end && t->copy_end[k * dp->G + g])
                CUDA_WARN(cudaEventDestroy(t->copy_end[k * dp->G + g]));
        }
    }
    if (t->loss)
        CUDA_WARN(cudaFree(t->loss));
    free(t->start);
    free(t->end);
    free(t->copy_begin);
    free(t->copy_end);
    free(t->loss_host);
    free(t->t);
    memset(t, 0, sizeof *t);
}

/* Events and loss slots for n batches per epoch. Allocated at the first
 * epoch; the loader's batch count does not change within a run. */
static int timeline_reserve(struct cuda_dp *dp, long n, struct error *e)
{
    struct timeline *t = &dp->tl;
    if (t->cap >= n)
        return 0;
    timeline_free(dp);
    size_t nb = (size_t)n, G = (size_t)dp->G;
    t->start = calloc(nb, sizeof *t->start);
    t->end = calloc(nb, sizeof *t->end);
    t->copy_begin = calloc(nb * G, sizeof *t->copy_begin);
    t->copy_end = calloc(nb * G, sizeof *t->copy_end);
    t->loss_host = malloc(nb * sizeof *t->loss_host);
    t->t = malloc(2 * nb * sizeof *t->t);
    t->cap = n; // from here timeline_free walks the (zeroed) event arrays
    if (!t->start || !t->end || !t->copy_begin || !t->copy_end || !t->loss_host || !t->t)
        return error_set(e, "out of memory for %ld batches of events", n);
    for (long k = 0; k < n; k++) {
        CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
        CUDA_CHECK(cudaEventCreate(&t->start[k]));
        CUDA_CHECK(cudaEventCreate(&t->end[k]));
        for (int g = 0; g < dp->G; g++) {
            CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
            CUDA_CHECK(cudaEventCreate(&t->copy_begin[k * dp->G + g]));
            CUDA_CHECK(cudaEventCreate(&t->copy_end[k * dp->G + g]));
        }
    }
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaMalloc((void **)&t->loss, nb * sizeof(float)));
    return 0;
}

/* Waits for everything queued on every stream, all of them even after an
 * error (teardown frees what they use); returns the first error. */
static int sync_all(struct cuda_dp *dp, struct error *e)
{
    cudaError_t first = cudaSuccess;
    for (int s = 0; s < dp->G + dp->n; s++) {
        cudaStream_t st = s < dp->G ? dp->gpus[s].copy : dp->reps[s - dp->G].stream;
        cudaError_t err = st ? cudaStreamSynchronize(st) : cudaSuccess;
        if (first == cudaSuccess)
            first = err;
    }
    if (first != cudaSuccess)
        return cuda_fail(e, first, "cudaStreamSynchronize", __FILE__, __LINE__);
    return 0;
}

static void cuda_free(void *ctx)
{
    struct cuda_dp *dp = ctx;
    if (!dp)
        return;
    devpipe_stop(&dp->pipe);
    struct error e;
    if (dp->reps && sync_all(dp, &e))
        fprintf(stderr, "dpbench: warning: cuda backend teardown: %s\n", e.msg);
    timeline_free(dp);
    for (int k = 0; dp->slots && k < dp->pipe.depth; k++) {
        struct slot *sl = &dp->slots[k];
        for (int i = 0; sl->x && i < dp->n; i++)
            CUDA_WARN(cudaFree(sl->x[i]));
        CUDA_WARN(cudaFree(sl->y));
        if (sl->consumed)
            CUDA_WARN(cudaEventDestroy(sl->consumed));
        free(sl->x);
    }
    for (int i = 0; dp->reps && i < dp->n; i++) {
        struct replica *r = &dp->reps[i];
        if (r->dev >= 0 && r->stream) // a handle goes down on the device it was made on
            CUDA_WARN(cudaSetDevice(r->dev));
        if (r->blas)
            cublasDestroy(r->blas);
        if (r->stream)
            CUDA_WARN(cudaStreamDestroy(r->stream));
        if (r->joined)
            CUDA_WARN(cudaEventDestroy(r->joined));
        CUDA_WARN(cudaFree(r->ones));
    }
    for (int g = 0; dp->gpus && g < dp->G; g++) {
        if (dp->gpus[g].copy)
            CUDA_WARN(cudaStreamDestroy(dp->gpus[g].copy));
        if (dp->gpus[g].base)
            CUDA_WARN(cudaEventDestroy(dp->gpus[g].base));
    }
    if (dp->forked)
        CUDA_WARN(cudaEventDestroy(dp->forked));
    free(dp->scratch);
    free(dp->slots);
    free(dp->reps);
    free(dp->gpus);
    devpipe_free(&dp->pipe);
    free(dp);
}

static const struct devpipe_ops cuda_pipe_ops;

static int cuda_init(void **ctx, const struct backend_setup *s, struct error *e)
{
    struct cuda_dp *dp = calloc(1, sizeof *dp);
    if (!dp)
        return error_set(e, "cuda backend: out of memory");
    if (devpipe_init(&dp->pipe, &cuda_pipe_ops, dp, s, e) || dp_setup(dp, s, e)) {
        cuda_free(dp);
        return error_wrap(e, "cuda backend");
    }
    *ctx = dp;
    return 0;
}

/* ---- copies ------------------------------------------------------------- */

/* Opens batch k's copies to device g, once per batch: the copy stream
 * waits for the step that last read the slot, then marks where the copies
 * begin. Called just before the device's first copy, so that with pageable
 * memory the host staging of other devices' chunks stays out of its time. */
static int copies_open(struct cuda_dp *dp, struct slot *sl, long k, int g, struct error *e)
{
    if (dp->gpus[g].begun)
        return 0;
    dp->gpus[g].begun = true;
    CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
    CUDA_CHECK(cudaStreamWaitEvent(dp->gpus[g].copy, sl->consumed, 0));
    CUDA_CHECK(cudaEventRecord(dp->tl.copy_begin[k * dp->G + g], dp->gpus[g].copy));
    return 0;
}

/* devpipe's fill: queues batch hb's host-to-device copies into slot s: each
 * replica's chunk to its device, the targets to device 0, bracketed per
 * device by the batch's copy events. The copy streams first wait for the
 * step that last read the slot. Returns without waiting for the copies. */
static int cuda_fill(void *dev, int s, const struct batch *hb, struct step_batch *meta,
                     struct error *e)
{
    struct cuda_dp *dp = dev;
    struct slot *sl = &dp->slots[s];
    long k = hb->index, *split = (long *)meta->split;
    int G = dp->G;
    if (k >= dp->tl.cap)
        return error_set(e, "internal error: batch %ld beyond the %ld of an epoch", k, dp->tl.cap);
    for (int g = 0; g < G; g++)
        dp->gpus[g].begun = false;
    int active = chunk_split(hb->rows, dp->n, split);
    long offset = 0;
    for (int i = 0; i < active; i++) {
        struct replica *r = &dp->reps[i];
        size_t bytes = (size_t)split[i] * (size_t)dp->F * sizeof(float);
        if (copies_open(dp, sl, k, r->g, e))
            return -1;
        CUDA_CHECK(cudaSetDevice(r->dev));
        CUDA_CHECK(cudaMemcpyAsync(sl->x[i], hb->x + offset * dp->F, bytes,
                                   cudaMemcpyHostToDevice, dp->gpus[r->g].copy));
        offset += split[i];
    }
    if (copies_open(dp, sl, k, 0, e))
        return -1;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaMemcpyAsync(sl->y, hb->y, (size_t)hb->rows * (size_t)dp->O * sizeof(float),
                               cudaMemcpyHostToDevice, dp->gpus[0].copy));
    for (int g = 0; g < G; g++) { // devices without a chunk of this batch too
        if (copies_open(dp, sl, k, g, e))
            return -1;
        CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
        CUDA_CHECK(cudaEventRecord(dp->tl.copy_end[k * G + g], dp->gpus[g].copy));
    }
    meta->index = k;
    meta->rows = hb->rows;
    meta->active = active;
    meta->x = sl->x;
    meta->y = sl->y;
    return 0;
}

/* Blocks until batch k's copies have landed, so its host buffer can go back
 * to the loader (whose workers reuse it). */
static int copies_wait(void *dev, long k, struct error *e)
{
    struct cuda_dp *dp = dev;
    for (int g = 0; g < dp->G; g++)
        CUDA_CHECK(cudaEventSynchronize(dp->tl.copy_end[k * dp->G + g]));
    return 0;
}

/* After a failed fill, copies may still read the host batch: drain them
 * before it is reused (errors here repeat the one already reported). */
static void copies_drain(void *dev)
{
    struct cuda_dp *dp = dev;
    for (int g = 0; g < dp->G; g++)
        cudaStreamSynchronize(dp->gpus[g].copy);
}

/* Blocks until step k has ended on the GPU (the run-ahead limit). */
static int step_wait(void *dev, long k, struct error *e)
{
    struct cuda_dp *dp = dev;
    CUDA_CHECK(cudaEventSynchronize(dp->tl.end[k]));
    return 0;
}

/* Everything the step queued has joined replica 0's stream, so this event
 * covers every read of the slot. A failure here shows up again at
 * epoch_end's synchronisation, which reports it. */
static void slot_consumed(void *dev, int s, long k)
{
    (void)k;
    struct cuda_dp *dp = dev;
    cudaError_t err = cudaSetDevice(dp->reps[0].dev);
    if (err == cudaSuccess)
        err = cudaEventRecord(dp->slots[s].consumed, dp->reps[0].stream);
    if (err != cudaSuccess)
        fprintf(stderr, "dpbench: warning: cuda backend: recording a slot's release: %s\n",
                cudaGetErrorString(err));
}

static const struct devpipe_ops cuda_pipe_ops = {
    .fill = cuda_fill,
    .copies_wait = copies_wait,
    .copies_drain = copies_drain,
    .step_wait = step_wait,
    .consumed = slot_consumed,
};

/* ---- the epoch ---------------------------------------------------------- */

static int cuda_epoch_begin(void *ctx, struct loader *l, struct error *e)
{
    struct cuda_dp *dp = ctx;
    if (timeline_reserve(dp, l->n_batches, e))
        return error_wrap(e, "cuda backend");
    dp->stepped = 0;
    dp->host_s = 0;
    /* Every stream is idle here (start of run, or after epoch_end's sync), so
     * the base events of all devices mark the same moment. */
    for (int g = 0; g < dp->G; g++) {
        CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
        CUDA_CHECK(cudaEventRecord(dp->gpus[g].base, dp->gpus[g].copy));
    }
    if (devpipe_epoch_begin(&dp->pipe, l, e))
        return error_wrap(e, "cuda backend");
    return 0;
}

static int cuda_next(void *ctx, struct loader *l, struct step_batch **b, struct epoch_stats *st,
                     struct error *e)
{
    struct cuda_dp *dp = ctx;
    int rc = devpipe_next(&dp->pipe, l, b, st, e);
    return rc < 0 && !dp->pipe.async ? error_wrap(e, "cuda backend") : rc;
}

/* ---- the primitives of step.c's steps ------------------------------------ */

/* Device-to-device copy on `stream`: a plain copy within a device (virtual
 * replicas), a peer copy across devices. */
static int copy_d2d(float *dst, int dst_dev, const float *src, int src_dev, size_t floats,
                    cudaStream_t stream, struct error *e)
{
    if (dst_dev == src_dev)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, floats * sizeof(float), cudaMemcpyDeviceToDevice,
                                   stream));
    else
        CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, floats * sizeof(float), stream));
    return 0;
}

/* Replica q's device made current; its queue is its stream, its handle's. */
static struct replica *on(struct cuda_dp *dp, int q, struct error *e)
{
    cudaError_t err = cudaSetDevice(dp->reps[q].dev);
    if (err != cudaSuccess) {
        cuda_fail(e, err, "cudaSetDevice(dev)", __FILE__, __LINE__);
        return NULL;
    }
    return &dp->reps[q];
}

/* out (rows, O) = x (rows, F) · wᵀ + b. cuBLAS is column-major: row-major
 * (rows, O) is column-major (O, rows), so out = w(O, F) · x(F, rows). */
static int cuda_forward(void *ctx, int q, const float *x, long rows, const float *w, float *out,
                        struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct replica *r = on(dp, q, e);
    const float one = 1.0f, zero = 0.0f;
    int n = (int)rows;
    if (!r)
        return -1;
    CUBLAS_CHECK(cublasSgemm(r->blas, CUBLAS_OP_T, CUBLAS_OP_N, dp->O, n, dp->F, &one, w, dp->F,
                             x, dp->F, &zero, out, dp->O));
    CUBLAS_CHECK(cublasSger(r->blas, dp->O, n, &one, w + (size_t)dp->O * dp->F, 1, r->ones, 1,
                            out, dp->O));
    return 0;
}

/* gw (O, F) = alpha doutᵀ · x, i.e. column-major gw(F, O) = x(F, rows) ·
 * dout(O, rows)ᵀ; gb (O) = alpha doutᵀ · 1, column-major dout(O, rows) · ones. */
static int cuda_backward(void *ctx, int q, const float *x, const float *dout, long rows,
                         float alpha, float *g, struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct replica *r = on(dp, q, e);
    const float zero = 0.0f;
    int n = (int)rows;
    if (!r)
        return -1;
    CUBLAS_CHECK(cublasSgemm(r->blas, CUBLAS_OP_N, CUBLAS_OP_T, dp->F, dp->O, n, &alpha, x, dp->F,
                             dout, dp->O, &zero, g, dp->F));
    CUBLAS_CHECK(cublasSgemv(r->blas, CUBLAS_OP_N, dp->O, n, &alpha, dout, dp->O, r->ones, 1,
                             &zero, g + (size_t)dp->O * dp->F, 1));
    return 0;
}

static int cuda_copy(void *ctx, int q, float *dst, int dst_r, const float *src, int src_r,
                     size_t n, struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct replica *r = on(dp, q, e);
    if (!r)
        return -1;
    return copy_d2d(dst, dp->reps[dst_r].dev, src, dp->reps[src_r].dev, n, r->stream, e);
}

static int cuda_axpy(void *ctx, int q, size_t n, float alpha, const float *x, float *y,
                     struct error *e)
{
    struct replica *r = on(ctx, q, e);
    if (!r)
        return -1;
    CUBLAS_CHECK(cublasSaxpy(r->blas, (int)n, &alpha, x, 1, y, 1));
    return 0;
}

static int cuda_scal(void *ctx, int q, size_t n, float alpha, float *x, struct error *e)
{
    struct replica *r = on(ctx, q, e);
    if (!r)
        return -1;
    CUBLAS_CHECK(cublasSscal(r->blas, (int)n, &alpha, x, 1));
    return 0;
}

static int cuda_fork(void *ctx, int n, struct error *e)
{
    struct cuda_dp *dp = ctx;
    if (n < 2)
        return 0;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaEventRecord(dp->forked, dp->reps[0].stream));
    for (int i = 1; i < n; i++) {
        CUDA_CHECK(cudaSetDevice(dp->reps[i].dev));
        CUDA_CHECK(cudaStreamWaitEvent(dp->reps[i].stream, dp->forked, 0));
    }
    return 0;
}

static int cuda_join(void *ctx, int n, struct error *e)
{
    struct cuda_dp *dp = ctx;
    for (int i = 1; i < n; i++) {
        CUDA_CHECK(cudaSetDevice(dp->reps[i].dev));
        CUDA_CHECK(cudaEventRecord(dp->reps[i].joined, dp->reps[i].stream));
    }
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    for (int i = 1; i < n; i++)
        CUDA_CHECK(cudaStreamWaitEvent(dp->reps[0].stream, dp->reps[i].joined, 0));
    return 0;
}

/* A loss without a device path: its host function on copies, with the
 * stream waited for (slow, but any loss of loss.h runs on the GPU too). */
static int loss_on_host(struct cuda_dp *dp, const struct loss_fn *fn, long k, const float *out,
                        const float *y, long rows, float *d, struct error *e)
{
    size_t n = (size_t)rows * (size_t)dp->O;
    if (!dp->scratch && !(dp->scratch = malloc(3 * (size_t)dp->batch_max * dp->O * sizeof(float))))
        return error_set(e, "out of memory");
    float *h_out = dp->scratch, *h_y = h_out + n, *h_d = h_y + n;
    cudaStream_t s0 = dp->reps[0].stream;
    CUDA_CHECK(cudaMemcpyAsync(h_out, out, n * sizeof(float), cudaMemcpyDeviceToHost, s0));
    CUDA_CHECK(cudaMemcpyAsync(h_y, y, n * sizeof(float), cudaMemcpyDeviceToHost, s0));
    CUDA_CHECK(cudaStreamSynchronize(s0));
    float raw = (float)fn->host(h_out, h_y, rows, dp->O, h_d);
    if (dp->classify)
        dp->correct += loss_correct(h_out, h_y, rows, dp->O);
    CUDA_CHECK(cudaMemcpyAsync(d, h_d, n * sizeof(float), cudaMemcpyHostToDevice, s0));
    CUDA_CHECK(cudaMemcpyAsync(dp->tl.loss + k, &raw, sizeof raw, cudaMemcpyHostToDevice, s0));
    CUDA_CHECK(cudaStreamSynchronize(s0)); // the sources are on this stack and in scratch
    return 0;
}

/* The loss on device 0; its raw sum stays there, in the epoch's loss slot
 * k, until epoch_end. MSE: d = out - y in one geam, raw = d·d. */
static int cuda_loss(void *ctx, const struct loss_fn *fn, long k, const float *out,
                     const float *y, long rows, float *d, struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct replica *r0 = on(dp, 0, e);
    if (!r0)
        return -1;
    dp->loss = fn;
    if (fn != &loss_mse || dp->classify) // accuracy needs the outputs on the host
        return loss_on_host(dp, fn, k, out, y, rows, d, e);
    int O = dp->O, n_out = (int)rows * O;
    const float one = 1.0f, minus_one = -1.0f;
    CUBLAS_CHECK(cublasSgeam(r0->blas, CUBLAS_OP_N, CUBLAS_OP_N, O, (int)rows, &one, out, O,
                             &minus_one, y, O, d, O));
    CUBLAS_CHECK(cublasSetPointerMode(r0->blas, CUBLAS_POINTER_MODE_DEVICE));
    cublasStatus_t dot = cublasSdot(r0->blas, n_out, d, 1, d, 1, dp->tl.loss + k);
    CUBLAS_CHECK(cublasSetPointerMode(r0->blas, CUBLAS_POINTER_MODE_HOST));
    CUBLAS_CHECK(dot);
    return 0;
}

/* Before a step: at most `depth` steps stay queued (the host waits here, on
 * compute, rather than in next() through a full copy ring); replica 0's
 * stream waits for the batch's copies and marks the step's start. */
static int cuda_begin(void *ctx, const struct step_batch *b, struct error *e)
{
    struct cuda_dp *dp = ctx;
    long k = b->index;
    if (devpipe_begin(&dp->pipe, k, e))
        return -1;
    dp->step_t0 = now_seconds(); // waiting for the device is not host overhead
    cudaStream_t s0 = dp->reps[0].stream;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    for (int g = 0; g < dp->G; g++)
        CUDA_CHECK(cudaStreamWaitEvent(s0, dp->tl.copy_end[k * dp->G + g], 0));
    CUDA_CHECK(cudaEventRecord(dp->tl.start[k], s0)); // data here, last SGD done
    return 0;
}

/* After a step: its end on replica 0's stream; epoch_end reads the times. */
static int cuda_end(void *ctx, const struct step_batch *b, struct epoch_stats *st,
                    struct error *e)
{
    (void)st;
    struct cuda_dp *dp = ctx;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaEventRecord(dp->tl.end[b->index], dp->reps[0].stream));
    dp->stepped = b->index + 1;
    dp->host_s += now_seconds() - dp->step_t0;
    return 0;
}

static float *cuda_alloc(void *ctx, int r, size_t n, struct error *e)
{
    struct cuda_dp *dp = ctx;
    float *p = NULL;
    cudaError_t err = cudaSetDevice(dp->reps[r].dev);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&p, (n ? n : 1) * sizeof(float));
    if (err != cudaSuccess) {
        cuda_fail(e, err, "cudaMalloc(&p, n * sizeof(float))", __FILE__, __LINE__);
        error_wrap(e, "replica %d (device %d)", r, dp->reps[r].dev);
        return NULL;
    }
    return p;
}

static void cuda_release_mem(void *ctx, int r, float *p)
{
    struct cuda_dp *dp = ctx;
    CUDA_WARN(cudaSetDevice(dp->reps[r].dev));
    CUDA_WARN(cudaFree(p));
}

/* Host to device: a blocking copy, then the device waited for (from pageable
 * memory cudaMemcpy may return before the bytes land, and the non-blocking
 * streams do not wait for the legacy stream it runs on). */
static int cuda_upload(void *ctx, int r, float *dst, const float *src, size_t n,
                       struct error *e)
{
    struct cuda_dp *dp = ctx;
    CUDA_CHECK(cudaSetDevice(dp->reps[r].dev));
    CUDA_CHECK(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}

static int cuda_download(void *ctx, int r, float *dst, const float *src, size_t n,
                         struct error *e)
{
    struct cuda_dp *dp = ctx;
    CUDA_CHECK(cudaSetDevice(dp->reps[r].dev));
    CUDA_CHECK(cudaStreamSynchronize(dp->reps[r].stream));
    CUDA_CHECK(cudaMemcpy(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost));
    return 0;
}

static bool cuda_shares_memory(void *ctx, int a, int b)
{
    struct cuda_dp *dp = ctx;
    return dp->reps[a].dev == dp->reps[b].dev;
}

static void *cuda_queue(void *ctx, int q)
{
    struct cuda_dp *dp = ctx;
    return dp->reps[q].stream;
}

static void cuda_sync(void *ctx)
{
    struct cuda_dp *dp = ctx;
    struct error e;
    devpipe_stop(&dp->pipe);
    if (sync_all(dp, &e))
        fprintf(stderr, "dpbench: warning: cuda backend: %s\n", e.msg);
}

static void cuda_release(void *ctx, struct loader *l, struct step_batch *b)
{
    struct cuda_dp *dp = ctx;
    double t0 = now_seconds();
    devpipe_release(&dp->pipe, l, b); // records the slot's consumed event
    dp->host_s += now_seconds() - t0;
}

/* Milliseconds from a to b, two completed events of one device. */
static int elapsed_ms(cudaEvent_t a, cudaEvent_t b, double *ms, struct error *e)
{
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    *ms = t;
    return 0;
}

/* Interval [from, to] on device g's timeline, into iv[0..1]. The length is
 * read from the pair itself: float milliseconds from the epoch's base lose
 * microseconds late in a long epoch. */
static int interval_ms(struct cuda_dp *dp, int g, cudaEvent_t from, cudaEvent_t to, double *iv,
                       struct error *e)
{
    double len = 0;
    if (elapsed_ms(dp->gpus[g].base, from, &iv[0], e) || elapsed_ms(from, to, &len, e))
        return -1;
    iv[1] = iv[0] + len;
    return 0;
}

/* Stops the copy thread (early stop included), waits for the queued work,
 * then reads the epoch's events and losses. */
static int cuda_epoch_end(void *ctx, struct epoch_stats *st, struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct timeline *t = &dp->tl;
    devpipe_stop(&dp->pipe);
    if (sync_all(dp, e))
        return error_wrap(e, "cuda backend, end of epoch");
    long m = dp->stepped, G = dp->G;
    st->host_s += dp->host_s;
    st->correct += dp->correct;
    dp->correct = 0;
    if (m == 0)
        return 0;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaMemcpy(t->loss_host, t->loss, (size_t)m * sizeof(float),
                          cudaMemcpyDeviceToHost));
    for (long k = 0; k < m && dp->loss; k++) // raw sums -> sum of (mean loss * rows)
        st->loss_sum += dp->loss->sample_sum((double)t->loss_host[k], dp->O);

    /* step intervals on device 0's timeline; they are disjoint (one stream) */
    double *steps = malloc(2 * (size_t)m * sizeof(double));
    if (!steps)
        return error_set(e, "out of memory");
    int rc = 0;
    for (long k = 0; k < m && !rc; k++) {
        rc = interval_ms(dp, 0, t->start[k], t->end[k], &steps[2 * k], e);
        if (!rc)
            st->compute_s += 1e-3 * (steps[2 * k + 1] - steps[2 * k]);
    }
    /* copy intervals per device (one copy stream each, so disjoint too),
     * against the steps: the overlap is copy time hidden behind compute */
    for (int g = 0; g < G && !rc; g++) {
        for (long k = 0; k < m && !rc; k++) {
            rc = interval_ms(dp, g, t->copy_begin[k * G + g], t->copy_end[k * G + g],
                             &t->t[2 * k], e);
            if (!rc)
                st->copy_s += 1e-3 * (t->t[2 * k + 1] - t->t[2 * k]);
        }
        if (!rc)
            st->hidden_s += 1e-3 * devpipe_overlap(t->t, m, steps, m);
    }
    free(steps);
    return rc ? error_wrap(e, "cuda backend, epoch timings") : 0;
}

/* ---- probing and describing --------------------------------------------- */

static int cuda_probe(struct error *e)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        bool driver = access("/proc/driver/nvidia/version", F_OK) == 0;
        return error_set(e, "no CUDA device: cudaGetDeviceCount: %s (%s)%s",
                         cudaGetErrorString(err), cudaGetErrorName(err),
                         driver ? "" : "; no NVIDIA driver is loaded (no /proc/driver/nvidia)");
    }
    if (count == 0)
        return error_set(e, "no CUDA device: cudaGetDeviceCount found none");
    /* a device can exist and still refuse a context (exclusive mode, busy):
     * one that opens is enough here; the run checks its own devices */
    for (int i = 0; i < count; i++)
        if ((err = cudaSetDevice(i)) == cudaSuccess && (err = cudaFree(NULL)) == cudaSuccess)
            return 0;
    return error_set(e, "no usable CUDA device: none of %d opens: %s (%s)", count,
                     cudaGetErrorString(err), cudaGetErrorName(err));
}

/* "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB) x1; driver 13.0, runtime 13.0" */
static void cuda_describe(char *buf, size_t n)
{
    int count = 0, drv = 0, rt = 0;
    size_t used = 0;
    buf[0] = '\0';
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        return;
    for (int i = 0; i < count && used < n;) {
        struct cudaDeviceProp p, q;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            break;
        int same = 1; // a run of identical devices prints once
        while (i + same < count && cudaGetDeviceProperties(&q, i + same) == cudaSuccess &&
               strcmp(q.name, p.name) == 0 && q.totalGlobalMem == p.totalGlobalMem)
            same++;
        used += (size_t)snprintf(buf + used, n - used, "%s%s (sm_%d%d, %.1f GiB) x%d",
                                 i ? ", " : "", p.name, p.major, p.minor,
                                 (double)p.totalGlobalMem / (1 << 30), same);
        i += same;
    }
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    if (used < n)
        snprintf(buf + used, n - used, "; driver %d.%d, runtime %d.%d", drv / 1000,
                 drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
}

/* ---- host-to-device bandwidth ------------------------------------------- */

struct bw {
    size_t max;          // bytes, the largest size
    void *pinned, *check; // (max) page-locked source; page-locked copy-back
    void *pageable;      // (max) malloc'd source
    void *dev;           // (max) on device 0
    cudaStream_t stream;
    cudaEvent_t t0, t1;
};

/* GB/s of `iters` cudaMemcpyAsync of `bytes` from src, after one warm-up.
 * The device buffer is zeroed first, so that bw_wrong sees a copy that did
 * not land. */
static int bw_async(struct bw *bw, const void *src, size_t bytes, int iters, double *gbps,
                    struct error *e)
{
    float ms = 0;
    CUDA_CHECK(cudaMemsetAsync(bw->dev, 0, bytes, bw->stream));
    CUDA_CHECK(cudaMemcpyAsync(bw->dev, src, bytes, cudaMemcpyHostToDevice, bw->stream));
    CUDA_CHECK(cudaEventRecord(bw->t0, bw->stream));
    for (int i = 0; i < iters; i++)
        CUDA_CHECK(cudaMemcpyAsync(bw->dev, src, bytes, cudaMemcpyHostToDevice, bw->stream));
    CUDA_CHECK(cudaEventRecord(bw->t1, bw->stream));
    CUDA_CHECK(cudaEventSynchronize(bw->t1));
    CUDA_CHECK(cudaEventElapsedTime(&ms, bw->t0, bw->t1));
    *gbps = (double)bytes * iters / (ms * 1e-3) / 1e9;
    return 0;
}

/* Words of the device buffer that differ from src after the copies. */
static int bw_wrong(struct bw *bw, const void *src, size_t bytes, long *wrong, struct error *e)
{
    const unsigned *a = src, *b = bw->check;
    CUDA_CHECK(cudaMemcpy(bw->check, bw->dev, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes / sizeof *a; i++)
        *wrong += a[i] != b[i];
    return 0;
}

static int bw_table(struct bw *bw, FILE *out, struct h2d_profile *prof, struct error *e)
{
    double best = 0;
    size_t best_size = 0;
    fprintf(out, "#%12s %6s %10s %10s %10s %7s\n", "size", "count", "pinned", "pageable",
            "ratio", "#wrong");
    fprintf(out, "#%12s %6s %10s %10s\n", "(B)", "", "(GB/s)", "(GB/s)");
    for (size_t size = (size_t)1 << 20; size <= bw->max; size *= 2) {
        int iters = (int)(((size_t)1 << 30) / size); // about 1 GiB per measurement
        iters = iters < 4 ? 4 : iters > 200 ? 200 : iters;
        double pinned = 0, pageable = 0;
        long wrong = 0;
        if (bw_async(bw, bw->pinned, size, iters, &pinned, e) ||
            bw_wrong(bw, bw->pinned, size, &wrong, e) ||
            bw_async(bw, bw->pageable, size, iters, &pageable, e) ||
            bw_wrong(bw, bw->pageable, size, &wrong, e))
            return error_wrap(e, "%zu bytes", size);
        /* plain blocking cudaMemcpy in a loop, host clock: what naive code gets */
        double t0 = now_seconds();
        for (int i = 0; i < iters; i++)
            CUDA_CHECK(cudaMemcpy(bw->dev, bw->pinned, size, cudaMemcpyHostToDevice));
        double plain = (double)size * iters / (now_seconds() - t0) / 1e9;
        if (plain > best) {
            best = plain;
            best_size = size;
        }
        fprintf(out, " %12zu %6d %10.2f %10.2f %10.2f %7ld\n", size, iters, pinned, pageable,
                pinned / pageable, wrong);
        if (prof && prof->n < H2D_PROFILE_MAX_ROWS && wrong == 0) {
            prof->rows[prof->n].bytes = (double)size;
            prof->rows[prof->n].pinned_gbps = pinned;
            prof->rows[prof->n++].pageable_gbps = pageable;
        }
    }
    fprintf(out, "# best plain cudaMemcpy loop (pinned, host clock): %.2f GB/s at %zu B\n",
            best, best_size);
    return 0;
}

static int bw_setup(struct bw *bw, struct error *e)
{
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaHostAlloc(&bw->pinned, bw->max, cudaHostAllocDefault));
    CUDA_CHECK(cudaHostAlloc(&bw->check, bw->max, cudaHostAllocDefault));
    CUDA_CHECK(cudaMalloc(&bw->dev, bw->max));
    CUDA_CHECK(cudaStreamCreateWithFlags(&bw->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&bw->t0));
    CUDA_CHECK(cudaEventCreate(&bw->t1));
    if (!(bw->pageable = malloc(bw->max)))
        return error_set(e, "out of memory (%zu bytes)", bw->max);
    unsigned *p = bw->pinned, *q = bw->pageable;
    for (size_t i = 0; i < bw->max / sizeof *p; i++) { // touched: no first-use page faults
        p[i] = (unsigned)(i * 2654435761u) | 1; // never 0, never the other's word
        q[i] = ~p[i];
    }
    return 0;
}

static int cuda_bandwidth(FILE *out, struct h2d_profile *prof, struct error *e)
{
    struct bw bw = {.max = (size_t)256 << 20};
    char dev[512];
    cuda_describe(dev, sizeof dev);
    if (prof)
        snprintf(prof->device, sizeof prof->device, "%s", dev);
    fprintf(out, "# dpbench %s h2d-bandwidth: host to device 0, cudaMemcpyAsync on one stream, "
                 "timed with CUDA events\n# devices: %s\n",
            DPBENCH_VERSION, dev);
    int rc = bw_setup(&bw, e) || bw_table(&bw, out, prof, e) ? -1 : 0;
    if (bw.t0)
        CUDA_WARN(cudaEventDestroy(bw.t0));
    if (bw.t1)
        CUDA_WARN(cudaEventDestroy(bw.t1));
    if (bw.stream)
        CUDA_WARN(cudaStreamDestroy(bw.stream));
    if (bw.pinned)
        CUDA_WARN(cudaFreeHost(bw.pinned));
    if (bw.check)
        CUDA_WARN(cudaFreeHost(bw.check));
    CUDA_WARN(cudaFree(bw.dev));
    free(bw.pageable);
    fflush(out);
    return rc;
}

static const struct device_ops cuda_ops = {
    .forward = cuda_forward,
    .backward = cuda_backward,
    .copy = cuda_copy,
    .axpy = cuda_axpy,
    .scal = cuda_scal,
    .fork = cuda_fork,
    .join = cuda_join,
    .loss = cuda_loss,
    .begin = cuda_begin,
    .end = cuda_end,
    .alloc = cuda_alloc,
    .release = cuda_release_mem,
    .upload = cuda_upload,
    .download = cuda_download,
    .shares_memory = cuda_shares_memory,
    .sync = cuda_sync,
    .queue = cuda_queue,
};

const struct backend backend_cuda = {
    .name = "cuda",
    .device_memory = true,
    .has_devices = true,
    .device_copies = true,
    .probe = cuda_probe,
    .describe = cuda_describe,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .init = cuda_init,
    .epoch_begin = cuda_epoch_begin,
    .next = cuda_next,
    .release = cuda_release,
    .epoch_end = cuda_epoch_end,
    .free = cuda_free,
    .bandwidth = cuda_bandwidth,
    .ops = &cuda_ops,
};
