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

/* The number of points (1 without a sweep). */
long sweep_points(const struct config *c);
/* The config of point p and its label ("key=value ..."); parallel.device
 * auto becomes auto_be unless that is NULL. -1 with e naming the point. */
int sweep_point(const struct config *base, long p, struct config *out, char *label, size_t n,
                const struct backend *auto_be, struct error *e);
/* parallel.device auto resolved to backend be; on a backend without device
 * ids (the cpu), device ids become that many replicas. */
void sweep_resolve_auto(struct config *c, const struct backend *be);
/* The points a run measures: each a config of its own, with its label. */
struct points {
    long n;
    struct config *cfg;  // (n) the sweep's keys kept for the labels in results
    char (*label)[512];  // (n) "key=value ..." ("" without a sweep)
    bool each;           // measure every point, even one that does an earlier one's work
                         // (compare -c's A and B); else such a point is not run again
};
/* The points of c's sweep (one without a sweep), each checked by its rules;
 * -1 with e naming the point. */
int points_of(const struct config *c, struct points *pts, struct error *e);
/* One more point: a copy of c (compare -c). */
int points_add(struct points *pts, const struct config *c, const char *label, struct error *e);
/* parallel.device auto, once resolved, in every point (sweep_resolve_auto). */
void points_resolve_auto(struct points *pts, const struct backend *be);
void points_free(struct points *pts);

/* dataset.make: makes each point's dataset that is not at its path yet
 * (before sweep_check, whose estimate reads the files' headers). */
int points_make_data(const struct points *pts, struct error *e);
/* The memory limit: --max-memory (max_memory > 0), else what the machine
 * has available less a margin (a run at the edge of memory thrashes); what
 * it is in words. */
size_t sweep_memory_limit(double max_memory, char *what, size_t n);
/* Every point's estimated host memory against max_memory (0: what the
 * machine has), before anything is allocated; *peak is the largest need.
 * keep_data: every distinct dataset is kept for the whole run (the rounds),
 * unless only building each again per round fits: then *rebuild is set. */
int sweep_check(const struct points *pts, double max_memory, bool keep_data, size_t *peak,
                bool *rebuild, struct error *e);

/* A dataset shared by the points whose data keys agree. */
struct sweep_data {
    struct dataset d;
    struct config cfg; // the config d was built for (no sweep)
    bool have;
};
int sweep_dataset(struct sweep_data *sd, const struct config *pc, struct error *e);
void sweep_data_free(struct sweep_data *sd);

/* Measures every point of pts into res (one run each; c: the run's base
 * config, its bench.* keys and sweep) in interleaved rounds
 * (measure.c): a point that does the same work as an earlier one is recorded,
 * not run again. rebuild: a point's dataset is built again each round (the
 * datasets do not fit in memory together). On a stop, keeps what completed
 * and returns 0; -2 when a dataset cannot be loaded (bad data: a usage
 * error), -1 on another error. */
int sweep_run(const struct config *c, const struct points *pts, const struct backends *bes,
              struct comm *cm, struct results *res, bool rebuild, bool quiet, struct error *e);

/* The watchdog's rescue while a collective hangs (the main thread is held in
 * it and never returns: the process ends after): the round in progress's
 * complete epochs kept where it is its point's first, the points never
 * measured dropped. The result is then written as a stop writes it. */
void sweep_rescue(struct results *res);

#endif
