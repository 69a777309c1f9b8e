/* The points of a run (a config with a sweep: the cartesian product of the
 * swept keys' values, first key outermost) and their measurement. */
#ifndef DPBENCH_SWEEP_H
#define DPBENCH_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "comm.h"
#include "config.h"
#include "dataset.h"
#include "devices.h"
#include "report.h"

struct cJSON;

/* The number of points (1 without a sweep). */
long sweep_points(const struct config *c);
/* The config of point p and its label ("key=value ..."); parallel.device
 * auto becomes auto_be unless that is NULL. -1 with e naming the point. */
int sweep_point(const struct config *base, long p, struct config *out, char *label, size_t n,
                const struct backend *auto_be, struct error *e);
/* parallel.device auto resolved to backend be; on a backend without device
 * ids (the cpu), device ids become that many replicas. */
void sweep_resolve_auto(struct config *c, const struct backend *be);
/* Every point's rules and estimated host memory against max_memory (0: what
 * the machine has), before anything is allocated; *peak is the largest need. */
int sweep_check(const struct config *c, double max_memory, size_t *peak, struct error *e);

/* A dataset shared by the points whose data keys agree. */
struct sweep_data {
    struct dataset d;
    struct config cfg; // the config d was built for (no sweep)
    bool have;
};
int sweep_dataset(struct sweep_data *sd, const struct config *pc, struct error *e);
void sweep_data_free(struct sweep_data *sd);

/* One measurement of the points: what run_point needs between points. */
struct sweep_run {
    const struct config *cfg;
    const struct backends *bes;
    struct comm *cm;
    struct results *res;
    const struct renderer *out; // stdout's format
    bool quiet, live;           // live: each row printed as its point finishes
    long n;                     // points
    struct cJSON **eff;         // (n) each run's effective settings
    struct sweep_data data;
};

/* Measures every point into res (one run each; a point that does the same
 * work as an earlier one is recorded, not run again). On a stop, keeps what
 * completed and returns 0. -2 when a dataset cannot be loaded (bad data: a
 * usage error), -1 on another error. */
int sweep_run(const struct config *c, const struct backends *bes, struct comm *cm,
              struct results *res, const struct renderer *out, bool quiet, struct error *e);

#endif
