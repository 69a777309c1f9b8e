/* OpenBLAS threads chosen by measurement. Giving OpenBLAS every free core is
 * not always faster: for the large config's shapes (256-row chunks,
 * 256 -> 16) two threads run the step's sgemm calls ~1.5x slower than one on
 * a 2-core machine, because splitting so small a product costs more in
 * hand-offs than it saves. So each run times its own shapes at a few thread
 * counts before training and keeps the fastest. */
#include "blas_tune.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

int blas_work_init(struct blas_work *bw, int features, int out_features, long rows,
                   struct error *e)
{
    memset(bw, 0, sizeof *bw);
    bw->F = features;
    bw->O = out_features;
    bw->rows = rows > 0 ? rows : 1;
    size_t F = (size_t)features, O = (size_t)out_features, R = (size_t)bw->rows;
    bw->x = malloc(R * F * sizeof(float));
    bw->w = malloc((O * F + O) * sizeof(float));
    bw->g = malloc((O * F + O) * sizeof(float));
    bw->out = malloc(R * O * sizeof(float));
    bw->ones = malloc(R * sizeof(float));
    if (!bw->x || !bw->w || !bw->g || !bw->out || !bw->ones) {
        blas_work_free(bw);
        return error_set(e, "out of memory for the BLAS timing buffers (%ld x %d)", rows,
                         features);
    }
    /* small values that stay finite however often the step repeats */
    for (size_t i = 0; i < R * F; i++)
        bw->x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < O * F + O; i++)
        bw->w[i] = (float)((i * 104729) % 1000) * 1e-4f;
    for (size_t i = 0; i < R; i++)
        bw->ones[i] = 1.0f;
    return 0;
}

void blas_work_free(struct blas_work *bw)
{
    free(bw->x);
    free(bw->w);
    free(bw->g);
    free(bw->out);
    free(bw->ones);
    memset(bw, 0, sizeof *bw);
}

/* The calls of one replica's step on the host backend, in its order. */
static void step_blas(struct blas_work *bw, int rows)
{
    int F = bw->F, O = bw->O, P = O * F + O;
    const float *b = bw->w + O * F;
    for (int i = 0; i < rows; i++)
        memcpy(bw->out + (size_t)i * O, b, (size_t)O * sizeof(float));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, O, F, 1.0f, bw->x, F, bw->w, F,
                1.0f, bw->out, O);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, F, rows, 1.0f, bw->out, O, bw->x, F,
                0.0f, bw->g, F);
    cblas_sgemv(CblasRowMajor, CblasTrans, rows, O, 1.0f, bw->out, O, bw->ones, 1, 0.0f,
                bw->g + O * F, 1);
    cblas_saxpy(P, -1e-6f, bw->g, 1, bw->w, 1);
}

double blas_work_seconds(struct blas_work *bw, long rows)
{
    int r = (int)(rows < bw->rows ? rows : bw->rows);
    step_blas(bw, r); // warm: caches, OpenBLAS's buffers and threads
    step_blas(bw, r);
    /* repeat in groups of >= 100 us so the clock's grain does not count,
     * and keep the best of 3 groups: the least disturbed by other work */
    double t0 = now_seconds();
    step_blas(bw, r);
    double one = now_seconds() - t0;
    long reps = one > 0 ? (long)(1e-4 / one) + 1 : 1000;
    if (reps > 10000)
        reps = 10000;
    double best = one;
    for (int k = 0; k < 3; k++) {
        t0 = now_seconds();
        for (long i = 0; i < reps; i++)
            step_blas(bw, r);
        double t = (now_seconds() - t0) / (double)reps;
        if (t < best)
            best = t;
    }
    return best;
}

int blas_choose_threads(int features, int out_features, long rows, int max_threads,
                        struct blas_choice *out, struct error *e)
{
    memset(out, 0, sizeof *out);
    out->threads = 1;
    if (max_threads < 1)
        max_threads = 1;
    struct blas_work bw;
    if (blas_work_init(&bw, features, out_features, rows, e))
        return -1;
    int best = 0;
    for (int t = 1;;) {
        openblas_set_num_threads(t);
        int n = out->n_tried++;
        out->tried[n] = t;
        out->seconds[n] = blas_work_seconds(&bw, rows);
        if (out->seconds[n] < 0.95 * out->seconds[best])
            best = n;
        if (t >= max_threads || out->n_tried == BLAS_TUNE_MAX)
            break;
        t = 2 * t < max_threads ? 2 * t : max_threads;
    }
    out->threads = out->tried[best];
    blas_work_free(&bw);
    openblas_set_num_threads(out->threads);
    return 0;
}
