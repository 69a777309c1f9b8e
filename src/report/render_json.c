/* The JSON renderer: the result document docs/result.schema.json
 * describes (schema_version, the tool, the machine, the resolved config, one
 * object per run with its epochs, statistics and summary). */
#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "compare.h"
#include "report_columns.h"
#include "report_ddp.h"
#include "report_emulated.h"

#ifndef DPBENCH_GIT
#define DPBENCH_GIT "unknown"
#endif

static cJSON *number_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

static cJSON *pair_json(const double v[2])
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, number_or_null(v[0]));
    cJSON_AddItemToArray(a, number_or_null(v[1]));
    return a;
}

/* runs[i].stats.epoch_ms: exactly these keys (the interface) */
static cJSON *stats_json(const struct stats *st)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "mean", number_or_null(st->mean));
    cJSON_AddItemToObject(o, "stddev", number_or_null(st->stddev));
    cJSON_AddItemToObject(o, "median", number_or_null(st->median));
    cJSON_AddItemToObject(o, "min", number_or_null(st->min));
    cJSON_AddItemToObject(o, "max", number_or_null(st->max));
    cJSON_AddItemToObject(o, "p90", number_or_null(st->p90));
    cJSON_AddItemToObject(o, "p99", number_or_null(st->p99));
    cJSON_AddItemToObject(o, "ci95", pair_json(st->ci95));
    return o;
}

/* runs[i].epochs[k]: epoch_columns[] with a JSON key that the run shows */
static cJSON *epoch_json(const struct run_result *run, int k)
{
    cJSON *e = cJSON_CreateObject();
    for (int j = 0; j < n_epoch_columns; j++) {
        const struct report_column *c = &epoch_columns[j];
        if (!c->json_key || (c->json_if && !c->json_if(run)))
            continue;
        if (c->json_string) {
            cJSON_AddStringToObject(e, c->json_key, c->json_string);
            continue;
        }
        double v = c->value(run, k);
        if (v == 0 && (c->flags & COL_JSON_ZERO_NULL))
            v = NAN;
        cJSON_AddItemToObject(e, c->json_key, number_or_null(v));
    }
    return e;
}

/* blas_threads, blas_library, blas_tune: the CPU's BLAS choice (null without one) */
static void blas_json(cJSON *o, const struct run_result *run)
{
    if (run->blas.n_tried == 0) {
        cJSON_AddNullToObject(o, "blas_threads");
        return;
    }
    cJSON_AddNumberToObject(o, "blas_threads", run->blas.threads);
    cJSON_AddStringToObject(o, "blas_library", hostmm_lib_name(run->blas.lib));
    cJSON *tune = cJSON_AddArrayToObject(o, "blas_tune");
    for (int i = 0; i < run->blas.n_tried; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "threads", run->blas.tried[i]);
        cJSON_AddStringToObject(t, "library", hostmm_lib_name(run->blas.tried_lib[i]));
        cJSON_AddNumberToObject(t, "seconds_per_step", run->blas.seconds[i]);
        cJSON_AddItemToArray(tune, t);
    }
}

/* "floor": the least an epoch can take, null when not measured */
static void floor_json(cJSON *o, const struct run_result *run)
{
    if (!run->floor.measured) {
        cJSON_AddNullToObject(o, "floor");
        return;
    }
    const struct run_floor *fl = &run->floor;
    cJSON *fo = cJSON_AddObjectToObject(o, "floor");
    cJSON_AddNumberToObject(fo, "gather_seconds", fl->gather_s);
    cJSON_AddNumberToObject(fo, "loading_seconds", fl->loading_s);
    cJSON_AddItemToObject(fo, "compute_seconds", number_or_null(fl->compute_s));
    cJSON_AddItemToObject(fo, "copy_seconds", number_or_null(fl->copy_s));
    cJSON_AddNumberToObject(fo, "apart_seconds", fl->apart_s);
    cJSON_AddStringToObject(fo, "kind", fl->overlapped ? "overlapped" : "apart");
    cJSON_AddNumberToObject(fo, "seconds", fl->seconds);
    cJSON_AddItemToObject(fo, "ratio", number_or_null(run->sum.floor_ratio));
}

