/* Test double, never linked into dpbench: the parts of tests/fakecuda.c's
 * host-only emulation of the CUDA runtime, driver, cuBLAS and NCCL that its
 * files share (fakecuda.c: devices, contexts, memory, streams, events,
 * waits; fakecublas.c; fakedriver.c: modules and our kernels, run by name;
 * fakenccl.c). What the emulation models, so that each class of misuse a
 * real GPU punishes fails a test here:
 *
 * - device memory the host cannot touch: each cudaMalloc is a mapping with
 *   no access; the emulation's own work reaches it through a second mapping
 *   of the same pages (dmem), so a host read of a device pointer faults;
 * - the current device as per-thread state, and a context opened on a
 *   device by the first call that needs one there (counted per device; with
 *   FAKE_EXCLUSIVE_DIR a device's context is exclusive to one process, as in
 *   EXCLUSIVE_PROCESS mode);
 * - streams as threads that run their work later (FAKE_DELAY_US random,
 *   FAKE_KERNEL_US fixed per compute op), so a timer that does not wait for
 *   the device measures nothing of its work;
 * - waits that spin unless the device or the event asks to block; the
 *   microseconds spun in each wait are counted (fake_stat "max_spin_us").
 *
 * It says nothing about real GPU numbers or real-driver behaviour. */
#ifndef FAKECUDA_H
#define FAKECUDA_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define FAKE_MAX_DEV 64

extern pthread_mutex_t g_mu;          // guards the tables below
extern int n_dev;                     // FAKE_CUDA_DEVICES
extern __thread int cur_dev;          // this thread's current device
extern long kernel_us;                // FAKE_KERNEL_US: fixed time of each compute op

void fake_init(void);
void complain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
cudaError_t fail(cudaError_t e);
double fake_now(void);
/* Device dev's PCI bus: each device on one of its own; with FAKE_BUS_PER_RANK
 * each rank's devices on their own, as where a launcher shows each rank its
 * own GPU as device 0 (CUDA_VISIBLE_DEVICES per rank). */
int fake_bus(int dev);
/* Opens a context on the current device if it has none: the first call
 * there that needs one. cudaErrorDevicesUnavailable when another process
 * holds the device exclusively. */
cudaError_t need_ctx(void);
void stat_add(const char *name, long v);
void stat_max(const char *name, long v);

/* ---- memory ---- */
/* The device (>= 0) of the device allocation holding [p, p+n), -1 for
 * host memory (pinned or not), -2 when it overruns its allocation. */
int mem_dev(const void *p, size_t n);
bool is_dev(const void *p, size_t n, int dev);
bool is_pinned(const void *p);
/* Where the emulation itself reads and writes p: a device pointer's
 * accessible twin, any other pointer as it is. */
void *dmem(const void *p);

/* ---- streams: ops run in order on the stream's thread ---- */
struct op {
    void (*fn)(struct op *);
    struct op *next;
    void *p[6];
    size_t n[4];
    long l[4];
    float f[2];
    int i[8];
    bool compute;            // takes FAKE_KERNEL_US
    struct CUevent_st *ev;
    void *arg;               // an op's own data (freed with it when free_arg)
    bool free_arg;
};

struct CUstream_st {
    int dev;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op *head, *tail;
    long pending;
    bool quit;
    unsigned seed;
    struct CUstream_st *next_all;
};

struct op *op_new(void (*fn)(struct op *));
/* Queues o on s (NULL: runs it now, on the calling thread). */
void enqueue(struct CUstream_st *s, struct op *o);
/* Blocks until s has run everything queued so far, spinning unless s's
 * device blocks (cudaDeviceScheduleBlockingSync). */
void stream_drain(struct CUstream_st *s);

#endif
