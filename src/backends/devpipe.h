/* The host-to-device pipeline of a device backend, written once for every
 * device (backend_cuda.c's GPUs, backend_emulated.c's timed engines): a ring
 * of `depth` slots of device buffers; with async_copy a copy thread takes
 * batches from the loader and queues each one's copies into the next free
 * slot; without it next() fills the one slot with blocking copies. A slot's
 * copies wait (on the device) for the step that last read it; the host runs
 * at most `depth` steps ahead of the device.
 *
 * The device supplies the primitives (struct devpipe_ops): queue a batch's
 * copies, wait for them, wait for a step, mark a slot consumed. */
#ifndef DPBENCH_DEVPIPE_H
#define DPBENCH_DEVPIPE_H

#include <pthread.h>
#include <stdbool.h>

#include "backend.h"

struct devpipe_ops {
    /* Queues batch hb's copies into slot s (split by torch.chunk into
     * meta->split, meta->x pointing at the slot's buffers), after the step
     * that last read the slot; fills meta. Returns without waiting for the
     * copies, except where the device's rules hold the caller (pageable). */
    int (*fill)(void *dev, int s, const struct batch *hb, struct step_batch *meta,
                struct error *e);
    /* Blocks until batch k's copies have landed. */
    int (*copies_wait)(void *dev, long k, struct error *e);
    /* After a failed fill: waits until no copy reads the host batch. */
    void (*copies_drain)(void *dev);
    /* Blocks until step k has ended on the device. */
    int (*step_wait)(void *dev, long k, struct error *e);
    /* The step of batch k, just issued, is the last reader of slot s. */
    void (*consumed)(void *dev, int s, long k);
    /* The step reads the host batch itself (no device memory): a slot keeps
     * its host batch until the step is released, not until its copy lands. */
    bool keep_host;
};

enum devpipe_state { DEVPIPE_FREE, DEVPIPE_READY, DEVPIPE_HELD };

struct devpipe_slot {
    struct step_batch meta;  // what the training loop holds
    long *split;             // (n) rows of each replica's chunk
    enum devpipe_state state;
    struct batch *host;      // the loader's batch behind the copies, until given back
    double loaded_at;        // now_seconds() when the loader handed the batch over
};

struct devpipe {
    const struct devpipe_ops *o;
    void *dev;               // the device's context, passed to every primitive
    int F, O;                // features, out_features: bytes per row
    bool async;
    int depth;               // slots: copy_depth with async_copy, else 1
    struct devpipe_slot *slots; // (depth) batch k uses slot k % depth
    struct loader *loader;   // this epoch's
    long taken;              // batches handed to the loop this epoch
    pthread_t copier;
    bool copier_live;
    pthread_mutex_t mu;      // guards slot states and the flags below
    pthread_cond_t cv;
    bool done, failed, stop;
    struct error err;        // the copy thread's first error
};

int devpipe_init(struct devpipe *p, const struct devpipe_ops *o, void *dev,
                 const struct backend_setup *s, struct error *e);
void devpipe_free(struct devpipe *p);
/* Starts the copy thread (async_copy). */
int devpipe_epoch_begin(struct devpipe *p, struct loader *l, struct error *e);
/* backend.next: 1 with *b set, 0 at the epoch's end, -1 on error. */
int devpipe_next(struct devpipe *p, struct loader *l, struct step_batch **b,
                 struct epoch_stats *st, struct error *e);
/* Before step k: waits until at most `depth` steps are queued ahead. */
int devpipe_begin(struct devpipe *p, long k, struct error *e);
/* backend.release: the slot is consumed by the step just issued. */
void devpipe_release(struct devpipe *p, struct loader *l, struct step_batch *b);
/* Stops the copy thread (an early stop included) and gives back the host
 * batches the slots still hold. */
void devpipe_stop(struct devpipe *p);
/* The slot index of a batch devpipe_next handed out. */
int devpipe_slot(const struct devpipe *p, const struct step_batch *b);

/* Length of the overlap of two sorted lists of n disjoint intervals
 * [a[2i], a[2i+1]] (a copy engine's, a compute queue's). */
double devpipe_overlap(const double *a, long na, const double *b, long nb);

#endif
