/* The communicator of a DDP run: which rank this process is among how many,
 * on which host, and the collectives the run needs, on an existing engine
 * (Open MPI for processes and hosts, NCCL for GPUs, bootstrapped over MPI),
 * never a transport of our own.
 *
 * Started by mpirun, a ddp run is one rank of the job; started alone, it is a
 * world of one and opens no engine at all. A dp run never opens one either:
 * the MPI library is not even mapped (comm_mpi.c opens it with dlopen). */
#ifndef DPBENCH_COMM_H
#define DPBENCH_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct comm_engine;

struct comm {
    const struct comm_engine *engine; // NULL: a world of one
    const char *name;                 // "mpi", "nccl", "self"
    int rank, world;
    int local_size;                   // ranks on this host (MPI_COMM_TYPE_SHARED)
    int local_rank;                   // this rank among them
    int device;                       // the device comm_bind bound, -1 before
    void *stream;                     // device engines: the CUDA stream the allreduce is
                                      // queued on (the step's queue); NULL: the engine's own
    char host[256];
    /* accumulated by comm_allreduce since the caller last cleared them */
    double allreduce_s;               // seconds inside the allreduce
    long allreduce_calls;
    double allreduce_bytes;           // payload bytes summed, per rank
    double *call_s;                   // (n_calls) seconds of each allreduce since the last
    size_t n_calls, cap_calls;        // comm_allreduce_wait
    int stop;                         // the largest comm_stop any rank asked for, seen by
                                      // every rank at once
    bool left;                        // this rank left the job's collectives on a stop of
                                      // its own, before one could carry it (its data made)
    float *scratch;                   // (scratch_n) the allreduce's buffer: payload, stop flags
    size_t scratch_n;
    void *impl;                       // the engine's
};

/* A rank's wish, carried by every gradient allreduce: go on, stop after this
 * step (a signal), or stop because this rank cannot go on (its loss is not
 * finite). Every rank learns the largest over the ranks in the same call. */
enum comm_stop { COMM_GO, COMM_STOP, COMM_FAIL };

/* Whether to stop: with several ranks, a stop any rank asked for and every
 * rank learnt in the same collective (c->stop); else this process's signal.
 * A signal one rank saw after its last allreduce is not one yet: the next
 * collective carries it, or the end of the job. */
bool comm_stopping(const struct comm *c);

/* comm.c's table of engines, the only list of them. */
/* Space-separated engines compiled in ("mpi", "mpi nccl", "" for none). */
const char *comm_engines(void);
/* The table's i-th engine name (built or not), NULL past the last:
 * parallel.comm's values. */
const char *comm_engine_name(size_t i);
/* The table's i-th engine: NULL where this build does not have it, or past the last. */
const struct comm_engine *comm_engine_at(size_t i);
/* Whether the engine of that name sums device memory (false for an unknown name). */
bool comm_engine_device_memory(const char *name);
/* parallel.comm auto: the table's first engine for host or device memory. */
const char *comm_auto(bool device_memory);
/* True when this process was started by mpirun (one rank of a job). */
bool comm_launched(void);
/* The ranks of the job mpirun started this process in, before any engine
 * is open (1 when not launched), and this process's rank in *rank. */
int comm_launched_world(int *rank);

/* Opens the engine `name` ("mpi") when launched by mpirun, else a world of
 * one. Fails (exit 2 material) for an engine not compiled in. */
int comm_open(struct comm *c, const char *name, struct error *e);
/* This rank's device: its local rank's entry of devices (n of them, cycled),
 * or its local rank when there are none. */
int comm_device(const struct comm *c, const long *devices, int n_devices);
/* Binds the communicator to this rank's device and the stream its
 * allreduce is queued on (NULL: the engine's own). A device engine makes
 * its communicator there (NCCL: once, or again if any rank's device
 * changed), so that no timed call pays for it. Every rank calls it, with
 * the same outcome on each (a collective). */
