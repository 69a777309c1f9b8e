/* Dataset generation and per-sample access. */
#include "dataset.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dataset_files.h"
#include "loss.h"
#include "rng.h"

enum { ROW_BLOCK = 1024 }; // rows per independent RNG stream

size_t dataset_bytes(long length, long features, long out_features)
{
    return (size_t)length * (size_t)(features + out_features) * sizeof(float);
}

/* Rows of block `block`: x from the block's own stream, y from the teacher
 * plus the block's noise stream. Blocks are independent. A stop request ends
 * it early (the dataset is then discarded). */
static void make_block(struct dataset *d, unsigned long seed, long block)
{
    long n = d->length, f = d->features, o = d->out_features;
    struct rng rx, rn;
    rng_init(&rx, (uint64_t)seed, RNG_DATA, (uint64_t)block);
    rng_init(&rn, (uint64_t)seed, RNG_NOISE, (uint64_t)block);
    long end = (block + 1) * ROW_BLOCK < n ? (block + 1) * ROW_BLOCK : n;
    for (long i = block * ROW_BLOCK; i < end && !stop_requested(); i++) {
        float *x = d->x + i * f;
        for (long k = 0; k < f; k++)
            x[k] = (float)rng_normal(&rx);
        for (long j = 0; j < o; j++) {
            double acc = d->b_teacher[j];
            for (long k = 0; k < f; k++)
                acc += (double)d->w_teacher[j * f + k] * x[k];
            d->y[i * o + j] = (float)(acc + d->noise * rng_normal(&rn));
        }
    }
}

struct builder {
    struct dataset *d;
    unsigned long seed;
    long blocks;
    long next; // the next block to build, taken atomically
};

