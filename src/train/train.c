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
#include "step.h"

bool train_progress;
struct comm *train_comm;

/* What the DDP step's allreduce needs besides the gradient: the comm, and
 * this rank's epoch so far, whose loss (host losses are summed before the
 * allreduce) says whether this rank can go on. */
struct grad_arg {
    struct comm *cm;
    const struct epoch_stats *st;
};

/* The DDP step's allreduce; this rank's wish to stop travels with it. */
static int grad_allreduce(void *arg, float *buf, size_t n, struct error *e)
{
    const struct grad_arg *g = arg;
    int wish = !isfinite(g->st->loss_sum) ? COMM_FAIL : stop_requested() ? COMM_STOP : COMM_GO;
    return comm_allreduce(g->cm, buf, n, wish, e);
}

/* Whether to stop after this batch: a signal here, or (several ranks) one
 * any rank saw, which every rank learns in the same step's allreduce. */
static bool stopping(const struct comm *cm)
{
    return cm && cm->world > 1 ? cm->stop : stop_requested();
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

/* Cores the compute may use: those the loader's workers leave free, shared
 * with the other ranks on this host, at least one. */
static int compute_cores(long num_workers, int local_ranks)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN) / local_ranks;
    return cores - num_workers > 1 ? (int)(cores - num_workers) : 1;
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

/* After an allreduce that said some rank's loss is not finite: the lowest
 * such rank and whether its loss is nan, on every rank (one more collective,
 * which every rank makes after the same step). */
static int diverged_rank(struct comm *cm, const struct epoch_stats *st, int *rank, bool *nan,
                         struct error *e)
{
    long code = isfinite(st->loss_sum) ? 0 : 2L * (cm->world - cm->rank) + isnan(st->loss_sum);
    long most;
    if (comm_max(cm, code, &most, e))
        return -1;
    *rank = cm->world - (int)(most / 2);
    *nan = most % 2;
    return 0;
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

int train_run(const struct config *c, const struct dataset *d, const struct backend *be,
              struct run_result *out, FILE *trace, struct error *e)
{
    int F = d->features, O = d->out_features;
    int n = c->parallel.n_devices ? c->parallel.n_devices : (int)c->parallel.replicas;
    bool ddp = strcmp(c->parallel.mode, "ddp") == 0;
    struct comm *cm = ddp ? train_comm : NULL;
    int world = cm ? cm->world : 1;
    if (ddp)
        n = 1; // one replica per rank
    long total_epochs = c->train.warmup_epochs + c->train.epochs;
    memset(out, 0, sizeof *out);
    if (config_copy(&out->cfg, c))
        return error_set(e, "out of memory");
    out->backend = be->name;
    out->emulated = be->emulated;
    out->replicas = n;
    out->world_size = world;
    out->comm = cm ? cm->name : NULL;
    out->allreduce_bytes = (double)(O * F + O) * sizeof(float);
    out->shared_devices = devices_shared(c);
    effect_notes(c, be, out->notes, sizeof out->notes);

