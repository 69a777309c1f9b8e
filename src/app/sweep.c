/* The points of a run: a config with a sweep is the cartesian product of
 * the swept keys' values, each point a config of its own. This file expands
 * the points, checks each before anything runs, shares a dataset between
 * points whose data keys agree, and measures the points in turn. */
#include "sweep.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
 * keeps the sweep's keys (for its label in results), not their values: a
 * point costs the same whatever the sweep's size. */
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
    }
    for (int i = 0; i < base->n_sweep && used < n; i++) {
        char v[CONFIG_STR];
        config_get_text(out, base->sweep[i].key, v, sizeof v);
        used += (size_t)snprintf(label + used, n - used, "%s%s=%s", i ? " " : "",
                                 base->sweep[i].key, v);
    }
    if (emulate_profile_apply(out, e) || config_validate(out, e)) {
        config_free(out);
        return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
    }
    sweep_resolve_auto(out, auto_be);
    return 0;
}

/* Checks every point before any runs: its config (the rules that tie keys
 * together) and its estimated host footprint (estimate.c) against the limit,
 * before any allocation (a device backend checks its own memory in init,
 * before allocating there). Points run one after the other, but each keeps
 * its results until the end. Sets *peak to the largest need. */
int sweep_check(const struct config *c, double max_memory, size_t *peak,
                        struct error *e)
{
    char what[96] = "--max-memory";
    size_t limit = max_memory > 0 ? (max_memory >= 0x1p64 ? SIZE_MAX : (size_t)max_memory) : 0;
    if (!limit) { // keep a margin free: a run at the edge of memory thrashes
        size_t avail = estimate_available();
        limit = avail > estimate_margin(avail) ? avail - estimate_margin(avail) : 0;
        snprintf(what, sizeof what, "%.2f GiB available memory less a %.2f GiB margin",
                 (double)avail / (1 << 30), (double)estimate_margin(avail) / (1 << 30));
    }
    long n = sweep_points(c);
    size_t kept = 0; // results of the points before
    *peak = 0;
    for (long p = 0; p < n && !stop_requested(); p++) {
        struct config pc;
        char label[512];
        if (sweep_point(c, p, &pc, label, sizeof label, NULL, e))
            return -1;
        struct estimate est;
        int rc = estimate_host(&pc, &est);
        if (rc == 0 && estimate_check_limits(&pc, &est, e)) {
            config_free(&pc);
            return label[0] ? error_wrap(e, "sweep point %s", label) : -1;
        }
        config_free(&pc);
        if (rc || __builtin_add_overflow(est.total, kept, &est.total))
            return error_set(e, "%s%sdataset %ld x %ld -> %ld: the sizes overflow this "
                                "machine's address space",
                             label, label[0] ? ": " : "", pc.dataset.length,
                             pc.dataset.features, pc.model.out_features);
        kept += est.results;
        if (est.total > *peak)
            *peak = est.total;
        if (limit && est.total > limit)
            return error_set(e, "%s%sthe run needs about %.2f GiB of host memory (dataset %.2f, "
                                "loader %.2f, model %.2f, results %.2f, runtime %.2f), more "
                                "than the %s",
                             label, label[0] ? ": " : "", (double)est.total / (1 << 30),
                             (double)est.dataset / (1 << 30), (double)est.loader / (1 << 30),
                             (double)est.model / (1 << 30), (double)est.results / (1 << 30),
                             (double)est.runtime / (1 << 30),
                             max_memory > 0 ? "--max-memory limit" : what);
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

/* The longest point label of the sweep: the table's first column, known
 * before its first row is printed. */
static int label_width(const struct config *c)
{
    int w = 0;
    for (long p = 0; p < sweep_points(c); p++) {
        struct config pc;
        char label[512];
        struct error e;
        if (sweep_point(c, p, &pc, label, sizeof label, NULL, &e))
            continue;
        config_free(&pc);
        if ((int)strlen(label) > w)
            w = (int)strlen(label);
    }
    return w;
}

/* The newest run's row on stdout as soon as its point finishes (a renderer
 * that shows rows live: text). */
static void show_row(struct sweep_run *sr)
{
    struct results *res = sr->res;
    int i = res->n_runs - 1;
    report_summarize_run(res, i);
    sr->out->row(stdout, res, i);
    fflush(stdout);
    res->rows_shown = true;
}

/* Appends more's measured epochs (and each rank's) to into's, numbered on. */
static int append_epochs(struct run_result *into, const struct run_result *more)
{
    int n = into->n_epochs, m = more->n_epochs;
    struct epoch_result *ep = realloc(into->epochs, (size_t)(n + m + 1) * sizeof *ep);
    if (!ep)
        return -1;
    into->epochs = ep;
    for (int r = 0; into->ranks && more->ranks && r < into->world_size; r++) {
        struct epoch_result *re = realloc(into->ranks[r].epochs, (size_t)(n + m + 1) * sizeof *re);
        if (!re)
            return -1;
        into->ranks[r].epochs = re;
        memcpy(re + n, more->ranks[r].epochs, (size_t)m * sizeof *re);
        for (int k = 0; k < m; k++)
            re[n + k].epoch = n + k + 1;
    }
    memcpy(ep + n, more->epochs, (size_t)m * sizeof *ep);
    for (int k = 0; k < m; k++)
        ep[n + k].epoch = n + k + 1;
    into->n_epochs = n + m;
    return 0;
}

/* train_run `repeat` times in a row into run, its measured epochs pooled: a
 * short config still gives a tight interval. Same contract as train_run. */
static int run_repeated(const struct config *pc, const struct dataset *d,
                        const struct backend *be, struct comm *cm, struct run_result *run,
                        FILE *trace, int repeat, struct error *e)
{
    int rc = train_run(pc, d, be, cm, run, trace, e);
    run->repeats = 1;
    for (int k = 1; k < repeat && rc == 0 && !run->interrupted && !stop_requested(); k++) {
        struct run_result more;
        progress_repeat(k);
        rc = train_run(pc, d, be, cm, &more, NULL, e);
        if (rc && !more.failed) { // nothing of this repeat: the run stands as it was
            run_result_free(run);
            return rc;
        }
        if (append_epochs(run, &more)) {
            run_result_free(&more);
            run_result_free(run);
            return error_set(e, "out of memory");
        }
        run->repeats++;
        run->interrupted |= more.interrupted;
        run->failed |= more.failed;
        run->together = more.together;
        if (more.stopped[0])
            snprintf(run->stopped, sizeof run->stopped, "repeat %d: %s", k + 1, more.stopped);
        run_result_free(&more);
    }
    return rc;
}

/* The earlier run whose effective settings (effect.c) equal mine, or -1. */
static int same_as_earlier(const struct results *res, cJSON *const *eff, const cJSON *mine)
{
    for (int k = 0; mine && k < res->n_runs; k++)
        if (eff[k] && !res->runs[k].same && cJSON_Compare(eff[k], mine, 1))
            return k;
    return -1;
}

/* A point that is not run again: its config and label, and which run holds
 * its measurement. */
static int record_same(struct run_result *run, const struct config *pc, const char *label,
                       const struct backend *be, int k, struct error *e)
{
    memset(run, 0, sizeof *run);
    if (config_copy(&run->cfg, pc))
        return error_set(e, "out of memory");
    snprintf(run->label, sizeof run->label, "%s", label);
    run->backend = be->name;
    run->same = true;
    run->same_as = k;
    effect_notes(pc, be, run->notes, sizeof run->notes); // why it is the same
    return 0;
}

/* Records point pc as the next run without running it when its effective
 * settings equal an earlier run's: 1 when recorded, 0 when it must run, -1
 * on an error. eff[i] keeps run i's effective settings. */
static int skip_same(struct results *res, cJSON **eff, const struct config *pc, const char *label,
                     const struct backend *be, struct error *e)
{
    cJSON *mine = effect_config(pc, be);
    int k = same_as_earlier(res, eff, mine);
    eff[res->n_runs] = mine;
    if (k < 0)
        return 0;
    if (record_same(&res->runs[res->n_runs], pc, label, be, k, e))
        return -1;
    res->n_runs++;
    return 1;
}

/* After run_repeated returned rc != 0: a failure mid-run keeps the complete
 * epochs (maybe none) as partial results; a stop keeps only complete epochs
 * and is not a failure. Returns the status for run_points. */
static int point_failed(struct results *res, struct run_result *run, const char *label, int rc,
                        struct error *e)
{
    if (run->failed || stop_requested()) {
        if (run->failed && (run->n_epochs > 0 || !stop_requested())) {
            snprintf(run->label, sizeof run->label, "%s", label);
            res->n_runs++;
            res->interrupted = true;
        } else if (run->failed) {
            run_result_free(run);
        }
        if (stop_requested())
            return 0; // interrupted, not failed
    }
    if (label[0])
        error_wrap(e, "sweep point %s", label);
    return rc;
}

/* Point p: not run again when an earlier run did the same work, else
 * measured into the next run. 0 to go on, 1 to stop after it (a stop, or a
 * point stopped before its first measured epoch), or rc < 0 (see sweep_run). */
static int run_point(struct sweep_run *sr, long p, struct error *e)
{
    struct results *res = sr->res;
    struct config pc;
    char label[512];
    const struct backend *auto_be = backends_get(sr->bes, "auto");
    if (sweep_point(sr->cfg, p, &pc, label, sizeof label, auto_be, e))
        return -1;
    const struct backend *be = backends_get(sr->bes, pc.parallel.device);
    int same = skip_same(res, sr->eff, &pc, label, be, e);
    if (same) { // the same work as an earlier run: not run again
        config_free(&pc);
        if (same > 0 && sr->live)
            show_row(sr);
        return same < 0 ? -1 : 0;
    }
    if (sweep_dataset(&sr->data, &pc, e)) {
        config_free(&pc);
        return stop_requested() ? 1 : -2; // interrupted, or bad data
    }
    if (sr->n > 1 && isatty(STDERR_FILENO) && !sr->quiet)
        fprintf(stderr, "dpbench: point %ld/%ld: %s\n", p + 1, sr->n, label);
    progress_point(p, pc.train.warmup_epochs + pc.train.epochs);
    FILE *trace = pc.report.trace ? (sr->out->row ? stdout : stderr) : NULL;
    struct run_result *run = &res->runs[res->n_runs];
    int rc = run_repeated(&pc, &sr->data.d, be, sr->cm, run, trace,
                          res->repeat > 1 ? res->repeat : 1, e);
    config_free(&pc);
    if (rc)
        return (rc = point_failed(res, run, label, rc, e)) ? rc : 1;
    snprintf(run->label, sizeof run->label, "%s", label);
    if (run->n_epochs == 0) { // stopped before a measured epoch: nothing to report
        run_result_free(run);
        return 1;
    }
    res->n_runs++;
    if (sr->live) // each row as soon as its point finishes
        show_row(sr);
    return 0;
}

int sweep_run(const struct config *c, const struct backends *bes, struct comm *cm,
              struct results *res, const struct renderer *out, bool quiet, struct error *e)
{
    long n = sweep_points(c);
    struct sweep_run sr = {.cfg = c, .bes = bes, .cm = cm, .res = res, .out = out,
                           .quiet = quiet, .n = n, .live = out->row && n > 1};
    res->runs = calloc((size_t)n, sizeof *res->runs);
    sr.eff = calloc((size_t)n, sizeof *sr.eff); // each run's effective settings
    if (!res->runs || !sr.eff) {
        free(sr.eff);
        return error_set(e, "out of memory");
    }
    res->label_width = label_width(c);
    int rc = 0;
    for (long p = 0; p < n && !stop_requested() && rc == 0; p++)
        rc = run_point(&sr, p, e);
    progress_done();
    for (long p = 0; p < n; p++)
        cJSON_Delete(sr.eff[p]);
    free(sr.eff);
    sweep_data_free(&sr.data);
    res->n_points = n;
    res->interrupted |= stop_requested();
    return rc > 0 ? 0 : rc;
}
