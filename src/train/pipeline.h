/* The input pipeline's model (pipeline.c): an epoch's time from its stages'
 * costs per batch and the loader settings. --tune predicts with it; the
 * emulated device's report sets it beside what it measured. */
#ifndef DPBENCH_PIPELINE_H
#define DPBENCH_PIPELINE_H

#include "config.h"
#include "train.h"

/* The loader settings the model varies (v: the six in order, booleans 0/1). */
struct pipeline_knobs {
    union {
        struct {
            long num_workers, prefetch_factor, persistent_workers, pin_memory, async_copy,
                copy_depth;
        };
        long v[6];
    };
};
struct pipeline_knobs pipeline_knobs_of(const struct config *c);
void pipeline_knobs_apply(const struct pipeline_knobs *k, struct config *c);
/* The batches the loader's pool holds with settings k (loader_pool_size). */
long pipeline_pool(const struct pipeline_knobs *k);

struct pipeline_costs { // seconds per batch
    double load;     // L: one batch filled by one thread (read, decode, transform, collate)
    double handoff;  // w: a worker's batch handed to the training thread, at each end
    double contend;  // s: each thread beyond the cores (workers + the training thread)
    double loop;     // o: the training thread's own time besides the step
    double host;     // H: the training thread's step (all of it where the host computes)
    double compute;  // C: the device's step (0 where the host computes)
    double copy[2];  // X: the host-to-device copy from pageable [0], pinned [1] memory
    double cores;    // cores this process may use; 0: no bound
};

/* The steady state's time between batches whose copy and step take these. */
double pipeline_period(const struct pipeline_costs *c, const struct pipeline_knobs *k,
                       double copy, double compute);
/* An epoch of `batches`: the first load and copy, the periods, the last step. */
double pipeline_epoch(const struct pipeline_costs *c, const struct pipeline_knobs *k,
                      long batches);
/* Its AU: the device's step time (the host's, where it computes) over it. */
double pipeline_au(const struct pipeline_costs *c, const struct pipeline_knobs *k, long batches);

/* The costs per batch a run measured (load, step, its pin_memory's copy),
 * each stage's median over the epochs, as pipeline_fit takes the epoch's: a
 * slow epoch moves neither; device: the backend copies batches to a device. */
void pipeline_measure(const struct run_result *run, bool device, struct pipeline_costs *c);
/* Fitted to median epochs (of 2 batches or more), each run NULL or not: the training thread's own
 * time (from a run without workers, where that thread bounds its period;
 * else 0), the hand-off (from one with workers and no more threads than
 * cores), the contention (from one with more). Which it fitted: 1 << 0 the
 * loop, 1 << 1 the hand-off, 1 << 2 the contention (the others stay 0). */
unsigned pipeline_fit(struct pipeline_costs *c, const struct run_result *sync,
                      const struct run_result *workers, const struct run_result *over);

#endif
