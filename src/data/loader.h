/* A DataLoader with PyTorch's semantics: a seeded shuffle per epoch, batches
 * with drop_last, `num_workers` threads that fill batches round-robin with at
 * most `prefetch_factor` in flight each, in-order delivery, and workers that
 * persist across epochs or are re-created each one. Batches live in a fixed
 * pool of buffers allocated once, pinned or pageable through the allocator the
 * backend provides. */
#ifndef DPBENCH_LOADER_H
#define DPBENCH_LOADER_H

#include <pthread.h>
#include <stdbool.h>

#include "util.h"

struct dataset;

struct batch {
    long index;  // position in the epoch
    long rows;   // samples in this batch (<= batch_size)
    float *x;    // (rows, features)
    float *y;    // (rows, out_features)
    long *ids;   // (rows) dataset indices, in batch order
    void *mem;   // the host allocation behind x and y
    struct batch *next_free;
};

/* How the pool gets its host memory: pinned or pageable, from the backend. */
struct host_alloc {
    void *(*alloc)(size_t bytes, bool pinned, struct error *e);
    void (*free)(void *p, bool pinned);
};

struct loader_options {
    long batch_size;
    bool shuffle, drop_last;
    int num_workers, prefetch_factor;
    bool persistent_workers, pin_memory;
    int extra_buffers; // buffers a consumer may hold beyond one (e.g. an async-copy ring)
    /* Optional per-batch transform run by whoever fills the batch (a worker, or
     * the training thread with 0 workers); a failure stops the epoch and is
     * reported by loader_next. */
    int (*transform)(struct batch *b, void *arg, struct error *e);
    void *transform_arg;
    unsigned long seed;
    /* DistributedSampler: this process is rank `rank` of `world` (world 0 or
     * 1: one process reads every sample). Each epoch's permutation is the one
     * a single process draws, padded to a multiple of world by repeating its
     * first indices (with drop_last, cut to one instead);
     * rank r reads positions r, r + world, ... */
    int rank, world;
    struct host_alloc mem;
};

struct loader_worker;

struct loader {
    const struct dataset *data;
    struct loader_options opt;
    long n_batches;          // per epoch
    long n_samples;          // samples this process reads per epoch
    long *order;             // (n_samples) this epoch's sample order, this rank's share
    long *perm;              // (length) the epoch's permutation; `order` without a sampler
    long epoch;              // current epoch, from 0
    struct batch *pool;      // (n_buffers)
    int n_buffers;
    struct batch *free_list;
    int window;              // batches that may be requested ahead: workers * prefetch
    struct batch **ready;    // (window) slot k % window holds batch k once filled
    long taken;              // batches handed to the consumer this epoch
    int active;              // workers still working on this epoch
    bool running;            // workers may work on this epoch
    bool stop;               // workers must leave
    int cancel;              // (atomic) the epoch's outstanding batches are dropped
    long generation;         // bumps at each epoch start, wakes persistent workers
    pthread_mutex_t mu;
    pthread_cond_t cv_work;  // workers wait here: window, buffers, epoch start
    pthread_cond_t cv_ready; // the consumer waits here: its next batch
    struct loader_worker *workers; // (num_workers)
    bool threads_live;
    struct error err;        // first error a worker hit
    bool failed;
    long fail_index;         // the earliest batch a worker failed on
    long read_bytes;         // bytes read from files this epoch (atomic)
    long fill_ns;            // ns spent filling batches this epoch, summed over fillers (atomic)
};

int loader_init(struct loader *l, const struct dataset *d, const struct loader_options *o,
                struct error *e);
/* Shuffles for `epoch` and starts (or wakes) the workers. */
int loader_epoch_begin(struct loader *l, long epoch, struct error *e);
/* The next batch in order: 1 with *out set, 0 at the end of the epoch, -1 on
 * error (a worker's error is reported here). */
int loader_next(struct loader *l, struct batch **out, struct error *e);
/* Gives a batch's buffer back to the pool. */
void loader_release(struct loader *l, struct batch *b);
/* Waits for the epoch's workers (joins them unless persistent). Safe to call
 * before the epoch is drained: outstanding work is cancelled. */
void loader_epoch_end(struct loader *l);
void loader_free(struct loader *l);

/* Epoch `epoch`'s sample order (length entries): 0..length-1, shuffled with
 * the seed's own stream for that epoch when `shuffle` is set. The loader and
 * `dpbench --export` both take their orders from here. With `stoppable`, a
 * stop request ends a long shuffle early (false returned). */
bool loader_order(long *order, long length, bool shuffle, unsigned long seed, long epoch,
                  bool stoppable);
/* Samples per rank under DistributedSampler's rule (length without one). */
long loader_samples(long length, int world, bool drop_last);

/* Buffers the pool holds for these options (for memory estimates). */
int loader_pool_size(const struct loader_options *o);

#endif
