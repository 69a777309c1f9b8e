/* The --tune search (tune.h): profile, predict, race, confirm, as
 * docs/tune.md gives the method and its reasons. It only decides: the
 * trials are the caller's (tune_trial_fn). */
#include "tune.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "effect.h"
#include "progress.h"

#define CANDIDATES 3   // raced besides the config as given
#define ROUND_S 0.02   // a race round measures each point about this long (whole epochs)
#define MIN_ROUNDS 9   // the race's first look, and
#define MAX_ROUNDS 16  // its cap
#define MIN_EPOCH_S 1e-3 // a shorter median epoch: thread start-up outweighs any setting
#define PROFILE_S 0.5  // a profile run measures at least 2 epochs, and this long (10 at most)

/* each knob's key and the values tried where it acts (num_workers: 0 to max_workers) */
static const struct { const char *key; int n; long v[5]; } knob[TUNE_N_KNOBS] = {
    {"loader.num_workers", 0, {0}},           {"loader.prefetch_factor", 5, {1, 2, 4, 8, 16}},
    {"loader.persistent_workers", 2, {0, 1}}, {"loader.pin_memory", 2, {0, 1}},
    {"loader.async_copy", 2, {0, 1}},         {"loader.copy_depth", 4, {1, 2, 4, 8}}};
#define KNOB_NAME(k) (knob[k].key + strlen("loader."))
const char *tune_knob_key(enum tune_knob k) { return knob[k].key; }
#define SEARCHES(o, knob) ((o)->knobs >> (knob) & 1)

static bool acts(const struct tune_options *o, int knob, const struct pipeline_knobs *k)
{
    struct config c = *o->base; // shallow: only the loader's fields are read
    pipeline_knobs_apply(k, &c);
    return effect_knob_acts(o->be, tune_knob_key(knob), &c);
}

/* The knobs that act for k as text: "num_workers=2 prefetch_factor=4 ...". */
static void knobs_text(const struct tune_options *o, const struct pipeline_knobs *k, char *buf,
                       size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "num_workers=%ld", k->num_workers);
    for (int i = 1; i < TUNE_N_KNOBS && used < n; i++) // the flags as true or false
        if (acts(o, i, k))
            used += (size_t)snprintf(buf + used, n - used, knob[i].n == 2 ? " %s=%s" : " %s=%.0s%ld",
                                     KNOB_NAME(i), k->v[i] ? "true" : "false", k->v[i]);
}

/* What a setting costs: workers, then prefetch, then persistence. */
static long cost_of(const struct pipeline_knobs *k)
{
    return (k->num_workers * 32 + k->prefetch_factor) * 2 + k->persistent_workers;
}

enum step { STEP_ON, STEP_DONE, STEP_STOPPED, STEP_FAILED }; // DONE: the outcome is known

struct search {
    const struct tune_options *o;
    tune_trial_fn trial;
    void *ctx;
    struct results *res;       // its runs are the trials
    struct tune_result *t;     // res->tune
    struct pipeline_knobs given;
    bool workers;              // the search may change num_workers (and has some to try)
    int race[TUNE_MAX_TRIALS];      // the runs raced; race[0] = 0, the config as given
    bool out[TUNE_MAX_TRIALS];      // left the race
    int n_race, epochs[TUNE_MAX_TRIALS]; // the points raced, and each one's epochs a round
    bool undecidable;          // the race ended where its cap could decide nothing open
    int failed;                // the trial whose call failed (-1: none)
    double t0;
    struct error *e;
};
#define DECISION(s, i) (s)->t->trials[i].decision, sizeof (s)->t->trials[i].decision

static double clock_of(void *search)
{
    const struct search *s = search;
    return s->o->clock ? s->o->clock(s->ctx) : now_seconds();
}

static bool spent(struct search *s) { return clock_of(s) - s->t0 >= s->o->budget_s; }

/* The outcome, the run recommended (-1: none) and why, printf-style. */
__attribute__((format(printf, 4, 5)))
static enum step conclude(struct search *s, enum tune_outcome outcome, int best, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->t->statement, sizeof s->t->statement, fmt, ap);
    va_end(ap);
    s->t->outcome = outcome, s->t->best = best;
    return STEP_DONE;
}

static int trial_of(const struct search *s, const struct pipeline_knobs *k)
{
    for (int i = 0; i < s->res->n_runs; i++) {
        struct pipeline_knobs have = pipeline_knobs_of(&s->res->runs[i].cfg);
        if (!memcmp(have.v, k->v, sizeof k->v))
            return i;
    }
    return -1;
}

/* Whether settings k[0..n-1] held open together fit o->max_bytes: the dataset
 * and the runtime once, each one's model, results and loader, its batch pool
 * as its settings size it (o->est: the config as given's). */
