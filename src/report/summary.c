/* The figures of a result, computed once: each run's statistics, shares,
 * speed-up against the first point and the bounding stage (the verdict), for
 * the renderers to format. */
#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "dataset_kind.h"
#include "report_ddp.h"
#include "report_emulated.h"
/* The measured epochs' times of run, in ms (caller frees); NULL when none. */
static double *epoch_ms(const struct run_result *run)
{
    double *t = run->n_epochs > 0 ? malloc((size_t)run->n_epochs * sizeof *t) : NULL;
    for (int k = 0; t && k < run->n_epochs; k++)
        t[k] = 1e3 * run->epochs[k].seconds;
    return t;
}

/* Run i against the first: the speed-up is the reciprocal of the paired
 * per-round ratio (run i's time / the first's), with its interval. */
static void summarize_speedup(const struct results *r, int i, struct run_summary *s)
{
    struct ratio q;
    if (i == 0) {
        s->speedup = 1;
        s->speedup_verdict = VERDICT_SAME;
        return;
    }
    report_pair(r, 0, i, &q);
    s->speedup = 1 / q.ratio;
    s->speedup_ci95[0] = 1 / q.ci95[1];
    s->speedup_ci95[1] = 1 / q.ci95[0];
    s->speedup_verdict = q.verdict;
    s->speedup_rounds_needed = q.units_needed;
}

/* The headline median: over the rounds' medians when there are two or more
 * (its interval then holds the variation between rounds), else over the
 * epochs. */
static void summarize_median(const struct run_result *run, struct run_summary *s)
{
    double *m = malloc((size_t)(run->n_rounds ? run->n_rounds : 1) * sizeof *m);
    int n = 0;
    for (int k = 0; m && k < run->n_rounds; k++)
        if (isfinite(run->rounds[k].median_s))
            m[n++] = 1e3 * run->rounds[k].median_s;
    stats_compute(m, m && n > 1 ? (size_t)n : 0, &s->round_ms);
    free(m);
    const struct stats *st = n > 1 ? &s->round_ms : &s->epoch_ms;
    s->median_s = st->median / 1e3;
    s->ci95_ms[0] = st->ci95[0];
    s->ci95_ms[1] = st->ci95[1];
    s->ci_exact = st->ci_exact;
}

/* The stage shares, copies and host time, summed over the epochs. */
static void summarize_shares(const struct run_result *run, struct run_summary *s)
{
    double total = 0, wait = 0, copy = 0, compute = 0, hidden = 0, bytes = 0, host = 0;
    for (int k = 0; k < run->n_epochs; k++) {
        const struct epoch_result *ep = &run->epochs[k];
        total += ep->seconds;
        wait += ep->st.wait_s;
        copy += ep->st.copy_s;
        compute += ep->st.compute_s;
        hidden += ep->st.hidden_s;
        bytes += ep->st.copy_bytes;
        host += ep->st.host_s;
    }
    s->wait_share = wait / total;
    s->copy_share = copy / total;
    s->compute_share = compute / total;
    s->au = compute / total; // DLIO / MLPerf Storage: compute time over wall time
    if (copy > 0) {
        s->overlap = hidden / copy;
        s->copy_gbps = bytes / copy / 1e9;
    }
    if (host > 0)
        s->host_us = 1e6 * host / ((double)run->n_epochs * (double)run->n_batches);
}

void report_summarize_run(struct results *r, int i)
{
    struct run_result *run = &r->runs[i];
    struct run_summary *s = &run->sum;
    int n = run->n_epochs;
    *s = (struct run_summary){.median_s = NAN, .min_s = NAN, .max_s = NAN,
                              .ci95_ms = {NAN, NAN}, .samples_per_s = NAN, .overlap = NAN,
                              .copy_gbps = NAN, .host_us = NAN, .final_loss = NAN,
                              .speedup = NAN, .speedup_ci95 = {NAN, NAN}, .floor_ratio = NAN,
                              .au = NAN, .speedup_rounds_needed = -1};
    stats_compute(NULL, 0, &s->epoch_ms);
    stats_compute(NULL, 0, &s->round_ms);
    report_ddp_summarize(run);
    double *t = epoch_ms(run);
    if (!t)
        return;
    stats_compute(t, (size_t)n, &s->epoch_ms);
    free(t);
    if (!stats_noise_warning(&s->epoch_ms, s->warning, sizeof s->warning))
        s->warning[0] = '\0';
    if (!load_warning(&run->load, s->load_warning, sizeof s->load_warning))
        s->load_warning[0] = '\0';
    summarize_median(run, s);
    s->min_s = s->epoch_ms.min / 1e3;
    s->max_s = s->epoch_ms.max / 1e3;
    s->samples_per_s = (double)run->epochs[0].st.samples / s->median_s;
    summarize_shares(run, s);
    s->final_loss = run->epochs[n - 1].loss;
    summarize_speedup(r, i, s);
    if (run->floor.measured && run->floor.seconds > 0)
        s->floor_ratio = s->median_s / run->floor.seconds;
    report_emulated_summarize(run);
}

