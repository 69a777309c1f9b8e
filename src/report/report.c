/* Summaries, verdicts and the three renderers (text, JSON, CSV) over one
 * `struct results`, plus atomic result files. */
#include "report.h"
#include "dataset_kind.h"
#include "report_columns.h"
#include "report_ddp.h"
#include "report_emulated.h"
#include "rlimits.h"
#include "signals.h"
#include "staging.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef DPBENCH_GIT
#define DPBENCH_GIT "unknown"
#endif

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

/* ---- text ---------------------------------------------------------------- */

/* Columns of run->splits: replicas, or ranks in a ddp run of several. */
static int split_width(const struct run_result *run)
{
    return run->world_size > 1 ? run->world_size : run->replicas;
}

static void text_splits(FILE *f, const struct run_result *run)
{
    /* one line per distinct batch size, in order of first appearance; an
     * epoch has at most two (full batches and a last partial one) */
    enum { MAX_SIZES = 8 };
    long rows[MAX_SIZES], count[MAX_SIZES], first[MAX_SIZES];
    int n_sizes = 0, R = split_width(run);
    for (long k = 0; k < run->n_split_batches; k++) {
        long total = 0;
        for (int i = 0; i < R; i++)
            total += run->splits[k * R + i];
        int j = 0;
        while (j < n_sizes && rows[j] != total)
            j++;
        if (j == n_sizes) {
            if (n_sizes == MAX_SIZES)
                continue;
            rows[j] = total, count[j] = 0, first[j] = k;
            n_sizes++;
        }
        count[j]++;
    }
    for (int j = 0; j < n_sizes; j++) {
        const long *sp = run->splits + first[j] * R;
        int used = 0;
        fprintf(f, "#   %ld ->", rows[j]);
        for (; used < R && sp[used] > 0; used++)
            fprintf(f, "%s%ld", used ? "/" : " ", sp[used]);
        fprintf(f, " (x%ld)", count[j]);
        if (used < R)
            fprintf(f, "  %d of %d replicas used", used, R);
        fprintf(f, "\n");
    }
}

/* "# blas: libxsmm, 1 thread per replica, the fastest of OpenBLAS 1: 79.1 us,
 *  2: 67.0 us, libxsmm 1: 33.2 us per replica step" */
static void text_blas(FILE *f, const struct run_result *run)
{
    const struct blas_choice *b = &run->blas;
    if (b->n_tried == 0)
        return;
    fprintf(f, "# blas:%s%s %s, %d thread%s per replica, the fastest of", run->label[0] ? " " : "",
            run->label, hostmm_lib_name(b->lib), b->threads, b->threads == 1 ? "" : "s");
    for (int i = 0; i < b->n_tried; i++)
        fprintf(f, "%s%s%s %d: %.3g us", i ? "," : "",
                i == 0 || b->tried_lib[i] != b->tried_lib[i - 1] ? " " : "",
                i == 0 || b->tried_lib[i] != b->tried_lib[i - 1] ? hostmm_lib_name(b->tried_lib[i])
                                                                 : "",
                b->tried[i], 1e6 * b->seconds[i]);
    fprintf(f, " per replica step\n");
}

/* "# floor: 50.1 ms (gather 23.4 + compute 26.7); median epoch 71.3 ms = 1.42x" */
static void text_floor(FILE *f, const struct run_result *run)
{
    const struct run_floor *fl = &run->floor;
    if (!fl->measured)
        return;
    fprintf(f, "# floor:%s%s %.3g ms (", run->label[0] ? " " : "", run->label, 1e3 * fl->seconds);
    if (isnan(fl->compute_s))
        fprintf(f, "gather %.3g only; the device's step and copies are not measured", 1e3 * fl->gather_s);
    else if (run->cfg.loader.num_workers == 0)
        fprintf(f, "gather %.3g + compute %.3g", 1e3 * fl->gather_s, 1e3 * fl->compute_s);
    else if (fl->overlapped)
        fprintf(f, "overlapped: %ld workers gathering while the step's BLAS runs, measured "
                   "together; apart the larger of loading %.3g = gather %.3g over the workers, "
                   "and compute %.3g",
                run->cfg.loader.num_workers, 1e3 * fl->loading_s, 1e3 * fl->gather_s,
                1e3 * fl->compute_s);
    else
        fprintf(f, "the larger of loading %.3g = gather %.3g over %ld workers, and compute %.3g",
                1e3 * fl->loading_s, 1e3 * fl->gather_s, run->cfg.loader.num_workers,
                1e3 * fl->compute_s);
    fprintf(f, "); median epoch %.3g ms = %.2fx\n", 1e3 * run->sum.median_s, run->sum.floor_ratio);
}

