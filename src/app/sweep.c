/* The points of a run: a config with a sweep is the cartesian product of
 * the swept keys' values, each point a config of its own. This file expands
 * the points, checks each before anything runs, and builds a dataset once
 * for the points whose data keys agree; measure.c measures them. */
#include "sweep.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset_files.h"
#include "dataset_kind.h"
#include "effect.h"
#include "emulate_profile.h"
#include "estimate.h"
#include "progress.h"
#include "signals.h"

long sweep_points(const struct config *c)
{
    long n = 1;
    for (int i = 0; i < c->n_sweep; i++)
        n *= c->sweep[i].n_values;
    return n;
}

/* parallel.device auto resolved to backend be; on a backend without device
 * ids (the cpu), device ids become that many replicas. */
void sweep_resolve_auto(struct config *c, const struct backend *be)
{
    if (!be || strcmp(c->parallel.device, "auto") != 0)
        return;
    snprintf(c->parallel.device, sizeof c->parallel.device, "%s", be->name);
    if (!be->has_devices && c->parallel.n_devices > 0) {
        c->parallel.replicas = c->parallel.n_devices;
        c->parallel.n_devices = 0;
    }
}

/* The config of sweep point p (first sweep key outermost) and its label;
 * parallel.device auto becomes auto_be unless that is NULL. The point
 * keeps the sweep's keys, each with its own value alone, as swept (an auto
 * not yet resolved: the results' overrides): a point costs the same
 * whatever the sweep's size. */
int sweep_point(const struct config *base, long p, struct config *out, char *label,
                        size_t n, const struct backend *auto_be, struct error *e)
{
    *out = *base;
    for (int i = 0; i < out->n_sweep; i++) {
        memset(out->sweep[i].values, 0, sizeof out->sweep[i].values);
        out->sweep[i].n_values = 0;
    }
    label[0] = '\0';
    size_t used = 0;
    for (int i = base->n_sweep - 1; i >= 0; i--) { // innermost first: mixed radix
        const struct config_sweep *s = &base->sweep[i];
        const char *v = s->values[p % s->n_values];
        p /= s->n_values;
        if (config_set(out, s->key, v, e)) {
            config_free(out);
            return -1;
        }
        config_set_line(out, s->key, s->line); // its errors name the sweep: entry
    }
    for (int i = 0; i < base->n_sweep; i++) { // each key's value as swept, before auto resolves
        char v[CONFIG_STR];
        config_get_text(out, base->sweep[i].key, v, sizeof v);
        if (used < n)
            used += (size_t)snprintf(label + used, n - used, "%s%s=%s", i ? " " : "",
                                     base->sweep[i].key, v);
        if (!(out->sweep[i].values[0] = strdup(v))) {
            config_free(out);
            return error_set(e, "out of memory");
        }
        out->sweep[i].n_values = 1;
    }
    if (emulate_profile_apply(out, e) || config_validate(out, e)) { // file:line where it has one
        config_free(out);
        return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
    }
    sweep_resolve_auto(out, auto_be);
    return 0;
}

int points_of(const struct config *c, struct points *pts, struct error *e)
{
    long n = sweep_points(c);
    *pts = (struct points){0};
    pts->cfg = calloc((size_t)n, sizeof *pts->cfg);
    pts->label = calloc((size_t)n, sizeof *pts->label);
    if (!pts->cfg || !pts->label)
        return error_set(e, "out of memory");
    for (long p = 0; p < n && !stop_requested(); p++, pts->n++)
        if (sweep_point(c, p, &pts->cfg[p], pts->label[p], sizeof pts->label[p], NULL, e))
            return -1;
    return 0;
}

int points_add(struct points *pts, const struct config *c, const char *label, struct error *e)
{
    struct config *cfg = realloc(pts->cfg, (size_t)(pts->n + 1) * sizeof *cfg);
    char(*lab)[512] = cfg ? realloc(pts->label, (size_t)(pts->n + 1) * sizeof *lab) : NULL;
    if (cfg)
        pts->cfg = cfg;
    if (!lab || config_copy(&cfg[pts->n], c))
        return error_set(e, "out of memory");
    pts->label = lab;
    snprintf(lab[pts->n], sizeof lab[0], "%s", label);
    pts->n++;
    return 0;
}

void points_resolve_auto(struct points *pts, const struct backend *be)
{
    for (long p = 0; p < pts->n; p++)
        sweep_resolve_auto(&pts->cfg[p], be);
}

void points_free(struct points *pts)
{
    for (long p = 0; pts->cfg && p < pts->n; p++)
        config_free(&pts->cfg[p]);
    free(pts->cfg);
    free(pts->label);
    memset(pts, 0, sizeof *pts);
}