int comm_bind(struct comm *c, int device, void *stream, struct error *e);
/* Sums n floats across ranks, in place. `stop_here` is this rank's
 * enum comm_stop; after the call c->stop is the largest over the ranks.
 * Timed: the collective's own time, as the engine measures it (a device
 * engine on its stream, so the step's queued compute before it is not
 * part of it). */
int comm_allreduce(struct comm *c, float *buf, size_t n, int stop_here, struct error *e);
/* Rank 0's `bytes` bytes of buf to every rank. */
int comm_bcast(struct comm *c, void *buf, size_t bytes, struct error *e);
/* Every rank's `bytes` bytes of send, in rank order into recv on rank 0
 * (recv may be NULL elsewhere). */
int comm_gather(struct comm *c, const void *send, size_t bytes, void *recv, struct error *e);
/* Of this rank's allreduce seconds since the last call, those spent waiting
 * for the last rank to arrive: per call, this rank's time less the shortest
 * over the ranks (the last to arrive waits for nobody, so its time is the
 * engine's own). Every rank must call it after the same allreduces. */
int comm_allreduce_wait(struct comm *c, double *wait_s, struct error *e);
/* Sums n floats across ranks in place: the engine's call alone (no stop
 * flag, not timed), on memory the engine sums (comm_buffer's, for a device
 * engine). */
int comm_sum(struct comm *c, float *buf, size_t n, struct error *e);
/* n floats the engine sums: host memory, or device memory of the bound
 * device for a device engine; put and get copy to and from it. */
float *comm_buffer(struct comm *c, size_t n, struct error *e);
void comm_buffer_free(struct comm *c, float *buf);
int comm_buffer_put(struct comm *c, float *buf, const float *host, size_t n, struct error *e);
int comm_buffer_get(struct comm *c, float *host, const float *buf, size_t n, struct error *e);
/* The largest `v` over the ranks, on every rank. */
int comm_max(struct comm *c, long v, long *max, struct error *e);
/* Ends the whole job now (after a rank's failure): never returns when an
 * engine is open. */
void comm_abort(struct comm *c, int code);
/* Whether every rank reaches this call within timeout_s (a collective of its
 * own, which no other can meet): a rank that stopped alone asks before
 * MPI_Finalize, which would wait for ever on ranks held in a step's
 * collective. *v: this rank's value, then the largest over the ranks (left
 * as it was where they did not meet). true with one rank, or an engine
 * without it. */
bool comm_together(struct comm *c, long *v, double timeout_s);
void comm_close(struct comm *c);

/* The engine table an engine file fills. */
struct comm_engine {
    const char *name;
    bool device_memory; // allreduce_sum takes device memory, queued on comm.stream
    int (*open)(struct comm *c, struct error *e);
    /* seconds, when not NULL: the collective's own time */
    int (*allreduce_sum)(struct comm *c, float *buf, size_t n, double *seconds, struct error *e);
    int (*bcast)(struct comm *c, void *buf, size_t bytes, struct error *e);
    int (*gather)(struct comm *c, const void *send, size_t bytes, void *recv, struct error *e);
    int (*max)(struct comm *c, long v, long *max, struct error *e);
    int (*min)(struct comm *c, double *buf, size_t n, struct error *e); // in place, per element
    void (*abort)(struct comm *c, int code);
    void (*close)(struct comm *c);
    /* optional: whether every rank reached this call within timeout_s */
    bool (*together)(struct comm *c, long *v, double timeout_s);
    /* optional (comm_bind): the communicator on this rank's device */
    int (*bind)(struct comm *c, int device, struct error *e);
    /* optional (default: host memory): the memory allreduce_sum sums */
    float *(*buf_alloc)(struct comm *c, size_t n, struct error *e);
    void (*buf_free)(struct comm *c, float *buf);
    int (*buf_copy)(struct comm *c, float *dst, const float *src, size_t n, bool to_engine,
                    struct error *e);
};

#ifdef DPBENCH_HAVE_MPI
extern const struct comm_engine comm_mpi;
#endif
#ifdef DPBENCH_HAVE_NCCL
extern const struct comm_engine comm_nccl;
#endif

#endif
