/* The text renderer: the header lines, the epoch table or a sweep's point
 * table (a row as each point finishes), the summary lines, nccl-tests'
 * style: metadata and footers start with '#', so the output is data. */
#include "report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dataset_kind.h"
#include "report_columns.h"
#include "report_ddp.h"
#include "report_emulated.h"

#ifndef DPBENCH_GIT
#define DPBENCH_GIT "unknown"
#endif


static void text_splits(FILE *f, const struct run_result *run)
{
    /* one line per distinct batch size, in order of first appearance; an
     * epoch has at most two (full batches and a last partial one) */
    enum { MAX_SIZES = 8 };
    long rows[MAX_SIZES], count[MAX_SIZES], first[MAX_SIZES];
    int n_sizes = 0, R = report_split_width(run);
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

/* "# blas: libxsmm, 1 thread per replica, the fastest of OpenBLAS 1: 79.1 us, ..." */
static void text_blas(FILE *f, const struct run_result *run)
{
    const struct blas_choice *b = &run->blas;
    long asked = run->cfg.parallel.blas_threads;
    char how[160] = "the fastest of";
    if (asked > 0 && b->lib == HOSTMM_OPENBLAS) // more than the cores or OPENBLAS_NUM_THREADS give: capped
        snprintf(how, sizeof how, asked > b->threads ? "parallel.blas_threads %ld capped at the "
                 "threads OpenBLAS may use here; measured" : "as parallel.blas_threads sets; "
                 "measured", asked);
    if (b->n_tried == 0)
        return;
    fprintf(f, "# blas:%s%s %s, %d thread%s per replica, %s", run->label[0] ? " " : "",
            run->label, hostmm_lib_name(b->lib), b->threads, b->threads == 1 ? "" : "s", how);
    for (int i = 0; i < b->n_tried; i++) {
        bool lib = i == 0 || b->tried_lib[i] != b->tried_lib[i - 1]; // where the library changes
        fprintf(f, "%s%s%s %d: %.3g us", i ? "," : "", lib ? " " : "",
                lib ? hostmm_lib_name(b->tried_lib[i]) : "", b->tried[i], 1e6 * b->seconds[i]);
    }
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
        fprintf(f, "overlapped: %ld worker%s gathering while the step's BLAS runs, measured "
                   "together; apart the larger of loading %.3g = gather %.3g over the workers, "
                   "and compute %.3g", run->cfg.loader.num_workers,
                run->cfg.loader.num_workers == 1 ? "" : "s", 1e3 * fl->loading_s, 1e3 * fl->gather_s,
                1e3 * fl->compute_s);
    else
        fprintf(f, "the larger of loading %.3g = gather %.3g over %ld worker%s, and compute %.3g",
                1e3 * fl->loading_s, 1e3 * fl->gather_s, run->cfg.loader.num_workers,
                run->cfg.loader.num_workers == 1 ? "" : "s", 1e3 * fl->compute_s);
    fprintf(f, "); median epoch %.3g ms = %.2fx\n", 1e3 * run->sum.median_s, run->sum.floor_ratio);
}

/* A header field: "swept" where the sweep sets one of `keys` (space-separated),
 * else the value, printf-style (the points' own values are in their labels). */
__attribute__((format(printf, 4, 5)))
static const char *field(const struct config *c, const char *keys, char buf[CONFIG_STR],
                         const char *fmt, ...)
{
    for (int i = 0; i < c->n_sweep; i++) {
        size_t n = strlen(c->sweep[i].key);
        for (const char *k = strstr(keys, c->sweep[i].key); k; k = strstr(k + 1, c->sweep[i].key))
            if ((k == keys || k[-1] == ' ') && (k[n] == ' ' || !k[n]))
                return "swept";
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, CONFIG_STR, fmt, ap);
    va_end(ap);
    return buf;
}

static void text_header(FILE *f, const struct results *r)
{
    const struct config *c = &r->cfg;
    const struct run_result *run0 = &r->runs[0];
    fprintf(f, "# dpbench %s  name: %s  config: %s  date: %s\n", DPBENCH_VERSION, c->name,
            c->source[0] ? c->source : "(defaults)", r->date);
    const struct machine *m = &r->machine;
    fprintf(f, "# machine: %s, %s, %ld cores, %ld threads, %.1f GiB, %s\n", m->arch, m->cpu,
            m->cores, m->threads, m->mem_bytes / (1 << 30), m->kernel);
    fprintf(f, "# build: dpbench %s (%s), %s, %s (core %s)%s%s\n", DPBENCH_VERSION, DPBENCH_GIT,
            m->compiler, m->blas, m->openblas_core, m->xsmm[0] ? ", libxsmm " : "", m->xsmm);
    if (r->machine.devices[0])
        fprintf(f, "# devices: %s\n", r->machine.devices);
    const struct config *rc = &run0->cfg; // labelled data decides the shapes
    bool files = dataset_kind_of(rc)->labelled;
    const char *data = files ? "dataset.kind dataset.path " : ""; // the files decide the shapes
    char k[4][256], v[8][CONFIG_STR];
    snprintf(k[0], sizeof k[0], "%sdataset.length", data);
    snprintf(k[1], sizeof k[1], "%sdataset.features", data);
    snprintf(k[2], sizeof k[2], "%smodel.out_features", data);
    snprintf(k[3], sizeof k[3], "%sdataset.length loader.batch_size loader.drop_last", data);
    if (files)
        fprintf(f, "# dataset: %s %s, loss %s\n", field(c, "dataset.kind", v[0], "%s", rc->dataset.kind),
                field(c, "dataset.path", v[1], "%s", rc->dataset.path),
                field(c, "model.loss dataset.kind dataset.path", v[2], "%s", run0->loss));
    fprintf(f, "# data: %s x %s -> %s, seed %s; batch %s, shuffle %s, drop_last %s, "
               "%s batches/epoch\n",
            field(c, k[0], v[0], "%ld", rc->dataset.length), field(c, k[1], v[1], "%ld", rc->dataset.features),
            field(c, k[2], v[2], "%ld", rc->model.out_features), field(c, "seed", v[3], "%ld", c->seed),
            field(c, "loader.batch_size", v[4], "%ld", c->loader.batch_size),
            field(c, "loader.shuffle", v[5], "%s", c->loader.shuffle ? "on" : "off"),
            field(c, "loader.drop_last", v[6], "%s", c->loader.drop_last ? "on" : "off"),
            field(c, k[3], v[7], "%ld", run0->n_batches));
    fprintf(f, "# loader: num_workers %s, prefetch_factor %s, persistent_workers %s, "
               "pin_memory %s, async_copy %s, sample_cost %s\n",
            field(c, "loader.num_workers", v[0], "%ld", c->loader.num_workers),
            field(c, "loader.prefetch_factor", v[1], "%ld", c->loader.prefetch_factor),
            field(c, "loader.persistent_workers", v[2], "%s", c->loader.persistent_workers ? "on" : "off"),
            field(c, "loader.pin_memory", v[3], "%s", c->loader.pin_memory ? "on" : "off"),
            field(c, "loader.async_copy", v[4], "%s", c->loader.async_copy ? "on" : "off"),
            field(c, "dataset.sample_cost_us", v[5], "%g us", c->dataset.sample_cost_us));
    const char *replicas = field(c, "parallel.replicas parallel.devices", v[1], "%d", run0->replicas);
    fprintf(f, "# parallel: %s, %s replica%s%s; train: %s epochs (+%s warmup), lr %s\n",
            field(c, "parallel.device", v[0], "%s", run0->backend), replicas,
            strcmp(replicas, "1") ? "s" : "",
            run0->shared_devices ? " (some replicas share a device)" : "",
            field(c, "train.epochs", v[2], "%ld", c->train.epochs),
            field(c, "train.warmup_epochs", v[3], "%ld", c->train.warmup_epochs),
            field(c, "train.lr", v[4], "%g", c->train.lr));
}

/* A sweep's BLAS choices, one line per distinct choice (the detail per
 * point with --verbose). */
static void text_blas_summary(FILE *f, const struct results *r)
{
    for (int i = 0; i < r->n_runs; i++) {
        const struct blas_choice *b = &r->runs[i].blas;
        bool seen = b->n_tried == 0;
        for (int j = 0; j < i && !seen; j++)
            seen = r->runs[j].blas.n_tried && r->runs[j].blas.lib == b->lib &&
                   r->runs[j].blas.threads == b->threads;
        if (seen)
            continue;
        int count = 0;
        for (int j = i; j < r->n_runs; j++)
            count += r->runs[j].blas.n_tried && r->runs[j].blas.lib == b->lib &&
                     r->runs[j].blas.threads == b->threads;
        fprintf(f, "# blas: %s, %d thread%s per replica (%d of %d points; --verbose: what each "
                   "measured)\n", hostmm_lib_name(b->lib), b->threads, b->threads == 1 ? "" : "s",
                count, r->n_runs);
    }
}

/* notes and BLAS choices: after the table in a sweep (its rows come first);
 * a note many points share is said once */
static void text_notes(FILE *f, const struct results *r)
{
    bool each = r->cfg.report.verbose;
    for (int i = 0; i < r->n_runs; i++) {
        const char *note = r->runs[i].notes;
        bool seen = !note[0];
        for (int j = 0; j < i && !seen && !each; j++)
            seen = strcmp(r->runs[j].notes, note) == 0;
        if (seen)
            continue;
        int count = 0;
        for (int j = 0; j < r->n_runs; j++)
            count += strcmp(r->runs[j].notes, note) == 0;
        if (r->n_runs == 1 || (count == r->n_runs && !each)) {
            fprintf(f, "# note: %s\n", note);
            continue;
        }
        char labels[600];
        size_t used = 0;
        for (int j = i; j < r->n_runs && used < sizeof labels; j++)
            if (j == i || (!each && strcmp(r->runs[j].notes, note) == 0))
                used += (size_t)snprintf(labels + used, sizeof labels - used, "%s%s",
                                         used ? ", " : "", r->runs[j].label);
        if (used < 200) // the points named, while that stays readable
            fprintf(f, "# note: %s: %s\n", labels, note);
        else
            fprintf(f, "# note (%d of %d points): %s\n", count, r->n_runs, note);
    }
    for (int i = 0; i < (r->n_runs == 1 || each ? r->n_runs : 0); i++)
        text_blas(f, &r->runs[i]);
    if (r->n_runs > 1 && !each)
        text_blas_summary(f, r);
}

static bool same_splits(const struct run_result *a, const struct run_result *b)
{
    int R = report_split_width(a);
    return a->n_split_batches == b->n_split_batches && R == report_split_width(b) &&
           !memcmp(a->splits, b->splits, (size_t)(a->n_split_batches * R) * sizeof *a->splits);
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
    bool alike = true; // every point's batches split as the first's
    for (int i = 1; i < r->n_runs; i++)
        alike &= r->runs[i].n_split_batches == 0 || same_splits(&r->runs[i], run0);
    for (int i = 0; i < r->n_runs; i++) { // else each new way, under the first point with it
        bool seen = i > 0 && r->runs[i].n_split_batches == 0;
        for (int j = 0; j < i && !seen; j++)
            seen = same_splits(&r->runs[i], &r->runs[j]);
        if (seen)
            continue;
        if (!alike)
            fprintf(f, "#  %s:\n", r->runs[i].label);
        text_splits(f, &r->runs[i]);
    }
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
 * interval over the rounds and the verdict; an undecided one says what would
 * decide it. */
static void text_speedup(const struct results *r, int i, char *buf, size_t n)
{
    const struct run_summary *s = &r->runs[i].sum;
    if (i == 0)
        snprintf(buf, n, "1.00x (first)");
    else if (isnan(s->speedup))
        snprintf(buf, n, "-");
    else if (isnan(s->speedup_ci95[0]))
        snprintf(buf, n, "%.2fx undecided (%d round%s: an interval needs 6)", s->speedup,
                 r->runs[report_measured(r, i)].n_rounds,
                 r->runs[report_measured(r, i)].n_rounds == 1 ? "" : "s");
    else if (s->speedup_verdict != VERDICT_UNDECIDED)
        snprintf(buf, n, "%.2fx %-6s %.2f-%.2f", s->speedup, verdict_name(s->speedup_verdict),
                 s->speedup_ci95[0], s->speedup_ci95[1]);
    else if (s->speedup_rounds_needed > 0)
        snprintf(buf, n, "%.2fx undecided %.2f-%.2f (about %d rounds would decide)",
                 s->speedup, s->speedup_ci95[0], s->speedup_ci95[1], s->speedup_rounds_needed);
    else
        snprintf(buf, n, "%.2fx undecided %.2f-%.2f (on the noise threshold)", s->speedup,
                 s->speedup_ci95[0], s->speedup_ci95[1]);
}

static int label_width(const struct results *r)
{
    int w = 5; // the point column fits the longest label
    for (int i = 0; i < r->n_runs; i++)
        if ((int)strlen(r->runs[i].label) > w)
            w = (int)strlen(r->runs[i].label);
    return w;
}

static void table_head(FILE *f, const struct results *r)
{
    int w = label_width(r);
    for (int line = 0; line < 2; line++) { // the headers, then their units
        fprintf(f, "%-*s", w, line ? "" : "point");
        for (int j = 0; j < n_point_columns; j++)
            if (point_columns[j].text_fmt)
                text_cell(f, false, point_columns[j].text_width,
                          line ? point_columns[j].text_unit : point_columns[j].text_header);
        fprintf(f, "  %-8s  %s\n", line ? "" : "bound", line ? "x" : "speedup vs first, 95% CI");
    }
}

static void table_row(FILE *f, const struct results *r, int i)
{
    int w = label_width(r);
    const struct run_result *run = &r->runs[i];
    const char *label = run->label[0] ? run->label : "(base)";
    if (run->same) {
        fprintf(f, "%-*s %10s = point %d (not run again: %s)\n", w, label, "", run->same_as,
                run->notes[0] ? run->notes : "the same effective settings");
        return;
    }
    char sp[128], verdict[512];
    text_speedup(r, i, sp, sizeof sp);
    report_verdict(r, i, verdict, sizeof verdict);
    fprintf(f, "%-*s", w, label);
    for (int j = 0; j < n_point_columns; j++)
        if (point_columns[j].text_fmt)
            text_value(f, false, &point_columns[j], point_columns[j].value(run, -1));
    fprintf(f, "  %-8.*s  %s%s\n", (int)strcspn(verdict, "-:"), verdict, sp,
            report_emulated_tag(run));
}

static void text_warnings(FILE *f, const struct results *r)
{
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        char w[sizeof run->label + sizeof run->sum.warning + 8];
        if (run_warning(run, w, sizeof w))
            fprintf(f, "# warning: %s\n", w);
        if (run->sum.load_warning[0])
            fprintf(f, "# warning: %s%s%s\n", run->label, run->label[0] ? ": " : "",
                    run->sum.load_warning);
    }
    char w[512];
    if (report_load_apart(r, w, sizeof w))
        fprintf(f, "# warning: %s\n", w);
}

/* "# median epoch 13.2 ms ± 0.41 (95% CI of the median 12.9-13.7, over 8
 * rounds), 2270 samples/s", then the epochs' spread */
static void text_run_stats(FILE *f, const struct run_result *run)
{
    const struct run_summary *s = &run->sum;
    const struct stats *st = &s->epoch_ms;
    char over[64];
    if (s->round_ms.n > 1)
        snprintf(over, sizeof over, "of its %d rounds' medians", run->n_rounds);
    else
        snprintf(over, sizeof over, "over %d epochs", run->n_epochs);
    fprintf(f, "# median epoch %.4f ms ± %.4f (95%% CI of the median %.4f-%.4f%s) %s, %.0f "
               "samples/s%s\n",
            1e3 * s->median_s, 0.5 * (s->ci95_ms[1] - s->ci95_ms[0]), s->ci95_ms[0],
            s->ci95_ms[1], s->ci_exact ? "" : s->round_ms.n > 1 ? ", min-max: too few rounds for 95%"
                                                                : ", min-max: too few epochs for 95%",
            over, s->samples_per_s, report_emulated_tag(run));
    fprintf(f, "# epoch ms: mean %.4f ± %.4f sd, min %.4f, p90 %.4f, p99 %.4f, max %.4f "
               "(%d epochs)\n",
            st->mean, st->stddev, st->min, st->p90, st->p99, st->max, run->n_epochs);
}

/* One run: its epoch table, then its figures and the verdict. */
static void text_single(FILE *f, const struct results *r)
{
    char verdict[512];
    const struct run_result *run = &r->runs[0];
    const struct run_summary *s = &run->sum;
    const char *tag = report_emulated_tag(run);
    text_epochs(f, run);
    text_run_stats(f, run);
    if (!isnan(s->copy_gbps))
        fprintf(f, "# copy: %.2f GB/s, %.0f%% hidden behind compute%s\n", s->copy_gbps,
                100 * s->overlap, tag);
    if (!isnan(s->host_us))
        fprintf(f, "# host overhead: %.1f us per step issuing device work, %.1f per replica\n",
                s->host_us, s->host_us / run->replicas);
    text_floor(f, run);
    report_ddp_text(f, run);
    report_verdict(r, 0, verdict, sizeof verdict);
    fprintf(f, "# verdict: %s\n", verdict);
    if (!isnan(s->au))
        fprintf(f, "# AU (compute time / epoch time): %.0f%%%s\n", 100 * s->au, tag);
    report_emulated_text(f, run);
    if (run->stopped[0])
        fprintf(f, "# stopped: %s\n", run->stopped);
}

/* A sweep's per-point details (--verbose): floor, verdict, device. */
static void text_details(FILE *f, const struct results *r)
{
    char verdict[512];
    for (int i = 0; i < r->n_runs; i++)
        text_floor(f, &r->runs[i]);
    for (int i = 0; i < r->n_runs; i++) {
        if (r->runs[i].same)
            continue;
        report_verdict(r, i, verdict, sizeof verdict);
        fprintf(f, "# %s: %s\n", r->runs[i].label, verdict);
        report_emulated_text(f, &r->runs[i]);
    }
}

/* A sweep: the point table, the notes, the details with --verbose, the
 * points a stop cut short. */
static void text_sweep(FILE *f, const struct results *r)
{
    table_head(f, r);
    for (int i = 0; i < r->n_runs; i++)
        table_row(f, r, i);
    text_notes(f, r);
    if (r->cfg.report.verbose)
        text_details(f, r);
    for (int i = 0; i < r->n_runs; i++)
        if (r->runs[i].stopped[0])
            fprintf(f, "# %s: stopped: %s\n", r->runs[i].label, r->runs[i].stopped);
}

/* One knob's effect in words. */
static void knob_text(const struct results *r, const struct knob_effect *k, char *buf,
                      size_t n)
{
    char v[CONFIG_STR];
    config_get_text(&r->runs[k->run].cfg, k->key, v, sizeof v);
    const struct ratio *q = &k->vs;
    if (k->same_work)
        snprintf(buf, n, "%s: no effect here (%s does the same work)", k->key, v);
    else if (isnan(q->ci95[0]))
        snprintf(buf, n, "%s: %s instead %.2fx the time, undecided (%d round%s: an interval "
                 "needs 6)", k->key, v, q->ratio, q->units, q->units == 1 ? "" : "s");
    else if (q->verdict == VERDICT_SAME)
        snprintf(buf, n, "%s: no measurable effect here (%s instead %.2fx the time, %.2f-%.2f)",
                 k->key, v, q->ratio, q->ci95[0], q->ci95[1]);
    else
        snprintf(buf, n, "%s: %s instead %.2fx the time, %.2f-%.2f, %s", k->key, v, q->ratio,
                 q->ci95[0], q->ci95[1],
                 q->verdict == VERDICT_SLOWER ? "slower" : verdict_name(q->verdict));
}

/* "# conclusion: fastest POINT (X ms); KEY: ...; KEY: ..." */
static void text_conclusion(FILE *f, const struct results *r)
{
    const struct conclusion *c = &r->conclusion;
    if (c->fastest < 0)
        return;
    const struct run_result *best = &r->runs[c->fastest];
    int first = report_measured(r, 0);
    struct ratio q = {.units = 0};
    if (c->fastest != first) // how it was chosen: paired per round, as the verdicts
        report_pair(r, first, c->fastest, &q);
    if (q.units >= 2 && isfinite(q.ratio))
        fprintf(f, "# conclusion: fastest %s (%.3gx the first point's time, paired per round; "
                "median epoch %.4f ms)", best->label, q.ratio, 1e3 * best->sum.median_s);
    else
        fprintf(f, "# conclusion: fastest %s (median epoch %.4f ms)", best->label,
                1e3 * best->sum.median_s);
    for (int s = 0; s < c->n_knobs; s++) {
        char k[640];
        if (c->knobs[s].run < 0)
            continue;
        knob_text(r, &c->knobs[s], k, sizeof k);
        fprintf(f, "; %s", k);
    }
    fprintf(f, "\n");
}

/* After either: the held-out evaluation, the warnings, the memory, and what
 * a stop or a failure left out. */
static void text_footer(FILE *f, const struct results *r)
{
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        if (run->eval.done)
            fprintf(f, "# eval%s%s: loss %.6g, accuracy %.2f%% on %ld samples\n",
                    run->label[0] ? " " : "", run->label, run->eval.loss,
                    100 * run->eval.accuracy, run->eval.samples);
    }
    text_warnings(f, r);
    fprintf(f, "# peak RSS %.1f MiB\n", r->peak_rss_bytes / (1 << 20));
    /* partial results: an error mid-run (failed: a run's, or bad data's that ended
     * the rounds) or a signal (interrupted: this rank's, or another's under ddp) */
    bool failed = r->rounds_end && strcmp(r->rounds_end, "failed") == 0;
    for (int i = 0; i < r->n_runs; i++)
        failed |= r->runs[i].failed;
    const char *why = failed ? "failed" : "interrupted";
    if (r->interrupted && r->n_points > 1)
        fprintf(f, "# %s: %d of %ld points reported, after %d complete round%s\n", why,
                r->n_runs, r->n_points, r->rounds, r->rounds == 1 ? "" : "s");
    else if (r->interrupted && r->runs[0].n_rounds <= 1)
        fprintf(f, "# %s: %d of %ld epochs reported\n", why, r->runs[0].n_epochs,
                r->runs[0].cfg.train.epochs);
    else if (r->interrupted)
        fprintf(f, "# %s: %d epochs reported, after %d complete round%s\n", why,
                r->runs[0].n_epochs, r->rounds, r->rounds == 1 ? "" : "s");
}

