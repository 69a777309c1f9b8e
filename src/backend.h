/* The interface every compute backend fills: one `const struct backend` per
 * backend file (backend_cpu.c, backend_cuda.c). The training loop calls only
 * through it and never sees CUDA types.
 *
 * Per batch the loop calls next -> step -> release; `step` is one whole
 * DataParallel step (scatter, replicate, parallel forward, gather, loss,
 * backward, reduce-add, SGD). A backend with an asynchronous copy pipeline
 * takes batches from the loader ahead of `next`; one without simply forwards
 * to the loader. */
#ifndef DPBENCH_BACKEND_H
#define DPBENCH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "loader.h"
#include "util.h"

struct backend_setup {
    int features, out_features;
    long batch_size;        // largest batch
    int replicas;
    const long *device_ids; // (replicas) device of each replica (cuda), NULL on cpu
    bool pin_memory, async_copy;
    int copy_depth;         // device buffers in the async ring
    int compute_cores;      // host cores left for compute after the loader's workers
    const float *w0;        // (out_features, features) initial weight
    const float *b0;        // (out_features) initial bias
};

struct epoch_stats {
    double wait_s;     // seconds the training loop blocked waiting for its next batch
    double copy_s;     // seconds of host-to-device copies (0 on the cpu)
    double compute_s;  // seconds of DataParallel steps
    double copy_bytes; // bytes copied host-to-device
    double hidden_s;   // copy seconds that overlapped compute (async copy)
    double host_s;     // host seconds spent issuing device work in step and release,
                       // waits excluded (cuda); 0 where the step computes on the host
    double loss_sum;   // sum over batches of (mean loss * rows)
    long samples;      // rows trained on
};

struct backend {
    const char *name;
    /* 0 when the backend can run here, else -1 with the cause. */
    int (*probe)(struct error *e);
    /* One line naming the devices and driver/runtime versions, "" if none. */
    void (*describe)(char *buf, size_t n);
    /* Host memory for the loader's batch pool. */
    void *(*host_alloc)(size_t bytes, bool pinned, struct error *e);
    void (*host_free)(void *p, bool pinned);

    /* Checks device memory against the setup before allocating any. */
    int (*init)(void **ctx, const struct backend_setup *s, struct error *e);
    int (*epoch_begin)(void *ctx, struct loader *l, struct error *e);
    /* 1 with *b set, 0 at the epoch's end, -1 on error. */
    int (*next)(void *ctx, struct loader *l, struct batch **b, struct epoch_stats *st,
                struct error *e);
    /* One DataParallel step on b; split[r] = rows replica r ran. */
    int (*step)(void *ctx, struct batch *b, float lr, long *split, struct epoch_stats *st,
                struct error *e);
    void (*release)(void *ctx, struct loader *l, struct batch *b);
    /* Completes the epoch's outstanding work and its timings. */
    int (*epoch_end)(void *ctx, struct epoch_stats *st, struct error *e);
    /* Copies replica 0's parameters out: w (out, in), b (out). */
    int (*params)(void *ctx, float *w, float *b, struct error *e);
    void (*free)(void *ctx);
    /* Optional (NULL on the cpu): prints a host-to-device bandwidth table,
     * pinned vs pageable, for dpbench --h2d-bandwidth. */
    int (*bandwidth)(FILE *out, struct error *e);
};

extern const struct backend backend_cpu;
#ifdef DPBENCH_HAVE_CUDA
extern const struct backend backend_cuda;
#endif

/* The backend for a parallel.device name ("cpu", "cuda"); NULL if not built. */
const struct backend *backend_find(const char *name);
/* Space-separated names of the backends compiled in. */
const char *backend_list(void);

#endif
