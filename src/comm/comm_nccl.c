/* comm.h's nccl engine: NCCL for the gradient allreduce on the rank's CUDA
 * stream, bootstrapped over MPI as nccl-tests does it (rank 0's
 * ncclGetUniqueId reaches every rank by MPI_Bcast, then ncclCommInitRank);
 * the run's other collectives (config check, gathers, the stop flag) stay
 * on MPI. Like libmpi, libnccl is opened with dlopen, by ddp runs on cuda
 * only; DPBENCH_NCCL names another file to open (the host emulation in
 * tests/fakenccl.c, for one).
 *
 * The communicator is made by comm_bind, before any timed work, on the
 * rank's device, with one allreduce of a float so that NCCL's lazy
 * connection setup is done by then too. An allreduce is timed by two events
 * around it on the stream, so its time is the collective's own (the step's
 * forward and backward queued before it are not), and the host then sleeps
 * on the second event (blocking sync). A watchdog thread ends a call that
 * does not complete (a peer gone or hung, or NCCL's asynchronous error)
 * with ncclCommAbort after DPBENCH_NCCL_TIMEOUT_S seconds (600 unless set),
 * so no rank waits forever. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "dl.h"

#define NCCL_CALLS(X)                                                                       \
    X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclAllReduce) X(ncclCommDestroy)              \
    X(ncclCommAbort) X(ncclCommGetAsyncError) X(ncclGetErrorString)

static struct {
    void *lib;
#define X(f) __typeof__(f) *f;
    NCCL_CALLS(X)
#undef X
    ncclComm_t comm;        // NULL until comm_bind, and after an abort
    int device;             // the communicator's
    cudaStream_t own;       // the stream of calls without a step's (--allreduce-bandwidth)
    cudaEvent_t t0, t1;     // around each allreduce; the host sleeps on t1
    /* the watchdog */
    pthread_t dog;
    bool dog_live, quit;
    pthread_mutex_t mu;     // guards the watchdog's fields and comm against its abort
    pthread_cond_t cv;
    double deadline;        // now_seconds() by which the call in flight must end; 0: none
    char aborted[256];      // why the watchdog aborted the communicator, "" if it did not
} nccl = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

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
        return error_set(e, "cannot open %s: %s (NCCL is a package of its own: libnccl2)",
                         err.path, err.reason);
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

#define CUDA_CHECK(call)                                                                    \
    do {                                                                                    \
        cudaError_t err_ = (call);                                                          \
        if (err_ != cudaSuccess)                                                            \
            return error_set(e, "rank %d (%s): %s:%d: %s: %s", c->rank, c->host, __FILE__,  \
                             __LINE__, #call, cudaGetErrorString(err_));                    \
    } while (0)

static double timeout_s(void)
{
    const char *v = getenv("DPBENCH_NCCL_TIMEOUT_S");
    double t = v ? strtod(v, NULL) : 0;
    return t > 0 ? t : 600;
}

/* ---- the watchdog --------------------------------------------------------- */

/* Why NCCL's asynchronous error st ends the call (a peer's abort included:
 * its call did not complete in its time, or it failed). */
static void remote(ncclResult_t st)
{
    snprintf(nccl.aborted, sizeof nccl.aborted, "failed: %s%s", nccl.ncclGetErrorString(st),
             st == ncclRemoteError ? " (a peer rank failed, or aborted a call that did not "
                                     "complete in its DPBENCH_NCCL_TIMEOUT_S)" : "");
}

/* Every 100 ms while a call is in flight: NCCL's asynchronous error, and
 * the deadline. Either ends the communicator (its kernels end, and with
 * them the host's wait). */
static void *watchdog(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&nccl.mu);
    while (!nccl.quit) {
        if (nccl.deadline == 0) {
            pthread_cond_wait(&nccl.cv, &nccl.mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&nccl.cv, &nccl.mu, &ts);
        ncclResult_t st = ncclSuccess;
        if (nccl.deadline == 0 || nccl.quit || !nccl.comm ||
            nccl.ncclCommGetAsyncError(nccl.comm, &st) != ncclSuccess)
            continue;
        bool late = now_seconds() >= nccl.deadline;
        if (!late && (st == ncclSuccess || st == ncclInProgress))
            continue;
        if (late)
            snprintf(nccl.aborted, sizeof nccl.aborted, "did not complete in %g s "
                     "(DPBENCH_NCCL_TIMEOUT_S): a peer rank is gone or hung", timeout_s());
        else
            remote(st);
        nccl.ncclCommAbort(nccl.comm);
        nccl.comm = NULL;
        nccl.deadline = 0;
    }
    pthread_mutex_unlock(&nccl.mu);
    return NULL;
}

static void arm(double deadline)
{
    pthread_mutex_lock(&nccl.mu);
    nccl.deadline = deadline;
    pthread_cond_broadcast(&nccl.cv);
    pthread_mutex_unlock(&nccl.mu);
}

/* ---- the allreduce -------------------------------------------------------- */

/* Queues the sum of buf on stream s between the two events, then sleeps
 * until it has ended (or the watchdog ended it). */
static int allreduce_on(struct comm *c, float *buf, size_t n, cudaStream_t s, double *seconds,
                        struct error *e)
{
    if (!nccl.comm)
        return error_set(e, "rank %d (%s): no NCCL communicator: %s", c->rank, c->host,
                         nccl.aborted[0] ? nccl.aborted : "comm_bind was not called");
    CUDA_CHECK(cudaSetDevice(nccl.device));
    CUDA_CHECK(cudaEventRecord(nccl.t0, s));
    NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, nccl.comm, s));
    CUDA_CHECK(cudaEventRecord(nccl.t1, s));
    arm(now_seconds() + timeout_s());
    cudaError_t err = cudaEventSynchronize(nccl.t1);
    arm(0);
    ncclResult_t st = ncclSuccess;
    pthread_mutex_lock(&nccl.mu); // the watchdog's verdict, or a peer's abort
    if (!nccl.aborted[0] && nccl.comm &&
        nccl.ncclCommGetAsyncError(nccl.comm, &st) == ncclSuccess && st != ncclSuccess &&
        st != ncclInProgress)
        remote(st);
    bool aborted = nccl.aborted[0] != '\0';
    pthread_mutex_unlock(&nccl.mu);
    if (aborted)
        return error_set(e, "rank %d (%s): ncclAllReduce %s; communicator aborted", c->rank,
                         c->host, nccl.aborted);
    CUDA_CHECK(err);
    float ms = 0;
    if (seconds && cudaEventElapsedTime(&ms, nccl.t0, nccl.t1) == cudaSuccess)
        *seconds = 1e-3 * ms;
    return 0;
}

