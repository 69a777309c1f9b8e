/* How dpbench ends on a signal. SIGINT, SIGTERM and SIGHUP (a terminal or
 * an ssh session going away) ask the run to stop: every phase ends at its
 * next stop point, complete epochs are reported, and the exit status is
 * 128 + the first signal's number. Once the measuring is over (statistics,
 * output), a first signal is answered at once: the results are complete and
 * are written whole. Any further signal stops the writing (temp files
 * removed). A signal within 50 ms of the last one counted is that one again
 * (timeout(1) sends two: to the process, then to its group). A watchdog thread ends
 * the process when the main thread has not reached a stop point 1.5 s after
 * a signal (a library call that does not return, or a phase of dpbench's own
 * that has no stop point), naming the phase it was in. SIGXFSZ is ignored,
 * so that a write past the file-size limit fails with EFBIG and is reported. */
#ifndef DPBENCH_SIGNALS_H
#define DPBENCH_SIGNALS_H

#include <stdbool.h>
#include <stdio.h>

/* Installs the handlers and starts the watchdog (where a thread can start;
 * without one, signals still stop the run at its stop points). */
void signals_init(void);
/* Called by the main thread once it has seen the stop and is winding down
 * (writing what completed): the signals so far are answered. */
void signals_settle(void);
/* Called by the main thread when the measuring is over, before the
 * statistics and the output: what was measured is complete, so a first
 * signal from now on (none came before) is answered as it comes: the
 * output is still written whole and the exit status is 128 + the signal.
 * A signal after that one (or the second in all) stops the writing. Also
 * settles the signals so far (signals_settle). */
void signals_finishing(void);
/* A signal arrived since the last signals_settle: output being written
 * should stop. */
bool signals_pending(void);
/* A stream writing to fd whose writes fail with EINTR once signals_pending()
 * (checked between chunks of 1 MiB); fclose leaves fd open. NULL when out of
 * memory. */
FILE *signals_fdopen(int fd);
/* A file being written that the watchdog removes if it ends the process
 * (at most 4 at a time); signals_untrack once it has its final name. */
void signals_track(const char *path);
void signals_untrack(const char *path);
/* Around a call that may never return: a collective whose other ranks died
 * (mpirun then sends SIGTERM, and SIGKILL a second later). A signal that
 * finds the main thread still in the same call STUCK_S (0.4 s) later makes
 * the watchdog run the function given to signals_on_stuck (it writes what
 * completed) and end the process with 128 + the signal; the main thread
 * never leaves that call then. */
void signals_call_begin(void);
void signals_call_end(void);
void signals_on_stuck(void (*fn)(void *arg), void *arg);
/* What the main thread does now ("writing the results", "loading the
 * dataset"; a string that lives as long as the program), for the watchdog's
 * message, which names it; NULL: "running". Returns the phase it replaces,
 * for the caller to put back when its phase ends. Tests stop a run as it
 * enters a phase: DPBENCH_TEST_SIGNAL_AT=WORDS raises SIGINT when a phase
 * that contains WORDS begins (read by signals_init). */
const char *signals_phase(const char *what);
/* "SIGINT", "SIGTERM", "SIGHUP" */
const char *signals_name(int sig);

#endif