/* "splits": each batch's rows per replica (or rank), the used ones */
static cJSON *splits_json(const struct run_result *run)
{
    cJSON *splits = cJSON_CreateArray();
    for (long k = 0; k < run->n_split_batches; k++) {
        cJSON *a = cJSON_CreateArray();
        for (int i = 0; i < report_split_width(run); i++) {
            long rows = run->splits[k * report_split_width(run) + i];
            if (rows > 0)
                cJSON_AddItemToArray(a, cJSON_CreateNumber((double)rows));
        }
        cJSON_AddItemToArray(splits, a);
    }
    return splits;
}

/* "summary": the run's figures (report_summarize_run), the verdict, ddp's and
 * the emulated device's; the ddp part also adds world_size and ranks to o */
static void summary_json(cJSON *o, const struct results *r, int i)
{
    const struct run_result *run = &r->runs[i];
    const struct run_summary *s = &run->sum;
    cJSON *sum = cJSON_AddObjectToObject(o, "summary");
    for (int j = 0; j < n_point_columns; j++)
        if (point_columns[j].json_key)
            cJSON_AddItemToObject(sum, point_columns[j].json_key,
                                  number_or_null(point_columns[j].value(run, -1)));
    cJSON_AddItemToObject(sum, "speedup", number_or_null(s->speedup));
    cJSON_AddItemToObject(sum, "speedup_ci95", pair_json(s->speedup_ci95));
    cJSON_AddStringToObject(sum, "speedup_verdict", verdict_name(s->speedup_verdict));
    if (s->speedup_verdict == VERDICT_UNDECIDED)
        cJSON_AddItemToObject(sum, "speedup_rounds_needed",
                              s->speedup_rounds_needed > 0
                                  ? cJSON_CreateNumber(s->speedup_rounds_needed)
                                  : cJSON_CreateNull());
    cJSON_AddItemToObject(sum, "median_ci95_ms", pair_json(s->ci95_ms));
    report_ddp_json(o, sum, run);
    char verdict[512];
    report_verdict(r, i, verdict, sizeof verdict);
    cJSON_AddStringToObject(sum, "verdict", verdict);
    cJSON_AddItemToObject(sum, "au", number_or_null(s->au));
    report_emulated_json(sum, run);
}

/* "eval" (null when the run evaluated nothing) and "final_params" */
static void eval_params_json(cJSON *o, const struct run_result *run)
{
    if (run->eval.done) {
        cJSON *ev = cJSON_AddObjectToObject(o, "eval");
        cJSON_AddItemToObject(ev, "loss", number_or_null(run->eval.loss));
        cJSON_AddItemToObject(ev, "accuracy", number_or_null(run->eval.accuracy));
        cJSON_AddNumberToObject(ev, "samples", (double)run->eval.samples);
    } else {
        cJSON_AddNullToObject(o, "eval");
    }
    cJSON *p = cJSON_AddObjectToObject(o, "final_params");
    int O = (int)run->cfg.model.out_features, F = (int)run->cfg.dataset.features;
    if (run->w && (long)O * F <= 4096) { // small models only: the file stays readable
        cJSON_AddItemToObject(p, "weight", cJSON_CreateFloatArray(run->w, O * F));
        cJSON_AddItemToObject(p, "bias", cJSON_CreateFloatArray(run->b, O));
    }
}

/* A load record: runs[i].load and runs[i].rounds[k].load */
static cJSON *load_json(const struct load *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seconds", l->seconds);
    cJSON_AddItemToObject(o, "others_cpu", number_or_null(l->others_cpu));
    cJSON_AddItemToObject(o, "steal", number_or_null(l->steal));
    cJSON_AddItemToObject(o, "loadavg_start", number_or_null(l->loadavg_start));
    cJSON_AddItemToObject(o, "loadavg_end", number_or_null(l->loadavg_end));
    cJSON_AddItemToObject(o, "governor", l->governor[0] ? cJSON_CreateString(l->governor)
                                                        : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "mhz_min", number_or_null(l->mhz_min));
    cJSON_AddItemToObject(o, "mhz_max", number_or_null(l->mhz_max));
    return o;
}

