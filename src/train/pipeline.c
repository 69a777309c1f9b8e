/* The pipeline model, by operational analysis: a stage's throughput is its
 * parallelism over its service time, bounded by the cores. With the costs
 * per batch of pipeline.h (L, w, s, o, H, C, X), the hand-off w paid at both
 * ends (m = 2 wake-ups with prefetch 1, else 1; 0 without workers), W
 * workers, ring depth D, K cores, and h = H + o + m w the training thread's
 * time per batch:
 *   feed (W > 0) = (L + m w) / W       W workers in parallel, each a server
 *   sync,  W = 0:  max(H + o + L, C) + X     one slot: the copy waits for the
 *                                             step before; loading overlaps it
 *   sync,  W > 0:  max(feed, max(h, C) + X)
 *   async:         max(feed', D = 1 ? X + C : max(X, C), h), with feed' =
 *                  L + (pageable ? X : 0) for W = 0 (the copy thread loads and
 *                  stages), max(feed, pageable ? X : 0) for W > 0
 * and never under (L + H + o + 2 m w + s max(0, W + 1 - K)) / K, the host's
 * work per batch over its cores, s each thread more than the cores costs
 * (switches, caches). A hand-off at both ends keeps its fit to a run that
 * the training thread bounds small (a share of the consumer's time), where
 * at the workers' end alone it would have to outgrow the other bounds.
 * With w = o = s = 0 and no bound this is the emulated device's model
 * (docs/emulated.md), which report_emulated.c applies batch by batch. */
#include "pipeline.h"

#include <math.h>

struct pipeline_knobs pipeline_knobs_of(const struct config *c)
{
    return (struct pipeline_knobs){.v = {c->loader.num_workers, c->loader.prefetch_factor,
                                         c->loader.persistent_workers, c->loader.pin_memory,
                                         c->loader.async_copy, c->loader.copy_depth}};
}

void pipeline_knobs_apply(const struct pipeline_knobs *k, struct config *c)
{
    c->loader.num_workers = k->num_workers;
    c->loader.prefetch_factor = k->prefetch_factor;
    c->loader.persistent_workers = k->persistent_workers;
    c->loader.pin_memory = k->pin_memory;
    c->loader.async_copy = k->async_copy;
    c->loader.copy_depth = k->copy_depth;
}

double pipeline_period(const struct pipeline_costs *c, const struct pipeline_knobs *k,
                       double X, double C)
{
    double W = (double)k->num_workers, L = c->load, H = c->host + c->loop;
    double wake = k->num_workers > 0 ? (k->prefetch_factor == 1 ? 2 : 1) * c->handoff : 0;
    double feed = W > 0 ? (L + wake) / W : 0, h = H + wake, p;
    if (!k->async_copy) {
        p = W == 0 ? fmax(H + L, C) + X : fmax(feed, fmax(h, C) + X);
    } else {
        double staged = k->pin_memory ? 0 : X; // pageable: the copy thread stages it
        double in = W == 0 ? L + staged : fmax(feed, staged);
        double dev = k->copy_depth == 1 ? X + C : fmax(X, C);
        p = fmax(fmax(in, dev), h);
    }
    double over = k->num_workers > 0 ? fmax(0, W + 1 - c->cores) * c->contend : 0;
    return c->cores > 0 ? fmax(p, (L + H + 2 * wake + over) / c->cores) : p;
}

double pipeline_epoch(const struct pipeline_costs *c, const struct pipeline_knobs *k,
                      long batches)
{
    double X = c->copy[k->pin_memory], C = c->compute;
    double last = fmax(C, c->host + c->loop); // the last step, after the last period
    return c->load + X + (double)(batches - 1) * pipeline_period(c, k, X, C) + last;
}

double pipeline_au(const struct pipeline_costs *c, const struct pipeline_knobs *k, long batches)
{
    double step = c->compute > 0 ? c->compute : c->host;
    return (double)batches * step / pipeline_epoch(c, k, batches);
}

void pipeline_measure(const struct run_result *run, bool device, struct pipeline_costs *c)
{
    int n = run->n_epochs;
    double x[4][n + 1], b = fmax(1, (double)run->n_batches), m[4] = {0};
    for (int i = 0; i < n; i++) {
        const struct epoch_stats *st = &run->epochs[i].st;
        x[0][i] = st->load_s, x[1][i] = st->host_s, x[2][i] = st->compute_s, x[3][i] = st->copy_s;
    }
    for (int j = 0; j < 4 && n > 0; j++)
        m[j] = stats_median(x[j], (size_t)n) / b;
    c->load = m[0];
    c->host = device ? m[1] : m[2];
    c->compute = device ? m[2] : 0;
    c->copy[run->cfg.loader.pin_memory] = m[3];
}

/* *x >= 0 such that the model's epoch for run's settings is its median
 * (the epoch grows with *x): bisection; whether fitted (0 without a run).
 * A thread's own cost (lift false) explains the run's time only where that
 * thread bounds it at *x = 0; where another stage does (the device, the
 * copy thread), *x stays 0, not fitted: the shortfall is that stage's, and
 * lifting the thread over it would slow every prediction where it bounds. */
static bool fit(struct pipeline_costs *c, double *x, const struct run_result *run, bool lift)
{
    *x = 0;
    if (!run)
        return false;
    struct pipeline_knobs k = pipeline_knobs_of(&run->cfg);
    double target = run->n_epochs ? epochs_median(run->epochs, run->n_epochs) : 0;
    double lo = 0, hi = target;
    double X = c->copy[k.pin_memory], at0 = pipeline_period(c, &k, X, c->compute);
    *x = 1e-6 * target;
    bool bounds = pipeline_period(c, &k, X, c->compute) > at0;
    *x = 0;
    if (!lift && !bounds)
        return false; // its thread does not bound the period: stays 0, not fitted
    for (int i = 0; i < 60 && target > 0; i++) {
        *x = (lo + hi) / 2;
        *(pipeline_epoch(c, &k, run->n_batches) < target ? &lo : &hi) = *x;
    }
    *x = lo;
    return target > 0; // a run the budget cut before an epoch fits nothing
}

/* The hand-off (both ends: the feed and the training thread) and the
 * contention (the cores' bound, whichever stage bounds) lift; the training
 * thread's own time does not: the copy thread or the device often bound the
 * period of the run without workers it is fitted on. */
unsigned pipeline_fit(struct pipeline_costs *c, const struct run_result *sync,
                      const struct run_result *workers, const struct run_result *over)
{
    c->loop = c->handoff = c->contend = 0;
    unsigned fitted = fit(c, &c->loop, sync, false); // in turn: each fit takes the ones before
    fitted |= (unsigned)fit(c, &c->handoff, workers, true) << 1;
    return fitted | (unsigned)fit(c, &c->contend, over, true) << 2;
}
