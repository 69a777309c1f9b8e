/* parallel.device: emulated — an accelerator that behaves like a GPU in time
 * while the data and the math stay real (MLPerf Storage's DLIO does the same
 * for its accelerator utilisation). The batch is really loaded, decoded,
 * transformed and split, and the step really computed on this host by the
 * cpu backend's primitives (so losses and parameters equal device: cpu's);
 * the device's work takes the device's time (the emulate.* keys).
 *
 * Each emulated device has two engines, a host-to-device copy engine and a
 * compute engine, each a timeline: work queued on it starts when the engine
 * is free and what it waits for has ended, and runs for its modelled time.
 * Host threads that must wait for the device (a blocking copy, an event,
 * the run-ahead limit, the end of the epoch) sleep until that moment on the
 * monotonic clock: time is real, nothing spins, and the real loader threads
 * run beside the waits as they would beside a GPU.
 *
 * CUDA's rules (docs/emulated.md): a copy from pageable memory holds the
 * calling thread for its whole duration (the driver stages it through its
 * pinned buffer); a copy from pinned memory is queued on the device's one
 * copy engine and the host goes on; a step waits for its batch's copies;
 * copies and compute of one device overlap only across the two engines.
 *
 * The queueing is backend_cuda.c's, by the same code: devpipe.c's ring of
 * `depth` slots (copy_depth with async_copy, else 1) filled by a copy thread
 * (async) or by next() with a blocking copy; a slot's copies wait for the
 * step that last read it; the host runs at most `depth` steps ahead of the
 * device. This file fills devpipe's primitives with the engines' timelines. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "backend.h"
#include "chunk.h"
#include "devpipe.h"

/* One emulated device: its engines as timelines (monotonic seconds). */
struct edev {
    double copy_free;    // the copy engine's queued work ends
    double compute_free; // the compute engine's
    double copy_busy;    // this epoch's seconds of copy work
    double compute_busy; // this epoch's seconds of compute work
};

/* The device side of one slot of devpipe's ring. The "device memory" is
 * the host batch itself: the math reads it, so the slot keeps the loader's
 * batch until its step is released (devpipe_ops.keep_host). */
struct eslot {
    float **x;              // (n) x[r]: (split[r], F) views into the host batch
    double consumed;        // the step that last read this slot has ended on the device
};

struct emu {
    void *cpu;              // the cpu backend's context: the step's real math
    int n, G, F, O;         // replicas, emulated devices, features, out_features
    size_t P;               // parameters
    int *dev;               // (n) device index of each replica
    struct edev *devs;      // (G)
    double h2d_bps, pageable_bps; // copy rates, bytes per second
    double launch_s, row_s; // step time per replica, per sample, seconds
    double p2p_bps;         // gradient reduce rate, bytes per second; 0 = not timed
    bool pinned;
    struct devpipe pipe;    // the ring, copy thread and run-ahead (devpipe.c)
    struct eslot *slots;    // (pipe.depth) device side of slot k
    long cap;               // batches the interval arrays hold
    double *step_iv;        // (cap, 2) step k on device 0: first kernel, end
    double *copy_iv;        // (G, cap, 2) batch k's copies to device g: first start, last end
    double *landed;         // (cap) batch k's copies have ended on every device
    long stepped;           // batches stepped this epoch (in order)
    double t_begin;         // begin(): host clock after the run-ahead wait
    double p2p_s;           // this epoch's reduce time
};

/* Sleeps until monotonic time t. Linux lets a sleep overrun by the thread's
 * timer slack (50 us by default, a whole tutorial step): set to 1 ns for the
 * threads that wait here. A wake-up still costs tens of us on a loaded VM,
 * so a modelled time is faithful from about 0.1 ms up (docs/emulated.md). */
static void sleep_until(double t)
{
    static __thread bool slack_set;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        slack_set = true;
    }
    if (t <= now_seconds())
        return;
    struct timespec ts = {.tv_sec = (time_t)t};
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ; // a signal: the stop is seen after the wait, which is short
}

/* ---- host memory: page-locking means nothing without a DMA engine -------- */

static void *emu_host_alloc(size_t bytes, bool pinned, struct error *e)
{
    (void)pinned; // the copy rate follows loader.pin_memory instead
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
        error_set(e, "out of memory (%zu bytes)", bytes);
        return NULL;
    }
    return p;
}

static void emu_host_free(void *p, bool pinned)
{
    (void)pinned;
    free(p);
}

/* ---- copies ----------------------------------------------------------------- */

/* `bytes` host-to-device on device g's copy engine, not before `after`, as
 * part of batch k. Pinned: queued, the caller goes on. Pageable: the calling
 * thread stages it, so it is busy until the copy ends (*host, which the
 * caller sleeps until once the batch's copies are issued: a late wake-up
 * between two copies of one batch is no part of the model). Returns the end. */