/* runs[i].rounds: where each of the point's rounds is among its epochs */
static cJSON *rounds_json(const struct run_result *run)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < run->n_rounds; k++) {
        const struct run_round *rd = &run->rounds[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "round", rd->round);
        cJSON_AddNumberToObject(o, "position", rd->position);
        cJSON_AddNumberToObject(o, "first_epoch", rd->first_epoch + 1);
        cJSON_AddNumberToObject(o, "epochs", rd->n_epochs);
        cJSON_AddItemToObject(o, "median_ms", number_or_null(1e3 * rd->median_s));
        cJSON_AddItemToObject(o, "load", load_json(&rd->load));
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

/* runs[i]: the point, its config, and (unless it is another point's run) what it measured */
static cJSON *run_json(const struct results *r, int i)
{
    const struct run_result *run = &r->runs[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "point", run->label);
    cJSON_AddItemToObject(o, "overrides", config_overrides_json(&run->cfg));
    struct config plain = run->cfg;
    plain.n_sweep = 0; // the point's own config, without the sweep it came from
    cJSON_AddItemToObject(o, "config", config_to_json(&plain));
    cJSON_AddStringToObject(o, "backend", run->backend);
    if (run->same) { // no timings of its own: they are run same_as's
        cJSON_AddNumberToObject(o, "same_as", run->same_as);
        if (run->notes[0])
            cJSON_AddStringToObject(o, "notes", run->notes);
        return o;
    }
    cJSON_AddStringToObject(o, "loss", run->loss ? run->loss : "mse");
    cJSON_AddBoolToObject(o, "failed", run->failed);
    cJSON_AddNumberToObject(o, "replicas", run->replicas);
    cJSON_AddBoolToObject(o, "shared_devices", run->shared_devices);
    cJSON_AddNumberToObject(o, "batches_per_epoch", (double)run->n_batches);
    if (run->notes[0])
        cJSON_AddStringToObject(o, "notes", run->notes);
    blas_json(o, run);
    floor_json(o, run);
    if (run->stopped[0])
        cJSON_AddStringToObject(o, "stopped", run->stopped);
    cJSON_AddItemToObject(o, "splits", splits_json(run));
    cJSON *eps = cJSON_AddArrayToObject(o, "epochs");
    for (int k = 0; k < run->n_epochs; k++)
        cJSON_AddItemToArray(eps, epoch_json(run, k));
    cJSON *st = cJSON_AddObjectToObject(o, "stats");
    cJSON_AddItemToObject(st, "epoch_ms", stats_json(&run->sum.epoch_ms));
    if (run->sum.round_ms.n > 1)
        cJSON_AddItemToObject(st, "round_ms", stats_json(&run->sum.round_ms));
    cJSON_AddItemToObject(o, "rounds", rounds_json(run));
    cJSON_AddItemToObject(o, "load", run->load.seconds > 0 ? load_json(&run->load)
                                                           : cJSON_CreateNull());
    summary_json(o, r, i);
    eval_params_json(o, run);
    return o;
}

/* "rounds": how many, why they ended, the settings that decided it, and each
 * round's order (run indices, in the order they ran) */
static cJSON *rounds_plan_json(const struct results *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", r->rounds);
    cJSON_AddStringToObject(o, "end", r->rounds_end ? r->rounds_end : "fixed");
    cJSON_AddNumberToObject(o, "threshold", r->cfg.bench.threshold);
    cJSON_AddNumberToObject(o, "precision", r->cfg.bench.precision);
    cJSON_AddNumberToObject(o, "budget_seconds",
                            r->rounds_budget_s > 0 ? r->rounds_budget_s : r->cfg.bench.budget_s);
    cJSON_AddNumberToObject(o, "looks", r->looks > 0 ? r->looks : 1);
    cJSON_AddNumberToObject(o, "alpha", r->alpha > 0 ? r->alpha : 0.05);
    cJSON *order = cJSON_AddArrayToObject(o, "order");
    for (int rd = 0; rd <= r->rounds; rd++) {
        cJSON *row = cJSON_CreateArray();
        for (int pos = 0; pos < r->n_runs; pos++) // positions in order
            for (int i = 0; i < r->n_runs; i++)
                for (int k = 0; k < r->runs[i].n_rounds; k++)
                    if (r->runs[i].rounds[k].round == rd && r->runs[i].rounds[k].position == pos)
                        cJSON_AddItemToArray(row, cJSON_CreateNumber(i));
        if (cJSON_GetArraySize(row) > 0)
            cJSON_AddItemToArray(order, row);
        else
            cJSON_Delete(row);
    }
    return o;
}

static void warnings_json(cJSON *root, const struct results *r)
{
    cJSON *warn = cJSON_AddArrayToObject(root, "warnings");
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        char w[sizeof run->label + sizeof run->sum.warning + 8];
        if (run_warning(run, w, sizeof w))
            cJSON_AddItemToArray(warn, cJSON_CreateString(w));
        if (run->sum.load_warning[0]) {
            snprintf(w, sizeof w, "%s%s%s", run->label, run->label[0] ? ": " : "",
                     run->sum.load_warning);
            cJSON_AddItemToArray(warn, cJSON_CreateString(w));
        }
    }
    char w[512];
    if (report_load_apart(r, w, sizeof w))
        cJSON_AddItemToArray(warn, cJSON_CreateString(w));
}

