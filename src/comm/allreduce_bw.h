/* dpbench --allreduce-bandwidth: an allreduce size sweep on the run's comm
 * engine, printed by rank 0 as nccl-tests prints it. */
#ifndef DPBENCH_ALLREDUCE_BW_H
#define DPBENCH_ALLREDUCE_BW_H

#include <stdio.h>

#include "comm.h"

int allreduce_bandwidth(struct comm *c, FILE *out, struct error *e);

#endif
