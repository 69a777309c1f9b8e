/* --export DIR: what a reference implementation needs to repeat each point
 * (config, data, initial parameters, sample orders), written whole or not
 * at all; nothing is trained. */
#include <signal.h>
#include <stdio.h>

#include "app.h"
#include "export.h"
#include "signals.h"
#include "sweep.h"

/* --export DIR: every point's config, data, initial parameters and sample
 * orders, written for a reference implementation; nothing is trained. */
static int export_points(const struct config *c, struct points *pts, const char *dir,
                         double max_memory)
{
    struct error e;
    struct export x;
    size_t estimate;
    bool rebuild;
    signal(SIGXFSZ, SIG_IGN); // a file size limit fails the write (EFBIG): the export is removed
    if (points_of(c, pts, &e)) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_USAGE;
    }
    if (points_make_data(pts, &e) && !stop_requested()) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_RUN;
    }
    if (sweep_check(pts, max_memory, false, &estimate, &rebuild, &e) || export_init(&x, dir, &e)) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_USAGE;
    }
    struct sweep_data data = {0};
    long n = pts->n;
    int rc = 0;
    bool bad_data = false; // refused as training refuses it: exit 2
    for (long p = 0; p < n && rc == 0 && !stop_requested(); p++) {
        const char *label = pts->label[p];
        bad_data = sweep_dataset(&data, &pts->cfg[p], &e) != 0;
        rc = bad_data || export_point(&x, &pts->cfg[p], label, &data.d, &e);
        if (rc && label[0])
            error_wrap(&e, "sweep point %s", label);
    }
    if (rc == 0 && !stop_requested())
        rc = export_finish(&x, c, &e);
    sweep_data_free(&data);
    export_free(&x);
    if (stop_requested()) { // export_free removed the staging folder
        fprintf(stderr, "dpbench: interrupted by %s; nothing exported to %s\n",
                signals_name(train_stop), dir);
        return 128 + train_stop;
    }
    if (rc) {
        fprintf(stderr, "dpbench: %s (nothing exported to %s)\n", e.msg, dir);
        return bad_data ? EXIT_USAGE : EXIT_RUN;
    }
    fprintf(stderr, "dpbench: exported %ld point%s to %s\n", n, n == 1 ? "" : "s", dir);
    return EXIT_OK;
}

static bool export_chosen(const struct options *o) { return o->export_dir != NULL; }

static int export_run(struct app *a)
{
    signals_init();
    return export_points(&a->res.cfg, &a->points, a->opts.export_dir, a->opts.max_memory);
}

const struct mode mode_export = {.name = "export", .chosen = export_chosen, .run = export_run};