/* A ratio of B to A with its interval, verdict and the rounds it had */
static cJSON *ratio_json(const struct ratio *q)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "ratio", number_or_null(q->ratio));
    cJSON_AddItemToObject(o, "ci95", pair_json(q->ci95));
    cJSON_AddStringToObject(o, "verdict", verdict_name(q->verdict));
    cJSON_AddNumberToObject(o, "rounds", q->units);
    cJSON_AddItemToObject(o, "rounds_needed", q->units_needed > 0 ? cJSON_CreateNumber(q->units_needed)
                                                                  : cJSON_CreateNull());
    return o;
}

/* "conclusion": the fastest point and each swept knob's effect from it;
 * null without a sweep */
static cJSON *conclusion_json(const struct results *r)
{
    const struct conclusion *c = &r->conclusion;
    if (c->fastest < 0)
        return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "fastest", r->runs[c->fastest].label);
    cJSON_AddNumberToObject(o, "fastest_run", c->fastest);
    cJSON_AddItemToObject(o, "median_ms", number_or_null(1e3 * r->runs[c->fastest].sum.median_s));
    cJSON *knobs = cJSON_AddArrayToObject(o, "knobs");
    for (int s = 0; s < c->n_knobs; s++) {
        const struct knob_effect *k = &c->knobs[s];
        cJSON *e = k->run >= 0 && !k->same_work ? ratio_json(&k->vs) : cJSON_CreateObject();
        cJSON_AddStringToObject(e, "key", k->key);
        cJSON_AddItemToObject(e, "point", k->run >= 0 ? cJSON_CreateString(r->runs[k->run].label)
                                                      : cJSON_CreateNull());
        cJSON_AddBoolToObject(e, "same_work", k->same_work);
        if (k->same_work || k->run < 0)
            cJSON_AddStringToObject(e, "verdict", k->same_work ? "same" : "not measured");
        cJSON_AddItemToArray(knobs, e);
    }
    return o;
}

/* ---- dpbench --tune --------------------------------------------------------- */

static cJSON *knobs_json(const struct pipeline_knobs *k)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "num_workers", (double)k->num_workers);
    cJSON_AddNumberToObject(o, "prefetch_factor", (double)k->prefetch_factor);
    cJSON_AddBoolToObject(o, "persistent_workers", k->persistent_workers);
    cJSON_AddBoolToObject(o, "pin_memory", k->pin_memory);
    cJSON_AddBoolToObject(o, "async_copy", k->async_copy);
    cJSON_AddNumberToObject(o, "copy_depth", (double)k->copy_depth);
    return o;
}

/* tune.trials[i]: run i's settings and figures (the result's, run i being
 * the trial), the model's prediction, and what the search concluded */
