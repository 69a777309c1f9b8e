/* Progress lines on stderr; see progress.h. */
#include "progress.h"

#include <math.h>
#include <stdio.h>

#include "util.h"

#define LIVE_PERIOD_S 0.25  // a terminal's line is redrawn at most this often
#define LINES_PERIOD_S 1.0  // a log gets at most one line a second

static struct {
    enum progress_mode mode;
    long n_points, point, epochs;
    int rounds, round;  // at most, and now (0-based)
    bool fixed;         // exactly `rounds`
    double budget_s;    // the rounds' time limit, 0 = none
    double start, last;
    double pace_t, pace_f; // at the first batch: the pace is measured from there, not
                           // from the start (setup would count as the first batch's)
    bool shown;         // a live line is on the terminal
    bool trial;         // --tune's trials, not a sweep's points
    char settings[128]; // the trial's settings
} pg;

void progress_init(enum progress_mode mode)
{
    pg.mode = mode;
    pg.n_points = pg.rounds = 1;
    pg.fixed = true;
    pg.start = pg.last = now_seconds();
    pg.pace_t = pg.pace_f = NAN;
}

void progress_rounds(int max_rounds, int points, bool fixed, double budget_s)
{
    pg.rounds = max_rounds > 0 ? max_rounds : 1;
    pg.n_points = points > 0 ? points : 1;
    pg.fixed = fixed;
    pg.budget_s = budget_s;
}

void progress_round(int r, int k, long epochs)
{
    pg.round = r;
    pg.point = k;
    pg.epochs = epochs > 0 ? epochs : 1;
}

void progress_trial(long k, long epochs, const char *settings)
{
    pg.point = k;
    pg.epochs = epochs > 0 ? epochs : 1;
    pg.trial = true;
    snprintf(pg.settings, sizeof pg.settings, "%s", settings);
}

void progress_note(const char *text)
{
    if (pg.mode == PROGRESS_OFF)
        return;
    progress_clear();
    fprintf(stderr, "%s%s\n", pg.mode == PROGRESS_LINES ? "progress: " : "dpbench: ", text);
    fflush(stderr);
}

/* Share of the rounds done, as if every round ran: rounds before, this
 * round's points before, this point's epochs, each batch a share of its
 * epoch. */
static double done_share(long ep, long k, long batches)
{
    double epoch = ((double)ep - 1 + (batches > 0 ? (double)k / (double)batches : 1)) /
                   (double)pg.epochs;
    double round = ((double)pg.point + epoch) / (double)pg.n_points;
    return ((double)pg.round + round) / pg.rounds;
}

static void line(long ep, long epochs, long k, long batches, double t)
{
    double elapsed = t - pg.start;
    if (pg.trial) {
        fprintf(stderr, "progress: tune trial %ld (%s), epoch %ld/%ld, batch %ld/%ld, "
                        "elapsed %.1f s, remaining unknown\n",
                pg.point, pg.settings, ep, epochs, k, batches, elapsed); // numbered as the table
        fflush(stderr);
        return;
    }
    double f = done_share(ep, k, batches);
    double left_s = f > pg.pace_f ? (t - pg.pace_t) * (1 - f) / (f - pg.pace_f) : NAN;
    if (!pg.fixed && pg.budget_s > 0 && !(left_s < pg.budget_s - elapsed))
        left_s = pg.budget_s > elapsed ? pg.budget_s - elapsed : 0;
    char left[48] = "unknown";
    if (!isnan(left_s))
        snprintf(left, sizeof left, "%s%.1f s", pg.fixed ? "~" : "at most ~", left_s);
    char round[48] = "";
    if (pg.rounds > 1 && pg.fixed)
        snprintf(round, sizeof round, "round %d/%d, ", pg.round + 1, pg.rounds);
    else if (pg.rounds > 1)
        snprintf(round, sizeof round, "round %d (at most %d), ", pg.round + 1, pg.rounds);
    fprintf(stderr, "progress: %spoint %ld/%ld, epoch %ld/%ld, batch %ld/%ld, elapsed %.1f s, "
                    "remaining %s\n",
            round, pg.point + 1, pg.n_points, ep, epochs, k, batches, elapsed, left);
    fflush(stderr);
}

void progress_batch(long ep, long epochs, long k, long batches)
{
    if (pg.mode == PROGRESS_OFF)
        return;
    double t = now_seconds();
    if (isnan(pg.pace_t))
        pg.pace_t = t, pg.pace_f = done_share(ep, k, batches);
    if (pg.mode == PROGRESS_LINES) {
        if (t - pg.last >= LINES_PERIOD_S) {
            pg.last = t;
            line(ep, epochs, k, batches, t);
        }
        return;
    }
    if (t - pg.last < LIVE_PERIOD_S)
        return;
    pg.last = t;
    pg.shown = true;
    fprintf(stderr, "\rdpbench: epoch %ld/%ld  batch %ld/%ld ", ep, epochs, k, batches);
}

void progress_clear(void)
{
    if (pg.shown)
        fprintf(stderr, "\r%60s\r", "");
    pg.shown = false;
}

void progress_done(void)
{
    progress_clear();
}
