/* The CUDA backend's side of devpipe.c's copy ring (devpipe.h): a slot's
 * copies go on a copy stream per device between two events; the step waits
 * on those events on the GPU, and the slot's "consumed" event, which release
 * records after the step, gates the copy that reuses it. Also the per-batch
 * events of an epoch's timeline that the copies and steps record. */
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "cuda_backend.h"

void cuda_timeline_free(struct cuda_dp *dp)
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
int cuda_timeline_reserve(struct cuda_dp *dp, long n, struct error *e)
{
    struct timeline *t = &dp->tl;
    if (t->cap >= n)
        return 0;
    cuda_timeline_free(dp);
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

const struct devpipe_ops cuda_pipe_ops = {
    .fill = cuda_fill,
    .copies_wait = copies_wait,
    .copies_drain = copies_drain,
    .step_wait = step_wait,
    .consumed = slot_consumed,
};

