/* The verdicts a result prints, from its points' rounds: each point against
 * the first (its speed-up), and the conclusion: the fastest point, and each
 * swept knob's effect measured from it (the paired per-round ratio between
 * the fastest point and the point that differs from it in that knob alone).
 * The sweep asks report_decided after every round whether it may stop, so
 * what it waits for and what is printed are one computation. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run that holds run i's measurement (itself, or the one it is the same
 * work as). */
int report_measured(const struct results *r, int i)
{
    while (i >= 0 && r->runs[i].same)
        i = r->runs[i].same_as;
    return i;
}

/* The median of a run's rounds' medians (seconds), NAN without rounds. */
double report_round_median(const struct run_result *run)
{
    double *m = malloc((size_t)(run->n_rounds ? run->n_rounds : 1) * sizeof *m), med = NAN;
    int n = 0;
    for (int k = 0; m && k < run->n_rounds; k++)
        if (isfinite(run->rounds[k].median_s))
            m[n++] = run->rounds[k].median_s;
    if (m && n)
        med = stats_median(m, (size_t)n);
    free(m);
    return med;
}

void report_pair(const struct results *r, int a, int b, struct ratio *out)
{
    const struct run_result *ra = &r->runs[report_measured(r, a)];
    const struct run_result *rb = &r->runs[report_measured(r, b)];
    int n = ra->n_rounds < rb->n_rounds ? ra->n_rounds : rb->n_rounds, k = 0;
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x), *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    /* the rounds both ran, matched by round (a stop may cut one side's last) */
    for (int i = 0, j = 0; x && y && i < ra->n_rounds && j < rb->n_rounds;) {
        const struct run_round *p = &ra->rounds[i], *q = &rb->rounds[j];
        if (p->round < q->round) {
            i++;
        } else if (q->round < p->round) {
            j++;
        } else {
            if (isfinite(p->median_s) && isfinite(q->median_s) && p->median_s > 0 &&
                q->median_s > 0) {
                x[k] = p->median_s;
                y[k++] = q->median_s;
            }
            i++, j++;
        }
    }
    stats_paired(x ? x : (double[1]){0}, y ? y : (double[1]){0}, (size_t)k,
                 r->cfg.bench.threshold, r->alpha > 0 ? r->alpha : 0.05, out);
    free(x);
    free(y);
}

bool report_differs_only(const struct results *r, int i, int j, const char *key)
{
    bool differs = false;
    for (int s = 0; s < r->cfg.n_sweep; s++) {
        char a[CONFIG_STR], b[CONFIG_STR];
        config_get_text(&r->runs[i].cfg, r->cfg.sweep[s].key, a, sizeof a);
        config_get_text(&r->runs[j].cfg, r->cfg.sweep[s].key, b, sizeof b);
        bool same = strcmp(a, b) == 0;
        if (strcmp(r->cfg.sweep[s].key, key) == 0)
            differs = !same;
        else if (!same)
            return false;
    }
    return differs;
}

/* The fastest measured run by the measure the verdicts use: its paired
 * per-round ratio against the first point (the first itself 1), so the
 * fastest point and its knobs' ratios never disagree on which is faster
 * than the first. Without paired rounds, the ratio of rounds' medians. */
static int fastest_run(const struct results *r)
{
    int best = -1, first = report_measured(r, 0);
    double t = INFINITY, m0 = report_round_median(&r->runs[first]);
    if (!isfinite(m0) || m0 <= 0)
        m0 = 1; // no rounds anywhere: the medians themselves
    for (int i = 0; i < r->n_runs; i++) {
        if (r->runs[i].same)
            continue;
        struct ratio q = {.ratio = 1};
        if (i != first)
            report_pair(r, first, i, &q);
        if (!isfinite(q.ratio) || q.units < 2)
            q.ratio = report_round_median(&r->runs[i]) / m0;
        if (q.ratio < t) {
            t = q.ratio;
            best = i;
        }
    }
    return best;
}

