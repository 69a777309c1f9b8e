/* The application layer, the top of the program: the command line builds the
 * options and the config (cli.c), the sweep turns the config into points and
 * measures them (sweep.c), and one run mode per file (mode_*.c) does what the
 * command asks; main.c picks the mode from its table and returns its exit
 * status. */
#ifndef DPBENCH_APP_H
#define DPBENCH_APP_H

#include <stdbool.h>

#include "report.h"
#include "sweep.h"

enum exit_code { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

struct options {
    const char *config;
    double max_memory;        // bytes, 0 = what the machine has available
    bool h2d_bandwidth;       // measure host-to-device bandwidth instead of training
    const char *export_dir;   // write every point's config, data and orders here instead
    bool allreduce_bandwidth; // measure the comm engine's allreduce instead of training
    long repeat;              // runs of each point in a row (--repeat), 0 = 1
    bool quiet;               // --quiet: no progress lines
    bool no_sweep;            // --no-sweep: the config's sweep is ignored
    bool tune;                // --tune: search the loader settings instead of running the points
    bool compare_side;        // a compare -c side's flags: compare refuses its commands itself
    int argc;                 // the command line, as given (the result records it)
    char **argv;
};

/* What one invocation holds: its options, and the results its runs fill
 * (res.cfg is the config the command line built). */
struct app {
    struct options opts;
    struct results res;
    struct points points;     // what the run measures (the sweep's points; compare -c: A, B)
    bool rebuild;             // the points' datasets do not fit in memory together: each
                              // is built again for its round (sweep_check)
    char out_made[4096];      // the highest folder report.out's check created ("": none),
                              // removed again (while empty) where no result is written
};

/* A run mode: one file and one line in main.c's table. A mode is either a
 * command named by argv[1] that reads its own arguments (compare,
 * --make-dataset), or chosen by the parsed options and run over the config. */
struct mode {
    const char *name;
    const char *command;                        // argv[1] that names it; NULL: by the options
    int (*command_main)(int argc, char **argv); // with command: its exit status
    bool (*chosen)(const struct options *o);    // without: whether the options ask for it
    int (*run)(struct app *a);                  // without: its exit status
};

extern const struct mode mode_compare, mode_make_dataset, mode_h2d_bandwidth, mode_export,
    mode_allreduce_bandwidth, mode_tune, mode_train;

/* The plug-in tables' names and cross-key rules, handed to the config
 * (registry.c); called once before any config is read. */
void app_register(void);

#endif
