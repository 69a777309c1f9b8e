/* nn.DataParallel on CUDA devices: this file sets the devices up and tears
 * them down, runs the epoch and fills the backend's table; the step's
 * primitives are cuda_step.c's (each replica's queue is a stream of its own,
 * fork and join are events, so a whole step is queued without the host
 * stopping), the copy ring's device side cuda_ring.c's (cuda_backend.h
 * lists the files).
 *
 * A device id may repeat: each replica has its own stream, cuBLAS handle and
 * buffers, so N "virtual replicas" on one GPU take the N-GPU code path.
 *
 * Batches reach the devices through devpipe.c's ring of device buffers
 * (slots). With or without async_copy the host queues at most `depth` steps
 * ahead of the GPU, and waits for that inside step, so back-pressure from
 * the GPU never passes for waiting on data.
 *
 * Time comes from CUDA events: per batch a copy interval per device and a
 * step interval on replica 0's stream, each read against a base event
 * recorded on every device at epoch start (all streams idle), so that the
 * intervals share one timeline and their overlap is the hidden copy time. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

/* ---- error checks ------------------------------------------------------- */

int cuda_fail(struct error *e, cudaError_t err, const char *call, const char *file, int line)
{
    return error_set(e, "%s:%d: %s: %s (%s)", file, line, call, cudaGetErrorString(err),
                     cudaGetErrorName(err));
}

int cublas_fail(struct error *e, cublasStatus_t st, const char *call, const char *file, int line)
{
    return error_set(e, "%s:%d: %s: %s", file, line, call, cublasGetStatusString(st));
}

/* ---- memory and waiting ------------------------------------------------- */

static long buffers_live; // device buffers and pinned host blocks allocated, not freed

long cuda_buffers_live(void) { return __atomic_load_n(&buffers_live, __ATOMIC_SEQ_CST); }

cudaError_t cuda_mem_alloc(void **p, size_t bytes)
{
    cudaError_t err = cudaMalloc(p, bytes);
    if (err == cudaSuccess)
        __atomic_add_fetch(&buffers_live, 1, __ATOMIC_SEQ_CST);
    return err;
}

/* NULL is no call at all: cudaFree(NULL) would open a context on the
 * current device (device 0 after a setup that failed early). */
cudaError_t cuda_mem_free(void *p)
{
    if (!p)
        return cudaSuccess;
    __atomic_sub_fetch(&buffers_live, 1, __ATOMIC_SEQ_CST);
    return cudaFree(p);
}

cudaError_t cuda_pin_alloc(void **p, size_t bytes, unsigned flags)
{
    cudaError_t err = cudaHostAlloc(p, bytes, flags);
    if (err == cudaSuccess)
        __atomic_add_fetch(&buffers_live, 1, __ATOMIC_SEQ_CST);
    return err;
}

cudaError_t cuda_pin_free(void *p)
{
    if (!p)
        return cudaSuccess;
    __atomic_sub_fetch(&buffers_live, 1, __ATOMIC_SEQ_CST);
    return cudaFreeHost(p);
}

/* Whether a host thread that waits for the device (the copy thread, the
 * training thread, an epoch's end) sleeps until the device signals or spins.
 * Sleeping costs a wake-up per wait: on an H200 it made gpu.yaml's epoch 1.7x
 * and the tutorial's 1.9x the spinning ones (docs/gpu.md). Spinning costs a
 * core: so by default (auto) the waits spin while the waiting threads have
 * cores of their own beside the loader's workers (spare_cores), and sleep
 * when they would take one the workers need. DPBENCH_CUDA_SYNC=spin or block
 * forces either (scripts/gpu-bench.sh runs both). */
bool cuda_blocking(int spare_cores, int waiters)
{
    const char *v = getenv("DPBENCH_CUDA_SYNC");
    if (v && strcmp(v, "spin") == 0)
        return false;
    if (v && strcmp(v, "block") == 0)
        return true;
    return spare_cores < waiters;
}

/* Makes dev current (opening its context) with the waiting policy above. A
 * driver that refuses the flags on an open context leaves the device's
 * default; the events the host waits on still block. */
static int use_device(int dev, bool blocking, struct error *e)
{
    cudaError_t err = cudaSetDevice(dev);
    if (err == cudaErrorDevicesUnavailable)
        return error_set(e, "device %d will not open a context (cudaErrorDevicesUnavailable): "
                            "another process holds it in EXCLUSIVE_PROCESS mode, or its compute "
                            "mode is PROHIBITED (nvidia-smi -q -d COMPUTE)", dev);
    if (err != cudaSuccess)
        return cuda_fail(e, err, "cudaSetDevice(dev)", __FILE__, __LINE__);
    unsigned flags = blocking ? cudaDeviceScheduleBlockingSync : cudaDeviceScheduleSpin;
    if (cudaSetDeviceFlags(flags) != cudaSuccess)
        cudaGetLastError(); // cleared: not an error of the run
    return 0;
}

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
    /* Runs after init, which left the run's output device current (train.c
     * sets the backend up before the loader), so the pool is pinned through
     * that device's context. Portable: page-locked for every device. */
    cudaError_t err = cuda_pin_alloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
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
        CUDA_WARN(cuda_pin_free(p));
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
static int check_devices(const struct backend_setup *s, bool blocking, struct error *e)
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
        if (use_device((int)s->device_ids[i], blocking, e)) // its context, the first one there
            return -1;
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
    CUDA_CHECK(cuda_mem_alloc((void **)&r->ones, B * sizeof(float)));
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
            CUDA_CHECK(cuda_mem_alloc((void **)&sl->x[i],
                                  (size_t)dp->chunk_max * (size_t)dp->F * sizeof(float)));
        }
        CUDA_CHECK(cudaSetDevice(dev0));
        CUDA_CHECK(cuda_mem_alloc((void **)&sl->y, BO * sizeof(float)));
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
    dp->blocking = cuda_blocking(s->spare_cores, s->async_copy ? 2 : 1);
    if (check_devices(s, dp->blocking, e))
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
    if (ring_setup(dp, e) || cuda_kernels_load(&dp->k, dp->reps[0].dev, e))
        return -1;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cuda_mem_alloc((void **)&dp->correct, sizeof *dp->correct));
    return 0; // with the output device current
}