    long device_ids[CONFIG_MAX_DEVICES];
    for (int i = 0; i < n && i < CONFIG_MAX_DEVICES; i++)
        device_ids[i] = c->parallel.n_devices ? c->parallel.devices[i] : i;
    if (cm) // one device per rank: the local rank's, or its entry of parallel.devices
        device_ids[0] = c->parallel.n_devices
                            ? c->parallel.devices[cm->local_rank % c->parallel.n_devices]
                            : cm->local_rank;
    size_t OF = (size_t)O * (size_t)F; // beyond int: BLAS' limit is checked in config_validate
    float *w0 = malloc((OF + (size_t)O) * sizeof(float));
    if (!w0)
        return error_set(e, "out of memory");
    train_init_params((unsigned long)c->seed, F, O, w0, w0 + OF);
    dataset_resolve_config(d, &out->cfg); // the data's shapes and the loss it trains with
    const struct loss_fn *loss = loss_find(out->cfg.model.loss);
    out->loss = loss->name;
    /* DDP: rank 0's initial parameters on every rank */
    if (cm && comm_bcast(cm, w0, (OF + (size_t)O) * sizeof(float), e)) {
        free(w0);
        return -1;
    }
    struct backend_setup setup = {
        .features = F,
        .out_features = O,
        .batch_size = c->loader.batch_size,
        .replicas = n,
        .device_ids = be->has_devices ? device_ids : NULL,
        .pin_memory = c->loader.pin_memory,
        .async_copy = c->loader.async_copy,
        .copy_depth = (int)c->loader.copy_depth,
        .compute_cores = compute_cores(c->loader.num_workers, cm ? cm->local_size : 1),
        .w0 = w0,
        .b0 = w0 + OF,
        .classify = d->classes > 0,
        .emulate = &c->emulate,
    };
    struct loader_options lo = {
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
        .world = world,
        .mem = {be->host_alloc, be->host_free},
    };
    struct loader l;
    struct step s = {0};
    int rc = -1;
    bool together = false; // a failure every rank had after the same step
    if (loader_init(&l, d, &lo, e)) {
        free(w0);
        return -1;
    }
    if (be->host_math) { // the step's math runs on this host
        /* replicas run side by side: together never more threads than free cores */
        long rows = c->loader.batch_size < d->length ? c->loader.batch_size : d->length;
        int side = n < setup.compute_cores ? n : setup.compute_cores; // replicas at once
        int most = setup.compute_cores / n; // and no more than OpenBLAS started (rlimits.h)
        most = most < rlimits_blas_threads() ? most : rlimits_blas_threads();
        if (blas_choose_threads(F, O, (rows + n - 1) / n, most, side,
                                c->parallel.blas,
                                &out->blas, e))
            goto out;
        setup.blas_threads = out->blas.threads;
        setup.blas_lib = out->blas.lib;
    }
    if (c->report.floor) {
        struct floor_setup fs = {
            .lo = lo,
            .features = F,
            .out_features = O,
            .replicas = n,
            .workers = (int)c->loader.num_workers,
            .cores = (int)sysconf(_SC_NPROCESSORS_ONLN),
            .compute_cores = setup.compute_cores,
            .blas_threads = setup.blas_threads,
            .blas_lib = setup.blas_lib,
        };
        if (floor_measure(d, &fs, &out->floor, e))
            goto out;
    }
    if (step_init(&s, be, &setup, loss, e))
        goto out;
    void *ctx = s.ctx;
    if (cm && be->ops->queue) // a device collective runs on the rank's queue
        cm->stream = be->ops->queue(ctx, 0);
    out->n_batches = l.n_batches;
    out->splits = calloc((size_t)l.n_batches * (size_t)n, sizeof(long));
    out->epochs = calloc((size_t)c->train.epochs, sizeof *out->epochs);
    out->w = malloc(OF * sizeof(float));
    out->b = malloc((size_t)O * sizeof(float));
    if (!out->splits || !out->epochs || !out->w || !out->b) {
        error_set(e, "out of memory");
        goto out;
    }

