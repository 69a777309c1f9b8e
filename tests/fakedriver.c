/* Test double: the CUDA driver calls dpbench makes to run its own kernels
 * (cuda_module.c): a module loads into the current device's context, its
 * functions are dpbench's kernels looked up by name, and a launch queues a
 * host version of the kernel (the same row math, src/core/loss_rows.h,
 * summed in the same order as the block does) on the
 * stream, as a compute op. A launch checks what the driver would: the
 * module, the stream and the calling thread's current device agree, and
 * every pointer argument is device memory there. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_kernels.h"
#include "fakecuda.h"

/* A kernel's parameters (at most 6): their sizes, which are device
 * pointers, and its host version over their copied values. */
struct kernel {
    const char *name;
    int n;
    size_t size[6];
    unsigned pointers;                  // bit i: parameter i is a device pointer
    void (*run)(void *const *arg);      // arg[i]: the value of parameter i
};

struct CUfunc_st {
    struct CUmod_st *mod;
    const struct kernel *k;
};

/* A module loaded into device dev's context: its functions are its own, as
 * a driver's are (each run's module, several at once under --tune). */
#define FAKE_MAX_KERNELS 8
struct CUmod_st {
    int dev;
    struct CUfunc_st funcs[FAKE_MAX_KERNELS];
};

typedef double (*row_fn)(const float *o, const float *t, int O, float *d);

/* Thread t's share as the kernel sums it (rows t, t + T, ...), then the
 * block's halving sum. */
static double block_loss(row_fn row, const float *out, const float *y, int rows, int O, float *d)
{
    double part[DP_KERNEL_THREADS];
    for (int t = 0; t < DP_KERNEL_THREADS; t++) {
        part[t] = 0;
        for (int i = t; i < rows; i += DP_KERNEL_THREADS)
            part[t] += row(out + (size_t)i * O, y + (size_t)i * O, O, d + (size_t)i * O);
    }
    for (int w = DP_KERNEL_THREADS / 2; w > 0; w /= 2)
        for (int t = 0; t < w; t++)
            part[t] += part[t + w];
    return part[0];
}

static void run_loss(row_fn row, void *const *a)
{
    int rows = *(const int *)a[2], O = *(const int *)a[3];
    const float *out = dmem(*(float *const *)a[0]), *y = dmem(*(float *const *)a[1]);
    float *d = dmem(*(float *const *)a[4]), *loss = dmem(*(float *const *)a[5]);
    *loss = (float)block_loss(row, out, y, rows, O, d);
}

static void run_mse(void *const *a) { run_loss(dp_mse_row, a); }
static void run_ce(void *const *a) { run_loss(dp_ce_row, a); }

static void run_correct(void *const *a)
{
    int rows = *(const int *)a[2], O = *(const int *)a[3];
    const float *out = dmem(*(float *const *)a[0]), *y = dmem(*(float *const *)a[1]);
    unsigned long long *correct = dmem(*(unsigned long long *const *)a[4]);
    for (int i = 0; i < rows; i++)
        *correct += dp_argmax(out + (size_t)i * O, O) == dp_argmax(y + (size_t)i * O, O);
}

#define P sizeof(void *)
static const struct kernel kernels[] = {
    {"dpbench_loss_mse", 6, {P, P, sizeof(int), sizeof(int), P, P}, 0x33, run_mse},
    {"dpbench_loss_cross_entropy", 6, {P, P, sizeof(int), sizeof(int), P, P}, 0x33, run_ce},
    {"dpbench_count_correct", 5, {P, P, sizeof(int), sizeof(int), P}, 0x13, run_correct},
};
#undef P

CUresult cuInit(unsigned flags)
{
    (void)flags;
    fake_init();
    return n_dev > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuGetErrorString(CUresult err, const char **s)
{
    *s = err ? "fake driver error" : "no error";
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult err, const char **s)
{
    static __thread char buf[32];
    snprintf(buf, sizeof buf, "FAKE_CUDA_ERROR_%d", (int)err);
    *s = buf;
    return CUDA_SUCCESS;
}

/* A fatbin starts with its header's magic, 0xBA55ED50. */
CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
    uint32_t magic;
    if (need_ctx())
        return CUDA_ERROR_INVALID_CONTEXT;
    memcpy(&magic, image, sizeof magic);
    if (magic != 0xBA55ED50u) {
        complain("cuModuleLoadData: not a fatbin (magic %#x)", magic);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    *mod = calloc(1, sizeof **mod);
    (*mod)->dev = cur_dev;
    stat_add("modules", 1);
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule mod)
{
    if (mod->dev != cur_dev)
        complain("cuModuleUnload: module of device %d, current device %d", mod->dev, cur_dev);
    stat_add("modules", -1);
    free(mod);
    return CUDA_SUCCESS;
}

_Static_assert(sizeof kernels / sizeof kernels[0] <= FAKE_MAX_KERNELS, "FAKE_MAX_KERNELS");

CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (strcmp(kernels[i].name, name) == 0) {
            mod->funcs[i] = (struct CUfunc_st){mod, &kernels[i]};
            *f = &mod->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

/* The parameters' values, copied now (the caller's variables may be gone
 * when the stream runs the kernel), after the op's pointer array. */
static void op_kernel(struct op *o)
{
    const struct kernel *k = o->p[0];
    void *arg[6];
    char *at = o->arg;
    for (int i = 0; i < k->n; i++, at += 8)
        arg[i] = at;
    k->run(arg);
}

static bool launch_ok(const struct CUfunc_st *f, unsigned threads, CUstream s, void **params,
                      void **extra)
{
    bool ok = s && params && !extra && f->mod->dev == cur_dev && s->dev == cur_dev &&
              threads == DP_KERNEL_THREADS;
    for (int i = 0; ok && i < f->k->n; i++)
        if ((f->k->pointers >> i & 1) && *(void **)params[i] &&
            mem_dev(*(void **)params[i], 1) != cur_dev)
            ok = false;
    if (!ok)
        complain("cuLaunchKernel %s: %u threads on stream %p (device %d) from device %d, module "
                 "of device %d, pointer arguments on that device only", f->k->name, threads,
                 (void *)s, s ? s->dev : -1, cur_dev, f->mod->dev);
    return ok;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params,
                        void **extra)
{
    (void)shmem;
    if (gx * gy * gz != 1 || !launch_ok(f, bx * by * bz, s, params, extra))
        return CUDA_ERROR_INVALID_VALUE;
    struct op *o = op_new(op_kernel);
    o->compute = true;
    o->p[0] = (void *)f->k;
    o->arg = calloc((size_t)f->k->n, 8);
    o->free_arg = true;
    for (int i = 0; i < f->k->n; i++)
        memcpy((char *)o->arg + 8 * i, params[i], f->k->size[i]);
    stat_add("launches", 1);
    enqueue(s, o);
    return CUDA_SUCCESS;
}