static bool fits(const struct search *s, const struct pipeline_knobs *k, int n)
{
    const struct estimate *b = &s->o->est;
    double sum = (double)(b->dataset + b->runtime);
    for (int i = 0; i < n; i++)
        sum += (double)(b->model + b->results + b->loader) +
               (double)(pipeline_pool(&k[i]) - pipeline_pool(&s->given)) * (double)b->batch;
    return s->o->max_bytes == 0 || sum <= (double)s->o->max_bytes;
}

/* The trial of settings k: an earlier one, or a new run (the base config
 * with k, labelled with the knobs that act). -1 with e set. */
static int add_trial(struct search *s, const struct pipeline_knobs *k)
{
    int i = trial_of(s, k);
    if (i >= 0 || s->res->n_runs == TUNE_MAX_TRIALS)
        return i;
    struct run_result *run = &s->res->runs[s->res->n_runs];
    if (config_copy(&run->cfg, s->o->base))
        return error_set(s->e, "out of memory");
    pipeline_knobs_apply(k, &run->cfg);
    knobs_text(s->o, k, run->label, sizeof run->label);
    return s->res->n_runs++;
}

/* Trial i measures `epochs` more as round r's k-th point (-1: a profile
 * turn, paired with none), after the config's warm-up epochs, one at least,
 * at its first call (a first epoch is 5% faster to 8% slower than its next);
 * epochs 0: its run ends (memory, threads), to be called no more. The
 * trial's 0, 1 (a stop) or -1 (e set). */
static int call(struct search *s, int i, int r, int k, int epochs)
{
    struct run_result *run = &s->res->runs[i];
    int warmup = run->n_epochs || !epochs ? 0 : (int)fmax(1, (double)s->o->base->train.warmup_epochs);
    int rc = s->trial(s->ctx, run, r, k, warmup, epochs, epochs ? s->e : &(struct error){{0}});
    s->failed = rc < 0 && epochs ? i : s->failed;
    return rc;
}

static enum step profile_run(struct search *s, int i, int epochs)
{
    int rc = i < 0 ? -1 : call(s, i, -1, 0, epochs);
    return rc < 0 ? STEP_FAILED : rc ? STEP_STOPPED : STEP_ON;
}

/* Every setting in reach (the knobs searched over their values where they
 * act, the others as given), estimated: its prediction, or its profile
 * run's median where lower beyond the noise threshold; the config as
 * given's, also where higher (always raced, its rank only decides whether
 * the others are). */
static void space_walk(struct search *s, struct pipeline_knobs k, int i)
{
    struct tune_result *t = s->t;
    if (i == TUNE_N_KNOBS) {
        int run = trial_of(s, &k);
        const struct run_result *r = run >= 0 ? &s->res->runs[run] : NULL;
        double p = pipeline_epoch(&t->costs, &k, t->batches);
        double m = r && r->n_epochs ? epochs_median(r->epochs, r->n_epochs) : p;
        double thr = s->o->base->bench.threshold;
        t->space[t->n_space++] = (struct tune_setting){
            .k = k, .predicted_s = p, .predicted_au = pipeline_au(&t->costs, &k, t->batches),
            .estimate_s = m < p * (1 - thr) || (run == 0 && m > p * (1 + thr)) ? m : p};
        return;
    }
    int n = !SEARCHES(s->o, i) || !acts(s->o, i, &k) ? 0
            : i == TUNE_WORKERS ? (int)s->o->max_workers + 1 : knob[i].n;
    for (int j = 0; j < (n ? n : 1); j++) { // n == 0: as given
        k.v[i] = n == 0 ? s->given.v[i] : i == TUNE_WORKERS ? j : knob[i].v[j];
        space_walk(s, k, i + 1);
    }
}

/* The settings' order, lowest keys first. Fastest: the estimate (within
 * 0.5% a tie), then the tie order of docs/tune.md. Target AU: the cheapest,
 * the highest AU. */
static void rank_keys(const struct search *s, const struct tune_setting *x, double key[5])
{
    int changed = 0;
    for (int i = TUNE_PREFETCH; i < TUNE_N_KNOBS; i++)
        changed += x->k.v[i] != s->given.v[i];
    if (s->o->target_au > 0)
        key[0] = (double)cost_of(&x->k), key[1] = -x->predicted_au, key[2] = key[3] = key[4] = 0;
    else
        key[0] = round(log(x->estimate_s) / log(1.005)), key[1] = (double)x->k.num_workers,
        key[2] = x->k.num_workers > 0 && !x->k.persistent_workers, key[3] = changed,
        key[4] = (((double)cost_of(&x->k) * 128 + (double)x->k.copy_depth) * 2 +
                  (double)x->k.async_copy) * 2 + (double)x->k.pin_memory; // a total order
}