static int nccl_allreduce_sum(struct comm *c, float *buf, size_t n, double *seconds,
                              struct error *e)
{
    return allreduce_on(c, buf, n, c->stream ? (cudaStream_t)c->stream : nccl.own, seconds, e);
}

/* ---- the communicator ----------------------------------------------------- */

static void drop(void)
{
    if (nccl.comm)
        nccl.ncclCommDestroy(nccl.comm);
    if (nccl.t0)
        cudaEventDestroy(nccl.t0);
    if (nccl.t1)
        cudaEventDestroy(nccl.t1);
    if (nccl.own)
        cudaStreamDestroy(nccl.own);
    nccl.comm = NULL;
    nccl.t0 = nccl.t1 = NULL;
    nccl.own = NULL;
}

/* Everything a rank can fail at alone, before any rank waits in NCCL's
 * collective init: the library, the device, the events and the stream. */
static int prepare(struct comm *c, int device, struct error *e)
{
    if (nccl_load(e))
        return -1;
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaEventCreate(&nccl.t0));
    CUDA_CHECK(cudaEventCreateWithFlags(&nccl.t1, cudaEventBlockingSync));
    CUDA_CHECK(cudaStreamCreateWithFlags(&nccl.own, cudaStreamNonBlocking));
    nccl.device = device;
    if (!nccl.dog_live) {
        int rc = pthread_create(&nccl.dog, NULL, watchdog, NULL);
        if (rc)
            return error_set(e, "rank %d: cannot start NCCL's watchdog: %s", c->rank, strerror(rc));
        nccl.dog_live = true;
    }
    return 0;
}

enum { MSG = 512 };

/* One verdict on every rank: the lowest failing rank's message, or none. A
 * failure here is not yet inside NCCL, so every rank gets here. */
static int agree(struct comm *c, int rc, struct error *e)
{
    char mine[MSG] = "", *all = c->rank == 0 ? calloc((size_t)c->world, MSG) : NULL;
    if (rc)
        snprintf(mine, sizeof mine, "%s", e->msg[0] ? e->msg : "failed");
    if ((c->rank == 0 && !all) || comm_mpi.gather(c, mine, MSG, all, e)) {
        free(all);
        return error_set(e, "rank %d: out of memory, or MPI failed", c->rank);
    }
    for (int r = 0; c->rank == 0 && r < c->world && !mine[0]; r++)
        snprintf(mine, sizeof mine, "%s", all + (size_t)r * MSG);
    free(all);
    if (comm_mpi.bcast(c, mine, MSG, e))
        return -1;
    return mine[0] ? error_set(e, "%s", mine) : 0;
}

/* NCCL refuses two ranks of one communicator on one GPU; so does dpbench,
 * first, with the ranks named: (host, the GPU's PCI address) of every rank.
 * Not the device number: a launcher that sets CUDA_VISIBLE_DEVICES per rank
 * (SLURM's --gpus-per-task) shows each rank its own GPU as device 0. */
