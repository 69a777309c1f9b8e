/* Progress of a run on stderr: on a terminal a live line redrawn in place;
 * otherwise (CI logs, `| tee`, nohup) plain lines starting with "progress:"
 * that say the point, the epoch, the time so far and an estimate of the time
 * left, at most one a second. */
#ifndef DPBENCH_PROGRESS_H
#define DPBENCH_PROGRESS_H

#include <stdbool.h>

enum progress_mode { PROGRESS_OFF, PROGRESS_LIVE, PROGRESS_LINES };

/* Starts the clock. */
void progress_init(enum progress_mode mode);
/* The points are measured in rounds of `points` each: exactly max_rounds
 * (fixed), or at most that many and budget_s seconds (0: no limit). */
void progress_rounds(int max_rounds, int points, bool fixed, double budget_s);
/* Round r (0-based) runs its k-th point (0-based), of `epochs` epochs (warmup
 * included). */
void progress_round(int r, int k, long epochs);
/* A line of its own between rounds (what is still undecided). */
void progress_note(const char *text);
/* --tune's trial k (0-based) of `epochs` epochs starts, on `settings` (copied);
 * the number of trials is not known ahead, so its lines estimate no time left. */
void progress_trial(long k, long epochs, const char *settings);
/* Batch k of `batches` of epoch ep (1-based, of `epochs`) is done. */
void progress_batch(long ep, long epochs, long k, long batches);
/* Clears the live line (before other output on stderr). */
void progress_clear(void);
/* The whole run is over. */
void progress_done(void);

#endif
