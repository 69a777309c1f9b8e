/* Test double: the NCCL calls comm_nccl.c makes, for ranks on one host
 * (processes started by mpirun), over a shared-memory segment that the
 * unique id names; no MPI. As the real library does:
 *
 * - ncclCommInitRank is collective, and every rank refuses a communicator
 *   in which two ranks are on one GPU (the same device number on this host:
 *   "Duplicate GPU detected");
 * - ncclAllReduce takes device memory of the communicator's device only,
 *   and is queued on the stream: it runs when the stream reaches it, then
 *   waits on the device for every rank's call, so it ends after the last
 *   rank's earlier work;
 * - ncclCommAbort ends this rank's calls in progress and makes every other
 *   rank's ncclCommGetAsyncError say ncclRemoteError (its calls end too).
 *
 * FAKE_NCCL_HANG_RANK=R: rank R's allreduces never arrive (a hung peer),
 * from its FAKE_NCCL_HANG_AFTER-th on (0 unless set); only an abort ends
 * them. FAKE_NCCL_INIT_US: ncclCommInitRank takes that long. */
#include <errno.h>
#include <fcntl.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fakecuda.h"

#define MAX_RANKS 16
#define MAX_FLOATS (((size_t)8 << 20) + 64) // dpbench --allreduce-bandwidth's 32 MiB, and some
#define HEADER 4096
#define MAGIC 0x6e63636cL

/* The segment all ranks map: a header, then (nranks) input slots and two
 * result buffers of MAX_FLOATS floats each. */
struct seg {
    long magic;              // set once the creator has initialised the rest
    pthread_mutex_t mu;      // process-shared
    pthread_cond_t cv;
    int nranks, joined;
    int dev[MAX_RANKS];      // each rank's GPU (its PCI bus)
    int aborted;             // some rank aborted: every call ends
    long gen;                // allreduces completed
    int arrived;             // ranks in the current one
    size_t count;            // its count
};

struct ncclComm {
    struct seg *seg;
    size_t bytes;            // of the mapping
    int rank, nranks, dev;
    bool hang;               // FAKE_NCCL_HANG_RANK
    long hang_after, calls;  // FAKE_NCCL_HANG_AFTER; allreduces queued so far
    bool aborted;            // this rank aborted
    long pending;            // allreduces queued, not yet run (atomic)
};

static float *slot(struct seg *s, int k) // k < nranks: inputs; nranks, nranks + 1: results
{
    return (float *)((char *)s + HEADER) + (size_t)k * MAX_FLOATS;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclSystemError: return "unhandled system error";
    default: return "fake nccl error";
    }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static int counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "/fakenccl-%d-%d-%ld", (int)getpid(),
             __atomic_add_fetch(&counter, 1, __ATOMIC_SEQ_CST), (long)ts.tv_nsec);
    return ncclSuccess;
}

/* Creates the segment (the first rank there) or waits until its creator has
 * set it up. */
static struct seg *attach(const char *name, int nranks, size_t *bytes)
{
    *bytes = HEADER + (size_t)(nranks + 2) * MAX_FLOATS * sizeof(float);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    bool creator = fd >= 0;
    for (int i = 0; fd < 0 && i < 6000; i++) { // another rank creates it
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0)
            usleep(10000);
    }
    if (fd < 0)
        return NULL;
    struct stat st;
    if (creator && ftruncate(fd, (off_t)*bytes) != 0) {
        close(fd);
        return NULL;
    }
    for (int i = 0; !creator && i < 6000; i++) {
        if (fstat(fd, &st) == 0 && (size_t)st.st_size >= *bytes)
            break;
        usleep(10000);
    }
    struct seg *s = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s == MAP_FAILED)
        return NULL;
    if (creator) {
        pthread_mutexattr_t ma;
        pthread_condattr_t ca;
        pthread_mutexattr_init(&ma);
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
        pthread_condattr_init(&ca);
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
        pthread_mutex_init(&s->mu, &ma);
        pthread_cond_init(&s->cv, &ca);
        s->nranks = nranks;
        __atomic_store_n(&s->magic, MAGIC, __ATOMIC_RELEASE);
    }
    for (int i = 0; i < 6000 && __atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != MAGIC; i++)
        usleep(10000);
    return s;
}