/* "# rounds: 8 (decided): ..." when the points ran in rounds */
static void text_rounds(FILE *f, const struct results *r)
{
    if (r->rounds <= 1 && r->n_runs <= 1)
        return;
    bool cut = r->rounds_end && !strcmp(r->rounds_end, "stopped"); // in a round: its points ran
    fprintf(f, "# rounds: %d%s (%s); each round runs every point once, in an order shuffled "
               "per round; a verdict's unit is the round; noise threshold %.3g%%\n", r->rounds,
            cut ? " complete" : "", r->rounds_end ? r->rounds_end : "-", 100 * r->cfg.bench.threshold);
}

/* The trials: the model's epoch, the measured one, the time paired per round */
static void text_tune_trials(FILE *f, const struct results *r)
{
    int w = label_width(r);
    bool minmax = false;
    fprintf(f, "%5s  %-*s  %6s  %9s  %9s  %19s  %19s  %5s  %-8s  %s\n", "trial", w, "settings",
            "rounds", "model ms", "median ms", "95% interval (ms)", "time / given's", "AU",
            "bound", "decision");
    for (int i = 0; i < r->n_runs; i++) {
        const struct run_result *run = &r->runs[i];
        const struct tune_trial_info *t = &r->tune->trials[i];
        struct tune_cells c;
        report_tune_cells(r, i, &c);
        minmax |= c.minmax;
        fprintf(f, "%5d  %-*s  %6d  %9s  %9s  %19s  %19s  %5s  %-8s  %s\n", i, w, run->label,
                t->rounds, c.model, c.median, c.ci, c.vs, c.au, c.bound, t->decision);
    }
    if (minmax)
        fprintf(f, "# *: min-max, too few epochs or rounds for a 95%% interval\n");
}

