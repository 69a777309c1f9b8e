/* --h2d-bandwidth: the host-to-device copy table of the first backend that
 * has one (cuda), and with --out DIR the profile emulate.profile replays. */
#include <stdio.h>

#include "app.h"
#include "emulate_profile.h"
#include "staging.h"

/* --h2d-bandwidth: the cuda backend's copy-bandwidth table on stdout; with
 * --out DIR also the profile emulate.profile replays (DIR/h2d-profile.json). */
static int h2d_bandwidth(const char *out_dir)
{
    const struct backend *be = NULL; // the first with a bandwidth table
    for (size_t i = 0; backend_name(i) && !be; i++)
        if (backend_at(i) && backend_at(i)->bandwidth)
            be = backend_at(i);
    struct h2d_profile prof = {0};
    struct error e;
    char path[4400], made[4096] = "";
    if (!be) {
        fprintf(stderr, "dpbench: --h2d-bandwidth needs the cuda backend; this dpbench was "
                        "built without it (backends: %s)\n", backend_list());
        return EXIT_RUN;
    }
    if (out_dir[0] && report_check_out(out_dir, "h2d-profile", made, &e)) {
        fprintf(stderr, "dpbench: --h2d-bandwidth: %s\n", e.msg);
        return EXIT_USAGE;
    }
    if (be->probe(&e) || be->bandwidth(stdout, out_dir[0] ? &prof : NULL, &e) ||
        (out_dir[0] && h2d_profile_write(&prof, out_dir, path, sizeof path, &e))) {
        dirs_unmake(out_dir, made); // nothing measured: no folder made for it stays
        fprintf(stderr, "dpbench: --h2d-bandwidth: %s\n", e.msg);
        return EXIT_RUN;
    }
    if (out_dir[0])
        fprintf(stderr, "dpbench: profile written to %s (emulate.profile: %s replays it)\n",
                path, path);
    return EXIT_OK;
}

static bool h2d_chosen(const struct options *o) { return o->h2d_bandwidth; }

static int h2d_run(struct app *a) { return h2d_bandwidth(a->res.cfg.report.out); }

const struct mode mode_h2d_bandwidth = {.name = "h2d-bandwidth", .chosen = h2d_chosen,
                                        .run = h2d_run};
