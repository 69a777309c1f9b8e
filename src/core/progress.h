/* Progress of a run on stderr: on a terminal a live line redrawn in place;
 * otherwise (CI logs, `| tee`, nohup) plain lines starting with "progress:"
 * that say the point, the epoch, the time so far and an estimate of the time
 * left, at most one a second. */
#ifndef DPBENCH_PROGRESS_H
#define DPBENCH_PROGRESS_H

#include <stdbool.h>

enum progress_mode { PROGRESS_OFF, PROGRESS_LIVE, PROGRESS_LINES };

/* Starts the clock for n_points points of `repeats` runs each. */
void progress_init(enum progress_mode mode, long n_points, int repeats);
/* Point p (0-based) starts; each of its runs has `epochs` epochs (warmup included). */
void progress_point(long p, long epochs);
/* --tune's trial k (0-based) of `epochs` epochs starts, on `settings` (copied);
 * the number of trials is not known ahead, so its lines estimate no time left. */
void progress_trial(long k, long epochs, const char *settings);
/* Run k (0-based) of the point's repeats starts. */
void progress_repeat(int k);
/* Batch k of `batches` of epoch ep (1-based, of `epochs`) is done. */
void progress_batch(long ep, long epochs, long k, long batches);
/* Clears the live line (before other output on stderr). */
void progress_clear(void);
/* The whole run is over. */
void progress_done(void);

#endif
