/* The step's library and OpenBLAS threads chosen by measurement. Giving
 * OpenBLAS every free core is not always faster: for the large config's
 * shapes (256-row chunks, 256 -> 16) two threads ran the step's sgemm calls
 * ~1.5x slower than one on a 2-core machine, because splitting so small a
 * product costs more in hand-offs than it saves; and libxsmm's kernels made
 * for the exact shape ran them faster than OpenBLAS on any thread count. So
 * each run times its own shapes before training and keeps the fastest. */
#include "blas_tune.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "rlimits.h"

int blas_work_init(struct blas_work *bw, int features, int out_features, long rows,
                   enum hostmm_lib lib, struct error *e)
{
    memset(bw, 0, sizeof *bw);
    bw->F = features;
    bw->O = out_features;
    bw->rows = rows > 0 ? rows : 1;
    size_t F = (size_t)features, O = (size_t)out_features, R = (size_t)bw->rows;
    bw->x = floats_alloc(R * F);
    bw->w = floats_alloc(O * F + O);
    bw->g = floats_alloc(O * F + O);
    bw->out = floats_alloc(R * O);
    if (!bw->x || !bw->w || !bw->g || !bw->out ||
        hostmm_init(&bw->mm, lib, features, out_features, bw->rows, e)) {
        blas_work_free(bw);
        return error_set(e, "out of memory for the BLAS timing buffers (%ld x %d)", rows,
                         features);
    }
    /* small values that stay finite however often the step repeats */
    for (size_t i = 0; i < R * F; i++)
        bw->x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < O * F + O; i++)
        bw->w[i] = (float)((i * 104729) % 1000) * 1e-4f;
    return 0;
}

void blas_work_free(struct blas_work *bw)
{
    free(bw->x);
    free(bw->w);
    free(bw->g);
    free(bw->out);
    hostmm_free(&bw->mm);
    memset(bw, 0, sizeof *bw);
}

/* The calls of one replica's step on the host backend, in its order. */
static void step_blas_on(struct blas_work *bw, const float *x, int rows)
{
    int P = bw->O * bw->F + bw->O;
    hostmm_forward(&bw->mm, x, rows, bw->w, bw->out);
    hostmm_backward(&bw->mm, x, bw->out, rows, 1.0f, bw->g);
    cblas_saxpy(P, -1e-6f, bw->g, 1, bw->w, 1);
}

static void step_blas(struct blas_work *bw, int rows)
{
    step_blas_on(bw, bw->x, rows);
}

/* Repetitions of the step making a group of >= 100 us, so that the clock's
 * grain does not count. */
static long group_reps(struct blas_work *bw, int r)
{
    step_blas(bw, r); // warm: caches, the library's buffers, threads, kernels
    step_blas(bw, r);
    double t0 = now_seconds();
    step_blas(bw, r);
    double one = now_seconds() - t0;
    long reps = one > 0 ? (long)(1e-4 / one) + 1 : 1000;
    return reps > 10000 ? 10000 : reps;
}

/* The best of 3 groups: the least disturbed by other work. With `bar`, every
 * group starts together with the other replicas'. */
static double best_group(struct blas_work *bw, int r, long reps, pthread_barrier_t *bar)
{
    double best = INFINITY;
    for (int k = 0; k < 3; k++) {
        if (bar)
            pthread_barrier_wait(bar);
        double t0 = now_seconds();
        for (long i = 0; i < reps; i++)
            step_blas(bw, r);
        best = fmin(best, (now_seconds() - t0) / (double)reps);
    }
    return best;
}

void blas_work_run(struct blas_work *bw, const float *x, long rows)
{
    step_blas_on(bw, x, (int)(rows < bw->rows ? rows : bw->rows));
}

double blas_work_seconds(struct blas_work *bw, long rows)
{
    int r = (int)(rows < bw->rows ? rows : bw->rows);
    return best_group(bw, r, group_reps(bw, r), NULL);
}

struct side {
    struct blas_work bw;
    int rows;
    long reps;
    pthread_barrier_t *bar;
    atomic_int *gate; // 0: wait, 1: run, -1: leave (another thread failed to start)
    double seconds;
};

static void *side_main(void *arg)
{
    struct side *s = arg;
    int g;
    while ((g = atomic_load(s->gate)) == 0)
        sched_yield();
    if (g > 0) {
        step_blas(&s->bw, s->rows); // warm this thread's kernels
        s->seconds = best_group(&s->bw, s->rows, s->reps, s->bar);
    }
    return NULL;
}

/* Seconds per step of `n` replicas running the step side by side, each on
 * its own buffers and thread, as the cpu backend runs them: the slowest one's.
 * A library that serialises concurrent calls (OpenBLAS takes a global lock
 * to hand out its buffers) shows here, not in a lone replica's timing. */
