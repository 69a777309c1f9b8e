/* The host step's BLAS work on the run's own shapes, timed: used to choose
 * the library (OpenBLAS or libxsmm, hostmm.h) and OpenBLAS's thread count per
 * run (the fastest measured, not the core count) and by floor.c for the
 * compute part of the floor. */
#ifndef DPBENCH_BLAS_TUNE_H
#define DPBENCH_BLAS_TUNE_H

#include "hostmm.h"
#include "util.h"

#define BLAS_TUNE_MAX 16 // candidates at most: OpenBLAS at 1, 2, 4, ... and the largest
                         // thread count, then libxsmm (one thread)
#define BLAS_TUNE_PASSES 3 // passes over the candidates, each keeping its best
#define BLAS_TUNE_XSMM_MIN_SECONDS 10e-6 // libxsmm is tried for steps at least this long
                                         // on OpenBLAS, or replicas side by side

/* Buffers for one replica's BLAS work on up to `rows` rows. */
struct blas_work {
    int F, O;        // features, out_features
    long rows;       // largest chunk
    float *x;        // (rows, F) inputs
    float *w;        // (O, F) then (O) weight and bias
    float *g;        // (O, F) then (O) their gradient
    float *out;      // (rows, O) forward output, then its gradient
    struct hostmm mm;
};

int blas_work_init(struct blas_work *bw, int features, int out_features, long rows,
                   enum hostmm_lib lib, struct error *e);
void blas_work_free(struct blas_work *bw);
/* Best seconds of one replica's step BLAS on `rows` rows (forward,
 * backward, SGD saxpy), warm, in bw's library at the current OpenBLAS
 * thread count. */
double blas_work_seconds(struct blas_work *bw, long rows);
/* One replica's step BLAS on `rows` rows of x (rows, F), once: report.floor's
 * overlapped epoch, on the batch a worker just delivered, as the run reads it. */
void blas_work_run(struct blas_work *bw, const float *x, long rows);

struct blas_choice {
    int threads;                      // chosen: threads per replica
    enum hostmm_lib lib;              // chosen: the library
    int n_tried;
    int tried[BLAS_TUNE_MAX];         // (n_tried) thread counts measured
    enum hostmm_lib tried_lib[BLAS_TUNE_MAX]; // (n_tried) and their library
    double seconds[BLAS_TUNE_MAX];    // (n_tried) best seconds per step at each
    int side;                         // replicas timed side by side
};

/* Measures OpenBLAS at 1, 2, 4, ... up to max_threads (and max_threads
 * itself), then libxsmm where it is available (and worth its start-up:
 * BLAS_TUNE_XSMM_MIN_SECONDS), on `rows`-row chunks, with
 * `side` replicas running the step side by side (each candidate's time is
 * the slowest replica's); keeps
 * the fastest (one with more threads must be more than 5% faster to win:
 * fewer threads leave cores to the loader and the other replicas) and leaves
 * OpenBLAS set to the chosen thread count. `only` ("openblas", "libxsmm";
 * NULL or "auto" for both) limits the candidates to one library. */
int blas_choose_threads(int features, int out_features, long rows, int max_threads, int side,
                        const char *only, struct blas_choice *out, struct error *e);

#endif