static void text_header(FILE *f, const struct results *r)
{
    const struct config *c = &r->cfg;
    const struct run_result *run0 = &r->runs[0];
    fprintf(f, "# dpbench %s  name: %s  config: %s  date: %s\n", DPBENCH_VERSION, c->name,
            c->source[0] ? c->source : "(defaults)", r->date);
    const struct machine *m = &r->machine;
    fprintf(f, "# machine: %s, %s, %ld cores, %ld threads, %.1f GiB, %s\n", m->arch, m->cpu, m->cores,
            m->threads, m->mem_bytes / (1 << 30), m->kernel);
    fprintf(f, "# build: dpbench %s (%s), %s, %s (core %s)%s%s\n", DPBENCH_VERSION, DPBENCH_GIT,
            m->compiler, m->blas, m->openblas_core, m->xsmm[0] ? ", libxsmm " : "", m->xsmm);
    if (r->machine.devices[0])
        fprintf(f, "# devices: %s\n", r->machine.devices);
    const struct config *rc = &run0->cfg; // labelled data decides the shapes
    if (dataset_kind_of(rc)->labelled)
        fprintf(f, "# dataset: %s %s, loss %s\n", rc->dataset.kind, rc->dataset.path, run0->loss);
    fprintf(f, "# data: %ld x %ld -> %ld, seed %ld; batch %ld, shuffle %s, drop_last %s, "
               "%ld batches/epoch\n",
            rc->dataset.length, rc->dataset.features, rc->model.out_features, c->seed,
            c->loader.batch_size, c->loader.shuffle ? "on" : "off",
            c->loader.drop_last ? "on" : "off", run0->n_batches);
    fprintf(f, "# loader: num_workers %ld, prefetch_factor %ld, persistent_workers %s, "
               "pin_memory %s, async_copy %s, sample_cost %g us\n",
            c->loader.num_workers, c->loader.prefetch_factor,
            c->loader.persistent_workers ? "on" : "off", c->loader.pin_memory ? "on" : "off",
            c->loader.async_copy ? "on" : "off", c->dataset.sample_cost_us);
    fprintf(f, "# parallel: %s, %d replica%s%s; train: %ld epochs (+%ld warmup), lr %g\n",
            run0->backend, run0->replicas, run0->replicas == 1 ? "" : "s",
            run0->shared_devices ? " (some replicas share a device)" : "", c->train.epochs,
            c->train.warmup_epochs, c->train.lr);
}

/* notes and BLAS choices: after the table in a sweep (its rows come first) */
static void text_notes(FILE *f, const struct results *r)
{
    const struct run_result *run0 = &r->runs[0];
    /* notes come from each point's own config: a swept knob has them too */
    bool same = true;
    for (int i = 1; i < r->n_runs; i++)
        same &= strcmp(r->runs[i].notes, run0->notes) == 0;
    for (int i = 0; i < (same ? 1 : r->n_runs); i++)
        if (r->runs[i].notes[0])
            fprintf(f, "# note: %s%s%s\n", same ? "" : r->runs[i].label, same ? "" : ": ",
                    r->runs[i].notes);
    for (int i = 0; i < r->n_runs; i++)
        text_blas(f, &r->runs[i]);
}

static void text_header_tail(FILE *f, const struct results *r)
{
    const struct config *c = &r->cfg;
    const struct run_result *run0 = &r->runs[0];
    if (run0->world_size > 1)
        fprintf(f, "# ddp: %d ranks (%s), one replica each, batch %ld per rank (global %ld)\n",
                run0->world_size, run0->comm, c->loader.batch_size,
                c->loader.batch_size * run0->world_size);
    fprintf(f, "# splits (batch rows -> rows per %s):\n", run0->world_size > 1 ? "rank" : "replica");
    text_splits(f, run0);
}

/* Labelled data adds accuracy and file reads to the epoch table. */
bool report_labelled(const struct run_result *run)
{
    return dataset_kind_of(&run->cfg)->labelled;
}