static int one_rank_per_gpu(struct comm *c, int device, struct error *e)
{
    struct { char host[64]; int device, pci[3]; } me = {.device = device, .pci = {-1, -1, -1}}, *all = NULL;
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) // else the device number alone
        me.pci[0] = prop.pciDomainID, me.pci[1] = prop.pciBusID, me.pci[2] = prop.pciDeviceID;
    snprintf(me.host, sizeof me.host, "%s", c->host);
    if (c->rank == 0 && !(all = calloc((size_t)c->world, sizeof me)))
        return agree(c, error_set(e, "out of memory"), e);
    int rc = comm_mpi.gather(c, &me, sizeof me, all, e);
    e->msg[0] = '\0';
    for (int a = 0; c->rank == 0 && !rc && a < c->world && !e->msg[0]; a++)
        for (int b = a + 1; b < c->world && !e->msg[0]; b++)
            if (strcmp(all[a].host, all[b].host) == 0 && // no address on either: the numbers
                (all[a].pci[1] < 0 && all[b].pci[1] < 0 ? all[a].device == all[b].device
                 : !memcmp(all[a].pci, all[b].pci, sizeof all[a].pci))) {
                char pci[32] = "";
                if (all[a].pci[1] >= 0)
                    snprintf(pci, sizeof pci, ", PCI %04x:%02x:%02x", (unsigned)all[a].pci[0],
                             (unsigned)all[a].pci[1], (unsigned)all[a].pci[2]);
                error_set(e, "parallel.comm nccl: ranks %d and %d are both on one GPU of %s "
                             "(device %d%s), and NCCL takes one rank per GPU: give each rank a "
                             "device of its own (parallel.devices), or use parallel.comm mpi", a,
                          b, all[a].host, all[a].device, pci);
            }
    free(all);
    return agree(c, rc || e->msg[0] ? -1 : 0, e);
}

/* The communicator on `device`, made again only when some rank's device
 * changed (a sweep over parallel.devices). */
static int nccl_bind(struct comm *c, int device, struct error *e)
{
    long moved = !nccl.comm || nccl.device != device, any = 0;
    if (comm_mpi.max(c, moved, &any, e))
        return -1;
    if (!any)
        return 0;
    drop();
    if (agree(c, prepare(c, device, e), e) || one_rank_per_gpu(c, device, e))
        return -1;
    ncclUniqueId id = {{0}};
    if (c->rank == 0)
        NCCL_CHECK(ncclGetUniqueId(&id));
    if (comm_mpi.bcast(c, &id, sizeof id, e))
        return -1;
    nccl.aborted[0] = '\0';
    NCCL_CHECK(ncclCommInitRank(&nccl.comm, c->world, id, c->rank));
    float *one = NULL; // NCCL connects lazily: its first call, here, untimed
    CUDA_CHECK(cudaMalloc((void **)&one, sizeof *one));
    int rc = cudaMemsetAsync(one, 0, sizeof *one, nccl.own) == cudaSuccess
                 ? allreduce_on(c, one, 1, nccl.own, NULL, e)
                 : error_set(e, "rank %d: cudaMemsetAsync failed", c->rank);
    cudaFree(one);
    return rc;
}

static void nccl_close(struct comm *c)
{
    if (nccl.dog_live) {
        pthread_mutex_lock(&nccl.mu);
        nccl.quit = true;
        pthread_cond_broadcast(&nccl.cv);
        pthread_mutex_unlock(&nccl.mu);
        pthread_join(nccl.dog, NULL);
        nccl.dog_live = nccl.quit = false;
    }
    drop();
    comm_mpi.close(c);
}

/* ---- buffers for --allreduce-bandwidth: device memory of the bound device */

static float *nccl_buf_alloc(struct comm *c, size_t n, struct error *e)
{
    float *p = NULL;
    cudaError_t err = cudaSetDevice(nccl.device);
    if (err == cudaSuccess)
        err = cudaMalloc((void **)&p, (n ? n : 1) * sizeof(float));
    if (err != cudaSuccess)
        error_set(e, "rank %d (%s): %zu floats on device %d: %s", c->rank, c->host, n,
                  nccl.device, cudaGetErrorString(err));
    return err == cudaSuccess ? p : NULL;
}

static void nccl_buf_free(struct comm *c, float *buf)
{
    (void)c;
    if (buf)
        cudaFree(buf);
}

/* On the engine's stream, in order with the allreduces queued there. */
static int nccl_buf_copy(struct comm *c, float *dst, const float *src, size_t n, bool to_engine,
                         struct error *e)
{
    cudaStream_t s = c->stream ? (cudaStream_t)c->stream : nccl.own;
    CUDA_CHECK(cudaSetDevice(nccl.device));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float),
                               to_engine ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    return 0;
}

/* ---- the rest is MPI's ---------------------------------------------------- */

static int nccl_open(struct comm *c, struct error *e) { return comm_mpi.open(c, e); }

static int nccl_min(struct comm *c, double *buf, size_t n, struct error *e)
{
    return comm_mpi.min(c, buf, n, e);
}

static void nccl_abort(struct comm *c, int code) { comm_mpi.abort(c, code); }
static bool nccl_together(struct comm *c, long *v, double timeout_s)
{
    return comm_mpi.together(c, v, timeout_s); // on MPI, as the stop flag and the gathers
}

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
    .together = nccl_together,
    .bind = nccl_bind,
    .buf_alloc = nccl_buf_alloc,
    .buf_free = nccl_buf_free,
    .buf_copy = nccl_buf_copy,
};