void report_conclude(const struct results *r, struct conclusion *c)
{
    *c = (struct conclusion){.fastest = r->cfg.n_sweep > 0 ? fastest_run(r) : -1};
    for (int s = 0; c->fastest >= 0 && s < r->cfg.n_sweep; s++) {
        struct knob_effect *k = &c->knobs[c->n_knobs++];
        *k = (struct knob_effect){.key = r->cfg.sweep[s].key, .run = -1};
        double best = INFINITY;
        for (int j = 0; j < r->n_runs; j++) { // the best of the other values
            if (j == c->fastest || !report_differs_only(r, c->fastest, j, k->key))
                continue;
            int m = report_measured(r, j);
            double t = m == c->fastest ? 0 : report_round_median(&r->runs[m]);
            if (t < best || k->run < 0) {
                best = t;
                k->run = j;
            }
        }
        if (k->run < 0)
            continue;
        k->same_work = report_measured(r, k->run) == c->fastest;
        if (!k->same_work)
            report_pair(r, c->fastest, k->run, &k->vs);
    }
}

/* Each point against the first: run i's verdict (i > 0, measured). */
static bool vs_first_decided(const struct results *r, int i)
{
    struct ratio q;
    report_pair(r, 0, i, &q);
    return q.verdict != VERDICT_UNDECIDED;
}

/* bench.precision: the median's interval over the rounds within +- it. */
static bool precise(const struct results *r, const struct run_result *run)
{
    double *m = malloc((size_t)(run->n_rounds ? run->n_rounds : 1) * sizeof *m);
    struct stats st;
    for (int k = 0; m && k < run->n_rounds; k++)
        m[k] = run->rounds[k].median_s;
    stats_compute(m, m ? (size_t)run->n_rounds : 0, &st);
    free(m);
    double p = r->cfg.bench.precision;
    return st.ci_exact && st.ci95[0] >= st.median * (1 - p) && st.ci95[1] <= st.median * (1 + p);
}

/* How many verdicts are undecided (and the first of them into buf). */
static int count_undecided(const struct results *r, char *buf, size_t n)
{
    int open = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        bool vs = i > 0 && !run->same && !vs_first_decided(r, i);
        bool prec = !run->same && r->cfg.bench.precision > 0 && !precise(r, run);
        if ((vs || prec) && open++ == 0)
            snprintf(buf, n, "%s%s", run->label[0] ? run->label : "(base)",
                     vs ? " against the first point" : ": its precision");
    }
    struct conclusion c;
    report_conclude(r, &c);
    for (int s = 0; s < c.n_knobs; s++) {
        const struct knob_effect *k = &c.knobs[s];
        if (k->run >= 0 && !k->same_work && k->vs.verdict == VERDICT_UNDECIDED && open++ == 0)
            snprintf(buf, n, "%s's effect", k->key);
    }
    return open;
}

bool report_decided(const struct results *r)
{
    char first[600];
    return count_undecided(r, first, sizeof first) == 0;
}

const char *report_undecided(const struct results *r, char *buf, size_t n)
{
    char first[600];
    int open = count_undecided(r, first, sizeof first);
    snprintf(buf, n, "%d verdict%s undecided after %d round%s (%s%s)", open,
             open == 1 ? "" : "s", r->runs[0].n_rounds, r->runs[0].n_rounds == 1 ? "" : "s",
             first, open > 1 ? ", ..." : "");
    return buf;
}

const char *report_load_apart(const struct results *r, char *buf, size_t n)
{
    const struct run_result *a = NULL, *b = NULL;
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        if (run->same || run->load.seconds <= 0 || isnan(run->load.others_cpu))
            continue;
        if (!a || run->load.others_cpu < a->load.others_cpu)
            a = run;
        if (!b || run->load.others_cpu > b->load.others_cpu)
            b = run;
    }
    if (!a || b->load.others_cpu - a->load.others_cpu <= LOAD_DIFFERENT)
        return NULL;
    snprintf(buf, n, "the points ran under clearly different load: other processes took "
             "%.0f%% of the CPUs during %s, %.0f%% during %s; their comparison is less sure "
             "than its interval says", 100 * a->load.others_cpu, a->label,
             100 * b->load.others_cpu, b->label);
    return buf;
}
