/* The CUDA backend's own header, included by its files only (training code
 * never sees a CUDA type): the check macros, the backend's state, and what
 * its files call across. The files, by job:
 *
 *   backend_cuda.c   setup and teardown, the epoch, the backend's table
 *   cuda_ring.c      the copy ring's device side (devpipe.h's primitives)
 *                    and the per-batch events of the epoch's timeline
 *   cuda_step.c      the primitives of step.c's steps (struct device_ops)
 *   cuda_probe.c     whether CUDA can run here, and the device line
 *   cuda_bandwidth.c dpbench --h2d-bandwidth
 *   cuda_module.c    dpbench's own kernels (cuda_kernels.cu): loaded, launched
 *   cuda_dl.c        cudart, cuBLAS and the driver, opened on first use */
#ifndef DPBENCH_CUDA_BACKEND_H
#define DPBENCH_CUDA_BACKEND_H

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "backend.h"
#include "devpipe.h"

/* ---- error checks ------------------------------------------------------- */

/* Sets e to "file:line: call: the library's message", returns -1. */
int cuda_fail(struct error *e, cudaError_t err, const char *call, const char *file, int line);
int cublas_fail(struct error *e, cublasStatus_t st, const char *call, const char *file, int line);
int cu_fail(struct error *e, CUresult rc, const char *call, const char *file, int line);

/* In functions that return int and have `struct error *e` in scope. */
#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess)                                                             \
            return cuda_fail(e, err_, #call, __FILE__, __LINE__);                           \
    } while (0)

