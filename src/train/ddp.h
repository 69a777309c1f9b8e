/* What a DDP run does across its ranks besides the step: every rank checks
 * that it runs rank 0's resolved config before training. */
#ifndef DPBENCH_DDP_H
#define DPBENCH_DDP_H

#include <stdio.h>

#include "comm.h"
#include "config.h"

/* Rank 0 broadcasts its resolved config as text; a rank whose own differs
 * makes every rank fail with one message naming the first such rank, its
 * host and the first differing key. Same result on every rank. */
int ddp_check_config(struct comm *c, const struct config *cfg, struct error *e);

struct run_result;
/* Gathers every rank's measured epochs and first-epoch splits on rank 0:
 * run->ranks[], run->splits as (batches, world) rows per rank, and rank 0's
 * epochs turned into the job's (samples and loss over all ranks). */
int ddp_gather(struct comm *c, struct run_result *run, struct error *e);
/* Instead of ddp_gather when this rank reports alone (another rank stopped
 * responding): run keeps this rank's own figures, reported as a world of one
 * with a note saying so. */
void ddp_alone(const struct comm *c, struct run_result *run);
/* The tutorial's lines of the first epoch, for each batch every rank's in
 * rank order ("[rank r] In Model: ..."), from the gathered splits. */
void ddp_trace(FILE *f, const struct run_result *run, int F, int O);

/* A dp run is one process: started by mpirun as one rank of several, it
 * would never open the communicator the ddp ranks wait in (they hang), so
 * it refuses itself at once, naming parallel.mode, whether the base config
 * or a sweep point asks for dp (exit 2 material). */
int ddp_check_launch(const struct config *cfg, struct error *e);
/* Every one of `world` ranks gets a sample of cfg's dataset.length and,
 * with drop_last, a whole batch of its share (loader_samples: padded to
 * ceil(N / world), or cut with drop_last, as DistributedSampler does). For
 * a length the config holds (the random dataset). 0, or -1 with e set. */
int ddp_check_share(const struct config *cfg, int world, struct error *e);

struct backend;
/* Opens the run's communicator (parallel.comm; auto = nccl on cuda, mpi on
 * the cpu) and checks the world: at most one rank per sample, the same
 * config everywhere. Ranks other than 0 then print nothing on stdout and
 * write no result files. On failure every rank has the same message and
 * the communicator is closed (exit 2 material). The communicator is bound
 * to the rank's device by the runs (comm_bind). */
int ddp_open(struct comm *c, struct config *cfg, const struct backend *be, struct error *e);

#endif