static double copy_issue(struct emu *m, int g, long k, double bytes, double after, double *host)
{
    struct edev *d = &m->devs[g];
    double start = fmax(fmax(*host, d->copy_free), after);
    double dur = bytes / (m->pinned ? m->h2d_bps : m->pageable_bps);
    double *iv = &m->copy_iv[2 * ((size_t)g * (size_t)m->cap + (size_t)k)];
    if (iv[0] == iv[1]) // the batch's first copy to g (an empty interval so far)
        iv[0] = start;
    iv[1] = start + dur;
    d->copy_free = start + dur;
    d->copy_busy += dur;
    if (!m->pinned)
        *host = start + dur;
    return start + dur;
}

/* devpipe's fill: scatters batch hb into slot s by torch.chunk's rule and
 * queues its copies: each chunk to its replica's device, the targets to
 * device 0, after the step that last read the slot. */
static int emu_fill(void *dev, int s, const struct batch *hb, struct step_batch *meta,
                    struct error *e)
{
    (void)e;
    struct emu *m = dev;
    struct eslot *sl = &m->slots[s];
    long k = hb->index, *split = (long *)meta->split;
    for (int g = 0; g < m->G; g++) { // empty, where the engine's last work ended
        double *iv = &m->copy_iv[2 * ((size_t)g * (size_t)m->cap + (size_t)k)];
        iv[0] = iv[1] = m->devs[g].copy_free;
    }
    int active = chunk_split(hb->rows, m->n, split);
    double landed = 0, row_bytes = (double)m->F * sizeof(float), host = now_seconds();
    for (int i = 0, row = 0; i < active; row += (int)split[i], i++) {
        sl->x[i] = hb->x + (size_t)row * (size_t)m->F;
        landed = fmax(landed, copy_issue(m, m->dev[i], k, (double)split[i] * row_bytes,
                                         sl->consumed, &host));
    }
    double y_bytes = (double)hb->rows * m->O * sizeof(float);
    landed = fmax(landed, copy_issue(m, 0, k, y_bytes, sl->consumed, &host));
    sleep_until(host); // pageable: staged by this thread
    meta->index = k;
    meta->rows = hb->rows;
    meta->active = active;
    meta->x = sl->x;
    meta->y = hb->y;
    m->landed[k] = landed;
    return 0;
}

static int emu_copies_wait(void *dev, long k, struct error *e)
{
    (void)e;
    sleep_until(((struct emu *)dev)->landed[k]);
    return 0;
}

static void emu_copies_drain(void *dev)
{
    (void)dev; // a copy's time is its end: nothing reads the host batch later
}

static int emu_step_wait(void *dev, long k, struct error *e)
{
    (void)e;
    sleep_until(((struct emu *)dev)->step_iv[2 * k + 1]);
    return 0;
}

static void emu_consumed(void *dev, int s, long k)
{
    struct emu *m = dev;
    m->slots[s].consumed = m->stepped > k ? m->step_iv[2 * k + 1] : now_seconds();
}

static const struct devpipe_ops emu_pipe_ops = {
    .fill = emu_fill,
    .copies_wait = emu_copies_wait,
    .copies_drain = emu_copies_drain,
    .step_wait = emu_step_wait,
    .consumed = emu_consumed,
    .keep_host = true,
};

/* ---- the epoch --------------------------------------------------------------- */

static int emu_epoch_begin(void *ctx, struct loader *l, struct error *e)
{
    struct emu *m = ctx;
    if (l->n_batches > m->cap) {
        free(m->step_iv);
        free(m->copy_iv);
        free(m->landed);
        m->cap = l->n_batches;
        m->step_iv = malloc(2 * (size_t)m->cap * sizeof *m->step_iv);
        m->copy_iv = malloc(2 * (size_t)m->cap * (size_t)m->G * sizeof *m->copy_iv);
        m->landed = malloc((size_t)m->cap * sizeof *m->landed);
        if (!m->step_iv || !m->copy_iv || !m->landed)
            return error_set(e, "emulated backend: out of memory for %ld batches", m->cap);
    }
    memset(m->step_iv, 0, 2 * (size_t)m->cap * sizeof *m->step_iv);
    m->stepped = 0;
    m->p2p_s = 0;
    for (int g = 0; g < m->G; g++)
        m->devs[g].copy_busy = m->devs[g].compute_busy = 0;
    for (int k = 0; k < m->pipe.depth; k++)
        m->slots[k].consumed = 0;
    if (devpipe_epoch_begin(&m->pipe, l, e))
        return error_wrap(e, "emulated backend");
    return 0;
}

