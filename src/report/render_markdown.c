/* The Markdown renderer: a table of the points (one row for a single run)
 * to paste into an issue or a pull request, as hyperfine's
 * --export-markdown gives; the machine and the build in a line above it. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"

#ifndef DPBENCH_GIT
#define DPBENCH_GIT "unknown"
#endif

/* A figure, or "-" where it is missing. */
static void md_num(FILE *f, const char *fmt, double v)
{
    if (isfinite(v))
        fprintf(f, fmt, v);
    else
        fputs(" - |", f);
}

/* A table cell's text: a '|' escaped, a line break a space (either would
 * end the cell or the row); then the cell's end. */
static void md_cell(FILE *f, const char *text)
{
    for (fputc(' ', f); *text; text++)
        fputs(*text == '|' ? "\\|" : *text == '\n' || *text == '\r' ? " " : (char[2]){*text, 0}, f);
    fputs(" |", f);
}

static void md_row(FILE *f, const struct results *r, int i)
{
    const struct run_result *run = &r->runs[i];
    char verdict[256];
    fputc('|', f);
    md_cell(f, run->label[0] ? run->label : "(base)");
    if (run->same) {
        fprintf(f, " = point %d | | | | | |\n", run->same_as);
        return;
    }
    const struct run_summary *s = &run->sum;
    md_num(f, " %.4f |", 1e3 * s->median_s);
    if (isfinite(s->ci95_ms[0]))
        fprintf(f, " %.4f-%.4f |", s->ci95_ms[0], s->ci95_ms[1]);
    else
        fputs(" - |", f);
    md_num(f, " %.0f |", s->samples_per_s);
    md_num(f, " %.6g |", s->final_loss);
    if (r->n_runs > 1 && i == 0)
        fputs(" 1.00x (first) |", f); // as the text table has it
    else if (r->n_runs > 1 && isfinite(s->speedup))
        fprintf(f, " %.3gx %s |", s->speedup, verdict_name(s->speedup_verdict));
    else
        fputs(" - |", f);
    report_verdict(r, i, verdict, sizeof verdict);
    fprintf(f, " %.*s |\n", (int)strcspn(verdict, ":"), verdict); // "input-bound"
}

/* --tune's trials: the text table's columns and cells */
static void md_tune(FILE *f, const struct results *r)
{
    bool minmax = false;
    fprintf(f, "| trial | settings | rounds | model (ms) | median epoch (ms) | 95%% CI (ms) | "
               "time / given's | AU | bound | decision |\n");
    fprintf(f, "|---:|:---|---:|---:|---:|---:|---:|---:|:---|:---|\n");
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        struct tune_cells c;
        report_tune_cells(r, i, &c);
        minmax |= c.minmax;
        fprintf(f, "| %d |", i);
        md_cell(f, run->label);
        fprintf(f, " %d | %s | %s | %s | %s | %s | %s |", r->tune->trials[i].rounds, c.model,
                c.median, c.ci, c.vs, c.au, c.bound);
        md_cell(f, r->tune->trials[i].decision);
        fputc('\n', f);
    }
    fprintf(f, "%s\n", minmax ? "\n\\*: min-max, too few epochs or rounds for a 95% interval\n" : "");
    report_tune_choice(f, r, "", "- ");
}

int report_markdown(FILE *f, const struct results *r)
{
    const struct machine *m = &r->machine;
    fprintf(f, "dpbench %s (%s), `%s`, %s; %s, %ld cores, %s, %s\n\n", DPBENCH_VERSION,
            DPBENCH_GIT, r->cfg.name, r->date, m->cpu, m->cores, m->kernel, m->blas);
    if (r->tune)
        return md_tune(f, r), 0;
    fprintf(f, "| point | median epoch (ms) | 95%% CI (ms) | samples/s | loss | vs first | "
               "bound |\n");
    fprintf(f, "|:---|---:|---:|---:|---:|---:|:---|\n");
    for (int i = 0; i < r->n_runs; i++)
        md_row(f, r, i);
    return 0;
}

int report_compare_markdown(FILE *f, const struct compare_result *c)
{
    fprintf(f, "A: %s `%s`; B: %s `%s`; noise threshold %.3g%%\n\n", c->a.tool, c->a.path,
            c->b.tool, c->b.path, 100 * c->threshold);
    for (int i = 0; i < c->n_notes; i++)
        fprintf(f, "- %s\n", c->notes[i]);
    fprintf(f, "%s| point | A median (ms) | B median (ms) | B/A | 95%% CI | unit | B vs A |\n",
            c->n_notes ? "\n" : "");
    fprintf(f, "|:---|---:|---:|---:|---:|:---|:---|\n");
    for (int i = 0; i < c->n_pairs; i++) {
        const struct compare_pair *p = &c->pairs[i];
        char v[96];
        fputc('|', f);
        md_cell(f, compare_point_name(p->a));
        fprintf(f, " %.4f | %.4f | %.3f |", compare_median(p->a, p->unit),
                compare_median(p->b, p->unit), p->q.ratio);
        if (isfinite(p->q.ci95[0]))
            fprintf(f, " %.3f-%.3f |", p->q.ci95[0], p->q.ci95[1]);
        else
            fputs(" - |", f);
        fprintf(f, " %s | %s |\n", compare_unit_name(p->unit), compare_verdict_text(p, v, sizeof v));
    }
    fputc('\n', f); // what the text prints under each row, then the unmatched points
    for (int i = 0; i < c->n_pairs; i++)
        report_compare_pair_notes(f, &c->pairs[i], "- ");
    report_compare_unmatched(f, c, "- ");
    return 0;
}