static int ranked(const void *pa, const void *pb, void *search)
{
    double a[5], b[5];
    rank_keys(search, pa, a), rank_keys(search, pb, b);
    for (int i = 0; i < 5; i++)
        if (a[i] != b[i])
            return (a[i] > b[i]) - (a[i] < b[i]);
    return 0;
}

/* The profile: the config as given, then with 0, K - 1 and K workers (at
 * most max_workers; the last with the other pin_memory where that acts),
 * taking turns in up to three rounds, each the other way round. */
static enum step profile(struct search *s)
{
    struct pipeline_knobs k = s->given, other[3];
    int n = 0, pts[4] = {0};
    enum step st = profile_run(s, add_trial(s, &k), 2);
    snprintf(DECISION(s, 0), "the config as given");
    if (st != STEP_ON)
        return st;
    double median = epochs_median(s->res->runs[0].epochs, s->res->runs[0].n_epochs);
    int epochs = (int)fmin(10, fmax(2, ceil(PROFILE_S / median))); // NAN: 2
    if (!(median >= MIN_EPOCH_S)) // NAN too
        return conclude(s, TUNE_TOO_SHORT, -1, "too short to measure: the median epoch takes "
                        "%.3f ms, under %.1f ms, where thread start-up and scheduling outweigh "
                        "any loader setting; give the epoch more work (dataset.length, a larger "
                        "batch or dataset)", 1e3 * median, 1e3 * MIN_EPOCH_S);
    bool pin = SEARCHES(s->o, TUNE_PIN) && acts(s->o, TUNE_PIN, &k);
    long K = (long)s->o->cores, prev = k.num_workers;
    for (int i = 0; i < 3 && s->workers; i++) {
        long w = (long)fmin((double)(long[]){0, K - 1, K}[i], (double)s->o->max_workers);
        if (w != prev && w != k.num_workers && (i == 0 || w >= 1))
            other[n] = k, other[n++].num_workers = prev = w;
    }
    if (pin && n == 0)
        other[n++] = k;
    struct pipeline_knobs held[4] = {k};
    int m = 0; // the others that fit in memory beside the config as given and those before
    for (int i = 0; i < n; i++) {
        held[m + 1] = other[i];
        if (fits(s, held, m + 2))
            other[m++] = other[i];
    }
    if ((n = m) > 0) // the last kept with the other pin_memory (the same pool)
        other[n - 1].pin_memory ^= pin;
    for (int i = 0; i < n; i++)
        if ((pts[i + 1] = add_trial(s, &other[i])) < 0)
            return STEP_FAILED;
        else
            snprintf(DECISION(s, pts[i + 1]), "profiled: the stage costs beside the config "
                     "as given's");
    int rounds = n == 0 ? 1 : epochs < 3 ? epochs : 3; // one: nothing to take turns with
    int left = epochs - 2;                              // the config as given's still to run
    for (int i = 0; i < rounds * (n + 1) && st == STEP_ON && !spent(s); i++) {
        int t = i / (n + 1), p = t % 2 ? n - i % (n + 1) : i % (n + 1);
        int e = epochs / rounds + (t < epochs % rounds);
        if (p == 0) // the config as given: its first run was this round's
            left -= e = (int)fmax(0, fmin(t ? e : e - 2, left));
        if (e > 0)
            st = profile_run(s, pts[p], e);
    }
    return st;
}

/* The costs measured on the profile's run without workers (else the config
 * as given's), the other pin_memory's copy where a run had it, the rest
 * fitted (the runs with the most workers within the cores and the fewest
 * beyond); then every setting in reach predicted and ranked. */
