/* nn.DataParallel on the CPU: the primitives of step.c's steps on host
 * memory, math through CBLAS. Replica 0 runs on the training thread (it is
 * the "output device" holding the master parameters); replicas 1..N-1 are
 * threads that live for the whole run.
 *
 * Each replica's queue: between fork and join the calls issued to replica q
 * are recorded in its op list; join hands the lists to the replica threads,
 * runs replica 0's list itself and waits for the others. Outside fork/join
 * a call runs at once. So a phase costs one hand-off each way.
 *
 * The hand-off spins briefly before it blocks (a condition variable costs
 * ~10 us each way, more than a tutorial batch's math), but only when every
 * replica thread has a core of its own, and then each replica thread is
 * pinned to a core other than the training thread's: with more replica and
 * loader threads than cores a spinning thread would take the core the
 * others need. */
#include <cblas.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "chunk.h"
#include "hostmm.h"
#include "rlimits.h"

#define SPIN_SECONDS 50e-6 // longest spin before blocking
#define MAX_OPS 8          // calls one replica gets between fork and join (3 in a step)

enum op_kind { OP_FORWARD, OP_BACKWARD, OP_COPY, OP_AXPY, OP_SCAL };

struct cpu_op {
    enum op_kind kind;
    const float *x, *y; // inputs: x, and dout / w / the axpy's x
    float *out;         // output
    long rows;          // forward, backward
    size_t n;           // copy, axpy, scal: floats
    float alpha;
};

struct replica {
    struct cpu_dp *dp;
    int id;
    struct hostmm mm;           // this replica's matrix kernels
    struct cpu_op ops[MAX_OPS]; // this phase's calls, in order
    int n_ops;
    _Alignas(CACHE_LINE) atomic_long go; // bumps when this replica has a phase to run (or must exit);
                                 // on a cache line of its own, as are pending and sleepers
    pthread_t thread;
};

struct cpu_dp {
    int F, O, n;             // features, out_features, replicas
    long batch_max;
    struct replica *reps;    // (n)
    bool recording;          // between fork and join
    bool spin;               // each replica thread has a core: spin before blocking
    /* the batch handed to the loop (one at a time) */
    struct batch *held;      // the loader's
    struct step_batch cur;
    float **x;               // (n) chunk views into held->x
    long *split;             // (n)
    /* phase hand-off to the replica threads */
    pthread_mutex_t mu;
    pthread_cond_t cv_go, cv_done;
    _Alignas(CACHE_LINE) atomic_int pending; // threads still working on this phase
    _Alignas(CACHE_LINE) atomic_int sleepers; // threads blocked (or about to block) on cv_go or cv_done:
                             // only then does a hand-off touch the mutex
    bool exit;
    int threads;             // replica threads started
};

static void *cpu_alloc(size_t bytes, bool pinned, struct error *e)
{
    (void)pinned; // page-locking means nothing without a device to DMA to
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
        error_set(e, "out of memory (%zu bytes)", bytes);
        return NULL;
    }
    return p;
}

static void cpu_free_host(void *p, bool pinned)
{
    (void)pinned;
    free(p);
}

/* ---- the primitives -------------------------------------------------------- */

static void op_run(struct replica *r, const struct cpu_op *op)
{
    switch (op->kind) {
    case OP_FORWARD:
        hostmm_forward(&r->mm, op->x, op->rows, op->y, op->out);
        break;
    case OP_BACKWARD:
        hostmm_backward(&r->mm, op->x, op->y, op->rows, op->alpha, op->out);
        break;
    case OP_COPY:
        memcpy(op->out, op->x, op->n * sizeof(float));
        break;
    case OP_AXPY:
        cblas_saxpy((int)op->n, op->alpha, op->x, 1, op->out, 1);
        break;
    case OP_SCAL:
        cblas_sscal((int)op->n, op->alpha, op->out, 1);
        break;
    }
}

