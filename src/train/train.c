/* The training loop: next batch -> DataParallel or DDP step -> release,
 * timed around each epoch. The steps live in step.c, the data movement in
 * the backend, the collectives in comm.c. */
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "ddp.h"
#include "rlimits.h"
#include "effect.h"
#include "progress.h"
#include "rng.h"
#include "signals.h"
#include "step.h"

bool train_progress;

/* What the DDP step's allreduce needs besides the gradient: the comm, and
 * this rank's epoch so far, whose loss (host losses are summed before the
 * allreduce) says whether this rank can go on; and where the gradient is in
 * device memory but the engine sums host memory (cuda with comm mpi), the
 * step's backend and a host buffer to stage the gradient through. */
struct grad_arg {
    struct comm *cm;
    const struct epoch_stats *st;
    struct step *s;
    float *host;       // (P) the staged gradient; NULL when the engine sums it in place
};

/* The DDP step's allreduce; this rank's wish to stop travels with it.
 * Staged: the download waits for the step's queue, the upload for the
 * copy, so the engine's time stays its own and the copies count as compute. */
static int grad_allreduce(void *arg, float *buf, size_t n, struct error *e)
{
    const struct grad_arg *g = arg;
    int wish = !isfinite(g->st->loss_sum) ? COMM_FAIL : stop_requested() ? COMM_STOP : COMM_GO;
    if (!g->host)
        return comm_allreduce(g->cm, buf, n, wish, e);
    const struct device_ops *o = g->s->o;
    if (o->download(g->s->ctx, 0, g->host, buf, n, e) ||
        comm_allreduce(g->cm, g->host, n, wish, e))
        return -1;
    return o->upload(g->s->ctx, 0, buf, g->host, n, e);
}

/* Progress after batch k of epoch ep (progress.c says how and how often); `done` clears it. */
static void progress(long ep, long epochs, long k, long batches, bool done)
{
    if (done)
        progress_clear();
    else
        progress_batch(ep, epochs, k, batches);
}

void train_init_params(unsigned long seed, int in, int out, float *w, float *b)
{
    struct rng r;
    rng_init(&r, seed, RNG_INIT, 0);
    double bound = 1.0 / sqrt((double)in);
    for (size_t i = 0; i < (size_t)out * (size_t)in; i++)
        w[i] = (float)((2.0 * rng_uniform(&r) - 1.0) * bound);
    for (int j = 0; j < out; j++)
        b[j] = (float)((2.0 * rng_uniform(&r) - 1.0) * bound);
}

static void trace_batch(FILE *f, const long *split, int replicas, long rows, int F, int O)
{
    for (int i = 0; i < replicas && split[i] > 0; i++)
        fprintf(f, "\tIn Model: input size [%ld, %d] output size [%ld, %d]\n", split[i], F,
                split[i], O);
    fprintf(f, "Outside: input size [%ld, %d] output_size [%ld, %d]\n", rows, F, rows, O);
}

/* Cores the loader's workers leave free of this process's share (the host's
 * online cores over its ranks, fewer where the affinity mask allows fewer:
 * taskset, mpirun's binding); 0 or less when the workers take them all. */
static int spare_cores(long num_workers, const struct comm *cm)
{
    static int said; // a rank bound to fewer cores than its threads: said once, by rank 0
    long share = sysconf(_SC_NPROCESSORS_ONLN) / (cm ? cm->local_size : 1), usable = cores_usable();
    const char *mpirun = getenv("OMPI_COMM_WORLD_SIZE"); // else taskset, a cgroup's cpuset
    if (cm && cm->rank == 0 && usable < share && num_workers + 1 > usable && !said++)
        fprintf(stderr, "dpbench: rank 0 may use %ld of the %ld cores that are its share of this "
                        "host (%s): its training thread and %ld loader worker%s take turns on "
                        "them%s\n", usable, share, mpirun ? "mpirun binds each rank to cores by "
                        "default" : "its affinity mask", num_workers, num_workers == 1 ? "" : "s",
                mpirun ? "; mpirun --bind-to none gives them all" : "");
    return (int)((usable < share ? usable : share) - num_workers);
}

