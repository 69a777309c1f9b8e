/* Host memory estimates, checked before a run allocates anything. */
#ifndef DPBENCH_ESTIMATE_H
#define DPBENCH_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>

struct config;

struct estimate {       // bytes
    size_t dataset;     // x, y, the teacher's weights; idx/cifar10: their arrays,
                        // both splits, and the read buffers while loading
    size_t loader;      // sample order, batch pool
    size_t batch;       // one batch of the pool (its samples and their ids)
    size_t model;       // initial parameters; on host memory (not a device's),
                        // replicas' parameters, gradients, gathered outputs and
                        // chunk buffers
    size_t results;     // kept until the end: parameters, splits, epochs, JSON
    size_t runtime;     // BLAS workspaces, thread stacks
    size_t total;
    bool host_threads;  // not bytes: the replicas compute on host threads that call
                        // BLAS (the cpu, the emulated device), not on a device
};

/* The host bytes one run of c allocates at its peak (one point of a sweep);
 * -1 when a size overflows size_t (the run cannot exist). */
int estimate_host(const struct config *c, struct estimate *est);
/* The address space one run of c needs beyond what is mapped now (est: its
 * estimate_host) against RLIMIT_AS, with its threads: the loader's workers
 * and, where the replicas compute on host threads, those; -1 with e naming
 * the limit when it does not fit. */
struct error;
int estimate_check_limits(const struct config *c, const struct estimate *est, struct error *e);
/* MemAvailable from /proc/meminfo, 0 when unknown. */
size_t estimate_available(void);
/* Kept free below the available memory: a tenth, at least 256 MiB. */
size_t estimate_margin(size_t available);

#endif