    float lr = (float)c->train.lr;
    struct epoch_stats st;
    struct grad_arg ga = {cm, &st};
    struct step_comm sc = {.world = world, .allreduce = grad_allreduce, .arg = &ga};
    for (long ep = 0; ep < total_epochs && !stopping(cm); ep++) {
        st = (struct epoch_stats){0};
        if (c->dataset.drop_cache && dataset_drop_cache(d, e))
            goto failed;
        double t0 = now_seconds();
        int got;
        struct step_batch *b;
        if (loader_epoch_begin(&l, ep, e) || be->epoch_begin(ctx, &l, e)) {
            loader_epoch_end(&l);
            if (stop_requested())
                break; // interrupted while shuffling: the epochs before stand
            goto failed;
        }
        if (cm) {
            cm->allreduce_s = 0;
            cm->n_calls = 0;
        }
        while ((got = be->next(ctx, &l, &b, &st, e)) == 1) {
            if (ddp ? step_ddp(&s, b, lr, cm ? &sc : NULL, &st, e) : step_dp(&s, b, lr, &st, e)) {
                be->release(ctx, &l, b);
                got = -1;
                break;
            }
            /* diverged (on any rank, which every rank learnt in this step's
             * allreduce): no later step means anything */
            if (world > 1 ? cm->stop == COMM_FAIL : !isfinite(st.loss_sum)) {
                int rank = -1;
                bool nan = isnan(st.loss_sum);
                if (world > 1 && diverged_rank(cm, &st, &rank, &nan, e)) {
                    be->release(ctx, &l, b);
                    got = -1;
                    break;
                }
                diverged(out, c, rank, nan, b->index, ep);
                error_set(e, "%s", out->stopped);
                be->release(ctx, &l, b);
                got = -1; // a failed run: the epochs before it are kept
                together = world > 1; // every rank stops here: the job can report
                break;
            }
            if (ep == 0) {
                memcpy(out->splits + b->index * n, b->split, (size_t)n * sizeof(long));
                out->n_split_batches = b->index + 1; // in order: every batch before ran
            }
            if (trace && ep == 0 && world == 1) // the splits repeat every epoch: the first one shows them
                trace_batch(trace, b->split, n, b->rows, F, O);
            long done = b->index + 1; // b is not ours to read after release
            be->release(ctx, &l, b);
            if (train_progress)
                progress(ep + 1, total_epochs, done, l.n_batches, false);
            if (stopping(cm))
                break;
        }
        bool cancelled = abort_requested() || (world == 1 && stop_requested());
        if (got < 0 && cancelled && !out->stopped[0])
            got = 1; // a signal cancelled the batch in flight (loader.c): a partial epoch
        if (cm)
            st.allreduce_s = cm->allreduce_s;
        /* a whole epoch: every rank made the same allreduces */
        if (cm && got == 0 && comm_allreduce_wait(cm, &st.allreduce_wait_s, e))
            got = -1;
        struct error end_err;
        int end_rc = be->epoch_end(ctx, &st, got < 0 ? &end_err : e); // keep the first error
        loader_epoch_end(&l);
        if (got < 0 || (end_rc && !cancelled))
            goto failed;
        double seconds = now_seconds() - t0;
        if (got == 1)
            break; // stopped mid-epoch: a partial epoch is not a measurement
        if (ep < c->train.warmup_epochs)
            continue;
        struct epoch_result *er = &out->epochs[out->n_epochs++];
        er->epoch = ep - c->train.warmup_epochs + 1;
        er->seconds = seconds;
        er->samples_per_s = (double)st.samples / seconds;
        er->loss = st.samples ? st.loss_sum / (double)st.samples : NAN;
        er->accuracy = d->classes && st.samples ? (double)st.correct / (double)st.samples : NAN;
        er->read_bytes = (double)l.read_bytes;
        er->st = st;
    }
    if (train_progress)
        progress(0, 0, 0, 0, true);
    out->interrupted = stopping(cm);
    if (step_params(&s, out->w, out->b, e))
        goto out;
    if (d->eval && !out->interrupted && evaluate(d->eval, loss, out->w, out->b, out, e))
        goto out;
    /* every rank's figures and splits to rank 0, which reports them */
    if (world > 1 && ddp_gather(cm, out, e))
        goto out;
    if (world > 1 && trace && cm->rank == 0)
        ddp_trace(trace, out, F, O);
    rc = 0;
    goto out;
failed: /* mid-run: keep the measured epochs, as an interrupted run does */
    if (train_progress)
        progress(0, 0, 0, 0, true);
    out->failed = out->interrupted = true;
    if (step_params(&s, out->w, out->b, &(struct error){{0}}))
        memset(out->w, 0, OF * sizeof(float));
    struct error ge;
    if (together && ddp_gather(cm, out, &ge)) {
        *e = ge; // the ranks are out of step after all
        together = false;
    }
    out->together = together;
out:
    step_free(&s);
    loader_free(&l);
    free(w0);
    if (rc && !out->failed)
        run_result_free(out);
    return rc;
}

void run_result_free(struct run_result *r)
{
    config_free(&r->cfg);
    free(r->splits);
    free(r->epochs);
    for (int i = 0; r->ranks && i < r->world_size; i++)
        free(r->ranks[i].epochs);
    free(r->ranks);
    free(r->w);
    free(r->b);
    memset(r, 0, sizeof *r);
}
