/* The --tune search (see tune.h). Two goals:
 *  - fastest (tune.target_au 0): a hill climb from the config as given. The
 *    current best trial's bound names the moves worth a trial (input: more
 *    workers, deeper prefetch; copy: pinned memory, async copy, a deeper
 *    ring; compute: async copy; any bound with workers: persistent
 *    workers); a move is kept only
 *    when stats_compare calls it faster, and the climb stops when no move is
 *    (after one look past the lowest median not confirmed, or past a first
 *    step to workers that lost while still input-bound: see climb); a step to
 *    more workers measured slower is not tried again from the same count;
 *    before workers are given up, the first steps to them are measured
 *    afresh (afresh), and looked past once more from the step the climb did
 *    not look from (look_again).
 *  - a target AU: copies first (as above: while copy-bound, and async copy
 *    once compute-bound), then the fewest
 *    workers whose AU reaches the target (doubling, then bisection), then the
 *    smallest prefetch that still reaches it.
 * Either way the choice is run again after the search and must hold over
 * all its runs (faster than the config as given; the target AU reached), else
 * the choice is made again from what was measured (recommend_fastest,
 * search_target).
 * Trials are the caller's (tune_trial_fn); this file only decides. */
#include "tune.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "effect.h"

#define TUNE_MAX_PREFETCH 16 // batches per worker: past this, memory grows for nothing
#define TUNE_MAX_DEPTH 8     // device buffers in the copy ring
#define MAX_MOVES 8
#define TUNE_WORTH 0.05      // an explored trial is looked past only when its interval
                             // leaves room for a gain this large (a 5% faster epoch)

static const char *const knob_names[TUNE_N_KNOBS] = {
    "num_workers", "prefetch_factor", "persistent_workers", "pin_memory", "async_copy",
    "copy_depth"};

const char *tune_knob_key(enum tune_knob k)
{
    static const char *const keys[TUNE_N_KNOBS] = {
        "loader.num_workers", "loader.prefetch_factor", "loader.persistent_workers",
        "loader.pin_memory",  "loader.async_copy",      "loader.copy_depth"};
    return keys[k];
}

int tune_parse_knobs(const char *text, unsigned *mask, struct error *e)
{
    *mask = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ", ");
        if (len) {
            int k = 0;
            while (k < TUNE_N_KNOBS &&
                   !(strlen(knob_names[k]) == len && strncmp(p, knob_names[k], len) == 0))
                k++;
            if (k == TUNE_N_KNOBS)
                return error_set(e, "tune.knobs: unknown knob '%.*s' (known: num_workers, "
                                    "prefetch_factor, persistent_workers, pin_memory, "
                                    "async_copy, copy_depth)",
                                 (int)len, p);
            *mask |= 1u << k;
        }
        p += len;
        p += strspn(p, ", ");
    }
    if (!*mask)
        *mask = TUNE_ALL_KNOBS;
    return 0;
}

void tune_settings_from(struct tune_settings *s, const struct config *c)
{
    *s = (struct tune_settings){.num_workers = c->loader.num_workers,
                                .prefetch_factor = c->loader.prefetch_factor,
                                .copy_depth = c->loader.copy_depth,
                                .persistent_workers = c->loader.persistent_workers,
                                .pin_memory = c->loader.pin_memory,
                                .async_copy = c->loader.async_copy};
}

void tune_settings_apply(const struct tune_settings *s, struct config *c)
{
    c->loader.num_workers = s->num_workers;
    c->loader.prefetch_factor = s->prefetch_factor;
    c->loader.copy_depth = s->copy_depth;
    c->loader.persistent_workers = s->persistent_workers;
    c->loader.pin_memory = s->pin_memory;
    c->loader.async_copy = s->async_copy;
}

void tune_options_init(struct tune_options *o, const struct config *base,
                       const struct backend *be, long usable_cores)
{
    *o = (struct tune_options){
        .base = base, .be = be, .knobs = TUNE_ALL_KNOBS,
        .max_workers = 2 * (usable_cores > 0 ? usable_cores : 1),
        .budget_s = 600,
        .min_epochs = 6,      // the fewest whose order statistics give a 95% interval
        /* twice the epochs the config measures a point with (6 to 48): a
         * trial costs at most what two points of a sweep cost, and never
         * fewer than one interval needs */
        .max_epochs = (int)(base->train.epochs < 3 ? 6
                            : base->train.epochs > 24 ? 48 : 2 * base->train.epochs),
        .ci_rel = 0.03,       // a 6% wide interval tells apart the 10% steps knobs make
        .noise_rel = 0.20,    // +-20% at the cap: only changes well over 1.4x could be seen
        .min_epoch_s = 1e-3}; // below a millisecond, thread start-up and scheduling dominate
}

/* Whether knob k acts for settings s (the one rule: effect_knob_acts). */
static bool acts(const struct tune_options *o, enum tune_knob k, const struct tune_settings *s)
{
    struct config c = *o->base; // shallow: only the loader fields are read
    tune_settings_apply(s, &c);
    return effect_knob_acts(o->be, tune_knob_key(k), &c);
}

static bool allowed(const struct tune_options *o, enum tune_knob k,
                    const struct tune_settings *s)
{
    return (o->knobs >> k & 1) && acts(o, k, s);
}

/* s with every knob that does not act there set back to the config's value:
 * two settings that run the same are then equal. */
