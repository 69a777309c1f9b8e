/* `dpbench compare`: pairs the points of A and B and decides each pair on
 * the best unit the files allow (compare.h), with the noise threshold;
 * says what the files themselves say (a stop, warnings) and where they
 * differ (machine, build, load, BLAS). */
#include "compare.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

const char *compare_unit_name(enum compare_unit u)
{
    static const char *const names[] = {"interleaved rounds", "rounds of separate runs",
                                        "epochs of one run"};
    return names[u];
}

/* Pairs the points: one each of one workload whatever their settings, else
 * by workload and settings, each point at most once; the two points a user
 * chose (compare -c) whatever they differ in (the differences listed).
 * Returns the pairs. */
static int match(struct compare_file *a, struct compare_file *b, struct compare_pair *pairs,
                 bool chosen)
{
    int n = 0;
    bool single = a->n == 1 && b->n == 1;
    for (int i = 0; i < a->n; i++) {
        struct compare_point *pa = &a->pts[i];
        for (int j = 0; j < b->n && !pa->paired; j++) {
            struct compare_point *pb = &b->pts[j];
            bool work = chosen || (pa->hash[0] == pb->hash[0] &&
                                   compare_same(pa->workload, pb->workload));
            if (pb->paired || pa->n == 0 || pb->n == 0 || !work ||
                (!single && (pa->hash[1] != pb->hash[1] || !compare_same(pa->settings, pb->settings))))
                continue;
            pa->paired = pb->paired = true;
            struct compare_pair *p = &pairs[n++];
            p->a = pa;
            p->b = pb;
            p->n_workload_diffs = compare_diffs(pa->workload, pb->workload, "", p->diffs, 0,
                                                COMPARE_MAX_DIFFS);
            p->n_diffs = p->n_workload_diffs;
            p->n_diffs = compare_diffs(pa->settings, pb->settings, "", p->diffs, p->n_diffs,
                                       COMPARE_MAX_DIFFS);
        }
    }
    return n;
}

const char *compare_point_name(const struct compare_point *p) { return p->label[0] ? p->label : "(base)"; }

/* Why an unpaired point found no partner in other: the first workload
 * difference from other's first point when no point there has its workload,
 * else the first setting that differs from one that has, else that those
 * points are paired already. */
void compare_unmatched_why(const struct compare_point *p, const struct compare_file *other, char *buf,
                          size_t n)
{
    char d[1][256];
    const struct compare_point *q = &other->pts[0];
    if (p->n == 0) {
        snprintf(buf, n, "no measured epoch (the run %s before one completed)",
                 p->failed ? "failed" : "stopped");
        return;
    }
    for (int j = 0; j < other->n; j++)
        if (p->hash[0] == other->pts[j].hash[0] &&
            compare_same(p->workload, other->pts[j].workload))
            q = &other->pts[j];
    if (other->n == 1 && q->n == 0 && (other->interleaved || compare_same(p->workload, q->workload)))
        snprintf(buf, n, "its partner there has no measured epoch"); // its only one (compare -c's)
    else if (compare_diffs(p->workload, q->workload, "", d, 0, 1))
        snprintf(buf, n, "different workload (%s)", d[0]);
    else if (compare_diffs(p->settings, q->settings, "", d, 0, 1))
        snprintf(buf, n, "same workload, other settings (%s)", d[0]);
    else if (q->n == 0)
        snprintf(buf, n, "its partner there has no measured epoch");
    else
        snprintf(buf, n, "the points of its workload and settings there are paired already");
}

/* Pair p over the rounds both ran (interleaved), matched by round number. */
static void decide_paired(const struct compare_pair *p, double threshold, double alpha,
                          struct ratio *q)
{
    const struct compare_point *a = p->a, *b = p->b;
    int n = a->n_rounds < b->n_rounds ? a->n_rounds : b->n_rounds, k = 0;
    double *x = malloc((size_t)(n ? n : 1) * sizeof *x), *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    for (int i = 0, j = 0; x && y && i < a->n_rounds && j < b->n_rounds;) {
        if (a->round_of[i] < b->round_of[j]) {
            i++;
        } else if (b->round_of[j] < a->round_of[i]) {
            j++;
        } else {
            x[k] = a->round_ms[i++];
            y[k++] = b->round_ms[j++];
        }
    }
    stats_paired(x ? x : (double[1]){0}, y ? y : (double[1]){0}, (size_t)k, threshold, alpha, q);
    free(x);
    free(y);
}

