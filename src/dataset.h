/* The tutorial's RandomDataset with teacher targets: x ~ N(0, 1) of shape
 * (length, features) and y = x·W*ᵀ + b* + noise, all drawn from the seed in
 * fixed blocks of rows, so the bytes do not depend on how many threads
 * generate or read them. */
#ifndef DPBENCH_DATASET_H
#define DPBENCH_DATASET_H

#include <stddef.h>

#include "util.h"

struct config;

struct dataset {
    long length;       // samples
    int features;      // in_features
    int out_features;  // targets per sample
    float *x;          // (length, features)
    float *y;          // (length, out_features)
    float *w_teacher;  // (out_features, features)
    float *b_teacher;  // (out_features)
    double noise;      // teacher noise standard deviation
    long cost_iters;   // arithmetic iterations per sample for dataset.sample_cost_us
};

/* Builds the dataset of c on one thread per core. */
int dataset_init(struct dataset *d, const struct config *c, struct error *e);
/* The same on `threads` threads: the bytes do not depend on the count. */
int dataset_build(struct dataset *d, const struct config *c, int threads, struct error *e);
void dataset_free(struct dataset *d);
size_t dataset_bytes(long length, long features, long out_features);

/* Copies sample `i` into x_out/y_out, spending the configured per-sample cost
 * first. The cost's result goes to a sink the compiler cannot drop. */
void dataset_get(const struct dataset *d, long i, float *x_out, float *y_out);

/* Sets the emulated per-sample loader cost (dataset.sample_cost_us); a sweep
 * may change it while the data stays the same. */
void dataset_set_sample_cost(struct dataset *d, double us);

/* Iterations of the cost loop that take about one microsecond here. Measured
 * once per process. */
double dataset_cost_iters_per_us(void);

#endif