/* One cell of a text table: a space unless first, then s right-aligned in
 * width columns ("±" is two bytes and one column). */
static void text_cell(FILE *f, bool first, int width, const char *s)
{
    int extra = 0;
    for (const char *p = s; *p; p++)
        extra += ((unsigned char)*p & 0xC0) == 0x80; // UTF-8 continuation bytes
    fprintf(f, "%s%*s", first ? "" : " ", width + extra, s);
}

/* column c's value v in the text table: its format, or "-" for a missing value */
static void text_value(FILE *f, bool first, const struct report_column *c, double v)
{
    char cell[64] = "-";
    if (!(isnan(v) && (c->flags & COL_BLANK_NAN)))
        snprintf(cell, sizeof cell, c->text_fmt, report_column_text_value(c, v));
    text_cell(f, first, c->text_width, cell);
}

/* The text epoch table: epoch_columns[] with a text format that the run shows. */
static bool text_has(const struct report_column *c, const struct run_result *run)
{
    return c->text_fmt && (!c->text_if || c->text_if(run));
}

static void text_epochs(FILE *f, const struct run_result *run)
{
    for (int line = 0; line < 2; line++) { // the headers, then their units
        for (int j = 0, n = 0; j < n_epoch_columns; j++) {
            const struct report_column *c = &epoch_columns[j];
            if (text_has(c, run))
                text_cell(f, n++ == 0, c->text_width, line ? c->text_unit : c->text_header);
        }
        fprintf(f, "\n");
    }
    for (int k = 0; k < run->n_epochs; k++) {
        for (int j = 0, n = 0; j < n_epoch_columns; j++)
            if (text_has(&epoch_columns[j], run))
                text_value(f, n++ == 0, &epoch_columns[j], epoch_columns[j].value(run, k));
        fprintf(f, "%s\n", report_emulated_tag(run));
    }
}

/* "1.42x faster  1.30-1.55": the speed-up against the first point with its
 * interval; noise reads "same", never as a speed-up */
static void text_speedup(const struct run_summary *s, char *buf, size_t n)
{
    if (isnan(s->speedup))
        snprintf(buf, n, "-");
    else if (isnan(s->speedup_ci95[0]))
        snprintf(buf, n, "%.2fx %s (too few epochs to test)", s->speedup,
                 verdict_name(s->speedup_verdict));
    else
        snprintf(buf, n, "%.2fx %-6s %.2f-%.2f", s->speedup, verdict_name(s->speedup_verdict),
                 s->speedup_ci95[0], s->speedup_ci95[1]);
}

/* half the width of the median's 95% interval, ms */
static double half_ci(const struct stats *st) { return 0.5 * (st->ci95[1] - st->ci95[0]); }

int report_label_width(const struct results *r)
{
    int w = r->label_width > 5 ? r->label_width : 5; // the point column fits the longest label
    for (int i = 0; i < r->n_runs; i++)
        if ((int)strlen(r->runs[i].label) > w)
            w = (int)strlen(r->runs[i].label);
    return w;
}

void report_text_table_head(FILE *f, const struct results *r)
{
    int w = report_label_width(r);
    for (int line = 0; line < 2; line++) { // the headers, then their units
        fprintf(f, "%-*s", w, line ? "" : "point");
        for (int j = 0; j < n_point_columns; j++)
            if (point_columns[j].text_fmt)
                text_cell(f, false, point_columns[j].text_width,
                          line ? point_columns[j].text_unit : point_columns[j].text_header);
        fprintf(f, "  %s\n", line ? "x" : "speedup vs first, 95% CI");
    }
}

void report_text_row(FILE *f, const struct results *r, int i)
{
    int w = report_label_width(r);
    const struct run_result *run = &r->runs[i];
    const char *label = run->label[0] ? run->label : "(base)";
    if (run->same) {
        fprintf(f, "%-*s %10s = point %d (not run again: %s)\n", w, label, "", run->same_as,
                run->notes[0] ? run->notes : "the same effective settings");
        return;
    }
    char sp[64];
    text_speedup(&run->sum, sp, sizeof sp);
    fprintf(f, "%-*s", w, label);
    for (int j = 0; j < n_point_columns; j++)
        if (point_columns[j].text_fmt)
            text_value(f, false, &point_columns[j], point_columns[j].value(run, -1));
    fprintf(f, "  %s%s\n", sp, report_emulated_tag(run));
}