/* out->stopped for a loss that became nan (or infinite) at batch index k of
 * epoch ep (warmup included), on `rank` of a ddp job (-1: this process). */
static void diverged(struct run_result *out, const struct config *c, int rank, bool nan, long k,
                     long ep)
{
    char where[32] = "";
    if (rank >= 0)
        snprintf(where, sizeof where, " on rank %d", rank);
    long warm = c->train.warmup_epochs;
    snprintf(out->stopped, sizeof out->stopped,
             "the loss became %s%s at batch %ld of %sepoch %ld (train.lr %g diverged); "
             "stopped, the epochs before it are kept",
             nan ? "nan" : "infinite", where, k + 1, ep < warm ? "warmup " : "",
             ep < warm ? ep + 1 : ep - warm + 1, c->train.lr);
}

/* Loss and accuracy of the final parameters w (O, F), b (O) over the eval
 * split, in order, on the host. */
static int evaluate(const struct dataset *v, const struct loss_fn *loss, const float *w,
                    const float *b, struct run_result *out, struct error *e)
{
    int F = v->features, O = v->out_features;
    float *x = malloc((size_t)F * sizeof(float));
    float *y = malloc((size_t)O * sizeof(float));
    float *o = malloc((size_t)O * sizeof(float));
    float *g = malloc((size_t)O * sizeof(float));
    int rc = 0;
    if (!x || !y || !o || !g)
        rc = error_set(e, "out of memory");
    double loss_sum = 0;
    long correct = 0, bytes = 0;
    for (long i = 0; !rc && i < v->length && !train_stop; i++) {
        if (dataset_get(v, i, 0, x, y, &bytes, e)) {
            rc = error_wrap(e, "evaluation");
            break;
        }
        for (int j = 0; j < O; j++) {
            double acc = b[j];
            for (int k = 0; k < F; k++)
                acc += (double)w[(size_t)j * F + k] * x[k];
            o[j] = (float)acc;
        }
        loss_sum += loss->sample_sum(loss->host(o, y, 1, O, g), O);
        correct += loss_correct(o, y, 1, O);
    }
    if (!rc && !train_stop) {
        out->eval.done = true;
        out->eval.samples = v->length;
        out->eval.loss = loss_sum / (double)v->length;
        out->eval.accuracy = (double)correct / (double)v->length;
    }
    free(x);
    free(y);
    free(o);
    free(g);
    return rc;
}

static bool devices_shared(const struct config *c)
{
    for (int i = 0; i < c->parallel.n_devices; i++)
        for (int j = 0; j < i; j++)
            if (c->parallel.devices[i] == c->parallel.devices[j])
                return true;
    return false;
}

/* One run in progress: what setup made, what each epoch uses, what finish
 * hands back or frees. */
struct train {
    const struct config *c;
    const struct dataset *d;
    const struct backend *be;
    struct comm *cm;           // ddp's communicator, NULL for dp
    bool ddp;
    int world;                 // ranks (1 for dp)
    int n;                     // replicas in this process
    int F, O;                  // features, out_features
    size_t OF;                 // O * F, weights
    long total_epochs;         // warmup + measured
    long cycle;                // the epochs after which a run held open starts over
    long ep, from;             // the next epoch; the first of this call's (train_more)
    float lr;
    FILE *trace;
    struct run_result *out;
    const struct loss_fn *loss;
    float *w0;                 // (O, F) then (O): initial weight and bias
    long device_ids[CONFIG_MAX_DEVICES]; // (n) device of each replica
    struct backend_setup setup;
    struct loader_options lo;
    struct loader l;
    bool have_loader;          // l was initialised
    struct step s;
    struct epoch_stats st;     // the epoch in progress
    struct grad_arg ga;        // the DDP step's allreduce: cm and &st
    struct step_comm sc;
    bool together;             // a failure every rank had after the same step
};

