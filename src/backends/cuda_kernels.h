/* The per-row math of dpbench's own device kernels (cuda_kernels.cu), as C
 * that nvcc compiles for the device and the host emulation
 * (tests/fakedriver.c) compiles for the host, so both run the same
 * arithmetic. Each row follows loss.c's host function of the same loss.
 *
 * The kernels, all launched as one block of DP_KERNEL_THREADS threads on
 * the output device's stream (cuda_step.c), thread t taking the rows t,
 * t + T, t + 2T, ... and the block summing in a fixed order, so that a
 * batch's sum does not change from run to run:
 *
 *   dpbench_loss_mse(const float *out, const float *y, int rows, int O,
 *                    float *d, float *loss)
 *   dpbench_loss_cross_entropy(same)
 *       d (rows, O) the loss's gradient direction, *loss its raw sum
 *       (struct loss_fn's contract);
 *   dpbench_count_correct(const float *out, const float *y, int rows, int O,
 *                         unsigned long long *correct)
 *       *correct += the rows whose largest output is at y's largest entry. */
#ifndef DPBENCH_CUDA_KERNELS_H
#define DPBENCH_CUDA_KERNELS_H

#ifdef __CUDACC__
#define DP_ROW __device__ static inline
#else
#include <math.h>
#define DP_ROW static inline
#endif

enum { DP_KERNEL_THREADS = 256 }; // a power of two: the block's sum halves it

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
