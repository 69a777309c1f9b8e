/* The CUDA backend's side of devpipe.c's copy ring (devpipe.h): a slot's
 * copies go on a copy stream per device between two events; the step waits
 * on those events on the GPU, and the slot's "consumed" event, which release
 * records after the step, gates the copy that reuses it. Also the epoch's
 * timeline: the events that the copies and steps record, a small ring of
 * them reused as the batches go by (2 x depth sets, however long the epoch),
 * each batch's intervals read off them once its step has ended. */
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "cuda_backend.h"

/* ---- the epoch's timeline ------------------------------------------------ */

void cuda_timeline_free(struct cuda_dp *dp)
{
    struct timeline *t = &dp->tl;
    for (int k = 0; k < t->ring; k++) {
        cudaEvent_t *ev[] = {&t->start[k], &t->end[k]};
        for (int i = 0; i < 2; i++)
            if (*ev[i])
                CUDA_WARN(cudaEventDestroy(*ev[i]));
        for (int g = 0; g < dp->G; g++) {
            if (t->copy_begin[k * dp->G + g])
                CUDA_WARN(cudaEventDestroy(t->copy_begin[k * dp->G + g]));
            if (t->copy_end[k * dp->G + g])
                CUDA_WARN(cudaEventDestroy(t->copy_end[k * dp->G + g]));
        }
    }
    if (t->loss)
        CUDA_WARN(cuda_mem_free(t->loss));
    free(t->start);
    free(t->end);
    free(t->copy_begin);
    free(t->copy_end);
    free(t->loss_host);
    free(t->steps);
    free(t->copies);
    memset(t, 0, sizeof *t);
}

/* The ring of event sets: a batch's set is reused 2 x depth batches later.
 * The copy thread fills batch j once batch j - depth is released, which is
 * after step j - depth began, by when batch j - 2 depth was read (step_read).
 * The events the host waits on block it or spin as dp->blocking says. */
static int ring_create(struct cuda_dp *dp, struct error *e)
{
    struct timeline *t = &dp->tl;
    size_t R = 2 * (size_t)dp->pipe.depth, G = (size_t)dp->G;
    unsigned waited = dp->blocking ? cudaEventBlockingSync : cudaEventDefault;
    t->start = calloc(R, sizeof *t->start);
    t->end = calloc(R, sizeof *t->end);
    t->copy_begin = calloc(R * G, sizeof *t->copy_begin);
    t->copy_end = calloc(R * G, sizeof *t->copy_end);
    if (!t->start || !t->end || !t->copy_begin || !t->copy_end)
        return error_set(e, "out of memory");
    t->ring = (int)R; // from here timeline_free walks the (zeroed) event arrays
    for (size_t k = 0; k < R; k++) {
        CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
        CUDA_CHECK(cudaEventCreate(&t->start[k]));
        CUDA_CHECK(cudaEventCreateWithFlags(&t->end[k], waited));
        for (size_t g = 0; g < G; g++) {
            CUDA_CHECK(cudaSetDevice(dp->gpus[g].id));
            CUDA_CHECK(cudaEventCreate(&t->copy_begin[k * G + g]));
            CUDA_CHECK(cudaEventCreateWithFlags(&t->copy_end[k * G + g], waited));
        }
    }
    return 0;
}

/* The event ring, and for n batches per epoch the intervals read from it
 * and the loss slots. The loader's batch count does not change in a run. */
int cuda_timeline_reserve(struct cuda_dp *dp, long n, struct error *e)
{
    struct timeline *t = &dp->tl;
    if (!t->ring && ring_create(dp, e))
        return -1;
    t->read = 0;
    if (t->cap >= n)
        return 0;
    free(t->loss_host);
    free(t->steps);
    free(t->copies);
    if (t->loss)
        CUDA_WARN(cuda_mem_free(t->loss));
    t->loss = NULL;
    size_t nb = (size_t)n;
    t->loss_host = malloc(nb * sizeof *t->loss_host);
    t->steps = malloc(2 * nb * sizeof *t->steps);
    t->copies = malloc(2 * nb * (size_t)dp->G * sizeof *t->copies);
    t->cap = 0;
    if (!t->loss_host || !t->steps || !t->copies)
        return error_set(e, "out of memory for %ld batches", n);
    CUDA_CHECK(cudaSetDevice(dp->reps[0].dev));
    CUDA_CHECK(cuda_mem_alloc((void **)&t->loss, nb * sizeof(float)));
    t->cap = n;
    return 0;
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

int cuda_set(const struct cuda_dp *dp, long k) { return (int)(k % dp->tl.ring); }

int cuda_timeline_read(struct cuda_dp *dp, long upto, struct error *e)
{
    struct timeline *t = &dp->tl;
    for (; t->read < upto; t->read++) {
        long k = t->read;
        int set = (int)(k % t->ring);
        if (interval_ms(dp, 0, t->start[set], t->end[set], &t->steps[2 * k], e))
            return -1;
        for (int g = 0; g < dp->G; g++)
            if (interval_ms(dp, g, t->copy_begin[set * dp->G + g], t->copy_end[set * dp->G + g],
                            &t->copies[2 * ((size_t)g * (size_t)t->cap + (size_t)k)], e))
                return -1;
    }
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
    cudaEvent_t begin = dp->tl.copy_begin[cuda_set(dp, k) * dp->G + g];
    CUDA_CHECK(cudaEventRecord(begin, dp->gpus[g].copy));
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
        CUDA_CHECK(cudaEventRecord(dp->tl.copy_end[cuda_set(dp, k) * G + g], dp->gpus[g].copy));
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
        CUDA_CHECK(cudaEventSynchronize(dp->tl.copy_end[cuda_set(dp, k) * dp->G + g]));
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
    CUDA_CHECK(cudaEventSynchronize(dp->tl.end[cuda_set(dp, k)]));
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