static enum step predict(struct search *s)
{
    const struct run_result *r = s->res->runs, *a = &r[0], *w = NULL, *over = NULL;
    struct pipeline_costs *c = &s->t->costs, other = {0};
    for (int i = 0; i < s->res->n_runs; i++) {
        long n = r[i].n_epochs ? r[i].cfg.loader.num_workers : -1; // -1: cut by the budget
        a = n == 0 && a->cfg.loader.num_workers ? &r[i] : a;
        if (n > 0 && n + 1 <= s->o->cores && (!w || n > w->cfg.loader.num_workers))
            w = &r[i];
        if (n > 0 && n + 1 > s->o->cores && (!over || n < over->cfg.loader.num_workers))
            over = &r[i];
    }
    bool pin = a->cfg.loader.pin_memory;
    *c = (struct pipeline_costs){.cores = s->o->cores};
    pipeline_measure(a, s->o->be->device_copies, c);
    for (int i = 0; i < s->res->n_runs; i++)
        if (r[i].cfg.loader.pin_memory != pin)
            pipeline_measure(&r[i], s->o->be->device_copies, &other);
    c->copy[!pin] = other.copy[!pin] > 0 ? other.copy[!pin] : c->copy[pin];
    unsigned fitted = pipeline_fit(c, a->cfg.loader.num_workers ? NULL : a, w, over);
    s->t->assumed = (~fitted & 7u) | (unsigned)(s->o->be->device_copies && !(other.copy[!pin] > 0))
                                          << (pin ? TUNE_COST_PAGEABLE : TUNE_COST_PINNED);
    s->t->batches = a->n_batches;
    size_t most = (size_t)s->o->max_workers + 1; // every value of every knob, at most
    for (int i = 1; i < TUNE_N_KNOBS; i++)
        most *= (size_t)knob[i].n;
    if (!(s->t->space = malloc(most * sizeof *s->t->space)))
        return error_set(s->e, "out of memory"), STEP_FAILED;
    space_walk(s, s->given, 0);
    qsort_r(s->t->space, (size_t)s->t->n_space, sizeof *s->t->space, ranked, s);
    return STEP_ON;
}

/* Whether space setting j fits in memory beside the config as given and out[0..n-1]. */
static bool fits_beside(const struct search *s, const int *out, int n, int j)
{
    struct pipeline_knobs k[CANDIDATES + 2] = {s->given};
    for (int i = 0; i < n; i++)
        k[i + 1] = s->t->space[out[i]].k;
    k[n + 1] = s->t->space[j].k;
    return fits(s, k, n + 2);
}

static bool room(const struct search *s) // for a setting in reach beside the config as given
{
    int j = 0;
    while (j < s->t->n_space && (!memcmp(s->t->space[j].k.v, s->given.v, sizeof s->given.v) ||
                                 !fits_beside(s, NULL, 0, j)))
        j++;
    return j < s->t->n_space;
}

/* The candidates (docs/tune.md), never the config as given: the best
 * estimated at W workers, the best at W -+ 1 where its prediction without
 * the hand-off (what the model knows least) beats it or, where the best
 * gains on the config as given, its estimate is within the noise threshold
 * (the profile cannot tell them apart), or the next best where the workers
 * are not searched; target AU: the cheapest predicted to reach it (else the
 * highest AU) and its cheaper and dearer neighbours. */
static int pick(const struct search *s, int *out)
{
    const struct tune_setting *sp = s->t->space;
    const struct run_result *given = s->res->runs;
    struct pipeline_costs free = s->t->costs;
    free.handoff = 0;
    int n = 0, c = 0, m = s->t->n_space;
    double thr = s->o->base->bench.threshold, tie = sp[0].estimate_s * (1 + thr);
    if (!(sp[0].estimate_s < (1 - thr) * epochs_median(given->epochs, given->n_epochs)))
        tie = 0; // the best gains nothing beyond the threshold: no near tie raced
    for (int pass = 0; pass < 3 + !s->workers && s->o->target_au == 0; pass++) // W, W -+ 1, any
        for (int j = 0; j < m && n < CANDIDATES; j++) {
            bool taken = !memcmp(sp[j].k.v, s->given.v, sizeof s->given.v) ||
                         (pass < 3 && sp[j].k.num_workers != sp[0].k.num_workers + (long[]){0, -1, 1}[pass]);
            for (int i = 0; i < n && !taken; i++)
                taken = out[i] == j;
            if (taken || !fits_beside(s, out, n, j))
                continue;
            if (pass == 0 || pass == 3 || sp[j].estimate_s < tie ||
                pipeline_epoch(&free, &sp[j].k, s->t->batches) < sp[0].estimate_s)
                out[n++] = j;
            if (pass < 3)
                break; // one a worker count
        }
    if (s->o->target_au == 0)
        return n;
    while (c < m && sp[c].predicted_au < s->o->target_au)
        c++;
    if (c == m) // none reaches it: the highest AU
        for (int j = c = 0; j < m; j++)
            c = sp[j].predicted_au > sp[c].predicted_au ? j : c;
    int up = c + 1, down = c - 1; // each cost's highest AU
    while (up < m && cost_of(&sp[up].k) == cost_of(&sp[c].k))
        up++;
    while (down > 0 && cost_of(&sp[down - 1].k) == cost_of(&sp[down].k))
        down--;
    int around[3] = {down, c, up < m ? up : -1};
    for (int i = 0; i < 3; i++)
        if (around[i] >= 0 && n < CANDIDATES && fits_beside(s, out, n, around[i]))
            out[n++] = around[i];
    return n;
}