static cJSON *tune_trial_json(const struct results *r, int i)
{
    const struct run_result *run = &r->runs[i];
    const struct run_summary *s = &run->sum;
    const struct tune_trial_info *t = &r->tune->trials[i];
    struct pipeline_knobs k = pipeline_knobs_of(&run->cfg);
    cJSON *o = cJSON_CreateObject(), *st = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "settings", knobs_json(&k));
    cJSON_AddNumberToObject(st, "epochs", run->n_epochs);
    cJSON_AddNumberToObject(st, "search_epochs", run->n_epochs);
    cJSON_AddItemToObject(st, "epoch_ms", stats_json(&s->epoch_ms));
    cJSON_AddItemToObject(st, "au", number_or_null(s->au));
    cJSON_AddItemToObject(st, "wait_share", number_or_null(s->wait_share));
    cJSON_AddItemToObject(st, "copy_share", number_or_null(s->copy_share));
    cJSON_AddItemToObject(st, "compute_share", number_or_null(s->compute_share));
    cJSON_AddItemToObject(o, "stats", st);
    cJSON_AddItemToObject(o, "bound", run->n_epochs ? cJSON_CreateString(bound_name(
                                          report_run_bound(run))) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "decision", t->decision);
    cJSON_AddItemToObject(o, "predicted_ms", number_or_null(1e3 * t->predicted_s));
    cJSON_AddItemToObject(o, "predicted_au", number_or_null(t->predicted_au));
    cJSON_AddNumberToObject(o, "rounds", t->rounds);
    cJSON_AddItemToObject(o, "median_ms", number_or_null(1e3 * s->median_s));
    cJSON_AddItemToObject(o, "median_ci95_ms", pair_json(s->ci95_ms));
    struct ratio q;
    report_pair(r, 0, i, &q);
    if (i == 0 && run->n_epochs) // the config as given against itself, as the table has it
        q = (struct ratio){.ratio = 1, .ci95 = {1, 1}, .verdict = VERDICT_SAME, .units = q.units,
                           .units_needed = -1};
    cJSON_AddItemToObject(o, "vs_given", ratio_json(&q));
    return o;
}

/* tune.profile: the stage costs per batch the model took, ms */
static cJSON *tune_profile_json(const struct tune_result *t)
{
    const struct pipeline_costs *c = &t->costs;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "batches", (double)t->batches);
    cJSON_AddNumberToObject(o, "load_ms", 1e3 * c->load);
    cJSON_AddNumberToObject(o, "handoff_ms", 1e3 * c->handoff);
    cJSON_AddNumberToObject(o, "contention_ms", 1e3 * c->contend);
    cJSON_AddNumberToObject(o, "loop_ms", 1e3 * c->loop);
    cJSON_AddNumberToObject(o, "host_ms", 1e3 * c->host);
    cJSON_AddNumberToObject(o, "compute_ms", 1e3 * c->compute);
    cJSON_AddNumberToObject(o, "copy_pageable_ms", 1e3 * c->copy[0]);
    cJSON_AddNumberToObject(o, "copy_pinned_ms", 1e3 * c->copy[1]);
    cJSON_AddNumberToObject(o, "cores", c->cores);
    cJSON *assumed = cJSON_AddArrayToObject(o, "assumed"); // not measured, taken as above
    for (int i = 0; i < TUNE_N_COSTS; i++)
        if (t->assumed >> i & 1)
            cJSON_AddItemToArray(assumed, cJSON_CreateString(tune_cost_names[i]));
    return o;
}

/* The recommendation's figures: the run's headline median, the gain (the
 * speed-up: 1 / the paired ratio), where a rerun lands */
static void tune_best_json(cJSON *o, const struct results *r)
{
    const struct tune_result *t = r->tune;
    const struct run_result *b = t->best >= 0 ? &r->runs[t->best] : NULL;
    struct pipeline_knobs k;
    double ms[2] = {1e3 * t->rerun_s[0], 1e3 * t->rerun_s[1]};
    double gain[2] = {1 / t->gain.ci95[1], 1 / t->gain.ci95[0]};
    if (b)
        k = pipeline_knobs_of(&b->cfg);
    cJSON_AddItemToObject(o, "best", b ? knobs_json(&k) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "best_trial", b ? cJSON_CreateNumber(t->best) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "best_epoch_ms", b ? number_or_null(1e3 * b->sum.median_s)
                                                : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "best_epoch_ci95", b ? pair_json(b->sum.ci95_ms) : cJSON_CreateNull());
    cJSON_AddBoolToObject(o, "confirmed", b && t->trials[t->best].rounds > 0);
    cJSON_AddItemToObject(o, "rerun_ms", b && isfinite(ms[0]) ? pair_json(ms) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "gain_ratio",
                          b ? number_or_null(1 / t->gain.ratio) : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "gain", b ? pair_json(gain) : cJSON_CreateNull());
}

