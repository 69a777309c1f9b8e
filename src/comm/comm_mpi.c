/* comm.h's engine on Open MPI. dpbench is not linked against libmpi (mapping
 * it costs every run, dp ones included, several milliseconds at start): a
 * ddp run launched by mpirun opens it here with dlopen, resolves the calls
 * it makes with mpi.h's own prototypes, and the predefined handles
 * (MPI_COMM_WORLD, MPI_FLOAT, ...) through the global objects Open MPI's
 * mpi.h macros name. Errors stay fatal (Open MPI's default): a rank that
 * dies or fails a call takes the job down, and mpirun names the rank.
 *
 * DPBENCH_LIBMPI names another file to open instead of libmpi.so.40. */
#include <dlfcn.h>
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "dl.h"

/* X(name) for each call dpbench makes */
#define MPI_CALLS(X)                                                                        \
    X(MPI_Init_thread) X(MPI_Initialized) X(MPI_Finalized) X(MPI_Finalize)                  \
    X(MPI_Comm_rank) X(MPI_Comm_size) X(MPI_Allreduce) X(MPI_Bcast) X(MPI_Gather)           \
    X(MPI_Abort) X(MPI_Get_processor_name) X(MPI_Error_string) X(MPI_Comm_split_type)    \
    X(MPI_Comm_free) X(MPI_Comm_dup) X(MPI_Iallreduce) X(MPI_Test) X(MPI_Wait)

static struct {
    void *lib;
#define X(f) __typeof__(f) *f;
    MPI_CALLS(X)
#undef X
    MPI_Comm world;
    MPI_Comm end; // a copy of world for mpi_together's collective alone: it meets no other call
    MPI_Info info_null;
    MPI_Datatype f32, f64, byte, i64;
    MPI_Op sum, max, min;
} mpi;

static int mpi_load(struct error *e)
{
    if (mpi.lib)
        return 0;
#define X(f) {#f, (void **)&mpi.f},
    static const struct dl_sym calls[] = {MPI_CALLS(X)};
#undef X
    /* the predefined handles: the objects Open MPI's mpi.h macros take the address of */
    static const struct dl_sym handles[] = {
        {"ompi_mpi_comm_world", (void **)&mpi.world}, {"ompi_mpi_float", (void **)&mpi.f32},
        {"ompi_mpi_byte", (void **)&mpi.byte},        {"ompi_mpi_long", (void **)&mpi.i64},
        {"ompi_mpi_op_sum", (void **)&mpi.sum},       {"ompi_mpi_op_max", (void **)&mpi.max},
        {"ompi_mpi_double", (void **)&mpi.f64},       {"ompi_mpi_op_min", (void **)&mpi.min},
        {"ompi_mpi_info_null", (void **)&mpi.info_null},
    };
    /* global: Open MPI's own plugins resolve libmpi's symbols */
    struct dl_error err;
    void *lib = dl_open("DPBENCH_LIBMPI", "libmpi.so.40", RTLD_GLOBAL, calls,
                        sizeof calls / sizeof calls[0], &err);
    if (!lib && err.missing)
        return error_set(e, "%s: no symbol %s", err.path, err.missing);
    if (!lib)
        return error_set(e, "cannot open %s: %s (install openmpi-bin and libopenmpi3)", err.path,
                         err.reason);
    const char *missing = dl_resolve(lib, handles, sizeof handles / sizeof handles[0]);
    if (missing) {
        dlclose(lib);
        return error_set(e, "%s: no symbol %s (not Open MPI?)", err.path, missing);
    }
    mpi.lib = lib;
    return 0;
}

static int mpi_fail(struct comm *c, int rc, const char *call, struct error *e)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    mpi.MPI_Error_string(rc, msg, &len);
    return error_set(e, "rank %d (%s): %s: %s", c->rank, c->host, call, msg);
}

