/* dpbench --allreduce-bandwidth: an allreduce size sweep on the run's comm
 * engine, printed by rank 0 as nccl-tests prints it. */
#ifndef DPBENCH_ALLREDUCE_BW_H
#define DPBENCH_ALLREDUCE_BW_H

#include <stdio.h>

#include "comm.h"

#include "config.h"

int allreduce_bandwidth(struct comm *c, FILE *out, struct error *e);
/* The table on stdout and, on rank 0 with report.out set, also in
 * report.out/NAME-STAMP.allreduce.txt (whole or not at all). */
int allreduce_bandwidth_emit(struct comm *c, const struct config *cfg, struct error *e);

#endif
