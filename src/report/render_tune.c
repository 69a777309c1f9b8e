/* --tune's recommendation in the trial table's numbers, for the renderers
 * that write prose (text, Markdown): one wording, each with its own marks. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *const tune_cost_names[TUNE_N_COSTS] = {"loop_ms", "handoff_ms", "contention_ms",
                                                   "copy_pageable_ms", "copy_pinned_ms"};

/* PyTorch's DataLoader line (prefetch_factor, persistent_workers: with workers only) */
static void dataloader_line(FILE *f, const struct config *c, const char *sub)
{
    bool w = c->loader.num_workers > 0, pin = c->loader.pin_memory;
    fprintf(f, "%sPyTorch: DataLoader(..., num_workers=%ld%s%.0ld%s%s, pin_memory=%s)\n", sub,
            c->loader.num_workers, w ? ", prefetch_factor=" : "", w ? c->loader.prefetch_factor : 0,
            w ? ", persistent_workers=" : "", w ? c->loader.persistent_workers ? "True" : "False"
            : "", pin ? "True" : "False");
    if (c->loader.async_copy)
        fprintf(f, "%sand %s, %ld batches ahead\n", sub, pin ? "batch.to(device, non_blocking=True)"
                : "a thread copying each batch ahead of the step (non_blocking=True alone "
                "overlaps no copy from pageable memory)", c->loader.copy_depth);
}

const char *report_au_text(double au, double target, char v[32])
{
    int d = 4;
    do
        snprintf(v, 32, "%.*g", d, au);
    while (d++ < 17 && (strtod(v, NULL) >= target) != (au >= target));
    return v;
}

void report_tune_cells(const struct results *r, int i, struct tune_cells *c)
{
    const struct run_result *run = &r->runs[i];
    double predicted = r->tune->trials[i].predicted_s;
    bool none = run->n_epochs == 0;
    struct ratio q;
    report_pair(r, 0, i, &q);
    snprintf(c->model, sizeof c->model, isfinite(predicted) ? "%.3f" : "-", 1e3 * predicted);
    snprintf(c->median, sizeof c->median, none ? "-" : "%.3f", 1e3 * run->sum.median_s);
    snprintf(c->ci, sizeof c->ci, none ? "-" : "[%.3f, %.3f]%s", run->sum.ci95_ms[0],
             run->sum.ci95_ms[1], run->sum.ci_exact ? "" : "*");
    snprintf(c->vs, sizeof c->vs, !i && !none ? "1" : !q.units ? "-" : isfinite(q.ci95[0])
             ? "%.2f [%.2f, %.2f]" : "%.2f", q.ratio, q.ci95[0], q.ci95[1]);
    snprintf(c->au, sizeof c->au, none ? "-" : "%.2f", run->sum.au);
    c->bound = none ? "-" : bound_name(report_run_bound(run));
    c->minmax = !none && !run->sum.ci_exact;
}

void report_tune_choice(FILE *f, const struct results *r, const char *head, const char *sub)
{
    const struct tune_result *t = r->tune;
    const struct ratio *g = &t->gain;
    if (t->best < 0)
        return (void)fprintf(f, "%sno recommendation: %s\n", head, t->statement);
    const struct run_result *b = &r->runs[t->best];
    if (t->best == 0)
        fprintf(f, "%srecommendation: keep the config as given (%s)\n", head, t->statement);
    else if (isfinite(g->ci95[0]) && isfinite(g->ci95[1]))
        fprintf(f, "%srecommendation (trial %d): %s\n%s%.2fx the speed of the config as given, "
                "95%% interval [%.2f, %.2f]: its epoch %.2fx the given's [%.2f, %.2f], paired "
                "over %d round%s\n", head, t->best, b->label, sub, 1 / g->ratio, 1 / g->ci95[1],
                1 / g->ci95[0], g->ratio, g->ci95[0], g->ci95[1], g->units, g->units == 1 ? "" : "s");
    else // target AU: a choice by its AU, where the race may have had too few rounds
        fprintf(f, "%srecommendation (trial %d): %s\n%s%.2fx the speed of the config as given "
                "(too few rounds for an interval): its epoch %.2fx the given's, paired over %d "
                "round%s\n", head, t->best, b->label, sub, 1 / g->ratio, g->ratio, g->units,
                g->units == 1 ? "" : "s");
    char in[40] = "of the profile"; // where nothing was raced
    if (b->n_rounds)
        snprintf(in, sizeof in, "in %d round%s", b->n_rounds, b->n_rounds == 1 ? "" : "s");
    char au[32];
    fprintf(f, "%sepoch %.3f ms [%.3f, %.3f%s] over %d epochs %s; AU %s%s\n", sub,
            1e3 * b->sum.median_s, b->sum.ci95_ms[0], b->sum.ci95_ms[1],
            b->sum.ci_exact ? "" : ", min-max: too few for 95%", b->n_epochs, in,
            t->target_au > 0 ? report_au_text(b->sum.au, t->target_au, au)
                             : (snprintf(au, sizeof au, "%.2f", b->sum.au), au),
            t->outcome == TUNE_TARGET ? ", which reaches the target" : "");
    if (isfinite(t->rerun_s[0]))
        fprintf(f, "%sa rerun with these settings: its median epoch in [%.3f, %.3f] ms (95%% "
                "prediction from the race's %d rounds, on the machine as it ran them: a speed "
                "that drifts between runs, or a longer run's later epochs, move it)\n", sub,
                1e3 * t->rerun_s[0], 1e3 * t->rerun_s[1], b->n_rounds);
    dataloader_line(f, &b->cfg, sub);
}