/* Records the call on queue q between fork and join, else runs it now. */
static int op_issue(struct cpu_dp *dp, int q, struct cpu_op op, struct error *e)
{
    struct replica *r = &dp->reps[q];
    if (!dp->recording) { // at once, on this thread: replica q's thread is idle
        op_run(r, &op);
        return 0;
    }
    if (r->n_ops == MAX_OPS)
        return error_set(e, "cpu backend: more than %d calls on replica %d in one phase",
                         MAX_OPS, q);
    r->ops[r->n_ops++] = op;
    return 0;
}

static int cpu_forward(void *ctx, int q, const float *x, long rows, const float *w, float *out,
                       struct error *e)
{
    return op_issue(ctx, q, (struct cpu_op){.kind = OP_FORWARD, .x = x, .y = w, .out = out,
                                            .rows = rows}, e);
}

static int cpu_backward(void *ctx, int q, const float *x, const float *dout, long rows,
                        float alpha, float *g, struct error *e)
{
    return op_issue(ctx, q, (struct cpu_op){.kind = OP_BACKWARD, .x = x, .y = dout, .out = g,
                                            .rows = rows, .alpha = alpha}, e);
}

static int cpu_copy(void *ctx, int q, float *dst, int dst_r, const float *src, int src_r,
                    size_t n, struct error *e)
{
    (void)dst_r, (void)src_r; // one memory
    return op_issue(ctx, q, (struct cpu_op){.kind = OP_COPY, .x = src, .out = dst, .n = n}, e);
}

static int cpu_axpy(void *ctx, int q, size_t n, float alpha, const float *x, float *y,
                    struct error *e)
{
    return op_issue(ctx, q, (struct cpu_op){.kind = OP_AXPY, .x = x, .out = y, .n = n,
                                            .alpha = alpha}, e);
}

static int cpu_scal(void *ctx, int q, size_t n, float alpha, float *x, struct error *e)
{
    return op_issue(ctx, q, (struct cpu_op){.kind = OP_SCAL, .out = x, .n = n, .alpha = alpha},
                    e);
}

static int cpu_fork(void *ctx, int n, struct error *e)
{
    (void)e;
    struct cpu_dp *dp = ctx;
    dp->recording = true;
    for (int i = 0; i < n; i++)
        dp->reps[i].n_ops = 0;
    return 0;
}

