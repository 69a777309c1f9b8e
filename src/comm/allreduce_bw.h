/* dpbench --allreduce-bandwidth: an allreduce size sweep on the run's comm
 * engine, measured and checked the way nccl-tests' all_reduce_perf does;
 * the caller renders the table (report_allreduce_text). */
#ifndef DPBENCH_ALLREDUCE_BW_H
#define DPBENCH_ALLREDUCE_BW_H

#include <stddef.h>

#include "comm.h"

enum { ALLREDUCE_MAX_ROWS = 16 };

/* One buffer size: float sums in place across the ranks. */
struct allreduce_row {
    size_t bytes, count; // buffer size (B) and elements
    long iters;          // timed calls after 5 warm-up calls
    double seconds;      // mean over the ranks of the mean call
    double algbw, busbw; // GB/s: bytes / seconds, and x 2(W-1)/W
    double wrong;        // elements off the expected sum, all ranks
};

struct allreduce_table {
    const char *engine; // the comm engine's name
    int world;          // ranks
    char memory[64];    // where the buffers are: "host memory", "device memory (GPU 1)"
    struct allreduce_row rows[ALLREDUCE_MAX_ROWS]; // (n) growing sizes
    int n;
    double best_busbw;  // GB/s, and the size it was reached at
    size_t best_bytes;
    bool interrupted;   // a signal ended the sweep: the rows are the sizes measured before it
};

/* The sweep over sizes from 4 B to 32 MiB, every rank taking part, in the
 * memory the engine sums (the rank's device bound first: comm_bind); t's
 * times and #wrong are the ranks' on rank 0. A stop request on any rank ends
 * it on all before the next size (t->interrupted). */
int allreduce_bandwidth(struct comm *c, struct allreduce_table *t, struct error *e);

#endif