enum { EPOCH_NEXT = 0, EPOCH_STOP = 1, EPOCH_FAILED = -1 };

/* out's description of the run, before any epoch. */
static int result_begin(struct train *t, struct error *e)
{
    struct run_result *out = t->out;
    memset(out, 0, sizeof *out);
    if (config_copy(&out->cfg, t->c))
        return error_set(e, "out of memory");
    out->backend = t->be->name;
    out->emulated = t->be->emulated;
    out->replicas = t->n;
    out->world_size = t->world;
    out->comm = t->cm ? t->cm->name : NULL;
    out->allreduce_bytes = (double)(t->O * t->F + t->O) * sizeof(float);
    out->shared_devices = devices_shared(t->c);
    effect_notes(t->c, t->be, out->notes, sizeof out->notes);
    return 0;
}

/* The initial parameters (rank 0's on every rank) and the loss the data
 * trains with. */
static int initial_params(struct train *t, struct error *e)
{
    t->w0 = malloc((t->OF + (size_t)t->O) * sizeof(float));
    if (!t->w0)
        return error_set(e, "out of memory");
    train_init_params((unsigned long)t->c->seed, t->F, t->O, t->w0, t->w0 + t->OF);
    dataset_resolve_config(t->d, &t->out->cfg); // the data's shapes and the loss it trains with
    t->loss = loss_find(t->out->cfg.model.loss);
    t->out->loss = t->loss->name;
    return t->cm ? comm_bcast(t->cm, t->w0, (t->OF + (size_t)t->O) * sizeof(float), e) : 0;
}

/* What the backend and the loader are set up with. */
static void describe_setup(struct train *t)
{
    const struct config *c = t->c;
    struct comm *cm = t->cm;
    for (int i = 0; i < t->n && i < CONFIG_MAX_DEVICES; i++)
        t->device_ids[i] = c->parallel.n_devices ? c->parallel.devices[i] : i;
    if (cm) // one device per rank: the local rank's, or its entry of parallel.devices
        t->device_ids[0] = comm_device(cm, c->parallel.devices, c->parallel.n_devices);
    t->setup = (struct backend_setup){
        .features = t->F,
        .out_features = t->O,
        .batch_size = c->loader.batch_size,
        .replicas = t->n,
        .device_ids = t->be->has_devices ? t->device_ids : NULL,
        .pin_memory = c->loader.pin_memory,
        .async_copy = c->loader.async_copy,
        .copy_depth = (int)c->loader.copy_depth,
        .spare_cores = spare_cores(c->loader.num_workers, cm),
        .w0 = t->w0,
        .b0 = t->w0 + t->OF,
        .classify = t->d->classes > 0,
        .emulate = &c->emulate,
    };
    t->setup.compute_cores = t->setup.spare_cores > 1 ? t->setup.spare_cores : 1;
    t->lo = (struct loader_options){
        .batch_size = c->loader.batch_size,
        .shuffle = c->loader.shuffle,
        .drop_last = c->loader.drop_last,
        .num_workers = (int)c->loader.num_workers,
        .prefetch_factor = (int)c->loader.prefetch_factor,
        .persistent_workers = c->loader.persistent_workers,
        .pin_memory = c->loader.pin_memory,
        .extra_buffers = c->loader.async_copy ? (int)c->loader.copy_depth : 0,
        .seed = (unsigned long)c->seed,
        .rank = cm ? cm->rank : 0,
        .world = t->world,
        .mem = {t->be->host_alloc, t->be->host_free},
    };
}

/* Where the step's math runs on this host: OpenBLAS threads and library per
 * replica, measured (blas_tune.c). Replicas run side by side: together never
 * more threads than free cores. */
/* The choices made so far in this process, by shape: every later run of a
 * shape (the rounds of a point, points that differ in a loader knob only)
 * computes with the same library and threads, so that a choice that is a
 * close call never differs between the runs a verdict compares. */
