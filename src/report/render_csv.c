/* The CSV renderers: one row per measured epoch (the --out .csv and
 * --format csv), and one row per point with its statistics (-summary.csv). */
#include "report.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "compare.h"
#include "report_columns.h"

/* s as one CSV field: quoted, its quotes doubled (RFC 4180), so a label or a
 * swept value with commas or quotes stays one field. */
static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int report_csv(FILE *f, const struct results *r)
{
    fprintf(f, "run,point");
    for (int j = 0; j < n_epoch_columns; j++)
        if (epoch_columns[j].csv_key)
            fprintf(f, ",%s", epoch_columns[j].csv_key);
    fputc('\n', f);
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        for (int k = 0; k < run->n_epochs; k++) {
            fprintf(f, "%d,", i);
            csv_text(f, run->label);
            for (int j = 0; j < n_epoch_columns; j++) {
                const struct report_column *c = &epoch_columns[j];
                if (!c->csv_key)
                    continue;
                double v = c->value(run, k);
                fputc(',', f);
                if (!(isnan(v) && (c->flags & COL_BLANK_NAN)) &&
                    !(v == 0 && (c->flags & COL_JSON_ZERO_NULL))) // as the JSON's null
                    fprintf(f, c->csv_fmt, v);
            }
            fputc('\n', f);
        }
    }
    return 0;
}

/* The summary CSV's figures after "epochs": each key next to the double of
 * struct run_summary it reads (fio's option table style), so header and rows
 * come from one list. An empty field where the figure is not finite. */
static const struct {
    const char *key;
    size_t at; // offsetof(struct run_summary, ...)
} summary_csv_columns[] = {
    {"mean_ms", offsetof(struct run_summary, epoch_ms.mean)},
    {"stddev_ms", offsetof(struct run_summary, epoch_ms.stddev)},
    {"median_ms", offsetof(struct run_summary, epoch_ms.median)},
    {"min_ms", offsetof(struct run_summary, epoch_ms.min)},
    {"max_ms", offsetof(struct run_summary, epoch_ms.max)},
    {"p90_ms", offsetof(struct run_summary, epoch_ms.p90)},
    {"p99_ms", offsetof(struct run_summary, epoch_ms.p99)},
    {"ci95_low_ms", offsetof(struct run_summary, epoch_ms.ci95[0])},
    {"ci95_high_ms", offsetof(struct run_summary, epoch_ms.ci95[1])},
    {"samples_per_second", offsetof(struct run_summary, samples_per_s)},
    {"final_loss", offsetof(struct run_summary, final_loss)},
};
enum { N_SUMMARY_CSV = sizeof summary_csv_columns / sizeof *summary_csv_columns };

/* One row per point: its swept keys' values, then the statistics of its
 * epoch times (ms); a point not run again names its run in same_as. */
int report_summary_csv(FILE *f, const struct results *r)
{
    const struct config *c = &r->cfg;
    fprintf(f, "run,point,same_as");
    for (int k = 0; k < c->n_sweep; k++)
        fprintf(f, ",%s", c->sweep[k].key);
    fprintf(f, ",epochs");
    for (int k = 0; k < N_SUMMARY_CSV; k++)
        fprintf(f, ",%s", summary_csv_columns[k].key);
    fputc('\n', f);
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        fprintf(f, "%d,", i);
        csv_text(f, run->label);
        fputc(',', f);
        if (run->same)
            fprintf(f, "%d", run->same_as);
        for (int k = 0; k < c->n_sweep; k++) {
            char v[CONFIG_STR];
            config_get_text(&run->cfg, c->sweep[k].key, v, sizeof v);
            fputc(',', f);
            csv_text(f, v);
        }
        const struct run_result *m = run->same ? &r->runs[run->same_as] : run; // its measurement
        fprintf(f, ",%d", m->n_epochs);
        for (int k = 0; k < N_SUMMARY_CSV; k++) {
            double v;
            memcpy(&v, (const char *)&m->sum + summary_csv_columns[k].at, sizeof v);
            if (isfinite(v))
                fprintf(f, ",%.9g", v);
            else
                fprintf(f, ",");
        }
        fputc('\n', f);
    }
    return 0;
}


/* dpbench compare: one row per pair of points. */
int report_compare_csv(FILE *f, const struct compare_result *c)
{
    fprintf(f, "point_a,point_b,unit,units,a_median_ms,b_median_ms,ratio,ci95_low,ci95_high,"
               "p_value,verdict,held_back\n");
    for (int i = 0; i < c->n_pairs; i++) {
        const struct compare_pair *p = &c->pairs[i];
        double v[] = {compare_median(p->a, p->unit), compare_median(p->b, p->unit), p->q.ratio,
                      p->q.ci95[0], p->q.ci95[1], p->p_value};
        char text[96];
        csv_text(f, p->a->label);
        fputc(',', f);
        csv_text(f, p->b->label);
        fprintf(f, ",%s,%d", compare_unit_name(p->unit), p->q.units);
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            if (isfinite(v[k]))
                fprintf(f, ",%.9g", v[k]);
            else
                fputc(',', f);
        fputc(',', f);
        csv_text(f, compare_verdict_text(p, text, sizeof text));
        fputc(',', f);
        csv_text(f, p->why);
        fputc('\n', f);
    }
    return 0;
}
