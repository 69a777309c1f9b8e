/* The step's two matrix products on the host, in one place: the cpu
 * backend's replicas, the BLAS timing (blas_tune.c) and the floor all call
 * these. Two libraries do the work: OpenBLAS (CBLAS), or, where dpbench was
 * built with it and this CPU runs its code generator, libxsmm's just-in-time
 * kernels, made for each exact shape (small, skinny products like a Linear
 * layer's, where general BLAS spends most of its time outside the
 * arithmetic). blas_tune.c times both on the run's shapes and keeps the
 * faster. */
#ifndef DPBENCH_HOSTMM_H
#define DPBENCH_HOSTMM_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

enum hostmm_lib { HOSTMM_OPENBLAS, HOSTMM_LIBXSMM };

#define HOSTMM_KERNELS 8 // row counts whose kernels one instance keeps

struct hostmm_kernel {
    long rows;      // the products' row count
    void *fwd, *bwd; // libxsmm's kernels for it, NULL: CBLAS
};

/* One thread's kernels and scratch: not shared between threads. */
struct hostmm {
    enum hostmm_lib lib;
    int F, O;
    long max_rows;
    float *ones;       // (max_rows) all 1: the bias gradient
    float *wt;         // (F, O) the weight transposed (libxsmm's forward)
    int n_kernels;
    struct hostmm_kernel kernels[HOSTMM_KERNELS];
};

/* True when libxsmm is built in and generates kernels on this CPU. */
bool hostmm_have_libxsmm(void);
const char *hostmm_lib_name(enum hostmm_lib lib);

/* OpenBLAS's threads per product from now on. Going down to one also stops
 * its helper threads, which otherwise spin for a while (about 0.1 s) after
 * each product before they sleep: on a small machine the run after one that
 * used them (the next point of a round) would find them on the cores its
 * own threads need. OpenBLAS starts them again when more are asked for. */
void hostmm_blas_threads(int n);

int hostmm_init(struct hostmm *k, enum hostmm_lib lib, int features, int out_features,
                long max_rows, struct error *e);
void hostmm_free(struct hostmm *k);
/* out (rows, O) = x (rows, F) · wᵀ + b, with w = (O, F) then b (O) */
void hostmm_forward(struct hostmm *k, const float *x, long rows, const float *w, float *out);
/* g = alpha (doutᵀ · x, doutᵀ · 1): weight (O, F) then bias (O) gradient */
void hostmm_backward(struct hostmm *k, const float *x, const float *dout, long rows, float alpha,
                     float *g);

#endif