static void run_list(struct replica *r)
{
    for (int k = 0; k < r->n_ops; k++)
        op_run(r, &r->ops[k]);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static bool changed(const void *v, long old)
{
    return atomic_load_explicit((atomic_long *)v, memory_order_acquire) != old;
}

static bool all_done(const void *v, long unused)
{
    (void)unused;
    return atomic_load_explicit((atomic_int *)v, memory_order_acquire) == 0;
}

/* Spins up to SPIN_SECONDS (when allowed) until done(v, arg); false if it
 * timed out and the caller must block. Spinning is allowed only when every
 * replica thread has a core of its own (pinned by pin_replicas). */
static bool spin_until(const struct cpu_dp *dp, bool (*done)(const void *, long), const void *v,
                       long arg)
{
    if (!dp->spin)
        return false;
    double t0 = now_seconds();
    for (int k = 1;; k++) {
        if (done(v, arg))
            return true;
        cpu_relax();
        if (k % 256 == 0 && now_seconds() - t0 > SPIN_SECONDS)
            return false;
    }
}

static void *replica_main(void *arg)
{
    struct replica *r = arg;
    struct cpu_dp *dp = r->dp;
    long seen = 0;
    for (;;) {
        if (!spin_until(dp, changed, &r->go, seen)) {
            pthread_mutex_lock(&dp->mu);
            atomic_fetch_add(&dp->sleepers, 1);
            while (atomic_load(&r->go) == seen)
                pthread_cond_wait(&dp->cv_go, &dp->mu);
            atomic_fetch_sub(&dp->sleepers, 1);
            pthread_mutex_unlock(&dp->mu);
        }
        seen = atomic_load_explicit(&r->go, memory_order_acquire);
        if (dp->exit)
            break;
        run_list(r);
        /* seq_cst on both sides: a waiter that counted itself in sleepers
         * before reading pending is seen here, or sees pending reach 0 */
        if (atomic_fetch_sub(&dp->pending, 1) == 1 && atomic_load(&dp->sleepers) > 0) {
            pthread_mutex_lock(&dp->mu);
            pthread_cond_broadcast(&dp->cv_done);
            pthread_mutex_unlock(&dp->mu);
        }
    }
    return NULL;
}

/* Wakes replica threads 1..n-1 for this phase (or to exit); the others,
 * without a chunk of this batch, sleep on. */
static void wake(struct cpu_dp *dp, int n)
{
    for (int i = 1; i < n; i++)
        atomic_fetch_add(&dp->reps[i].go, 1);
    if (atomic_load(&dp->sleepers) > 0) { // else every thread is spinning
        pthread_mutex_lock(&dp->mu);
        pthread_cond_broadcast(&dp->cv_go);
        pthread_mutex_unlock(&dp->mu);
    }
}

/* Runs the recorded lists: threads 1..n-1, replica 0 here, then waits. */
static int cpu_join(void *ctx, int n, struct error *e)
{
    (void)e;
    struct cpu_dp *dp = ctx;
    dp->recording = false;
    if (n > 1) {
        atomic_store(&dp->pending, n - 1);
        wake(dp, n);
    }
    run_list(&dp->reps[0]);
    if (n > 1 && !spin_until(dp, all_done, &dp->pending, 0)) {
        pthread_mutex_lock(&dp->mu);
        atomic_fetch_add(&dp->sleepers, 1);
        while (atomic_load(&dp->pending) > 0)
            pthread_cond_wait(&dp->cv_done, &dp->mu);
        atomic_fetch_sub(&dp->sleepers, 1);
        pthread_mutex_unlock(&dp->mu);
    }
    return 0;
}

/* ---- setup ----------------------------------------------------------------- */

static void cpu_free(void *ctx)
{
    struct cpu_dp *dp = ctx;
    if (!dp)
        return;
    if (dp->threads) {
        pthread_mutex_lock(&dp->mu);
        dp->exit = true;
        pthread_mutex_unlock(&dp->mu);
        wake(dp, dp->threads + 1);
        for (int i = 1; i <= dp->threads; i++)
            pthread_join(dp->reps[i].thread, NULL);
    }
    for (int i = 0; dp->reps && i < dp->n; i++)
        hostmm_free(&dp->reps[i].mm);
    free(dp->reps);
    free(dp->x);
    free(dp->split);
    pthread_mutex_destroy(&dp->mu);
    pthread_cond_destroy(&dp->cv_go);
    pthread_cond_destroy(&dp->cv_done);
    free(dp);
}

static int cpu_init(void **ctx, const struct backend_setup *s, struct error *e)
{
    struct cpu_dp *dp = NULL;
    if (posix_memalign((void **)&dp, CACHE_LINE, sizeof *dp) != 0)
        return error_set(e, "cpu backend: out of memory");
    memset(dp, 0, sizeof *dp);
    dp->F = s->features;
    dp->O = s->out_features;
    dp->n = s->replicas;
    dp->batch_max = s->batch_size;
    pthread_mutex_init(&dp->mu, NULL);
    pthread_cond_init(&dp->cv_go, NULL);
    pthread_cond_init(&dp->cv_done, NULL);
    atomic_init(&dp->pending, 0);
    atomic_init(&dp->sleepers, 0);

    /* chosen by measurement on this run's chunks, at most the replica's
     * share of the cores the loader's workers leave free */
    hostmm_blas_threads(s->blas_threads > 0 ? s->blas_threads : 1);
    dp->spin = dp->n > 1 && dp->n <= s->compute_cores;

    /* cache-line aligned: each thread's hand-off counter on a line of its own */
    if (posix_memalign((void **)&dp->reps, CACHE_LINE, (size_t)dp->n * sizeof *dp->reps) == 0)
        memset(dp->reps, 0, (size_t)dp->n * sizeof *dp->reps);
    else
        dp->reps = NULL;
    dp->x = calloc((size_t)dp->n, sizeof *dp->x);
    dp->split = calloc((size_t)dp->n, sizeof *dp->split);
    if (!dp->reps || !dp->x || !dp->split) {
        cpu_free(dp);
        return error_set(e, "cpu backend: out of memory for %d replicas", s->replicas);
    }
    for (int i = 0; i < dp->n; i++) {
        dp->reps[i].dp = dp;
        dp->reps[i].id = i;
        atomic_init(&dp->reps[i].go, 0);
        if (hostmm_init(&dp->reps[i].mm, s->blas_lib, dp->F, dp->O, dp->batch_max, e)) {
            cpu_free(dp);
            return error_wrap(e, "cpu backend");
        }
    }
    for (int i = 1; i < dp->n; i++) {
        int rc = thread_start(&dp->reps[i].thread, replica_main, &dp->reps[i]);
        if (rc) {
            cpu_free(dp);
            return rlimits_thread_error(e, rc, "parallel.replicas",
                                       "cpu backend: cannot start replica thread %d", i);
        }
        dp->threads = i;
    }
    if (dp->spin) {
        /* each replica thread on a core of its own, away from the training
         * thread's: left to the scheduler, a replica that wakes the training
         * thread is pulled onto its core and the two take turns on one core */
        pthread_t t[dp->n];
        for (int i = 1; i < dp->n; i++)
            t[i - 1] = dp->reps[i].thread;
        threads_pin_apart(t, dp->n - 1);
    }
    *ctx = dp;
    return 0;
}

/* ---- batches ----------------------------------------------------------------- */

/* The loader's batch, scattered: each chunk is a view of its host rows. */
static int cpu_next(void *ctx, struct loader *l, struct step_batch **b, struct epoch_stats *st,
                    struct error *e)
{
    struct cpu_dp *dp = ctx;
    double t0 = now_seconds();
    struct batch *lb;
    int rc = loader_next(l, &lb, e);
    st->wait_s += now_seconds() - t0;
    if (rc != 1)
        return rc;
    int active = chunk_split(lb->rows, dp->n, dp->split);
    for (int i = 0, row = 0; i < active; row += (int)dp->split[i], i++)
        dp->x[i] = lb->x + (size_t)row * dp->F;
    dp->held = lb;
    dp->cur = (struct step_batch){.index = lb->index, .rows = lb->rows, .active = active,
                                  .split = dp->split, .x = dp->x, .y = lb->y};
    *b = &dp->cur;
    return 1;
}

static void cpu_release(void *ctx, struct loader *l, struct step_batch *b)
{
    (void)b;
    struct cpu_dp *dp = ctx;
    loader_release(l, dp->held);
    dp->held = NULL;
}

static int cpu_epoch_begin(void *ctx, struct loader *l, struct error *e)
{
    (void)ctx, (void)l, (void)e;
    return 0;
}

static int cpu_epoch_end(void *ctx, struct epoch_stats *st, struct error *e)
{
    (void)ctx, (void)st, (void)e;
    return 0;
}

static int cpu_probe(struct error *e)
{
    (void)e;
    return 0;
}

static void cpu_describe(char *buf, size_t n) { snprintf(buf, n, "%s", ""); }

static const struct device_ops cpu_ops = {
    .forward = cpu_forward,
    .backward = cpu_backward,
    .copy = cpu_copy,
    .axpy = cpu_axpy,
    .scal = cpu_scal,
    .fork = cpu_fork,
    .join = cpu_join,
};

const struct backend backend_cpu = {
    .name = "cpu",
    .host_math = true,
    .probe = cpu_probe,
    .describe = cpu_describe,
    .host_alloc = cpu_alloc,
    .host_free = cpu_free_host,
    .init = cpu_init,
    .epoch_begin = cpu_epoch_begin,
    .next = cpu_next,
    .release = cpu_release,
    .epoch_end = cpu_epoch_end,
    .free = cpu_free,
    .ops = &cpu_ops,
};
