/* --tune: a search over the loader settings instead of the sweep's points
 * (src/tune/); its recommendation also goes into report.out as
 * NAME-tuned.yaml. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "session.h"
#include "signals.h"
#include "tune.h"

static int tune_measure(struct app *a, const struct backends *bes, struct comm *comm,
                        struct comm *cm, struct error *e)
{
    (void)cm;
    if (comm->world > 1) {
        error_set(e, "--tune: parallel.mode ddp is not tuned (run it without mpirun)");
        return -2;
    }
    return tune_main(&a->res, backends_get(bes, a->res.cfg.parallel.device), &a->tune, e);
}

static int tune_files(const struct app *a, const char *dir, struct error *e)
{
    char tuned[4400];
    if (!a->tune)
        return 0;
    if (tune_write_yaml(a->tune, dir, tuned, sizeof tuned, e))
        return error_wrap(e, "tuned config not written");
    if (tuned[0])
        fprintf(stderr, "dpbench: tuned config written to %s\n", tuned);
    return 0;
}

/* --tune's own table in text; its result (runs one per trial, the "tune"
 * object) through the other renderers */
static int tune_out(FILE *f, struct app *a, const struct renderer *r)
{
    if (!a->tune || strcmp(r->name, "text") != 0)
        return r->results(f, &a->res);
    tune_print(f, &a->res, a->tune);
    return 0;
}

static bool tune_chosen(const struct options *o) { return o->tune; }

static int tune_run_mode(struct app *a)
{
    static const struct session_ops ops = {.measure = tune_measure, .files = tune_files,
                                           .print = tune_out};
    signals_init();
    int status = session_run(a, &ops);
    tune_report_free(a->tune);
    a->tune = NULL;
    return status;
}

const struct mode mode_tune = {.name = "tune", .chosen = tune_chosen, .run = tune_run_mode};
