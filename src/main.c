/* dpbench: trains PyTorch's "Data Parallelism" tutorial workload the way
 * nn.DataParallel does, while the DataLoader's knobs are toggled, and reports
 * where each epoch's time went. main picks the run mode from the table below
 * (src/app/mode_*.c, one file each) and returns its exit status. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "cli.h"
#include "rlimits.h"

/* The commands named by argv[1], then the modes the options choose, in the
 * order they are asked: the first whose chosen() holds runs (train, last,
 * always does). */
static const struct mode *const modes[] = {
    &mode_make_dataset, &mode_compare,
    &mode_h2d_bandwidth, &mode_export, &mode_allreduce_bandwidth, &mode_tune, &mode_train,
};
enum { N_MODES = sizeof modes / sizeof modes[0] };

/* A command's word later on the line (dpbench --export D --make-dataset
 * idx D2): it names its command only as the first argument. Words after a
 * flag are that flag's value (-c compare). */
static bool misplaced_command(int argc, char **argv, struct error *e)
{
    for (int j = 2; j < argc; j++)
        for (int i = 0; i < N_MODES; i++)
            if (modes[i]->command && strcmp(argv[j], modes[i]->command) == 0 &&
                !(argv[j - 1][0] == '-' && !strchr(argv[j - 1], '=') && argv[j][0] != '-')) {
                error_set(e, "%s must come first, before any option (dpbench %s --help)",
                          argv[j], argv[j]);
                return true;
            }
    return false;
}

/* What a command printed on stdout (compare's verdict, --help) reached it: a
 * full disk fails the command, as a result that could not be written does
 * (session.c, which says so itself). */
static int stdout_written(int status)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return status;
    char why[256];
    if (status == EXIT_OK)
        fprintf(stderr, "dpbench: cannot write to stdout: %s\n",
                rlimits_write_error(errno ? errno : EIO, why, sizeof why));
    return status == EXIT_OK ? EXIT_RUN : status;
}

int main(int argc, char **argv)
{
    app_register();
    for (int i = 0; i < N_MODES; i++)
        if (modes[i]->command && argc > 1 && strcmp(argv[1], modes[i]->command) == 0)
            return stdout_written(modes[i]->command_main(argc - 1, argv + 1));
    struct app a = {.opts = {.argc = argc, .argv = argv}};
    struct error e = {{0}};
    config_defaults(&a.res.cfg);
    int rc = cli_parse(argc, argv, &a.opts, &a.res.cfg, &e);
    if (rc) {
        config_free(&a.res.cfg);
        if (rc > 0)
            return stdout_written(EXIT_OK);
        misplaced_command(argc, argv, &e);
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return EXIT_USAGE;
    }
    int status = EXIT_OK;
    for (int i = 0; i < N_MODES; i++)
        if (!modes[i]->command && modes[i]->chosen(&a.opts)) {
            status = modes[i]->run(&a);
            break;
        }
    results_free(&a.res);
    points_free(&a.points);
    return stdout_written(status);
}
