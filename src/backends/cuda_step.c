/* The CUDA backend's primitives of step.c's steps (struct device_ops): each
 * replica's queue is a stream of its own, fork and join are events, so a
 * whole step is queued without the host stopping; math is cuBLAS. */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

#include "loss.h"

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

/* A loss without a kernel (a loss.h entry whose device_kernel is NULL):
 * its host function on copies in pinned scratch, with the stream waited for
 * twice: slow, but any loss runs on the GPU too. */
static int loss_on_host(struct cuda_dp *dp, const struct loss_fn *fn, long k, const float *out,
                        const float *y, long rows, float *d, struct error *e)
{
    size_t n = (size_t)rows * (size_t)dp->O;
    if (!dp->scratch)
        CUDA_CHECK(cuda_pin_alloc((void **)&dp->scratch,
                                 (3 * (size_t)dp->batch_max * dp->O + 1) * sizeof(float),
                                  cudaHostAllocDefault));
    float *h_out = dp->scratch, *h_y = h_out + n, *h_d = h_y + n, *raw = h_d + n;
    cudaStream_t s0 = dp->reps[0].stream;
    CUDA_CHECK(cudaMemcpyAsync(h_out, out, n * sizeof(float), cudaMemcpyDeviceToHost, s0));
    CUDA_CHECK(cudaMemcpyAsync(h_y, y, n * sizeof(float), cudaMemcpyDeviceToHost, s0));
    CUDA_CHECK(cudaStreamSynchronize(s0));
    *raw = (float)fn->host(h_out, h_y, rows, dp->O, h_d);
    CUDA_CHECK(cudaMemcpyAsync(d, h_d, n * sizeof(float), cudaMemcpyHostToDevice, s0));
    CUDA_CHECK(cudaMemcpyAsync(dp->tl.loss + k, raw, sizeof *raw, cudaMemcpyHostToDevice, s0));
    CUDA_CHECK(cudaStreamSynchronize(s0)); // the next step reuses the scratch
    return 0;
}

/* The loss on device 0 by its kernel (loss_fn.device_kernel), queued: d,
 * and its raw sum in the epoch's loss slot k until epoch_end; on labelled
 * data the correct predictions too, into the epoch's count. The host waits
 * for nothing here. */
static int cuda_loss(void *ctx, const struct loss_fn *fn, long k, const float *out,
                     const float *y, long rows, float *d, struct error *e)
{
    struct cuda_dp *dp = ctx;
    struct replica *r0 = on(dp, 0, e);
    int n = (int)rows, O = dp->O;
    if (!r0)
        return -1;
    dp->loss = fn;
    if (dp->classify) {
        void *args[] = {&out, &y, &n, &O, &dp->correct};
        if (cuda_kernel_launch(dp->k.correct, r0->stream, args, e))
            return error_wrap(e, "the accuracy count");
    }
    if (!fn->device_kernel)
        return loss_on_host(dp, fn, k, out, y, rows, d, e);
    if (dp->k.loss != fn && cuda_kernel_find(&dp->k, fn->device_kernel, &dp->k.loss_kernel, e))
        return error_wrap(e, "the %s loss's kernel", fn->name);
    dp->k.loss = fn;
    float *raw = dp->tl.loss + k;
    void *args[] = {&out, &y, &n, &O, &d, &raw};
    return cuda_kernel_launch(dp->k.loss_kernel, r0->stream, args, e);
}

/* Before a step: at most `depth` steps stay queued (the host waits here, on
 * compute, rather than in next() through a full copy ring); replica 0's
 * stream waits for the batch's copies and marks the step's start. */
static int cuda_begin(void *ctx, const struct step_batch *b, struct error *e)
{
    struct cuda_dp *dp = ctx;
    long k = b->index;
    if (devpipe_begin(&dp->pipe, k, e)) // step k - depth has ended: its times can be read
        return -1;
    if (cuda_timeline_read(dp, k - dp->pipe.depth + 1, e))
        return error_wrap(e, "cuda backend, step %ld's times", k - dp->pipe.depth);
    cudaStream_t s0 = dp->reps[0].stream;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    for (int g = 0; g < dp->G; g++)
        CUDA_CHECK(cudaStreamWaitEvent(s0, dp->tl.copy_end[cuda_set(dp, k) * dp->G + g], 0));
    CUDA_CHECK(cudaEventRecord(dp->tl.start[cuda_set(dp, k)], s0)); // data here, last SGD done
    return 0;
}

/* After a step: its end on replica 0's stream; epoch_end reads the times. */
static int cuda_end(void *ctx, const struct step_batch *b, struct epoch_stats *st,
                    struct error *e)
{
    (void)st;
    struct cuda_dp *dp = ctx;
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cudaEventRecord(dp->tl.end[cuda_set(dp, b->index)], dp->reps[0].stream));
    dp->stepped = b->index + 1;
    return 0;
}

static float *cuda_alloc(void *ctx, int r, size_t n, struct error *e)
{
    struct cuda_dp *dp = ctx;
    float *p = NULL;
    cudaError_t err = cudaSetDevice(dp->reps[r].dev);
    if (err == cudaSuccess)
        err = cuda_mem_alloc((void **)&p, (n ? n : 1) * sizeof(float));
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
    CUDA_WARN(cuda_mem_free(p));
}

/* Host to device on the replica's stream, which is then waited for: the
 * bytes have landed before any stream reads them (from pageable memory a
 * copy may return before they land), and the copy streams, which a device
 * wide wait would wait for too, go on. */
static int cuda_upload(void *ctx, int r, float *dst, const float *src, size_t n,
                       struct error *e)
{
    struct cuda_dp *dp = ctx;
    CUDA_CHECK(cudaSetDevice(dp->reps[r].dev));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice,
                               dp->reps[r].stream));
    CUDA_CHECK(cudaStreamSynchronize(dp->reps[r].stream));
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
    if (cuda_sync_all(dp, &e))
        fprintf(stderr, "dpbench: warning: cuda backend: %s\n", e.msg);
}

const struct device_ops cuda_ops = {
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