static struct tune_settings normalized(const struct tune_options *o, struct tune_settings s)
{
    struct tune_settings b;
    tune_settings_from(&b, o->base);
    if (!acts(o, TUNE_PREFETCH, &s))
        s.prefetch_factor = b.prefetch_factor;
    if (!acts(o, TUNE_PERSISTENT, &s))
        s.persistent_workers = b.persistent_workers;
    if (!acts(o, TUNE_PIN, &s))
        s.pin_memory = b.pin_memory;
    if (!acts(o, TUNE_ASYNC, &s))
        s.async_copy = b.async_copy;
    if (!acts(o, TUNE_DEPTH, &s))
        s.copy_depth = b.copy_depth;
    return s;
}

bool tune_settings_equal(const struct tune_settings *a, const struct tune_settings *b)
{
    return a->num_workers == b->num_workers && a->prefetch_factor == b->prefetch_factor &&
           a->copy_depth == b->copy_depth && a->persistent_workers == b->persistent_workers &&
           a->pin_memory == b->pin_memory && a->async_copy == b->async_copy;
}

void tune_settings_text(const struct tune_options *o, const struct tune_settings *s,
                        bool every_knob, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "num_workers=%ld", s->num_workers);
    struct { enum tune_knob k; const char *fmt; long v; } rest[] = {
        {TUNE_PREFETCH, " prefetch_factor=%ld", s->prefetch_factor},
        {TUNE_PERSISTENT, " persistent_workers=%s", s->persistent_workers},
        {TUNE_PIN, " pin_memory=%s", s->pin_memory},
        {TUNE_ASYNC, " async_copy=%s", s->async_copy},
        {TUNE_DEPTH, " copy_depth=%ld", s->copy_depth}};
    for (size_t i = 0; i < sizeof rest / sizeof rest[0] && used < n; i++) {
        if (!every_knob && !acts(o, rest[i].k, s))
            continue;
        if (rest[i].k == TUNE_PREFETCH || rest[i].k == TUNE_DEPTH)
            used += (size_t)snprintf(buf + used, n - used, rest[i].fmt, rest[i].v);
        else
            used += (size_t)snprintf(buf + used, n - used, rest[i].fmt,
                                     rest[i].v ? "true" : "false");
    }
}

static int find_trial(const struct tune_result *r, const struct tune_settings *s)
{
    for (int i = 0; i < r->n_trials; i++)
        if (tune_settings_equal(&r->trials[i].s, s))
            return i;
    return -1;
}

static double half_width(const struct stats *st)
{
    return (st->ci95[1] - st->ci95[0]) / 2 / st->median;
}

static bool budget_spent(const struct tune_options *o, const struct tune_result *r)
{
    return r->seconds >= o->budget_s;
}

/* Shares, AU and bound of trial t from its epochs and summed stage seconds. */
static void trial_finish(struct tune_trial *t)
{
    double total = 0;
    for (int i = 0; i < t->n; i++)
        total += t->epoch_s[i];
    stats_compute(t->epoch_s, (size_t)t->n, &t->st);
    t->wait = t->stage_s[0] / total;
    t->copy = t->stage_s[1] / total;
    t->compute = t->stage_s[2] / total;
    t->au = t->compute;
    t->bound = report_bound(t->wait, t->copy, t->compute);
}

/* One round of trial t: a fresh run of `epochs` more epochs. 0, or -1 with e
 * set. */
static int measure_round(tune_trial_fn trial, void *ctx, struct tune_result *r,
                         struct tune_trial *t, int epochs, struct error *e)
{
    double *grown = realloc(t->epoch_s, (size_t)(t->n + epochs) * sizeof *grown);
    if (!grown)
        return error_set(e, "out of memory");
    t->epoch_s = grown;
    struct tune_measure m = {.epoch_s = t->epoch_s + t->n};
    if (trial(ctx, &t->s, epochs, &m, e))
        return -1;
    t->n += epochs;
    r->seconds += m.elapsed_s;
    t->stage_s[0] += m.wait_s;
    t->stage_s[1] += m.copy_s;
    t->stage_s[2] += m.compute_s;
    trial_finish(t);
    return 0;
}

/* Whether trial t, against trial ref (the climb's last kept trial), has a
 * ratio whose interval leaves no room for a gain worth having (TUNE_WORTH)
 * and the test does not call it faster (the climb would go on from it): more
 * epochs would only measure more closely a setting the climb does not take. */
static bool futile(const struct tune_result *r, int ref, const struct tune_trial *t)
{
    if (ref < 0)
        return false;
    const struct tune_trial *a = &r->trials[ref];
    struct comparison c;
    stats_compare(a->epoch_s, (size_t)a->n, t->epoch_s, (size_t)t->n, &c);
    return c.ci95[0] >= 1 - TUNE_WORTH && c.verdict != VERDICT_FASTER;
}

/* Trial t measured in rounds from its first (min_epochs, then doubling)
 * until its median's interval is narrow enough, it cannot be a gain over
 * trial ref worth having (ref -1: none; not after a first round too noisy
 * to trust), the cap, or the budget. 0, or -1 with e set. */
static int rounds(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                  struct tune_result *r, struct tune_trial *t, int ref, struct error *e)
{
    for (int round = o->min_epochs;;) {
        if (measure_round(trial, ctx, r, t, round, e))
            return -1;
        t->n_search = t->n;
        /* a first round whose epochs vary by more than STATS_NOISY_CV (the
         * 10% at which dpbench warns that a median is uncertain) may have
         * met a burst on the machine: it is not stopped as futile, and its
         * next round is a fresh run */
        bool disturbed = t->n == o->min_epochs && t->st.cv > STATS_NOISY_CV;
        if (half_width(&t->st) <= o->ci_rel || t->n >= o->max_epochs || budget_spent(o, r) ||
            t->st.median < o->min_epoch_s || (!disturbed && futile(r, ref, t)))
            return 0;
        round = t->n < o->max_epochs - t->n ? t->n : o->max_epochs - t->n;
    }
}