static int side_by_side(int features, int out_features, long rows, enum hostmm_lib lib, int n,
                        double *seconds, struct error *e)
{
    struct side s[n];
    memset(s, 0, sizeof s);
    pthread_t t[n];
    pthread_barrier_t bar;
    atomic_int gate = 0;
    int rc = 0, started = 1;
    for (int i = 0; i < n && rc == 0; i++)
        rc = blas_work_init(&s[i].bw, features, out_features, rows, lib, e);
    if (rc == 0) {
        pthread_barrier_init(&bar, NULL, (unsigned)n);
        long reps = group_reps(&s[0].bw, (int)s[0].bw.rows);
        for (int i = 0; i < n; i++) {
            s[i].rows = (int)s[i].bw.rows;
            s[i].reps = reps;
            s[i].bar = n > 1 ? &bar : NULL;
            s[i].gate = &gate;
        }
        for (; started < n; started++)
            if ((rc = thread_start(&t[started], side_main, &s[started])) != 0) {
                rlimits_thread_error(e, rc, "parallel.replicas",
                                    "cannot start a BLAS timing thread");
                break;
            }
        atomic_store(&gate, rc ? -1 : 1);
        if (rc == 0) {
            threads_pin_apart(t + 1, n - 1);
            side_main(&s[0]);
        }
        for (int i = 1; i < started; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&bar);
    }
    *seconds = 0;
    for (int i = 0; i < n; i++) {
        *seconds = fmax(*seconds, s[i].seconds);
        blas_work_free(&s[i].bw);
    }
    return rc ? -1 : 0;
}

/* Times candidate n (a new one at n == out->n_tried): `threads` OpenBLAS
 * threads and library `lib`, `side` replicas at once; a candidate timed
 * again keeps its least disturbed time. */
static int try_one(struct blas_choice *out, int n, int features, int out_features, long rows,
                   int side, int threads, enum hostmm_lib lib, struct error *e)
{
    double s;
    hostmm_blas_threads(threads);
    if (side_by_side(features, out_features, rows, lib, side, &s, e))
        return -1;
    out->seconds[n] = n < out->n_tried ? fmin(out->seconds[n], s) : s;
    out->tried[n] = threads;
    out->tried_lib[n] = lib;
    out->n_tried += n == out->n_tried;
    return 0;
}

int blas_choose_threads(int features, int out_features, long rows, int max_threads, int side,
                        const char *only, struct blas_choice *out, struct error *e)
{
    bool openblas = !only || strcmp(only, "libxsmm") != 0;
    bool xsmm = !only || strcmp(only, "openblas") != 0;
    if (xsmm && !openblas && !hostmm_have_libxsmm())
        return error_set(e, "parallel.blas: libxsmm is not built into this dpbench or makes no "
                            "kernels on this CPU (build with libxsmm-dev installed, or use "
                            "openblas or auto)");
    memset(out, 0, sizeof *out);
    if (max_threads < 1)
        max_threads = 1;
    if (side < 1)
        side = 1;
    out->side = side;
    for (int t = 1; openblas;) {
        if (try_one(out, out->n_tried, features, out_features, rows, side, t, HOSTMM_OPENBLAS, e))
            return -1;
        if (t >= max_threads || out->n_tried == BLAS_TUNE_MAX - 1)
            break;
        t = 2 * t < max_threads ? 2 * t : max_threads;
    }
    /* libxsmm's first use costs ~7 ms and ~10 MiB (its kernel registry):
     * worth it where the step's products take long enough to matter, or
     * where replicas call them side by side (OpenBLAS's lock) */
    double fastest = INFINITY;
    for (int n = 0; n < out->n_tried; n++)
        fastest = fmin(fastest, out->seconds[n]);
    if (xsmm && (!openblas || side > 1 || fastest >= BLAS_TUNE_XSMM_MIN_SECONDS) &&
        hostmm_have_libxsmm() &&
        try_one(out, out->n_tried, features, out_features, rows, side, 1, HOSTMM_LIBXSMM, e))
        return -1;
    /* Each candidate is timed in BLAS_TUNE_PASSES passes over all of them,
     * keeping its best: a burst of other work that falls on one candidate's
     * groups (it made one thread read 0.60 ms against 0.46 ms in other
     * runs, and two threads won by 6%) does not decide the choice. */
    for (int pass = 1; pass < BLAS_TUNE_PASSES && out->n_tried > 1; pass++)
        for (int n = 0; n < out->n_tried; n++)
            if (try_one(out, n, features, out_features, rows, side, out->tried[n],
                        out->tried_lib[n], e))
                return -1;
    int best = 0;
    for (int n = 1; n < out->n_tried; n++) {
        bool more = out->tried[n] > out->tried[best];
        if (out->seconds[n] < (more ? 0.95 : 1.0) * out->seconds[best])
            best = n;
    }
    out->threads = out->tried[best];
    out->lib = out->tried_lib[best];
    hostmm_blas_threads(out->threads);
    return 0;
}