static void *builder_main(void *arg)
{
    struct builder *b = arg;
    for (long k; !stop_requested() &&
                 (k = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < b->blocks;)
        make_block(b->d, b->seed, k);
    return NULL;
}

int dataset_init(struct dataset *d, const struct config *c, struct error *e)
{
    if (strcmp(c->dataset.kind, "random") != 0) {
        struct stat st;
        if (dataset_files_load(d, c, e) == 0)
            return 0;
        if (stat(c->dataset.path, &st) != 0 && errno == ENOENT) { // say how to make one
            struct error why = *e;
            error_set(e, "%s; dpbench --make-dataset %s DIR writes one (--make-dataset --help)",
                      why.msg, c->dataset.kind);
        }
        return -1;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return dataset_build(d, c, cores > 0 ? (int)cores : 1, e);
}

int dataset_build(struct dataset *d, const struct config *c, int threads, struct error *e)
{
    memset(d, 0, sizeof *d);
    d->length = c->dataset.length;
    d->features = (int)c->dataset.features;
    d->out_features = (int)c->model.out_features;
    d->noise = c->dataset.noise;
    long n = d->length, f = d->features, o = d->out_features;
    d->x = huge_alloc((size_t)n * (size_t)f * sizeof(float)); // overflow: checked by the config
    d->y = huge_alloc((size_t)n * (size_t)o * sizeof(float));
    d->w_teacher = malloc((size_t)(o * f) * sizeof(float));
    d->b_teacher = malloc((size_t)o * sizeof(float));
    if (!d->x || !d->y || !d->w_teacher || !d->b_teacher) {
        dataset_free(d);
        return error_set(e, "dataset: cannot allocate %.1f MiB for %ld x %ld samples",
                         (double)dataset_bytes(n, f, o) / (1 << 20), n, f);
    }
    struct rng r;
    rng_init(&r, (uint64_t)c->seed, RNG_TEACHER, 0);
    for (long i = 0; i < o * f && !stop_requested(); i++) // unit-variance outputs for unit-variance inputs
        d->w_teacher[i] = (float)(rng_normal(&r) / sqrt((double)f));
    for (long j = 0; j < o; j++)
        d->b_teacher[j] = (float)rng_normal(&r);

    /* the blocks on `threads` threads (this one included); small datasets
     * are not worth a thread */
    struct builder b = {.d = d, .seed = (unsigned long)c->seed,
                        .blocks = (n + ROW_BLOCK - 1) / ROW_BLOCK};
    if ((double)n * (double)(f + 1) * (double)o < 1e7)
        threads = 1;
    if (threads > b.blocks)
        threads = (int)b.blocks;
    pthread_t *t = threads > 1 ? calloc((size_t)threads - 1, sizeof *t) : NULL;
    int started = 0;
    while (t && started < threads - 1 && thread_start(&t[started], builder_main, &b) == 0)
        started++; // a thread that cannot start leaves its share to the others
    builder_main(&b);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
    if (stop_requested()) {
        dataset_free(d);
        return error_set(e, "dataset: generation interrupted");
    }
    dataset_set_sample_cost(d, c->dataset.sample_cost_us);
    return 0;
}

void dataset_resolve_config(const struct dataset *d, struct config *c)
{
    if (d->files) {
        c->dataset.length = d->length;
        c->dataset.features = d->features;
        c->model.out_features = d->out_features;
    }
    if (strcmp(c->model.loss, "auto") == 0)
        snprintf(c->model.loss, sizeof c->model.loss, "%s", loss_auto(d->classes > 0)->name);
}

int dataset_drop_cache(const struct dataset *d, struct error *e)
{
    return d->files ? dataset_files_drop_cache(d, e) : 0;
}

void dataset_set_sample_cost(struct dataset *d, double us)
{
    d->cost_iters = us > 0 ? lround(us * dataset_cost_iters_per_us()) : 0;
}

void dataset_free(struct dataset *d)
{
    if (d->eval) {
        dataset_free(d->eval);
        free(d->eval);
    }
    if (d->files)
        dataset_files_free(d);
    free(d->x);
    free(d->y);
    free(d->w_teacher);
    free(d->b_teacher);
    memset(d, 0, sizeof *d);
}

/* A dependent chain of float operations: each step needs the last, so the
 * loop runs at the latency of the FPU and cannot be vectorised away. */
static float cost_loop(long iters, float seed)
{
    float a = seed;
    for (long i = 0; i < iters; i++)
        a = a * 0.999999f + 1e-7f;
    return a;
}

/* One sink per thread: loader workers spend the cost side by side, and a
 * shared sink would be a data race (and a contended cache line). */
static _Thread_local volatile float cost_sink;

void dataset_prefetch(const struct dataset *d, long i)
{
    if (d->files)
        return; // the files' samples are decoded from their own buffers
    const char *x = (const char *)(d->x + i * d->features);
    for (size_t off = 0; off < (size_t)d->features * sizeof(float); off += 64)
        __builtin_prefetch(x + off);
    __builtin_prefetch(d->y + i * d->out_features);
}

int dataset_get(const struct dataset *d, long i, long epoch, float *x_out, float *y_out,
                long *bytes_read, struct error *e)
{
    if (d->files)
        return dataset_files_get(d, i, epoch, x_out, y_out, bytes_read, e);
    const float *x = d->x + i * d->features;
    /* in slices of about a millisecond: a second stop request cancels even a
     * sample that costs seconds */
    enum { SLICE = 1 << 16 };
    float a = x[0];
    for (long done = 0; done < d->cost_iters && !abort_requested(); done += SLICE)
        a = cost_loop(d->cost_iters - done < SLICE ? d->cost_iters - done : SLICE, a);
    if (d->cost_iters)
        cost_sink = a;
    memcpy(x_out, x, (size_t)d->features * sizeof(float));
    memcpy(y_out, d->y + i * d->out_features, (size_t)d->out_features * sizeof(float));
    return 0;
}

double dataset_cost_iters_per_us(void)
{
    static double per_us; // set once, before any worker starts
    if (per_us > 0)
        return per_us;
    long iters = 1 << 16;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) { // best of 5: the least disturbed run
        double t0 = now_seconds();
        cost_sink = cost_loop(iters, (float)rep);
        double t = now_seconds() - t0;
        if (t < best)
            best = t;
    }
    per_us = (double)iters / (best * 1e6);
    return per_us;
}
