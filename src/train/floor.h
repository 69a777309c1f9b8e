/* This machine's floor for a run's own shapes (report.floor): the least an
 * epoch can take here, measured before training, so that a measured epoch
 * reads as a ratio to it. */
#ifndef DPBENCH_FLOOR_H
#define DPBENCH_FLOOR_H

#include <stdbool.h>

#include "loader.h"

struct floor_setup {
    struct loader_options lo; // the run's loader (its workers are not used)
    int features, out_features;
    int replicas;
    int workers;              // the run's loader workers
    int cores;                // cores this process may use (cores_usable)
    int compute_cores;        // cores left for compute after the workers
    int blas_threads;         // per replica; 0 = the step does not run on the host
    int blas_lib;             // enum hostmm_lib: the library the step runs on
};

struct run_floor {
    bool measured;
    double gather_s;   // one epoch of the loader on one thread: shuffle, gather, sample cost
    double loading_s;  // gather_s spread over the workers (= gather_s without workers)
    double compute_s;  // the epoch's step BLAS at the chosen threads; NAN off the host
    double copy_s;     // host-to-device copies; NAN where not measured
    double apart_s;    // the stages one at a time: loading + compute without workers,
                       // max(loading, compute) with them
    bool overlapped;   // seconds was measured with the stages at once (workers)
    double seconds;    // the floor: apart_s without workers; with workers, an epoch of
                       // the run's loader and workers gathering while this thread runs
                       // the step's BLAS on each batch, the best of up to 3 epochs
};

int floor_measure(const struct dataset *d, const struct floor_setup *s, struct run_floor *out,
                  struct error *e);

#endif
