/* The points measured in interleaved rounds (rounds.h): each round runs
 * every point once (its warmup and train.epochs measured epochs) in an order
 * shuffled from the seed, and rounds go on until every verdict the result
 * prints is decided (report_decided), the round cap, or the time budget. A
 * point's rounds add up to one run: its epochs, and a record per round (its
 * median epoch and the machine's load meanwhile) that the statistics take as
 * their unit. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "effect.h"
#include "progress.h"
#include "signals.h"
#include "sweep.h"

struct point {
    struct config cfg;      // the point's config (sweep keys kept, values applied)
    const struct backend *be;
    int data;               // its slot in measure.data
};

struct measure {
    const struct config *cfg;
    const struct points *points;
    struct comm *cm;
    struct results *res;
    const struct renderer *out; // stdout's format
    bool rebuild, quiet;
    struct point *pts;      // (n) every point, in sweep order (= res->runs)
    long n;
    int *measured;          // (n_measured) the runs measured each round
    int n_measured;
    struct sweep_data *data; // (n_data) one per distinct data config
    int n_data;
    int rc;                 // -2: bad data (a usage error)
};

/* ---- the points before any round --------------------------------------- */

/* The earlier run whose effective settings (effect.c) equal mine, or -1. */
static int same_as_earlier(const struct results *res, int p, cJSON *const *eff)
{
    for (int k = 0; eff[p] && k < p; k++)
        if (eff[k] && !res->runs[k].same && compare_same(eff[k], eff[p]))
            return k;
    return -1;
}

/* Run p's record before its first round: its config and label; for a point
 * that is the same work as run k (k >= 0), that and why. */
static int run_begin(struct run_result *run, const struct point *pt, const char *label, int k,
                     struct error *e)
{
    memset(run, 0, sizeof *run);
    if (config_copy(&run->cfg, &pt->cfg))
        return error_set(e, "out of memory");
    snprintf(run->label, sizeof run->label, "%s", label);
    run->backend = pt->be->name;
    if (k >= 0) {
        run->same = true;
        run->same_as = k;
        effect_notes(&pt->cfg, pt->be, run->notes, sizeof run->notes); // why it is the same
    }
    return 0;
}

/* The slot of point p's dataset: one per distinct data config. */
static int data_slot(struct measure *m, const struct config *pc)
{
    for (int k = 0; k < m->n_data; k++)
        if (config_same_data(&m->data[k].cfg, pc))
            return k;
    m->data[m->n_data].cfg = *pc;
    m->data[m->n_data].cfg.n_sweep = 0;
    return m->n_data++;
}

/* Every point's config, backend and run record; which are measured. */
static int points_begin(struct measure *m, const struct backends *bes, struct error *e)
{
    struct results *res = m->res;
    cJSON **eff = calloc((size_t)m->n, sizeof *eff); // each point's effective settings
    int rc = eff ? 0 : error_set(e, "out of memory");
    for (long p = 0; p < m->n && rc == 0; p++) {
        struct point *pt = &m->pts[p];
        const char *label = m->points->label[p];
        if (config_copy(&pt->cfg, &m->points->cfg[p])) {
            rc = error_set(e, "out of memory");
            break;
        }
        pt->be = backends_get(bes, pt->cfg.parallel.device);
        eff[p] = m->points->each ? NULL : effect_config(&pt->cfg, pt->be);
        int k = same_as_earlier(res, (int)p, eff);
        if ((rc = run_begin(&res->runs[p], pt, label, k, e)))
            break;
        res->n_runs++;
        if (k < 0) {
            m->measured[m->n_measured++] = (int)p;
            pt->data = data_slot(m, &pt->cfg);
        }
    }
    for (long p = 0; eff && p < m->n; p++)
        cJSON_Delete(eff[p]);
    free(eff);
    return rc;
}

/* ---- one point in one round -------------------------------------------- */

/* Point m (of the measured) as the k-th of round r: its dataset, one
 * train_run, the machine's load meanwhile, folded into its run. 0, 1 (a stop:
 * no more rounds) or -1 (m->rc -2 for bad data). */
