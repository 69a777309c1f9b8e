/* dpbench --allreduce-bandwidth: the run's comm engine summing float
 * buffers of growing size across the ranks, timed and checked the way
 * nccl-tests' all_reduce_perf does: size, count, time per call, algbw =
 * size / time, busbw = algbw x 2(W-1)/W, and #wrong, the elements that differ
 * from the expected sum on any rank. */
#include "allreduce_bw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES ((size_t)32 << 20)

/* Element i of rank r's buffer: small integers, so every sum is exact. */
static float value(int rank, size_t i) { return (float)((rank + 1) * (long)(i % 7 + 1)); }

/* One size: n floats, timed over iters calls, then checked. */
static int measure(struct comm *c, float *buf, size_t n, struct allreduce_row *row,
                   struct error *e)
{
    int W = c->world, rc = 0;
    double ranks_sum = (double)W * (W + 1) / 2;
    size_t bytes = n * sizeof(float);
    long iters = (long)((1 << 24) / bytes);
    iters = iters < 10 ? 10 : iters > 1000 ? 1000 : iters;
    memset(buf, 0, bytes); // sums of zeros while timing: the values stay finite
    for (int k = 0; k < 5 && !rc; k++)
        rc = comm_sum(c, buf, n, e);
    float t[1] = {0};
    rc = rc ? rc : comm_sum(c, t, 1, e); // all ranks start together
    double t0 = now_seconds();
    for (long k = 0; k < iters && !rc; k++)
        rc = comm_sum(c, buf, n, e);
    t[0] = (float)((now_seconds() - t0) / (double)iters);
    for (size_t i = 0; i < n; i++) // the checked call
        buf[i] = value(c->rank, i);
    rc = rc ? rc : comm_sum(c, buf, n, e);
    float wrong[1] = {0};
    for (size_t i = 0; i < n && !rc; i++)
        wrong[0] += buf[i] != (float)((double)(i % 7 + 1) * ranks_sum);
    rc = rc ? rc : comm_sum(c, t, 1, e);
    rc = rc ? rc : comm_sum(c, wrong, 1, e);
    if (rc)
        return rc;
    double sec = t[0] / W, algbw = (double)bytes / sec / 1e9;
    *row = (struct allreduce_row){.bytes = bytes, .count = n, .iters = iters, .seconds = sec,
                                  .algbw = algbw, .busbw = algbw * 2.0 * (W - 1) / W,
                                  .wrong = wrong[0]};
    return 0;
}

int allreduce_bandwidth(struct comm *c, struct allreduce_table *t, struct error *e)
{
    size_t max_n = MAX_BYTES / sizeof(float);
    float *buf = malloc(max_n * sizeof(float));
    if (!buf)
        return error_set(e, "out of memory (%zu bytes)", MAX_BYTES);
    *t = (struct allreduce_table){.engine = c->name, .world = c->world};
    int rc = 0;
    for (size_t n = 1; n <= max_n && !rc && t->n < ALLREDUCE_MAX_ROWS; n *= 4) {
        struct allreduce_row *row = &t->rows[t->n];
        if ((rc = measure(c, buf, n, row, e)) != 0)
            break;
        t->n++;
        if (row->busbw > t->best_busbw) {
            t->best_busbw = row->busbw;
            t->best_bytes = row->bytes;
        }
    }
    free(buf);
    return rc;
}
