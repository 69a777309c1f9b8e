/* --allreduce-bandwidth: parallel.comm's engine summing buffers of growing
 * size across the ranks (mpirun) without training; rank 0 prints the table as
 * nccl-tests does and, with report.out, also writes it there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allreduce_bw.h"
#include "app.h"
#include "session.h"
#include "signals.h"

/* The table on stdout, and in report.out/NAME-STAMP.allreduce.txt with --out. */
static int allreduce_emit(const struct allreduce_table *t, const struct config *cfg,
                          struct error *e)
{
    char *text = NULL, stamp[32], path[4400];
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    if (!m)
        return error_set(e, "out of memory");
    report_allreduce_text(m, t);
    int rc = fclose(m) != 0 ? error_set(e, "out of memory") : 0;
    if (text)
        fputs(text, stdout);
    fflush(stdout);
    if (!rc && cfg->report.out[0]) {
        time_t now = time(NULL);
        struct tm utc;
        gmtime_r(&now, &utc);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
        rc = report_write_text(cfg->report.out, cfg->name, stamp, "allreduce.txt", false, text, path,
                               sizeof path, e);
        if (rc)
            error_wrap(e, "the table is not written to report.out (it is on stdout)");
        else
            fprintf(stderr, "dpbench: table written to %s\n", path);
    }
    free(text);
    return rc;
}

static bool allreduce_chosen(const struct options *o) { return o->allreduce_bandwidth; }

static int allreduce_run(struct app *a)
{
    struct config *c = &a->res.cfg;
    signals_init();
    snprintf(c->parallel.mode, sizeof c->parallel.mode, "%s", "ddp"); // the engine, no training
    if (strcmp(c->parallel.comm, "auto") == 0) // the host engine
        snprintf(c->parallel.comm, sizeof c->parallel.comm, "%s", comm_auto(false));
    struct backends bes;
    struct comm comm, *cm;
    size_t estimate;
    int rc = session_open(a, &bes, &comm, &cm, &estimate);
    if (rc != EXIT_OK)
        return rc;
    struct error e;
    struct allreduce_table t = {0};
    rc = comm_bind(&comm, comm_device(&comm, c->parallel.devices, c->parallel.n_devices), NULL,
                   &e); // the rank's device, for a device engine
    rc = rc ? rc : allreduce_bandwidth(&comm, &t, &e);
    if (!rc && comm.rank == 0)
        rc = allreduce_emit(&t, c, &e);
    if (rc)
        fprintf(stderr, "dpbench: --allreduce-bandwidth: %s\n", e.msg);
    if (rc && comm.world > 1)
        comm_abort(&comm, EXIT_RUN);
    comm_close(&comm);
    if (rc)
        return EXIT_RUN;
    // a rank without a signal of its own exits 0: mpirun's status is the signalled rank's
    return t.interrupted && train_stop ? 128 + train_stop : EXIT_OK;
}

const struct mode mode_allreduce_bandwidth = {.name = "allreduce-bandwidth",
                                              .chosen = allreduce_chosen, .run = allreduce_run};
