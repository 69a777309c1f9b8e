/* The dataset: its kind builds or loads it (dataset_kinds.c); per-sample access. */
#include "dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dataset_files.h"
#include "dataset_kind.h"
#include "loss.h"
#include "signals.h"

size_t dataset_bytes(long length, long features, long out_features)
{
    return (size_t)length * (size_t)(features + out_features) * sizeof(float);
}

int dataset_init(struct dataset *d, const struct config *c, struct error *e)
{
    int rc;
    if (dataset_kind_of(c)->labelled) { // a missing one says how to make it (dataset_files.c)
        const char *before = signals_phase("loading the dataset (dataset.path)");
        if ((rc = dataset_files_load(d, c, e)))
            dataset_free(d);
        signals_phase(before);
        return rc;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *before = signals_phase("generating the dataset");
    rc = dataset_build(d, c, cores > 0 ? (int)cores : 1, e);
    signals_phase(before);
    return rc;
}

int dataset_build(struct dataset *d, const struct config *c, int threads, struct error *e)
{
    memset(d, 0, sizeof *d);
    if (dataset_kind_random.build(d, c, threads, e)) {
        dataset_free(d);
        return -1;
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