/* A round of point p (one that left the race ends, at no cost). */
static int race_measure(void *search, int p, int r, int k, struct error *e)
{
    struct search *s = search;
    int rc = call(s, s->race[p], r, k, s->out[p] ? 0 : s->epochs[p]);
    s->t->trials[s->race[p]].rounds += rc == 0 && !s->out[p];
    return (void)e, s->out[p] ? 0 : rc;
}

/* The raced point from `from` on with the lowest time paired with the
 * config as given's (the table's estimate; the given's own is 1); -1: none. */
static int leader(const struct search *s, int from)
{
    int best = -1;
    double lowest = NAN;
    for (int p = from; p < s->n_race; p++) {
        struct ratio q = {.ratio = 1};
        if (!s->out[p] && p > 0)
            report_pair(s->res, 0, s->race[p], &q);
        if (!s->out[p] && (best < 0 || q.ratio < lowest || isnan(lowest)))
            best = p, lowest = q.ratio;
    }
    return best;
}

/* Whether q (a candidate over the config as given) could be confirmed
 * faster within the cap at the spread seen (its interval narrowing as one
 * over the root of the rounds); without an interval yet, it could. */
static bool within_cap(const struct ratio *q)
{
    double half = log(q->ci95[1] / q->ci95[0]) / 2, room = log1p(-q->threshold) - log(q->ratio);
    return !isfinite(half) || (room > 0 && q->units * pow(half / room, 2) <= MAX_ROUNDS);
}

/* A look (docs/tune.md, Race): who leaves the race, and whether it ends. */
static bool race_done(void *search, int rounds, double alpha)
{
    struct search *s = search;
    int lead = leader(s, 0), open = 0, futile = 0;
    s->res->alpha = alpha;
    for (int p = 0; p < s->n_race && s->o->target_au == 0; p++) {
        struct ratio q;
        if (s->out[p] || p == lead)
            continue;
        report_pair(s->res, s->race[lead], s->race[p], &q);
        if (p == 0) { // the config as given: out once slower, else decided or not
            bool hopeless = isfinite(q.ci95[0]) && (q.units_needed < 0 || q.units_needed > MAX_ROUNDS);
            s->out[0] = q.verdict == VERDICT_SLOWER;
            open += q.verdict == VERDICT_UNDECIDED && !hopeless;
            futile += q.verdict == VERDICT_UNDECIDED && hopeless;
            continue;
        }
        s->out[p] = q.ci95[0] >= 1 - q.threshold; // NAN (too few rounds): stays
        open += !s->out[p] && lead == 0 && within_cap(&q);
        futile += !s->out[p] && lead == 0 && !within_cap(&q);
        if (s->out[p]) {
            snprintf(DECISION(s, s->race[p]), "left the race after %d rounds: %.2fx the time of "
                     "trial %d [%.2f, %.2f], %s", rounds, q.ratio, s->race[lead], q.ci95[0],
                     q.ci95[1], q.verdict == VERDICT_SLOWER ? "slower" : "no faster beyond the "
                     "noise threshold");
            char note[600];
            snprintf(note, sizeof note, "tune: trial %d (%s) %s", s->race[p],
                     s->res->runs[s->race[p]].label, s->t->trials[s->race[p]].decision);
            progress_note(note);
        }
    }
    s->undecidable = open == 0 && futile > 0;
    return open == 0;
}

/* A round's epochs of a point with epochs of epoch_s: nearest ROUND_S. */
static int round_epochs(const struct search *s, double epoch_s)
{
    long most = s->o->base->train.epochs > 1 ? s->o->base->train.epochs : 1;
    return (int)fmin((double)most, fmax(1, round(ROUND_S / epoch_s))); // NAN: 1
}

