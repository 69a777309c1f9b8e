/* Progress lines on stderr; see progress.h. */
#include "progress.h"

#include <stdio.h>

#include "util.h"

#define LIVE_PERIOD_S 0.25  // a terminal's line is redrawn at most this often
#define LINES_PERIOD_S 1.0  // a log gets at most one line a second

static struct {
    enum progress_mode mode;
    long n_points, point, epochs;
    int repeats, repeat;
    double start, last;
    bool shown;         // a live line is on the terminal
    bool trial;         // --tune's trials, not a sweep's points
    char settings[128]; // the trial's settings
} pg;

void progress_init(enum progress_mode mode, long n_points, int repeats)
{
    pg.mode = mode;
    pg.n_points = n_points > 0 ? n_points : 1;
    pg.repeats = repeats > 0 ? repeats : 1;
    pg.start = pg.last = now_seconds();
}

void progress_point(long p, long epochs)
{
    pg.point = p;
    pg.epochs = epochs > 0 ? epochs : 1;
    pg.repeat = 0;
}

void progress_trial(long k, long epochs, const char *settings)
{
    progress_point(k, epochs);
    pg.trial = true;
    snprintf(pg.settings, sizeof pg.settings, "%s", settings);
}

void progress_repeat(int k) { pg.repeat = k; }

/* Share of the whole invocation done: points before, then this point's
 * repeats and epochs, each batch a share of its epoch. */
static double done_share(long ep, long k, long batches)
{
    double epoch = ((double)ep - 1 + (batches > 0 ? (double)k / (double)batches : 1)) /
                   (double)pg.epochs;
    double point = ((double)pg.repeat + epoch) / pg.repeats;
    return ((double)pg.point + point) / (double)pg.n_points;
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
    char left[48] = "unknown";
    if (f > 0)
        snprintf(left, sizeof left, "~%.1f s", elapsed * (1 - f) / f);
    char rep[32] = "";
    if (pg.repeats > 1)
        snprintf(rep, sizeof rep, ", repeat %d/%d", pg.repeat + 1, pg.repeats);
    fprintf(stderr, "progress: point %ld/%ld%s, epoch %ld/%ld, batch %ld/%ld, elapsed %.1f s, "
                    "remaining %s\n",
            pg.point + 1, pg.n_points, rep, ep, epochs, k, batches, elapsed, left);
    fflush(stderr);
}

void progress_batch(long ep, long epochs, long k, long batches)
{
    if (pg.mode == PROGRESS_OFF)
        return;
    double t = now_seconds();
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
