/* The life of a measuring command (train the points, --tune): checked, opened,
 * measured, written. It alone turns what the runs did into an exit status
 * for them; the modes fill session_ops with what differs. */
#include "session.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ddp.h"
#include "progress.h"
#include "rlimits.h"
#include "signals.h"
#include "staging.h"
#include "sweep.h"

/* The result files first, then stdout: a file that cannot be written never
 * costs the results on stdout, and a stdout nobody reads any more (mpirun
 * stops forwarding its ranks' output once told to end the job) never costs
 * the files. The mode's own files (ops->files) go with the result: where
 * they cannot be written, the result files are removed again. */
static int write_files(const struct app *a, const struct session_ops *ops, bool *placed,
                       struct error *e)
{
    const char *dir = a->res.cfg.report.out;
    char path[4400];
    if (report_write_files(&a->res, dir, path, sizeof path, e))
        return error_wrap(e, "result files not written (results are on stdout)");
    if (ops && ops->files && ops->files(a, dir, e)) {
        report_unwrite_files(path);
        return error_wrap(e, "result files not written (results are on stdout)");
    }
    fprintf(stderr, "dpbench: results written to %s (and .csv, -summary.csv)\n", path);
    *placed = true;
    return 0;
}

static int emit(struct app *a, const struct session_ops *ops, bool *placed,
                struct error *e)
{
    const struct results *res = &a->res;
    int rc = res->cfg.report.out[0] ? write_files(a, ops, placed, e) : 0;
    if (signals_pending())
        return -1; // a signal came while they were written: nothing more
    /* stdout through a stream that a signal cuts short */
    fflush(stdout);
    FILE *out = signals_fdopen(STDOUT_FILENO);
    FILE *f = out ? out : stdout;
    const struct renderer *r = renderer_find(res->cfg.report.format);
    bool oom = ops && ops->print ? ops->print(f, a, r) != 0 : r->results(f, res) != 0;
    int err = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;
    if (out && fclose(out) != 0 && !err)
        err = errno ? errno : EIO;
    char why[256];
    snprintf(why, sizeof why, "out of memory rendering %s", r->name);
    const char *fail = oom ? why : err ? rlimits_write_error(err, why, sizeof why) : NULL;
    if (fail && !signals_pending()) {
        if (rc)
            fprintf(stderr, "dpbench: %s\n", e->msg);
        rc = error_set(e, "cannot write results to stdout: %s", fail);
    }
    return rc;
}

/* The watchdog's rescue (signals_on_stuck): a stop came while rank 0 of a
 * ddp job waited in a collective for a rank that will never come (it died;
 * mpirun's SIGTERM). The runs before and the complete epochs of the run in
 * progress are written as a stop writes them, with rank 0's figures alone;
 * the main thread is held in its call meanwhile. */
static struct comm *stuck_comm;
static const struct session_ops *stuck_ops;
static void write_stuck(void *arg)
{
    struct app *a = arg;
    struct results *res = &a->res;
    if (stuck_comm->rank > 0 || !res->runs)
        return;
    int live = res->live ? res->live_run : -1;
    sweep_rescue(res); // the round in progress's complete epochs, what was never run dropped
    for (int i = 0; live >= 0 && i < res->n_runs; i++)
        if (res->runs[i].interrupted)
            ddp_alone(stuck_comm, &res->runs[i]);
    fprintf(stderr, "dpbench: interrupted by %s while waiting for the other ranks (one stopped "
                    "responding)\n", signals_name(train_stop));
    if (res->n_runs == 0)
        return;
    struct error e;
    bool placed = false;
    res->interrupted = true;
    report_summarize(res);
    if (emit(a, stuck_ops, &placed, &e))
        fprintf(stderr, "dpbench: %s\n", e.msg);
}

/* The checks before any run, in the order their failures rank: the result
 * folder and every point's config (exit 2), then whether each backend a
 * point names can run (exit 1), then a stop that came meanwhile. Resolves
 * parallel.device auto in the base config. EXIT_OK or the exit status, said on stderr. */
