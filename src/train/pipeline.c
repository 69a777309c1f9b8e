/* The pipeline model, by operational analysis (a stage's throughput is its
 * parallelism over its service time, bounded by the cores): the emulated
 * device's periods (docs/emulated.md's table) with the costs of pipeline.h
 * added. The hand-off w is paid at both ends, m = 2 wake-ups with prefetch 1
 * else 1 (0 without workers): a worker's batch takes L + m w, the training
 * thread's step H + o + m w; and the period is never under the host's work per
 * batch over its K cores, (L + H + o + 2 m w + s max(0, W + 1 - K)) / K.
 * At both ends, a hand-off fitted to a run the training thread bounds stays
 * a share of that thread's time. With w = o = s = 0 and no bound it is the
 * emulated device's model, which report_emulated.c applies batch by batch. */
#include "pipeline.h"

#include <math.h>

#include "loader.h"

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

long pipeline_pool(const struct pipeline_knobs *k)
{
    return loader_pool_size(&(struct loader_options){
        .num_workers = (int)k->num_workers, .prefetch_factor = (int)k->prefetch_factor,
        .extra_buffers = k->async_copy ? (int)k->copy_depth : 0});
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
 * (the epoch grows with *x): bisection; whether fitted (not without a run
 * or an epoch). A thread's own cost (lift false) is fitted only where that
 * thread bounds the period at *x = 0: else the shortfall is another stage's
 * (the device, the copy thread), and lifting the thread over it would slow
 * every prediction where it bounds. */
static bool fit(struct pipeline_costs *c, double *x, const struct run_result *run, bool lift)
{
    *x = 0;
    if (!run || run->n_batches < 2) // one batch an epoch: no period, nothing to fit it to
        return false;
    struct pipeline_knobs k = pipeline_knobs_of(&run->cfg);
    double target = run->n_epochs ? epochs_median(run->epochs, run->n_epochs) : 0, lo = 0, hi = target;
    double X = c->copy[k.pin_memory], at0 = pipeline_period(c, &k, X, c->compute);
    *x = 1e-6 * target;
    if (!lift && !(pipeline_period(c, &k, X, c->compute) > at0))
        return *x = 0, false;
    for (int i = 0; i < 60 && target > 0; i++) {
        *x = (lo + hi) / 2;
        *(pipeline_epoch(c, &k, run->n_batches) < target ? &lo : &hi) = *x;
    }
    *x = lo;
    return target > 0;
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
