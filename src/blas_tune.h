/* The host step's BLAS work on the run's own shapes, timed: used to choose
 * the OpenBLAS thread count per run (the fastest measured, not the core
 * count) and by floor.c for the compute part of the floor. */
#ifndef DPBENCH_BLAS_TUNE_H
#define DPBENCH_BLAS_TUNE_H

#include "util.h"

#define BLAS_TUNE_MAX 16 // thread counts tried at most: 1, 2, 4, ... and the largest

/* Buffers for one replica's BLAS work on up to `rows` rows. */
struct blas_work {
    int F, O;        // features, out_features
    long rows;       // largest chunk
    float *x;        // (rows, F) inputs
    float *w;        // (O, F) then (O) weight and bias
    float *g;        // (O, F) then (O) their gradient
    float *out;      // (rows, O) forward output, then its gradient
    float *ones;     // (rows) for the bias gradient
};

int blas_work_init(struct blas_work *bw, int features, int out_features, long rows,
                   struct error *e);
void blas_work_free(struct blas_work *bw);
/* Best seconds of one replica's step BLAS on `rows` rows (forward sgemm,
 * weight-gradient sgemm, bias-gradient sgemv, SGD saxpy), warm, at the
 * current OpenBLAS thread count. */
double blas_work_seconds(struct blas_work *bw, long rows);

struct blas_choice {
    int threads;                      // chosen: OpenBLAS threads per replica
    int n_tried;
    int tried[BLAS_TUNE_MAX];         // (n_tried) thread counts measured
    double seconds[BLAS_TUNE_MAX];    // (n_tried) best seconds per step at each
};

/* Measures 1, 2, 4, ... up to max_threads (and max_threads itself) on
 * `rows`-row chunks, keeps the fastest (a larger count must be more than 5%
 * faster to win: fewer threads leave cores to the loader and the other
 * replicas) and leaves OpenBLAS set to it. */
int blas_choose_threads(int features, int out_features, long rows, int max_threads,
                        struct blas_choice *out, struct error *e);

#endif