enum { BLAS_CACHE = 16 };
static struct blas_cached {
    int F, O, most, side;
    long rows;
    char only[16];
    struct blas_choice choice;
} blas_cache[BLAS_CACHE];
static int blas_cached;

static const struct blas_choice *blas_lookup(int F, int O, long rows, int most, int side,
                                             const char *only)
{
    for (int i = 0; i < blas_cached; i++) {
        const struct blas_cached *b = &blas_cache[i];
        if (b->F == F && b->O == O && b->rows == rows && b->most == most && b->side == side &&
            strcmp(b->only, only) == 0)
            return &b->choice;
    }
    return NULL;
}

static void blas_remember(int F, int O, long rows, int most, int side, const char *only,
                          const struct blas_choice *choice)
{
    if (blas_cached == BLAS_CACHE)
        return;
    struct blas_cached *b = &blas_cache[blas_cached++];
    *b = (struct blas_cached){.F = F, .O = O, .rows = rows, .most = most, .side = side,
                              .choice = *choice};
    snprintf(b->only, sizeof b->only, "%s", only);
}

static int tune_host_blas(struct train *t, struct error *e)
{
    const struct config *c = t->c;
    int n = t->n;
    long rows = c->loader.batch_size < t->d->length ? c->loader.batch_size : t->d->length;
    int side = n < t->setup.compute_cores ? n : t->setup.compute_cores; // replicas at once
    int most = t->setup.compute_cores / n; // and no more than OpenBLAS started (rlimits.h)
    most = most < rlimits_blas_threads() ? most : rlimits_blas_threads();
    rows = (rows + n - 1) / n;
    const struct blas_choice *seen = blas_lookup(t->F, t->O, rows, most, side, c->parallel.blas);
    if (seen) {
        t->out->blas = *seen; // backend_cpu sets OpenBLAS's threads from it
    } else if (blas_choose_threads(t->F, t->O, rows, most, side, c->parallel.blas,
                                   &t->out->blas, e)) {
        return -1;
    } else {
        blas_remember(t->F, t->O, rows, most, side, c->parallel.blas, &t->out->blas);
    }
    long fixed = c->parallel.blas_threads; // the config's count, where it gives one
    if (fixed > 0 && strcmp(c->parallel.blas, "libxsmm") != 0) {
        t->out->blas.lib = HOSTMM_OPENBLAS;
        t->out->blas.threads = (int)(fixed < rlimits_blas_threads() ? fixed : rlimits_blas_threads());
    }
    t->setup.blas_threads = t->out->blas.threads;
    t->setup.blas_lib = t->out->blas.lib;
    return 0;
}

/* report.floor: the least an epoch of these shapes can take here. */
static int measure_floor(struct train *t, struct error *e)
{
    struct floor_setup fs = {
        .lo = t->lo,
        .features = t->F,
        .out_features = t->O,
        .replicas = t->n,
        .workers = (int)t->c->loader.num_workers,
        .cores = (int)cores_usable(),
        .compute_cores = t->setup.compute_cores,
        .blas_threads = t->setup.blas_threads,
        .blas_lib = t->setup.blas_lib,
    };
    return floor_measure(t->d, &fs, &t->out->floor, e);
}

/* The DDP step's allreduce: the communicator bound to this rank's device
 * and queue (a device engine's collective runs there), and a staging buffer
 * where the engine cannot read the backend's memory. */
static int grad_setup(struct train *t, struct error *e)
{
    t->ga = (struct grad_arg){t->cm, &t->st, &t->s, NULL};
    t->sc = (struct step_comm){.world = t->world, .allreduce = grad_allreduce, .arg = &t->ga};
    if (!t->cm)
        return 0;
    void *queue = t->be->ops->queue ? t->be->ops->queue(t->s.ctx, 0) : NULL;
    if (comm_bind(t->cm, (int)t->device_ids[0], queue, e))
        return -1;
    if (t->world > 1 && t->be->device_memory && !comm_engine_device_memory(t->cm->name) &&
        !(t->ga.host = malloc(t->s.P * sizeof(float))))
        return error_set(e, "out of memory");
    return 0;
}