/* The trial for settings s: an earlier one that runs the same, or a new one
 * measured in rounds against trial ref. Its index, -2 when a new trial was
 * needed and the budget is spent, or -1 with e set. */
static int measure(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                   struct tune_result *r, struct tune_settings s, int ref, struct error *e)
{
    s = normalized(o, s);
    int k = find_trial(r, &s);
    if (k >= 0)
        return k;
    if (budget_spent(o, r))
        return -2;
    if (r->n_trials == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        struct tune_trial *grown = realloc(r->trials, (size_t)cap * sizeof *grown);
        if (!grown)
            return error_set(e, "out of memory");
        r->trials = grown;
        r->cap = cap;
    }
    k = r->n_trials++; // owned from here: freed with the result whatever happens
    r->trials[k] = (struct tune_trial){.s = s, .from = -1, .origin = -1};
    return rounds(o, trial, ctx, r, &r->trials[k], ref, e) ? -1 : k;
}

static void add_move(struct tune_settings *mv, const char **why, int *n,
                     struct tune_settings s, const char *reason)
{
    if (*n < MAX_MOVES) {
        mv[*n] = s;
        why[(*n)++] = reason;
    }
}

/* Whether the climb already saw the step from settings like `at` to `to`
 * workers measure slower (the test on the two trials, whatever the move was
 * judged against), from settings that differ from `at` only in
 * prefetch_factor (the step changing nothing but the workers): then it is
 * not tried again at another prefetch. Each such trial costs as much as a
 * good one, and a deeper queue does not undo what more workers cost in
 * contention. Persistence, pinning and copies must match: they change what a
 * worker costs. */
static bool slower_before(const struct tune_result *r, const struct tune_settings *at, long to)
{
    for (int k = 0; k < r->n_trials; k++) {
        const struct tune_trial *t = &r->trials[k];
        if (t->origin < 0 || t->s.num_workers != to)
            continue;
        const struct tune_trial *a = &r->trials[t->origin];
        struct tune_settings f = a->s, s = f;
        s.num_workers = to;
        if (!tune_settings_equal(&s, &t->s)) // the step changed more than the workers
            continue;
        f.prefetch_factor = at->prefetch_factor;
        if (!tune_settings_equal(&f, at))
            continue;
        struct comparison c;
        stats_compare(a->epoch_s, (size_t)a->n, t->epoch_s, (size_t)t->n, &c);
        if (c.verdict == VERDICT_SLOWER)
            return true;
    }
    return false;
}

/* The moves worth a trial from trial t, most promising first. */
static int moves(const struct tune_options *o, const struct tune_result *r,
                 const struct tune_trial *t, bool copy_only, struct tune_settings *mv,
                 const char **why)
{
    int n = 0;
    struct tune_settings s = t->s, m;
    bool input = !copy_only && (t->bound == BOUND_INPUT || t->bound == BOUND_BALANCED);
    bool copy = t->bound == BOUND_COPY || t->bound == BOUND_BALANCED;
    if (input && (o->knobs >> TUNE_WORKERS & 1) && s.num_workers < o->max_workers) {
        /* two steps: one more worker may only overlap loading with a short step */
        long w1 = s.num_workers ? 2 * s.num_workers : 1, w2 = 2 * w1;
        w1 = w1 < o->max_workers ? w1 : o->max_workers;
        w2 = w2 < o->max_workers ? w2 : o->max_workers;
        if (!slower_before(r, &s, w1))
            m = s, m.num_workers = w1, add_move(mv, why, &n, m, "input-bound: more workers");
        if (w2 > w1 && !slower_before(r, &s, w2))
            m = s, m.num_workers = w2, add_move(mv, why, &n, m, "input-bound: more workers");
    }
    if (input && allowed(o, TUNE_PREFETCH, &s) && 2 * s.prefetch_factor <= TUNE_MAX_PREFETCH)
        m = s, m.prefetch_factor *= 2, add_move(mv, why, &n, m, "input-bound: deeper prefetch");
    if (copy && allowed(o, TUNE_PIN, &s) && !s.pin_memory)
        m = s, m.pin_memory = true, add_move(mv, why, &n, m, "copy-bound: pinned memory");
    if (copy && allowed(o, TUNE_ASYNC, &s) && !s.async_copy)
        m = s, m.async_copy = true, add_move(mv, why, &n, m, "copy-bound: async copy");
    if (copy && allowed(o, TUNE_DEPTH, &s) && 2 * s.copy_depth <= TUNE_MAX_DEPTH)
        m = s, m.copy_depth *= 2, add_move(mv, why, &n, m, "copy-bound: deeper copy ring");
    /* without async_copy the copy ring has one slot: the host issues no step
     * before the device has finished the last, a wait in every step that no
     * stage's share shows (configs/emulated-sync-vs-async.yaml, 2 workers:
     * 441.5 ms an epoch, compute-bound, exposed copies 1.6%; 430.0 with
     * async_copy, 420.3 pinned too). From pinned memory where it may: in
     * PyTorch non_blocking overlaps only a copy from pinned memory. */
    if (t->bound == BOUND_COMPUTE && allowed(o, TUNE_ASYNC, &s) && !s.async_copy)
        m = s, m.async_copy = true, m.pin_memory |= allowed(o, TUNE_PIN, &s),
        add_move(mv, why, &n, m, "compute-bound: async copy lets the host issue steps ahead");
    if (!copy_only && allowed(o, TUNE_PERSISTENT, &s) && !s.persistent_workers)
        m = s, m.persistent_workers = true,
        add_move(mv, why, &n, m, "workers re-created every epoch: persistent workers");
    return n;
}