size_t sweep_memory_limit(double max_memory, char *what, size_t n)
{
    snprintf(what, n, "--max-memory limit (%.3f GiB)", max_memory / (1 << 30));
    if (max_memory > 0)
        return max_memory >= 0x1p64 ? SIZE_MAX : (size_t)max_memory;
    size_t avail = estimate_available();
    snprintf(what, n, "%.2f GiB available memory less a %.2f GiB margin",
             (double)avail / (1 << 30), (double)estimate_margin(avail) / (1 << 30));
    return avail > estimate_margin(avail) ? avail - estimate_margin(avail) : 0;
}

/* The estimate of point config pc, its address space checked against
 * RLIMIT_AS; -1 with e naming the point. */
static int point_estimate(const struct config *pc, const char *label, struct estimate *est,
                          struct error *e)
{
    if (dataset_kind_of(pc)->labelled && dataset_files_check(pc, e)) // before any point runs
        return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
    int rc = estimate_host(pc, est);
    if (rc == 0 && estimate_check_limits(pc, est, e))
        return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
    if (rc)
        return error_set(e, "%s%sdataset %ld x %ld -> %ld: the sizes overflow this machine's "
                            "address space", label, label[0] ? ": " : "", pc->dataset.length,
                         pc->dataset.features, pc->model.out_features);
    return 0;
}

/* The datasets of every distinct data config among the points, summed: the
 * rounds keep them all for the whole run. */
static size_t datasets_sum(const struct points *pts)
{
    size_t sum = 0;
    for (long p = 0; p < pts->n; p++) {
        bool known = false;
        struct estimate est;
        for (long k = 0; k < p && !known; k++)
            known = config_same_data(&pts->cfg[k], &pts->cfg[p]);
        if (!known && estimate_host(&pts->cfg[p], &est) == 0)
            sum = est.dataset > SIZE_MAX - sum ? SIZE_MAX : sum + est.dataset;
    }
    return sum;
}

int points_make_data(const struct points *pts, struct error *e)
{
    for (long p = 0; p < pts->n && !stop_requested(); p++)
        if (dataset_files_make(&pts->cfg[p], e)) {
            if (pts->label[p][0])
                error_wrap(e, "sweep point %s", pts->label[p]);
            return -1;
        }
    return 0;
}

/* Checks every point before any runs: its estimated host footprint
 * (estimate.c) against the limit, before any allocation (a device backend
 * checks its own memory in init, before allocating there). Every point keeps
 * its results until the end, and the rounds keep every distinct dataset
 * (keep_data), unless that does not fit while building each point's data
 * again per round does: then *rebuild is set. Sets *peak to the largest
 * need. */
int sweep_check(const struct points *pts, double max_memory, bool keep_data, size_t *peak,
                bool *rebuild, struct error *e)
{
    char what[96];
    size_t limit = sweep_memory_limit(max_memory, what, sizeof what), kept = 0;
    size_t datasets = keep_data ? datasets_sum(pts) : 0;
    *peak = 0;
    *rebuild = false;
    for (long p = 0; p < pts->n && !stop_requested(); p++) {
        const char *label = pts->label[p];
        struct estimate est;
        if (point_estimate(&pts->cfg[p], label, &est, e))
            return -1;
        if (__builtin_add_overflow(est.total, kept, &est.total))
            return error_set(e, "%s: the sizes overflow this machine's address space", label);
        kept += est.results;
        size_t all = est.total - est.dataset + (datasets > est.dataset ? datasets : est.dataset);
        *rebuild |= limit && all > limit && est.total <= limit;
        size_t need = *rebuild ? est.total : all;
        *peak = need > *peak ? need : *peak;
        if (limit && need > limit)
            return error_set(e, "%s%sthe run needs about %.3f GiB of host memory (dataset %.2f, "
                                "loader %.2f, model %.2f, results %.2f, runtime %.2f), more "
                                "than the %s",
                             label, label[0] ? ": " : "", (double)need / (1 << 30),
                             (double)est.dataset / (1 << 30), (double)est.loader / (1 << 30),
                             (double)est.model / (1 << 30), (double)est.results / (1 << 30),
                             (double)est.runtime / (1 << 30), what);
    }
    return 0;
}

/* Makes sd's dataset the one of point config pc, generating it again only
 * when pc's data keys differ from those it was built for. */
int sweep_dataset(struct sweep_data *sd, const struct config *pc, struct error *e)
{
    if (!sd->have || !config_same_data(&sd->cfg, pc)) {
        sweep_data_free(sd);
        if (dataset_init(&sd->d, pc, e))
            return -1;
        sd->have = true;
        sd->cfg = *pc;
        sd->cfg.n_sweep = 0;
    }
    dataset_set_sample_cost(&sd->d, pc->dataset.sample_cost_us);
    return 0;
}

void sweep_data_free(struct sweep_data *sd)
{
    if (sd->have)
        dataset_free(&sd->d);
    sd->have = false;
}