/* Everything before the first epoch: the result's description, the initial
 * parameters, the BLAS choice, the backend's replicas, the loader, the floor
 * and the result's buffers. The backend comes before the loader: a device
 * backend's init makes the run's device current, so that the loader's
 * pinned pool belongs to that device's context (pinned first, it would open
 * a context on device 0 of every process). */
static int train_setup(struct train *t, struct error *e)
{
    if (result_begin(t, e) || initial_params(t, e))
        return -1;
    describe_setup(t);
    const char *before = signals_phase("timing the BLAS libraries for the step");
    if (t->be->host_math && tune_host_blas(t, e)) // the step's math runs on this host
        return -1;
    signals_phase(before);
    if (step_init(&t->s, t->be, &t->setup, t->loss, e) || grad_setup(t, e))
        return -1;
    if (loader_init(&t->l, t->d, &t->lo, e))
        return -1;
    t->have_loader = true;
    const char *setup = signals_phase("measuring the floor (report.floor)");
    if (t->c->report.floor && measure_floor(t, e))
        return -1;
    signals_phase(setup);
    struct run_result *out = t->out;
    out->n_batches = t->l.n_batches;
    out->splits = calloc((size_t)t->l.n_batches * (size_t)t->n, sizeof(long));
    out->epochs = calloc((size_t)t->c->train.epochs, sizeof *out->epochs);
    out->w = malloc(t->OF * sizeof(float));
    out->b = malloc((size_t)t->O * sizeof(float));
    if (!out->splits || !out->epochs || !out->w || !out->b)
        return error_set(e, "out of memory");
    return 0;
}

/* The loss became nan or infinite at batch `index` (some rank's: each learnt
 * it in this step's allreduce), or (-1) at st.nonfinite's, read after the
 * epoch (cuda: no step waits for the device). Every rank joins; the earliest
 * such batch, then the lowest such rank, is named. -1: failed, the epochs
 * before it kept; 0: no rank's loss went wrong. */
static int train_diverged(struct train *t, long ep, long index, struct error *e)
{
    const long big = 1L << 40, W = t->world; // one key orders: batch, then rank, then nan
    bool nan = isnan(t->st.loss_sum);
    long f = index < 0 ? t->st.nonfinite : isfinite(t->st.loss_sum) ? 0 : index + 1;
    long key = f ? ((big - f) * W + W - 1 - (W > 1 ? t->cm->rank : 0)) * 2 + nan : 0;
    if (W > 1 && comm_max(t->cm, key, &key, e))
        return -1;
    if (key == 0)
        return 0;
    nan = key % 2, key /= 2;
    diverged(t->out, t->c, W > 1 ? (int)(W - 1 - key % W) : -1, nan, big - key / W - 1,
             ep % t->cycle); // the config's epoch, in a run held open
    error_set(e, "%s", t->out->stopped);
    t->together = t->world > 1; // every rank stops here: the job can report
    return -1;
}

/* One batch of epoch ep: the step, then the checks and records it allows,
 * then b goes back to the loader. 0, or -1 with e set. */
static int train_batch(struct train *t, long ep, struct step_batch *b, struct error *e)
{
    int rc = t->ddp ? step_ddp(&t->s, b, t->lr, t->cm ? &t->sc : NULL, &t->st, e)
                    : step_dp(&t->s, b, t->lr, &t->st, e);
    if (rc == 0 && (t->world > 1 ? t->cm->stop == COMM_FAIL : !isfinite(t->st.loss_sum)))
        rc = train_diverged(t, ep, b->index, e);
    if (rc == 0 && ep == 0) {
        memcpy(t->out->splits + b->index * t->n, b->split, (size_t)t->n * sizeof(long));
        t->out->n_split_batches = b->index + 1; // in order: every batch before ran
    }
    if (rc == 0 && t->trace && ep == 0 && t->world == 1) // the splits repeat every epoch
        trace_batch(t->trace, b->split, t->n, b->rows, t->F, t->O);
    long done = b->index + 1; // b is not ours to read after release
    t->be->release(t->s.ctx, &t->l, b);
    if (rc == 0 && train_progress)
        progress(ep + 1 - t->from, t->total_epochs - t->from, done, t->l.n_batches, false);
    return rc;
}

