/* comm.h's nccl engine: NCCL for the gradient allreduce on the rank's CUDA
 * stream, bootstrapped over MPI as nccl-tests does it (rank 0's
 * ncclGetUniqueId reaches every rank by MPI_Bcast, then ncclCommInitRank);
 * the run's other collectives (config check, gathers) stay on MPI. Like
 * libmpi, libnccl is opened with dlopen, by the first allreduce of a ddp run
 * on cuda; DPBENCH_NCCL names another file to open (the host emulation in
 * tests/fakecuda.c, for one).
 *
 * The allreduce waits for its stream, so that its time is the collective's
 * own and every rank's stop flag can travel after it. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdlib.h>

#include "comm.h"
#include "dl.h"

#define NCCL_CALLS(X)                                                                       \
    X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclAllReduce) X(ncclCommDestroy)              \
    X(ncclGetErrorString)

static struct {
    void *lib;
#define X(f) __typeof__(f) *f;
    NCCL_CALLS(X)
#undef X
    ncclComm_t comm;
} nccl;

static int nccl_load(struct error *e)
{
    if (nccl.lib)
        return 0;
#define X(f) {#f, (void **)&nccl.f},
    static const struct dl_sym calls[] = {NCCL_CALLS(X)};
#undef X
    struct dl_error err;
    void *lib = dl_open("DPBENCH_NCCL", "libnccl.so.2", RTLD_LOCAL, calls,
                        sizeof calls / sizeof calls[0], &err);
    if (!lib && err.missing)
        return error_set(e, "%s: no symbol %s", err.path, err.missing);
    if (!lib)
        return error_set(e, "cannot open %s: %s (NCCL comes with the CUDA toolkit)", err.path,
                         err.reason);
    nccl.lib = lib;
    return 0;
}

#define NCCL_CHECK(call)                                                                    \
    do {                                                                                    \
        ncclResult_t r_ = nccl.call;                                                        \
        if (r_ != ncclSuccess)                                                              \
            return error_set(e, "rank %d (%s): %s: %s", c->rank, c->host, #call,            \
                             nccl.ncclGetErrorString(r_));                                  \
    } while (0)

static int nccl_open(struct comm *c, struct error *e) { return comm_mpi.open(c, e); }

/* The communicator, at the first allreduce: the rank's device is current by
 * then (ncclCommInitRank binds to it), and every rank gets there together. */
static int nccl_init(struct comm *c, struct error *e)
{
    ncclUniqueId id = {{0}};
    if (nccl_load(e))
        return -1;
    if (c->rank == 0)
        NCCL_CHECK(ncclGetUniqueId(&id));
    if (comm_mpi.bcast(c, &id, sizeof id, e))
        return -1;
    NCCL_CHECK(ncclCommInitRank(&nccl.comm, c->world, id, c->rank));
    return 0;
}

static int nccl_allreduce_sum(struct comm *c, float *buf, size_t n, struct error *e)
{
    if (!nccl.comm && nccl_init(c, e))
        return -1;
    cudaStream_t s = c->stream;
    NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, nccl.comm, s));
    cudaError_t err = cudaStreamSynchronize(s);
    if (err != cudaSuccess)
        return error_set(e, "rank %d (%s): cudaStreamSynchronize after ncclAllReduce: %s",
                         c->rank, c->host, cudaGetErrorString(err));
    return 0;
}

static void nccl_close(struct comm *c)
{
    if (nccl.comm)
        nccl.ncclCommDestroy(nccl.comm);
    nccl.comm = NULL;
    comm_mpi.close(c);
}

static int nccl_min(struct comm *c, double *buf, size_t n, struct error *e)
{
    return comm_mpi.min(c, buf, n, e);
}

static void nccl_abort(struct comm *c, int code) { comm_mpi.abort(c, code); }

static int nccl_bcast(struct comm *c, void *buf, size_t bytes, struct error *e)
{
    return comm_mpi.bcast(c, buf, bytes, e);
}

static int nccl_gather(struct comm *c, const void *send, size_t bytes, void *recv,
                       struct error *e)
{
    return comm_mpi.gather(c, send, bytes, recv, e);
}

static int nccl_max(struct comm *c, long v, long *max, struct error *e)
{
    return comm_mpi.max(c, v, max, e);
}

const struct comm_engine comm_nccl = {
    .name = "nccl",
    .device_memory = true,
    .open = nccl_open,
    .allreduce_sum = nccl_allreduce_sum,
    .bcast = nccl_bcast,
    .gather = nccl_gather,
    .max = nccl_max,
    .min = nccl_min,
    .abort = nccl_abort,
    .close = nccl_close,
};