static void text_warnings(FILE *f, const struct results *r)
{
    for (int i = 0; i < r->n_runs; i++) {
        char w[sizeof r->runs[i].label + sizeof r->runs[i].sum.warning + 8];
        if (run_warning(&r->runs[i], w, sizeof w))
            fprintf(f, "# warning: %s\n", w);
    }
}

/* "# median epoch 13.2 ms ± 0.41 (95% CI of the median 12.9-13.7), mean 13.5 ± 1.1 sd, ..." */
static void text_run_stats(FILE *f, const struct run_result *run)
{
    const struct run_summary *s = &run->sum;
    const struct stats *st = &s->epoch_ms;
    fprintf(f, "# median epoch %.4f ms ± %.4f (95%% CI of the median %.4f-%.4f%s) over %d "
               "epochs%s, %.0f samples/s%s\n",
            st->median, half_ci(st), st->ci95[0], st->ci95[1],
            st->ci_exact ? "" : ", min-max: too few epochs for 95%", run->n_epochs,
            run->repeats > 1 ? " of all repeats" : "", s->samples_per_s, report_emulated_tag(run));
    fprintf(f, "# epoch ms: mean %.4f ± %.4f sd, min %.4f, p90 %.4f, p99 %.4f, max %.4f\n",
            st->mean, st->stddev, st->min, st->p90, st->p99, st->max);
}

void report_text_head(FILE *f, const struct results *r)
{
    text_header(f, r);
    text_header_tail(f, r);
    report_text_table_head(f, r);
}

void report_text(FILE *f, const struct results *r)
{
    char verdict[256];
    if (r->n_runs == 0)
        return;
    bool table = r->n_runs > 1 || r->rows_shown; // a sweep's: one row per point
    if (!r->rows_shown)
        text_header(f, r);
    if (!table)
        text_notes(f, r);
    if (!r->rows_shown)
        text_header_tail(f, r);
    if (r->n_runs == 1 && r->runs[0].n_epochs == 0) { // failed before an epoch completed
        fprintf(f, "# no complete epoch\n");
        if (r->runs[0].stopped[0])
            fprintf(f, "# stopped: %s\n", r->runs[0].stopped);
    } else if (!table) {
        text_epochs(f, &r->runs[0]);
        const struct run_summary *s = &r->runs[0].sum;
        text_run_stats(f, &r->runs[0]);
        const char *tag = report_emulated_tag(&r->runs[0]);
        if (!isnan(s->copy_gbps))
            fprintf(f, "# copy: %.2f GB/s, %.0f%% hidden behind compute%s\n", s->copy_gbps,
                    100 * s->overlap, tag);
        if (!isnan(s->host_us))
            fprintf(f, "# host overhead: %.1f us per step issuing device work, %.1f per replica\n",
                    s->host_us, s->host_us / r->runs[0].replicas);
        text_floor(f, &r->runs[0]);
        report_ddp_text(f, &r->runs[0]);
        report_verdict(&r->runs[0], verdict, sizeof verdict);
        fprintf(f, "# verdict: %s\n", verdict);
        if (!isnan(s->au))
            fprintf(f, "# AU (compute time / epoch time): %.0f%%%s\n", 100 * s->au, tag);
        report_emulated_text(f, &r->runs[0]);
        if (r->runs[0].stopped[0])
            fprintf(f, "# stopped: %s\n", r->runs[0].stopped);
    } else {
        if (!r->rows_shown) {
            report_text_table_head(f, r);
            for (int i = 0; i < r->n_runs; i++)
                report_text_row(f, r, i);
        }
        text_notes(f, r);
        for (int i = 0; i < r->n_runs; i++)
            text_floor(f, &r->runs[i]);
        for (int i = 0; i < r->n_runs; i++) {
            if (r->runs[i].same)
                continue;
            report_verdict(&r->runs[i], verdict, sizeof verdict);
            fprintf(f, "# %s: %s\n", r->runs[i].label, verdict);
            report_emulated_text(f, &r->runs[i]);
            if (r->runs[i].stopped[0])
                fprintf(f, "# %s: stopped: %s\n", r->runs[i].label, r->runs[i].stopped);
        }
    }
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        if (run->eval.done)
            fprintf(f, "# eval%s%s: loss %.6g, accuracy %.2f%% on %ld samples\n",
                    run->label[0] ? " " : "", run->label, run->eval.loss,
                    100 * run->eval.accuracy, run->eval.samples);
    }
    text_warnings(f, r);
    fprintf(f, "# peak RSS %.1f MiB\n", r->peak_rss_bytes / (1 << 20));
    /* partial results: a signal (interrupted) or an error mid-run (failed) */
    const char *why = stop_requested() ? "interrupted" : "failed";
    if (r->interrupted && r->n_points > 1)
        fprintf(f, "# %s: %d of %ld points reported, the last one %d of %ld epochs\n", why,
                r->n_runs, r->n_points, r->runs[r->n_runs - 1].n_epochs,
                r->runs[r->n_runs - 1].cfg.train.epochs);
    else if (r->interrupted)
        fprintf(f, "# %s: %d of %ld epochs reported\n", why, r->runs[0].n_epochs,
                r->runs[0].cfg.train.epochs);
}