/* Waits on the segment's condition until `done` or `seconds` pass. */
static void seg_wait(struct seg *s, double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

/* Every rank's device, once all have joined; the same verdict on each. */
static ncclResult_t check_devices(struct seg *s, int rank)
{
    for (int r = 0; r < s->nranks; r++)
        if (r != rank && s->dev[r] == s->dev[rank]) {
            fprintf(stderr, "fake NCCL WARN Duplicate GPU detected : rank %d and rank %d both on "
                            "the GPU of PCI bus %d\n", r < rank ? r : rank, r < rank ? rank : r,
                    s->dev[rank]);
            return ncclInvalidUsage;
        }
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    if (nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks ||
        strncmp(id.internal, "/fakenccl-", 10) != 0) {
        complain("ncclCommInitRank: rank %d of %d, id '%.24s'", rank, nranks, id.internal);
        return ncclInvalidArgument;
    }
    if (need_ctx())
        return ncclUnhandledCudaError;
    const char *slow = getenv("FAKE_NCCL_INIT_US"); // a slow bootstrap, to see where it is paid
    if (slow)
        usleep((useconds_t)atol(slow));
    size_t bytes;
    struct seg *s = attach(id.internal, nranks, &bytes);
    if (!s)
        return ncclSystemError;
    pthread_mutex_lock(&s->mu);
    s->dev[rank] = fake_bus(cur_dev); // the GPU itself, as NCCL tells them apart
    if (++s->joined == nranks) {
        shm_unlink(id.internal); // every rank has it mapped
        pthread_cond_broadcast(&s->cv);
    }
    for (int i = 0; i < 600 && s->joined < nranks; i++)
        seg_wait(s, 0.1);
    ncclResult_t rc = s->joined < nranks ? ncclSystemError : check_devices(s, rank);
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        munmap(s, bytes);
        return rc;
    }
    struct ncclComm *c = calloc(1, sizeof *c);
    const char *hang = getenv("FAKE_NCCL_HANG_RANK"), *after = getenv("FAKE_NCCL_HANG_AFTER");
    *c = (struct ncclComm){.seg = s, .bytes = bytes, .rank = rank, .nranks = nranks,
                           .dev = cur_dev, .hang = hang && atoi(hang) == rank,
                           .hang_after = after ? atol(after) : 0};
    *comm = c;
    return ncclSuccess;
}

/* On the stream's thread: this rank's input into its slot; the last to
 * arrive sums the slots in rank order into the generation's result; every
 * rank copies that result out (two results alternate, so a fast rank's
 * next call never overwrites one still being read). */
static void op_allreduce(struct op *o)
{
    struct ncclComm *c = o->arg;
    struct seg *s = c->seg;
    size_t n = o->n[0];
    pthread_mutex_lock(&s->mu);
    while (o->l[0] && !s->aborted)
        seg_wait(s, 0.1);
    if (!s->aborted) {
        memcpy(slot(s, c->rank), o->p[0], n * sizeof(float));
        long gen = s->gen;
        if (s->arrived == 0)
            s->count = n;
        else if (s->count != n)
            complain("ncclAllReduce: rank %d sums %zu floats, another rank %zu", c->rank, n,
                     s->count);
        if (++s->arrived == s->nranks) {
            float *out = slot(s, s->nranks + (int)(gen % 2));
            for (size_t i = 0; i < n; i++) {
                float v = 0;
                for (int r = 0; r < s->nranks; r++)
                    v += slot(s, r)[i];
                out[i] = v;
            }
            s->arrived = 0;
            s->gen++;
            pthread_cond_broadcast(&s->cv);
        }
        while (s->gen == gen && !s->aborted)
            seg_wait(s, 0.1);
        if (s->gen != gen)
            memcpy(o->p[1], slot(s, s->nranks + (int)(gen % 2)), n * sizeof(float));
    }
    pthread_mutex_unlock(&s->mu);
    __atomic_sub_fetch(&c->pending, 1, __ATOMIC_SEQ_CST);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    size_t bytes = count * sizeof(float);
    if (type != ncclFloat || op != ncclSum || !s || s->dev != comm->dev ||
        !is_dev(recv, bytes, comm->dev) || !is_dev(send, bytes, comm->dev) || count > MAX_FLOATS) {
        complain("ncclAllReduce: float sums of device %d memory (send %p, recv %p, %zu floats) "
                 "on a stream of that device (stream %p of device %d) only",
                 comm->dev, send, recv, count, (void *)s, s ? s->dev : -1);
        return ncclInvalidArgument;
    }
    if (comm->aborted)
        return ncclInvalidUsage;
    struct op *o = op_new(op_allreduce);
    o->p[0] = dmem(send), o->p[1] = dmem(recv), o->n[0] = count, o->arg = comm;
    o->l[0] = comm->hang && comm->calls++ >= comm->hang_after; // this call never arrives
    __atomic_add_fetch(&comm->pending, 1, __ATOMIC_SEQ_CST);
    stat_add("nccl_allreduces", 1);
    enqueue(s, o);
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    pthread_mutex_lock(&comm->seg->mu);
    *err = comm->seg->aborted && !comm->aborted ? ncclRemoteError : ncclSuccess;
    pthread_mutex_unlock(&comm->seg->mu);
    return ncclSuccess;
}

/* Once this rank's queued calls have run (they end at once when aborted). */
static void comm_free(ncclComm_t comm)
{
    while (__atomic_load_n(&comm->pending, __ATOMIC_SEQ_CST) > 0)
        usleep(1000);
    munmap(comm->seg, comm->bytes);
    free(comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    pthread_mutex_lock(&comm->seg->mu);
    comm->aborted = true;
    comm->seg->aborted = 1;
    pthread_cond_broadcast(&comm->seg->cv);
    pthread_mutex_unlock(&comm->seg->mu);
    stat_add("nccl_aborts", 1);
    comm_free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    comm_free(comm);
    return ncclSuccess;
}