static void set_decision(struct tune_trial *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_decision(struct tune_trial *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->decision, sizeof t->decision, fmt, ap);
    va_end(ap);
}

/* Trial k, a move from trial `from`, against trial `ref` (the climb's last
 * kept trial; `from` too unless the climb is looking past it), written as
 * k's decision: 1 kept (the test calls it faster), 0 explored (a lower
 * median the test cannot confirm), -1 dropped. */
static int judge(struct tune_result *r, int ref, int from, int k, const char *why)
{
    struct tune_trial *a = &r->trials[ref], *b = &r->trials[k];
    struct comparison c;
    stats_compare(a->epoch_s, (size_t)a->n, b->epoch_s, (size_t)b->n, &c);
    b->from = ref;
    b->origin = from;
    b->vs = c;
    int v = c.verdict == VERDICT_FASTER ? 1 : c.verdict == VERDICT_SAME && c.ratio < 1 ? 0 : -1;
    set_decision(b, "%s: %s; %.2fx trial %d's time [%.2f, %.2f]",
                 v > 0 ? "kept" : v == 0 ? "explored" : "dropped",
                 v > 0 ? why : c.verdict == VERDICT_SAME ? "same within noise" : "slower", c.ratio,
                 ref, c.ci95[0], c.ci95[1]);
    size_t len = strlen(b->decision);
    if (c.verdict == VERDICT_SAME && from != ref)
        snprintf(b->decision + len, sizeof b->decision - len, " (%s, from trial %d)", why, from);
    else if (c.verdict == VERDICT_SAME)
        snprintf(b->decision + len, sizeof b->decision - len, " (%s)", why);
    else if (from != ref)
        snprintf(b->decision + len, sizeof b->decision - len, " (from trial %d)", from);
    return v;
}

/* The fastest of trial t's first min_epochs epochs (its first round): the
 * same number of epochs for every trial, as the minimum falls with more. */
static double first_round_min(const struct tune_options *o, const struct tune_trial *t)
{
    double m = t->epoch_s[0];
    for (int i = 1; i < o->min_epochs && i < t->n; i++)
        m = fmin(m, t->epoch_s[i]);
    return m;
}

/* Hill climb from trial *cur, which ends at the last kept trial (look >= 0:
 * it starts with the one-step look from trial `look`). With
 * `explore`, when no move is kept the climb looks one step further, from
 * one trial it did not keep: the lowest median the test could not confirm,
 * when its interval leaves room for a gain worth a trial (TUNE_WORTH: noise
 * may hide a real gain there), else a first step to workers that lost while
 * still input-bound (see below). Moves from there are judged against *cur,
 * the last kept trial, not against the trial looked past (a burst that
 * slowed that one would make anything look faster than it); a kept move
 * continues the climb. Returns *cur, -1 on error, -2 when the budget ran
 * out. */
static int climb(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                 struct tune_result *r, int *cur, int look, bool explore, bool copy_only,
                 struct error *e)
{
    int from = look >= 0 ? look : *cur;
    bool exploring = look >= 0; // `from` is a trial looked past, not a kept one
    for (;;) {
        struct tune_settings mv[MAX_MOVES];
        const char *why[MAX_MOVES];
        int n = moves(o, r, &r->trials[from], copy_only, mv, why), next = -1, lead = -1;
        int handoff = -1; // a dropped first step to workers, still input-bound
        for (int i = 0; i < n && next < 0; i++) {
            struct tune_settings s = normalized(o, mv[i]);
            if (find_trial(r, &s) >= 0)
                continue; // measured already: its decision stands
            int k = measure(o, trial, ctx, r, s, *cur, e);
            if (k < 0)
                return k;
            int v = judge(r, *cur, from, k, why[i]);
            const struct tune_trial *t = &r->trials[k];
            if (v > 0)
                next = k;
            else if (v == 0 && t->vs.ci95[0] < 1 - TUNE_WORTH &&
                     (lead < 0 || t->st.median < r->trials[lead].st.median))
                lead = k;
            else if (v <= 0 && r->trials[from].s.num_workers == 0 && t->s.num_workers > 0 &&
                     (t->bound == BOUND_INPUT || t->bound == BOUND_BALANCED) &&
                     (handoff < 0 ||
                      first_round_min(o, t) < first_round_min(o, &r->trials[handoff])))
                handoff = k;
        }
        /* Workers hand every batch over; at the config's prefetch a worker
         * may sleep and wake once a batch, and that can cost more than the
         * loading it takes over. So a first step to workers that lost but is
         * still input-bound gets one more look, from its own moves (deeper
         * prefetch among them), before the climb gives workers up. Of two
         * such steps, the one with the fastest epoch in its first round:
         * what a setting does when nothing disturbs it. A burst on the
         * machine while it ran raises a trial's median (the 2-worker step of
         * a Fashion-MNIST tune measured 119 ms against 66-80 elsewhere) but
         * not its fastest epoch. */
        if (next < 0 && lead < 0)
            lead = handoff;
        if (next >= 0) {
            from = *cur = next;
            exploring = false;
        } else if (explore && !exploring && lead >= 0) {
            from = lead;
            exploring = true;
        } else {
            return *cur;
        }
    }
}

/* The fastest choice: the lowest median among the trials the test calls
 * faster than the config as given (not counting those that did not hold when
 * run again), else the config as given. */