/* ---- CSV ------------------------------------------------------------------ */

void report_csv(FILE *f, const struct results *r)
{
    fprintf(f, "run,point");
    for (int j = 0; j < n_epoch_columns; j++)
        if (epoch_columns[j].csv_key)
            fprintf(f, ",%s", epoch_columns[j].csv_key);
    fputc('\n', f);
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        for (int k = 0; k < run->n_epochs; k++) {
            fprintf(f, "%d,\"%s\"", i, run->label);
            for (int j = 0; j < n_epoch_columns; j++) {
                const struct report_column *c = &epoch_columns[j];
                if (!c->csv_key)
                    continue;
                double v = c->value(run, k);
                fputc(',', f);
                if (!(isnan(v) && (c->flags & COL_BLANK_NAN)))
                    fprintf(f, c->csv_fmt, v);
            }
            fputc('\n', f);
        }
    }
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
void report_summary_csv(FILE *f, const struct results *r)
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
        fprintf(f, "%d,\"%s\",", i, run->label);
        if (run->same)
            fprintf(f, "%d", run->same_as);
        for (int k = 0; k < c->n_sweep; k++) {
            char v[CONFIG_STR];
            config_get_text(&run->cfg, c->sweep[k].key, v, sizeof v);
            fprintf(f, ",\"%s\"", v);
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
}

/* ---- JSON ----------------------------------------------------------------- */

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
        for (int i = 0; i < split_width(run); i++) {
            long rows = run->splits[k * split_width(run) + i];
            if (rows > 0)
                cJSON_AddItemToArray(a, cJSON_CreateNumber((double)rows));
        }
        cJSON_AddItemToArray(splits, a);
    }
    return splits;
}

/* "summary": the run's figures (report_summarize_run), the verdict, ddp's and
 * the emulated device's; the ddp part also adds world_size and ranks to o */
static void summary_json(cJSON *o, const struct run_result *run)
{
    const struct run_summary *s = &run->sum;
    cJSON *sum = cJSON_AddObjectToObject(o, "summary");
    for (int j = 0; j < n_point_columns; j++)
        if (point_columns[j].json_key)
            cJSON_AddItemToObject(sum, point_columns[j].json_key,
                                  number_or_null(point_columns[j].value(run, -1)));
    cJSON_AddItemToObject(sum, "speedup", number_or_null(s->speedup));
    cJSON_AddItemToObject(sum, "speedup_ci95", pair_json(s->speedup_ci95));
    cJSON_AddStringToObject(sum, "speedup_verdict", verdict_name(s->speedup_verdict));
    report_ddp_json(o, sum, run);
    char verdict[256];
    report_verdict(run, verdict, sizeof verdict);
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

/* runs[i]: the point, its config, and (unless it is another point's run) what it measured */
static cJSON *run_json(const struct run_result *run)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "point", run->label);
    cJSON *ov = cJSON_AddObjectToObject(o, "overrides");
    for (int i = 0; i < run->cfg.n_sweep; i++) {
        char v[CONFIG_STR];
        config_get_text(&run->cfg, run->cfg.sweep[i].key, v, sizeof v);
        cJSON_AddStringToObject(ov, run->cfg.sweep[i].key, v);
    }
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
    cJSON_AddItemToObject(cJSON_AddObjectToObject(o, "stats"), "epoch_ms",
                          stats_json(&run->sum.epoch_ms));
    summary_json(o, run);
    eval_params_json(o, run);
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
    cJSON_AddNumberToObject(root, "repeat", r->repeat > 0 ? r->repeat : 1);
    cJSON *warn = cJSON_AddArrayToObject(root, "warnings");
    for (int i = 0; i < r->n_runs; i++) {
        char w[sizeof r->runs[i].label + sizeof r->runs[i].sum.warning + 8];
        if (run_warning(&r->runs[i], w, sizeof w))
            cJSON_AddItemToArray(warn, cJSON_CreateString(w));
    }
    cJSON *runs = cJSON_AddArrayToObject(root, "runs");
    for (int i = 0; i < r->n_runs; i++)
        cJSON_AddItemToArray(runs, run_json(&r->runs[i]));
    if (r->tune)
        cJSON_AddItemToObject(root, "tune", cJSON_Duplicate(r->tune, true));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* ---- result files --------------------------------------------------------- */