/* A side that ran once: its epochs, a bootstrap interval of the ratio of
 * medians and the Mann-Whitney test; faster / slower needs both the test
 * (p < 0.05) and the interval beyond the threshold. */
static void decide_epochs(struct compare_pair *p, double threshold)
{
    struct comparison c;
    stats_compare(p->a->ms, (size_t)p->a->n, p->b->ms, (size_t)p->b->n, &c);
    p->q = (struct ratio){.ratio = c.ratio, .ci95 = {c.ci95[0], c.ci95[1]},
                          .units = p->a->n < p->b->n ? p->a->n : p->b->n,
                          .threshold = threshold, .units_needed = -1};
    p->q.verdict = stats_decide(p->q.ci95, threshold);
    if ((p->q.verdict == VERDICT_FASTER || p->q.verdict == VERDICT_SLOWER) && !(c.p_value < 0.05))
        p->q.verdict = VERDICT_UNDECIDED;
    p->p_value = c.p_value;
}

/* A verdict of separate runs held back: they ran under clearly different
 * load, or too briefly to hold the machine's drift between runs. */
static void hold_back(const struct compare_result *r, struct compare_pair *p)
{
    double oa = p->a->others_cpu, ob = p->b->others_cpu;
    if (p->unit == COMPARE_INTERLEAVED ||
        (p->q.verdict != VERDICT_FASTER && p->q.verdict != VERDICT_SLOWER))
        return;
    if (fabs(oa - ob) > LOAD_DIFFERENT)
        snprintf(p->why, sizeof p->why, "%s %.2fx, but they ran under clearly different load "
                 "(other processes took %.0f%% of the CPUs during A, %.0f%% during B)",
                 verdict_name(p->q.verdict), p->q.ratio, 100 * oa, 100 * ob);
    else if (p->unit == COMPARE_RUNS && fmin(r->a.span_s, r->b.span_s) < COMPARE_MIN_SPAN_S)
        snprintf(p->why, sizeof p->why, "%s %.2fx, but the runs measured for %.3g s and %.3g s, "
                 "too short to hold the machine's drift between runs (%.0f s each at least); "
                 "run them interleaved: dpbench compare -c A.yaml -c B.yaml",
                 verdict_name(p->q.verdict), p->q.ratio, r->a.span_s, r->b.span_s,
                 COMPARE_MIN_SPAN_S);
    else
        return;
    p->q.verdict = VERDICT_UNDECIDED;
}

static void decide(const struct compare_result *r, struct compare_pair *p)
{
    p->p_value = NAN;
    if (r->interleaved) {
        p->unit = COMPARE_INTERLEAVED;
        decide_paired(p, r->threshold, r->alpha, &p->q);
    } else if (p->a->n_rounds >= 2 && p->b->n_rounds >= 2) {
        p->unit = COMPARE_RUNS;
        stats_unpaired(p->a->round_ms, (size_t)p->a->n_rounds, p->b->round_ms,
                       (size_t)p->b->n_rounds, r->threshold, &p->q);
    } else {
        p->unit = COMPARE_EPOCHS;
        decide_epochs(p, r->threshold);
    }
    hold_back(r, p);
    if (p->a->blas[0] && p->b->blas[0] && strcmp(p->a->blas, p->b->blas) != 0)
        snprintf(p->blas, sizeof p->blas, "%s vs %s", p->a->blas, p->b->blas);
}

double compare_median(const struct compare_point *p, enum compare_unit unit)
{
    if (unit == COMPARE_EPOCHS || p->n_rounds == 0)
        return p->st.median;
    double *m = malloc((size_t)p->n_rounds * sizeof *m), med = NAN;
    if (m) {
        memcpy(m, p->round_ms, (size_t)p->n_rounds * sizeof *m);
        med = stats_median(m, (size_t)p->n_rounds);
    }
    free(m);
    return med;
}

const char *compare_verdict_text(const struct compare_pair *p, char *buf, size_t n)
{
    const char *v = verdict_name(p->q.verdict);
    if (p->unit == COMPARE_EPOCHS && p->q.verdict != VERDICT_UNDECIDED)
        snprintf(buf, n, "%s within run noise; not interleaved", v);
    else
        snprintf(buf, n, "%s", v);
    return buf;
}

