/* The per-row math of the losses, once: dpbench's own device kernels
 * (backends/cuda_kernels.cu) run it per thread, compiled by nvcc for the
 * device and by the C compiler for the host emulation (tests/fakedriver.c);
 * loss.c's cross-entropy and accuracy count loop over rows with the same
 * functions (its MSE sums in 4 partial sums for speed, a different order). */
#ifndef DPBENCH_LOSS_ROWS_H
#define DPBENCH_LOSS_ROWS_H

#ifdef __CUDACC__
#define DP_ROW __device__ static inline
#else
#include <math.h>
#define DP_ROW static inline
#endif

/* The first largest entry of v (n) */
DP_ROW int dp_argmax(const float *v, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (v[j] > v[best])
            best = j;
    return best;
}

/* d = o - t; returns the sum of d's squares */
DP_ROW double dp_mse_row(const float *o, const float *t, int O, float *d)
{
    double s = 0;
    for (int j = 0; j < O; j++) {
        float v = o[j] - t[j];
        d[j] = v;
        s += (double)v * v;
    }
    return s;
}

/* log p = o - m - log sum exp(o - m) with m the largest output; d = p - t;
 * returns -sum t log p */
DP_ROW double dp_ce_row(const float *o, const float *t, int O, float *d)
{
    float m = o[dp_argmax(o, O)];
    double z = 0, s = 0;
    for (int j = 0; j < O; j++)
        z += exp((double)(o[j] - m));
    double log_z = log(z);
    for (int j = 0; j < O; j++) {
        double log_p = (double)(o[j] - m) - log_z;
        if (t[j] != 0.0f)
            s -= (double)t[j] * log_p;
        d[j] = (float)(exp(log_p) - (double)t[j]);
    }
    return s;
}

#endif