#define MPI_CHECK(call)                                                                     \
    do {                                                                                    \
        int rc_ = mpi.call;                                                                 \
        if (rc_ != MPI_SUCCESS)                                                             \
            return mpi_fail(c, rc_, #call, e);                                              \
    } while (0)

/* This rank among the ranks that share its host's memory: MPI's own
 * answer, so that it holds under any launcher (mpirun, Slurm's srun). */
static int local_rank(struct comm *c, struct error *e)
{
    MPI_Comm local;
    MPI_CHECK(MPI_Comm_split_type(mpi.world, MPI_COMM_TYPE_SHARED, c->rank, mpi.info_null, &local));
    int rc = mpi.MPI_Comm_rank(local, &c->local_rank);
    if (rc == MPI_SUCCESS)
        rc = mpi.MPI_Comm_size(local, &c->local_size);
    mpi.MPI_Comm_free(&local);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(c, rc, "MPI_Comm_rank/size(local)", e);
}

static int mpi_open(struct comm *c, struct error *e)
{
    if (mpi_load(e))
        return -1;
    int provided = 0, len = 0;
    MPI_CHECK(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
    MPI_CHECK(MPI_Comm_rank(mpi.world, &c->rank));
    MPI_CHECK(MPI_Comm_size(mpi.world, &c->world));
    MPI_CHECK(MPI_Comm_dup(mpi.world, &mpi.end));
    if (local_rank(c, e))
        return -1;
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    if (mpi.MPI_Get_processor_name(name, &len) == MPI_SUCCESS && name[0])
        snprintf(c->host, sizeof c->host, "%s", name);
    return 0;
}

static int mpi_allreduce_sum(struct comm *c, float *buf, size_t n, double *seconds,
                             struct error *e)
{
    double t0 = now_seconds();
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, mpi.f32, mpi.sum, mpi.world));
    if (seconds)
        *seconds = now_seconds() - t0;
    return 0;
}

static int mpi_bcast(struct comm *c, void *buf, size_t bytes, struct error *e)
{
    MPI_CHECK(MPI_Bcast(buf, (int)bytes, mpi.byte, 0, mpi.world));
    return 0;
}

static int mpi_gather(struct comm *c, const void *send, size_t bytes, void *recv,
                      struct error *e)
{
    MPI_CHECK(MPI_Gather(send, (int)bytes, mpi.byte, recv, (int)bytes, mpi.byte, 0, mpi.world));
    return 0;
}

static int mpi_max(struct comm *c, long v, long *max, struct error *e)
{
    MPI_CHECK(MPI_Allreduce(&v, max, 1, mpi.i64, mpi.max, mpi.world));
    return 0;
}

static int mpi_min(struct comm *c, double *buf, size_t n, struct error *e)
{
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, mpi.f64, mpi.min, mpi.world));
    return 0;
}

static bool mpi_together(struct comm *c, long *v, double timeout_s)
{
    (void)c;
    MPI_Request req;
    int done = 0;
    static long mine, max; // the collective may still use them after a timeout
    mine = *v;
    if (mpi.MPI_Iallreduce(&mine, &max, 1, mpi.i64, mpi.max, mpi.end, &req) != MPI_SUCCESS)
        return false;
    if (!isfinite(timeout_s)) // no limit: as MPI_Finalize would wait, without polling
        done = mpi.MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, timeout_s = 0;
    for (double t0 = now_seconds(); !done && now_seconds() - t0 < timeout_s;) {
        if (mpi.MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return false;
        if (!done)
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    *v = done ? max : *v;
    return done;
}

static void mpi_abort(struct comm *c, int code)
{
    (void)c;
    mpi.MPI_Abort(mpi.world, code);
}

static void mpi_close(struct comm *c)
{
    (void)c;
    int done = 0;
    if (mpi.MPI_Finalized(&done) == MPI_SUCCESS && !done)
        mpi.MPI_Finalize();
}

const struct comm_engine comm_mpi = {
    .name = "mpi",
    .open = mpi_open,
    .allreduce_sum = mpi_allreduce_sum,
    .bcast = mpi_bcast,
    .gather = mpi_gather,
    .max = mpi_max,
    .min = mpi_min,
    .abort = mpi_abort,
    .close = mpi_close,
    .together = mpi_together,
};
