/* The default mode: every point of the sweep measured, then the results
 * written (session.c does the rest). */
#include "app.h"
#include "session.h"
#include "signals.h"
#include "sweep.h"

static int train_measure(struct app *a, const struct backends *bes, struct comm *comm,
                         struct comm *cm, struct error *e)
{
    (void)comm;
    return sweep_run(&a->res.cfg, &a->points, bes, cm, &a->res, a->rebuild, a->opts.quiet, e);
}

static bool train_chosen(const struct options *o)
{
    (void)o;
    return true; // what runs when no other mode is asked for
}

static int train_run_mode(struct app *a)
{
    static const struct session_ops ops = {.measure = train_measure};
    signals_init();
    return session_run(a, &ops);
}

const struct mode mode_train = {.name = "train", .chosen = train_chosen, .run = train_run_mode};