/* A complete measured epoch into out->epochs. */
static void record_epoch(struct train *t, long ep, double seconds)
{
    const struct epoch_stats *st = &t->st;
    struct epoch_result *er = &t->out->epochs[t->out->n_epochs++];
    er->epoch = ep - t->c->train.warmup_epochs + 1;
    er->seconds = seconds;
    er->samples_per_s = (double)st->samples / seconds;
    er->loss = st->samples ? st->loss_sum / (double)st->samples : NAN;
    er->accuracy = t->d->classes && st->samples ? (double)st->correct / (double)st->samples : NAN;
    er->read_bytes = (double)t->l.read_bytes;
    er->st = *st;
}

/* Epoch ep (warmup included): its batches through the steps, then its
 * timings. EPOCH_NEXT, EPOCH_STOP (interrupted: the epochs before stand)
 * or EPOCH_FAILED with e set. */
static int train_epoch(struct train *t, long ep, struct error *e)
{
    const struct backend *be = t->be;
    struct comm *cm = t->cm;
    void *ctx = t->s.ctx;
    t->st = (struct epoch_stats){0};
    if (t->c->dataset.drop_cache && dataset_drop_cache(t->d, e))
        return EPOCH_FAILED;
    /* A run held open past its config's epochs (train_more) starts them over
     * as a new run of the config would: the initial parameters, epoch 0's
     * order. It never trains longer than the config does. */
    long at = ep % t->cycle;
    if (ep > 0 && at == 0 && step_set_params(&t->s, t->w0, t->w0 + t->OF, e))
        return EPOCH_FAILED;
    double t0 = now_seconds();
    if (loader_epoch_begin(&t->l, at, e) || be->epoch_begin(ctx, &t->l, e)) {
        loader_epoch_end(&t->l);
        return stop_requested() ? EPOCH_STOP : EPOCH_FAILED; // interrupted while shuffling
    }
    if (cm) {
        cm->allreduce_s = 0;
        cm->n_calls = 0;
    }
    int got;
    bool agreed = false; // every rank stopped after the same step
    struct step_batch *b;
    while ((got = be->next(ctx, &t->l, &b, &t->st, e)) == 1) {
        if (train_batch(t, ep, b, e)) {
            got = -1;
            break;
        }
        if ((agreed = comm_stopping(cm)))
            break;
    }
    bool cancelled = abort_requested() || (t->world == 1 && stop_requested());
    if (got < 0 && cancelled && !t->out->stopped[0])
        got = 1; // a signal cancelled the batch in flight (loader.c): a partial epoch
    if (cm)
        t->st.allreduce_s = cm->allreduce_s;
    /* a whole epoch: every rank made the same allreduces */
    if (cm && got == 0 && comm_allreduce_wait(cm, &t->st.allreduce_wait_s, e))
        got = -1;
    struct error end_err;
    int end_rc = be->epoch_end(ctx, &t->st, got < 0 ? &end_err : e); // keep the first error
    loader_epoch_end(&t->l);
    t->st.load_s = 1e-9 * (double)t->l.fill_ns; // the pipeline model's load (pipeline.h)
    if (got < 0 || (end_rc && !cancelled))
        return EPOCH_FAILED;
    double seconds = now_seconds() - t0;
    // losses read only now (cuda), an interrupted epoch's too; every rank checks where
    // some might (ddp: any backend), and all are at the same step
    if ((got == 0 || t->world == 1 || agreed) && (t->world > 1 || t->s.o->loss) &&
        train_diverged(t, ep, -1, e))
        return EPOCH_FAILED;
    if (got == 1)
        return EPOCH_STOP; // stopped mid-epoch: a partial epoch is not a measurement
    if (ep >= t->c->train.warmup_epochs)
        record_epoch(t, ep, seconds);
    return EPOCH_NEXT;
}