/* The config as given and the candidates in interleaved rounds (ROUND_S a point), in the budget left. */
static enum step race(struct search *s, const int *pick, int n, struct rounds_log *log)
{
    const struct run_result *given = &s->res->runs[0];
    double g = epochs_median(given->epochs, given->n_epochs), round_s = round_epochs(s, g) * g;
    for (int i = 0, t; i < n; i++) { // the first round's time: a new trial warms up first
        double x = s->t->space[pick[i]].estimate_s, w = fmax(1, s->o->base->train.warmup_epochs);
        round_s += (round_epochs(s, x) + ((t = trial_of(s, &s->t->space[pick[i]].k)) < 0 ? w : 0)) * x;
    }
    double left = s->o->budget_s - (clock_of(s) - s->t0);
    if (round_s > left)
        return conclude(s, TUNE_KEEP_BUDGET, 0, "tune.budget_s (%g s) left %.3g s after the profile"
                        ", under a race round's %.3g s: nothing raced", s->o->budget_s, left, round_s);
    s->epochs[0] = round_epochs(s, g);
    s->race[s->n_race++] = 0;
    for (int i = 0, k; i < n; i++) {
        if ((k = add_trial(s, &s->t->space[pick[i]].k)) < 0)
            return STEP_FAILED;
        s->race[s->n_race] = k;
        s->epochs[s->n_race] = round_epochs(s, s->t->space[pick[i]].estimate_s);
        s->n_race += k > 0;
    }
    bool raced[TUNE_MAX_TRIALS] = {0};
    for (int p = 0; p < s->n_race; p++)
        raced[s->race[p]] = true;
    for (int i = 0; i < s->res->n_runs; i++) // the profile's runs not raced end
        if (!raced[i])
            call(s, i, -1, 0, 0);
    struct rounds_plan plan = {
        .points = s->n_race, .min_rounds = MIN_ROUNDS, .max_rounds = MAX_ROUNDS,
        .budget_s = fmax(1e-9, left),
        .seed = (unsigned long)s->o->base->seed, .clock = s->o->clock ? clock_of : NULL};
    int rc = rounds_run(&plan, race_measure, race_done, s, log, s->e);
    s->res->rounds = log->rounds;
    s->res->alpha = log->alpha;
    s->res->looks = log->looks;
    s->res->rounds_end = s->undecidable ? "undecidable" : rounds_end_name(log->end);
    s->res->rounds_budget_s = plan.budget_s;
    return rc ? STEP_FAILED : log->end == ROUNDS_STOPPED ? STEP_STOPPED : STEP_ON;
}

/* q's interval as text: "[0.91, 0.97]", or none yet (too few rounds). */
static const char *interval(const struct ratio *q, char buf[40])
{
    if (!isfinite(q->ci95[0]) || !isfinite(q->ci95[1]))
        return "(too few rounds for an interval)";
    snprintf(buf, 40, "[%.2f, %.2f]", q->ci95[0], q->ci95[1]);
    return buf;
}

/* Each raced trial still in: its decision quotes its pair with the config as
 * given (the table's numbers); c's pair returned. */
static struct ratio quote_race(struct search *s, int c)
{
    int lead = leader(s, 0);
    struct ratio g = {.ratio = 1, .ci95 = {1, 1}, .verdict = VERDICT_SLOWER}; // c's
    char ci[40];
    for (int p = 1; p < s->n_race; p++) {
        struct ratio q;
        report_pair(s->res, 0, s->race[p], &q);
        int n = q.units; // the rounds paired with the config as given's (a stop may cut one)
        if (!s->out[p] && n > 0) // none yet (a stop in the first round): as profiled
            snprintf(DECISION(s, s->race[p]), "%s after %d round%s: %.2fx the config as given's "
                     "time %s, %s", p == lead ? "leader" : "raced", n, n == 1 ? "" : "s",
                     q.ratio, interval(&q, ci), verdict_name(q.verdict));
        g = s->race[p] == c ? q : g;
    }
    return g;
}

/* Of c and the raced trials measured faster than the config as given and
 * within the noise threshold of c, the first in the tie order (noise does
 * not choose among equals); q: its pair with the config as given. */
static int cheapest_equal(struct search *s, int c, struct ratio *q)
{
    int best = c;
    for (int p = 1; p < s->n_race; p++) {
        struct tune_setting x = {.estimate_s = 1}, y = {.estimate_s = 1};
        struct ratio same, vs;
        x.k = pipeline_knobs_of(&s->res->runs[s->race[p]].cfg);
        y.k = pipeline_knobs_of(&s->res->runs[best].cfg);
        report_pair(s->res, c, s->race[p], &same);
        report_pair(s->res, 0, s->race[p], &vs);
        if (same.ratio <= 1 + same.threshold && same.verdict != VERDICT_SLOWER &&
            vs.verdict == VERDICT_FASTER && ranked(&x, &y, s) < 0)
            best = s->race[p], *q = vs;
    }
    char ci[40];
    if (best != c)
        snprintf(DECISION(s, best), "chosen over trial %d (the %s): within the noise threshold "
                 "of it and first in the tie order; %.2fx the config as given's time %s, faster",
                 c, s->race[leader(s, 0)] == c ? "leader" : "fastest other", q->ratio,
                 interval(q, ci));
    return best;
}

/* The leader (the fastest other, where the config as given leads) against
 * the config as given, paired over their rounds, decides. */