static cJSON *tune_json(const struct results *r)
{
    static const char *const outcomes[] = {"change", "target", "keep_fastest", "keep_noisy",
                                           "keep_budget", "no_target", "too_short", "stopped"};
    const struct tune_result *t = r->tune;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "goal", t->target_au > 0 ? "target_au" : "fastest");
    cJSON_AddNumberToObject(o, "target_au", t->target_au);
    cJSON_AddNumberToObject(o, "max_workers", (double)t->max_workers);
    cJSON_AddNumberToObject(o, "budget_s", t->budget_s);
    cJSON_AddStringToObject(o, "outcome", outcomes[t->outcome]);
    tune_best_json(o, r);
    cJSON_AddStringToObject(o, "statement", t->statement);
    cJSON_AddNumberToObject(o, "seconds", t->seconds);
    cJSON_AddItemToObject(o, "profile", t->batches ? tune_profile_json(t) : cJSON_CreateNull());
    cJSON *trials = cJSON_AddArrayToObject(o, "trials");
    for (int i = 0; i < r->n_runs; i++)
        cJSON_AddItemToArray(trials, tune_trial_json(r, i));
    cJSON *space = cJSON_AddArrayToObject(o, "predicted");
    for (int j = 0; j < t->n_space; j++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToObject(x, "settings", knobs_json(&t->space[j].k));
        cJSON_AddItemToObject(x, "predicted_ms", number_or_null(1e3 * t->space[j].predicted_s));
        cJSON_AddItemToObject(x, "predicted_au", number_or_null(t->space[j].predicted_au));
        cJSON_AddItemToObject(x, "trial", t->space[j].trial >= 0 ? cJSON_CreateNumber(t->space[j].trial)
                                                                 : cJSON_CreateNull());
        cJSON_AddItemToArray(space, x);
    }
    return o;
}

char *report_json(const struct results *r)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schema_version", REPORT_SCHEMA_VERSION);
    cJSON *tool = cJSON_AddObjectToObject(root, "dpbench");
    cJSON_AddStringToObject(tool, "version", DPBENCH_VERSION);
    cJSON_AddStringToObject(tool, "git_commit", DPBENCH_GIT);
    cJSON_AddStringToObject(tool, "backends", backend_list());
    cJSON_AddStringToObject(root, "date", r->date);
    cJSON *m = cJSON_AddObjectToObject(root, "machine");
    cJSON_AddStringToObject(m, "arch", r->machine.arch);
    cJSON_AddStringToObject(m, "cpu", r->machine.cpu);
    cJSON_AddItemToObject(m, "cpu_mhz", r->machine.cpu_mhz > 0 ? cJSON_CreateNumber(r->machine.cpu_mhz)
                                                                : cJSON_CreateNull());
    cJSON_AddNumberToObject(m, "cores", (double)r->machine.cores);
    cJSON_AddNumberToObject(m, "threads", (double)r->machine.threads);
    cJSON_AddNumberToObject(m, "memory_bytes", r->machine.mem_bytes);
    cJSON_AddStringToObject(m, "kernel", r->machine.kernel);
    cJSON_AddStringToObject(m, "devices", r->machine.devices);
    cJSON_AddStringToObject(m, "compiler", r->machine.compiler);
    cJSON_AddStringToObject(m, "blas", r->machine.blas);
    cJSON_AddStringToObject(m, "openblas_core", r->machine.openblas_core);
    cJSON_AddItemToObject(m, "libxsmm", r->machine.xsmm[0] ? cJSON_CreateString(r->machine.xsmm)
                                                            : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "config", config_to_json(&r->cfg));
    if (r->config_note[0])
        cJSON_AddStringToObject(root, "config_differs", r->config_note);
    cJSON_AddBoolToObject(root, "interrupted", r->interrupted);
    cJSON_AddNumberToObject(root, "peak_rss_bytes", r->peak_rss_bytes);
    cJSON_AddNumberToObject(root, "host_memory_estimate_bytes", r->estimate_bytes);
    cJSON_AddNumberToObject(root, "repeat", r->rounds > 0 ? r->rounds : 1);
    cJSON_AddItemToObject(root, "rounds", rounds_plan_json(r));
    cJSON_AddStringToObject(root, "command_line", r->command);
    warnings_json(root, r);
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (int i = 0; i < r->n_runs; i++)
        cJSON_AddItemToArray(runs, run_json(r, i));
    cJSON_AddItemToObject(root, "conclusion", conclusion_json(r));
    if (r->tune)
        cJSON_AddItemToObject(root, "tune", tune_json(r));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}


int report_json_print(FILE *f, const struct results *r)
{
    char *json = report_json(r);
    if (!json)
        return -1;
    fputs(json, f);
    fputc('\n', f);
    free(json);
    return 0;
}

