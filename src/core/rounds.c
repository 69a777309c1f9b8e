/* The round scheduler (rounds.h): the seeded, balanced orders (Williams
 * designs), the points measured in them, and the end: decided, the cap,
 * the budget. */
#include "rounds.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

const char *rounds_end_name(enum rounds_end e)
{
    static const char *const names[] = {"decided", "round cap", "time budget", "stopped",
                                        "failed"};
    return names[e];
}

static void shuffle(struct rng *g, int *v, int n) // Fisher-Yates
{
    for (int i = 0; i < n; i++)
        v[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(g, (uint64_t)i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

void rounds_order(unsigned long seed, int points, int r, int *order)
{
    int n = points, len = n % 2 ? 2 * n : n; // a block: a Williams design's rows
    struct rng g;
    int perm[n], row[len];
    rng_init(&g, seed, RNG_ROUNDS, (uint64_t)(r / len));
    shuffle(&g, perm, n);
    shuffle(&g, row, len);
    int i = row[r % len] % n;
    bool mirror = row[r % len] >= n; // odd n: the rows read backwards, too
    for (int k = 0; k < n; k++) {
        int j = mirror ? n - 1 - k : k;
        int w = j % 2 ? (j + 1) / 2 : (n - j / 2) % n; // 0, 1, n-1, 2, n-2, ...
        order[k] = perm[(w + i) % n];
    }
}

#define LEVEL 0.05   // of every verdict, over all its looks together
#define Z975 1.959964 // the standard normal's 0.975 quantile

static int cap_of(const struct rounds_plan *plan)
{
    return plan->max_rounds > plan->min_rounds ? plan->max_rounds : plan->min_rounds;
}

/* The level spent by the time a fraction t of the rounds has run: an
 * O'Brien-Fleming-like spending function (Lan and DeMets), 2 - 2 Phi(z / sqrt
 * t) = erfc(z / sqrt(2 t)): next to nothing at the first looks, most at the
 * end, LEVEL at t = 1. */
static double spent_by(double t)
{
    return t <= 0 ? 0 : t >= 1 ? LEVEL : erfc(Z975 / sqrt(2 * t));
}

/* Whether `rounds` is a look before the last round `last`: min_rounds, then
 * each about 1.3 times the one before. */
static bool is_look(const struct rounds_plan *plan, int rounds, int last)
{
    for (int look = plan->min_rounds > 0 ? plan->min_rounds : 1; look < last;) {
        if (look == rounds)
            return true;
        int next = (int)ceil(1.3 * look);
        look = next > look ? next : look + 1;
    }
    return false;
}

/* The rounds the budget allows after the first (which took first_s) at
 * `pace` a round (the cap without a budget), at least min_rounds: the
 * information fraction's denominator. */
static int last_round(const struct rounds_plan *plan, double first_s, double pace)
{
    int cap = cap_of(plan);
    if (plan->budget_s <= 0 || !(pace > 0))
        return cap;
    double n = 1 + floor(fmax(0, plan->budget_s - first_s) / pace);
    return n < plan->min_rounds ? plan->min_rounds : n > cap ? cap : (int)n;
}

/* One round: every point in the round's order. 0, 1 (stopped) or -1. */
static int one_round(const struct rounds_plan *plan, rounds_measure_fn measure, void *ctx,
                     int r, int *order, struct error *e)
{
    rounds_order(plan->seed, plan->points, r, order);
    for (int k = 0; k < plan->points; k++) {
        int rc = measure(ctx, order[k], r, k, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* The verdicts printed when the rounds end are one more look, with the level
 * left; a decided look's level stands. */
static void finish(struct rounds_log *log)
{
    if (log->end == ROUNDS_DECIDED)
        return;
    log->looks++;
    log->alpha = LEVEL - log->spent;
}

/* A look after log->rounds: the level it may spend, and whether it decided. */
static bool look(rounds_done_fn done, void *ctx, struct rounds_log *log)
{
    double now = fmax(log->spent, spent_by((double)log->rounds / log->last));
    /* at least the smallest double: a look with next to nothing to spend (an
     * early one of a large cap, where erfc underflows, or one after `last`
     * grew) decides nothing; 0 would read as no plan, one test at LEVEL */
    log->alpha = fmax(now - log->spent, DBL_MIN);
    log->spent = now;
    log->looks++;
    return done && done(ctx, log->rounds, log->alpha);
}

/* After round r: whether the rounds end, and why (log->end). Every end goes
 * through plan->agree: ranks that measure their own clocks end together. */
static bool round_ends(const struct rounds_plan *plan, rounds_done_fn done, void *ctx,
                       struct rounds_log *log)
{
    int cap = cap_of(plan);
    if (log->rounds == 1) // a first guess: the first round also starts each point
        log->first_s = log->seconds, log->last = last_round(plan, log->seconds, log->seconds);
    if (log->rounds == 2) // (its warm-up, its data): the pace is the second's
        log->last = last_round(plan, log->first_s, log->seconds - log->first_s);
    double per_round = log->rounds > 1 ? (log->seconds - log->first_s) / (log->rounds - 1)
                                        : log->seconds; // a round after the first
    bool stop = true;
    enum rounds_end end = ROUNDS_DECIDED;
    if (log->rounds >= log->last)
        end = log->last < cap ? ROUNDS_BUDGET : ROUNDS_CAP;
    else if (is_look(plan, log->rounds, log->last) && look(done, ctx, log))
        end = ROUNDS_DECIDED;
    else if (plan->budget_s > 0 && log->seconds + per_round > plan->budget_s)
        end = ROUNDS_BUDGET;
    else
        stop = false;
    bool own = stop;
    if (plan->agree)
        stop = plan->agree(ctx, stop);
    if (stop)
        log->end = own ? end : ROUNDS_DECIDED; // else rank 0 decided it
    return stop;
}

int rounds_run(const struct rounds_plan *plan, rounds_measure_fn measure, rounds_done_fn done,
               void *ctx, struct rounds_log *log, struct error *e)
{
    int cap = cap_of(plan), rc = 0;
    *log = (struct rounds_log){.end = ROUNDS_CAP, .last = cap};
    log->order = calloc((size_t)(cap + 1) * (size_t)plan->points, sizeof *log->order);
    if (!log->order)
        return error_set(e, "out of memory");
    double t0 = plan->clock ? plan->clock(ctx) : now_seconds();
    for (int r = 0; r < cap; r++) {
        rc = one_round(plan, measure, ctx, r, log->order + (size_t)r * plan->points, e);
        log->seconds = (plan->clock ? plan->clock(ctx) : now_seconds()) - t0;
        if (rc) {
            log->end = rc > 0 ? ROUNDS_STOPPED : ROUNDS_FAILED;
            break;
        }
        log->rounds = r + 1;
        if (round_ends(plan, done, ctx, log))
            break;
    }
    finish(log);
    return rc < 0 ? -1 : 0;
}

void rounds_log_free(struct rounds_log *log)
{
    free(log->order);
    memset(log, 0, sizeof *log);
}