static int select_fastest(const struct tune_result *r)
{
    int best = 0;
    const struct tune_trial *given = &r->trials[0];
    for (int i = 1; i < r->n_trials; i++) {
        const struct tune_trial *t = &r->trials[i];
        if (t->not_held)
            continue;
        struct comparison c;
        stats_compare(given->epoch_s, (size_t)given->n, t->epoch_s, (size_t)t->n, &c);
        if (c.verdict == VERDICT_FASTER && t->st.median < r->trials[best].st.median)
            best = i;
    }
    return best;
}

static bool reaches(const struct tune_options *o, const struct tune_trial *t)
{
    return t->au >= o->target_au;
}

/* One target_au trial: measured (or found) and labelled with its AU. */
static int au_trial(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                    struct tune_result *r, struct tune_settings s, const char *step,
                    struct error *e)
{
    int k = measure(o, trial, ctx, r, s, -1, e);
    if (k >= 0 && !r->trials[k].decision[0])
        set_decision(&r->trials[k], "%s: AU %.2f %s %.2f", step, r->trials[k].au,
                     reaches(o, &r->trials[k]) ? "reaches" : "is below", o->target_au);
    return k;
}

/* The fewest workers (from cur's other settings) whose AU reaches the target:
 * doubling until one does, then bisection. *lo gets the most workers below
 * it (-1 if none measured); returns the trial reaching it, -3 if none up to
 * max_workers does, -2 when the budget ran out, -1 on error. */
static int fewest_workers(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                          struct tune_result *r, int cur, int *lo, struct error *e)
{
    struct tune_settings s = r->trials[cur].s;
    int hi = -1;
    *lo = -1;
    for (long w = 0;; w = w ? 2 * w : 1) {
        s.num_workers = w < o->max_workers ? w : o->max_workers;
        int k = au_trial(o, trial, ctx, r, s, "workers doubling", e);
        if (k < 0)
            return k;
        if (reaches(o, &r->trials[k])) {
            hi = k;
            break;
        }
        *lo = k;
        if (s.num_workers >= o->max_workers)
            return -3;
    }
    while (*lo >= 0 && r->trials[hi].s.num_workers - r->trials[*lo].s.num_workers > 1) {
        s.num_workers = (r->trials[hi].s.num_workers + r->trials[*lo].s.num_workers) / 2;
        int k = au_trial(o, trial, ctx, r, s, "workers bisection", e);
        if (k < 0)
            return k;
        if (reaches(o, &r->trials[k]))
            hi = k;
        else
            *lo = k;
    }
    return hi;
}

/* The smallest prefetch_factor at trial hi's workers that still reaches the
 * target; *below gets the trial one step cheaper when measured. */
static int smallest_prefetch(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                             struct tune_result *r, int hi, int *below, struct error *e)
{
    struct tune_settings s = r->trials[hi].s;
    if (!allowed(o, TUNE_PREFETCH, &s))
        return hi;
    for (long p = 1; p < r->trials[hi].s.prefetch_factor; p++) {
        s.prefetch_factor = p;
        int k = au_trial(o, trial, ctx, r, s, "smaller prefetch", e);
        if (k == -2)
            return hi; // the budget: the cheapest found so far
        if (k < 0)
            return -1;
        if (reaches(o, &r->trials[k]))
            return k;
        *below = k;
    }
    return hi;
}

