/* The DDP sections of the report (rank table, straggler ratio, allreduce
 * bandwidth), for report.c's renderers; nothing for dp runs. */
#ifndef DPBENCH_REPORT_DDP_H
#define DPBENCH_REPORT_DDP_H

#include <stdbool.h>
#include <stdio.h>

#include "train.h"

struct cJSON;

void report_ddp_summarize(struct run_result *run);
/* Measured epoch k's gradient allreduce, mean over the ranks: seconds, the
 * part of them spent waiting for the last rank, and its busbw (GB/s). False
 * (all NAN) for a run without several ranks. */
bool report_ddp_epoch(const struct run_result *run, int k, double *seconds, double *wait,
                      double *busbw);
void report_ddp_text(FILE *f, const struct run_result *run);
/* Adds world_size (always), ranks[] and the ddp summary fields to a run's
 * JSON object o and its summary object. */
void report_ddp_json(struct cJSON *o, struct cJSON *summary, const struct run_result *run);

#endif
