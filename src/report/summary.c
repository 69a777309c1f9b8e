/* The figures of a result, computed once: each run's statistics, shares,
 * speed-up against the first point and the bounding stage (the verdict), for
 * the renderers to format. */
#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* speedup of run i against the first run: the ratio of medians, its
 * interval and the verdict of stats_compare (noise reads "same") */
static void summarize_speedup(const struct results *r, struct run_summary *s, const double *t,
                              int n)
{
    double *t0 = epoch_ms(&r->runs[0]);
    if (!t0)
        return;
    struct comparison c;
    stats_compare(t0, (size_t)r->runs[0].n_epochs, t, (size_t)n, &c);
    s->speedup = 1 / c.ratio;
    s->speedup_ci95[0] = 1 / c.ci95[1];
    s->speedup_ci95[1] = 1 / c.ci95[0];
    s->speedup_verdict = c.verdict;
    free(t0);
}

void report_summarize_run(struct results *r, int i)
{
    struct run_result *run = &r->runs[i];
    struct run_summary *s = &run->sum;
    int n = run->n_epochs;
    *s = (struct run_summary){.median_s = NAN, .min_s = NAN, .max_s = NAN,
                              .samples_per_s = NAN, .overlap = NAN, .copy_gbps = NAN,
                              .host_us = NAN, .final_loss = NAN, .speedup = NAN,
                              .speedup_ci95 = {NAN, NAN}, .floor_ratio = NAN, .au = NAN};
    stats_compute(NULL, 0, &s->epoch_ms);
    report_ddp_summarize(run);
    double *t = epoch_ms(run);
    if (!t)
        return;
    double total = 0, wait = 0, copy = 0, compute = 0, hidden = 0, bytes = 0, host = 0;
    for (int k = 0; k < n; k++) {
        const struct epoch_result *ep = &run->epochs[k];
        total += ep->seconds;
        wait += ep->st.wait_s;
        copy += ep->st.copy_s;
        compute += ep->st.compute_s;
        hidden += ep->st.hidden_s;
        bytes += ep->st.copy_bytes;
        host += ep->st.host_s;
    }
    stats_compute(t, (size_t)n, &s->epoch_ms);
    if (!stats_noise_warning(&s->epoch_ms, s->warning, sizeof s->warning))
        s->warning[0] = '\0';
    s->median_s = s->epoch_ms.median / 1e3;
    s->min_s = s->epoch_ms.min / 1e3;
    s->max_s = s->epoch_ms.max / 1e3;
    s->samples_per_s = (double)run->epochs[0].st.samples / s->median_s;
    s->wait_share = wait / total;
    s->copy_share = copy / total;
    s->compute_share = compute / total;
    s->au = compute / total; // DLIO / MLPerf Storage: compute time over wall time
    if (copy > 0) {
        s->overlap = hidden / copy;
        s->copy_gbps = bytes / copy / 1e9;
    }
    if (host > 0)
        s->host_us = 1e6 * host / ((double)n * (double)run->n_batches);
    s->final_loss = run->epochs[n - 1].loss;
    summarize_speedup(r, s, t, n);
    if (run->floor.measured && run->floor.seconds > 0)
        s->floor_ratio = s->median_s / run->floor.seconds;
    report_emulated_summarize(run);
    free(t);
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
        char first[CONFIG_STR], v[CONFIG_STR];
        config_get_text(&r->runs[0].cfg, data_keys[k], first, sizeof first);
        bool same = true;
        for (int i = 1; i < r->n_runs && same; i++) {
            config_get_text(&r->runs[i].cfg, data_keys[k], v, sizeof v);
            same = strcmp(v, first) == 0;
        }
        struct error e;
        if (same)
            config_set(&r->cfg, data_keys[k], first, &e); // a value a run took: valid
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

void report_verdict(const struct run_result *run, char *buf, size_t n)
{
    const struct run_summary *s = &run->sum;
    double exposed_copy = run->sum.copy_share * (isnan(s->overlap) ? 1.0 : 1.0 - s->overlap);
    if (run->n_epochs == 0) {
        snprintf(buf, n, "no measured epoch");
        return;
    }
    enum bound b = report_bound(s->wait_share, exposed_copy, s->compute_share);
    double other = 1.0 - s->wait_share - exposed_copy - s->compute_share;
    if (b == BOUND_BALANCED)
        snprintf(buf, n,
                 "balanced: no stage dominates (waiting for data %.0f%%, exposed copies %.0f%%, "
                 "DataParallel steps %.0f%%, other %.0f%% of the epoch)",
                 100 * s->wait_share, 100 * exposed_copy, 100 * s->compute_share,
                 100 * (other > 0 ? other : 0));
    else if (b == BOUND_INPUT)
        snprintf(buf, n,
                 "input-bound: the loop waited %.0f%% of the epoch for data; %s would help",
                 100 * s->wait_share,
                 run->cfg.loader.num_workers == 0 ? "loader workers (num_workers > 0)"
                                                  : "more workers or a cheaper sample");
    else if (b == BOUND_COPY)
        snprintf(buf, n, "copy-bound: host-to-device copies took %.0f%% of the epoch; %s",
                 100 * exposed_copy,
                 run->cfg.loader.async_copy ? "pinned memory would speed them up"
                                            : "async_copy would hide them behind compute");
    else
        snprintf(buf, n, "compute-bound: DataParallel steps took %.0f%% of the epoch",
                 100 * s->compute_share);
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
    cJSON_Delete(r->tune);
    config_free(&r->cfg);
    memset(r, 0, sizeof *r);
}
