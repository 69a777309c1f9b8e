/* The floor (report.floor). Two parts, each measured on the run's shapes:
 *   gather:  one epoch of the loader on the training thread: the shuffle, the
 *            copy of every shuffled row into a batch buffer, and the emulated
 *            per-sample cost; the same code the run loads with, each batch
 *            position's best of up to 10 epochs;
 *   compute: the step's BLAS calls (blas_tune.c) for each batch of the epoch,
 *            on torch.chunk's chunk sizes, warm, in the run's library and
 *            thread count,
 *            with replicas side by side as far as the cores allow.
 * Without workers one thread does both in turn, so the floor is their sum.
 * With workers the two stages run at once, on the same cores, and slow each
 * other down (two hyperthreads of one core share its units and caches): the
 * larger of the two measured apart is a floor no run reaches. So the floor
 * is measured as the run overlaps them: the run's own loader and workers
 * gather an epoch while this thread runs the step's BLAS for each batch as
 * it arrives. What the run spends beyond it is the step's own work besides
 * BLAS (scatter, gather, loss, reduce) and hand-offs. */
#include "floor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas_tune.h"
#include "chunk.h"
#include "dataset.h"

/* Epochs each part of the floor takes its best of (fewer when they are
 * long): enough that one lucky or disturbed epoch does not decide it. */
enum { FLOOR_EPOCHS = 10 };

/* Seconds of one loader epoch on one thread, the least disturbed: over up
 * to 10 epochs (fewer when an epoch is long, a large sample cost), the best
 * shuffle plus, for each batch position, its best fill. A preemption then
 * costs one batch of one epoch, not the whole measurement. */
static int gather_seconds(const struct dataset *d, const struct floor_setup *s, double *out,
                          struct error *e)
{
    struct loader_options lo = s->lo;
    lo.num_workers = 0;
    lo.persistent_workers = false;
    lo.extra_buffers = 0;
    struct loader l;
    if (loader_init(&l, d, &lo, e))
        return error_wrap(e, "report.floor");
    double *best = malloc((size_t)(l.n_batches + 1) * sizeof(double)); // [0]: the shuffle
    if (!best) {
        loader_free(&l);
        return error_set(e, "report.floor: out of memory");
    }
    for (long k = 0; k <= l.n_batches; k++)
        best[k] = INFINITY;
    double spent = 0;
    int rc = 0;
    for (long ep = 0; ep < FLOOR_EPOCHS && spent < 1.0 && rc == 0; ep++) {
        double t0 = now_seconds(), t = t0;
        if ((rc = loader_epoch_begin(&l, ep, e)))
            break;
        best[0] = fmin(best[0], now_seconds() - t);
        struct batch *b;
        for (long k = 1; (t = now_seconds(), rc = loader_next(&l, &b, e)) == 1; k++) {
            loader_release(&l, b);
            best[k] = fmin(best[k], now_seconds() - t);
        }
        loader_epoch_end(&l);
        spent += now_seconds() - t0;
    }
    *out = 0;
    for (long k = 0; k <= l.n_batches; k++)
        *out += best[k];
    free(best);
    loader_free(&l);
    return rc < 0 ? error_wrap(e, "report.floor") : 0;
}

/* Seconds of the step's BLAS for one batch of `rows` rows. */
static double batch_compute(struct blas_work *bw, const struct floor_setup *s, long rows)
{
    long split[s->replicas];
    int active = chunk_split(rows, s->replicas, split);
    int slots = s->compute_cores / s->blas_threads; // replicas that run at once
    if (slots < 1)
        slots = 1;
    int waves = (active + slots - 1) / slots;
    return waves * blas_work_seconds(bw, split[0]);
}

/* The step's BLAS for batch b, once, on its rows as delivered: its replicas'
 * chunks in waves of as many as run side by side (batch_compute's count). */
static void batch_run(struct blas_work *bw, const struct floor_setup *s, const struct batch *b)
{
    long split[s->replicas];
    int active = chunk_split(b->rows, s->replicas, split);
    int slots = s->compute_cores / s->blas_threads;
    if (slots < 1)
        slots = 1;
    int waves = (active + slots - 1) / slots;
    long row = 0; // wave w's first row
    for (int w = 0; w < waves; w++) {
        blas_work_run(bw, b->x + (size_t)row * (size_t)s->features, split[w * slots]);
        for (int i = w * slots; i < (w + 1) * slots && i < active; i++)
            row += split[i];
    }
}

/* Seconds of the overlapped epoch: the run's loader with its workers, this
 * thread computing on each batch while the workers gather the next ones;
 * the best of up to 10 epochs (fewer when they are long). */
static int overlap_seconds(const struct dataset *d, const struct floor_setup *s,
                           struct blas_work *bw, double *out, struct error *e)
{
    struct loader_options lo = s->lo;
    lo.extra_buffers = 0;
    struct loader l;
    if (loader_init(&l, d, &lo, e))
        return error_wrap(e, "report.floor");
    *out = INFINITY;
    double spent = 0;
    int rc = 0;
    for (long ep = 0; ep < FLOOR_EPOCHS && spent < 2.0 && rc == 0 && !stop_requested(); ep++) {
        double t0 = now_seconds();
        if ((rc = loader_epoch_begin(&l, ep, e)))
            break;
        struct batch *b;
        while ((rc = loader_next(&l, &b, e)) == 1) {
            batch_run(bw, s, b);
            loader_release(&l, b); // held while computed, as a step holds its batch
        }
        loader_epoch_end(&l);
        if (rc == 0)
            *out = fmin(*out, now_seconds() - t0);
        spent += now_seconds() - t0;
    }
    loader_free(&l);
    return rc < 0 ? error_wrap(e, "report.floor") : 0;
}

int floor_measure(const struct dataset *d, const struct floor_setup *s, struct run_floor *out,
                  struct error *e)
{
    memset(out, 0, sizeof *out);
    out->compute_s = out->copy_s = NAN;
    if (gather_seconds(d, s, &out->gather_s, e))
        return -1;
    int spread = s->workers < s->cores ? s->workers : s->cores;
    out->loading_s = s->workers > 0 ? out->gather_s / spread : out->gather_s;
    out->seconds = out->apart_s = out->loading_s;
    if (s->blas_threads > 0) {
        long B = s->lo.batch_size, full = d->length / B, last = d->length % B;
        if (s->lo.drop_last)
            last = 0;
        long chunk = (B + s->replicas - 1) / s->replicas;
        struct blas_work bw;
        if (blas_work_init(&bw, s->features, s->out_features, chunk, s->blas_lib, e))
            return error_wrap(e, "report.floor");
        out->compute_s = (double)full * batch_compute(&bw, s, B);
        if (last > 0)
            out->compute_s += batch_compute(&bw, s, last);
        out->apart_s = s->workers > 0 ? fmax(out->loading_s, out->compute_s)
                                      : out->loading_s + out->compute_s;
        out->seconds = out->apart_s;
        int rc = s->workers > 0 ? overlap_seconds(d, s, &bw, &out->seconds, e) : 0;
        blas_work_free(&bw);
        if (rc)
            return -1;
        out->overlapped = s->workers > 0 && isfinite(out->seconds);
        if (!out->overlapped)
            out->seconds = out->apart_s; // interrupted before an epoch completed
    }
    out->measured = true;
    return 0;
}