/* After the last epoch or a stop: the final parameters, the eval split,
 * every rank's figures and splits on rank 0, which reports them. */
static int train_finish(struct train *t, struct error *e)
{
    struct run_result *out = t->out;
    if (train_progress)
        progress(0, 0, 0, 0, true);
    out->interrupted = comm_stopping(t->cm);
    if (step_params(&t->s, out->w, out->b, e))
        return -1;
    /* the eval split, on every rank side by side (a rank waiting in a collective
     * for another's would be taken for stuck by the watchdog); one that a rank
     * cannot read fails the run on every rank, in step, its epochs complete and
     * kept (the ranks still meet to gather them) */
    if (t->d->eval && !out->interrupted && evaluate(t->d->eval, t->loss, out->w, out->b, out, e)) {
        out->failed = true;
        snprintf(out->stopped, sizeof out->stopped, "%s; the epochs are complete and kept, the "
                 "eval split is not reported", e->msg);
        if (t->world > 1 && t->cm->rank > 0) // rank 0 reports, and says which rank failed
            fprintf(stderr, "dpbench: rank %d (%s): %s\n", t->cm->rank, t->cm->host, e->msg);
    }
    struct error ge;
    long failed = out->failed ? t->cm && t->world > 1 ? t->cm->rank + 1 : 1 : 0; // the last rank
    if (t->world > 1 && comm_max(t->cm, failed, &failed, &ge))
        return *e = ge, -1;
    if (failed && !out->failed) { // another rank's copy of the eval split
        out->failed = true;
        memset(&out->eval, 0, sizeof out->eval);
        error_set(e, "rank %ld could not evaluate the eval split (its own copy; its stderr "
                     "says why); the epochs are complete and kept, the eval split is not "
                     "reported", failed - 1);
        snprintf(out->stopped, sizeof out->stopped, "%s", e->msg);
    }
    if (t->world > 1 && ddp_gather(t->cm, out, &ge))
        return *e = ge, -1;
    out->together = out->failed && t->world > 1;
    if (t->world > 1 && t->trace && t->cm->rank == 0)
        ddp_trace(t->trace, out, t->F, t->O);
    return out->failed ? -1 : 0;
}

/* A failure mid-run: the measured epochs are kept, as an interrupted run
 * keeps them; where every rank failed after the same step, rank 0 holds
 * the job's figures. Always -1. */
static int train_failed(struct train *t, struct error *e)
{
    struct run_result *out = t->out;
    if (train_progress)
        progress(0, 0, 0, 0, true);
    out->failed = out->interrupted = true;
    if (!out->stopped[0]) // every failure says why in the results, as a divergence does
        snprintf(out->stopped, sizeof out->stopped, "%s; stopped, the epochs before it are kept",
                 e->msg);
    if (step_params(&t->s, out->w, out->b, &(struct error){{0}}))
        memset(out->w, 0, t->OF * sizeof(float));
    struct error ge;
    if (t->together && ddp_gather(t->cm, out, &ge)) {
        *e = ge; // the ranks are out of step after all
        t->together = false;
    }
    out->together = t->together;
    return -1;
}

/* Frees what setup made, and out unless it holds a failed run's epochs. */
static void train_free(struct train *t, int rc)
{
    step_free(&t->s);
    if (t->have_loader)
        loader_free(&t->l);
    free(t->w0);
    free(t->ga.host);
    if (rc && !t->out->failed)
        run_result_free(t->out);
}