static int text_tune(FILE *f, const struct results *r)
{
    const struct tune_result *t = r->tune;
    const struct pipeline_costs *c = &t->costs;
    text_header(f, r);
    fprintf(f, "# --tune: %s (max_workers %ld, budget %g s): %.1f s of trials\n", t->target_au > 0
            ? "the cheapest settings reaching the target AU" : "the fastest epoch", t->max_workers,
            t->budget_s, t->seconds);
    if (t->batches)
        fprintf(f, "# profile, per batch: load %.3f ms on one thread, hand-off %.3f ms at each "
                "end (+%.3f ms a thread beyond the cores), step %.3f ms (+%.3f ms the loop's own), device %.3f ms, "
                "copy %.3f ms pageable, %.3f ms pinned; %.0f core%s; %d settings predicted (JSON: "
                "tune.predicted)\n", 1e3 * c->load, 1e3 * c->handoff, 1e3 * c->contend, 1e3 * c->host,
                1e3 * c->loop, 1e3 * c->compute, 1e3 * c->copy[0], 1e3 * c->copy[1], c->cores,
                c->cores == 1 ? "" : "s", t->n_space);
    for (int i = 0, n = 0; i < TUNE_N_COSTS; i++) // what no profile run measured
        if (t->assumed >> i & 1)
            fprintf(f, "%s%s", n++ ? ", " : "# not measured, taken as above (JSON names): ",
                    tune_cost_names[i]);
    if (t->assumed)
        fputc('\n', f);
    text_tune_trials(f, r);
    text_rounds(f, r);
    text_warnings(f, r);
    return report_tune_choice(f, r, "# ", "#   "), 0;
}

int report_text(FILE *f, const struct results *r)
{
    if (r->n_runs == 0)
        return 0;
    if (r->tune)
        return text_tune(f, r);
    bool table = r->n_runs > 1; // a sweep's: one row per point
    text_header(f, r);
    if (!table)
        text_notes(f, r);
    text_rounds(f, r);
    text_header_tail(f, r);
    if (r->n_runs == 1 && r->runs[0].n_epochs == 0) { // failed before an epoch completed
        fprintf(f, "# no complete epoch\n");
        if (r->runs[0].stopped[0])
            fprintf(f, "# stopped: %s\n", r->runs[0].stopped);
    } else if (!table) {
        text_single(f, r);
    } else {
        text_sweep(f, r);
    }
    text_footer(f, r);
    text_conclusion(f, r);
    return 0;
}