static int prepare(struct app *a, struct backends *bes, size_t *estimate)
{
    struct config *c = &a->res.cfg;
    struct error e;
    char *made = a->out_made; // the folders report.out made, gone again where the run is refused
    int rc = EXIT_OK, rank;
    comm_launched_world(&rank); // under mpirun only rank 0 writes: the others make no folder
    if (c->report.out[0] && rank == 0 && report_check_out(c->report.out, c->name, made, &e))
        rc = EXIT_USAGE, config_error_at(c, &e); // refused before the run, not after it
    else if (ddp_check_launch(c, &e)) // a dp process among mpirun's ranks: refused at once
        rc = EXIT_USAGE;
    else if (a->points.n == 0 && points_of(c, &a->points, &e))
        rc = EXIT_USAGE;
    else if (points_make_data(&a->points, &e) && !stop_requested()) // a stop: said below
        rc = EXIT_RUN;
    else if (sweep_check(&a->points, a->opts.max_memory, true, estimate, &a->rebuild, &e))
        rc = EXIT_USAGE;
    else if (!stop_requested() && backends_resolve(a->points.cfg, a->points.n, bes, &e))
        rc = EXIT_RUN;
    if (rc || stop_requested())
        dirs_unmake(c->report.out, made);
    if (rc) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return rc;
    }
    if (stop_requested()) {
        fprintf(stderr, "dpbench: interrupted by %s before the run\n", signals_name(train_stop));
        return 128 + train_stop;
    }
    const struct backend *auto_be = backends_get(bes, "auto");
    if (auto_be && strcmp(c->parallel.device, "auto") == 0 && c->parallel.n_devices &&
        !auto_be->has_devices)
        fprintf(stderr, "dpbench: parallel.device auto: parallel.devices' %d ids run as %d "
                        "replicas on the %s\n",
                c->parallel.n_devices, c->parallel.n_devices, auto_be->name);
    sweep_resolve_auto(c, auto_be);
    points_resolve_auto(&a->points, auto_be);
    return EXIT_OK;
}

int session_open(struct app *a, struct backends *bes, struct comm *comm, struct comm **cm,
                 size_t *estimate)
{
    struct error e = {{0}};
    int rc = prepare(a, bes, estimate);
    *comm = (struct comm){.world = 1};
    *cm = NULL;
    if (rc != EXIT_OK || strcmp(a->res.cfg.parallel.mode, "ddp") != 0)
        return rc;
    if (ddp_open(comm, &a->res.cfg, backends_device(bes), &e)) {
        if (e.msg[0]) // every rank's before the engine opened (then ddp_open says it)
            fprintf(stderr, "dpbench: %s\n", e.msg);
        if (a->res.cfg.report.out[0]) // refused: no rank writes, each removes what it made
            dirs_unmake(a->res.cfg.report.out, a->out_made);
        return EXIT_USAGE;
    }
    *cm = comm;
    return EXIT_OK;
}

/* argv as one shell line: each word quoted where the shell would split or
 * expand it. */
static void command_line(char *buf, size_t n, int argc, char **argv)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && used < n; i++) {
        const char *w = argv[i];
        bool plain = w[0] && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789-_./=:,+%@") == strlen(w);
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? " " : "", plain ? w : "'");
        for (const char *p = w; !plain && *p && used < n; p++)
            used += (size_t)snprintf(buf + used, n - used, *p == '\'' ? "'\\''" : "%c", *p);
        if (!plain && used < n)
            used += (size_t)snprintf(buf + used, n - used, "'");
    }
}

/* What the results say about the run before any epoch: the memory
 * estimate, the machine and its devices, the date. */