/* A point not run again (same_as) never read its data: its config takes
 * the value of `key` that the run holding its measurement resolved, so that
 * it says what it stands for and compare finds its workload. */
static void resolve_same(struct results *r, const char *key)
{
    for (int i = 0; i < r->n_runs; i++) {
        char v[CONFIG_STR];
        if (!r->runs[i].same)
            continue;
        config_get_text(&r->runs[report_measured(r, i)].cfg, key, v, sizeof v);
        config_resolve(&r->runs[i].cfg, key, v); // a value a run took
    }
}

/* The keys a run resolves from its data (a file-backed dataset's shape, the
 * loss "auto" picks): the base config shows what the runs used, or, where
 * they used different values without a sweep of the key, says so. */
static void resolve_base(struct results *r)
{
    static const char *const data_keys[] = {"dataset.length", "dataset.features",
                                            "model.out_features", "model.loss"};
    size_t used = 0;
    r->config_note[0] = '\0';
    for (size_t k = 0; k < sizeof data_keys / sizeof *data_keys && r->n_runs > 0; k++) {
        bool swept = false;
        for (int i = 0; i < r->cfg.n_sweep; i++)
            swept |= strcmp(r->cfg.sweep[i].key, data_keys[k]) == 0;
        if (swept) // the sweep list says the values
            continue;
        resolve_same(r, data_keys[k]);
        char first[CONFIG_STR], v[CONFIG_STR];
        config_get_text(&r->runs[0].cfg, data_keys[k], first, sizeof first);
        bool same = true;
        for (int i = 1; i < r->n_runs && same; i++) {
            config_get_text(&r->runs[i].cfg, data_keys[k], v, sizeof v);
            same = strcmp(v, first) == 0;
        }
        if (same)
            config_resolve(&r->cfg, data_keys[k], first); // a value the runs took
        else if (used < sizeof r->config_note)
            used += (size_t)snprintf(r->config_note + used, sizeof r->config_note - used, "%s%s",
                                     used ? ", " : "", data_keys[k]);
    }
    if (used && used < sizeof r->config_note)
        snprintf(r->config_note + used, sizeof r->config_note - used,
                 ": each run's data gave its own value (runs[i].config)");
}

void report_summarize(struct results *r)
{
    resolve_base(r);
    for (int i = 0; i < r->n_runs; i++)
        report_summarize_run(r, i);
    report_conclude(r, &r->conclusion);
}

/* A stage bounds the epoch only when it dominates: at least DOMINANT_SHARE of
 * the epoch, or DOMINANT_RATIO times the next largest share (the loop's own
 * time outside the stages counts as one). Otherwise no one change would help
 * much, and the verdict says so with the shares. */
#define DOMINANT_SHARE 0.6
#define DOMINANT_RATIO 1.5

enum bound report_bound(double wait, double exposed_copy, double compute)
{
    /* the fourth share is the loop's own time, outside the three stages */
    double other = 1.0 - wait - exposed_copy - compute;
    double share[4] = {wait, exposed_copy, compute, other > 0 ? other : 0};
    int top = 0;
    for (int i = 1; i < 4; i++)
        if (share[i] > share[top])
            top = i;
    double next = 0;
    for (int i = 0; i < 4; i++)
        if (i != top && share[i] > next)
            next = share[i];
    if (top == 3 || (share[top] < DOMINANT_SHARE && share[top] < DOMINANT_RATIO * next))
        return BOUND_BALANCED;
    return top == 0 ? BOUND_INPUT : top == 1 ? BOUND_COPY : BOUND_COMPUTE;
}

const char *bound_name(enum bound b)
{
    static const char *const names[] = {"balanced", "input", "copy", "compute"};
    return names[b];
}

/* The shares of the epoch a verdict weighs, in one accounting: on a device
 * (its copies and steps timed on the device), waiting is the device's idle
 * time, 1 - (compute + exposed copies), so it and the AU add up; on the host,
 * the training loop's wait for data. */
static void verdict_shares(const struct run_result *run, double *wait, double *copy,
                           double *compute)
{
    const struct run_summary *s = &run->sum;
    const struct backend *be = run->backend ? backend_find(run->backend) : NULL;
    *copy = s->copy_share * (isnan(s->overlap) ? 1.0 : 1.0 - s->overlap);
    *compute = s->compute_share;
    *wait = be && be->device_copies ? fmax(0, 1 - *compute - *copy) : s->wait_share;
}

enum bound report_run_bound(const struct run_result *run)
{
    double wait, copy, compute;
    verdict_shares(run, &wait, &copy, &compute);
    return report_bound(wait, copy, compute);
}

