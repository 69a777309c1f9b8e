/* The datasets. Each dataset.kind is one struct dataset_kind in its own
 * file (dataset_kind.h): `random` (kind_random.c) is the tutorial's
 * RandomDataset with teacher targets, built in memory from the seed; the
 * labelled kinds (idx, cifar10, folder) are files whose samples are images
 * transformed per sample and whose targets are one-hot rows of `classes`
 * (dataset_files.c). */
#ifndef DPBENCH_DATASET_H
#define DPBENCH_DATASET_H

#include <stddef.h>

#include "util.h"

struct config;
struct file_data;

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
    int classes;       // labelled kinds: number of classes (<= out_features); 0 for random
    struct file_data *files; // labelled kinds: images, labels, transforms; NULL for random
    struct dataset *eval;    // held-out split evaluated after training, NULL if none
};

/* Builds (random) or loads (labelled kinds, with their eval split) the
 * dataset of c; the random one on one thread per core. */
int dataset_init(struct dataset *d, const struct config *c, struct error *e);
/* The same on `threads` threads: the bytes do not depend on the count. */
int dataset_build(struct dataset *d, const struct config *c, int threads, struct error *e);
void dataset_free(struct dataset *d);
size_t dataset_bytes(long length, long features, long out_features);

/* Copies sample `i` (as seen in `epoch`: random transforms) into x_out/y_out,
 * spending the configured per-sample cost first; adds the bytes read from
 * files to *bytes_read. Fails only for file data (a corrupt image). */
/* Asks the CPU to start loading sample i's rows (random data held in memory):
 * the loader names the sample it will copy a few samples ahead, so the copy
 * of one shuffled row overlaps the memory latency of the next ones. */
void dataset_prefetch(const struct dataset *d, long i);
int dataset_get(const struct dataset *d, long i, long epoch, float *x_out, float *y_out,
                long *bytes_read, struct error *e);

/* What the data decides in a config, for the run and its echo: labelled data
 * sets dataset.length, dataset.features and model.out_features (the number
 * of classes); model.loss auto becomes mse (random) or cross_entropy. */
void dataset_resolve_config(const struct dataset *d, struct config *c);

/* Evicts the dataset's files from the page cache (dataset.drop_cache). */
int dataset_drop_cache(const struct dataset *d, struct error *e);

/* Sets the emulated per-sample loader cost (dataset.sample_cost_us); a sweep
 * may change it while the data stays the same. */
void dataset_set_sample_cost(struct dataset *d, double us);

/* Iterations of the cost loop that take about one microsecond here. Measured
 * once per process. */
double dataset_cost_iters_per_us(void);

#endif