static int emu_next(void *ctx, struct loader *l, struct step_batch **b, struct epoch_stats *st,
                    struct error *e)
{
    return devpipe_next(&((struct emu *)ctx)->pipe, l, b, st, e);
}

static void emu_release(void *ctx, struct loader *l, struct step_batch *b)
{
    devpipe_release(&((struct emu *)ctx)->pipe, l, b);
}

/* Stops the copy thread, waits until every engine's queued work has ended
 * (the device's synchronisation), then adds up the epoch's engine times. */
static int emu_epoch_end(void *ctx, struct epoch_stats *st, struct error *e)
{
    (void)e;
    struct emu *m = ctx;
    devpipe_stop(&m->pipe);
    double idle = 0;
    for (int g = 0; g < m->G; g++)
        idle = fmax(idle, fmax(m->devs[g].copy_free, m->devs[g].compute_free));
    sleep_until(idle);
    long n = m->stepped;
    for (long k = 0; k < n; k++)
        st->compute_s += m->step_iv[2 * k + 1] - m->step_iv[2 * k];
    for (int g = 0; g < m->G; g++) {
        st->copy_s += m->devs[g].copy_busy;
        st->engine_compute_s += m->devs[g].compute_busy;
        st->hidden_s += devpipe_overlap(m->copy_iv + 2 * (size_t)g * (size_t)m->cap, n, m->step_iv, n);
    }
    st->p2p_s += m->p2p_s;
    return 0;
}

/* ---- the step's timing ------------------------------------------------------ */

/* Before a step: at most `depth` steps queued ahead of the device. */
static int emu_begin(void *ctx, const struct step_batch *b, struct error *e)
{
    struct emu *m = ctx;
    if (devpipe_begin(&m->pipe, b->index, e))
        return -1;
    m->t_begin = now_seconds();
    return 0;
}

/* After the step's math: its device work, queued on the replicas' compute
 * engines once its copies have landed and the step before has ended (fork
 * follows replica 0's SGD), then the gradients' reduce onto device 0. The
 * device cannot end before the host has issued the step: when the host's
 * own math is longer, the step takes the host's time (report_emulated.c
 * says so). */
static int emu_end(void *ctx, const struct step_batch *b, struct epoch_stats *st,
                   struct error *e)
{
    (void)st, (void)e;
    struct emu *m = ctx;
    long k = b->index;
    double t = now_seconds(), prev = k > 0 ? m->step_iv[2 * k - 1] : 0;
    double first = INFINITY, last = 0;
    bool used[m->G];
    memset(used, 0, sizeof used);
    int n_used = 0;
    for (int i = 0; i < b->active; i++) {
        struct edev *d = &m->devs[m->dev[i]];
        double start = fmax(fmax(m->t_begin, d->compute_free), fmax(m->landed[k], prev));
        double dur = m->launch_s + (double)b->split[i] * m->row_s;
        d->compute_free = start + dur;
        d->compute_busy += dur;
        first = fmin(first, start);
        last = fmax(last, start + dur);
        n_used += !used[m->dev[i]];
        used[m->dev[i]] = true;
    }
    if (m->p2p_bps > 0 && n_used > 1) { // each other device's gradient, one after another
        double r = (double)(n_used - 1) * (double)m->P * sizeof(float) / m->p2p_bps;
        last += r;
        m->p2p_s += r;
    }
    last = fmax(last, t);
    m->devs[0].compute_free = fmax(m->devs[0].compute_free, last);
    m->step_iv[2 * k] = first;
    m->step_iv[2 * k + 1] = last;
    m->stepped = k + 1;
    return 0;
}

/* ---- the math: the cpu backend's primitives on the same host memory ------- */

static int emu_forward(void *ctx, int q, const float *x, long rows, const float *w, float *out,
                       struct error *e)
{
    return backend_cpu.ops->forward(((struct emu *)ctx)->cpu, q, x, rows, w, out, e);
}

static int emu_backward(void *ctx, int q, const float *x, const float *dout, long rows,
                        float alpha, float *g, struct error *e)
{
    return backend_cpu.ops->backward(((struct emu *)ctx)->cpu, q, x, dout, rows, alpha, g, e);
}

static int emu_copy(void *ctx, int q, float *dst, int dst_r, const float *src, int src_r,
                    size_t n, struct error *e)
{
    return backend_cpu.ops->copy(((struct emu *)ctx)->cpu, q, dst, dst_r, src, src_r, n, e);
}

static int emu_axpy(void *ctx, int q, size_t n, float alpha, const float *x, float *y,
                    struct error *e)
{
    return backend_cpu.ops->axpy(((struct emu *)ctx)->cpu, q, n, alpha, x, y, e);
}

