/* The text renderers of the commands beside a run: dpbench compare (its
 * pairs, verdicts and warnings) and --allreduce-bandwidth (nccl-tests' table). */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "allreduce_bw.h"
#include "compare.h"

/* ---- dpbench compare ------------------------------------------------------ */

void report_compare_unmatched(FILE *f, const struct compare_result *c, const char *lead)
{
    for (int s = 0; s < 2; s++) {
        const struct compare_file *file = s ? &c->b : &c->a, *other = s ? &c->a : &c->b;
        for (int i = 0; i < file->n; i++) {
            char why[320];
            if (file->pts[i].paired)
                continue;
            compare_unmatched_why(&file->pts[i], other, why, sizeof why);
            fprintf(f, "%sunmatched in %s: %s: %s\n", lead, s ? "B" : "A",
                    compare_point_name(&file->pts[i]), why);
        }
    }
}

void report_compare_pair_notes(FILE *f, const struct compare_pair *p, const char *lead)
{
    const char *name = compare_point_name(p->a);
    if (strcmp(name, compare_point_name(p->b)) != 0)
        fprintf(f, "%s%s: B's point is %s\n", lead, name, compare_point_name(p->b));
    for (int k = 0; k < p->n_diffs; k++)
        fprintf(f, "%s%s: %s differ: %s\n", lead, name,
                k < p->n_workload_diffs ? "workloads" : "settings", p->diffs[k]);
    if (p->blas[0])
        fprintf(f, "%s%s: computed with different BLAS choices: %s\n", lead, name, p->blas);
    if (p->why[0])
        fprintf(f, "%s%s: undecided: %s\n", lead, name, p->why);
    else if (p->q.verdict == VERDICT_UNDECIDED && p->q.units_needed > 0)
        fprintf(f, "%s%s: undecided: about %d %s would decide it at this spread\n", lead, name,
                p->q.units_needed, p->unit == COMPARE_EPOCHS ? "epochs"
                                   : p->unit == COMPARE_RUNS ? "rounds a side" : "rounds");
    else if (p->q.verdict == VERDICT_UNDECIDED && isnan(p->q.ci95[0]))
        fprintf(f, "%s%s: undecided: too few %s for a 95%% interval\n", lead, name,
                p->unit == COMPARE_EPOCHS ? "epochs" : "rounds");
}

/* A pair's row and the lines about it. */
static void compare_pair_text(FILE *f, int w, const struct compare_pair *p)
{
    char ci[48] = "-", pv[16] = "-", v[96];
    if (!isnan(p->q.ci95[0]))
        snprintf(ci, sizeof ci, "%.3f-%.3f", p->q.ci95[0], p->q.ci95[1]);
    if (!isnan(p->p_value))
        snprintf(pv, sizeof pv, "%.3g", p->p_value);
    fprintf(f, "%-*s %10.4f %10.4f %8.3f %13s %8s %6d  %s\n", w, compare_point_name(p->a),
            compare_median(p->a, p->unit), compare_median(p->b, p->unit), p->q.ratio, ci, pv,
            p->q.units, compare_verdict_text(p, v, sizeof v));
    report_compare_pair_notes(f, p, "#   ");
}

/* How the pairs were decided, in one line. */
static void compare_method_text(FILE *f, const struct compare_result *c)
{
    bool unit[3] = {false, false, false};
    for (int i = 0; i < c->n_pairs; i++)
        unit[c->pairs[i].unit] = true;
    fprintf(f, "# ratio = B / A (below 1: B takes less time); noise threshold %.3g%%: faster / "
               "slower only when the 95%% interval lies wholly beyond 1 -+ it, same when wholly "
               "inside\n", 100 * c->threshold);
    if (unit[COMPARE_INTERLEAVED])
        fprintf(f, "# unit: interleaved rounds: A and B ran side by side in each round, in a "
                   "random order; the Hodges-Lehmann estimate of the per-round ratios, the "
                   "Wilcoxon signed-rank interval\n");
    if (unit[COMPARE_RUNS])
        fprintf(f, "# unit: rounds of separate runs: each round's median epoch; the "
                   "Hodges-Lehmann ratio, Moses' interval; not interleaved, so drift between "
                   "the runs is in it\n");
    if (unit[COMPARE_EPOCHS])
        fprintf(f, "# unit: epochs of one run (a side has no rounds): the ratio of medians, a "
                   "bootstrap interval and the Mann-Whitney test cover noise within one run "
                   "only, never drift between runs\n");
}

int report_compare_text(FILE *f, const struct compare_result *c)
{
    fprintf(f, "# A: %s  %s\n# B: %s  %s\n", c->a.tool, c->a.path, c->b.tool, c->b.path);
    compare_method_text(f, c);
    for (int i = 0; i < c->n_notes; i++)
        fprintf(f, "# warning: %s\n", c->notes[i]);
    int w = 5;
    for (int i = 0; i < c->n_pairs; i++)
        w = (int)fmax(w, (double)strlen(compare_point_name(c->pairs[i].a)));
    fprintf(f, "%-*s %10s %10s %8s %13s %8s %6s  %s\n", w, "point", "A median", "B median",
            "ratio", "95% CI", "p", "units", "B vs A");
    fprintf(f, "%-*s %10s %10s %8s %13s %8s %6s\n", w, "", "ms", "ms", "B/A", "", "", "");
    for (int i = 0; i < c->n_pairs; i++)
        compare_pair_text(f, w, &c->pairs[i]);
    report_compare_unmatched(f, c, "# ");
    return 0;
}

/* ---- --allreduce-bandwidth ------------------------------------------------ */

int report_allreduce_text(FILE *f, const struct allreduce_table *t)
{
    fprintf(f, "# dpbench %s allreduce-bandwidth: engine %s, %d rank%s, float sum in place, "
               "%s\n",
            DPBENCH_VERSION, t->engine, t->world, t->world == 1 ? "" : "s", t->memory);
    fprintf(f, "# time: mean over the ranks of the mean call over `iters` calls after 5 "
               "warm-up calls; #wrong: elements off the expected sum, all ranks\n");
    fprintf(f, "#%12s %12s %6s %6s %7s %11s %10s %10s %7s\n", "size", "count", "type", "redop",
            "iters", "time", "algbw", "busbw", "#wrong");
    fprintf(f, "#%12s %12s %6s %6s %7s %11s %10s %10s %7s\n", "(B)", "(elements)", "", "", "",
            "(us)", "(GB/s)", "(GB/s)", "");
    for (int i = 0; i < t->n; i++) {
        const struct allreduce_row *r = &t->rows[i];
        fprintf(f, " %12zu %12zu %6s %6s %7ld %11.2f %10.3f %10.3f %7.0f\n", r->bytes, r->count,
                "float", "sum", r->iters, 1e6 * r->seconds, r->algbw, r->busbw, r->wrong);
    }
    if (t->interrupted)
        fprintf(f, "# interrupted: a signal stopped the sweep after %d size%s\n", t->n,
                t->n == 1 ? "" : "s");
    if (t->world == 1) // busbw counts the bytes between ranks: none here
        fprintf(f, "# one rank: busbw is 0 by its definition; the times are the engine's own "
                   "call\n");
    else if (t->n)
        fprintf(f, "# best busbw %.3f GB/s at %zu B\n", t->best_busbw, t->best_bytes);
    return 0;
}
