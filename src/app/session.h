/* The life of a measuring command (train the points, tune): the checks
 * before any run, the communicator, the measurement, then the results
 * written and the exit status. A mode fills session_ops with what differs. */
#ifndef DPBENCH_SESSION_H
#define DPBENCH_SESSION_H

#include <stdio.h>

#include "app.h"
#include "comm.h"
#include "devices.h"

struct session_ops {
    /* measures into a->res: 0, or -1 (a failure) / -2 (bad data: a usage
     * error) with e set; a stop keeps what completed and returns 0 */
    int (*measure)(struct app *a, const struct backends *bes, struct comm *comm,
                   struct comm *cm, struct error *e);
    /* the mode's own files in report.out after the result files; NULL: none */
    int (*files)(const struct app *a, const char *dir, struct error *e);
    /* stdout in renderer r's format instead of r->results; 0, or -1 when out
     * of memory. NULL: r->results */
    int (*print)(FILE *f, struct app *a, const struct renderer *r);
};

/* The checks before any run, in the order their failures rank: the result
 * folder and every point's config (exit 2), then whether each backend a
 * point names can run (exit 1), then a stop that came meanwhile; then the
 * communicator (ddp's, or a world of one), and *cm set to it for ddp (NULL
 * for dp). EXIT_OK or the exit status, said on stderr. */
int session_open(struct app *a, struct backends *bes, struct comm *comm, struct comm **cm,
                 size_t *estimate);
/* The whole command: session_open, the measurement, the results; closes the
 * communicator. Returns the exit status. */
int session_run(struct app *a, const struct session_ops *ops);

#endif
