/* The round scheduler (rounds.h): a seeded shuffle per round, the points
 * measured in that order, and the end: decided, the cap, the budget. */
#include "rounds.h"

#include <stdlib.h>
#include <string.h>

#include "rng.h"

const char *rounds_end_name(enum rounds_end e)
{
    static const char *const names[] = {"decided", "round cap", "time budget", "stopped",
                                        "failed"};
    return names[e];
}

void rounds_order(unsigned long seed, int points, int r, int *order)
{
    struct rng g;
    rng_init(&g, seed, RNG_ROUNDS, (uint64_t)r);
    for (int i = 0; i < points; i++)
        order[i] = i;
    for (int i = points - 1; i > 0; i--) { // Fisher-Yates
        int j = (int)rng_below(&g, (uint64_t)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
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

int rounds_run(const struct rounds_plan *plan, rounds_measure_fn measure, rounds_done_fn done,
               void *ctx, struct rounds_log *log, struct error *e)
{
    int cap = plan->max_rounds > plan->min_rounds ? plan->max_rounds : plan->min_rounds;
    *log = (struct rounds_log){.end = ROUNDS_CAP};
    log->order = calloc((size_t)(cap + 1) * (size_t)plan->points, sizeof *log->order);
    if (!log->order)
        return error_set(e, "out of memory");
    double t0 = plan->clock ? plan->clock(ctx) : now_seconds();
    for (int r = 0; r < cap; r++) {
        int rc = one_round(plan, measure, ctx, r, log->order + (size_t)r * plan->points, e);
        log->seconds = (plan->clock ? plan->clock(ctx) : now_seconds()) - t0;
        if (rc) {
            log->end = rc > 0 ? ROUNDS_STOPPED : ROUNDS_FAILED;
            return rc < 0 ? -1 : 0;
        }
        log->rounds = r + 1;
        if (r + 1 == cap)
            break;
        double per_round = log->seconds / log->rounds;
        enum rounds_end end = ROUNDS_CAP; // not yet
        if (log->rounds >= plan->min_rounds && done && done(ctx, log->rounds))
            end = ROUNDS_DECIDED;
        else if (plan->budget_s > 0 && log->seconds + per_round > plan->budget_s)
            end = ROUNDS_BUDGET;
        bool stop = end != ROUNDS_CAP;
        if (plan->agree)
            stop = plan->agree(ctx, stop);
        if (stop) {
            log->end = end == ROUNDS_CAP ? ROUNDS_DECIDED : end; // rank 0 decided it
            break;
        }
    }
    return 0;
}

void rounds_log_free(struct rounds_log *log)
{
    free(log->order);
    memset(log, 0, sizeof *log);
}
