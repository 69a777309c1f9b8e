/* dpbench --allreduce-bandwidth: the run's comm engine summing float
 * buffers of growing size across the ranks, timed and checked the way
 * nccl-tests' all_reduce_perf does: size, count, time per call, algbw =
 * size / time, busbw = algbw x 2(W-1)/W, and #wrong, the elements that differ
 * from the expected sum on any rank. The buffers are in the memory the
 * engine sums (comm_buffer): the host's for mpi, the rank's GPU for nccl
 * (its local rank's, or its entry of parallel.devices; the calls on the
 * engine's own stream). */
#include "allreduce_bw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signals.h"

#define MAX_BYTES ((size_t)32 << 20)

/* Element i of rank r's buffer: small integers, so every sum is exact. */
static float value(int rank, size_t i) { return (float)((rank + 1) * (long)(i % 7 + 1)); }

/* On rank 0: the ranks' mean of *sec and total of *wrong (a gather: a
 * device engine's sum takes device memory only). */
static int across(struct comm *c, double *sec, double *wrong, struct error *e)
{
    double mine[2] = {*sec, *wrong}, *all = NULL;
    if (c->rank == 0 && !(all = calloc(2 * (size_t)c->world, sizeof *all)))
        return error_set(e, "out of memory");
    int rc = comm_gather(c, mine, sizeof mine, all, e);
    for (int r = 1; c->rank == 0 && !rc && r < c->world; r++) {
        mine[0] += all[2 * r];
        mine[1] += all[2 * r + 1];
    }
    *sec = mine[0] / c->world;
    *wrong = mine[1];
    free(all);
    return rc;
}

/* One size: seconds per call and elements off the expected sum, through
 * the engine's buffer buf and the host's h; 1 when a rank was asked to stop
 * (SIGINT, SIGTERM): the ranks agree on it before the size starts. */
static int one_size(struct comm *c, float *buf, float *h, size_t n, long iters, double *sec,
                    double *wrong, struct error *e)
{
    double ranks_sum = (double)c->world * (c->world + 1) / 2;
    long stop = 0;
    memset(h, 0, n * sizeof(float)); // sums of zeros while timing: the values stay finite
    int rc = comm_buffer_put(c, buf, h, n, e);
    for (int k = 0; k < 5 && !rc; k++)
        rc = comm_sum(c, buf, n, e);
    rc = rc ? rc : comm_max(c, stop_requested(), &stop, e); // all ranks start together
    if (!rc && stop)
        return 1;
    double t0 = now_seconds();
    for (long k = 0; k < iters && !rc; k++)
        rc = comm_sum(c, buf, n, e);
    *sec = (now_seconds() - t0) / (double)iters;
    for (size_t i = 0; i < n; i++) // the checked call
        h[i] = value(c->rank, i);
    if (rc || comm_buffer_put(c, buf, h, n, e) || comm_sum(c, buf, n, e) ||
        comm_buffer_get(c, h, buf, n, e))
        return -1;
    *wrong = 0;
    for (size_t i = 0; i < n; i++)
        *wrong += h[i] != (float)((double)(i % 7 + 1) * ranks_sum);
    return across(c, sec, wrong, e);
}

int allreduce_bandwidth(struct comm *c, struct allreduce_table *t, struct error *e)
{
    size_t max_n = MAX_BYTES / sizeof(float);
    float *h = malloc(max_n * sizeof(float)), *buf = h ? comm_buffer(c, max_n, e) : NULL;
    if (!h || !buf) {
        free(h);
        return h ? -1 : error_set(e, "out of memory (%zu bytes)", MAX_BYTES);
    }
    *t = (struct allreduce_table){.engine = c->name, .world = c->world};
    snprintf(t->memory, sizeof t->memory, "host memory");
    if (c->device >= 0 && comm_engine_device_memory(c->name))
        snprintf(t->memory, sizeof t->memory, "device memory (GPU %d)", c->device);
    int rc = 0, W = c->world;
    const char *before = signals_phase("timing the allreduce sizes");
    for (size_t n = 1; n <= max_n && !rc && t->n < ALLREDUCE_MAX_ROWS; n *= 4) {
        size_t bytes = n * sizeof(float);
        long iters = (long)((1 << 24) / bytes);
        iters = iters < 10 ? 10 : iters > 1000 ? 1000 : iters;
        double sec = 0, wrong = 0;
        if ((rc = one_size(c, buf, h, n, iters, &sec, &wrong, e)) > 0)
            t->interrupted = true, rc = 0;
        if (rc || t->interrupted)
            break;
        double algbw = (double)bytes / sec / 1e9;
        struct allreduce_row *row = &t->rows[t->n++];
        *row = (struct allreduce_row){.bytes = bytes, .count = n, .iters = iters, .seconds = sec,
                                      .algbw = algbw, .busbw = algbw * 2.0 * (W - 1) / W,
                                      .wrong = wrong};
        if (row->busbw > t->best_busbw) {
            t->best_busbw = row->busbw;
            t->best_bytes = bytes;
        }
    }
    signals_phase(before);
    comm_buffer_free(c, buf);
    free(h);
    return rc;
}