static void confirm_fastest(struct search *s, bool budget)
{
    struct tune_result *t = s->t;
    int lead = leader(s, 0), other = leader(s, 1), c = s->race[lead ? lead : other > 0 ? other : 0];
    struct ratio g = quote_race(s, c);
    char ci[40];
    // undecided: open, unless the config as given leads and c is no faster beyond the threshold
    bool open = g.verdict == VERDICT_UNDECIDED && (lead > 0 || g.ratio < 1 - g.threshold || budget);
    char more[200]; // what would decide it
    snprintf(more, sizeof more, budget ? "; a larger tune.budget_s would let the race run on"
             : "; at the spread seen the race's cap (%d rounds) would not decide it: a quieter "
               "machine or longer epochs (train.epochs) would", MAX_ROUNDS);
    t->gain = (struct ratio){.ratio = 1, .ci95 = {1, 1}, .units = g.units};
    if (g.verdict == VERDICT_FASTER)
        t->outcome = TUNE_CHANGE, t->best = cheapest_equal(s, c, &g), t->gain = g;
    else if (c == 0)
        conclude(s, TUNE_KEEP_FASTEST, 0, "nothing measured faster: every setting raced left "
                 "the race, none faster than the config as given beyond the noise threshold");
    else
        conclude(s, !open ? TUNE_KEEP_FASTEST : budget ? TUNE_KEEP_BUDGET : TUNE_KEEP_NOISY, 0,
                 "%s: %s, trial %d, took %.2fx the config as given's time %s over %d "
                 "round%s, %s the %.0f%% noise threshold%s", !open ? "nothing measured faster"
                 : budget ? "tune.budget_s ended the race" : "too noisy to decide",
                 lead ? "the leader" : "the fastest other", c, g.ratio, interval(&g, ci),
                 g.units, g.units == 1 ? "" : "s", !open ? "not faster beyond" : isfinite(g.ci95[0])
                 ? "an interval reaching into" : "no interval to set beside", 100 * g.threshold,
                 !open ? "" : more);
}

/* The cheapest raced setting whose measured AU (the result's) reaches the target. */
static void confirm_target(struct search *s)
{
    int top = 0, best = -1;
    for (int p = 0; p < s->n_race; p++) {
        int i = s->race[p];
        struct pipeline_knobs a = pipeline_knobs_of(&s->res->runs[i].cfg),
                              b = pipeline_knobs_of(&s->res->runs[best < 0 ? i : best].cfg);
        report_summarize_run(s->res, i);
        double au = s->res->runs[i].sum.au;
        char v[32];
        snprintf(DECISION(s, i), "measured AU %s, %s %g", report_au_text(au, s->o->target_au, v),
                 au >= s->o->target_au ? "reaches" : "below", s->o->target_au);
        best = au >= s->o->target_au && (best < 0 || cost_of(&a) < cost_of(&b)) ? i : best;
        top = s->res->runs[i].sum.au > s->res->runs[top].sum.au ? i : top;
    }
    enum bound bound = report_run_bound(&s->res->runs[top]); // "balanced", "input-bound"
    char v[32];
    if (best == 0) // the config as given: why it is kept
        snprintf(s->t->statement, sizeof s->t->statement, "the cheapest setting raced whose "
                 "measured AU (%s) reaches %g", report_au_text(s->res->runs[0].sum.au, s->o->target_au, v),
                 s->o->target_au);
    if (best >= 0)
        s->t->outcome = TUNE_TARGET, s->t->best = best, report_pair(s->res, 0, best, &s->t->gain);
    else
        conclude(s, TUNE_NO_TARGET, -1, "no setting tried reaches AU %g: the highest, trial "
                 "%d (%s), reaches %s and is %s%s", s->o->target_au, top,
                 s->res->runs[top].label, report_au_text(s->res->runs[top].sum.au, s->o->target_au, v),
                 bound_name(bound), bound == BOUND_BALANCED ? "" : "-bound");
}

/* The config as given kept without a race (the budget, nothing to race) for
 * a target AU: recommended only where its measured AU reaches the target. */
static void unraced_target(struct search *s)
{
    char why[sizeof s->t->statement], v[32];
    report_summarize_run(s->res, 0);
    if (s->res->runs[0].sum.au >= s->o->target_au)
        return;
    snprintf(why, sizeof why, "%s", s->t->statement);
    conclude(s, TUNE_NO_TARGET, -1, "%s; the config as given's measured AU, %s, is below %g", why,
             report_au_text(s->res->runs[0].sum.au, s->o->target_au, v), s->o->target_au);
}

/* Runs never measured go (a stop), not one that failed; the others get
 * their predictions, the failed one's error its number, each setting its
 * trial, the choice its rerun range (stats_prediction over its race rounds). */
