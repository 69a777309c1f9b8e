/* dpbench's own device kernels: the training step's losses and the accuracy
 * count, so that neither needs the batch's outputs on the host (the rest of
 * the step is cuBLAS). Built by nvcc into a fatbin that cuda_module.c embeds
 * and loads through the driver API; the launch contract is in
 * cuda_kernels.h, the row math (shared with loss.c) in core/loss_rows.h. One block per batch: these batches are small
 * (rows x outputs of a Linear), and one block sums in a fixed order. */
#include "cuda_kernels.h"

/* The block's sum of v[threadIdx.x], in the same order on every run. */
template <typename T> __device__ static T block_sum(T *part, T v)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = DP_KERNEL_THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    return part[0];
}

extern "C" __global__ void __launch_bounds__(DP_KERNEL_THREADS)
dpbench_loss_mse(const float *out, const float *y, int rows, int O, float *d, float *loss)
{
    __shared__ double part[DP_KERNEL_THREADS];
    double s = 0;
    for (int i = threadIdx.x; i < rows; i += DP_KERNEL_THREADS) {
        size_t at = (size_t)i * O;
        s += dp_mse_row(out + at, y + at, O, d + at);
    }
    s = block_sum(part, s);
    if (threadIdx.x == 0)
        *loss = (float)s;
}

extern "C" __global__ void __launch_bounds__(DP_KERNEL_THREADS)
dpbench_loss_cross_entropy(const float *out, const float *y, int rows, int O, float *d,
                           float *loss)
{
    __shared__ double part[DP_KERNEL_THREADS];
    double s = 0;
    for (int i = threadIdx.x; i < rows; i += DP_KERNEL_THREADS) {
        size_t at = (size_t)i * O;
        s += dp_ce_row(out + at, y + at, O, d + at);
    }
    s = block_sum(part, s);
    if (threadIdx.x == 0)
        *loss = (float)s;
}

extern "C" __global__ void __launch_bounds__(DP_KERNEL_THREADS)
dpbench_count_correct(const float *out, const float *y, int rows, int O,
                      unsigned long long *correct)
{
    __shared__ unsigned long long part[DP_KERNEL_THREADS];
    unsigned long long n = 0;
    for (int i = threadIdx.x; i < rows; i += DP_KERNEL_THREADS) {
        size_t at = (size_t)i * O;
        n += dp_argmax(out + at, O) == dp_argmax(y + at, O);
    }
    n = block_sum(part, n);
    if (threadIdx.x == 0)
        *correct += n; // one block, in stream order: no other writer
}