static int measure_point(void *ctx, int i, int r, int k, struct error *e)
{
    struct measure *m = ctx;
    int p = m->measured[i];
    struct point *pt = &m->pts[p];
    struct sweep_data *sd = &m->data[pt->data];
    struct run_result *run = &m->res->runs[p], more;
    // ddp: a stop any rank saw since its last step acts on every rank here (in
    // the data's making it would act on that rank alone)
    if (m->cm && m->cm->world > 1) {
        long stop;
        if (comm_max(m->cm, stop_requested(), &stop, e))
            return -1;
        if (stop)
            return m->cm->stop = COMM_STOP, 1;
    }
    if (!sd->have && sweep_dataset(sd, &pt->cfg, e)) {
        if (stop_requested()) {
            if (m->cm) // ddp: the others go on to the first step
                m->cm->left = m->cm->world > 1;
            return 1;
        }
        m->rc = -2; // bad data: the points run before stay, the result says it was cut short
        m->res->interrupted = true;
        return run->label[0] ? error_wrap(e, "sweep point %s", run->label) : -1;
    }
    dataset_set_sample_cost(&sd->d, pt->cfg.dataset.sample_cost_us);
    progress_round(r, k, pt->cfg.train.warmup_epochs + pt->cfg.train.epochs);
    FILE *trace = r == 0 && pt->cfg.report.trace ? (m->out->trace ? stdout : stderr) : NULL;
    struct load_probe probe;
    struct load load;
    load_begin(&probe);
    m->res->live = &more; // for a rescue while a collective hangs (sweep_rescue)
    m->res->live_run = p;
    int rc = train_run(&pt->cfg, &sd->d, pt->be, m->cm, &more, trace, e);
    m->res->live = NULL;
    load_end(&probe, &load);
    if (m->rebuild)
        sweep_data_free(sd);
    if (rc && !more.failed) // nothing of this round: the run stands as it was
        return stop_requested() ? 1 : (run->label[0] ? error_wrap(e, "sweep point %s",
                                                                  run->label) : -1);
    bool stopped = more.interrupted || more.n_epochs == 0;
    if (more.n_epochs == 0 && !more.failed)
        run_result_free(&more); // stopped before a measured epoch: nothing to keep
    else if (run_result_add_round(run, &more, r, k, &load, e))
        return -1;
    if (rc) { // a failure mid-run: its complete epochs are kept, the rounds end
        m->res->interrupted = true;
        return stop_requested() ? 1 : (run->label[0] ? error_wrap(e, "sweep point %s",
                                                                  run->label) : -1);
    }
    return stopped || comm_stopping(m->cm) ? 1 : 0;
}

/* After each round from min_rounds: every verdict the result prints decided
 * (and each point's precision reached). */
static bool measure_done(void *ctx, int rounds, double alpha)
{
    struct measure *m = ctx;
    (void)rounds;
    m->res->alpha = alpha;
    const char *was = signals_phase("deciding whether the verdicts need more rounds");
    bool done = report_decided(m->res);
    signals_phase(was);
    char why[800];
    if (!m->quiet && !done)
        progress_note(report_undecided(m->res, why, sizeof why));
    return done;
}

/* ddp: every rank ends the rounds when rank 0 does (a control value on the
 * host: comm_max, not the gradients' allreduce, whose NCCL buffer is the
 * device's). */
static bool measure_agree(void *ctx, bool stop)
{
    struct measure *m = ctx;
    struct error e;
    long v = m->cm->rank == 0 && stop;
    if (comm_max(m->cm, v, &v, &e))
        return true; // the next collective reports the failure
    return v > 0;
}

/* ---- the rounds ---------------------------------------------------------- */

/* How many rounds, and until what: a sweep (two points measured or more) or a
 * precision target goes on from bench.min_rounds until decided, the cap or
 * the budget (where one bound is given, the other yields to it); one point
 * runs bench.min_rounds rounds when they are given
 * (--repeat N gives min = max = N), else one. */
