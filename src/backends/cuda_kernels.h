/* The per-row math of dpbench's own device kernels (cuda_kernels.cu), as C
 * that nvcc compiles for the device and the host emulation
 * (tests/fakedriver.c) compiles for the host, so both run the same
 * arithmetic: the rows' math is core/loss_rows.h, which loss.c's host
 * functions use too.
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

#include "loss_rows.h"

enum { DP_KERNEL_THREADS = 256 }; // a power of two: the block's sum halves it

#endif