static void train_init(struct train *t, const struct config *c, const struct dataset *d,
                       const struct backend *be, struct comm *cm, struct run_result *out, FILE *trace)
{
    bool ddp = strcmp(c->parallel.mode, "ddp") == 0;
    *t = (struct train){
        .c = c, .d = d, .be = be, .out = out, .trace = trace,
        .ddp = ddp,
        .cm = ddp ? cm : NULL,
        .world = ddp && cm ? cm->world : 1,
        .n = ddp ? 1 : c->parallel.n_devices ? c->parallel.n_devices : (int)c->parallel.replicas,
        .F = d->features,
        .O = d->out_features,
        .OF = (size_t)d->out_features * (size_t)d->features, // beyond int: config_validate
        .total_epochs = c->train.warmup_epochs + c->train.epochs,
        .cycle = c->train.warmup_epochs + c->train.epochs,
        .lr = (float)c->train.lr,
    };
}

/* The epochs up to `until` (warm-up included): EPOCH_NEXT, EPOCH_STOP or
 * EPOCH_FAILED as train_epoch's. */
static int train_epochs(struct train *t, long until, struct error *e)
{
    int epoch = EPOCH_NEXT;
    for (t->from = t->ep; epoch == EPOCH_NEXT && t->ep < until; t->ep++) {
        if (t->ep == 0 || t->ep == t->c->train.warmup_epochs)
            signals_phase(t->ep < t->c->train.warmup_epochs ? "running the warmup epochs"
                                                            : "running the epochs");
        if (comm_stopping(t->cm))
            return EPOCH_STOP;
        epoch = train_epoch(t, t->ep, e);
    }
    return epoch;
}

int train_run(const struct config *c, const struct dataset *d, const struct backend *be,
              struct comm *cm, struct run_result *out, FILE *trace, struct error *e)
{
    struct train t;
    train_init(&t, c, d, be, cm, out, trace);
    /* each phase named for the watchdog, should a signal find it stuck */
    const char *before = signals_phase("setting up the run (the loader, the replicas)");
    int rc = train_setup(&t, e), epoch = rc ? EPOCH_NEXT : train_epochs(&t, t.total_epochs, e);
    signals_phase("finishing the run (final parameters, the eval split)");
    if (rc == 0)
        rc = epoch == EPOCH_FAILED ? train_failed(&t, e) : train_finish(&t, e);
    train_free(&t, rc);
    signals_phase(before);
    return rc;
}

struct train *train_open(const struct config *c, const struct dataset *d,
                         const struct backend *be, long cycle, struct run_result *out,
                         struct error *e)
{
    struct train *t = malloc(sizeof *t);
    if (!t)
        return error_set(e, "out of memory"), NULL;
    train_init(t, c, d, be, NULL, out, NULL);
    t->cycle = cycle > 0 ? cycle : t->cycle;
    const char *before = signals_phase("setting up the run (the loader, the replicas)");
    int rc = train_setup(t, e);
    signals_phase(before);
    if (rc) {
        train_free(t, -1);
        free(t);
        return NULL;
    }
    return t;
}

int train_more(struct train *t, struct run_result *out, long n, struct error *e)
{
    long warm = t->c->train.warmup_epochs, until = (t->ep > warm ? t->ep : warm) + n;
    struct epoch_result *ep = realloc(out->epochs, (size_t)(until - warm + 1) * sizeof *ep);
    if (!ep)
        return error_set(e, "out of memory");
    out->epochs = ep, t->out = out;
    t->total_epochs = until;
    const char *before = signals_phase(t->ep < warm ? "running the warmup epochs"
                                                    : "running the epochs");
    int epoch = train_epochs(t, t->total_epochs, e);
    signals_phase(before);
    return epoch == EPOCH_FAILED ? train_failed(t, e) : epoch == EPOCH_STOP; // out says why
}

int train_close(struct train *t, struct run_result *out, struct error *e)
{
    t->out = out;
    const char *before = signals_phase("finishing the run (final parameters, the eval split)");
    int rc = train_finish(t, e);
    signals_phase(before);
    t->out->interrupted = false; // the search's stops are its own
    train_free(t, 0);
    free(t);
    return rc;
}