static struct rounds_plan plan_of(const struct measure *m)
{
    const struct config *c = m->cfg;
    bool adaptive = m->n_measured > 1 || c->bench.precision > 0;
    int lo = (int)c->bench.min_rounds, hi = (int)c->bench.max_rounds;
    if (lo > hi && config_is_explicit(c, "bench.min_rounds")) // the bound given holds (both
        hi = lo;                                                // given at odds: refused)
    lo = lo > hi ? hi : lo;
    struct rounds_plan plan = {
        .points = m->n_measured,
        .min_rounds = lo,
        .max_rounds = hi,
        .budget_s = lo >= hi ? 0 : c->bench.budget_s,
        .seed = (unsigned long)c->seed,
        .agree = m->cm && m->cm->world > 1 ? measure_agree : NULL,
    };
    if (!adaptive && !config_is_explicit(c, "bench.min_rounds"))
        plan.min_rounds = plan.max_rounds = 1;
    else if (!adaptive)
        plan.max_rounds = plan.min_rounds;
    return plan;
}

/* After a stop: the points never measured leave the result, and so do the
 * records of points that were to be the same as one of them. */
static void drop_unmeasured(struct results *res)
{
    int *to = calloc((size_t)res->n_runs, sizeof *to), n = 0;
    for (int i = 0; to && i < res->n_runs; i++) {
        struct run_result *run = &res->runs[i];
        bool keep = run->same ? to[run->same_as] >= 0 : run->n_rounds > 0 || run->n_epochs > 0;
        to[i] = keep ? n : -1;
        if (!keep) {
            run_result_free(run);
            continue;
        }
        if (run->same)
            run->same_as = to[run->same_as];
        res->runs[n++] = *run;
    }
    if (to)
        res->n_runs = n;
    free(to);
}

int sweep_run(const struct config *c, const struct points *pts, const struct backends *bes,
              struct comm *cm, struct results *res, bool rebuild, bool quiet, struct error *e)
{
    long n = pts->n;
    struct measure m = {.cfg = c, .points = pts, .cm = cm, .res = res, .rebuild = rebuild,
                        .quiet = quiet, .n = n, .out = renderer_find(c->report.format)};
    res->runs = calloc((size_t)n, sizeof *res->runs);
    m.pts = calloc((size_t)n, sizeof *m.pts);
    m.measured = calloc((size_t)n, sizeof *m.measured);
    m.data = calloc((size_t)n, sizeof *m.data);
    int rc = res->runs && m.pts && m.measured && m.data ? 0 : error_set(e, "out of memory");
    rc = rc ? rc : points_begin(&m, bes, e);
    struct rounds_plan plan = plan_of(&m);
    struct rounds_log log = {0};
    if (cm && cm->world > 1 && rc == 0 && stop_requested()) // the others go on to the rounds
        cm->left = true;
    if (rc == 0 && m.n_measured > 0 && !stop_requested()) {
        progress_rounds(plan.max_rounds, m.n_measured, plan.min_rounds >= plan.max_rounds,
                        plan.budget_s);
        rc = rounds_run(&plan, measure_point, measure_done, &m, &log, e);
        res->rounds = log.rounds;
        res->alpha = log.alpha; // the printed verdicts' level: the last look's
        res->looks = log.looks;
        res->rounds_end = plan.min_rounds == plan.max_rounds ? "fixed" : rounds_end_name(log.end);
    }
    progress_done();
    rounds_log_free(&log);
    for (long p = 0; m.pts && p < n; p++)
        config_free(&m.pts[p].cfg);
    for (int k = 0; k < m.n_data; k++)
        sweep_data_free(&m.data[k]);
    free(m.pts);
    free(m.measured);
    free(m.data);
    res->n_points = n;
    bool stopped = stop_requested() || (cm && cm->stop == COMM_STOP); // here, or another rank
    res->interrupted |= stopped;
    if (stopped || rc)
        drop_unmeasured(res);
    return rc && m.rc ? m.rc : rc;
}

void sweep_rescue(struct results *res)
{
    struct run_result *live = res->live;
    if (res->runs && live && live->epochs && live->n_epochs > 0) {
        struct run_result *run = &res->runs[res->live_run];
        live->interrupted = true;
        live->w = live->b = NULL; // mid-step: no final parameters to report
        if (run->n_rounds == 0) { // its first round: the run is what it measured so far
            struct run_result keep = *run;
            *run = *live; // the main thread never returns to it (the watchdog ends the process)
            snprintf(run->label, sizeof run->label, "%s", keep.label);
        } else {
            run->interrupted = true; // its complete rounds stand
        }
    }
    res->live = NULL;
    res->interrupted = true;
    drop_unmeasured(res);
}
