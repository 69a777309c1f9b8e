/* --tune: a search over the loader settings instead of the sweep's points
 * (src/tune/); its result goes through the renderers like every other, and
 * its recommendation into report.out as NAME-tuned.yaml. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "session.h"
#include "sweep.h"
#include "signals.h"
#include "tune.h"

static int tune_measure(struct app *a, const struct backends *bes, struct comm *comm,
                        struct comm *cm, struct error *e)
{
    (void)comm, (void)cm;
    char what[96];
    size_t max_bytes = sweep_memory_limit(a->opts.max_memory, what, sizeof what);
    return tune_main(&a->res, backends_get(bes, a->res.cfg.parallel.device), max_bytes, e);
}

static int tune_files(const struct app *a, const char *dir, struct error *e)
{
    char tuned[4400];
    int rc = tune_write_yaml(&a->res, dir, tuned, sizeof tuned, e);
    if (rc < 0)
        return error_wrap(e, "tuned config not written");
    if (rc == 1)
        fprintf(stderr, "dpbench: no recommendation: %s, an earlier run's, removed\n", tuned);
    else if (tuned[0])
        fprintf(stderr, "dpbench: tuned config written to %s\n", tuned);
    return 0;
}

static bool tune_chosen(const struct options *o) { return o->tune; }

/* What --tune does not take, refused before anything runs: ddp (each rank
 * would tune alone; tune.knobs is the config's rule, registry.c), and a
 * NAME-tuned.yaml in --out that could not be replaced. */
static int tune_refused(const struct config *c)
{
    struct error e;
    if (strcmp(c->parallel.mode, "ddp") == 0)
        fprintf(stderr, "dpbench: --tune: parallel.mode ddp is not tuned (tune the dp config: "
                        "its loader settings are each rank's)\n");
    else if (c->report.out[0] && report_check_replace(c->report.out, c->name, "tuned", "yaml", &e))
        fprintf(stderr, "dpbench: --tune: %s\n", e.msg);
    else
        return EXIT_OK;
    return EXIT_USAGE;
}

static int tune_run_mode(struct app *a)
{
    static const struct session_ops ops = {.measure = tune_measure, .files = tune_files};
    int status = tune_refused(&a->res.cfg);
    if (status != EXIT_OK)
        return status;
    signals_init();
    return session_run(a, &ops);
}

const struct mode mode_tune = {.name = "tune", .chosen = tune_chosen, .run = tune_run_mode};