/* A pair NAME-STAMP[-K].json + .csv is one result: both temp files are written
 * and synced in full first, then hard-linked to their final names. link()
 * never replaces an existing file, so two runs that pick the same name in the
 * same second take K = 2, 3, ... instead of mixing or overwriting each other;
 * a failure removes whatever this run created, so the pair lands whole or not
 * at all. */

enum { MAX_SEQ = 999 };
/* The longest name this file creates beyond NAME-STAMP: a temp file
 * ".NAME-STAMP.PID-summary.csv.tmp" (pid up to 10 digits), or "-999-summary.csv". */
#define SUFFIX_MAX (sizeof ".." "4294967295" "-summary.csv.tmp" - 1)

static void result_base(const char *name, const char *stamp, char *buf, size_t n)
{
    snprintf(buf, n, "%s-%s", name, stamp);
    for (char *p = buf; *p; p++) // the name is user text: keep it one file
        if (*p == '/' || *p == ' ')
            *p = '_';
}

int report_check_out(const char *dir, const char *name, struct error *e)
{
    struct stat st;
    if (stat(dir, &st) != 0) { // mkdir -p; made by another process meanwhile (a ddp rank): fine
        if (dirs_make(dir, NULL, 0, e) || stat(dir, &st) != 0)
            return error_wrap(e, "report.out %s: cannot create directory", dir);
    }
    if (!S_ISDIR(st.st_mode))
        return error_set(e, "report.out %s: not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return error_set(e, "report.out %s: not a writable directory: %s", dir, strerror(errno));
    errno = 0;
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max < 0 && errno == 0)
        name_max = 255; // no limit reported
    char base[CONFIG_STR + 64];
    result_base(name, "YYYYmmdd-HHMMSS", base, sizeof base);
    if (name_max > 0 && strlen(base) + SUFFIX_MAX > (size_t)name_max)
        return error_set(e, "report.out %s: name '%s' is too long for a result file name there "
                            "(%zu bytes with the stamp, the limit is %ld)",
                         dir, name, strlen(base) + SUFFIX_MAX, name_max);
    /* Some directories (/proc, /sys, read-only mounts) pass access() but take
     * no new file: try one. */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.dpbench-probe.%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return error_set(e, "report.out %s: cannot create a file there: %s", dir, strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

/* A temp file of ours gone: removed, and no longer the signal handler's to remove. */
static void drop(const char *path)
{
    unlink(path);
    signals_untrack(path);
}

/* Writes text (or render(r) when text is NULL) to a new file at path,
 * synced; on failure (a signal on the way included: signals.h) removes it
 * and names the path in e. */
static int write_new(const char *path, const char *text, const struct results *r,
                     void (*render)(FILE *, const struct results *), struct error *e)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return error_set(e, "%s: cannot create: %s", path, strerror(errno));
    signals_track(path);
    FILE *f = signals_fdopen(fd);
    int err = f ? 0 : errno ? errno : ENOMEM;
    if (f && text)
        fputs(text, f);
    else if (f)
        render(f, r);
    if (f && (fflush(f) != 0 || ferror(f)))
        err = errno ? errno : EIO;
    if (f && fclose(f) != 0 && !err)
        err = errno;
    if (!err && fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (err) {
        drop(path);
        char why[256];
        return error_set(e, "%s: cannot write: %s", path, rlimits_write_error(err, why, sizeof why));
    }
    return 0;
}

/* Gives tmp the name dst without replacing an existing dst: 0, 1 when dst
 * exists, -1 on another error (errno set). */
static int place(const char *tmp, const char *dst)
{
    if (link(tmp, dst) == 0)
        return 0;
    if (errno == EEXIST)
        return 1;
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS && errno != EMLINK)
        return -1;
    /* file systems without hard links: a rename that refuses to replace */
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_NOREPLACE) == 0)
        return 0;
    return errno == EEXIST ? 1 : -1;
}

