/* The interface every compute backend fills: one `const struct backend` per
 * backend file (backend_cpu.c, backend_cuda.c). The training loop calls only
 * through it and never sees CUDA types.
 *
 * Per batch the loop calls next -> a step of step.c -> release. The steps
 * (DataParallel's and DDP's) are written once, in step.c, over the small
 * table of per-device primitives below (`struct device_ops`); a backend fills
 * the primitives and moves batches to its devices. A backend with an
 * asynchronous copy pipeline takes batches from the loader ahead of `next`;
 * one without forwards to the loader. */
#ifndef DPBENCH_BACKEND_H
#define DPBENCH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "loader.h"
#include "loss.h"
#include "util.h"

struct backend_setup {
    int features, out_features;
    long batch_size;        // largest batch
    int replicas;
    const long *device_ids; // (replicas) device of each replica (cuda), NULL on cpu
    bool pin_memory, async_copy;
    int copy_depth;         // device buffers in the async ring
    int spare_cores;        // host cores the loader's workers leave (0 or less: none)
    int compute_cores;      // of those, for compute: spare_cores, at least 1
    int blas_threads;       // OpenBLAS threads per replica, measured (blas_tune.c); cpu only
    int blas_lib;           // enum hostmm_lib: the step's products' library, measured; cpu only
    const float *w0;        // (out_features, features) initial weight
    const float *b0;        // (out_features) initial bias
    bool classify;          // labelled data: count correct predictions
    const struct config_emulate *emulate; // the emulated device's timing (emulated only)
};

struct epoch_stats {
    double wait_s;     // seconds the training loop blocked waiting for its next batch
    double copy_s;     // seconds of host-to-device copies (0 on the cpu)
    double compute_s;  // seconds of DataParallel steps
    double copy_bytes; // bytes copied host-to-device
    double hidden_s;   // copy seconds that overlapped compute (async copy)
    double allreduce_s; // seconds in the gradient allreduce's engine call (ddp)
    double allreduce_wait_s; // of those, waiting for the last rank to arrive (ddp)
    double host_s;     // host seconds spent issuing device work in step and release,
                       // waits excluded (cuda); 0 where the step computes on the host
    double engine_compute_s; // emulated: compute engines' busy seconds, summed over devices
    double p2p_s;      // emulated: seconds of the gradient reduce between devices
    double load_s;     // seconds the loader spent filling batches, summed over the
                       // threads that filled them (the pipeline model's input: train.c)
    double loss_sum;   // sum over batches of (mean loss * rows)
    long nonfinite;    // a backend that reads the losses at the epoch's end (cuda): 1 + the
                       // first batch whose loss was nan or infinite, loss_sum summed up to it;
                       // 0 where none was (or the losses were read per batch)
    long samples;      // rows trained on
    long correct;      // rows whose prediction matched the label (labelled data)
};

/* What `next` hands the training loop, on every backend: a batch already
 * scattered by torch.chunk's rule, each chunk in its replica's memory. */
struct step_batch {
    long index;            // position in the epoch
    long rows;             // samples in the batch
    int active;            // replicas with a chunk (<= replicas)
    const long *split;     // (replicas) rows of each replica's chunk, 0 past `active`
    float *const *x;       // (replicas) x[i]: (split[i], F) replica i's chunk, in its memory
    const float *y;        // (rows, O) targets, in replica 0's memory
};

struct loss_fn;
struct h2d_profile; // emulate_profile.h

/* Per-device primitives the steps are written over. `q` names the replica
 * whose queue runs the call: calls on one queue run in order; fork and join
 * order the queues against replica 0's. Every call may return before its
 * work is done (a GPU stream), or run it at once, or (between fork and join)
 * run the replicas' calls side by side (the cpu's replica threads). Memory
 * belongs to a replica (`r`). Hooks marked optional stay NULL where the
 * default (host memory, work done at once) is right. */