/* ---- dpbench compare ------------------------------------------------------ */

static cJSON *compare_point_json(const struct compare_file *f, const struct compare_point *p,
                                 enum compare_unit unit)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", f->path);
    cJSON_AddNumberToObject(o, "run", p->run);
    cJSON_AddStringToObject(o, "point", p->label);
    cJSON_AddNumberToObject(o, "epochs", p->n);
    cJSON_AddNumberToObject(o, "rounds", p->n_rounds);
    cJSON_AddItemToObject(o, "median_ms", number_or_null(compare_median(p, unit)));
    cJSON_AddItemToObject(o, "others_cpu", number_or_null(p->others_cpu));
    cJSON_AddItemToObject(o, "blas", p->blas[0] ? cJSON_CreateString(p->blas) : cJSON_CreateNull());
    return o;
}

static cJSON *compare_unmatched_json(const struct compare_file *f, const struct compare_file *other)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < f->n; i++) {
        char why[320];
        if (f->pts[i].paired || (f->pts[i].n == 0 && f->pts[i].run < 0))
            continue;
        if (!f->pts[i].workload)
            continue; // a run of the document not read (compare -c reads two)
        compare_unmatched_why(&f->pts[i], other, why, sizeof why);
        cJSON *o = compare_point_json(f, &f->pts[i], COMPARE_EPOCHS);
        cJSON_AddStringToObject(o, "why", why);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *compare_pair_json(const struct compare_result *c, const struct compare_pair *p)
{
    char v[96];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "a", compare_point_json(&c->a, p->a, p->unit));
    cJSON_AddItemToObject(o, "b", compare_point_json(&c->b, p->b, p->unit));
    cJSON_AddStringToObject(o, "unit", compare_unit_name(p->unit));
    cJSON_AddItemToObject(o, "ratio", number_or_null(p->q.ratio));
    cJSON_AddItemToObject(o, "ci95", pair_json(p->q.ci95));
    cJSON_AddItemToObject(o, "p_value", number_or_null(p->p_value));
    cJSON_AddStringToObject(o, "verdict", verdict_name(p->q.verdict));
    cJSON_AddStringToObject(o, "verdict_text", compare_verdict_text(p, v, sizeof v));
    cJSON_AddNumberToObject(o, "units", p->q.units);
    cJSON_AddItemToObject(o, "units_needed", p->q.units_needed > 0
                                                 ? cJSON_CreateNumber(p->q.units_needed)
                                                 : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "held_back", p->why[0] ? cJSON_CreateString(p->why) : cJSON_CreateNull());
    cJSON *d = cJSON_AddArrayToObject(o, "settings_differ");
    cJSON *w = cJSON_AddArrayToObject(o, "workloads_differ");
    for (int k = 0; k < p->n_diffs; k++)
        cJSON_AddItemToArray(k < p->n_workload_diffs ? w : d, cJSON_CreateString(p->diffs[k]));
    cJSON_AddItemToObject(o, "blas_differ", p->blas[0] ? cJSON_CreateString(p->blas)
                                                      : cJSON_CreateNull());
    return o;
}

int report_compare_json(FILE *f, const struct compare_result *c)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "test", "B / A on the best unit both files have (interleaved "
                                          "rounds, rounds of separate runs, or one run's "
                                          "epochs): faster / slower when the 95% interval lies "
                                          "wholly beyond 1 -+ threshold, same when inside");
    cJSON_AddNumberToObject(root, "threshold", c->threshold);
    cJSON_AddBoolToObject(root, "interleaved", c->interleaved);
    cJSON *notes = cJSON_AddArrayToObject(root, "warnings");
    for (int i = 0; i < c->n_notes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(c->notes[i]));
    cJSON *arr = cJSON_AddArrayToObject(root, "pairs");
    for (int i = 0; i < c->n_pairs; i++)
        cJSON_AddItemToArray(arr, compare_pair_json(c, &c->pairs[i]));
    cJSON *un = cJSON_AddObjectToObject(root, "unmatched");
    cJSON_AddItemToObject(un, "a", compare_unmatched_json(&c->a, &c->b));
    cJSON_AddItemToObject(un, "b", compare_unmatched_json(&c->b, &c->a));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return -1;
    fputs(text, f);
    fputc('\n', f);
    free(text);
    return 0;
}