/* The files of one result: NAME-STAMP.json, .csv and -summary.csv. */
enum { N_FILES = 3 };
static const char *const file_suffix[N_FILES] = {".json", ".csv", "-summary.csv"};

/* Links every temp file to its name with sequence suffix seq: 0 when all
 * are placed, 1 when a name is taken (none left placed), -1 on an error. */
static int place_all(char tmp[][4400], const char *dir, const char *base, const char *seq,
                     char path[][4400], struct error *e)
{
    for (int i = 0; i < N_FILES; i++) {
        snprintf(path[i], sizeof path[i], "%s/%s%s%s", dir, base, seq, file_suffix[i]);
        int got = place(tmp[i], path[i]);
        if (got == 0)
            continue;
        int err = errno;
        for (int j = 0; j < i; j++)
            unlink(path[j]); // this run's, just linked: the set goes whole or not at all
        if (got < 0)
            return error_set(e, "%s: cannot create: %s", path[i], strerror(err));
        return 1;
    }
    return 0;
}

int report_write_files(const struct results *r, const char *dir, char *json_path, size_t n,
                       struct error *e)
{
    char base[CONFIG_STR + 64];
    result_base(r->cfg.name, r->stamp, base, sizeof base);
    char tmp[N_FILES][4400], path[N_FILES][4400];
    for (int i = 0; i < N_FILES; i++)
        snprintf(tmp[i], sizeof tmp[i], "%s/.%s.%ld%s.tmp", dir, base, (long)getpid(),
                 file_suffix[i]);
    char *json = report_json(r);
    if (!json)
        return error_set(e, "out of memory rendering JSON");
    int rc = write_new(tmp[0], json, r, NULL, e);
    free(json);
    if (rc == 0 && (rc = write_new(tmp[1], NULL, r, report_csv, e)) != 0)
        drop(tmp[0]);
    if (rc == 0 && (rc = write_new(tmp[2], NULL, r, report_summary_csv, e)) != 0) {
        drop(tmp[0]);
        drop(tmp[1]);
    }
    if (rc)
        return -1;
    rc = 1; // 1: every name taken, -1: an error, 0: placed
    for (int k = 1; k <= MAX_SEQ && rc == 1; k++) {
        char seq[16] = "";
        if (k > 1)
            snprintf(seq, sizeof seq, "-%d", k);
        rc = place_all(tmp, dir, base, seq, path, e);
    }
    if (rc == 1)
        rc = error_set(e, "report.out %s: %s and %d more names like it are all taken", dir, base,
                  MAX_SEQ - 1);
    for (int i = 0; i < N_FILES; i++)
        drop(tmp[i]); // gone already where rename placed it
    if (rc == 0)
        snprintf(json_path, n, "%s", path[0]);
    return rc;
}

int report_write_text(const char *dir, const char *name, const char *stamp, const char *ext,
                      const char *text, char *path, size_t n, struct error *e)
{
    char base[CONFIG_STR + 64], tmp[4400], dst[4400];
    result_base(name, stamp, base, sizeof base);
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.%s.tmp", dir, base, (long)getpid(), ext);
    if (write_new(tmp, text, NULL, NULL, e))
        return -1;
    int got = 1;
    for (int k = 1; k <= MAX_SEQ && got == 1; k++) {
        char seq[16] = "";
        if (k > 1)
            snprintf(seq, sizeof seq, "-%d", k);
        snprintf(dst, sizeof dst, "%s/%s%s.%s", dir, base, seq, ext);
        got = place(tmp, dst);
    }
    int err = errno;
    drop(tmp); // gone already where rename placed it
    if (got == 1)
        return error_set(e, "report.out %s: %s.%s and %d more names like it are all taken", dir,
                         base, ext, MAX_SEQ - 1);
    if (got < 0)
        return error_set(e, "%s: cannot create: %s", dst, strerror(err));
    snprintf(path, n, "%s", dst);
    return 0;
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