#define CUBLAS_CHECK(call)                                                                   \
    do {                                                                                     \
        cublasStatus_t st_ = (call);                                                         \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                    \
            return cublas_fail(e, st_, #call, __FILE__, __LINE__);                          \
    } while (0)

#define CU_CHECK(call)                                                                       \
    do {                                                                                     \
        CUresult rc_ = (call);                                                               \
        if (rc_ != CUDA_SUCCESS)                                                             \
            return cu_fail(e, rc_, #call, __FILE__, __LINE__);                              \
    } while (0)

/* In teardown, where nothing can be returned: say so on stderr and go on. */
#define CUDA_WARN(call)                                                                      \
    do {                                                                                     \
        cudaError_t err_ = (call);                                                           \
        if (err_ != cudaSuccess)                                                             \
            fprintf(stderr, "dpbench: warning: %s:%d: %s: %s (%s)\n", __FILE__, __LINE__,   \
                    #call, cudaGetErrorString(err_), cudaGetErrorName(err_));               \
    } while (0)

/* ---- state -------------------------------------------------------------- */

/* The device buffers of one slot of devpipe's ring: a batch's chunks on
 * their replicas' devices and its targets on the output device. */
struct slot {
    float **x;             // (n) x[r]: (chunk_max, F) replica r's chunk, on its device
    float *y;              // (batch_max, O) targets, on device 0
    cudaEvent_t consumed;  // device 0: the step that read this slot is done
};

/* One distinct device among the replicas'. */
struct gpu {
    int id;
    cudaStream_t copy;     // host-to-device copies to this device
    cudaEvent_t base;      // epoch start: zero of this device's timeline
    bool begun;            // slot_fill: the batch's copies to this device have begun
};

struct replica {
    int dev;               // CUDA device id
    int g;                 // index of dev in cuda_dp.gpus
    cudaStream_t stream;   // this replica's compute
    cublasHandle_t blas;   // bound to `stream`
    float *ones;           // (batch_max) all 1: bias add and bias gradient
    cudaEvent_t joined;    // join: this stream's work so far
};

/* The epoch's timeline: a ring of event sets (batch k records into set
 * k % ring), and what is read off them. */
struct timeline {
    int ring;                           // event sets: 2 x the copy ring's depth
    cudaEvent_t *start, *end;           // (ring) a step, on replica 0's stream
    cudaEvent_t *copy_begin, *copy_end; // (ring, G) its batch's copies to device g
    long cap;                           // batches the arrays below hold
    long read;                          // batches whose intervals are read, in order
    double *steps;                      // (2 cap) step k's interval on device 0's timeline, ms
    double *copies;                     // (G, 2 cap) batch k's copies to device g, ms
    float *loss;                        // (cap) device 0: the raw loss sum of batch k
    float *loss_host;                   // (cap)
};

/* dpbench's kernels in the output device's context (cuda_module.c). */
struct cuda_kernels {
    CUmodule mod;          // NULL until loaded
    int dev;               // the device it was loaded on
    CUfunction correct;    // dpbench_count_correct
    const struct loss_fn *loss; // the loss whose kernel `loss_kernel` is
    CUfunction loss_kernel;
};

struct cuda_dp {
    int F, O, n, G;        // features, out_features, replicas, distinct devices
    long batch_max, chunk_max;
    size_t P;              // O * F + O parameters
    struct replica *reps;  // (n)
    struct gpu *gpus;      // (G) gpus[0] is replica 0's device, the output device
    cudaEvent_t forked;    // fork: replica 0's stream's work so far
    const struct loss_fn *loss; // the loss of this epoch's steps (for epoch_end)
    float *scratch;        // (3 batch_max O) pinned host: a loss without a kernel
    bool classify;         // count correct predictions (labelled data), on device 0
    bool blocking;         // waiting threads sleep (cuda_blocking), else spin
    unsigned long long *correct; // device 0: this epoch's correct predictions
    struct cuda_kernels k;
    struct timeline tl;
    /* the copy ring */
    struct devpipe pipe;   // slots' host side, copy thread, run-ahead
    struct slot *slots;    // (pipe.depth) device buffers of slot k
    long stepped;          // batches stepped this epoch (in order)
    double host_s;         // this epoch's host time in release (step.c times the steps)
};

/* backend_cuda.c */
/* Waits for everything queued on every stream, all of them even after an
 * error (teardown frees what they use); returns the first error. */
int cuda_sync_all(struct cuda_dp *dp, struct error *e);
/* Whether host threads sleep while they wait for a device (the device's
 * schedule flag and the waited-on events'): DPBENCH_CUDA_SYNC=spin or block,
 * else only when the waiting threads (waiters) outnumber the cores left
 * beside the loader's workers (spare_cores). */
bool cuda_blocking(int spare_cores, int waiters);
/* cudaMalloc / cudaFree, counted: the backend's buffers live now
 * (cuda_buffers_live, 0 after every teardown). */
cudaError_t cuda_mem_alloc(void **p, size_t bytes);
cudaError_t cuda_mem_free(void *p);
cudaError_t cuda_pin_alloc(void **p, size_t bytes, unsigned flags); // cudaHostAlloc
cudaError_t cuda_pin_free(void *p);
long cuda_buffers_live(void);

/* cuda_ring.c */
extern const struct devpipe_ops cuda_pipe_ops;
/* The event ring (made once), the intervals and loss slots for n batches
 * per epoch (kept when they suffice); no batch read yet. */
int cuda_timeline_reserve(struct cuda_dp *dp, long n, struct error *e);
/* Reads the intervals of batches read..upto-1, whose steps have ended. */
int cuda_timeline_read(struct cuda_dp *dp, long upto, struct error *e);
void cuda_timeline_free(struct cuda_dp *dp);
/* Batch k's event set. */
int cuda_set(const struct cuda_dp *dp, long k);

/* cuda_step.c */
extern const struct device_ops cuda_ops;

/* cuda_probe.c */
int cuda_probe(struct error *e);
void cuda_describe(char *buf, size_t n);

/* cuda_module.c */
/* Loads the kernels into device dev's context (made current). */
int cuda_kernels_load(struct cuda_kernels *k, int dev, struct error *e);
void cuda_kernels_free(struct cuda_kernels *k);
int cuda_kernel_find(struct cuda_kernels *k, const char *name, CUfunction *f, struct error *e);
/* Queues f on stream s as one block (cuda_kernels.h): args as cuLaunchKernel's. */
int cuda_kernel_launch(CUfunction f, cudaStream_t s, void **args, struct error *e);

/* cuda_bandwidth.c */
int cuda_bandwidth(FILE *out, struct h2d_profile *prof, struct error *e);

#endif
