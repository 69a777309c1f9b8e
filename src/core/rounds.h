/* Interleaved rounds: when several points are measured, each round runs
 * every point once, in an order drawn from the seed and balanced over each
 * block of rounds (rounds_order), and rounds
 * repeat until the caller's decision is made, the round cap is reached or
 * the time budget would be passed. Machine state that drifts (another
 * process, the clock, the page cache) then falls on every point alike, and
 * a round is the unit the statistics compare (stats_paired). The scheduler
 * runs nothing itself: it calls its measure and done functions, so the
 * sweep, --tune and the simulated calibration in tests share it. */
#ifndef DPBENCH_ROUNDS_H
#define DPBENCH_ROUNDS_H

#include <stdbool.h>

#include "util.h"

struct rounds_plan {
    int points;          // measured each round (>= 1)
    int min_rounds;      // rounds before the first look at the decision (>= 1)
    int max_rounds;      // rounds at most
    double budget_s;     // wall seconds the rounds may take; 0 = no limit. A round is
                         // not started when the mean round after the first would pass it.
    unsigned long seed;  // the orders' shuffles
    /* Processes that run the rounds together (ddp's ranks) end them together:
     * after each round, every one's wish to stop goes in and rank 0's comes
     * out. NULL for one process. */
    bool (*agree)(void *ctx, bool stop);
    /* The clock the budget is counted on, seconds; NULL: now_seconds (a
     * simulation passes its own). */
    double (*clock)(void *ctx);
};

/* Measures point p as the k-th of round r: 0, or -1 with e set (the rounds
 * end; the error is the caller's), or 1 to end the rounds quietly (a stop). */
typedef int (*rounds_measure_fn)(void *ctx, int p, int r, int k, struct error *e);

/* After `rounds` complete rounds, at a look: whether the caller's decision
 * is made, each verdict's interval taken at level alpha.
 *
 * The looks come at min_rounds, then each about 1.3 times the one before,
 * below the last round the budget allows (the first round's time, then the
 * pace of the rounds after it; the cap without a budget); the verdicts printed when the rounds end are one more look. A verdict
 * must hold over all its looks together: each look spends a share of 0.05 by
 * an O'Brien-Fleming-like function of the rounds run over the last round
 * (Lan and DeMets), almost nothing early and most at the end, and the shares
 * add up to 0.05 at most (Bonferroni over the looks). So A against itself is
 * called different at any look with a chance of 5% at most, however long the
 * rounds go on; checking a 95% interval after every round would not keep
 * that, each look being another chance for noise to cross. */
typedef bool (*rounds_done_fn)(void *ctx, int rounds, double alpha);

/* Why the rounds ended. */
enum rounds_end { ROUNDS_DECIDED, ROUNDS_CAP, ROUNDS_BUDGET, ROUNDS_STOPPED, ROUNDS_FAILED };
const char *rounds_end_name(enum rounds_end e); // "decided", "round cap", ...

struct rounds_log {
    int rounds;          // complete rounds
    int last;            // the last round the budget allows: the first round's time,
                         // then the second's pace (the first also starts each point)
    double first_s;      // the first round's seconds
    int looks;           // at the verdicts, the last one (when the rounds ended) included
    double spent;        // the level the looks spent
    double alpha;        // the last look's level: the printed verdicts' (0.05 with one look)
    int *order;          // (rounds + 1, points) point indices, each round's order (the last
                         // row: a round cut short, when one was)
    double seconds;      // wall time of all rounds
    enum rounds_end end;
};

/* Runs rounds of plan's points until done, the cap or the budget; log's
 * order is allocated (rounds_log_free). 0, or -1 with e set when a measure
 * failed (log holds the rounds before). */
int rounds_run(const struct rounds_plan *plan, rounds_measure_fn measure, rounds_done_fn done,
               void *ctx, struct rounds_log *log, struct error *e);
void rounds_log_free(struct rounds_log *log);
/* Round r's order for a plan's seed and points (what rounds_run uses). The
 * rounds come in blocks, each a Williams design drawn from the seed (its
 * points and its rows shuffled): n rounds for n points, 2n where n is odd.
 * In a block every point runs once in each position and right after every
 * other point equally often, so an effect of the position (the first run
 * of a round) or of the point run just before (its caches, its heat) falls
 * on every point alike after each block, in every run, not only on average
 * over runs that share a seed; each round's order alone is still uniform. */
void rounds_order(unsigned long seed, int points, int r, int *order);

#endif