/* Appends to r->statement, after "; " when it has text. */
static void statement_add(struct tune_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void statement_add(struct tune_result *r, const char *fmt, ...)
{
    size_t used = strlen(r->statement);
    if (used)
        used += (size_t)snprintf(r->statement + used, sizeof r->statement - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    if (used < sizeof r->statement)
        vsnprintf(r->statement + used, sizeof r->statement - used, fmt, ap);
    va_end(ap);
}

/* Trial k once more after the search: as many epochs as the search measured
 * it with (both weigh the same), in two fresh runs, so that with the search's
 * run its runs' medians show how far one run lands from the next
 * (rerun_interval). Its time and interval then pool all its runs. 1 when
 * run, 0 when the budget is spent, -1 with e set. */
static int run_again(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                     struct tune_result *r, int k, struct error *e)
{
    if (budget_spent(o, r))
        return 0;
    int n = r->trials[k].n_search; // at least min_epochs (6): 3 and 3, or more
    for (int i = 0; i < 2; i++) {
        int from = r->trials[k].n, epochs = i == 0 ? (n + 1) / 2 : n / 2;
        struct tune_trial *t = &r->trials[k];
        if (measure_round(trial, ctx, r, t, epochs, e))
            return -1;
        struct stats run;
        stats_compute(t->epoch_s + from, (size_t)epochs, &run);
        t->again_median[t->n_again++] = run.median;
    }
    struct tune_trial *t = &r->trials[k];
    struct stats again;
    stats_compute(t->epoch_s + t->n_search, (size_t)(t->n - t->n_search), &again);
    size_t used = strlen(t->decision);
    snprintf(t->decision + used, sizeof t->decision - used,
             "; run again after the search, in two runs: %.3f ms, all runs pooled",
             1e3 * again.median);
    return 1;
}

/* run_again for the recommendation: a run that fails leaves none. */
static int run_choice_again(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                            struct tune_result *r, struct error *e)
{
    int again = run_again(o, trial, ctx, r, r->best, e);
    if (again < 0) {
        r->best = -1;
        statement_add(r, "stopped while the choice was run again after the search");
    }
    return again;
}

/* AUs below the target are printed rounded down, to 3 decimals: 0.7996
 * against a target of 0.8 must not read "reaches 0.80". */
static void no_target(const struct tune_options *o, struct tune_result *r)
{
    int top = 0;
    for (int i = 1; i < r->n_trials; i++)
        if (r->trials[i].au > r->trials[top].au)
            top = i;
    char set[256];
    tune_settings_text(o, &r->trials[top].s, false, set, sizeof set);
    snprintf(r->statement, sizeof r->statement,
             "no setting tried reaches AU %.2f: the highest, trial %d (%s), reaches %.3f and "
             "is %s-bound", o->target_au, top, set, floor(1000 * r->trials[top].au) / 1000,
             bound_name(r->trials[top].bound));
    r->best = -1;
}

static int search_target(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                         struct tune_result *r, struct error *e)
{
    int cur = 0;
    if (r->trials[0].bound == BOUND_COPY) { // copies first: they cost no loader
        int rc = climb(o, trial, ctx, r, &cur, -1, false, true, e);
        if (rc == -1)
            return -1;
    }
    for (;;) {
        int lo = -1, hi = cur;
        if (o->knobs >> TUNE_WORKERS & 1)
            hi = fewest_workers(o, trial, ctx, r, cur, &lo, e);
        else if (!reaches(o, &r->trials[cur]))
            hi = -3;
        if (hi == -1)
            return -1;
        if (hi == -2) {
            snprintf(r->statement, sizeof r->statement,
                     "tune.budget_s (%.0f s) ran out before a setting reaching AU %.2f was found",
                     o->budget_s, o->target_au);
            return 0;
        }
        if (hi == -3) {
            no_target(o, r);
            return 0;
        }
        int below = lo;
        int best = smallest_prefetch(o, trial, ctx, r, hi, &below, e);
        if (best < 0)
            return -1;
        r->best = best;
        r->next_cheaper = r->trials[best].s.num_workers > 0 || below >= 0 ? below : -1;
        /* The choice run again (see recommend_fastest): when its AU over both
         * runs falls below the target it is not chosen, and the search goes
         * on from what it measured, its trials reused. */
        if (r->trials[best].n > r->trials[best].n_search)
            return 0; // run again before, and it still reaches the target
        int again = run_choice_again(o, trial, ctx, r, e);
        if (again < 0)
            return -1;
        if (!again)
            return 0; // the budget: the choice stands, not run again
        struct tune_trial *t = &r->trials[best];
        if (reaches(o, t))
            return 0;
        size_t used = strlen(t->decision);
        snprintf(t->decision + used, sizeof t->decision - used,
                 "; with that run its AU is %.3f, below %.2f: not chosen",
                 floor(1000 * t->au) / 1000, o->target_au);
        r->best = r->next_cheaper = -1;
    }
}

/* A trial whose median is well under the best's (by a tenth) but not told
 * apart from it by the test: the noise left the search undecided there, and
 * the statement says so rather than recommend it or hide it. */
static void undecided(const struct tune_options *o, struct tune_result *r)
{
    const struct tune_trial *b = &r->trials[r->best];
    int low = -1;
    struct comparison c, lc = {0};
    for (int i = 0; i < r->n_trials; i++) {
        const struct tune_trial *t = &r->trials[i];
        if (t->not_held || t->st.median >= 0.9 * b->st.median ||
            (low >= 0 && t->st.median >= r->trials[low].st.median))
            continue;
        stats_compare(b->epoch_s, (size_t)b->n, t->epoch_s, (size_t)t->n, &c);
        if (c.verdict != VERDICT_SLOWER) {
            low = i;
            lc = c;
        }
    }
    if (low < 0)
        return;
    char set[256];
    tune_settings_text(o, &r->trials[low].s, false, set, sizeof set);
    statement_add(r, "undecided: trial %d (%s) measured %.2fx the chosen time [%.2f, %.2f], %s; "
                     "more epochs (train.epochs) or a quieter machine would decide", low, set,
                  lc.ratio, lc.ci95[0], lc.ci95[1],
                  lc.verdict == VERDICT_SAME ? "not told apart from noise"
                                             : "yet not told apart from the config as given");
}

/* Before the climb gives workers up (no move kept from the config as given
 * without workers), every first step to workers it measured (dropped, or
 * explored: a lower median it could not confirm) is measured afresh, its
 * first run set aside, and judged again: a run can be slow throughout when
 * the machine gives it less CPU for a while, and nothing inside it looks
 * disturbed (1 worker on configs/large.yaml at 3fa74c8: 64 to 77 ms in
 * every epoch of its trial, 19 to 21 ms in every other run). Of those kept
 * afresh, the lowest median continues the climb; it must still hold when
 * run again after the search. Its index, -1 when none is kept, -2 when the
 * budget ran out, -3 with e set (every trial as it was before the stop). */
static int afresh(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                  struct tune_result *r, struct error *e)
{
    int best = -1, n = r->n_trials;
    for (int k = 1; k < n; k++) {
        if (r->trials[k].origin != 0 || r->trials[k].s.num_workers == 0)
            continue;
        if (budget_spent(o, r))
            return best >= 0 ? best : -2;
        struct tune_trial fresh = {.s = r->trials[k].s, .from = -1, .origin = -1};
        if (rounds(o, trial, ctx, r, &fresh, 0, e)) {
            free(fresh.epoch_s);
            return -3;
        }
        struct tune_trial *t = &r->trials[k];
        double first = t->st.median;
        free(t->epoch_s);
        *t = fresh;
        int v = judge(r, 0, 0, k, "input-bound: more workers");
        size_t used = strlen(t->decision);
        snprintf(t->decision + used, sizeof t->decision - used,
                 "; measured afresh before workers were given up (its first run, median "
                 "%.3f ms, set aside)",
                 1e3 * first);
        if (v > 0 && (best < 0 || t->st.median < r->trials[best].st.median))
            best = k;
    }
    return best;
}

/* Whether a look went from trial k (a trial was measured as its move). */
static bool looked_from(const struct tune_result *r, int k)
{
    for (int j = 1; j < r->n_trials; j++)
        if (r->trials[j].origin == k)
            return true;
    return false;
}

/* When nothing is kept afresh either: the climb looked from one of the
 * first steps to workers, chosen by the fastest epoch of its first round,
 * which a burst may have bent (the Fashion-MNIST tune at f231330 looked from
 * 1 worker, and the sweep's best, 2 workers at a deeper prefetch, was never
 * measured). Measured afresh, a step still input-bound (or balanced) whose
 * first round now beats that of the step looked from gets the one-step look
 * (see climb) too, the fastest first; a move kept there continues the climb.
 * Where the fresh runs agree with the first choice nothing more is measured.
 * Returns as climb does (0: nothing kept). */
static int look_again(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                      struct tune_result *r, int *cur, struct error *e)
{
    double bar = INFINITY; // the fastest fresh first round among the steps looked from
                           // (none when the climb looked from elsewhere: every step gets a look)
    for (int k = 1; k < r->n_trials; k++)
        if (r->trials[k].origin == 0 && r->trials[k].s.num_workers > 0 && looked_from(r, k))
            bar = fmin(bar, first_round_min(o, &r->trials[k]));
    int step[MAX_MOVES], n = 0;
    for (int k = 1; k < r->n_trials && n < MAX_MOVES; k++) {
        const struct tune_trial *t = &r->trials[k];
        if (t->origin == 0 && t->s.num_workers > 0 && !looked_from(r, k) &&
            (t->bound == BOUND_INPUT || t->bound == BOUND_BALANCED) &&
            first_round_min(o, t) < bar)
            step[n++] = k;
    }
    for (int i = 0; i < n; i++) {
        int first = i; // the fastest first round among those left
        for (int j = i + 1; j < n; j++)
            if (first_round_min(o, &r->trials[step[j]]) <
                first_round_min(o, &r->trials[step[first]]))
                first = j;
        int k = step[first];
        step[first] = step[i];
        int rc = climb(o, trial, ctx, r, cur, k, true, false, e);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int search_fastest(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                          struct tune_result *r, struct error *e)
{
    int cur = 0;
    int rc = climb(o, trial, ctx, r, &cur, -1, true, false, e);
    if (rc == 0 && r->trials[0].s.num_workers == 0) {
        int k = afresh(o, trial, ctx, r, e);
        if (k == -3)
            return -1;
        if (k >= 0) {
            cur = k;
            rc = climb(o, trial, ctx, r, &cur, -1, true, false, e);
        } else if (k == -2) {
            rc = -2;
        } else {
            rc = look_again(o, trial, ctx, r, &cur, e);
        }
    }
    if (rc == -1)
        return -1;
    if (rc == -2)
        snprintf(r->statement, sizeof r->statement,
                 "tune.budget_s (%.0f s) ran out: the best of the %d trials so far", o->budget_s,
                 r->n_trials);
    r->best = 0; // recommend_fastest chooses
    return 0;
}

/* The workload itself decides whether anything can be tuned: too short an
 * epoch, or too wide an interval at the cap, gets a statement. */
static bool measurable(const struct tune_options *o, struct tune_result *r)
{
    const struct tune_trial *t = &r->trials[0];
    if (t->st.median < o->min_epoch_s) {
        snprintf(r->statement, sizeof r->statement,
                 "too short to measure: the median epoch takes %.3f ms, under %.1f ms, where "
                 "thread start-up and scheduling outweigh any loader setting; give the epoch "
                 "more work (dataset.length, a larger batch or dataset)",
                 1e3 * t->st.median, 1e3 * o->min_epoch_s);
        return false;
    }
    if (half_width(&t->st) > o->noise_rel) {
        snprintf(r->statement, sizeof r->statement,
                 "too noisy to decide: after %d epochs the median's 95%% interval is +-%.0f%% "
                 "(cv %.0f%%); changes smaller than that cannot be told from noise. Run on a "
                 "quieter machine or with longer epochs",
                 t->n, 100 * half_width(&t->st), 100 * t->st.cv);
        return false;
    }
    return true;
}

/* Whether trial t's runs after the search are faster than the config as
 * given's (its own runs after the search when it has them, side by side in
 * time, else its first), in c: the 95% interval of the ratio of medians
 * lies below 1. The median is what the recommendation reports; the rank
 * test that also decides a move in the search asks whether every epoch
 * tends to be faster, and a burst that slows some epochs of a faster
 * setting fails it (1 worker on configs/large.yaml at cf2b495: its two
 * runs' medians 19.3 and 20.8 ms against 29.2 and 29.1, 0.68x [0.65, 0.76],
 * yet not called faster). */
static bool holds(const struct tune_result *r, const struct tune_trial *t,
                  struct comparison *c)
{
    const struct tune_trial *g = &r->trials[0];
    int from = g->n > g->n_search ? g->n_search : 0;
    stats_compare(g->epoch_s + from, (size_t)(g->n - from), t->epoch_s + t->n_search,
                  (size_t)(t->n - t->n_search), c);
    return c->ci95[1] < 1;
}

/* The 95% prediction interval of the median epoch of one more run of trial
 * t, from three: the search's (all its epochs) and the two after it. With
 * their mean m and standard deviation s, m +- t(0.975, 2) s sqrt(1 + 1/3),
 * the runs taken as independent draws of the machine's run-to-run spread
 * (the drift between runs minutes apart, which one run's interval does not
 * hold); never narrower than m +- h sqrt(1 + 1/3), h the half-width of the
 * 95% interval of the search run's own median: three medians that agree by
 * chance say nothing of where the next run's median falls within its own
 * sampling error (cifar10 at f231330: three runs within 0.2 ms, a range of
 * +-1.5%), and their mean is off by a third of that. NaN when t was not run
 * again. */
static void rerun_interval(const struct tune_trial *t, double pi[2])
{
    pi[0] = pi[1] = NAN;
    if (t->n_again < 2)
        return;
    struct stats search;
    stats_compute(t->epoch_s, (size_t)t->n_search, &search);
    double x[3] = {search.median, t->again_median[0], t->again_median[1]};
    double mean = (x[0] + x[1] + x[2]) / 3, ss = 0;
    for (int i = 0; i < 3; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double half = 4.303 * sqrt(ss / 2) * sqrt(1 + 1.0 / 3); // t(0.975) at 2 degrees of freedom
    half = fmax(half, (search.ci95[1] - search.ci95[0]) / 2 * sqrt(1 + 1.0 / 3));
    pi[0] = mean - half;
    pi[1] = mean + half;
}

/* The recommendation against the config as given: ratio = median(given) /
 * median(best), the speed-up; both pooled over all their runs. */
static void gain(struct tune_result *r)
{
    const struct tune_trial *a = &r->trials[r->best], *b = &r->trials[0];
    stats_compare(a->epoch_s, (size_t)a->n, b->epoch_s, (size_t)b->n, &r->gain);
}

/* The search's choice is run again (run_again). The search chose it for
 * the lowest of many noisy medians, which comes out low, and one run's
 * interval does not hold the drift between runs minutes apart: the reported
 * time and interval pool all its runs, as a rerun of NAME-tuned.yaml is
 * another run. For the fastest goal a change is recommended only when its
 * run after the search is faster than the config as given too (one of a
 * search's many comparisons says "faster" by chance now and then, or from a
 * moment the machine ran faster: see holds). When it is not faster than the config as
 * given's first run, the config as given runs again beside it, since the
 * machine may have changed speed since the start; when it is not faster
 * than that either, it did not hold, and the choice is made again from the
 * rest (select_fastest, against the config as given with all its runs).
 * 0, or -1 with e set (and no recommendation). */
static int recommend_fastest(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                             struct tune_result *r, struct error *e)
{
    for (;;) {
        r->best = select_fastest(r);
        struct tune_trial *t = &r->trials[r->best];
        if (t->n == t->n_search) {
            int again = run_choice_again(o, trial, ctx, r, e);
            if (again < 0)
                return -1;
            if (!again)
                return 0; // the budget: the choice stands, not run again
        }
        if (r->best == 0)
            return 0;
        t = &r->trials[r->best];
        struct comparison c;
        bool held = holds(r, t, &c);
        const struct tune_trial *given = &r->trials[0];
        if (!held && given->n == given->n_search) {
            int g = run_again(o, trial, ctx, r, 0, e);
            if (g < 0) {
                r->best = -1;
                statement_add(r, "stopped while the config as given was run again after the "
                                 "search");
                return -1;
            }
            t = &r->trials[r->best];
            if (!g) {
                statement_add(r, "the choice's run after the search is not faster than the "
                                 "config as given's first run, which could not be run again "
                                 "beside it (tune.budget_s spent): the machine may have "
                                 "changed speed, so the choice stands unchecked");
                return 0;
            }
            held = holds(r, t, &c);
        }
        if (held)
            return 0;
        size_t used = strlen(t->decision);
        snprintf(t->decision + used, sizeof t->decision - used,
                 "; that run is not faster than the config as given (%.2fx its time [%.2f, "
                 "%.2f]): not recommended", c.ratio, c.ci95[0], c.ci95[1]);
        t->not_held = true;
    }
}

int tune_search(const struct tune_options *o, tune_trial_fn trial, void *ctx,
                struct tune_result *r, struct error *e)
{
    *r = (struct tune_result){.best = -1, .next_cheaper = -1, .rerun = {NAN, NAN}};
    struct tune_settings given;
    tune_settings_from(&given, o->base);
    int k = measure(o, trial, ctx, r, given, -1, e);
    if (k == -2)
        return error_set(e, "tune.budget_s leaves no time for a single trial");
    if (k < 0)
        return -1;
    set_decision(&r->trials[0], "start: the config as given (AU %.2f)", r->trials[0].au);
    if (!measurable(o, r))
        return 0;
    int rc = o->target_au > 0 ? search_target(o, trial, ctx, r, e)
                              : search_fastest(o, trial, ctx, r, e);
    if (rc == 0 && r->best >= 0 && o->target_au == 0)
        rc = recommend_fastest(o, trial, ctx, r, e);
    if (rc || r->best < 0)
        return rc;
    const struct tune_trial *t = &r->trials[r->best];
    r->confirmed = t->n > t->n_search;
    if (!r->confirmed)
        statement_add(r, "the choice was not run again (tune.budget_s spent): its interval is "
                         "from one run and may be narrower than the drift between runs");
    gain(r);
    if (r->confirmed)
        rerun_interval(t, r->rerun);
    if (o->target_au == 0)
        undecided(o, r);
    return 0;
}

void tune_result_free(struct tune_result *r)
{
    for (int i = 0; i < r->n_trials; i++)
        free(r->trials[i].epoch_s);
    free(r->trials);
    *r = (struct tune_result){.best = -1, .next_cheaper = -1, .rerun = {NAN, NAN}};
}