static void results_begin(struct results *res, const struct options *opts, size_t estimate,
                          const struct backend *be)
{
    res->estimate_bytes = (double)estimate;
    command_line(res->command, sizeof res->command, opts->argc, opts->argv);
    machine_describe(&res->machine);
    be->describe(res->machine.devices, sizeof res->machine.devices);
    time_t t = time(NULL);
    struct tm utc;
    gmtime_r(&t, &utc);
    strftime(res->date, sizeof res->date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    strftime(res->stamp, sizeof res->stamp, "%Y%m%d-%H%M%S", &utc); // the same UTC as date
}

/* run_points' rc as the exit status. A failure every rank had after the
 * same step leaves the ranks in step: rank 0 reports the job as a single
 * process does; any other failure leaves the other ranks waiting in a
 * collective: end the job. */
static int run_status(int rc, const struct results *res, struct comm *comm,
                      const struct error *e)
{
    bool together = false; // the failed run's ranks are in step (a failure ends the rounds)
    for (int i = 0; rc && i < res->n_runs; i++)
        together |= res->runs[i].failed && res->runs[i].together;
    if (rc && comm->world > 1 && !together) {
        fprintf(stderr, "dpbench: rank %d (%s): %s\n", comm->rank, comm->host, e->msg);
        fflush(stderr);
        comm_abort(comm, rc == -2 ? EXIT_USAGE : EXIT_RUN); // mpirun's exit status
    }
    if (rc && comm->rank == 0)
        fprintf(stderr, "dpbench: %s\n", e->msg);
    return !rc ? EXIT_OK : rc == -2 ? EXIT_USAGE : EXIT_RUN;
}

/* Writes what the runs measured (the result files, then stdout) and says
 * how a stop cut the run short; returns the exit status. */
static int finish(struct app *a, const struct session_ops *ops, const struct comm *comm,
                  int status)
{
    struct results *res = &a->res;
    struct error e;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        res->peak_rss_bytes = (double)ru.ru_maxrss * 1024; // Linux reports KiB
    bool placed = false; // the result files have their names
    if (res->n_runs > 0 && comm->rank == 0) { // rank 0 reports (another's runs are not gathered)
        signals_phase("computing the statistics");
        report_summarize(res);
        signals_phase("writing the results");
        if (emit(a, ops, &placed, &e) && !signals_pending()) {
            fprintf(stderr, "dpbench: %s\n", e.msg);
            status = EXIT_RUN;
        }
    }
    if (signals_pending()) { // while the results were written: they were cut short
        fprintf(stderr, "dpbench: interrupted by %s while writing the results; %s\n",
                signals_name(train_stop), placed ? "the result files were written, stdout was cut "
                                                  "short" : "no result files written");
        return 128 + train_stop;
    }
    if (train_stop && !res->interrupted && res->n_runs > 0) { // after the last epoch: all kept
        if (comm->rank == 0)
            fprintf(stderr, "dpbench: interrupted by %s after the last epoch; the results are "
                            "complete\n", signals_name(train_stop));
        return status == EXIT_OK ? 128 + train_stop : status;
    }
    if (res->interrupted && !train_stop && comm->stop == COMM_STOP) { // another rank's signal
        if (comm->rank == 0)
            fprintf(stderr, "dpbench: interrupted: another rank was stopped by a signal; only what "
                            "completed is reported\n");
        return status; // mpirun's exit status is that rank's (128 + its signal)
    }
    if (res->interrupted && train_stop) {
        if (comm->rank > 0)
            ; // rank 0 says it, once
        else if (res->n_runs == 0)
            fprintf(stderr, "dpbench: interrupted by %s before any epoch completed; no results\n",
                    signals_name(train_stop));
        else
            fprintf(stderr, "dpbench: interrupted by %s; only what completed is reported\n",
                    signals_name(train_stop));
        status = 128 + train_stop;
    }
    return status;
}

/* How long a rank that stopped alone waits for the others at the end (rank 0
 * writes its results first: the others wait for it meanwhile): 30 s, or
 * DPBENCH_TEST_TOGETHER_S (a test's, so that it need not wait them out). */
static double together_s(void)
{
    const char *v = getenv("DPBENCH_TEST_TOGETHER_S");
    double s = v ? strtod(v, NULL) : 0;
    return s > 0 && s < 30 ? s : 30;
}

/* Every rank meets here before MPI_Finalize, at once where they ended
 * together (a stop after the last step too, while rank 0 writes); a rank that
 * left the job's collectives on a stop no step carried (its data being made)
 * waits for the others only so long: a collective may hold them for ever. A
 * rank with a stop of its own waits 20 times as long (another path it may
 * have left by). The meeting carries such a stop (its signal and rank) for
 * rank 0 to name. The exit status, after a stop finish() did not report. */
static int meet_at_end(const struct results *res, struct comm *comm, int status)
{
    if (comm->world <= 1)
        return status;
    int sig = train_stop; // read once: a signal may come at any moment
    bool own = sig && comm->stop == COMM_GO;
    long late = own && !comm->left ? (long)sig << 32 | comm->rank : 0;
    double wait_s = comm->left ? together_s() : own ? 20 * together_s() : INFINITY;
    signals_phase("meeting the other ranks at the end of the job");
    if (!comm_together(comm, &late, wait_s) && (comm->left || own)) {
        fprintf(stderr, "dpbench: rank %d: interrupted by %s before the other ranks learned of "
                        "it; they did not stop within %g s: ending the job\n", comm->rank,
                signals_name(sig), wait_s);
        fflush(stdout);
        fflush(stderr);
        comm_abort(comm, status);
    }
    /* a stop after the last step that finish() did not report: this rank's
     * own (it came later; before the meeting, rank 0 names it), or another
     * rank's, which rank 0 names; the exit status is a signalled process's,
     * as mpirun reports that rank's. Rank 0 alone knows what its results kept. */
    int now = train_stop;
    long who = late & 0xffffffff;
    bool mine = now && (!sig || comm->rank == 0), named = comm->rank == 0 && late && who != 0;
    if (status != EXIT_OK || !(now || named))
        return status;
    const char *kept = comm->rank > 0 ? "rank 0 reports the results"
                       : res->interrupted ? "only what completed is reported"
                                          : "the results are complete";
    if (mine)
        fprintf(stderr, "dpbench: rank %d: interrupted by %s at the end of the job, after its "
                        "last step; %s\n", comm->rank, signals_name(now), kept);
    if (named)
        fprintf(stderr, "dpbench: rank %ld was interrupted by %s after its last step; %s\n", who,
                signals_name((int)(late >> 32)), kept);
    return 128 + (now ? now : (int)(late >> 32));
}

int session_run(struct app *a, const struct session_ops *ops)
{
    struct results *res = &a->res;
    struct backends bes;
    struct comm comm, *cm;
    size_t estimate = 0;
    int rc = session_open(a, &bes, &comm, &cm, &estimate);
    if (rc != EXIT_OK)
        return rc;
    results_begin(res, &a->opts, estimate, backends_device(&bes));
    struct error e = {{0}};
    train_progress = !a->opts.quiet && comm.rank == 0;
    progress_init(!train_progress ? PROGRESS_OFF
                  : isatty(STDERR_FILENO) ? PROGRESS_LIVE : PROGRESS_LINES);
    stuck_comm = &comm;
    stuck_ops = ops;
    signals_on_stuck(write_stuck, a);
    rc = ops->measure(a, &bes, &comm, cm, &e);
    signals_on_stuck(NULL, NULL); // no run in progress any more
    signals_finishing(); // what completed is written unless another signal comes
    int status = finish(a, ops, &comm, run_status(rc, res, &comm, &e));
    if (comm.rank == 0 && res->cfg.report.out[0]) // no result written (a stop before any
        dirs_unmake(res->cfg.report.out, a->out_made); // epoch): the folders it made go, if empty
    status = meet_at_end(res, &comm, status);
    comm_close(&comm);
    return status;
}