static int emu_scal(void *ctx, int q, size_t n, float alpha, float *x, struct error *e)
{
    return backend_cpu.ops->scal(((struct emu *)ctx)->cpu, q, n, alpha, x, e);
}

static int emu_fork(void *ctx, int n, struct error *e)
{
    return backend_cpu.ops->fork(((struct emu *)ctx)->cpu, n, e);
}

static int emu_join(void *ctx, int n, struct error *e)
{
    return backend_cpu.ops->join(((struct emu *)ctx)->cpu, n, e);
}

/* ---- setup ------------------------------------------------------------------- */

static void emu_free(void *ctx)
{
    struct emu *m = ctx;
    if (!m)
        return;
    devpipe_stop(&m->pipe);
    if (m->cpu)
        backend_cpu.free(m->cpu);
    for (int k = 0; m->slots && k < m->pipe.depth; k++)
        free(m->slots[k].x);
    free(m->slots);
    free(m->dev);
    free(m->devs);
    free(m->step_iv);
    free(m->copy_iv);
    free(m->landed);
    devpipe_free(&m->pipe);
    free(m);
}

/* Replicas to emulated devices: distinct ids in order of first use (a
 * repeated id shares that device's engines), replica i's own without ids. */
static void map_devices(struct emu *m, const long *ids)
{
    long seen[m->n];
    for (int i = 0; i < m->n; i++) {
        long id = ids ? ids[i] : i;
        int g = 0;
        while (g < m->G && seen[g] != id)
            g++;
        if (g == m->G)
            seen[m->G++] = id;
        m->dev[i] = g;
    }
}

static int emu_setup(struct emu *m, const struct backend_setup *s, struct error *e)
{
    const struct config_emulate *em = s->emulate;
    if (!em)
        return error_set(e, "internal error: no emulate.* settings");
    m->n = s->replicas;
    m->F = s->features;
    m->O = s->out_features;
    m->P = (size_t)m->O * (size_t)m->F + (size_t)m->O;
    m->h2d_bps = 1e9 * em->h2d_gbps;
    m->pageable_bps = 1e9 * em->pageable_gbps;
    m->launch_s = 1e-6 * em->launch_us;
    m->row_s = 1e-6 * em->compute_us;
    m->p2p_bps = 1e9 * em->p2p_gbps;
    m->pinned = s->pin_memory;

    m->dev = calloc((size_t)m->n, sizeof *m->dev);
    m->devs = calloc((size_t)m->n, sizeof *m->devs);
    m->slots = calloc((size_t)m->pipe.depth, sizeof *m->slots);
    if (!m->dev || !m->devs || !m->slots)
        return error_set(e, "out of memory");
    map_devices(m, s->device_ids);
    for (int k = 0; k < m->pipe.depth; k++)
        if (!(m->slots[k].x = calloc((size_t)m->n, sizeof *m->slots[k].x)))
            return error_set(e, "out of memory");
    return backend_cpu.init(&m->cpu, s, e);
}

static int emu_init(void **ctx, const struct backend_setup *s, struct error *e)
{
    struct emu *m = calloc(1, sizeof *m);
    if (!m)
        return error_set(e, "emulated backend: out of memory");
    if (devpipe_init(&m->pipe, &emu_pipe_ops, m, s, e) || emu_setup(m, s, e)) {
        emu_free(m);
        return error_wrap(e, "emulated backend");
    }
    *ctx = m;
    return 0;
}

static int emu_probe(struct error *e)
{
    (void)e;
    return 0; // runs anywhere
}

static void emu_describe(char *buf, size_t n)
{
    snprintf(buf, n, "emulated accelerator: device times modelled from the emulate.* keys, "
                     "math on this host");
}

static const struct device_ops emu_ops = {
    .forward = emu_forward,
    .backward = emu_backward,
    .copy = emu_copy,
    .axpy = emu_axpy,
    .scal = emu_scal,
    .fork = emu_fork,
    .join = emu_join,
    .begin = emu_begin,
    .end = emu_end,
};

const struct backend backend_emulated = {
    .name = "emulated",
    .host_math = true,
    .emulated = true,
    .has_devices = true, // parallel.devices' ids name its modelled devices
    .device_copies = true, // pin_memory, async_copy and copy_depth act on its modelled copies
    .probe = emu_probe,
    .describe = emu_describe,
    .host_alloc = emu_host_alloc,
    .host_free = emu_host_free,
    .init = emu_init,
    .epoch_begin = emu_epoch_begin,
    .next = emu_next,
    .release = emu_release,
    .epoch_end = emu_epoch_end,
    .free = emu_free,
    .ops = &emu_ops,
};
