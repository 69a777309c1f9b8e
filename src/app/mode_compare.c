/* `dpbench compare A.json B.json [--format FMT]`: is B faster than, slower
 * than or the same as A? compare.c reads and pairs the files; the renderer
 * the format names prints the pairs. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "compare.h"

static void compare_usage(FILE *f)
{
    fprintf(f,
            "usage: dpbench compare A.json B.json [--format text|json|csv|markdown]\n"
            "\n"
            "Says for each pair of points whether B is faster than, slower than or the same\n"
            "as A: both medians, the ratio B/A with its 95%% interval, and the verdict of a\n"
            "Mann-Whitney U test on the epoch times. A and B are result files of dpbench\n"
            "(--format json, --out) or of scripts/torch_reference.py. One point each: compared\n"
            "whatever their settings (listed when they differ); several: paired by workload and\n"
            "settings. Points of different workloads are listed as unmatched, never compared.\n"
            "\n"
            "Exit status: 0 compared, 2 unusable input or nothing to compare.\n");
}

/* The command line: the two paths and the renderer; 1 after --help. */
static int compare_args(int argc, char **argv, const char **paths, const struct renderer **out,
                        struct error *e)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {0}};
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
        if (ch == 'h') {
            compare_usage(stdout);
            return 1;
        } else if (ch == 'f') {
            *out = renderer_find(optarg);
            if (!*out || !(*out)->compare)
                return error_set(e, "compare --format: expected text, json, csv or markdown, "
                                    "found '%s'", optarg);
        } else if (ch == ':') {
            return error_set(e, "compare: %s needs a value", argv[optind - 1]);
        } else {
            return error_set(e, "compare: unknown option '%s' (dpbench compare --help)",
                             argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return error_set(e, "compare: expected two result files, A.json B.json (found %d)",
                         argc - optind);
    paths[0] = argv[optind];
    paths[1] = argv[optind + 1];
    return 0;
}

static int compare_main(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    const struct renderer *out = renderer_find("text");
    struct error e = {{0}};
    struct compare_result r = {0};
    int rc = compare_args(argc, argv, paths, &out, &e);
    if (rc > 0)
        return EXIT_OK;
    if (rc == 0 && compare_read(&r, paths[0], paths[1], &e))
        rc = -1;
    if (rc == 0 && out->compare(stdout, &r))
        rc = error_set(&e, "out of memory");
    if (rc == 0 && r.n_pairs == 0)
        rc = error_set(&e, "compare: no point of %s has a point of the same workload in %s: "
                           "nothing compared", r.a.path, r.b.path);
    compare_free(&r);
    if (rc)
        fprintf(stderr, "dpbench: %s\n", e.msg);
    return rc ? EXIT_USAGE : EXIT_OK;
}

const struct mode mode_compare = {.name = "compare", .command = "compare",
                                  .command_main = compare_main};