static void finish(struct search *s)
{
    struct tune_result *t = s->t;
    int n = 0;
    for (int i = 0; i < s->res->n_runs; i++) {
        if (!s->res->runs[i].n_epochs && !s->res->runs[i].failed) {
            run_result_free(&s->res->runs[i]);
            continue;
        }
        s->res->runs[n] = s->res->runs[i];
        t->trials[n] = t->trials[i];
        if (i == s->failed)
            error_wrap(s->e, "--tune trial %d (%s)", n, s->res->runs[n].label);
        if (s->res->runs[n].failed)
            snprintf(DECISION(s, n), "failed: %s", s->res->runs[n].stopped);
        t->best = t->best == i ? n : t->best;
        struct pipeline_knobs k = pipeline_knobs_of(&s->res->runs[n].cfg);
        t->trials[n].predicted_s = t->batches ? pipeline_epoch(&t->costs, &k, t->batches) : NAN;
        t->trials[n++].predicted_au = t->batches ? pipeline_au(&t->costs, &k, t->batches) : NAN;
    }
    s->res->n_runs = (int)(s->res->n_points = t->n_trials = n);
    for (int j = 0; j < t->n_space; j++)
        t->space[j].trial = trial_of(s, &t->space[j].k);
    if (t->best >= 0) {
        const struct run_result *run = &s->res->runs[t->best];
        double x[run->n_rounds + 1];
        for (int k = 0; k < run->n_rounds; k++)
            x[k] = run->rounds[k].median_s;
        stats_prediction(x, (size_t)run->n_rounds, t->rerun_s);
    }
    t->seconds = clock_of(s) - s->t0;
}

int tune_search(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                struct results *res, struct error *e)
{
    struct search s = {.o = o, .trial = trial, .ctx = ctx, .res = res, .e = e, .failed = -1,
                       .given = pipeline_knobs_of(o->base),
                       .workers = SEARCHES(o, TUNE_WORKERS) && o->max_workers > 0};
    res->runs = calloc(TUNE_MAX_TRIALS, sizeof *res->runs);
    struct tune_result *t = res->tune = s.t = calloc(1, sizeof *s.t);
    if (!res->runs || !t || !(t->trials = calloc(TUNE_MAX_TRIALS, sizeof *t->trials)))
        return error_set(e, "out of memory");
    *t = (struct tune_result){.best = -1, .rerun_s = {NAN, NAN}, .target_au = o->target_au,
                             .max_workers = o->max_workers, .budget_s = o->budget_s,
                             .trials = t->trials};
    s.t0 = clock_of(&s), res->rounds_budget_s = o->budget_s; // the race then its share
    int cand[TUNE_MAX_TRIALS], n = 0;
    struct rounds_log log = {0};
    enum step st = profile(&s);
    st = st == STEP_ON ? predict(&s) : st;
    if (st == STEP_ON && spent(&s))
        st = conclude(&s, TUNE_KEEP_BUDGET, 0, "tune.budget_s (%g s) ran out in the profile: "
                      "nothing raced", o->budget_s);
    if (st == STEP_ON && (n = pick(&s, cand)) == 0 && t->n_space > 1 && !room(&s))
        st = conclude(&s, TUNE_KEEP_FASTEST, 0, "nothing to race: the memory for the trials "
                      "(%.0f MiB: --max-memory, else what the machine has free) leaves no room "
                      "for another setting beside the config as given", o->max_bytes / 1048576.0);
    if (st == STEP_ON && n == 0)
        st = conclude(&s, TUNE_KEEP_FASTEST, 0, t->n_space > 1 ? "nothing to race: the model "
                      "predicts none of the other %d settings in reach faster than the config as "
                      "given" : "nothing to race: tune.knobs and tune.max_workers leave no setting "
                      "but the config as given", t->n_space - 1);
    if (st == STEP_ON && (st = race(&s, cand, n, &log)) == STEP_ON)
        o->target_au > 0 ? confirm_target(&s) : confirm_fastest(&s, log.end == ROUNDS_BUDGET);
    if (st == STEP_DONE && o->target_au > 0 && t->best == 0 && !s.n_race)
        unraced_target(&s);
    rounds_log_free(&log);
    for (int i = 0; i < res->n_runs; i++) // each trial's run ends (its final parameters)
        if (trial(ctx, &res->runs[i], -1, 0, 0, 0, st == STEP_FAILED ? &(struct error){{0}} : e))
            st = STEP_FAILED;
    if ((st == STEP_STOPPED || st == STEP_FAILED) && s.n_race)
        quote_race(&s, 0);
    else if (st == STEP_STOPPED || st == STEP_FAILED) // in the profile: no round ran
        res->rounds_end = st == STEP_FAILED ? "failed" : "stopped";
    if (st == STEP_STOPPED || st == STEP_FAILED)
        conclude(&s, TUNE_STOPPED, -1, "%s %s: the trials keep what they measured; no "
                 "recommendation without a complete race", st == STEP_FAILED ? "stopped by an "
                 "error" : "interrupted", s.n_race ? "during the race" : "during the profile");
    finish(&s);
    return st == STEP_FAILED ? -1 : 0;
}