/* The run of the sweep that differs from run i in key alone, with the next
 * value up (more workers, or the knob on); -1 when none. */
static int next_up(const struct results *r, int i, const char *key)
{
    char mine[CONFIG_STR], theirs[CONFIG_STR];
    config_get_text(&r->runs[i].cfg, key, mine, sizeof mine);
    int best = -1;
    double best_v = INFINITY, v0 = strcmp(mine, "true") == 0 ? 1 : atof(mine);
    for (int j = 0; j < r->n_runs; j++) {
        if (j == i || !report_differs_only(r, i, j, key))
            continue;
        config_get_text(&r->runs[j].cfg, key, theirs, sizeof theirs);
        double v = strcmp(theirs, "true") == 0 ? 1 : atof(theirs);
        if (v > v0 && v < best_v) {
            best_v = v;
            best = j;
        }
    }
    return best;
}

/* What to try, from what this run's sweep measured when it measured it: a
 * bottleneck's usual remedy (`remedy`, set by `key`) is advised only when
 * the sweep has not measured it slower or the same; a single run is told how
 * to measure it. */
static void advice(const struct results *r, int i, const char *key, const char *remedy,
                   char *buf, size_t n)
{
    int j = r ? next_up(r, i, key) : -1;
    if (j < 0) {
        snprintf(buf, n, "%s may help: measure it (--sweep %s=...)", remedy, key);
        return;
    }
    struct ratio q;
    report_pair(r, i, j, &q);
    const char *label = r->runs[j].label[0] ? r->runs[j].label : "(base)";
    if (q.verdict == VERDICT_FASTER)
        snprintf(buf, n, "%s measured faster here (%s: %.2fx the time)", remedy, label, q.ratio);
    else if (q.verdict == VERDICT_UNDECIDED)
        snprintf(buf, n, "%s: not told apart here (%s: %.2fx the time, undecided)", remedy,
                 label, q.ratio);
    else
        snprintf(buf, n, "%s measured no faster here (%s: %.2fx the time, %s)", remedy, label,
                 q.ratio, verdict_name(q.verdict));
}

void report_verdict(const struct results *r, int i, char *buf, size_t n)
{
    const struct run_result *run = &r->runs[report_measured(r, i)];
    const struct run_result *self = &r->runs[i];
    double wait, copy, compute;
    if (run->n_epochs == 0) {
        snprintf(buf, n, "no measured epoch");
        return;
    }
    verdict_shares(run, &wait, &copy, &compute);
    const struct backend *be = run->backend ? backend_find(run->backend) : NULL;
    const char *who = be && be->device_copies ? "the device" : "the loop";
    enum bound b = report_bound(wait, copy, compute);
    double other = 1.0 - wait - copy - compute;
    char tip[320];
    if (b == BOUND_BALANCED) {
        snprintf(buf, n, "balanced: no stage dominates (waiting for data %.0f%%, exposed copies "
                 "%.0f%%, DataParallel steps %.0f%%, other %.0f%% of the epoch)",
                 100 * wait, 100 * copy, 100 * compute, 100 * (other > 0 ? other : 0));
    } else if (b == BOUND_INPUT) {
        advice(r, i, "loader.num_workers", self->cfg.loader.num_workers == 0
                   ? "loader workers" : "more workers", tip, sizeof tip);
        snprintf(buf, n, "input-bound: %s waited %.0f%% of the epoch for data; %s", who,
                 100 * wait, tip);
    } else if (b == BOUND_COPY) {
        const char *key = self->cfg.loader.async_copy ? "loader.pin_memory" : "loader.async_copy";
        advice(r, i, key, self->cfg.loader.async_copy ? "pinned memory" : "async_copy", tip,
               sizeof tip);
        snprintf(buf, n, "copy-bound: host-to-device copies took %.0f%% of the epoch; %s",
                 100 * copy, tip);
    } else {
        snprintf(buf, n, "compute-bound: DataParallel steps took %.0f%% of the epoch",
                 100 * compute);
    }
}

const char *run_warning(const struct run_result *run, char *buf, size_t n)
{
    if (!run->sum.warning[0])
        return NULL;
    snprintf(buf, n, "%s%s%s", run->label, run->label[0] ? ": " : "", run->sum.warning);
    return buf;
}

int report_split_width(const struct run_result *run)
{
    return run->world_size > 1 ? run->world_size : run->replicas;
}

/* Labelled data adds accuracy and file reads to the epoch table. */
bool report_labelled(const struct run_result *run)
{
    return dataset_kind_of(&run->cfg)->labelled;
}

void results_free(struct results *r)
{
    for (int i = 0; i < r->n_runs; i++)
        run_result_free(&r->runs[i]);
    free(r->runs);
    if (r->tune) {
        free(r->tune->trials);
        free(r->tune->space);
        free(r->tune);
    }
    config_free(&r->cfg);
    memset(r, 0, sizeof *r);
}