int cuda_sync_all(struct cuda_dp *dp, struct error *e)
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
    if (dp->reps && cuda_sync_all(dp, &e))
        fprintf(stderr, "dpbench: warning: cuda backend teardown: %s\n", e.msg);
    cuda_timeline_free(dp);
    for (int k = 0; dp->slots && k < dp->pipe.depth; k++) {
        struct slot *sl = &dp->slots[k];
        for (int i = 0; sl->x && i < dp->n; i++)
            CUDA_WARN(cuda_mem_free(sl->x[i]));
        CUDA_WARN(cuda_mem_free(sl->y));
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
        CUDA_WARN(cuda_mem_free(r->ones));
    }
    for (int g = 0; dp->gpus && g < dp->G; g++) {
        if (dp->gpus[g].copy)
            CUDA_WARN(cudaStreamDestroy(dp->gpus[g].copy));
        if (dp->gpus[g].base)
            CUDA_WARN(cudaEventDestroy(dp->gpus[g].base));
    }
    if (dp->forked)
        CUDA_WARN(cudaEventDestroy(dp->forked));
    if (dp->reps) {
        CUDA_WARN(cudaSetDevice(dp->reps[0].dev));
        CUDA_WARN(cuda_mem_free(dp->correct));
        if (dp->scratch)
            CUDA_WARN(cuda_pin_free(dp->scratch));
    }
    cuda_kernels_free(&dp->k);
    free(dp->slots);
    free(dp->reps);
    free(dp->gpus);
    devpipe_free(&dp->pipe);
    free(dp);
}


static int cuda_init(void **ctx, const struct backend_setup *s, struct error *e)
{
    struct cuda_dp *dp = calloc(1, sizeof *dp);
    if (!dp)
        return error_set(e, "cuda backend: out of memory");
    if (devpipe_init(&dp->pipe, &cuda_pipe_ops, dp, s, e) || dp_setup(dp, s, e)) {
        cuda_free(dp);
        return error_wrap(e, "cuda backend");
    }
    *ctx = dp; // the output device current: the loader's pinned pool comes next
    return 0;
}

/* ---- the epoch ---------------------------------------------------------- */

static int cuda_epoch_begin(void *ctx, struct loader *l, struct error *e)
{
    struct cuda_dp *dp = ctx;
    if (cuda_timeline_reserve(dp, l->n_batches, e))
        return error_wrap(e, "cuda backend");
    dp->stepped = 0;
    dp->host_s = 0;
    /* Every stream is idle here (start of run, or after epoch_end's sync), so
     * the base events of all devices mark the same moment. */
    for (int g = 0; g < dp->G; g++) {
        CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
        CUDA_CHECK(cudaEventRecord(dp->gpus[g].base, dp->gpus[g].copy));
    }
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaMemsetAsync(dp->correct, 0, sizeof *dp->correct, dp->reps[0].stream));
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

static void cuda_release(void *ctx, struct loader *l, struct step_batch *b)
{
    struct cuda_dp *dp = ctx;
    double t0 = now_seconds();
    devpipe_release(&dp->pipe, l, b); // records the slot's consumed event
    dp->host_s += now_seconds() - t0;
}

/* Stops the copy thread (early stop included), waits for the queued work,
 * then reads the epoch's losses, count and the intervals not read yet. */
static int cuda_epoch_end(void *ctx, struct epoch_stats *st, struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct timeline *t = &dp->tl;
    devpipe_stop(&dp->pipe);
    if (cuda_sync_all(dp, e))
        return error_wrap(e, "cuda backend, end of epoch");
    long m = dp->stepped;
    st->host_s += dp->host_s;
    if (m == 0)
        return 0;
    unsigned long long correct = 0;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaMemcpy(&correct, dp->correct, sizeof correct, cudaMemcpyDeviceToHost));
    st->correct += (long)correct;
    CUDA_CHECK(cudaMemcpy(t->loss_host, t->loss, (size_t)m * sizeof(float),
                          cudaMemcpyDeviceToHost));
    for (long k = 0; k < m && dp->loss && !st->nonfinite; k++) { // raw sums -> sum of (mean
        st->loss_sum += dp->loss->sample_sum((double)t->loss_host[k], dp->O); // loss * rows)
        st->nonfinite = isfinite(t->loss_host[k]) ? 0 : k + 1; // train.c stops the run there
    }
    if (cuda_timeline_read(dp, m, e))
        return error_wrap(e, "cuda backend, epoch timings");
    /* the steps, on device 0's timeline, are disjoint (one stream); so are
     * each device's copies (one copy stream): their overlap is the copy time
     * hidden behind compute */
    for (long k = 0; k < m; k++)
        st->compute_s += 1e-3 * (t->steps[2 * k + 1] - t->steps[2 * k]);
    for (int g = 0; g < dp->G; g++) {
        const double *iv = &t->copies[2 * (size_t)g * (size_t)t->cap];
        for (long k = 0; k < m; k++)
            st->copy_s += 1e-3 * (iv[2 * k + 1] - iv[2 * k]);
        st->hidden_s += 1e-3 * devpipe_overlap(iv, m, t->steps, m);
    }
    return 0;
}

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