__attribute__((format(printf, 2, 3)))
static void note(struct compare_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (r->n_notes < COMPARE_MAX_NOTES)
        vsnprintf(r->notes[r->n_notes++], sizeof r->notes[0], fmt, ap);
    else
        r->n_left_out++;
    va_end(ap);
}

/* What the files say of themselves, and where they differ. */
static void notes(struct compare_result *r)
{
    const struct compare_file *f[2] = {&r->a, &r->b};
    bool same = !r->interleaved && r->a.doc && r->b.doc && compare_same(r->a.doc, r->b.doc);
    bool one = same || r->interleaved; // one document: its warnings once
    const char *const side[2] = {r->interleaved ? "the run" : same ? "A and B" : "A", "B"};
    if (same) // first: the notes about both files, then each file's own
        note(r, "A and B are the same result: a run set against itself shows no noise; for an "
             "A/A check run the config twice, or compare -c it.yaml -c it.yaml");
    if (!r->interleaved && strcmp(r->a.machine, r->b.machine) != 0)
        note(r, "A and B ran on different machines: %s vs %s", r->a.machine, r->b.machine);
    if (!r->interleaved && strcmp(r->a.tool, r->b.tool) != 0)
        note(r, "A and B come from different builds: %s vs %s", r->a.tool, r->b.tool);
    if (r->interleaved && r->a.interrupted) // compare -c: one run held both
        note(r, "the run was cut short (a stop, or a run that failed): the verdicts stand on "
             "the rounds that ran, fewer than asked");
    for (int s = 0; s < 2 - one; s++) {
        if (f[s]->interrupted && !r->interleaved)
            note(r, "%s (%s) was cut short (a stop, or a run that failed): its points may "
                 "have fewer epochs or rounds than asked", side[s], f[s]->path);
        const cJSON *w;
        cJSON_ArrayForEach(w, f[s]->warnings)
        if (cJSON_IsString(w))
            note(r, "%s warn%s: %s", side[s], same ? "" : "s", w->valuestring);
    }
    if (r->n_left_out) // the last note makes room for how many there were
        snprintf(r->notes[COMPARE_MAX_NOTES - 1], sizeof r->notes[0], "%d more warnings left "
                 "out here: each file's \"warnings\" has all of its own", ++r->n_left_out);
}

static int pair_all(struct compare_result *r, struct error *e)
{
    r->pairs = calloc((size_t)(r->a.n < r->b.n ? r->a.n : r->b.n), sizeof *r->pairs);
    if (!r->pairs)
        return error_set(e, "out of memory");
    r->n_pairs = match(&r->a, &r->b, r->pairs, r->interleaved);
    for (int i = 0; i < r->n_pairs; i++)
        decide(r, &r->pairs[i]);
    notes(r);
    return 0;
}

int compare_read(struct compare_result *r, const char *path_a, const char *path_b,
                 double threshold, struct error *e)
{
    *r = (struct compare_result){.threshold = threshold};
    if (compare_file_read(&r->a, path_a, e) || compare_file_read(&r->b, path_b, e))
        return -1;
    return pair_all(r, e);
}

int compare_docs(struct compare_result *r, const cJSON *a, const cJSON *b, const char *name_a,
                 const char *name_b, double threshold, struct error *e)
{
    *r = (struct compare_result){.threshold = threshold};
    if (compare_file_from(&r->a, a, name_a, -1, e) || compare_file_from(&r->b, b, name_b, -1, e))
        return -1;
    return pair_all(r, e);
}

int compare_interleaved(struct compare_result *r, struct cJSON *doc, const char *name_a,
                        const char *name_b, double threshold, struct error *e)
{
    *r = (struct compare_result){.threshold = threshold, .interleaved = true, .alpha = 0.05};
    r->a.doc = doc; // a frees it
    const cJSON *alpha = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "rounds"), "alpha");
    if (cJSON_IsNumber(alpha) && alpha->valuedouble > 0 && alpha->valuedouble <= 0.05)
        r->alpha = alpha->valuedouble; // the run looked at its verdicts that often
    if (compare_file_from(&r->a, doc, name_a, 0, e) || compare_file_from(&r->b, doc, name_b, 1, e))
        return -1;
    r->a.interleaved = r->b.interleaved = true;
    return pair_all(r, e);
}

void compare_free(struct compare_result *r)
{
    free(r->pairs);
    compare_file_free(&r->a);
    compare_file_free(&r->b);
    memset(r, 0, sizeof *r);
}
