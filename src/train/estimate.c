/* The host memory a run will allocate, counted buffer by buffer from its
 * config before anything is allocated, so that a run which cannot fit is
 * refused instead of thrashing. Every product is a size_t with an overflow
 * check: a shape whose size does not fit is refused, never wrapped. */
#include "estimate.h"
#include "rlimits.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "config.h"
#include "dataset_files.h"
#include "dataset_kind.h"
#include "pipeline.h"
#include "train.h"

/* What the allocator and the libraries add beyond the buffers dpbench asks
 * for: OpenBLAS's per-thread packing buffers, thread stacks, the rendered
 * results (cJSON nodes and text, per reported epoch). */
enum {
    BLAS_BYTES_PER_THREAD = 64 << 20,
    STACK_BYTES_PER_THREAD = 256 << 10,
    JSON_BYTES_PER_EPOCH = 4096,
};

/* a += b * c (all bytes or counts); false when it overflows */
static bool add_mul(size_t *a, size_t b, size_t c)
{
    size_t p;
    if (__builtin_mul_overflow(b, c, &p) || __builtin_add_overflow(*a, p, a))
        return false;
    return true;
}

int estimate_host(const struct config *c, struct estimate *est)
{
    memset(est, 0, sizeof *est);
    size_t L = (size_t)c->dataset.length, F = (size_t)c->dataset.features;
    size_t O = (size_t)c->model.out_features, B = (size_t)c->loader.batch_size;
    /* labelled data decides the shapes; idx and cifar10 are held in memory,
     * counted from their headers (a folder holds only its file names) */
    struct files_size fs;
    bool files = dataset_kind_of(c)->labelled && dataset_files_size(c, &fs);
    if (files)
        L = (size_t)fs.length, F = (size_t)fs.features, O = (size_t)fs.classes;
    size_t R = (size_t)(c->parallel.n_devices ? c->parallel.n_devices : c->parallel.replicas);
    size_t W = (size_t)c->loader.num_workers;
    size_t E = (size_t)c->train.epochs, C = (B + R - 1) / R;
    size_t batches = c->loader.drop_last ? L / B : (L + B - 1) / B;
    size_t P = 0, FO = 0;
    bool ok = add_mul(&FO, F, O) && add_mul(&P, F, O) && add_mul(&P, O, 1);
    /* dataset: x, y, the teacher; or the labelled arrays */
    if (files)
        est->dataset = fs.bytes;
    else if (!dataset_kind_of(c)->labelled)
        ok = ok && add_mul(&est->dataset, L, (F + O) * sizeof(float)) &&
             add_mul(&est->dataset, P, sizeof(float));
    /* loader: the epoch's order and the batch pool (samples and their ids) */
    struct pipeline_knobs k = pipeline_knobs_of(c);
    ok = ok && add_mul(&est->batch, B, (F + O) * sizeof(float) + sizeof(long)) &&
         add_mul(&est->loader, L, sizeof(long)) &&
         add_mul(&est->loader, (size_t)pipeline_pool(&k), est->batch);
    /* model: the initial parameters, then per replica its parameters and
     * gradients, the gathered outputs and their gradient on replica 0, each
     * other replica's chunk outputs and gradient, the bias ones. A device
     * backend holds all but the initial parameters on its devices; auto
     * (and a backend this build lacks) is counted as the cpu. */
    const struct backend *be = backend_find(c->parallel.device);
    est->host_threads = !be || be->host_math;
    ok = ok && add_mul(&est->model, P, sizeof(float));
    if (!be || !be->device_memory)
        ok = ok && add_mul(&est->model, R, 2 * P * sizeof(float)) &&
             add_mul(&est->model, B, (2 * O + 1) * sizeof(float)) &&
             add_mul(&est->model, R - 1, 2 * C * O * sizeof(float));
    /* results kept until the end: final parameters, the first epoch's
     * splits, the epochs, and their rendering */
    ok = ok && add_mul(&est->results, P, sizeof(float)) &&
         add_mul(&est->results, batches, R * sizeof(long)) &&
         add_mul(&est->results, E, sizeof(struct epoch_result) + JSON_BYTES_PER_EPOCH);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = (size_t)(cores > 0 ? cores : 1) + W + R;
    est->runtime = threads * STACK_BYTES_PER_THREAD +
                   (size_t)(cores > 0 ? cores : 1) * BLAS_BYTES_PER_THREAD;
    ok = ok && !__builtin_add_overflow(est->dataset, est->loader, &est->total) &&
         !__builtin_add_overflow(est->total, est->model, &est->total) &&
         !__builtin_add_overflow(est->total, est->results, &est->total) &&
         !__builtin_add_overflow(est->total, est->runtime, &est->total);
    return ok ? 0 : -1;
}

size_t estimate_margin(size_t available)
{
    size_t tenth = available / 10, floor = (size_t)256 << 20;
    return tenth > floor ? tenth : floor;
}

size_t estimate_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb > SIZE_MAX / 1024 ? SIZE_MAX : (size_t)kb * 1024;
}

int estimate_check_limits(const struct config *c, const struct estimate *est, struct error *e)
{
    /* the estimate's runtime is resident memory; rlimits counts every
     * thread's whole stack and each BLAS-calling thread's buffer instead:
     * the threads of OpenBLAS's pool (started at load, all a run uses), and
     * on a host backend the main thread and the replica threads */
    bool host = est->host_threads;
    size_t R = (size_t)(c->parallel.n_devices ? c->parallel.n_devices : c->parallel.replicas);
    size_t W = (size_t)c->loader.num_workers;
    size_t pool = (size_t)rlimits_blas_threads() - 1;
    return rlimits_check_space(est->total - est->runtime, W + (host ? R - 1 : 0),
                               pool + (host ? R : 0), e);
}