struct device_ops {
    /* out (rows, O) = x (rows, F) · wᵀ + b, with w = (O, F) then b (O) */
    int (*forward)(void *ctx, int q, const float *x, long rows, const float *w, float *out,
                   struct error *e);
    /* g = alpha (doutᵀ · x, doutᵀ · 1): weight (O, F) then bias (O) gradient */
    int (*backward)(void *ctx, int q, const float *x, const float *dout, long rows, float alpha,
                    float *g, struct error *e);
    /* n floats from src (replica src_r's memory) to dst (dst_r's) */
    int (*copy)(void *ctx, int q, float *dst, int dst_r, const float *src, int src_r, size_t n,
                struct error *e);
    int (*axpy)(void *ctx, int q, size_t n, float alpha, const float *x, float *y,
                struct error *e); // y += alpha x
    int (*scal)(void *ctx, int q, size_t n, float alpha, float *x, struct error *e); // x *= alpha
    /* Queues 1..n-1 wait for what replica 0's queue holds so far; join:
     * replica 0's queue waits for theirs. */
    int (*fork)(void *ctx, int n, struct error *e);
    int (*join)(void *ctx, int n, struct error *e);

    /* optional: loss of batch k on replica 0's queue, into d; the backend
     * keeps the raw sum and adds it to epoch_stats.loss_sum by epoch_end.
     * Default: loss->host at once, on host memory. */
    int (*loss)(void *ctx, const struct loss_fn *loss, long k, const float *out, const float *y,
                long rows, float *d, struct error *e);
    /* optional: brackets of a step (device timing, back-pressure). Without
     * `end`, the step's host wall time is its compute time. */
    int (*begin)(void *ctx, const struct step_batch *b, struct error *e);
    int (*end)(void *ctx, const struct step_batch *b, struct epoch_stats *st, struct error *e);
    /* optional memory of replica r (default: host memory) */
    float *(*alloc)(void *ctx, int r, size_t n, struct error *e);
    void (*release)(void *ctx, int r, float *p);
    int (*upload)(void *ctx, int r, float *dst, const float *src, size_t n, struct error *e);
    /* waits for replica r's queue, then copies to the host */
    int (*download)(void *ctx, int r, float *dst, const float *src, size_t n, struct error *e);
    /* optional: replica a can read replica b's memory directly (default: yes) */
    bool (*shares_memory)(void *ctx, int a, int b);
    /* optional: waits for every queue (before teardown) */
    void (*sync)(void *ctx);
    /* optional: replica q's queue as the device library knows it (the CUDA
     * stream a collective on its memory must be queued on) */
    void *(*queue)(void *ctx, int q);
};

struct backend {
    const char *name;
    bool device_memory; // parameters and batches live in device memory, not the host's
    /* Batches are copied into a device's own memory, so pin_memory,
     * async_copy and copy_depth act (effect.c); false on the cpu. */
    bool device_copies;
    bool host_math;    // the step's math runs on this host's BLAS (threads tuned by train.c)
    bool emulated;     // the device's times are modelled (emulate.*), not measured
    /* Replicas run on numbered devices that parallel.devices' ids name; false
     * where they are threads of this host (parallel.replicas counts them). */
    bool has_devices;
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
    int (*next)(void *ctx, struct loader *l, struct step_batch **b, struct epoch_stats *st,
                struct error *e);
    void (*release)(void *ctx, struct loader *l, struct step_batch *b);
    /* Completes the epoch's outstanding work and its timings. */
    int (*epoch_end)(void *ctx, struct epoch_stats *st, struct error *e);
    void (*free)(void *ctx);
    const struct device_ops *ops;
    /* Optional (NULL on the cpu): prints a host-to-device bandwidth table,
     * pinned vs pageable, for dpbench --h2d-bandwidth, and fills prof
     * (device line and rows) unless it is NULL. */
    int (*bandwidth)(FILE *out, struct h2d_profile *prof, struct error *e);
};

extern const struct backend backend_cpu;
extern const struct backend backend_emulated;
#ifdef DPBENCH_HAVE_CUDA
extern const struct backend backend_cuda;
#endif

/* backends.c's table, the only list of backends. */
/* The backend for a parallel.device name; NULL if this build has none. */
const struct backend *backend_find(const char *name);
/* The table's i-th name (built or not), NULL past the last: parallel.device's values. */
const char *backend_name(size_t i);
/* The table's i-th backend: NULL where this build does not have it, or past the last. */
const struct backend *backend_at(size_t i);
/* Space-separated names of the backends compiled in (--version). */
const char *backend_list(void);
/* parallel.device auto: the first of the table's auto candidates that can
 * run here; else the cpu, with why (n bytes) saying why the first candidate
 * cannot run ("" when one could). */
const struct backend *backend_auto(char *why, size_t n);

#endif
